"""AdaSSPRegressor: exact per-row sensitivities, the budget, the model."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import linalg
from sklearn.linear_model import LinearRegression

from sklearn_pdp import AdaSSPRegressor
from sklearn_pdp.accounting import gaussian_delta, gaussian_epsilon
from sklearn_pdp.mechanisms.adassp._release import AdaSSPRelease

from .._mc import assert_matches_mc
from ..conftest import UNIT_BOUNDS, regression_data

BOUNDS = dict(UNIT_BOUNDS)


def _statistics(X, y, intercept):
    """The released statistics of AdaSSP by their definitions, from scratch:
    the upper triangle of Z^T Z without the constant's own entry, X^T y, the
    label sum and the smallest eigenvalue of the centred scatter matrix."""
    n, d = X.shape
    Z = np.column_stack([X, np.ones(n)]) if intercept else X
    gram = (Z.T @ Z)[np.triu_indices(Z.shape[1])]
    if intercept:
        gram = gram[:-1]
    centred = X - X.mean(axis=0) if intercept else X
    out = {
        "gram": gram,
        "xy": X.T @ y,
        "eigen": np.atleast_1d(linalg.eigvalsh(centred.T @ centred)[0]),
    }
    if intercept:
        out["ysum"] = np.atleast_1d(y.sum())
    return out


def _ratio(reg, X, y, i):
    """The privacy ratio of removing row i from (X, y), by brute force, at
    the noise of the fitted ``reg``."""
    keep = np.arange(len(y)) != i
    full = _statistics(X, y, reg.fit_intercept)
    smaller = _statistics(X[keep], y[keep], reg.fit_intercept)
    return np.sqrt(sum(
        np.sum((full[key] - smaller[key]) ** 2) / sigma**2
        for key, sigma in reg.noise_scale_.items()
    ))


def _data_with_an_edge_row(n=600, d=3, seed=0):  # above the fallback to the mean at epsilon 0.5
    """Data inside BOUNDS with fixed slopes, its first row at the edge of the domain."""
    X, y = regression_data(n, d, seed, coef=np.linspace(1, -1, d), noise=0.3)
    X[0], y[0] = np.eye(d)[0], -1.0
    return X, y


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_losses_are_the_gaussian_losses_of_the_brute_force_sensitivity(fit_intercept):
    X, y = _data_with_an_edge_row()
    reg = AdaSSPRegressor(epsilon=0.5, fit_intercept=fit_intercept, random_state=0, **BOUNDS)
    reg.fit(X, y)
    for i in (0, 1, 7, 30):
        expected = gaussian_epsilon(reg.delta, _ratio(reg, X, y, i))
        assert_allclose(reg.pdp_losses_[i], expected, rtol=1e-9)
    assert np.all(reg.pdp_losses_ <= reg.dp_epsilon_)
    assert reg.dp_epsilon_ == 0.5


def test_a_target_is_a_training_row_of_the_larger_data_set():
    X, y = _data_with_an_edge_row()
    reg = AdaSSPRegressor(random_state=0, **BOUNDS).fit(X[1:], y[1:])
    # adding row 0 to the fitted set, at the fitted noise
    expected = gaussian_epsilon(reg.delta, _ratio(reg, X, y, 0))
    assert_allclose(reg.pdp_epsilon(X[:1], y[:1]), [expected], rtol=1e-9)
    assert reg.pdp_epsilon(X[:1], y[:1])[0] <= reg.dp_epsilon_


# 50 rows at epsilon 1 are too few for AdaSSP's slopes: the label mean
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.FallbackWarning")
@pytest.mark.parametrize("d", [1, 4])
def test_the_domain_worst_case_costs_the_budget(d):
    """A row at e_1 with label 1 against rows at -e_1 with label -1 moves
    every statistic by its largest amount in one dimension: its loss is the
    budget (and approaches it in more dimensions)."""
    n = 50
    X = np.zeros((n, d))
    X[:, 0] = -1.0
    y = -np.ones(n)
    X[0, 0], y[0] = 1.0, 1.0
    reg = AdaSSPRegressor(epsilon=1.0, random_state=0, **BOUNDS).fit(X, y)
    if d == 1:
        assert_allclose(reg.pdp_losses_[0], 1.0, rtol=1e-6)
    else:
        assert 0.5 < reg.pdp_losses_[0] <= 1.0
    assert np.all(reg.pdp_losses_ <= 1.0)


def test_the_whole_release_matches_the_gaussian_divergence():
    """Monte Carlo of the released statistics on neighbouring data sets (same
    public size, hence the same noise): the empirical hockey-stick divergences
    agree with the exact ones at the reported epsilon."""
    X, y = _data_with_an_edge_row(n=200, d=2)  # above the fallback to the mean, n epsilon > 60 (d + 1)
    reg = AdaSSPRegressor(epsilon=1.0, random_state=0, **BOUNDS).fit(X, y)
    keep = np.arange(len(y)) != 0
    full, smaller = _statistics(X, y, True), _statistics(X[keep], y[keep], True)
    sigma = reg.noise_scale_
    rng = np.random.default_rng(3)
    runs = 400_000

    def loss(noisy):  # log dP/dQ of a release, P = smaller data set's law
        return sum(
            (np.sum((noisy[k] - full[k]) ** 2, axis=1)
             - np.sum((noisy[k] - smaller[k]) ** 2, axis=1)) / (2 * sigma[k] ** 2)
            for k in sigma
        )

    def draws(stats):
        return {k: stats[k] + sigma[k] * rng.standard_normal((runs, stats[k].size))
                for k in sigma}

    eps = reg.pdp_losses_[0]
    s = _ratio(reg, X, y, 0)
    exact = gaussian_delta(eps, s)
    assert_allclose(exact, reg.delta, rtol=1e-6)
    # the same epsilon at a larger delta, where Monte Carlo resolves it
    eps_mc = float(gaussian_epsilon(1e-2, s))
    exact_mc = float(gaussian_delta(eps_mc, s))
    assert_matches_mc(exact_mc, exact_mc, loss(draws(smaller)), loss(draws(full)), eps_mc)


def test_budget_split_is_validated():
    X, y = _data_with_an_edge_row()
    with pytest.raises(ValueError, match="budget_split"):
        AdaSSPRegressor(budget_split=[1, 0, 1, 1], **BOUNDS).fit(X, y)
    with pytest.raises(ValueError, match="budget_split"):
        AdaSSPRegressor(budget_split=[1, 1, 1], **BOUNDS).fit(X, y)
    # the intercept is read from the label sum: it needs a share
    with pytest.raises(ValueError, match="budget_split"):
        AdaSSPRegressor(budget_split=[1, 1, 0, 1], **BOUNDS).fit(X, y)
    reg = AdaSSPRegressor(budget_split=[1, 1, 0, 1], fit_intercept=False, **BOUNDS).fit(X, y)
    assert "ysum" not in reg.noise_scale_


def test_a_larger_share_lowers_that_block_noise():
    X, y = _data_with_an_edge_row()
    even = AdaSSPRegressor(budget_split=[1, 1, 1, 1], **BOUNDS).fit(X, y)
    more_gram = AdaSSPRegressor(budget_split=[4, 1, 1, 1], **BOUNDS).fit(X, y)
    assert more_gram.noise_scale_["gram"] < even.noise_scale_["gram"]
    assert more_gram.noise_scale_["xy"] > even.noise_scale_["xy"]


def test_close_to_least_squares_on_large_data():
    rng = np.random.default_rng(0)
    n, d = 50_000, 5
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1).max()
    y = np.clip(0.3 + X @ rng.normal(size=d) + 0.1 * rng.normal(size=n), -1, 1)
    reg = AdaSSPRegressor(epsilon=1.0, random_state=0, **BOUNDS).fit(X, y)
    ls = LinearRegression().fit(X, y)
    mse_ls = np.mean((y - ls.predict(X)) ** 2)
    assert np.mean((y - reg.predict(X)) ** 2) <= 1.05 * mse_ls


def test_falls_back_towards_the_mean_at_a_tiny_budget():
    """Too little budget for slopes: the ridge shrinks the slopes, not the
    intercept, so the model is about as good as the (private) mean."""
    X, y = _data_with_an_edge_row(n=8000, d=5, seed=1)  # above the fallback to the mean
    fits = [AdaSSPRegressor(epsilon=0.05, random_state=s, **BOUNDS).fit(X, y) for s in range(5)]
    assert not any(reg.mean_only_ for reg in fits)
    scores = [reg.score(X, y) for reg in fits]
    assert np.mean(scores) > -0.1



def _skewed_noise_ratios():
    """Test MSE over the mean predictor's on labels that vary little and do
    not depend on X (skewed, near one end of the range, as survey counts)."""
    ratios = []
    for seed in range(5):
        rng = np.random.default_rng(seed)
        X = rng.uniform(0, 1, (6000, 8)) / np.sqrt(8)
        y = np.clip(0.03 + 0.04 * rng.standard_normal(6000) ** 2, 0, 1)
        reg = AdaSSPRegressor(epsilon=1.0, random_state=seed, **BOUNDS).fit(X[:5000], y[:5000])
        mse = np.mean((reg.predict(X[5000:]) - y[5000:]) ** 2)
        ratios.append(mse / np.mean((y[:5000].mean() - y[5000:]) ** 2))
    return np.mean(ratios)


# labels without signal: the signal test releases zero slopes by design
@pytest.mark.filterwarnings("ignore:.*released zero slopes:sklearn_pdp.exceptions.FallbackWarning")
def test_labels_without_signal_that_vary_little_give_the_mean(monkeypatch):
    """The signal test of the cross term releases (nearly) the label mean
    where slopes fitted at Wang's ridge alone cost far more than the mean."""
    assert _skewed_noise_ratios() < 1.05
    monkeypatch.setattr(AdaSSPRelease, "_signal_ridge", lambda self, scatter, *a: 0.0)
    assert _skewed_noise_ratios() > 1.3


