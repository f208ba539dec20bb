import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import stats
from scipy.optimize import brentq
from scipy.special import ndtri
from sklearn.linear_model import Ridge

from sklearn_pdp import AdaOPSRegressor, BoundsWarning, FallbackWarning
from sklearn_pdp.accounting import (
    GAUSSIAN_DELTA_SHARE, gaussian_delta, ops_delta, ops_epsilon, ops_gamma, ops_mixture_epsilon,
)
from sklearn_pdp.domain._scaler import DomainScaler
from sklearn_pdp.accounting._adaops import conditioning_max_change, lipschitz
from sklearn_pdp.accounting._divergence import prune_columns
from sklearn_pdp.utils._eigen import lambda_min_change

from .._mc import Z_TOL, hockey_stick_mc

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


# ------------------------------------------- conditioning and the bound ---


def _conditioning(Z, intercept):
    """G by eigvalsh: lambda_min of the centred scatter over (1 + ||x_bar||)^2,
    or of X^T X without intercept."""
    if not intercept:
        return np.linalg.eigvalsh(Z.T @ Z)[0]
    X = Z[:, :-1]
    Xc = X - X.mean(axis=0)
    return np.linalg.eigvalsh(Xc.T @ Xc)[0] / (1 + np.linalg.norm(X.mean(axis=0))) ** 2


def _with_constant(X):
    return np.column_stack([X, np.ones(len(X))])


@pytest.mark.parametrize("d", [1, 2, 5])
def test_conditioning_sensitivity_bounds_every_row(d):
    """|G(D) - G(D - row)| <= 1 + 1/m + (2 + 1/m)/d (m = n - 1) on data built
    to move G: rows bunched off-centre, rows at the domain's ends, one row
    opposite the rest; removals and additions of extreme rows."""
    rng = np.random.default_rng(d)
    worst = 0.0
    for case in range(6):
        n = [3, 5, 12, 40][case % 4]
        X = rng.normal(size=(n, d)) * rng.uniform(0.01, 1.0)
        X += rng.normal(size=d) * rng.uniform(0, 1.0)
        if case % 2:
            X[0] = -X[1:].mean(axis=0)
        X /= np.maximum(np.linalg.norm(X, axis=1), 1.0)[:, None]
        X[:2] /= np.linalg.norm(X[:2], axis=1, keepdims=True)  # two rows on the sphere
        Z = _with_constant(X)
        bound = conditioning_max_change(n, d, True)
        full = _conditioning(Z, True)
        for i in range(n):
            worst = max(worst, abs(full - _conditioning(np.delete(Z, i, 0), True)) / bound)
        # added rows: the neighbour has n + 1 rows
        for x in np.vstack([np.eye(d), -np.eye(d), -X[:2]]):
            larger = _conditioning(np.vstack([Z, np.append(x, 1.0)]), True)
            worst = max(worst, abs(larger - full) / conditioning_max_change(n + 1, d, True))
    assert worst <= 1.0
    assert conditioning_max_change(10, d, False) == 1.0


def _ridge_fit(Z, y, alpha, intercept):
    P = np.eye(Z.shape[1])
    if intercept:
        P[-1, -1] = 0.0
    H = Z.T @ Z + alpha * P
    return H, np.linalg.solve(H, Z.T @ y)


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_lipschitz_change_is_exact_and_within_its_sensitivity(fit_intercept):
    """The change of log R by each row (removed, or added as a target) by
    Sherman-Morrison equals a refit's; where the floor of the cell holds for
    the data, no row moves it by more than c = -log(1 - leverage bound). The
    change of G equals eigvalsh's."""
    X, y = _unit_rows(300, 3, 1, scale=0.9)
    reg = AdaOPSRegressor(epsilon=2.0, fit_intercept=fit_intercept, random_state=0,
                          **BOUNDS).fit(X, y)
    Z, ys = _scaled(X, y, reg)
    cal = reg.release_.cal
    k = int(cal.index(reg.release_.G - cal.margin))
    alpha = cal.ridge(k)
    assert reg.release_.G + alpha / cal.ridge_factor >= cal.floor(k)  # the floor holds here
    c = cal.bound_grid(k)[0]

    def log_r(Zs, labels):
        return np.log(lipschitz(_ridge_fit(Zs, labels, alpha, fit_intercept)[1], fit_intercept))

    full = log_r(Z, ys)
    assert reg.release_._cell_fit(k)[1] == pytest.approx(full, rel=1e-12)
    _, _, (removed, same) = reg.release_._cell_rows(k, Z, ys, add=False)
    refits = [log_r(np.delete(Z, i, 0), np.delete(ys, i)) - full for i in range(len(Z))]
    assert_allclose(removed, refits, rtol=1e-9, atol=1e-14)
    assert np.all(same == 0) and np.all(np.abs(removed) <= c)
    g_removed, _ = reg.release_._conditioning_shifts(Z, add=False)
    G = _conditioning(Z, fit_intercept)
    assert_allclose(g_removed, [_conditioning(np.delete(Z, i, 0), fit_intercept) - G
                                for i in range(len(Z))], rtol=1e-9, atol=1e-11)
    Xn, yn = _unit_rows(6, 3, 5)
    Zn, zn = _scaled(Xn, yn, reg)
    _, _, (same, added) = reg.release_._cell_rows(k, Zn, zn, add=True)
    refits = [log_r(np.vstack([Z, z]), np.append(ys, label)) - full for z, label in zip(Zn, zn)]
    assert_allclose(added, refits, rtol=1e-9, atol=1e-14)
    assert np.all(same == 0) and np.all(np.abs(added) <= c)
    _, g_added = reg.release_._conditioning_shifts(Zn, add=True)
    assert_allclose(g_added, [_conditioning(np.vstack([Z, z]), fit_intercept) - G for z in Zn],
                    rtol=1e-9, atol=1e-11)


