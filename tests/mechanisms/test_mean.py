"""The fallback to the private label mean when n epsilon is too small for slopes."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import stats
from scipy.integrate import quad
from scipy.optimize import brentq

from sklearn_pdp import (
    AdaOPSRegressor,
    AdaSSPRegressor,
    ObjPertRegressor,
    OPSRegressor,
    OutputPerturbationRegressor,
    PDPReport,
    RandomProjectionRegressor,
)
from sklearn_pdp.accounting import chi2_noise_scale
from sklearn_pdp._registry import REGRESSORS

from ..conftest import UNIT_BOUNDS

# each estimator's n epsilon per coefficient up to which it releases the mean
# (100 for every registered regressor but AdaSSP)
RATES = {cls: 60 if name == "adassp" else 100 for name, cls in REGRESSORS.items()}
BOUNDS = dict(UNIT_BOUNDS)
# the fits here are small enough to release the label mean alone: the subject
MEAN_RELEASED = pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.FallbackWarning")


def _laplace_scale(eps, delta):
    """The documented noise scale of the label sum: a change of 1 costs
    exactly eps at delta, whose tight loss is t + 2 log(1 - delta)."""
    return 1.0 / (eps - 2.0 * np.log1p(-delta))


@np.vectorize
def _laplace_delta(eps, t):
    """Hockey-stick divergence E_P[(1 - e^(eps - L))_+] of Lap(0, 1) from
    Lap(t, 1) (t >= 0), integrated from the definition: the loss
    L = |x - t| - |x| is t for x <= 0 (mass 1/2) and t - 2x on [0, t], and
    exceeds eps left of a = (t - eps) / 2."""
    if eps >= t:
        return 0.0
    a = (t - eps) / 2
    inner, _ = quad(lambda x: 0.5 * np.exp(-x) * -np.expm1(eps - t + 2 * x), 0.0, a,
                    epsabs=0.0, epsrel=1e-13)
    return -0.5 * np.expm1(eps - t) + inner


def _fallback_size(cls, eps, delta, d):
    """The largest size at which ``cls`` releases the label mean: n epsilon
    at most its rate per coefficient; for random projection also while the
    documented lower bound on its sketch's label-mean noise variance (default
    sketch rows, intercept) exceeds the private mean's by more than 1e-4."""
    size = int(RATES[cls] * (d + 1) / eps)
    if cls is not RandomProjectionRegressor:
        return size

    def excess(n):
        k = n if n <= 1000 else int(round(1000 * (1 + np.log(n / 1000))))
        s2 = chi2_noise_scale(eps, delta, k, 3.0) ** 2
        return s2 * (n + s2) / (n**2 * (k - 2)) - 2 * (_laplace_scale(eps, delta) / n) ** 2

    # the first size whose next row brings the excess within 1e-4, by
    # bisection: the excess decreases in n (checked row by row at the sizes and
    # budgets of the tests here)
    low, high = size, size
    while excess(high + 1) > 1e-4:
        low, high = high, 2 * high
    while low < high:
        middle = (low + high) // 2
        low, high = (middle + 1, high) if excess(middle + 1) > 1e-4 else (low, middle)
    return low


@MEAN_RELEASED
@pytest.mark.parametrize("cls", RATES, ids=lambda c: c.__name__)
def test_small_n_epsilon_releases_the_label_mean(cls, make_regression_data):
    """At n epsilon <= c (d + 1) the release is the label mean by the Laplace
    mechanism at the whole budget: slopes 0, exact losses at |y| / b, the same
    for every seed, and the worst row costs the budget."""
    eps, delta, d = 0.5, 1e-6, 3
    n = _fallback_size(cls, eps, delta, d)  # the largest size that falls back
    X, y = make_regression_data(n, d)
    fits = [cls(epsilon=eps, delta=delta, random_state=s, **BOUNDS).fit(X, y) for s in (0, 1)]
    t = np.abs(y) / _laplace_scale(eps, delta)
    for reg in fits:
        assert reg.mean_only_ and np.all(reg.coef_ == 0)
        assert (reg.dp_epsilon_, reg.dp_delta_) == (eps, delta) == reg.dp_guarantee(n, d)
        # delta at the reported loss is the target (tight, never above it)
        assert_allclose(_laplace_delta(reg.pdp_losses_, t), delta, rtol=1e-6)
        assert np.all(_laplace_delta(reg.pdp_losses_, t) <= delta * (1 + 1e-9))
        worst = reg.pdp_epsilon(X[:3])
        assert_allclose(worst, eps, rtol=1e-9)
        assert np.all(worst <= eps)
        # a new person's loss is the training rows' formula
        assert_allclose(reg.pdp_epsilon(X[:3], y[:3]), reg.pdp_losses_[:3], rtol=1e-12)
    assert_allclose(fits[0].pdp_losses_, fits[1].pdp_losses_, rtol=0)
    assert fits[0].intercept_ != fits[1].intercept_
    # one more row: the mechanism itself
    X, y = make_regression_data(n + 1, d)
    assert not cls(epsilon=eps, delta=delta, **BOUNDS).fit(X, y).mean_only_


