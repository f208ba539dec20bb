"""Helpers that take NumPy and Dask arrays alike.

The lowest layer of the data handling: Dask is never imported here, only
recognised when the caller already has it loaded, so that in-memory fits
never pay for it.
"""

import sys

import numpy as np


def is_dask_array(X):
    """Whether ``X`` is a ``dask.array.Array`` (without importing Dask)."""
    da = sys.modules.get("dask.array")
    return da is not None and isinstance(X, da.Array)


def row_norms(X):
    """Euclidean norms of the rows of ``X``, without overflow near 1e308."""
    if is_dask_array(X):
        return X.map_blocks(row_norms, drop_axis=1, dtype=np.float64)
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    big = ~np.isfinite(norms)
    if np.any(big):  # squares overflowed: rescale those rows by their peak
        peak = np.abs(X[big]).max(axis=1)
        norms[big] = peak * np.linalg.norm(X[big] / peak[:, None], axis=1)
    return norms


def compute(*values):
    """The values, with the Dask ones computed together (one pass)."""
    if not any(map(is_dask_array, values)):
        return values
    import dask

    return dask.compute(*values)


def persist(values):
    """A Dask array computed and kept where it lives; anything else as is."""
    return values.persist() if is_dask_array(values) else values
