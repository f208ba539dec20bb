"""Consistency as epsilon grows: every estimator converges to the
non-private fit it approximates (least squares on the clipped data), and
``epsilon=inf`` is that fit, with a warning (diffprivlib's
``test_same_results`` and ``test_simple``, ported)."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.datasets import load_iris
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import train_test_split

from sklearn_pdp import (
    AdaOPSRegressor,
    AdaSSPRegressor,
    ObjPertRegressor,
    OPSRegressor,
    OutputPerturbationRegressor,
    PrivacyLeakWarning,
    RandomProjectionRegressor,
)

from ..conftest import every_regressor

IRIS_BOUNDS = dict(bounds_X=([4.3, 2.0, 1.0, 0.1], [7.9, 4.4, 6.9, 2.5]), y_bound=(0, 2))


def _iris():
    X, y = load_iris(return_X_y=True)
    return train_test_split(X, y, test_size=0.2, random_state=np.random.RandomState(0))


def _simple():
    """diffprivlib's test_simple data: y = x on 1000 points of [-1, 1]."""
    X = np.linspace(-1, 1, 1000)[:, None]
    return X, X[:, 0].copy()


def test_infinite_epsilon_is_least_squares(regressor_class):
    X_train, X_test, y_train, _ = _iris()
    expected = LinearRegression().fit(X_train, y_train).predict(X_test)
    losses = []
    for seed in (0, 1):
        reg = regressor_class(epsilon=float("inf"), random_state=seed, **IRIS_BOUNDS)
        with pytest.warns(PrivacyLeakWarning, match="epsilon=inf protects nothing") as record:
            reg.fit(X_train, y_train)
        # the warning points at the caller
        assert any(w.filename == __file__ for w in record)
        assert_allclose(reg.predict(X_test), expected, rtol=0, atol=1e-8)
        assert reg.dp_epsilon_ == np.inf
        assert np.all(reg.pdp_losses_ == np.inf)
        assert np.all(reg.pdp_epsilon(X_test) == np.inf)
        losses.append(reg.pdp_losses_)
    assert_allclose(*losses)
    assert reg.dp_guarantee(len(X_train), X_train.shape[1])[0] == np.inf
    with pytest.raises(ValueError, match="epsilon=inf"):
        reg.release_law()


def test_infinite_epsilon_rank_deficient():
    """A duplicated column: the minimum-norm least-squares solution."""
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, size=200)
    X = np.column_stack([x, x])
    y = 0.8 * x
    with pytest.warns(PrivacyLeakWarning):
        reg = OPSRegressor(epsilon=np.inf, bounds_X=(-1, 1), y_bound=1.0,
                           fit_intercept=False).fit(X, y)
    assert_allclose(reg.coef_, [0.4, 0.4], atol=1e-10)


def test_refit_at_finite_epsilon_forgets_infinite():
    X_train, _, y_train, _ = _iris()
    reg = OPSRegressor(epsilon=np.inf, random_state=0, **IRIS_BOUNDS)
    with pytest.warns(PrivacyLeakWarning):
        reg.fit(X_train, y_train)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        reg.set_params(epsilon=5.0).fit(X_train, y_train)
    assert reg.dp_epsilon_ <= 5.0
    assert np.all(np.isfinite(reg.pdp_losses_))


@pytest.mark.parametrize("cls", every_regressor())
def test_huge_epsilon_does_not_raise(cls):
    X_train, X_test, y_train, _ = _iris()
    reg = cls(epsilon=1e8, random_state=0, **IRIS_BOUNDS).fit(X_train, y_train)
    assert reg.dp_epsilon_ <= 1e8
    assert np.all(np.isfinite(reg.predict(X_test)))
    assert np.all(reg.pdp_losses_ <= reg.dp_epsilon_)