def test_conditioning_noise_and_cells():
    """sigma_1 is the analytic Gaussian scale at (eps_1, delta/5) for G's
    sensitivity; the conditioning's cells tile the line and every cell's
    ridge lifts its lowest point (never below 0) to its floor; each cell's
    bound cells tile the line, and their residual bounds grow up to the
    floor's own (crude) bound."""
    X, y = _unit_rows(5000, 3, 1)
    reg = AdaOPSRegressor(epsilon=1.0, random_state=0, **BOUNDS).fit(X, y)
    cal = reg.release_.cal
    change = 1 + 1 / 4999 + (2 + 1 / 4999) / 3
    assert cal.change == pytest.approx(change)
    assert cal.sigma == pytest.approx(change / _largest_ratio(0.2, 1e-6 / 5), rel=1e-6)
    assert cal.margin == pytest.approx(-cal.sigma * ndtri(1e-6 / 5), rel=1e-9)
    cells = np.arange(cal.lowest, 40)
    lower, upper = cal.edges(cells)
    assert lower[0] == -np.inf and cal.lowest < 0
    assert_allclose(lower[1:], upper[:-1], rtol=1e-12)
    assert np.all(cal.index(lower[1:] + 1e-9 * np.abs(lower[1:])) == cells[1:])
    assert np.all(cal.index([-1e12, lower[1] - 1.0]) == cal.lowest)
    for k, low in zip(cells.tolist(), lower):
        assert max(low, 0.0) + (cal.ridge(k) - cal.tiny) / 4 >= cal.floor(k) * (1 - 1e-12)
        scale = cal.bound_grid(k)[1]
        assert scale == pytest.approx(-np.log1p(-cal.leverage(cal.floor(k)))
                                      / _largest_ratio(0.2, 1e-6 / 5), rel=1e-6)
    assert cal.floor(0) == cal.h0 <= cal.quiet == cal.floor(-1)
    for k in (cal.lowest, 0, 3):
        last = cal.bound_grid(k)[3]
        assert last > 0
        bounds = np.arange(last + 1)
        b_lower, b_upper = cal.bound_edges(k, bounds)
        assert b_lower[0] == -np.inf and b_upper[-1] == np.inf
        assert_allclose(b_lower[1:], b_upper[:-1])
        assert np.all(cal.bound_index(k, b_lower[1:] + 1e-9) == bounds[1:])
        residual = [cal.residual(k, j) for j in bounds]
        assert np.all(np.diff(residual) >= 0) and residual[-1] == cal.crude(cal.floor(k))
        gammas = [cal.gamma(k, j) for j in bounds]
        assert np.all(np.diff(gammas) <= 0)


# ------------------------------------------------------------ estimator ---


def _largest_ratio(eps, delta):
    """Largest s with Gaussian delta(eps) <= delta, by bisection (independent
    of the estimator's own calibration)."""
    lo, hi = 1e-6, 1e3
    for _ in range(200):
        mid = np.sqrt(lo * hi)
        lo, hi = (mid, hi) if gaussian_delta(eps, mid) <= delta else (lo, mid)
    return lo


def _mass(lower, upper, centre, sigma):
    """Gaussian masses of the cells, each from the tail it lies in."""
    norm = stats.norm(centre, sigma)
    return np.where(lower > centre, norm.sf(lower) - norm.sf(upper),
                    norm.cdf(upper) - norm.cdf(lower))


def _gaussian_epsilon_written_out(delta, s):
    """Tight eps(delta) of the Gaussian mechanism with ratio s: brentq on
    Phi(s/2 - eps/s) - e^eps Phi(-s/2 - eps/s) (scipy.stats)."""
    def excess(eps):
        return (stats.norm.cdf(s / 2 - eps / s)
                - np.exp(eps) * stats.norm.cdf(-s / 2 - eps / s) - delta)
    return brentq(excess, 0.0, 50.0, xtol=1e-14, rtol=1e-13) if excess(0.0) > 0 else 0.0


def _means_ratio(reg, small, large):
    """The released means' change between the data sets over their noise,
    from the means of the rows (without the constant) and the labels."""
    means = [np.append(Z[:, :-1].mean(axis=0), ys.mean()) for Z, ys in (small, large)]
    return np.linalg.norm((means[1] - means[0]) / reg.means_noise_)


def _release_epsilon(reg, small, large, target, label, delta):
    """eps(delta) of the whole release between the data sets ``small`` and
    ``large`` = small + (target, label): that of (cell, bound cell, theta)
    (:func:`_mixture_written_out`), and with an intercept and a released
    bound, composed with the released means' Gaussian (basic composition,
    ``GAUSSIAN_DELTA_SHARE`` of delta), its ratio from the two data sets'
    means."""
    if not hasattr(reg, "released_means_"):
        return _mixture_written_out(reg, small, large, target, label, delta)
    share = GAUSSIAN_DELTA_SHARE * delta
    return (_mixture_written_out(reg, small, large, target, label, delta - share)
            + _gaussian_epsilon_written_out(share, _means_ratio(reg, small, large)))


