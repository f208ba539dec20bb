"""Rows in chunks and on Dask, validation, linear algebra, docstrings and the
scikit-learn names the package relies on."""