# The mechanisms whose ridge is chosen from the data (privately: OPS's
# alpha="auto" is AdaOPS's release, output perturbation and objective
# perturbation release lambda_min, random projection's is post-processing of
# its sketch) pass diffprivlib's test_simple; a public rule in (n, d,
# epsilon) shrank the slope to 0.3-0.75 there (doc/mechanisms/index.rst).
ADAPTIVE = [AdaOPSRegressor, AdaSSPRegressor, ObjPertRegressor, OPSRegressor,
            OutputPerturbationRegressor, RandomProjectionRegressor]


# objective perturbation's per-row quadratures: under the audit marker
@pytest.mark.parametrize("Estimator", [
    pytest.param(cls, id=cls.__name__,
                 marks=pytest.mark.audit if cls is ObjPertRegressor else ())
    for cls in ADAPTIVE])
def test_simple_diffprivlib(Estimator):
    """diffprivlib's test_simple: epsilon 2, no intercept, bounds (-1, 1);
    the prediction at 0.5 within 0.05 of 0.5 on at least 19 of 20 seeds."""
    X, y = _simple()
    hits = 0
    for seed in range(20):
        reg = Estimator(epsilon=2.0, fit_intercept=False, bounds_X=(-1, 1), y_bound=(-1, 1),
                        random_state=seed).fit(X, y)
        assert reg.dp_epsilon_ <= 2.0
        hits += abs(reg.predict([[0.5]])[0] - 0.5) <= 0.05
    assert hits >= 19


# (objective perturbation's five fits at epsilon 1e4 take 20 s: under audit)
@pytest.mark.parametrize("Estimator", [
    pytest.param(cls, marks=pytest.mark.audit) if cls is ObjPertRegressor else cls
    for cls in ADAPTIVE])
def test_slope_converges_to_least_squares(Estimator):
    """At epsilon = 1e4 the slope on test_simple's data is within 1% of
    least squares' (1) on every seed."""
    X, y = _simple()
    for seed in range(5):
        reg = Estimator(epsilon=1e4, fit_intercept=False, bounds_X=(-1, 1), y_bound=(-1, 1),
                        random_state=seed).fit(X, y)
        assert abs(reg.coef_[0] - 1.0) <= 0.01


def test_ops_auto_is_adaops():
    """OPS with a private ridge is AdaOPS: alpha="auto" with a budget releases
    AdaOPS's triple and reports its exact losses, the same for every seed;
    a numeric alpha keeps OPS at a fixed ridge."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(3000, 3)) / np.sqrt(3)
    y = np.clip(0.2 + X @ [0.8, -0.4, 0.3] + 0.2 * rng.standard_normal(3000), -1, 1)
    bounds = dict(data_norm=1.0, y_bound=1.0)
    ops = OPSRegressor(epsilon=1.0, random_state=3, **bounds).fit(X, y)
    ada = AdaOPSRegressor(epsilon=1.0, random_state=3, **bounds).fit(X, y)
    assert_allclose(ops.coef_, ada.coef_, rtol=1e-12)
    assert_allclose(ops.pdp_losses_, ada.pdp_losses_, rtol=1e-12)
    for name in ("alpha_", "gamma_", "floor_", "residual_bound_", "dp_epsilon_", "dp_delta_"):
        assert getattr(ops, name) == getattr(ada, name)
    assert_allclose(ops.pdp_epsilon(X[:20]), ada.pdp_epsilon(X[:20]), rtol=1e-12)
    other = OPSRegressor(epsilon=1.0, random_state=4, **bounds).fit(X, y)
    assert_allclose(other.pdp_losses_, ops.pdp_losses_, rtol=0, atol=0)
    assert ops.dp_guarantee(3000, 3, min_samples=2000) == (1.0, 1e-6)
    assert type(ops.release_law()) is type(ada.release_law())
    fixed = OPSRegressor(epsilon=1.0, alpha=300.0, random_state=3, **bounds).fit(X, y)
    assert fixed.alpha_ == 300.0 and not hasattr(fixed, "floor_")
    # a refit at a fixed ridge forgets the AdaOPS release
    ops.set_params(alpha=300.0).fit(X, y)
    assert_allclose(ops.coef_, fixed.coef_)
    assert_allclose(ops.pdp_losses_, fixed.pdp_losses_)