def test_strong_signal_is_hardly_shrunk(monkeypatch):
    """Where the cross term is far above its noise the signal ridge is tiny
    against the scatter: the same noisy statistics give nearly the model of
    Wang's ridge alone (slopes shrunk by less than 0.1%)."""
    X, y = _data_with_an_edge_row(n=20000, d=5, seed=2)
    reg = AdaSSPRegressor(epsilon=1.0, random_state=0, **BOUNDS).fit(X, y)
    noisy = reg.release_._noisy(np.random.RandomState(1), size=20)
    theta, alpha = reg.release_._model(noisy)
    monkeypatch.setattr(AdaSSPRelease, "_signal_ridge", lambda self, scatter, *a: 0.0)
    theta_wang, alpha_wang = reg.release_._model(noisy)
    assert np.all(alpha >= alpha_wang) and np.all(np.isfinite(alpha))
    shrink = np.linalg.norm(theta[:, :5], axis=1) / np.linalg.norm(theta_wang[:, :5], axis=1)
    assert np.all((shrink > 0.999) & (shrink <= 1.0))


@pytest.mark.parametrize("case", ["duplicated", "constant", "one_hot", "zero"])
def test_exact_losses_on_rank_deficient_data_both_directions(case):
    """Linearly dependent columns (the smallest eigenvalue of the scatter is
    0, repeated): the losses are still those of the brute-force changes,
    for removing a training row and for adding a target."""
    X, y = _data_with_an_edge_row(n=800)
    n = len(y)
    extra = {
        "duplicated": X[:, :1],
        "constant": np.full((n, 1), 0.2),
        "one_hot": np.eye(3)[np.arange(n) % 3],
        "zero": np.zeros((n, 1)),
    }[case]
    X = np.column_stack([X, extra])
    X /= np.linalg.norm(X, axis=1).max()  # within data_norm: scaled = raw
    reg = AdaSSPRegressor(epsilon=2.0, random_state=0, **BOUNDS).fit(X, y)
    assert not reg.mean_only_
    for i in (0, 1, 7, 30):
        expected = gaussian_epsilon(reg.delta, _ratio(reg, X, y, i))
        assert_allclose(reg.pdp_losses_[i], expected, rtol=1e-9)
    smaller = AdaSSPRegressor(epsilon=2.0, random_state=0, **BOUNDS).fit(X[1:], y[1:])
    expected = gaussian_epsilon(reg.delta, _ratio(smaller, X, y, 0))
    assert_allclose(smaller.pdp_epsilon(X[:1], y[:1]), [expected], rtol=1e-9)
