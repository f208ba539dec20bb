"""The shared docstring paragraphs are filled in, and the parameters they
document are parameters of the estimators that use them."""

import inspect

import pytest

from sklearn_pdp import OPSRegressor, RandomProjectionRegressor
from sklearn_pdp._docstrings import fill_doc


@pytest.mark.parametrize("estimator", [OPSRegressor, RandomProjectionRegressor])
def test_shared_paragraphs_are_filled_in(estimator):
    doc = estimator.__doc__
    assert "{bounds}" not in doc and "{n_jobs}" not in doc
    for name in inspect.signature(estimator).parameters:
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
