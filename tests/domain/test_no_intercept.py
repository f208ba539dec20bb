"""Without an intercept the map into the privacy domain goes through the
origin: ``intercept_`` is 0.0 and predictions are ``X @ coef_``, as in
scikit-learn, whatever the bounds (declared off centre, or tightened)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_pdp import AdaOPSRegressor, BoundsWarning, FallbackWarning
from sklearn_pdp._registry import REGRESSORS
from sklearn_pdp.domain._scaler import DomainScaler

from .test_bounds import _fit, _off_centre_data


def _estimator(name, **params):
    """The registered regressor ``name`` at its defaults, without intercept;
    objective perturbation at a fixed ridge (its private ridge calibrates
    for half a minute at each size: the contract tests fit it without an
    intercept)."""
    fixed = {"alpha": 10.0} if name == "objpert" else {}
    return REGRESSORS[name](fit_intercept=False, random_state=0, **fixed, **params)


def _through_origin_data(n=5000, seed=0):
    """Rows in [0, 1]^3 and labels in [0, 2] whose model has no intercept."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 1.0, size=(n, 3))
    return X, np.clip(X @ [0.9, 0.5, 0.2] + 0.1 * rng.normal(size=n), 0.0, 2.0)


# the random projection's sketch shows no signal here: its slopes are 0
@pytest.mark.filterwarnings("ignore:RandomProjectionRegressor released zero slopes \\(without"
                            ":sklearn_pdp.exceptions.FallbackWarning")
