"""The shared docstring paragraphs are filled in, and the parameters they
document are parameters of the estimators that use them."""

import inspect


from sklearn_pdp.utils._docstrings import fill_doc


def test_shared_paragraphs_are_filled_in(regressor_class):
    doc = regressor_class.__doc__
    assert "{bounds}" not in doc and "{n_jobs}" not in doc
    for name in inspect.signature(regressor_class).parameters:
        assert f"    {name} : " in doc, name


def test_placeholder_keeps_its_indentation():
    @fill_doc
    class Documented:
        """Text.

        Parameters
        ----------
        {n_jobs}
        """

    lines = Documented.__doc__.splitlines()
    first = next(line for line in lines if line.strip().startswith("n_jobs : int"))
    assert first.startswith("        n_jobs")
    assert all(line.startswith("        ") or not line.strip()
               for line in lines[lines.index(first):])


def test_no_public_docstring_shows_escaped_braces():
    """fill_doc does not format: an escaped brace ({{) would render as is."""
    import sklearn_pdp

    for name in sklearn_pdp.__all__:
        obj = getattr(sklearn_pdp, name)
        members = vars(obj).values() if isinstance(obj, type) else []
        for doc in [obj.__doc__, *(getattr(m, "__doc__", None) for m in members)]:
            assert "{{" not in (doc or "") and "}}" not in (doc or ""), name
