import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import stats
from scipy.optimize import brentq
from scipy.special import ndtri
from sklearn.linear_model import Ridge

from sklearn_pdp import AdaOPSRegressor
from sklearn_pdp._accounting import gaussian_delta, ops_delta, ops_epsilon, ops_gamma
from sklearn_pdp._data import DomainScaler
from sklearn_pdp._eigen import lambda_min_change

from ._mc import Z_TOL, hockey_stick_mc

BOUNDS = dict(data_norm=1.0, y_bound=1.0)


def _unit_rows(n, d, seed, scale=1.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X *= scale / np.linalg.norm(X, axis=1, keepdims=True)
    y = np.clip(X @ rng.normal(size=d) + 0.1 * rng.normal(size=n), -1, 1)
    return X, y


def _scaled(X, y, reg):
    return DomainScaler(reg.data_norm_, reg.y_bound_, reg.fit_intercept).scale(X, y)


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


def _largest_ratio(eps, delta):
    """Largest s with Gaussian delta(eps) <= delta, by bisection (independent
    of the estimator's own calibration)."""
    lo, hi = 1e-6, 1e3
    for _ in range(200):
        mid = np.sqrt(lo * hi)
        lo, hi = (mid, hi) if gaussian_delta(eps, mid) <= delta else (lo, mid)
    return lo


def _scatter_min(Z, intercept):
    """lambda_min of the centred scatter (X^T X without intercept), by eigvalsh."""
    X = Z[:, :-1] if intercept else Z
    if intercept:
        X = X - X.mean(axis=0)
    return np.linalg.eigvalsh(X.T @ X)[0]


def _ops_statistics(Z, y, alpha, intercept, target=None, label=None):
    """Leverage and residual of a target (default: each row, left out) against
    the ridge with an unpenalised intercept, by dense solves."""
    P = np.eye(Z.shape[1])
    if intercept:
        P[-1, -1] = 0.0
    if target is None:
        out = [_ops_statistics(np.delete(Z, i, 0), np.delete(y, i), alpha, intercept,
                               Z[i], y[i]) for i in range(len(Z))]
        return np.array(out).T
    H = Z.T @ Z + alpha * P
    theta = np.linalg.solve(H, Z.T @ y)
    return target @ np.linalg.solve(H, target), label - target @ theta


def _mixture_epsilon(cal, lam_p, lam_q, stats, delta):
    """eps(delta) of the release (cell, theta) written out with ops_delta over
    every cell within 40 noise deviations, by brentq on each direction."""
    e_p, e_q = lam_p - cal.margin, lam_q - cal.margin
    cells = np.arange(cal.index(min(e_p, e_q) - 40 * cal.sigma),
                      cal.index(max(e_p, e_q) + 40 * cal.sigma) + 1)
    lower, upper = cal.edges(cells)
    p = stats_norm_mass(lower, upper, e_p, cal.sigma)
    q = stats_norm_mass(lower, upper, e_q, cal.sigma)
    keep = (p > 0) & (q > 0)
    L = np.log(p[keep]) - np.log(q[keep])
    mu, r = np.array([stats(int(k)) for k in cells[keep]]).T
    gamma = np.array([cal.gamma(int(k)) for k in cells[keep]])

    def remove(eps):
        return np.sum(p[keep] * ops_delta(eps - L, mu, r, gamma, direction="remove")) - delta

    def add(eps):
        return np.sum(q[keep] * ops_delta(eps + L, mu, r, gamma, direction="add")) - delta

    out = 0.0
    for f in (remove, add):
        if f(0.0) > 0:
            out = max(out, brentq(f, 0.0, 50.0, xtol=1e-14, rtol=1e-13))
    return out


def stats_norm_mass(lower, upper, centre, sigma):
    return stats.norm.cdf(upper, centre, sigma) - stats.norm.cdf(lower, centre, sigma)


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_pdp_losses_equal_the_mixture_written_out(fit_intercept):
    """pdp_losses_ and pdp_epsilon against an independent evaluation of the
    exact loss of (cell, coefficients): dense eigenvalues and solves per
    neighbour, cell masses from scipy.stats, ops_delta per cell, brentq."""
    X, y = _unit_rows(40, 2, 0, scale=0.9)
    # above the fallback to the label mean, n epsilon > 40 (d + 1)
    reg = AdaOPSRegressor(epsilon=3.5, fit_intercept=fit_intercept, random_state=0,
                          **BOUNDS).fit(X, y)
    Z, ys = _scaled(X, y, reg)
    cal, lam = reg._cal, _scatter_min(Z, fit_intercept)
    expected = []
    for i in range(len(Z)):
        rest = np.delete(Z, i, 0)
        lam_p = _scatter_min(rest, fit_intercept)

        def stats_i(k, i=i, rest=rest):
            mu, r = _ops_statistics(rest, np.delete(ys, i), cal.ridge(k), fit_intercept,
                                    Z[i], ys[i])
            return mu, r

        expected.append(_mixture_epsilon(cal, lam_p, lam, stats_i, 1e-6))
    assert_allclose(reg.pdp_losses_, np.minimum(expected, 3.0), rtol=1e-7)
    assert np.all(reg.pdp_losses_ < 3.0)
    # new targets: the data set gains the row
    Xn, yn = _unit_rows(4, 2, 3, scale=0.8)
    Zn, zn = _scaled(Xn, yn, reg)
    added = []
    for z, label in zip(Zn, zn):
        lam_q = _scatter_min(np.vstack([Z, z]), fit_intercept)
        added.append(_mixture_epsilon(
            cal, lam, lam_q,
            lambda k, z=z, label=label: _ops_statistics(Z, ys, cal.ridge(k), fit_intercept, z, label),
            1e-6))
    assert_allclose(reg.pdp_epsilon(Xn, yn), added, rtol=1e-7)
    worst = reg.pdp_epsilon(Xn)
    for label in (-1.0, 0.0, 0.5, 1.0):
        assert np.all(worst >= reg.pdp_epsilon(Xn, np.full(4, label)) - 1e-12)


def _outlier_data():
    """One row against the trend, and a smallest eigenvalue near the
    eigenvalue's margin, so that the released cell varies with the draw."""
    rng = np.random.default_rng(7)
    n = 200
    X = rng.uniform(-0.7, 0.7, (n, 2))
    y = np.clip(0.8 * np.sign(X[:, 1]) + 0.05 * rng.standard_normal(n), -1, 1)
    X[0], y[0] = [0.0, 1.0], -1.0
    return X, y


def test_losses_do_not_depend_on_the_draw():
    """The released cell, ridge and gamma change with random_state; the
    per-instance losses must not (they used to condition on the released
    eigenvalue and under-report)."""
    X, y = _outlier_data()
    params = dict(epsilon=1.0, delta=1e-6, kappa=1.5, budget_split=[1, 1],
                  fit_intercept=False, **BOUNDS)
    fits = [AdaOPSRegressor(random_state=seed, **params).fit(X, y) for seed in range(12)]
    assert len({f.alpha_ for f in fits}) > 1
    for f in fits[1:]:
        assert_allclose(f.pdp_losses_, fits[0].pdp_losses_, rtol=0, atol=0)
    assert 0 < fits[0].pdp_losses_[0] < 1.0


def test_loss_is_exact_against_monte_carlo_of_the_whole_release():
    """d = 1, a fixed floor, no intercept: the release (cell, theta) sampled on
    both neighbours by an independent sampler, its privacy loss written out
    (cell mass ratio plus the Gaussian log density ratio); at the reported
    epsilon the Monte Carlo delta matches delta in the binding direction and
    is below it in the other. The estimator's own sampler draws the same law."""
    rng = np.random.default_rng(1)
    n, delta, eps = 8, 1e-3, 6.0
    X = np.full((n, 1), 0.3) + 0.05 * rng.normal(size=(n, 1))
    y = np.clip(X[:, 0] + 0.05 * rng.normal(size=n), -1, 1)
    X[0], y[0] = 1.0, -1.0  # the target: moves lambda_min by 1, large residual
    kappa = 0.9 * n * eps / (4 * (1 + np.log(4 / delta)))
    reg = AdaOPSRegressor(epsilon=eps, delta=delta, kappa=kappa, fit_intercept=False,
                          random_state=0, **BOUNDS).fit(X, y)
    cal = reg._cal
    sigma = 1.0 / _largest_ratio(0.1 * eps, delta / 3)  # default split (0.1, 0.9)
    assert cal.sigma == pytest.approx(sigma, rel=1e-6)
    assert cal.margin == pytest.approx(-sigma * ndtri(delta / 3), rel=1e-6)

    def per_cell(cells, func):
        values, which = np.unique(cells, return_inverse=True)
        return np.array([func(int(k)) for k in values])[which]

    def sample(w, g, size):
        cells = cal.index(w + sigma * rng.standard_normal(size) - cal.margin)
        H = w + per_cell(cells, cal.ridge)
        return cells, g / H + rng.standard_normal(size) / np.sqrt(per_cell(cells, cal.gamma) * H)

    def log_density(cells, theta, w, g):
        lower, upper = cal.edges(cells)
        log_upper = stats.norm.logcdf(upper, w - cal.margin, sigma)
        mass = log_upper + np.log1p(-np.exp(stats.norm.logcdf(lower, w - cal.margin, sigma)
                                            - log_upper))
        H = w + per_cell(cells, cal.ridge)
        return mass + 0.5 * np.log(H) - 0.5 * per_cell(cells, cal.gamma) * H * (theta - g / H) ** 2

    small = ((X[1:, 0] ** 2).sum(), (X[1:, 0] * y[1:]).sum())  # P: without the target
    large = ((X[:, 0] ** 2).sum(), (X[:, 0] * y).sum())  # Q: with it
    lp, lq = sample(*small, 1_000_000), sample(*large, 1_000_000)
    loss_p = log_density(*lp, *small) - log_density(*lp, *large)
    loss_q = log_density(*lq, *small) - log_density(*lq, *large)
    reported = reg.pdp_losses_[0]
    assert 1.0 < reported < eps  # far from trivial, below the guarantee
    estimates = hockey_stick_mc(loss_p, loss_q, reported)
    for est, se in estimates:
        assert est - Z_TOL * se <= delta, (reported, est, se)
    assert any(abs(est - delta) <= Z_TOL * se for est, se in estimates), estimates
    # the estimator's sampler: the same law of theta as the sampler above
    mine = reg._release(np.random.default_rng(2), size=20000)[:, 0]
    assert stats.ks_2samp(mine, lq[1][:20000]).pvalue > 1e-6


@pytest.mark.parametrize("seed", range(3))
def test_guarantee_holds_on_adversarial_data(seed):
    """doc/mechanisms/adaops.rst: when the floor holds, every target has at
    most the corner's leverage and |residual|, so its exact OPS loss at the
    sample's share is at most the sample's epsilon: training rows and the
    worst added targets, on data with one nearly unsupported direction and
    labels at the bound against the fit."""
    rng = np.random.default_rng(seed)
    n, d, eps, delta = 200, 2, 1.0, 1e-6
    X = np.column_stack([np.ones(n), 0.01 * rng.normal(size=n)])
    X[0] = [0.0, 1.0]  # the only support of the second direction
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.sign(rng.normal(size=n))
    y[0] = -1.0
    reg = AdaOPSRegressor(epsilon=eps, delta=delta, kappa=1.0, fit_intercept=False,
                          random_state=seed, **BOUNDS).fit(X, y)
    cal = reg._cal
    assert reg.floor_ == pytest.approx(n / d) and reg.kappa_ == pytest.approx(1.0)
    assert reg.alpha_ > 1.0  # the floor needs ridge here
    # the margin event held for this draw: the floor holds with the ridge
    assert np.linalg.eigvalsh(X.T @ X)[0] + reg.alpha_ >= reg.floor_
    share = delta / 3
    eps_sample = eps * 0.9
    corner = (1 / (reg.floor_ - 1), 1 + np.sqrt(n) * np.sqrt(reg.floor_ - 1 - reg.alpha_)
              / (reg.floor_ - 1) if reg.floor_ - 1 - reg.alpha_ >= reg.alpha_
              else 1 + np.sqrt(n) / (2 * np.sqrt(reg.alpha_)))
    assert cal.corner(reg.floor_ - 1, reg.alpha_) == pytest.approx(corner)
    assert ops_epsilon(share, *corner, reg.gamma_) == pytest.approx(eps_sample, rel=1e-6)
    H = X.T @ X + reg.alpha_ * np.eye(d)
    theta = np.linalg.solve(H, X.T @ y)
    lev = np.einsum("ij,ij->i", X, np.linalg.solve(H, X.T).T)
    mu, r = lev / (1 - lev), (y - X @ theta) / (1 - lev)
    assert np.all(ops_epsilon(share, mu, r, reg.gamma_) <= eps_sample)
    angle = np.linspace(0, np.pi, 181)
    Z = np.column_stack([np.cos(angle), np.sin(angle)])
    mu_z = np.einsum("ij,ij->i", Z, np.linalg.solve(H, Z.T).T)
    assert np.all(ops_epsilon(share, mu_z, 1 + np.abs(Z @ theta), reg.gamma_) <= eps_sample)
    assert np.all(reg.pdp_epsilon(Z) <= reg.dp_epsilon_)


def test_eigenvalue_noise_and_cells():
    """sigma_1 is the analytic Gaussian scale at (eps_1, delta/3) for the
    sensitivity 4 (n - 1)/n of the centred scatter; the cells tile the line
    and every cell's ridge lifts its lowest point (never below 0, the least
    possible eigenvalue) to its floor; the lowest cell's ridge is the floor."""
    X, y = _unit_rows(500, 3, 1)
    reg = AdaOPSRegressor(epsilon=1.0, random_state=0, **BOUNDS).fit(X, y)
    cal = reg._cal
    assert cal.sigma == pytest.approx(4 * 499 / 500 / _largest_ratio(0.1, 1e-6 / 3), rel=1e-6)
    cells = np.arange(cal.lowest, 40)
    lower, upper = cal.edges(cells)
    assert lower[0] == -np.inf and lower[1] > 0
    assert_allclose(lower[1:], upper[:-1], rtol=1e-12)
    assert np.all(cal.index(lower[1:] + 1e-9 * np.abs(lower[1:])) == cells[1:])
    assert np.all(cal.index([-1e12, lower[1] / 2]) == cal.lowest)
    for k, low in zip(cells, lower):
        assert max(low, 0.0) + cal.ridge(int(k)) >= cal.floor(int(k)) * (1 - 1e-12)
    assert cal.ridge(cal.lowest) == pytest.approx(cal.floor(cal.lowest) + cal.tiny)


def test_kappa_is_checked_against_the_paper_constraint():
    X, y = _unit_rows(1000, 4, 0)
    kappa_max = 1000 * 1.0 / (4 * 4 * (1 + np.log(4 / 1e-6)))
    AdaOPSRegressor(kappa=0.99 * kappa_max, **BOUNDS).fit(X, y)
    with pytest.raises(ValueError, match="kappa"):
        AdaOPSRegressor(kappa=1.01 * kappa_max, **BOUNDS).fit(X, y)


def test_too_few_samples_for_an_intercept_release_the_mean():
    """Where the intercept's own posterior (leverage 1/(n - 1)) could not meet
    a tiny budget, the fit releases the label mean within it instead."""
    X, y = _unit_rows(50, 2, 0)
    with pytest.raises(ValueError, match="too few samples"):
        AdaOPSRegressor(epsilon=0.05)._mechanism_guarantee(50, 2)
    reg = AdaOPSRegressor(epsilon=0.05, **BOUNDS).fit(X, y)
    assert reg.mean_only_ and reg.dp_epsilon_ == 0.05 == reg.dp_guarantee(50, 2)[0]
    assert not AdaOPSRegressor(epsilon=0.05, fit_intercept=False, **BOUNDS).fit(X, y).mean_only_


@pytest.mark.parametrize(
    "param, value",
    [("epsilon", 0.0), ("epsilon", -1.0), ("delta", 1.0), ("kappa", 0.0),
     ("kappa", "big"), ("budget_split", [1.0, 0.0]), ("budget_split", [1.0, 1.0, 1.0]),
     ("budget_split", [1.0, -0.5]), ("data_norm", 0.0)],
)
def test_invalid_parameters_name_the_parameter(param, value):
    X, y = _unit_rows(100, 2, 0)
    with pytest.raises(ValueError, match=param):
        AdaOPSRegressor(**{**BOUNDS, param: value}).fit(X, y)


def test_budget_split_is_respected():
    X, y = _unit_rows(3000, 3, 0)
    reg = AdaOPSRegressor(epsilon=1.0, budget_split=[1, 3], kappa=5.0, random_state=0,
                          **BOUNDS).fit(X, y)
    default = AdaOPSRegressor(epsilon=1.0, kappa=5.0, random_state=0, **BOUNDS).fit(X, y)
    # a smaller sample share than the default's 0.9 buys a smaller gamma
    assert reg._cal.gamma(0) < default._cal.gamma(0)
    assert reg.dp_epsilon_ == 1.0
    assert reg._cal.sigma == pytest.approx(
        4 * 2999 / 3000 / _largest_ratio(0.25, 1e-6 / 3), rel=1e-6)


def test_intercept_is_not_shrunk():
    """A heavily regularised fit must predict the mean, not 0: labels far
    from 0 (mean 0.6 of the bound) with little signal in the features."""
    rng = np.random.default_rng(0)
    n = 5000
    X = rng.normal(size=(n, 5)) * 0.3
    y = 0.6 + 0.1 * X[:, 0] + 0.1 * rng.normal(size=n)
    X_test = rng.normal(size=(5000, 5)) * 0.3
    y_test = 0.6 + 0.1 * X_test[:, 0] + 0.1 * rng.normal(size=5000)
    mean_mse = np.mean((y_test - y.mean()) ** 2)
    for eps in (0.3, 1.0, 3.0):
        reg = AdaOPSRegressor(epsilon=eps, data_norm=2.0, y_bound=1.0, random_state=0)
        mse = np.mean((reg.fit(X, y).predict(X_test) - y_test) ** 2)
        assert mse < 1.1 * mean_mse, (eps, mse, mean_mse)
    assert AdaOPSRegressor(fit_intercept=False, **BOUNDS).fit(X, y).intercept_ == 0.0


def test_utility_close_to_least_squares_with_a_large_sample():
    X, y = _unit_rows(30_000, 5, 4)
    X_test, y_test = _unit_rows(5000, 5, 4)  # same coefficients (same seed)
    ls = Ridge(alpha=1e-9).fit(X, y)
    mse_ls = np.mean((ls.predict(X_test) - y_test) ** 2)
    reg = AdaOPSRegressor(epsilon=1.0, random_state=0, **BOUNDS).fit(X, y)
    assert reg.alpha_ < 1e-2 * reg.floor_  # well conditioned: no real ridge
    assert np.mean((reg.predict(X_test) - y_test) ** 2) < 1.25 * mse_ls


def test_random_state_makes_fit_reproducible():
    X, y = _unit_rows(200, 3, 0)
    a = AdaOPSRegressor(random_state=3, **BOUNDS).fit(X, y)
    b = AdaOPSRegressor(random_state=3, **BOUNDS).fit(X, y)
    c = AdaOPSRegressor(random_state=4, **BOUNDS).fit(X, y)
    assert_allclose(a.coef_, b.coef_)
    assert not np.allclose(a.coef_, c.coef_)
    assert_allclose(a.pdp_losses_, c.pdp_losses_, rtol=0, atol=0)