@pytest.mark.parametrize("name", list(REGRESSORS))
def test_tightened_bounds_leave_no_intercept(name):
    """Tightening releases an asymmetric label range (its upper end stays at
    1, the lower one moves up to the data): the model still passes through
    the origin."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5000, 5)) * 0.3
    y = 0.6 + 0.1 * X[:, 0] + 0.1 * rng.normal(size=5000)
    reg = _estimator(name, epsilon=3.0, data_norm=1.0, y_bound=1.0).fit(X, y)
    low, high = reg.y_bound_
    assert reg.bounds_epsilon_ > 0 and low + high > 0.5  # tightened, far from symmetric
    assert reg.intercept_ == 0.0 and reg.dp_epsilon_ <= 3.0
    assert_allclose(reg.predict(X), reg.domain_scaler().clip(X) @ reg.coef_, rtol=1e-12)


@pytest.mark.parametrize("name", list(REGRESSORS))
def test_declared_off_centre_bounds_leave_no_intercept(name):
    X, y = _through_origin_data()
    reg = _estimator(name, epsilon=3.0, bounds_X=(0, 1), y_bound=(0, 2),
                     tighten_bounds=False).fit(X, y)
    assert reg.intercept_ == 0.0 and reg.dp_epsilon_ <= 3.0
    assert_allclose(reg.predict(X), X @ reg.coef_, rtol=1e-12)
    # the losses are the release's on the rows scaled through the origin
    # from its definition: over the larger end's magnitude
    release = reg.release_
    assert_allclose(reg.pdp_losses_, release.losses(X / np.sqrt(3), y / 2.0), rtol=1e-9)


# 300 rows at epsilon 1 clip some labels; clipping is not the subject
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.BoundsWarning")
def test_bounds_equal_the_same_fit_on_data_scaled_by_hand():
    X, y = _off_centre_data()
    lower, upper = np.array([0.0, -300.0]), np.array([10.0, -100.0])
    low, high = 40.0, 80.0
    reg = _fit(X, y, bounds_X=(lower, upper), y_bound=(low, high), fit_intercept=False)
    # not centred: each range over its end of the larger magnitude
    X_unit = X / (np.array([10.0, 300.0]) * np.sqrt(2))
    y_unit = np.clip(y, low, high) / high
    ref = _fit(X_unit, y_unit, data_norm=1.0, y_bound=1.0, fit_intercept=False)
    assert reg.intercept_ == 0.0
    assert_allclose(reg.predict(X), high * ref.predict(X_unit))
    assert_allclose(reg.pdp_losses_, ref.pdp_losses_, rtol=1e-12)
    assert reg.dp_epsilon_ == ref.dp_epsilon_


def test_scaler_maps_through_the_origin_and_clips_to_the_ranges():
    scaler = DomainScaler(None, (1.0, 4.0), False, (np.array([0.0, -1.0]), np.array([2.0, 3.0])))
    X = np.array([[2.0, 3.0], [0.0, -1.0], [5.0, -7.0], [1.0, 0.0]])
    Xs, ys = scaler.scale(X, np.array([4.0, 1.0, -3.0, 9.0]))
    assert_allclose(Xs * np.sqrt(2), [[1, 1], [0, -1 / 3], [1, -1 / 3], [0.5, 0]])
    # labels clip to their range (-3 to 1), not to -1 once scaled
    assert_allclose(ys, [1.0, 0.25, 0.25, 1.0])
    theta = np.array([0.3, -0.7])
    coef, intercept = scaler.unscale_coef(theta)
    assert intercept == 0.0
    assert_allclose(X[:2] @ coef, 4.0 * (Xs[:2] @ theta))


def test_labels_below_an_off_centre_range_are_counted_as_clipped():
    X, y = _through_origin_data(500)
    y[:100] = -1.0  # a fifth below the declared range (0, 2)
    with pytest.warns(BoundsWarning, match=r"20\.0% of the labels"):
        _estimator("adassp", epsilon=1.0, bounds_X=(0, 1), y_bound=(0, 2),
                   tighten_bounds=False).fit(X, y)


def test_label_mean_fallback_without_an_intercept_is_the_zero_model():
    """A kappa beyond AdaOPS's constraint releases the label mean with an
    intercept; without one nothing can hold it: the zero model, which reads
    no label."""
    X, y = _through_origin_data(200)
    with pytest.warns(FallbackWarning, match="released the zero model"):
        reg = AdaOPSRegressor(epsilon=1.0, kappa=1e6, fit_intercept=False, bounds_X=(0, 1),
                              y_bound=(0, 2), tighten_bounds=False, random_state=0).fit(X, y)
    assert reg.mean_only_ and "kappa" in reg.mean_only_reason_
    assert_array_equal(reg.coef_, 0.0)
    assert reg.intercept_ == 0.0 and reg.dp_epsilon_ <= 1.0
    assert_array_equal(reg.predict(X), 0.0)
    assert_array_equal(reg.pdp_losses_, 0.0)
    assert_array_equal(reg.pdp_epsilon(X[:5], None), 0.0)


@settings(max_examples=100, deadline=None)
@given(st.booleans(), st.lists(st.integers(-50, 50), min_size=4, max_size=4),
       st.floats(-8, 8), st.data())
def test_range_magnitudes_bound_every_range_of_the_box(intercept, ends, v, data):
    """Over every range [a, b] whose ends lie in the box (as a tightening
    releases them), the scaled value of v is at most the bound."""
    lo, hi = sorted(np.array(ends[:2]) / 10), sorted(np.array(ends[2:]) / 10)
    cross = lo[1] >= hi[0]
    bound = DomainScaler(1.0, 1.0, intercept).range_magnitudes(
        np.array([v]), np.array(lo), np.array(hi), cross)[0]
    assert bound <= 1.0 + 1e-12  # up to the midpoint's rounding
    for _ in range(20):
        a, b = data.draw(st.floats(*lo)), data.draw(st.floats(*hi))
        if b - a < 1e-6:  # not a range (or one whose midpoint rounding swamps)
            continue
        clipped = np.clip(v, a, b)
        scaled = ((clipped - 0.5 * (a + b)) / (0.5 * (b - a)) if intercept
                  else clipped / max(abs(a), abs(b)))
        assert abs(scaled) <= bound * (1 + 1e-12)
