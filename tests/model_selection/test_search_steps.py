"""The steps of PrivateGridSearchCV.fit: the warnings of every step point at
the caller's line, and the split is drawn row by row, independently of the
data."""

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from sklearn_pdp import FallbackWarning, OPSRegressor, PrivacyLeakWarning
from sklearn_pdp.model_selection import PrivateGridSearchCV

from ..conftest import unbounded_data
from .test_search import BOUNDS


def _search(grid, **kwargs):
    return PrivateGridSearchCV(OPSRegressor(epsilon=None, alpha=1.0, **BOUNDS), grid,
                               random_state=0, **kwargs)


def test_choice_without_data_warns_at_the_callers_line():
    X, y = unbounded_data(40, scale=0.6)
    with pytest.warns(FallbackWarning, match="chosen uniformly at random") as record:
        _search({"gamma": [0.1, 1.0, 10.0, 100.0, 1000.0]}).fit(X, y)
    chosen = [w for w in record if "chosen uniformly at random" in str(w.message)]
    assert len(chosen) == 1
    assert chosen[0].filename == __file__


def test_large_delta_warns_at_the_callers_line():
    X, y = unbounded_data(100, scale=0.6)
    with pytest.warns(PrivacyLeakWarning) as record:
        _search({"gamma": [1.0, 10.0]}, delta=0.05).fit(X, y)
    large = [w for w in record if "is at least 1 / n_samples" in str(w.message)]
    assert large and {w.filename for w in large} == {__file__}


def test_partition_is_drawn_row_by_row():
    """The parts of n - 1 rows are the first n - 1 parts of n rows (from the
    same seed): removing the last record moves no other record."""
    seed = np.random.SeedSequence(3)
    parts = PrivateGridSearchCV._partition(200, 4, seed)
    assert_array_equal(PrivateGridSearchCV._partition(199, 4, seed), parts[:-1])
    assert set(parts) == set(range(5))
    with pytest.raises(ValueError, match="left a training part empty"):
        PrivateGridSearchCV._partition(3, 4, seed)


@pytest.mark.parametrize("refit", [False, True])
def test_selected_candidate_is_the_released_model(refit):
    """Without refit the selected part's fit is ``best_estimator_``; with it,
    the selected candidate's fit on all the data."""
    X, y = unbounded_data(600, scale=0.6)
    search = _search({"gamma": [0.3, 3.0, 30.0]}, refit=refit).fit(X, y)
    fits = search._full_fits if refit else search._part_fits
    assert len(fits) == 3 and len(search._full_fits) == (3 if refit else 0)
    assert search.best_estimator_ is fits[search.best_index_]
    assert search.best_params_ == search.cv_results_["params"][search.best_index_]
    assert search.best_estimator_.gamma == search.best_params_["gamma"]
