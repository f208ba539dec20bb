"""The default ``tighten_bounds="auto"``: declared bounds are tightened where
the public rule says the rows suffice (the numbers then "conditional" on
the released bounds), elsewhere the fit is the declared one with its exact
losses; bounds read from the data are never tightened."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from sklearn_pdp import (
    AdaSSPRegressor, BoundsWarning, FallbackWarning, PDPReport, PrivacyLeakWarning,
)
from sklearn_pdp._registry import REGRESSORS
from sklearn_pdp.model_selection import PrivateGridSearchCV

from ..conftest import UNIT_BOUNDS, every_regressor
from ..linear_model.test_people import random_panel
from .test_tighten import _table  # a heavy-tailed column, a normal one, an indicator


def _fit(cls, X, y, **params):
    """A fit at the defaults but the budget, the seed and ``params``; "auto"
    never warns about the bounds (signal tests may fall back: filtered)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", BoundsWarning)
        warnings.simplefilter("ignore", FallbackWarning)
        return cls(**{"epsilon": 1.0, "random_state": 0, **params}).fit(X, y)


def test_every_estimator_tightens_by_default():
    for cls in REGRESSORS.values():
        assert cls().get_params()["tighten_bounds"] == "auto"


@pytest.mark.parametrize("cls", every_regressor())
def test_the_default_tightens_declared_bounds_on_a_large_table(cls):
    """5000 rows at epsilon 2 (500 bounds-part rows: the label's four
    quantiles and the features' fit): a tenth of the rows releases the
    bounds, the model is fitted on the others, within the budget."""
    X, y, bounds, y_bound = _table(5000)
    reg = _fit(cls, X, y, epsilon=2.0, bounds_X=bounds, y_bound=y_bound)
    assert reg.pdp_kind_ == "conditional"
    assert reg.dp_epsilon_ <= 2.0 and reg.model_epsilon_ <= 2.0 and reg.bounds_epsilon_ <= 2.0
    part = ~reg.model_rows_
    assert 0.05 < part.mean() < 0.15
    assert np.all(reg.bounds_losses_[part] > 0) and np.all(reg.bounds_losses_[~part] == 0)
    assert np.all(np.isfinite(reg.pdp_losses_))
    lower, upper = reg.bounds_X_
    assert np.all(lower >= bounds[0]) and np.all(upper <= bounds[1])
    assert upper[1] - lower[1] < 100 and (lower[2], upper[2]) == (0, 1)  # indicators as declared
    assert y_bound[0] < reg.y_bound_[0] < reg.y_bound_[1] < y_bound[1]
    assert np.array_equal(reg.declared_bounds_[1], bounds)


@pytest.mark.parametrize("cls", every_regressor())
def test_the_default_keeps_the_declared_bounds_on_a_small_table(cls):
    """2000 rows at epsilon 1 (200 bounds-part rows, below the label's
    rule): nothing is tightened, silently; the fit is tighten_bounds=False's,
    its exact losses the same for every random_state."""
    X, y, bounds, y_bound = _table(2000)
    declared = dict(bounds_X=bounds, y_bound=y_bound)
    reg = _fit(cls, X, y, **declared)
    assert reg.pdp_kind_ == "exact" and reg.model_rows_.all() and not reg.bounds_losses_.any()
    assert not hasattr(reg, "bounds_release_")
    off = _fit(cls, X, y, tighten_bounds=False, **declared)
    assert_array_equal(reg.pdp_losses_, off.pdp_losses_)
    assert_array_equal(reg.coef_, off.coef_)
    assert_array_equal(_fit(cls, X, y, random_state=5, **declared).pdp_losses_, reg.pdp_losses_)


def test_bounds_read_from_the_data_are_not_tightened():
    """Undeclared bounds are read from the data (a PrivacyLeakWarning each)
    and kept as read: with nothing declared the default fit is
    tighten_bounds=False's; with the features declared only they are
    tightened, the label's range stays the data's."""
    X, y, bounds, _ = _table(5000)
    with pytest.warns(PrivacyLeakWarning, match="(data_norm|y_bound) was not given"):
        reg = _fit(AdaSSPRegressor, X, y, epsilon=2.0)
    assert reg.pdp_kind_ == "exact" and reg.model_rows_.all()
    with pytest.warns(PrivacyLeakWarning):
        off = _fit(AdaSSPRegressor, X, y, epsilon=2.0, tighten_bounds=False)
    assert_array_equal(reg.pdp_losses_, off.pdp_losses_)
    with pytest.warns(PrivacyLeakWarning, match="y_bound was not given"):
        reg = _fit(AdaSSPRegressor, X, y, epsilon=2.0, bounds_X=bounds)
    assert reg.pdp_kind_ == "conditional" and reg.bounds_from_data_ == ("y_bound",)
    assert reg.y_bound_ == off.y_bound_ and reg.declared_bounds_[2] == off.y_bound_
    assert reg.bounds_X_[1][1] < bounds[1][1]


# the panel's rows reach beyond the unit bounds: the fits clip them and say so
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.BoundsWarning")
def test_a_search_per_person_keeps_the_declared_bounds_by_default():
    """A search with max_records releases no bounds (its quantiles are sized
    for one record): "auto" fits on the declared bounds, True is refused
    (tests/model_selection/test_search_people.py)."""
    X, y, groups = random_panel(n_people=1500, seed=13)
    model = AdaSSPRegressor(**UNIT_BOUNDS, max_records=3)
    grid = {"fit_intercept": [True, False]}
    # epsilon 1.5: a search by record tightens here
    by_record = PrivateGridSearchCV(model.set_params(max_records=None), grid, epsilon=1.5,
                                    refit=False, random_state=0).fit(X, y, groups=groups)
    assert hasattr(by_record, "bounds_release_")
    search = PrivateGridSearchCV(model.set_params(max_records=3), grid, epsilon=1.5,
                                 refit=False, random_state=0).fit(X, y, groups=groups)
    assert not hasattr(search, "bounds_release_")
    assert search.dp_epsilon_ <= 1.5


def test_a_default_publication_of_a_tightened_fit_says_how_to_switch_it_off():
    """A published report of a tightened fit states the guarantee for
    everyone and says so (its per-row numbers depend on the draw); with
    tighten_bounds=False the publication spends its budget."""
    X, y, bounds, y_bound = _table(5000)
    declared = dict(epsilon=2.0, bounds_X=bounds, y_bound=y_bound, random_state=0)
    with pytest.warns(FallbackWarning, match="tighten_bounds=False"):
        default = PDPReport(AdaSSPRegressor(**declared), publish_epsilon=0.2).fit(X, y)
    assert default.published_.summary_epsilon == 0
    off = PDPReport(AdaSSPRegressor(**declared, tighten_bounds=False),
                    publish_epsilon=0.2).fit(X, y)
    assert off.published_.summary_epsilon > 0