def _mixture_written_out(reg, small, large, target, label, delta):
    """eps(delta) of the release (cell, bound cell, theta) between the data
    sets ``small`` and ``large`` = small + (target, label), written out: G by
    eigvalsh, log R by refits, every cell within 40 noise deviations, cell
    masses from scipy.stats, ops_delta per pair of cells, brentq on each
    direction."""
    cal, intercept = reg.release_.cal, reg.fit_intercept
    z = stats.norm.isf(reg.release_.cal.delta_share)
    e_p, e_q = (_conditioning(Z, intercept) - cal.margin for Z, _ in (small, large))
    cells = np.arange(cal.index(min(e_p, e_q) - 40 * cal.sigma),
                      cal.index(max(e_p, e_q) + 40 * cal.sigma) + 1)
    lower, upper = cal.edges(cells)
    p_k, q_k = _mass(lower, upper, e_p, cal.sigma), _mass(lower, upper, e_q, cal.sigma)
    p, q, mu, r, gamma = [], [], [], [], []
    for k, pk, qk in zip(cells.tolist(), p_k, q_k):
        alpha = cal.ridge(k)
        H, theta = _ridge_fit(*small, alpha, intercept)
        log_r = [np.log(lipschitz(_ridge_fit(*data, alpha, intercept)[1], intercept))
                 for data in (small, large)]
        _, sigma, _, last = cal.bound_grid(k)
        if last:
            u_p, u_q = (v + z * sigma for v in log_r)
            bounds = np.arange(cal.bound_index(k, min(u_p, u_q) - 40 * sigma),
                               cal.bound_index(k, max(u_p, u_q) + 40 * sigma) + 1)
            b_lower, b_upper = cal.bound_edges(k, bounds)
            p_j, q_j = _mass(b_lower, b_upper, u_p, sigma), _mass(b_lower, b_upper, u_q, sigma)
        else:
            bounds, p_j, q_j = [0], [1.0], [1.0]
        for j, pj, qj in zip(list(bounds), p_j, q_j):
            p.append(pk * pj)
            q.append(qk * qj)
            mu.append(target @ np.linalg.solve(H, target))
            r.append(label - target @ theta)
            gamma.append(cal.gamma(k, int(j)))
    p, q, mu, r, gamma = map(np.array, (p, q, mu, r, gamma))
    keep = (p > 0) & (q > 0)
    p, q, mu, r, gamma = p[keep], q[keep], mu[keep], r[keep], gamma[keep]
    L = np.log(p) - np.log(q)

    def remove(eps):
        return np.sum(p * ops_delta(eps - L, mu, r, gamma, direction="remove")) - delta

    def add(eps):
        return np.sum(q * ops_delta(eps + L, mu, r, gamma, direction="add")) - delta

    out = 0.0
    for f in (remove, add):
        if f(0.0) > 0:
            out = max(out, brentq(f, 0.0, 50.0, xtol=1e-14, rtol=1e-13))
    return out


