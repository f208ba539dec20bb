import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import stats
from scipy.special import ndtri
from sklearn.linear_model import Ridge

from sklearn_pdp import AdaOPSRegressor
from sklearn_pdp._accounting import (
    gaussian_delta,
    gaussian_epsilon,
    ops_epsilon,
    ops_gamma,
)
from sklearn_pdp._data import DomainScaler
from sklearn_pdp._ops import lambda_min_change

from ._mc import Z_TOL, hockey_stick_mc

BOUNDS = dict(data_norm=1.0, y_bound=1.0)


def _unit_rows(n, d, seed, scale=1.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X *= scale / np.linalg.norm(X, axis=1, keepdims=True)
    y = np.clip(X @ rng.normal(size=d) + 0.1 * rng.normal(size=n), -1, 1)
    return X, y


def _scaled(X, y, reg):
    scaler = DomainScaler(reg.data_norm_, reg.y_bound_, reg.fit_intercept)
    scaler.y_offset = reg._scaler.y_offset
    return scaler.scale(X, y)


# ------------------------------------------------ lambda_min sensitivity ---


@pytest.mark.parametrize("seed", range(3))
def test_lambda_min_change_matches_eigvalsh(seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(25, 4)) * rng.uniform(0.05, 1, size=(25, 1)) / 2
    A = X.T @ X
    w, V = np.linalg.eigh(A)
    removed = [w[0] - np.linalg.eigvalsh(A - np.outer(x, x))[0] for x in X]
    assert_allclose(lambda_min_change(w, V, X), removed, rtol=1e-10, atol=1e-13)
    Z = rng.normal(size=(10, 4)) * 0.4
    added = [np.linalg.eigvalsh(A + np.outer(z, z))[0] - w[0] for z in Z]
    assert_allclose(lambda_min_change(w, V, Z, add=True), added, rtol=1e-10, atol=1e-13)


def test_lambda_min_change_degenerate_cases():
    # x orthogonal to the bottom eigenvector, and a repeated smallest eigenvalue
    A = np.diag([1.0, 1.0, 3.0, 5.0])
    w, V = np.linalg.eigh(A)
    X = np.array([[0.0, 0.0, 0.5, 0.5], [0.6, 0.0, 0.0, 0.0], [0.3, 0.4, 0.0, 0.5]])
    removed = [w[0] - np.linalg.eigvalsh(A - np.outer(x, x))[0] for x in X]
    added = [np.linalg.eigvalsh(A + np.outer(x, x))[0] - w[0] for x in X]
    assert_allclose(lambda_min_change(w, V, X), removed, atol=1e-13)
    assert_allclose(lambda_min_change(w, V, X, add=True), added, atol=1e-13)
    # the sensitivity is never more than Weyl's bound ||x||^2 <= 1
    assert np.all(lambda_min_change(w, V, X) <= (X**2).sum(axis=1) + 1e-15)


@pytest.mark.parametrize("spacing", [1e-6, 1e-2, 1.0, 1e3])
def test_lambda_min_change_across_spectra(spacing):
    """Eigenvalue gaps far below, near and far above ||x||^2: the iteration
    on the secular equation stays exact to eigvalsh's precision."""
    rng = np.random.default_rng(int(spacing * 1e6) % 2**32)
    d = 6
    w = 0.3 + spacing * np.sort(rng.uniform(0, d, size=d))
    V = np.linalg.qr(rng.normal(size=(d, d)))[0]
    A = V @ np.diag(w) @ V.T
    w, V = np.linalg.eigh(A)
    # rows that A can lose (inside its Gram) and arbitrary rows to add
    X = np.linalg.cholesky(A).T[rng.permutation(d)] * rng.uniform(0.2, 0.99, (d, 1))
    X /= np.maximum(np.linalg.norm(X, axis=1), 1.0)[:, None]
    Z = rng.normal(size=(20, d)) * rng.uniform(0.01, 1, size=(20, 1))
    Z /= np.maximum(np.linalg.norm(Z, axis=1), 1.0)[:, None]
    removed = [w[0] - np.linalg.eigvalsh(A - np.outer(x, x))[0] for x in X]
    added = [np.linalg.eigvalsh(A + np.outer(z, z))[0] - w[0] for z in Z]
    tol = dict(rtol=1e-10, atol=1e-13 * (1 + w[-1]))
    assert_allclose(lambda_min_change(w, V, X), removed, **tol)
    assert_allclose(lambda_min_change(w, V, Z, add=True), added, **tol)


# --------------------------------------------------- gamma calibration ---


@pytest.mark.parametrize("eps, mu, r", [(0.5, 1e-3, 5.0), (0.1, 0.01, 2.0), (4.0, 1e-5, 40.0)])
def test_ops_gamma_is_the_largest_valid_gamma(eps, mu, r):
    gamma = ops_gamma(eps, 1e-6, mu, r)
    assert ops_epsilon(1e-6, mu, r, gamma) <= eps
    assert ops_epsilon(1e-6, mu, r, gamma * (1 + 1e-6)) > eps * (1 - 1e-6)


def test_ops_gamma_refuses_an_unreachable_budget():
    # at mu = 0.01 the loss's limit as gamma -> 0 has eps(1e-6) ~ 0.0701
    assert ops_epsilon(1e-6, 0.01, 2.0, 1e-20) > 0.07
    with pytest.raises(ValueError, match="epsilon"):
        ops_gamma(0.07, 1e-6, 0.01, 2.0)


def test_printed_gamma_exceeds_its_share_erratum_e5():
    """erratum E5 in doc/errata.rst: at eps = 1, delta = 1e-6, d = kappa = 1 the paper's gamma_n
    spends more than eps/2 at the worst target; the calibrated one does not."""
    n, eps, delta, d, kappa = 10_000, 1.0, 1e-6, 1, 1.0
    printed = min(
        n * eps**2 / (16 * kappa**2 * d**2 * np.log(4 / delta)), n * eps / (8 * kappa**2 * d**2)
    )
    mu, r = d * kappa / n, 1 + np.sqrt(d * kappa)
    assert ops_epsilon(delta / 2, mu, r, printed) > eps / 2
    assert ops_epsilon(delta / 2, mu, r, ops_gamma(eps / 2, delta / 2, mu, r)) <= eps / 2


# ------------------------------------------------------------ estimator ---


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_pdp_losses_equal_brute_force_composition(fit_intercept):
    X, y = _unit_rows(40, 3, 0)
    reg = AdaOPSRegressor(
        epsilon=2.0, fit_intercept=fit_intercept, random_state=0, **BOUNDS
    ).fit(X, y)
    Xs, ys = _scaled(X, y, reg)
    # the analysis works on rows in the unit ball: [x, 1] / sqrt(2)
    Xs = Xs / np.sqrt(2.0) if fit_intercept else Xs
    n, d = Xs.shape
    shares = 4 if fit_intercept else 3
    delta_share = 1e-6 / shares
    eps_eigen = 2.0 * (1 / 3 if fit_intercept else 1 / 2)
    A = Xs.T @ Xs
    lam = np.linalg.eigvalsh(A)[0]
    sigma_eigen = 1.0 / _largest_ratio(eps_eigen, delta_share)
    expected = []
    for i in range(n):
        # the posterior sample contributes its share of the guarantee: its
        # own loss at the released ridge would be conditioned on a draw
        loss = eps_eigen
        change = lam - np.linalg.eigvalsh(A - np.outer(Xs[i], Xs[i]))[0]
        loss += gaussian_epsilon(delta_share, change / sigma_eigen)
        if fit_intercept:
            sigma_mean = 1.0 / _largest_ratio(2.0 / 3, delta_share)
            label = np.clip(y[i], -1, 1)  # y_bound = 1: the scaled, uncentred label
            loss += gaussian_epsilon(delta_share, abs(label) / sigma_mean)
        expected.append(min(loss, reg.dp_epsilon_))
    assert_allclose(reg.pdp_losses_, expected, rtol=1e-7)
    assert np.all(reg.pdp_losses_ <= reg.dp_epsilon_)
    assert reg.dp_epsilon_ <= 2.0
    assert reg.dp_epsilon_ == pytest.approx(2.0, rel=1e-6)


def _largest_ratio(eps, delta):
    """Largest s with Gaussian delta(eps) <= delta, by bisection (independent
    of the estimator's own calibration)."""
    lo, hi = 1e-6, 1e3
    for _ in range(200):
        mid = np.sqrt(lo * hi)
        lo, hi = (mid, hi) if gaussian_delta(eps, mid) <= delta else (lo, mid)
    return lo


@pytest.mark.parametrize("seed", range(4))
def test_guarantee_holds_on_adversarial_data(seed):
    """doc/mechanisms/adaops.rst: on the margin event every target has leverage <= 1/h and
    |r| <= 1 + sqrt(n/h), so the exact OPS loss at its delta share is at most
    its epsilon share, for training rows (uncapped) and for the worst added
    targets. Data: unit-norm rows, one direction nearly unsupported, labels at
    the bound against the fit."""
    rng = np.random.default_rng(seed)
    n, d, eps, delta = 200, 2, 1.0, 1e-6
    X = np.column_stack([np.ones(n), 0.01 * rng.normal(size=n)])
    X[0] = [0.0, 1.0]  # the only support of the second direction
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.sign(rng.normal(size=n))
    y[0] = -1.0
    kappa = 1.0
    reg = AdaOPSRegressor(
        epsilon=eps, delta=delta, kappa=kappa, fit_intercept=False,
        random_state=seed, **BOUNDS,
    ).fit(X, y)
    h = n / (d * kappa)
    assert reg.kappa_ == pytest.approx(kappa)
    assert reg.alpha_ > 0  # the eigenvalue floor needs ridge here
    assert np.linalg.eigvalsh(X.T @ X + reg.alpha_ * np.eye(d))[0] >= h
    share = delta / 3
    # the worst corner spends exactly the sample's share
    assert ops_epsilon(share, 1 / h, 1 + np.sqrt(n / h), reg.gamma_) == pytest.approx(
        eps / 2, rel=1e-6
    )
    H = X.T @ X + reg.alpha_ * np.eye(d)
    theta = np.linalg.solve(H, X.T @ y)
    lev = np.einsum("ij,ij->i", X, np.linalg.solve(H, X.T).T)
    mu, r = lev / (1 - lev), (y - X @ theta) / (1 - lev)
    assert np.all(ops_epsilon(share, mu, r, reg.gamma_) <= eps / 2)
    # added unit-norm targets in every direction, worst label
    angle = np.linspace(0, np.pi, 181)
    Z = np.column_stack([np.cos(angle), np.sin(angle)])
    mu_z = np.einsum("ij,ij->i", Z, np.linalg.solve(H, Z.T).T)
    r_z = 1 + np.abs(Z @ theta)
    assert np.all(ops_epsilon(share, mu_z, r_z, reg.gamma_) <= eps / 2)
    assert np.all(reg.pdp_epsilon(Z) <= reg.dp_epsilon_)


def test_lambda_min_release_has_the_calibrated_scale():
    """Released eigenvalues are N(lambda_min, sigma_1^2) with sigma_1 the
    analytic Gaussian scale at the eigenvalue's share (eps/2, delta/3)."""
    X, y = _unit_rows(50, 3, 1)
    reg = AdaOPSRegressor(epsilon=1.0, fit_intercept=False, random_state=0, **BOUNDS)
    reg.fit(X, y)
    draws = reg._mechanism(np.random.default_rng(1), size=4000)["lambda_min"][:, 0]
    sigma = 1.0 / _largest_ratio(0.5, 1e-6 / 3)
    z = (draws - np.linalg.eigvalsh(X.T @ X)[0]) / sigma
    assert stats.kstest(z, "norm").pvalue > 1e-6
    # the margin covers the noise except with probability delta/3
    assert reg._margin == pytest.approx(-sigma * ndtri(1e-6 / 3), rel=1e-6)


def test_pdp_epsilon_of_new_targets_matches_brute_force():
    X, y = _unit_rows(60, 3, 2, scale=0.8)
    reg = AdaOPSRegressor(epsilon=1.5, random_state=0, **BOUNDS).fit(X, y)
    Xn, yn = _unit_rows(6, 3, 3, scale=0.9)
    yn *= 0.5  # centred by the released mean, these labels are not clipped
    Xs, ys = _scaled(X, y, reg)
    Zs, zs = _scaled(Xn, yn, reg)
    Xs, Zs = Xs / np.sqrt(2.0), Zs / np.sqrt(2.0)  # rows [x, 1] / sqrt(2)
    share = 1e-6 / 4  # default split (1, 1, 1): eps shares 0.5 each
    expected = 0.5  # the posterior sample's share of the guarantee
    A = Xs.T @ Xs
    change = [np.linalg.eigvalsh(A + np.outer(z, z))[0] - np.linalg.eigvalsh(A)[0] for z in Zs]
    expected += gaussian_epsilon(share, np.array(change) * _largest_ratio(0.5, share))
    expected += gaussian_epsilon(share, np.abs(np.clip(yn, -1, 1)) * _largest_ratio(0.5, share))
    assert_allclose(reg.pdp_epsilon(Xn, yn), np.minimum(expected, reg.dp_epsilon_), rtol=1e-7)
    worst = reg.pdp_epsilon(Xn)
    for label in (-1.0, 0.0, 0.5, 1.0):
        assert np.all(worst >= reg.pdp_epsilon(Xn, np.full(6, label)) - 1e-12)


def test_kappa_is_checked_against_the_paper_constraint():
    X, y = _unit_rows(1000, 4, 0)
    kappa_max = 1000 * 1.0 / (4 * 5 * (1 + np.log(4 / 1e-6)))
    AdaOPSRegressor(kappa=0.99 * kappa_max, **BOUNDS).fit(X, y)
    with pytest.raises(ValueError, match="kappa"):
        AdaOPSRegressor(kappa=1.01 * kappa_max, **BOUNDS).fit(X, y)


@pytest.mark.parametrize(
    "param, value",
    [("epsilon", 0.0), ("epsilon", -1.0), ("delta", 1.0), ("kappa", 0.0),
     ("kappa", "big"), ("budget_split", [1.0, 0.0, 1.0]), ("budget_split", [1.0, 1.0]),
     ("budget_split", [1.0, 1.0, -0.5]), ("data_norm", 0.0)],
)
def test_invalid_parameters_name_the_parameter(param, value):
    X, y = _unit_rows(100, 2, 0)
    with pytest.raises(ValueError, match=param):
        AdaOPSRegressor(**{**BOUNDS, param: value}).fit(X, y)


def test_budget_split_is_respected():
    X, y = _unit_rows(3000, 3, 0)
    reg = AdaOPSRegressor(
        epsilon=1.0, budget_split=[1, 3, 0], fit_intercept=False, random_state=0, **BOUNDS
    ).fit(X, y)
    # a larger sample share buys a larger gamma than the default split
    default = AdaOPSRegressor(epsilon=1.0, fit_intercept=False, random_state=0, **BOUNDS)
    assert reg.gamma_ > default.fit(X, y).gamma_
    assert reg.dp_epsilon_ == pytest.approx(1.0, rel=1e-6)
    assert reg._sigma["eigen"] == pytest.approx(1.0 / _largest_ratio(0.25, 1e-6 / 3), rel=1e-6)


def test_intercept_tracks_the_label_mean():
    """A heavily regularised fit must predict the mean, not 0: labels far
    from 0 (mean 0.6 of the bound) with little signal in the features."""
    rng = np.random.default_rng(0)
    n = 5000
    X = rng.normal(size=(n, 5)) * 0.3
    y = 0.6 + 0.1 * X[:, 0] + 0.1 * rng.normal(size=n)
    X_test = rng.normal(size=(5000, 5)) * 0.3
    y_test = 0.6 + 0.1 * X_test[:, 0] + 0.1 * rng.normal(size=5000)
    mean_mse = np.mean((y_test - y.mean()) ** 2)
    for eps in (1.0, 3.0):
        reg = AdaOPSRegressor(epsilon=eps, data_norm=2.0, y_bound=1.0, random_state=0)
        mse = np.mean((reg.fit(X, y).predict(X_test) - y_test) ** 2)
        assert mse < 1.2 * mean_mse, (eps, mse, mean_mse)
    no_mean = AdaOPSRegressor(
        epsilon=1.0, budget_split=[1, 1, 0], data_norm=2.0, y_bound=1.0, random_state=0
    ).fit(X, y)
    assert np.mean((no_mean.predict(X_test) - y_test) ** 2) > 1.5 * mean_mse
    assert AdaOPSRegressor(fit_intercept=False, **BOUNDS).fit(X, y).intercept_ == 0.0


def test_utility_close_to_least_squares_with_a_large_sample():
    X, y = _unit_rows(30_000, 5, 4)
    X_test, y_test = _unit_rows(5000, 5, 4)  # same coefficients (same seed)
    ls = Ridge(alpha=1e-9).fit(X, y)
    mse_ls = np.mean((ls.predict(X_test) - y_test) ** 2)
    reg = AdaOPSRegressor(epsilon=1.0, random_state=0, **BOUNDS).fit(X, y)
    assert reg.alpha_ < 1e-2 * reg.lambda_min_  # well conditioned: no real ridge
    assert np.mean((reg.predict(X_test) - y_test) ** 2) < 1.25 * mse_ls


def test_random_state_makes_fit_reproducible():
    X, y = _unit_rows(200, 3, 0)
    a = AdaOPSRegressor(random_state=3, **BOUNDS).fit(X, y)
    b = AdaOPSRegressor(random_state=3, **BOUNDS).fit(X, y)
    c = AdaOPSRegressor(random_state=4, **BOUNDS).fit(X, y)
    assert_allclose(a.coef_, b.coef_)
    assert a.lambda_min_ == b.lambda_min_ != c.lambda_min_
    assert not np.allclose(a.coef_, c.coef_)


def test_posterior_draw_has_the_stated_distribution():
    """Given the released ridge, whitened draws are N(0, I)."""
    X, y = _unit_rows(40, 2, 5)
    reg = AdaOPSRegressor(
        epsilon=3.0, kappa=0.05, fit_intercept=False, random_state=0, **BOUNDS
    ).fit(X, y)
    draws = reg._mechanism(np.random.default_rng(0), size=3000)
    alpha, gamma, theta = draws["alpha"], draws["gamma"], draws["theta"]
    w, V = np.linalg.eigh(X.T @ X)
    spectrum = w + alpha[:, None]
    mean = ((V.T @ (X.T @ y)) / spectrum)
    z = ((theta @ V) - mean) * np.sqrt(gamma[:, None] * spectrum)
    p = stats.chi2.sf((z**2).sum(), df=z.size)
    assert 1e-6 < p < 1 - 1e-6
    assert np.all(np.abs(z.mean(axis=0)) * np.sqrt(len(z)) < 4.9)


def test_composed_loss_bounds_the_joint_mechanism_by_monte_carlo():
    """The reported loss of a row (basic composition, OPS part at the released
    ridge) against Monte Carlo of the whole mechanism's privacy loss on the
    released pair (lambda_min_, coefficient), written out independently for
    d = 1 with a fixed floor: its delta at the reported epsilon is <= delta."""
    rng = np.random.default_rng(1)
    n, delta, eps = 8, 1e-3, 6.0
    X = np.full((n, 1), 0.3) + 0.05 * rng.normal(size=(n, 1))
    y = np.clip(X[:, 0] + 0.05 * rng.normal(size=n), -1, 1)
    X[0], y[0] = 1.0, -1.0  # the target: moves lambda_min by 1, large residual
    kappa = 0.9 * n * eps / (4 * (1 + np.log(4 / delta)))
    params = dict(epsilon=eps, delta=delta, kappa=kappa, fit_intercept=False, **BOUNDS)
    reg = AdaOPSRegressor(random_state=0, **params).fit(X, y)
    sigma = 1.0 / _largest_ratio(eps / 2, delta / 3)
    margin = -sigma * ndtri(delta / 3)
    h = n / kappa
    gamma = ops_gamma(eps / 2, delta / 3, 1 / h, 1 + np.sqrt(n / h))
    assert reg.gamma_ == pytest.approx(gamma)

    def ridge(lam):
        return np.maximum(h - lam + margin, 1e-6 * h)

    def log_density(lam, theta, w, g):
        H = w + ridge(lam)
        return -0.5 * ((lam - w) / sigma) ** 2 + 0.5 * np.log(H) - 0.5 * gamma * H * (theta - g / H) ** 2

    def sample(w, g, size):
        lam = w + sigma * rng.standard_normal(size)
        H = w + ridge(lam)
        return lam, g / H + rng.standard_normal(size) / np.sqrt(gamma * H)

    small = ((X[1:, 0] ** 2).sum(), (X[1:, 0] * y[1:]).sum())  # P: without the target
    large = ((X[:, 0] ** 2).sum(), (X[:, 0] * y).sum())  # Q: with it
    lp, lq = sample(*small, 1_000_000), sample(*large, 1_000_000)
    loss_p = log_density(*lp, *small) - log_density(*lp, *large)
    loss_q = log_density(*lq, *small) - log_density(*lq, *large)
    for seed in range(3):
        reported = AdaOPSRegressor(random_state=seed, **params).fit(X, y).pdp_losses_[0]
        for est, se in hockey_stick_mc(loss_p, loss_q, reported):
            assert est - Z_TOL * se <= delta, (seed, reported, est, se)
        # and the loss is far from trivial: the data-independent bound is 6
        assert 3.0 < reported < eps
