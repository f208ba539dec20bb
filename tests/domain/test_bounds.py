"""Per-feature bounds (``bounds_X``) and label ranges (``y_bound=(low, high)``)."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose

from sklearn_pdp import OutputPerturbationRegressor, PrivacyLeakWarning
from sklearn_pdp.model_selection import PrivateGridSearchCV


def _off_centre_data(n=300, seed=0):
    """Two columns far from 0 on scales 10 and 200, labels around 50."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.uniform(0, 10, n), rng.uniform(-300, -100, n)])
    y = 50 + X @ [2.0, 0.05] + rng.normal(size=n)
    return X, y


def _fit(X, y, **bounds):
    """A fit on the given bounds (declared, not tightened, unless asked)."""
    params = {"tighten_bounds": False, **bounds}
    return OutputPerturbationRegressor(epsilon=1.0, alpha=5.0, random_state=0, **params).fit(X, y)


# 300 rows at epsilon 1 release the label mean; some bounds clip labels
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.FallbackWarning")
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.BoundsWarning")
def test_bounds_equal_the_same_fit_on_data_scaled_by_hand():
    X, y = _off_centre_data()
    lower, upper = np.array([0.0, -300.0]), np.array([10.0, -100.0])
    low, high = 40.0, 80.0
    reg = _fit(X, y, bounds_X=(lower, upper), y_bound=(low, high))
    # midpoints to 0, half-widths to 1 / sqrt(d): rows in the unit ball
    X_unit = (X - (lower + upper) / 2) / ((upper - lower) / 2 * np.sqrt(2))
    y_unit = (np.clip(y, low, high) - (low + high) / 2) / ((high - low) / 2)
    ref = _fit(X_unit, y_unit, data_norm=1.0, y_bound=1.0)
    assert_allclose(reg.predict(X), (low + high) / 2 + (high - low) / 2 * ref.predict(X_unit))
    assert_allclose(reg.pdp_losses_, ref.pdp_losses_, rtol=1e-12)
    assert reg.dp_epsilon_ == ref.dp_epsilon_


# 300 rows at epsilon 1 release the label mean; clipping is the subject
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.FallbackWarning")
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.BoundsWarning")
def test_values_beyond_the_bounds_are_clipped_per_feature():
    X, y = _off_centre_data()
    bounds = ([2.0, -250.0], [8.0, -150.0])
    reg = _fit(X, y, bounds_X=bounds, y_bound=(60.0, 70.0))
    clipped = _fit(np.clip(X, *bounds), np.clip(y, 60.0, 70.0), bounds_X=bounds,
                   y_bound=(60.0, 70.0))
    assert_allclose(reg.coef_, clipped.coef_)
    assert_allclose(reg.pdp_losses_, clipped.pdp_losses_)


def test_scalar_bounds_apply_to_every_feature():
    X, y = _off_centre_data()
    X = X[:, :1]
    a = _fit(X, y, bounds_X=(0.0, 10.0), y_bound=100.0)
    b = _fit(X, y, bounds_X=([0.0], [10.0]), y_bound=(-100.0, 100.0))
    assert_allclose(a.coef_, b.coef_)
    assert a.intercept_ == pytest.approx(b.intercept_)


# 300 rows at epsilon 1 release the label mean
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.FallbackWarning")
def test_declared_bounds_do_not_warn_and_missing_ones_do():
    X, y = _off_centre_data()
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        _fit(X, y, bounds_X=(X.min(0), X.max(0)), y_bound=(30.0, 90.0))
    with pytest.warns(PrivacyLeakWarning, match="bounds_X"):
        _fit(X, y, y_bound=100.0)


# 300 rows at epsilon 1 release the label mean
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.FallbackWarning")
@pytest.mark.parametrize(
    "params, read",
    [
        ({"bounds_X": (0.0, 10.0), "y_bound": 100.0}, ()),
        ({"data_norm": 400.0, "y_bound": (30.0, 90.0)}, ()),
        ({"data_norm": 400.0}, ("y_bound",)),
        ({"bounds_X": (-300.0, 10.0)}, ("y_bound",)),
        ({"y_bound": 100.0}, ("data_norm",)),
        ({}, ("data_norm", "y_bound")),
    ],
)
def test_bounds_from_data_names_each_bound_read(params, read):
    """``bounds_from_data_`` names the bounds not declared, each with its own
    PrivacyLeakWarning; a refit with every bound declared empties it."""
    X, y = _off_centre_data()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reg = _fit(X, y, **params)
    assert reg.bounds_from_data_ == read
    leaks = [str(w.message) for w in caught if issubclass(w.category, PrivacyLeakWarning)]
    assert [m.split()[0] for m in leaks if "was not given" in m] == list(read)
    reg.set_params(data_norm=400.0, bounds_X=None, y_bound=100.0).fit(X, y)
    assert reg.bounds_from_data_ == ()


def test_bounds_from_data_with_tightening_and_in_the_search():
    """A fit that releases its declared bounds first still names the one it
    read (not its inner model's, whose bounds are all given); so does the
    search, which resolves the bounds once for all its fits, and its public
    model leaves out what it read."""
    X, y = _off_centre_data(n=2000)
    with pytest.warns(PrivacyLeakWarning, match="y_bound was not given"):
        reg = _fit(X, y, bounds_X=(X.min(0) - 1, X.max(0) + 1), tighten_bounds=True)
    assert hasattr(reg, "bounds_release_") and reg.bounds_from_data_ == ("y_bound",)
    search = PrivateGridSearchCV(
        OutputPerturbationRegressor(data_norm=400.0, tighten_bounds=False), {"alpha": [1.0, 10.0]}, epsilon=1.0,
        random_state=0)
    with pytest.warns(PrivacyLeakWarning, match="y_bound was not given"):
        search.fit(X, y)
    assert search.bounds_from_data_ == ("y_bound",)
    assert search.best_estimator_.bounds_from_data_ == ()  # given the search's bounds
    # what the search read is private: its public model does not write it
    assert search.public_model().bounds == {"data_norm": 400.0, "bounds_X": None,
                                            "y_bound": None}


@pytest.mark.parametrize(
    "params, match",
    [
        ({"bounds_X": ([0, 0], [1, 1]), "data_norm": 1.0}, "either data_norm or bounds_X"),
        ({"bounds_X": ([0, 0, 0], [1, 1, 1])}, "bounds_X"),
        ({"bounds_X": ([0, 1], [1, 1])}, "lower < upper"),
        ({"bounds_X": ([0, np.nan], [1, 1])}, "bounds_X"),
        ({"bounds_X": (0.0,)}, "bounds_X"),
        ({"data_norm": 1.0, "y_bound": (2.0, 1.0)}, "y_bound"),
        ({"data_norm": 1.0, "y_bound": (1.0, 2.0, 3.0)}, "y_bound"),
    ],
)
def test_invalid_bounds_name_the_parameter(params, match):
    X, y = _off_centre_data()
    params.setdefault("y_bound", 1.0)
    with pytest.raises(ValueError, match=match):
        _fit(X, y, **params)