@pytest.mark.parametrize("fit_intercept, split", [(False, None), (True, None), (True, [1, 0, 2])])
def test_pdp_losses_equal_the_mixture_written_out(fit_intercept, split):
    """pdp_losses_ and pdp_epsilon against an independent evaluation of the
    exact loss of (cell, bound cell, coefficients): dense eigenvalues and
    refits per neighbour, cell masses from scipy.stats, ops_delta per pair of
    cells, brentq (with and without a released bound)."""
    X, y = _unit_rows(40, 2, 0, scale=0.9)
    # above the fallback to the label mean, n epsilon > 100 (d + 1)
    reg = AdaOPSRegressor(epsilon=8.0, budget_split=split, fit_intercept=fit_intercept,
                          random_state=0, **BOUNDS).fit(X, y)
    Z, ys = _scaled(X, y, reg)
    # a dozen rows written out (seconds each): the first ten, the largest and
    # the smallest loss
    rows = np.unique(np.r_[np.arange(10), np.argmax(reg.pdp_losses_),
                           np.argmin(reg.pdp_losses_)])
    expected = [_release_epsilon(reg, (np.delete(Z, i, 0), np.delete(ys, i)), (Z, ys),
                                 Z[i], ys[i], 1e-6) for i in rows]
    assert_allclose(reg.pdp_losses_[rows], np.minimum(expected, 8.0), rtol=1e-7)
    assert np.all(reg.pdp_losses_ < 8.0)
    # new targets: the data set gains the row
    Xn, yn = _unit_rows(4, 2, 3, scale=0.8)
    Zn, zn = _scaled(Xn, yn, reg)
    added = [_release_epsilon(reg, (Z, ys), (np.vstack([Z, z]), np.append(ys, label)),
                              z, label, 1e-6) for z, label in zip(Zn, zn)]
    assert_allclose(reg.pdp_epsilon(Xn, yn), added, rtol=1e-7)
    worst = reg.pdp_epsilon(Xn)
    for label in (-1.0, -0.3, 0.0, 0.5, 1.0):
        assert np.all(worst >= reg.pdp_epsilon(Xn, np.full(4, label)) - 1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_worst_label_is_an_end_of_the_range(seed):
    """The loss of an added target over its label, on a fine grid, peaks at
    -1 or 1 (where pdp_epsilon(X) evaluates it), including high-leverage
    targets against the fit."""
    rng = np.random.default_rng(seed)
    X, y = _unit_rows(300, 3, seed, scale=0.7)
    reg = AdaOPSRegressor(epsilon=2.0, random_state=0, **BOUNDS).fit(X, y)
    Xn = rng.normal(size=(5, 3))
    Xn /= np.linalg.norm(Xn, axis=1, keepdims=True) * rng.uniform(1, 3, size=(5, 1))
    labels = np.linspace(-1, 1, 41)
    grid = np.array([reg.pdp_epsilon(Xn, np.full(5, t)) for t in labels])
    assert np.all(grid.max(axis=0) <= reg.pdp_epsilon(Xn) + 1e-12)
    assert np.all(grid.max(axis=0) > 0)


def _outlier_data():
    """One row against the trend, and a smallest eigenvalue near the
    eigenvalue's margin, so that the released cells vary with the draw."""
    rng = np.random.default_rng(7)
    n = 800
    X = rng.uniform(-0.7, 0.7, (n, 2))
    y = np.clip(0.8 * np.sign(X[:, 1]) + 0.05 * rng.standard_normal(n), -1, 1)
    X[0], y[0] = [0.0, 1.0], -1.0
    return X, y


def test_losses_do_not_depend_on_the_draw():
    """The released cells, ridge, residual bound and gamma change with
    random_state; the per-instance losses must not (they used to condition
    on the released eigenvalue and under-report)."""
    X, y = _outlier_data()
    params = dict(epsilon=3.0, delta=1e-6, kappa=3.0, budget_split=[1, 1, 1],
                  fit_intercept=False, **BOUNDS)
    fits = [AdaOPSRegressor(random_state=seed, **params).fit(X, y) for seed in range(12)]
    assert len({f.alpha_ for f in fits}) > 1
    assert len({f.residual_bound_ for f in fits}) > 1
    for f in fits[1:]:
        assert_allclose(f.pdp_losses_, fits[0].pdp_losses_, rtol=0, atol=0)
    assert 0 < fits[0].pdp_losses_[0] < 3.0


def test_loss_is_exact_against_monte_carlo_of_the_whole_release():
    """d = 1, a fixed floor, no intercept: the release (cell, bound cell,
    theta) sampled on both neighbours by an independent sampler, its privacy
    loss written out (the cells' mass ratios plus the Gaussian log density
    ratio); at the reported epsilon the Monte Carlo delta matches delta in the
    binding direction and is below it in the other. The estimator's own
    sampler draws the same law."""
    rng = np.random.default_rng(1)
    n, delta, eps = 8, 1e-3, 6.0
    X = np.full((n, 1), 0.3) + 0.05 * rng.normal(size=(n, 1))
    y = np.clip(X[:, 0] + 0.05 * rng.normal(size=n), -1, 1)
    X[0], y[0] = 1.0, -1.0  # the target: moves lambda_min by 1, large residual
    kappa = 0.9 * n * eps / (4 * (1 + np.log(4 / delta)))
    reg = AdaOPSRegressor(epsilon=eps, delta=delta, kappa=kappa, fit_intercept=False,
                          random_state=0, **BOUNDS).fit(X, y)
    cal = reg.release_.cal
    sigma = 1.0 / _largest_ratio(0.2 * eps, delta / 5)  # default split (0.2, 0.2, 0.6)
    assert cal.sigma == pytest.approx(sigma, rel=1e-6)
    z = stats.norm.isf(delta / 5)

    def per_cell(func, cells, *arrays):
        """func(k, *arrays restricted to the draws in cell k), for each cell k."""
        out = np.empty(cells.shape)
        for k in np.unique(cells):
            at = cells == k
            out[at] = func(int(k), *(a[at] for a in arrays))
        return out

    def bound_scale(k):
        return cal.bound_grid(k)[1]

    def pair_gamma(k, bounds):
        return np.array([cal.gamma(k, int(j)) for j in bounds])

    def sample(w, g, size):
        cells = cal.index(w + sigma * rng.standard_normal(size) - cal.margin)
        H = w + per_cell(cal.ridge, cells)
        scale = per_cell(bound_scale, cells)
        u = np.log(1 + np.abs(g / H)) + scale * (rng.standard_normal(size) + z)
        bounds = per_cell(cal.bound_index, cells, u).astype(int)
        gamma = per_cell(pair_gamma, cells, bounds)
        return cells, bounds, g / H + rng.standard_normal(size) / np.sqrt(gamma * H)

    def log_mass(lower, upper, centre, scale):
        log_upper = stats.norm.logcdf(upper, centre, scale)
        return log_upper + np.log1p(-np.exp(stats.norm.logcdf(lower, centre, scale) - log_upper))

    def log_density(cells, bounds, theta, w, g):
        H = w + per_cell(cal.ridge, cells)
        scale = per_cell(bound_scale, cells)
        centre = np.log(1 + np.abs(g / H)) + z * scale
        b_lower = per_cell(lambda k, j: cal.bound_edges(k, j)[0], cells, bounds)
        b_upper = per_cell(lambda k, j: cal.bound_edges(k, j)[1], cells, bounds)
        gamma = per_cell(pair_gamma, cells, bounds)
        return (log_mass(*cal.edges(cells), w - cal.margin, sigma)
                + log_mass(b_lower, b_upper, centre, scale)
                + 0.5 * np.log(H) - 0.5 * gamma * H * (theta - g / H) ** 2)

    small = ((X[1:, 0] ** 2).sum(), (X[1:, 0] * y[1:]).sum())  # P: without the target
    large = ((X[:, 0] ** 2).sum(), (X[:, 0] * y).sum())  # Q: with it
    lp, lq = sample(*small, 400_000), sample(*large, 400_000)
    assert len(set(lq[1].tolist())) > 1  # the bound's cell varies
    loss_p = log_density(*lp, *small) - log_density(*lp, *large)
    loss_q = log_density(*lq, *small) - log_density(*lq, *large)
    reported = reg.pdp_losses_[0]
    assert 1.0 < reported < eps  # far from trivial, below the guarantee
    estimates = hockey_stick_mc(loss_p, loss_q, reported)
    for est, se in estimates:
        assert est - Z_TOL * se <= delta, (reported, est, se)
    assert any(abs(est - delta) <= Z_TOL * se for est, se in estimates), estimates
    # the estimator's sampler: the same law of theta as the sampler above
    mine = reg.release_.draw(np.random.default_rng(2), size=20000)[:, 0]
    assert stats.ks_2samp(mine, lq[2][:20000]).pvalue > 1e-6


@pytest.mark.parametrize("seed", range(3))
def test_guarantee_holds_on_adversarial_data(seed):
    """doc/mechanisms/adaops.rst: when the floor and the bound hold, every
    target has at most the pair's leverage and |residual|, so its exact OPS
    loss at the sample's share is at most the sample's epsilon: training rows
    and the worst added targets, on data with one nearly unsupported
    direction and labels at the bound against the fit."""
    rng = np.random.default_rng(seed)
    n, d, eps, delta = 400, 2, 2.0, 1e-6
    X = np.column_stack([np.ones(n), 0.01 * rng.normal(size=n)])
    X[0] = [0.0, 1.0]  # the only support of the second direction
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.sign(rng.normal(size=n))
    y[0] = -1.0
    reg = AdaOPSRegressor(epsilon=eps, delta=delta, kappa=1.0, fit_intercept=False,
                          random_state=seed, **BOUNDS).fit(X, y)
    cal = reg.release_.cal
    assert reg.floor_ == pytest.approx(n / d) and reg.kappa_ == pytest.approx(1.0)
    assert reg.alpha_ > 1.0  # the floor needs ridge here
    H = X.T @ X + reg.alpha_ * np.eye(d)
    theta = np.linalg.solve(H, X.T @ y)
    # the margin events held for this draw: the floor holds with the ridge,
    # and R is below the bound's cell
    assert np.linalg.eigvalsh(X.T @ X)[0] + reg.alpha_ >= reg.floor_
    assert 1 + np.linalg.norm(theta) <= reg.residual_bound_
    mu_c = 1 / (reg.floor_ - 1)
    assert cal.leverage(reg.floor_) == pytest.approx(mu_c)
    share, eps_sample = delta / 5, 0.6 * eps
    assert ops_epsilon(share, mu_c, reg.residual_bound_, reg.gamma_) == pytest.approx(
        eps_sample, rel=1e-6)
    # neighbours: each training row removed (the smaller data set's statistics)
    lev = np.einsum("ij,ij->i", X, np.linalg.solve(H, X.T).T)
    mu, r = lev / (1 - lev), (y - X @ theta) / (1 - lev)
    assert np.all(mu <= mu_c) and np.all(np.abs(r) <= reg.residual_bound_)
    assert np.all(ops_epsilon(share, mu, r, reg.gamma_) <= eps_sample)
    angle = np.linspace(0, np.pi, 181)
    Z = np.column_stack([np.cos(angle), np.sin(angle)])
    mu_z = np.einsum("ij,ij->i", Z, np.linalg.solve(H, Z.T).T)
    r_z = 1 + np.abs(Z @ theta)
    assert np.all(mu_z <= mu_c) and np.all(r_z <= reg.residual_bound_)
    assert np.all(ops_epsilon(share, mu_z, r_z, reg.gamma_) <= eps_sample)
    assert np.all(reg.pdp_epsilon(Z) <= reg.dp_epsilon_)


@pytest.mark.parametrize("seed", range(3))
def test_corner_covers_every_target_with_an_intercept(seed):
    """With an intercept, on off-centre data (1 + ||x_bar|| near 2): when the
    margin events hold, every training row left out and every target on the
    unit sphere, with either extreme label, has at most the pair's leverage
    1/(n - 1) + 1/(floor - s_1) and the pair's residual bound."""
    rng = np.random.default_rng(seed)
    n = 600
    X = np.array([0.55, 0.55]) + 0.1 * rng.normal(size=(n, 2))
    X /= np.maximum(np.linalg.norm(X, axis=1), 1.0)[:, None]
    X[0] = [-0.6, -0.8]  # far from the mean
    y = np.clip(0.3 + 2 * (X - X.mean(axis=0)) @ [1.0, -1.0] + 0.2 * rng.normal(size=n), -1, 1)
    reg = AdaOPSRegressor(epsilon=3.0, random_state=seed, **BOUNDS).fit(X, y)
    cal = reg.release_.cal
    Z = _with_constant(X)
    P = np.diag([1.0, 1.0, 0.0])
    H = Z.T @ Z + reg.alpha_ * P
    theta = np.linalg.solve(H, Z.T @ y)
    mu_c = cal.leverage(reg.floor_)
    assert mu_c == pytest.approx(1 / (n - 1) + 1 / (reg.floor_ - cal.change))
    # the margin events held for this draw
    assert reg.release_.G + reg.alpha_ / 4 >= reg.floor_
    assert (lipschitz(theta, True) <= reg.residual_bound_ * (1 - mu_c)
            or reg.residual_bound_ == cal.crude(reg.floor_))
    lev = np.einsum("ij,ij->i", Z, np.linalg.solve(H, Z.T).T)
    mu, r = lev / (1 - lev), (y - Z @ theta) / (1 - lev)
    assert np.all(mu <= mu_c) and np.all(np.abs(r) <= reg.residual_bound_)
    angle = np.linspace(0, 2 * np.pi, 361)
    targets = _with_constant(np.column_stack([np.cos(angle), np.sin(angle)]))
    mu_z = np.einsum("ij,ij->i", targets, np.linalg.solve(H, targets.T).T)
    assert np.all(mu_z <= mu_c)
    assert np.all(1 + np.abs(targets @ theta) <= reg.residual_bound_)


def test_kappa_is_checked_against_the_paper_constraint():
    X, y = _unit_rows(1000, 4, 0)
    kappa_max = 1000 * 1.0 / (4 * 4 * (1 + np.log(4 / 1e-6)))
    assert not AdaOPSRegressor(kappa=0.99 * kappa_max, **BOUNDS).fit(X, y).mean_only_
    # beyond it the budget allows the label mean alone, with a warning that
    # names the largest kappa the constraint admits
    with pytest.warns(FallbackWarning, match=f"kappa={kappa_max:.4g} would meet it"):
        reg = AdaOPSRegressor(kappa=1.01 * kappa_max, **BOUNDS).fit(X, y)
    assert reg.mean_only_ and "kappa" in reg.mean_only_reason_
    assert_array_equal(reg.coef_, 0.0)
    assert reg.dp_epsilon_ == 1.0 and reg.dp_guarantee(1000, 4) == (1.0, 1e-6)
    with pytest.raises(ValueError, match="kappa"):  # the mechanism itself refuses it
        AdaOPSRegressor(kappa=1.01 * kappa_max, **BOUNDS)._mechanism_guarantee(1000, 4)


def test_too_few_samples_for_an_intercept_release_the_mean():
    """Where the intercept's own posterior (leverage 1/(n - 1)) could not meet
    a tiny budget, the fit releases the label mean within it instead."""
    X, y = _unit_rows(50, 2, 0)
    with pytest.raises(ValueError, match="too few samples"):
        AdaOPSRegressor(epsilon=0.05)._mechanism_guarantee(50, 2)
    with pytest.warns(FallbackWarning, match="released the private label mean alone"):
        reg = AdaOPSRegressor(epsilon=0.05, **BOUNDS).fit(X, y)
    assert reg.mean_only_ and reg.dp_epsilon_ == 0.05 == reg.dp_guarantee(50, 2)[0]
    assert not AdaOPSRegressor(epsilon=0.05, fit_intercept=False, **BOUNDS).fit(X, y).mean_only_


@pytest.mark.parametrize(
    "param, value",
    [("epsilon", 0.0), ("epsilon", -1.0), ("delta", 1.0), ("kappa", 0.0),
     ("kappa", "big"), ("budget_split", [1.0, 1.0, 0.0]), ("budget_split", [0.0, 1.0, 1.0]),
     ("budget_split", [1.0, 1.0]), ("budget_split", [1.0, -0.5, 1.0]), ("data_norm", 0.0)],
)
def test_invalid_parameters_name_the_parameter(param, value):
    X, y = _unit_rows(100, 2, 0)
    with pytest.raises(ValueError, match=param):
        AdaOPSRegressor(**{**BOUNDS, param: value}).fit(X, y)


def test_budget_split_is_respected():
    X, y = _unit_rows(3000, 3, 0)
    reg = AdaOPSRegressor(epsilon=1.0, budget_split=[1, 1, 2], kappa=5.0, random_state=0,
                          **BOUNDS).fit(X, y)
    default = AdaOPSRegressor(epsilon=1.0, kappa=5.0, random_state=0, **BOUNDS).fit(X, y)
    # a smaller sample share than the default's 0.6 buys a smaller gamma
    assert reg.release_.cal.gamma(0, 0) < default.release_.cal.gamma(0, 0)
    assert reg.dp_epsilon_ == 1.0
    assert reg.release_.cal.sigma == pytest.approx(
        conditioning_max_change(3000, 3, True) / _largest_ratio(0.25, 1e-6 / 5), rel=1e-6)
    # no bound released: delta in three, one bound cell with the crude residual
    plain = AdaOPSRegressor(epsilon=1.0, budget_split=[1, 0, 3], random_state=0,
                            **BOUNDS).fit(X, y)
    assert plain.release_.cal.delta_share == 1e-6 / 3 and plain.release_.cal.bound_grid(0)[3] == 0
    assert plain.residual_bound_ == plain.release_.cal.crude(plain.floor_)


# each budget calibrates anew: epsilon 1 in the default run, the others
# under the audit marker
@pytest.mark.parametrize("eps", [pytest.param(0.3, marks=pytest.mark.audit), 1.0,
                                 pytest.param(3.0, marks=pytest.mark.audit)])
def test_intercept_is_not_shrunk(eps):
    """A heavily regularised fit must predict the mean, not 0: labels far
    from 0 (mean 0.6 of the bound) with little signal in the features."""
    rng = np.random.default_rng(0)
    n = 5000
    X = rng.normal(size=(n, 5)) * 0.3
    y = 0.6 + 0.1 * X[:, 0] + 0.1 * rng.normal(size=n)
    X_test = rng.normal(size=(5000, 5)) * 0.3
    y_test = 0.6 + 0.1 * X_test[:, 0] + 0.1 * rng.normal(size=5000)
    mean_mse = np.mean((y_test - y.mean()) ** 2)
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
    assert reg.residual_bound_ < 2 * lipschitz(reg.release_.ridge.coef, True)  # a tight bound
    assert np.mean((reg.predict(X_test) - y_test) ** 2) < 1.05 * mse_ls


def test_random_state_makes_fit_reproducible():
    X, y = _unit_rows(500, 3, 0)
    a = AdaOPSRegressor(random_state=3, **BOUNDS).fit(X, y)
    b = AdaOPSRegressor(random_state=3, **BOUNDS).fit(X, y)
    c = AdaOPSRegressor(random_state=4, **BOUNDS).fit(X, y)
    assert_allclose(a.coef_, b.coef_)
    assert not np.allclose(a.coef_, c.coef_)
    assert_allclose(a.pdp_losses_, c.pdp_losses_, rtol=0, atol=0)


def test_losses_do_not_depend_on_the_rows_processed_together():
    """A row's loss is a function of that row alone: all rows at once, in
    groups and one at a time give the same values (each row's bound cells are
    its own window, whatever the other rows of a chunk span; a cell outside
    one row's window and inside another's weighs nothing for the first)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2060, 5))
    y = X @ np.linspace(-1.0, 2.0, 5) + rng.normal(size=2060)
    bounds = dict(data_norm=4.0, y_bound=5.0)
    # bounds inside the data's spread: some rows and labels are clipped
    with pytest.warns(BoundsWarning, match="clip"):
        reg = AdaOPSRegressor(random_state=1, **bounds).fit(X[:2000], y[:2000])
    training = reg.release_.row_losses()
    Z, ys = DomainScaler(4.0, 5.0, True).scale(X[:60], y[:60])
    alone = np.concatenate([training(Z[i:i + 1], ys[i:i + 1]) for i in range(60)])
    assert_allclose(alone, reg.pdp_losses_[:60], rtol=1e-10, atol=1e-13)
    # new targets, with labels and with the worst label
    Xn, yn = X[2000:], y[2000:]
    for labels in (yn, None):
        together = reg.pdp_epsilon(Xn, labels)
        groups = [reg.pdp_epsilon(Xn[i:i + 7], None if labels is None else labels[i:i + 7])
                  for i in range(0, 60, 7)]
        assert_allclose(np.concatenate(groups), together, rtol=1e-10, atol=1e-13)
        assert np.all(together > 0)


def test_mixture_ignores_an_index_impossible_on_both_data_sets():
    """An index of probability 0 on both data sets (a bound cell outside a
    row's window) adds nothing to the mixture (it once turned the loss into
    NaN, reported as 0)."""
    rng = np.random.default_rng(0)
    rows, n_idx = 6, 4
    mu = rng.uniform(1e-4, 1e-2, (rows, n_idx))
    r = rng.uniform(-3, 3, (rows, n_idx))
    gamma = rng.uniform(1, 50, n_idx)
    weights = rng.dirichlet(np.ones(n_idx + 1), size=(2, rows))
    log_p, log_q = np.log(weights[0, :, :-1]), np.log(weights[1, :, :-1])
    rest_p, rest_q = np.log(weights[0, :, -1] * 1e-12), np.log(weights[1, :, -1] * 1e-12)
    eps = ops_mixture_epsilon(1e-6, mu, r, gamma, log_p, log_q, rest_p, rest_q)
    assert np.all(np.isfinite(eps) & (eps > 0))
    void = np.full((rows, 1), -np.inf)
    padded = ops_mixture_epsilon(
        1e-6, np.hstack([mu, mu[:, :1]]), np.hstack([r, r[:, :1]]), np.append(gamma, 3.0),
        np.hstack([log_p, void]), np.hstack([log_q, void]), rest_p, rest_q)
    assert_allclose(padded, eps, rtol=1e-12)


def test_mixture_leaves_out_negligible_indices_from_above():
    """Indices whose masses are below 1e-10 of delta (far cells of a row's
    window) are counted as revealing everything: the loss can only rise,
    by far less than 1e-9, and indices that carry weight are all kept (the
    same indices, heavier, move the loss)."""
    rng = np.random.default_rng(1)
    rows, n_idx, delta = 40, 6, 1e-6
    mu = rng.uniform(1e-4, 1e-2, (rows, n_idx))
    r = rng.uniform(-3, 3, (rows, n_idx))
    gamma = rng.uniform(1, 50, n_idx)
    log_p = np.log(rng.dirichlet(np.ones(n_idx), size=rows))
    log_q = log_p + rng.normal(0, 0.01, log_p.shape)
    rest = np.full(rows, -60.0)
    eps = ops_mixture_epsilon(delta, mu, r, gamma, log_p, log_q, rest, rest)
    for light in (-45.0, -20.0):  # below and above 1e-10 delta / 8
        extra = np.full((rows, 2), light)
        leaky = np.column_stack([mu[:, 0], mu[:, 0]])  # leakier than any kept index
        grown = ops_mixture_epsilon(
            delta, np.hstack([mu, 5 * leaky]), np.hstack([r, 10 * r[:, :2]]),
            np.append(gamma, [400.0, 400.0]), np.hstack([log_p, extra]),
            np.hstack([log_q, extra]), rest, rest)
        assert np.all(grown >= eps)
        keep = prune_columns(np.hstack([log_p, extra]), np.hstack([log_q, extra]), delta)[0]
        assert keep.tolist() == [True] * n_idx + [light > -40] * 2
        if light < -40:
            assert_allclose(grown, eps, rtol=1e-9)
        else:
            assert np.all(grown > eps * (1 + 1e-6))


def test_prediction_at_the_feature_mean_has_variance_one_over_gamma_n():
    """What a label that varies little costs (the mechanism's page, "Labels
    that vary little"): with an unpenalised intercept the draw's prediction
    at the feature mean has variance exactly 1 / (gamma n), whatever the
    cell's ridge, so no post-processing of the slopes removes it. The
    leverage of the mean row is 1/n exactly, and over draws of the
    posterior sample the prediction's variance is 1 / (gamma n)."""
    rng = np.random.default_rng(0)
    n, d = 4000, 6
    X = rng.uniform(0, 1, (n, d)) / np.sqrt(d)
    y = 0.6 + 0.06 * rng.standard_normal(n)
    reg = AdaOPSRegressor(epsilon=1.0, data_norm=1.0, y_bound=1.0, random_state=0).fit(X, y)
    Xs, _ = _scaled(X, y, reg)
    release = reg.release_
    assert release.alpha > 0  # a ridge cell: the slopes are shrunk, not the intercept
    centre = Xs.mean(axis=0, keepdims=True)
    leverage = release.ridge.row_statistics(centre)["leverage"][0]
    assert_allclose(leverage, 1.0 / n, rtol=1e-8)
    size = 20_000
    draws = release.ridge.sample(np.random.default_rng(1), 1.0 / np.sqrt(release.gamma), size)
    ratio = np.var(draws @ centre[0], ddof=1) * release.gamma * n
    # sample variance of a normal: relative standard error sqrt(2 / size)
    assert abs(ratio - 1.0) <= Z_TOL * np.sqrt(2.0 / size), ratio


# ------------------------------------------------------- released means ---


def _quiet_labels(n, d, seed):
    """Labels that vary little (spread 0.05 of the unit range) around 0.75,
    far from the centre of the declared range [-1, 1], features in [0, 1]
    over sqrt(d)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, (n, d)) / np.sqrt(d)
    y = 0.6 + 0.05 * X @ np.ones(d) + 0.05 * rng.standard_normal(n)
    return X, y


# twenty fits a budget: epsilon 1 in the default run, 3 under the audit marker
@pytest.mark.parametrize("eps", [1.0, pytest.param(3.0, marks=pytest.mark.audit)])
def test_quiet_labels_cost_little_more_than_the_mean_predictor(eps):
    """Where the intercept's posterior noise dominates (labels that vary
    little; the mechanism's page, "Released means"), the intercept combined
    with the released means keeps AdaOPS within 2% of the mean predictor's
    test error on average over draws (the draw's intercept alone: 1.033 at
    epsilon 1 and 1.041 at epsilon 3)."""
    X, y = _quiet_labels(8000, 6, 0)
    X, X_test, y, y_test = X[:4000], X[4000:], y[:4000], y[4000:]
    mean_mse = np.mean((y_test - y.mean()) ** 2)
    ratios, weights = [], []
    for seed in range(20):
        reg = AdaOPSRegressor(epsilon=eps, random_state=seed, **BOUNDS).fit(X, y)
        ratios.append(np.mean((reg.predict(X_test) - y_test) ** 2) / mean_mse)
        weights.append(reg.intercept_weight_)
    assert np.mean(ratios) <= 1.02, (eps, np.mean(ratios))
    assert 0.0 < np.min(weights) and np.max(weights) < 1.0


def test_combined_intercept_has_the_variance_of_its_precisions():
    """Given the released slopes, the draw's intercept and the one at the
    released means are independent and unbiased for mean(y) - mean(x)^T
    slopes, with variances 1 / (gamma n) and sigma_y^2 + sigma_x^2
    ||slopes||^2: over redraws of the release the combined intercept's error
    has the variance 1 / (1 / v_draw + 1 / v_means)."""
    X, y = _quiet_labels(3000, 4, 1)
    reg = AdaOPSRegressor(epsilon=2.0, random_state=0, **BOUNDS).fit(X, y)
    release = reg.release_
    noise = reg.means_noise_
    assert noise.shape == (5,) and noise[-1] < noise[0]  # the label's share is the larger
    rng = np.random.default_rng(3)
    size, z = 4000, []
    for _ in range(size):
        coef = release.release(rng)
        slopes = coef[:-1]
        truth = release.means[-1] - release.means[:-1] @ slopes
        v_draw = 1.0 / (release.gamma * release.n_samples)
        v_means = noise[-1] ** 2 + noise[:-1] ** 2 @ slopes**2
        z.append((coef[-1] - truth) * np.sqrt(1.0 / v_draw + 1.0 / v_means))
    assert 0.2 < release.intercept_weight < 0.95
    assert abs(np.mean(z)) <= Z_TOL / np.sqrt(size)
    assert abs(np.var(z, ddof=1) - 1.0) <= Z_TOL * np.sqrt(2.0 / size)


def test_means_share_the_cells_gaussian_budget():
    """The two cell releases and the means are one Gaussian mechanism at the
    cells' epsilons and deltas: the three worst ratios (G's change, log R's
    and the means' over the domain: a row at the corner, unit norm and label
    -1 against the others at the opposite corner) add in squares to the
    largest ratio of (epsilon_1 + epsilon_2, 2 delta / 5), found by
    bisection; the conditioning's and the bound's noise are as without
    means."""
    n, d, eps = 3000, 3, 1.0
    X, y = _unit_rows(n, d, 0)
    reg = AdaOPSRegressor(epsilon=eps, random_state=0, **BOUNDS).fit(X, y)
    cal = reg.release_.cal
    assert cal.sigma == pytest.approx(
        conditioning_max_change(n, d, True) / _largest_ratio(0.2 * eps, 1e-6 / 5), rel=1e-6)
    assert cal.bound_scale == pytest.approx(1.0 / _largest_ratio(0.2 * eps, 1e-6 / 5), rel=1e-6)
    # the worst change of the means: n - 1 rows at (u, 1), one at (-u, -1)
    u = np.eye(d)[0]
    Z = np.vstack([np.tile(np.append(u, 1.0), (n - 1, 1)), np.append(-u, -1.0)])
    change = (Z.mean(axis=0) - Z[:-1].mean(axis=0)) / reg.means_noise_
    means = np.linalg.norm(change)
    total = np.sqrt((cal.change / cal.sigma) ** 2 + 1.0 / cal.bound_scale**2 + means**2)
    assert total == pytest.approx(_largest_ratio(0.4 * eps, 2e-6 / 5), rel=1e-6)
    assert reg.dp_epsilon_ == eps
    # no means without an intercept, nor without a released bound
    for params in (dict(fit_intercept=False), dict(budget_split=[1, 0, 3])):
        other = AdaOPSRegressor(epsilon=eps, random_state=0, **BOUNDS, **params).fit(X, y)
        assert not hasattr(other, "released_means_")
        assert other.release_.cal.eps_gauss == pytest.approx(0.25 * eps if params.get(
            "budget_split") else 0.2 * eps)


def test_released_means_do_not_make_losses_depend_on_the_draw():
    """The released means and the combined intercept change with
    random_state; the per-instance losses (which include each row's exact
    change of the means) do not."""
    X, y = _quiet_labels(2000, 3, 2)
    fits = [AdaOPSRegressor(epsilon=1.0, random_state=seed, **BOUNDS).fit(X, y)
            for seed in range(4)]
    assert len({f.released_means_[-1] for f in fits}) == 4
    assert len({f.intercept_weight_ for f in fits}) > 1
    for f in fits[1:]:
        assert_array_equal(f.pdp_losses_, fits[0].pdp_losses_)
        assert_array_equal(f.pdp_epsilon(X[:5]), fits[0].pdp_epsilon(X[:5]))