# delta = 0.05 >= 1 / n on purpose: large enough for Monte Carlo to measure
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.PrivacyLeakWarning")
@MEAN_RELEASED
def test_released_mean_has_the_calibrated_law_and_monte_carlo_loss(make_regression_data):
    """KS test of the released intercepts against Lap(mean, b / n), and
    delta at the reported epsilon of the worst row against Monte Carlo of
    the release on the data set and on its neighbour without the row."""
    eps, delta = 1.0, 0.05
    X, y = make_regression_data(60)
    y[0] = -1.0  # the row of largest |y|
    reg = OPSRegressor(epsilon=eps, delta=delta, **BOUNDS).fit(X, y)
    assert reg.mean_only_
    b = _laplace_scale(eps, delta)
    rng = np.random.default_rng(3)
    draws = np.array([
        OPSRegressor(epsilon=eps, delta=delta, random_state=s, **BOUNDS).fit(X, y).intercept_
        for s in range(300)
    ])
    law = stats.laplace(loc=y.mean(), scale=b / len(y))
    assert stats.kstest(draws, law.cdf).pvalue > 1e-3
    # neighbour: row 0 removed; the size is public, so the sum moves by |y_0| = 1
    target = int(np.argmax(np.abs(y)))
    n = len(y)
    sums = reg.release_.draw(rng, size=400_000)[:, -1] * n  # the released (scaled) sums
    p = stats.laplace(loc=y.sum(), scale=b)
    q = stats.laplace(loc=y.sum() - y[target], scale=b)
    assert stats.kstest(sums[:20_000], p.cdf).pvalue > 1e-3
    loss = p.logpdf(sums) - q.logpdf(sums)
    eps_i = reg.pdp_losses_[target]
    mc = np.mean(np.maximum(0.0, 1.0 - np.exp(eps_i - loss)))
    tolerance = 5 * np.sqrt(delta / sums.size)
    assert abs(mc - delta) <= tolerance
    assert eps_i == pytest.approx(eps, rel=1e-9)
    assert np.mean(reg.pdp_losses_) < eps
    # the other direction (the row added to the neighbour) is the same
    mc_add = np.mean(np.maximum(0.0, 1.0 - np.exp(eps_i + loss)) * np.exp(-loss))
    assert abs(mc_add - delta) <= tolerance


@pytest.mark.parametrize(
    "reg",
    [AdaSSPRegressor(fit_intercept=False), OPSRegressor(fit_intercept=False),
     OPSRegressor(epsilon=None, gamma=1.0, alpha=1.0),
     OutputPerturbationRegressor(noise="laplace"), RandomProjectionRegressor(variant="paper")],
    ids=["adassp-no-intercept", "no-intercept", "raw-gamma", "laplace", "paper"],
)
@pytest.mark.filterwarnings("ignore::UserWarning")
# the paper variant has no guarantee and says so; not the point here
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.PrivacyLeakWarning")
def test_no_fallback_without_an_intercept_and_a_gaussian_budget(reg, make_regression_data):
    X, y = make_regression_data(50)
    assert not reg.set_params(**BOUNDS).fit(X, y).mean_only_


@MEAN_RELEASED
def test_refit_drops_the_previous_mechanism_state(make_regression_data):
    X, y = make_regression_data(2000)
    reg = OPSRegressor(**BOUNDS).fit(X, y)
    assert not reg.mean_only_ and reg.design_ridge() is not None
    reg.fit(X[:100], y[:100])
    assert reg.mean_only_ and reg.design_ridge() is None
    assert not hasattr(reg, "alpha_") and not hasattr(reg, "gamma_")


def test_invalid_parameters_are_raised_in_the_fallback_too(make_regression_data):
    X, y = make_regression_data(50)
    with pytest.raises(ValueError, match="budget_split"):
        AdaOPSRegressor(budget_split=[1.0, 0.0], **BOUNDS).fit(X, y)
    with pytest.raises(ValueError, match="exactly one of epsilon"):
        OPSRegressor(gamma=1.0, **BOUNDS).fit(X, y)


def test_guarantee_over_a_range_of_sizes_spanning_the_fallback():
    reg = OPSRegressor(epsilon=1.0)
    assert reg.dp_guarantee(10_000, 3, 10) == (1.0, 1e-6) == reg.dp_guarantee(100, 3, 10)


@MEAN_RELEASED
def test_published_report_of_the_mean(make_regression_data):
    """The mean's release law is Laplace noise on the label sum: the
    published bounds cover the exact losses, which include the publication."""
    X, y = make_regression_data(150)
    report = PDPReport(OPSRegressor(**BOUNDS), publish_epsilon=0.2, random_state=0).fit(X, y)
    assert report.estimator_.mean_only_
    published = report.published_
    assert 1.0 < report.dp_epsilon_ <= 1.2
    bounds = published.epsilon(X, y)
    assert np.all(bounds >= report.pdp_losses_ * (1 - 1e-9))
    assert np.median(bounds / report.pdp_losses_) <= 3
    # a loss that is a public function of the label: no Gram matrix is
    # published, and a row's bound is exact (model and summary)
    assert published.noisy_gram is None
    assert_allclose(bounds, report.pdp_losses_, rtol=1e-9)


@MEAN_RELEASED
def test_fallback_predicts_about_as_well_as_the_mean(make_regression_data):
    """Where no slope can be learnt the model is within a few percent of the
    (non-private) mean predictor, whatever the label mean."""
    X, y = make_regression_data(4000, d=10, offset=0.6)
    X_test, y_test = make_regression_data(20_000, d=10, seed=1, offset=0.6)
    reg = ObjPertRegressor(epsilon=0.1, **BOUNDS).fit(X, y)
    assert reg.mean_only_
    mse = np.mean((reg.predict(X_test) - y_test) ** 2)
    assert mse <= 1.05 * np.mean((y.mean() - y_test) ** 2)


@pytest.mark.parametrize("delta", [1e-12, 1e-6, 0.05])
def test_laplace_loss_is_the_tight_root(delta):
    """The closed form eps(delta) of the Laplace mechanism against a root
    search on the hockey-stick divergence integrated from its definition: never below the
    root, within 1e-12 of it, 0 where even eps = 0 meets delta."""
    from sklearn_pdp.accounting import laplace_delta, laplace_epsilon

    for t in np.concatenate([[0.0, 1e-9, 2.0 * delta], np.geomspace(1e-4, 30, 60)]):
        eps = float(laplace_epsilon(delta, t))
        assert _laplace_delta(eps, t) <= delta * (1 + 1e-12)
        assert_allclose(laplace_delta(eps, t), _laplace_delta(eps, t), rtol=1e-9, atol=1e-300)
        if _laplace_delta(0.0, t) <= delta:
            assert eps == 0.0
        else:
            root = brentq(lambda e: _laplace_delta(e, t) - delta, 0.0, t, xtol=1e-15, rtol=1e-15)
            # (brentq finds the root to 1e-15)
            assert root - 2e-15 <= eps <= root * (1 + 1e-12) + 2e-15


@MEAN_RELEASED
def test_mean_law_composes_with_a_gaussian_publication(make_regression_data):
    """The mean's law alone gives the fit's losses and budget; with a
    Gaussian publication it composes by basic composition (never below
    either part), and ``gaussian_allowance`` inverts ``dp_epsilon``."""
    from sklearn_pdp.accounting import gaussian_epsilon

    X, y = make_regression_data(150)
    reg = OPSRegressor(**BOUNDS).fit(X, y)
    assert reg.mean_only_
    law = reg.release_law()
    Xs, ys = reg.domain_scaler().scale(X, y)
    stats_ = reg.law_statistics()(Xs, ys)
    assert_allclose(law.epsilon(reg.delta, stats_), reg.pdp_losses_, rtol=1e-12)
    assert law.dp_epsilon(reg.delta) == reg.dp_epsilon_
    ratio = np.full(len(y), 0.3)
    composed = law.epsilon(reg.delta, stats_, ratio)
    assert np.all(composed >= law.epsilon(reg.delta, stats_))
    assert np.all(composed >= gaussian_epsilon(reg.delta, ratio))
    allowance = law.gaussian_allowance(reg.delta, 1.5)
    assert law.dp_epsilon(reg.delta, allowance) == pytest.approx(1.5, rel=1e-6)
    assert law.dp_epsilon(reg.delta, allowance) <= 1.5 * (1 + 1e-9)


def _thresholds(reason):
    """The epsilon and the size from which slopes are fitted, read from the
    reason."""
    import re

    found = re.search(r"fits slopes from epsilon ([0-9.e+-]+) \(at (\d+) rows\) or from "
                      r"(\d+) rows \(at epsilon ([0-9.e+-]+)\); below that it releases "
                      r"the private label mean", reason)
    assert found, reason
    return float(found.group(1)), int(found.group(3))


# at the threshold size the signal test may still find no slope (zero slopes)
@pytest.mark.filterwarnings("ignore:.*released zero slopes:sklearn_pdp.exceptions.FallbackWarning")
@pytest.mark.parametrize("cls", list(RATES), ids=lambda c: c.__name__)
def test_fallback_warns_why_with_the_public_thresholds(cls, make_regression_data):
    """A mean-only fit warns (FallbackWarning) and keeps the reason; the
    epsilon and the size it names are thresholds: at them slopes are
    fitted, one row less (or a hair less epsilon) still the mean."""
    from sklearn_pdp import FallbackWarning

    n, d, eps = 200, 3, 1.0
    X, y = make_regression_data(n, d)
    with pytest.warns(FallbackWarning, match="released the private label mean alone") as record:
        reg = cls(epsilon=eps, random_state=0, **BOUNDS).fit(X, y)
    assert reg.mean_only_ and str(record[0].message).endswith(reg.mean_only_reason_ + ".")
    assert record[0].filename == __file__  # points at the user's call
    epsilon, size = _thresholds(reg.mean_only_reason_)
    assert size == _fallback_size(cls, eps, reg.delta, d) + 1
    assert not cls(epsilon=epsilon, **BOUNDS)._mean_only_size(d) >= n
    assert cls(epsilon=epsilon * (1 - 2e-3), **BOUNDS)._mean_only_size(d) >= n
    if cls is RandomProjectionRegressor:  # its own sketch rule: a size, no formula
        return  # (and a sketch fit of thousands of rows: the size checked above)
    X_big, y_big = make_regression_data(size, d)
    assert not cls(epsilon=eps, random_state=0, **BOUNDS).fit(X_big, y_big).mean_only_
    with pytest.warns(FallbackWarning):
        assert cls(epsilon=eps, **BOUNDS).fit(X_big[1:], y_big[1:]).mean_only_
    assert reg.mean_only_reason_.startswith(f"{n} rows at epsilon {eps:g} are too few for "
                                            f"{d} slopes")
    assert (f"rows times epsilon, here {n * eps:g}, must exceed {RATES[cls]} per slope and "
            f"intercept, here {RATES[cls] * (d + 1):g})") in reg.mean_only_reason_


def test_slopes_released_have_no_reason_and_no_warning(make_regression_data):
    import warnings

    from sklearn_pdp import FallbackWarning

    X, y = make_regression_data(4000)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FallbackWarning)
        reg = OPSRegressor(random_state=0, **BOUNDS).fit(X, y)
    assert not reg.mean_only_ and reg.mean_only_reason_ is None
    # a refit at a fallback size sets it, the next one clears it again
    with pytest.warns(FallbackWarning):
        assert reg.fit(X[:100], y[:100]).mean_only_reason_ is not None
    assert reg.fit(X, y).mean_only_reason_ is None


def test_adassp_zero_slopes_warn_and_say_why():
    """AdaSSP's signal test sets every slope to 0 on labels without signal:
    not ``mean_only_`` (the whole noisy release was made; its losses are
    AdaSSP's), but the reason and the warning say so, with the covariance
    threshold, which falls as 1 / (n epsilon)."""
    from sklearn_pdp import FallbackWarning

    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (6000, 8)) / np.sqrt(8)
    y = np.clip(0.03 + 0.04 * rng.standard_normal(6000) ** 2, 0, 1)
    levels = []
    for eps in (1.0, 2.0):
        with pytest.warns(FallbackWarning, match="released zero slopes") as record:
            reg = AdaSSPRegressor(epsilon=eps, random_state=1, tighten_bounds=False,
                                  **BOUNDS).fit(X, y)
        assert np.isinf(reg.alpha_) and np.all(reg.coef_ == 0) and not reg.mean_only_
        assert "too weak to show through the privacy noise" in reg.mean_only_reason_ in str(
            record[0].message)
        levels.append(float(reg.mean_only_reason_.split("covariance above about ")[1]
                            .split(";")[0]))
    # (about: the noise of the cross term also scales the released label sum)
    assert levels[1] == pytest.approx(levels[0] / 2, rel=0.1)


def test_random_projection_zero_slopes_warn():
    """Random projection's signal test on the sketch: zero slopes warn too
    (not ``mean_only_``: the sketch was released)."""
    from sklearn_pdp import FallbackWarning

    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (6000, 8)) / np.sqrt(8)
    y = np.clip(0.03 + 0.04 * rng.standard_normal(6000) ** 2, 0, 1)
    dropped = 0
    # no signal: the test drops the slopes of some sketches (it is a test
    # at a margin, so not of all); each of those, and only those, warns
    for seed in range(12):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            reg = RandomProjectionRegressor(random_state=seed, **BOUNDS).fit(X, y)
        warned = any(issubclass(w.category, FallbackWarning)
                     and "released zero slopes" in str(w.message) for w in caught)
        assert warned == bool(np.isinf(reg.signal_ridge_))
        if warned:
            dropped += 1
            assert np.all(reg.coef_ == 0) and not reg.mean_only_
            assert "sketch shows no signal" in reg.mean_only_reason_
    assert dropped > 0
