"""Many rows at once: the fast path (a start from a table of exact epsilons,
quick stages certified by the tangent bound, the exact search for the rest)
returns the plain search's verified epsilons, tight to 1e-9 and never below
the target; its pieces (tables, quick bounds, the certificate) are checked on
their own."""

import numpy as np
import pytest
from scipy import stats
from scipy.special import chdtr, chdtrc, erfinv, logsumexp, ndtr

from sklearn_pdp.accounting import _engine, _search, _table
from sklearn_pdp.accounting import (
    chi2_delta, chi2_epsilon, gaussian_delta, gaussian_epsilon, objpert_delta, objpert_epsilon,
    ops_delta, ops_epsilon,
)
from sklearn_pdp.accounting._chi2 import Chi2Loss
from sklearn_pdp.accounting._divergence import log_sum_rows, normal_tail_bounds
from sklearn_pdp.accounting._gaussian import GaussianLoss
from sklearn_pdp.accounting._objpert import ObjPertLoss
from sklearn_pdp.accounting._ops import OPSLoss
from sklearn_pdp.accounting._table import PolyTable


@pytest.fixture
def plain_search(monkeypatch):
    """Runs a function with the fast path (tables, quick stages) switched off."""

    def run(func, *args):
        with monkeypatch.context() as m:
            m.setattr(_engine, "_TABLE_MIN_ROWS", np.inf)
            return func(*args)

    return run


def _evaluation_rounding(loss, eps):
    """Rounding bound of evaluating delta(eps) = A - e^eps B in floating
    point, per row (the package's own slack on it, :mod:`._search`): where A
    and e^eps B nearly cancel, an evaluation of the achieved delta is only
    this accurate, whichever stack computes it."""
    eps = np.where(np.isfinite(eps), eps, 0.0)
    out = np.zeros(eps.shape)
    for tail in loss.directions:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            log_a, log_b = tail(eps, np.arange(eps.size))
            terms = np.exp(log_a) + np.exp(eps + log_b)
            scale = (np.abs(log_a) + 3.0 + eps) * np.finfo(float).eps
            out = np.maximum(out, np.nan_to_num(scale * terms))
    return out


def _check(fast, slow, achieved, delta, atol=1e-14, rounding=0.0):
    assert fast.shape == slow.shape
    # +inf (valid, if useless) where the search passes its limit of 1e6: a
    # root just below it may be reported as either
    finite = np.isfinite(fast) & np.isfinite(slow)
    assert np.all(np.where(finite, True, np.fmin(fast, slow) > 1e5) | (fast == slow))
    assert np.array_equal(fast == 0, slow == 0)
    # tight: the plain search's answer to 1e-9 relative (and 1e-14 absolute
    # at epsilons near 0, where both resolve the root to ~1e-16 / B absolute,
    # B = e^-eps times the slope of delta)
    np.testing.assert_allclose(fast[finite], slow[finite], rtol=1e-9, atol=atol)
    # never optimistic: delta at the reported epsilon is verified, in log
    # space (exp of a verified log delta rounds by up to ~|log delta| ulps)
    slack = 4 * np.finfo(float).eps * abs(np.log(delta))
    ok = achieved <= delta * (1 + slack) + rounding
    assert np.all(ok[np.isfinite(fast)])


def _ops_rows(rng, n):
    mu = 10.0 ** rng.uniform(-12, 3, n)
    r = rng.normal(size=n) * 10.0 ** rng.uniform(-8, 3, n)
    mu[:4] = [0.0, np.inf, 1e-3, 1e-3]
    r[:4] = [1.0, 0.0, np.inf, 0.0]
    return mu, r


def _fit_rows(rng, n, leverage, residual):
    """Statistics like a fit's: leverages around ``leverage``, residuals
    normal with scale ``residual`` (some exactly 0)."""
    mu = leverage * 10.0 ** rng.uniform(-0.7, 0.6, n)
    r = rng.normal(scale=residual, size=n)
    r[::97] = 0.0
    return mu, r


@pytest.mark.parametrize("gamma, delta", [(10.0, 1e-6), (3e4, 1e-10), (0.05, 1e-2)])
def test_ops_many_rows_equal_the_plain_search(plain_search, gamma, delta):
    rng = np.random.default_rng(0)
    mu, r = _ops_rows(rng, 6000)
    fast = ops_epsilon(delta, mu, r, gamma)
    slow = plain_search(ops_epsilon, delta, mu, r, gamma)
    _check(fast, slow, ops_delta(fast, mu, r, gamma), delta)
    assert fast[0] == 0 and fast[1] == np.inf and fast[2] == np.inf


@pytest.mark.parametrize("leverage, residual, gamma", [
    (1e-5, 0.1, 0.014),   # d = 10, n = 1e6 with its calibrated gamma
    (2e-5, 0.2, 1.0),     # d = 100
    (1e-3, 0.3, 30.0),    # a small data set
])
def test_ops_rows_of_fits_equal_the_plain_search(plain_search, leverage, residual, gamma):
    """The statistics fits produce: most rows certified at the first quick
    stage, some near eps = 0 (tiny residual and leverage)."""
    rng = np.random.default_rng(5)
    mu, r = _fit_rows(rng, 20000, leverage, residual)
    fast = ops_epsilon(1e-6, mu, r, gamma)
    slow = plain_search(ops_epsilon, 1e-6, mu, r, gamma)
    _check(fast, slow, ops_delta(fast, mu, r, gamma), 1e-6)
    # a row's loss must not depend on the path it took (a fit's small chunk
    # takes the plain search) by more than the 1e-10 chunkings agree to
    np.testing.assert_allclose(fast, slow, rtol=1e-10, atol=1e-13)


def test_ops_rows_with_roots_near_zero(plain_search):
    """Tiny leverages and residuals: many rows have eps = 0 or just above."""
    rng = np.random.default_rng(1)
    mu = 10.0 ** rng.uniform(-9, -5, 5000)
    r = rng.normal(scale=1e-4, size=5000)
    fast = ops_epsilon(1e-6, mu, r, 10.0)
    slow = plain_search(ops_epsilon, 1e-6, mu, r, 10.0)
    assert np.mean(fast == 0) > 0.05 and np.mean((fast > 0) & (fast < 1e-4)) > 0.05
    _check(fast, slow, ops_delta(fast, mu, r, 10.0), 1e-6)


@pytest.mark.parametrize("direction", ["remove", "add"])
def test_ops_single_direction(plain_search, direction):
    rng = np.random.default_rng(2)
    mu, r = _ops_rows(rng, 3000)
    fast = ops_epsilon(1e-6, mu, r, 10.0, direction)
    slow = plain_search(ops_epsilon, 1e-6, mu, r, 10.0, direction)
    rounding = _evaluation_rounding(OPSLoss(mu, r, np.full(mu.shape, 10.0),
                                            direction=direction), fast)
    _check(fast, slow, ops_delta(fast, mu, r, 10.0, direction), 1e-6, rounding=rounding)


@pytest.mark.parametrize("delta", [1e-12, 1e-6, 0.1])
def test_gaussian_many_rows_equal_the_plain_search(plain_search, delta):
    rng = np.random.default_rng(3)
    s = 10.0 ** rng.uniform(-9, 3, 6000)
    s[:3] = [0.0, np.inf, 1e-300]
    fast = gaussian_epsilon(delta, s)
    slow = plain_search(gaussian_epsilon, delta, s)
    _check(fast, slow, gaussian_delta(fast, s), delta)
    np.testing.assert_allclose(fast, slow, rtol=1e-10, atol=1e-13)


def test_gaussian_rows_at_the_edge_of_zero(plain_search):
    """eps leaves 0 at s0 = sqrt(8) erfinv(delta), the edge of the table's
    coordinate log(s - s0): rows on it, just below, just above, and at the
    table's closest point."""
    s0 = np.sqrt(8.0) * erfinv(1e-6)
    offsets = np.concatenate([-np.logspace(-16, -1, 40), [0.0], np.logspace(-16, 1, 3000)])
    s = s0 * (1.0 + offsets)
    fast = gaussian_epsilon(1e-6, s)
    slow = plain_search(gaussian_epsilon, 1e-6, s)
    _check(fast, slow, gaussian_delta(fast, s), 1e-6)
    # (delta(0) = erf(s / sqrt 8) is computed to ~1e-10 relative near s0)
    assert np.all(fast[s < s0 * (1 - 1e-8)] == 0) and np.all(fast[s > s0 * (1 + 1e-8)] > 0)


@pytest.mark.parametrize("df, delta", [(7908, 1e-6), (30, 1e-8)])
def test_chi2_many_rows_equal_the_plain_search(plain_search, df, delta):
    rng = np.random.default_rng(6)
    tau = 10.0 ** rng.uniform(-8, 1, 4000)
    tau[:3] = [0.0, np.inf, 1e-300]
    fast = chi2_epsilon(delta, tau, df)
    slow = plain_search(chi2_epsilon, delta, tau, df)
    # scipy's chi-square functions are good to ~1e-14 relative: where tau is
    # tiny, A and e^eps B cancel ~1e6-fold and delta itself is only known to
    # ~1e-8, so every verified point within ~2e-14 of the root is as good
    _check(fast, slow, chi2_delta(fast, tau, df), delta, atol=5e-14)
    assert fast[0] == 0 and fast[1] == np.inf


def test_objpert_many_rows_equal_the_plain_search(plain_search):
    """The start from OPS's loss (its leverage mu (2 + mu), given zeta_perp)
    does not change the verified answers of the ladder search."""
    rng = np.random.default_rng(7)
    n = 3000
    norm2 = rng.uniform(0.5, 2.0, n)
    mu = 10.0 ** rng.uniform(-6, -3, n)
    w = mu**2 / norm2 * (1.0 + 10.0 ** rng.uniform(-4, 1, n))
    r = rng.normal(scale=0.3, size=n)
    fast = objpert_epsilon(1e-6, norm2, mu, w, r, 300.0)
    loss = ObjPertLoss(norm2, mu, w, r, np.full(n, 300.0))
    from_zero = _search.epsilon_from_delta(loss.search_tails(np.full(n, 1e-6)),
                                           np.full(n, 1e-6 * (1 - loss.aim)), n)
    np.testing.assert_allclose(fast, from_zero, rtol=1e-9, atol=1e-14)
    assert np.all(objpert_delta(fast, norm2, mu, w, r, 300.0) <= 1e-6)


def test_objpert_without_s_perp_is_ops():
    """Given zeta_perp the release is OPS's with leverage mu (2 + mu) and
    a = (1 + mu) m0, the identity the start rests on: with s_perp = 0 the
    two losses agree to the ladder's accuracy."""
    rng = np.random.default_rng(8)
    n = 200
    norm2 = rng.uniform(0.5, 2.0, n)
    mu = 10.0 ** rng.uniform(-5, 0, n)
    w = mu**2 / norm2  # s_perp = 0
    r, sigma = rng.normal(scale=3.0, size=n), 2.0
    lev = mu * (2 + mu)
    a = (1 + mu) * np.sqrt(norm2) * np.abs(r) / sigma
    for eps in (0.0, 0.1, 1.0):
        np.testing.assert_allclose(objpert_delta(eps, norm2, mu, w, r, sigma),
                                   ops_delta(eps, lev, a / np.sqrt(lev), 1.0), rtol=1e-5,
                                   atol=1e-12)


def test_tables_are_per_delta_and_skipped_for_few_rows(monkeypatch):
    """A table is built per delta (any mix of gammas: OPS's loss depends on
    gamma only through a = |r| sqrt(gamma mu)) and reused by later calls
    whose rows it covers; few rows, or rows at different deltas, take the
    plain search."""
    built = []
    cached = _table._cached_table
    cached.cache_clear()

    def recorded(*args):
        built.append(args[1])
        return cached(*args)

    monkeypatch.setattr(_table, "_cached_table", recorded)
    rng = np.random.default_rng(4)
    mu, r = _fit_rows(rng, 6000, 1e-4, 0.1)
    ops_epsilon(1e-6, mu[:100], r[:100], 10.0)
    ops_epsilon(rng.uniform(1e-7, 1e-6, 6000), mu, r, 10.0)
    assert not built
    gamma = rng.uniform(1, 10, 6000)
    ops_epsilon(1e-6, mu, r, gamma)
    ops_epsilon(1e-6, mu[:3000], r[:3000], gamma[:3000])
    assert built == [(1e-6, "both")] * 2
    info = cached.cache_info()
    assert (info.misses, info.hits) == (1, 1)


def test_table_node_budget_coarsens_wide_ranges():
    """Statistics over many decades get a coarser grid, not a huge table."""
    rng = np.random.default_rng(9)
    mu, r = _ops_rows(rng, 5000)
    loss = OPSLoss(mu, r, np.full(mu.size, 10.0))
    nodes, params, coords = loss.table_coords(1e-6)
    table = _table.table_for(nodes, params, coords, *loss.table_grid)
    assert np.prod(table.cells + np.array(table.npts) - 1) <= _table._TABLE_MAX_NODES
    assert np.all(table.steps >= 1 / 32)


# ------------------------------------------------------------- pieces ---


@pytest.mark.parametrize("degrees", [5, 3, (5, 3)])
def test_poly_table_reproduces_polynomials_and_marks_the_outside(degrees):
    """Local Lagrange interpolation of degree k is exact on polynomials of
    degree k (per axis); points outside the cells and NaN give NaN."""
    rng = np.random.default_rng(10)
    d = np.broadcast_to(degrees, (2,))
    xs, ys = np.arange(-1.0, 2.01, 0.25), np.arange(0.0, 3.01, 0.5)
    X, Y = np.meshgrid(xs, ys, indexing="ij")
    cx, cy = rng.normal(size=d[0] + 1), rng.normal(size=d[1] + 1)

    def f(x, y):
        return np.polyval(cx, x) * np.polyval(cy, y)

    table = PolyTable([xs[0], ys[0]], [0.25, 0.5], f(X, Y), degrees)
    off = (d - 1) // 2
    lo = np.array([xs[0], ys[0]]) + off * np.array([0.25, 0.5])
    hi = lo + table.cells * np.array([0.25, 0.5])
    px, py = rng.uniform(lo[0], hi[0], 500), rng.uniform(lo[1], hi[1], 500)
    np.testing.assert_allclose(table(px, py), f(px, py), rtol=1e-10, atol=1e-10)
    outside = table(np.array([lo[0] - 0.01, hi[0] + 0.01, np.nan, px[0]]),
                    np.array([py[0], py[0], py[0], np.nan]))
    assert np.all(np.isnan(outside))


def test_normal_tail_bounds_contain_the_tail():
    rng = np.random.default_rng(11)
    y = np.concatenate([rng.uniform(0, 40, 2000), [0.0, 1e-300, 37.0, 38.5, np.inf]])
    budget = 10.0 ** rng.uniform(-300, 0, y.size)
    z = y + rng.uniform(0, 5, y.size)
    (lo, hi), (lo_z, hi_z) = normal_tail_bounds(budget, y, z)
    exact, exact_z = ndtr(-y), ndtr(-z)
    assert np.all((lo <= exact) & (exact <= hi * (1 + 1e-15)))
    assert np.all((lo_z <= exact_z) & (exact_z <= hi_z * (1 + 1e-15)))
    # the Mills bound only where it is within the budget, exact elsewhere
    loose = hi > lo
    assert np.all(hi[loose] <= budget[loose])


def _log_tails(loss, eps, names):
    return [np.exp(loss.directions[k](eps, np.arange(eps.size))) for k, _ in enumerate(names)]


@pytest.mark.parametrize("name", ["ops", "chi2", "gaussian"])
def test_quick_bounds_contain_the_exact_tails(name):
    """The linear-domain bounds of the quick stages contain the log-domain
    tails (to rounding), across statistics and epsilons."""
    rng = np.random.default_rng(12)
    n = 3000
    eps = 10.0 ** rng.uniform(-8, 1.5, n)
    if name == "ops":
        mu, r = _ops_rows(rng, n)
        loss = OPSLoss(mu, r, 10.0 ** rng.uniform(-2, 3, n))
    elif name == "chi2":
        loss = Chi2Loss(10.0 ** rng.uniform(-7, 0, n), np.full(n, 500.0))
    else:
        loss = GaussianLoss(10.0 ** rng.uniform(-8, 2, n))
    target = np.full(n, 1e-6)
    for bounds, tail in zip(loss.quick(eps, np.arange(n), target), loss.directions):
        a_lo, a_hi, b_lo, b_hi = bounds
        log_a, log_b = tail(eps, np.arange(n))
        a, b = np.exp(log_a), np.exp(log_b)
        rel = 1e-13
        assert np.all(a_lo <= a * (1 + rel) + 1e-300) and np.all(a <= a_hi * (1 + rel) + 1e-300)
        assert np.all(b_lo <= b * (1 + rel) + 1e-300) and np.all(b <= b_hi * (1 + rel) + 1e-300)


def test_chi2_chernoff_bound_is_above_the_tail():
    """The bound a non-binding chi-square direction is settled with."""
    rng = np.random.default_rng(13)
    k = 10.0 ** rng.uniform(0, 4, 3000)
    z = rng.uniform(0.01, 3, 3000)
    bound = np.exp(-0.5 * k * (z - 1 - np.log(z)))
    below = z < 1
    assert np.all(chdtr(k[below], k[below] * z[below]) <= bound[below] * (1 + 1e-12))
    assert np.all(chdtrc(k[~below], k[~below] * z[~below]) <= bound[~below] * (1 + 1e-12))


def test_certificate_brackets_the_root():
    """A quick stage certifies x only when the root lies within its
    tolerance below x, and never certifies a point below the root."""
    rng = np.random.default_rng(14)
    n = 4000
    s = 10.0 ** rng.uniform(-4, 1, n)
    loss = GaussianLoss(s, table=False)
    root = GaussianLoss.epsilon_of(1e-6, s, table=False, rtol=1e-15)
    x = root * (1 + 10.0 ** rng.uniform(-12, -6, n) * rng.choice([-1, 1], n))
    target = np.full(n, 1e-6)
    above, below, done, guess, tol = _search._quick_step(
        loss.quick, x, np.arange(n), target, np.log(target), np.zeros(n), 1e-11)
    assert done.any() and not done.all()
    assert np.all(x[done] >= root[done] * (1 - 1e-14))
    assert np.all(x[done] - root[done] <= tol[done] + 1e-15 * root[done])
    assert not np.any(above & (x > root * (1 + 1e-13)))


@pytest.mark.parametrize("start", [1e-300, 1.8e-23, 1e-17])
def test_start_just_above_a_zero_loss_still_finds_zero(start):
    """A first guess a few ulps above 0 (a spline's rounding, which differs
    between platforms) for a row whose loss is 0 closes the bracket on
    [0, start] at once: the search must still try 0 itself."""
    s = np.array([1e-300, 1e-12, 1.0])
    loss = GaussianLoss(s, table=False)
    guess = np.array([start, start, 0.2])
    eps = _search.epsilon_from_delta(loss.directions, np.full(3, 1e-6), 3, guess)
    assert eps[0] == 0 and eps[1] == 0
    np.testing.assert_allclose(eps[2], gaussian_epsilon(1e-6, 1.0), rtol=1e-9)


def test_quick_stages_match_monte_carlo():
    """End to end, independent of the engine: the hockey-stick divergence of
    the Gaussian mechanism at the fast path's epsilons, by Monte Carlo of
    the release, is at most delta."""
    rng = np.random.default_rng(15)
    s = np.full(4096, 0.8)
    eps = gaussian_epsilon(0.01, s)[0]
    x = rng.normal(size=400_000)
    loss_p = s[0] ** 2 / 2 - s[0] * x  # P = N(0, 1), Q = N(s, 1)
    est = np.mean(-np.expm1(np.minimum(eps - loss_p, 0.0)) * (loss_p > eps))
    se = stats.sem(-np.expm1(np.minimum(eps - loss_p, 0.0)) * (loss_p > eps))
    assert abs(est - 0.01) <= 4.9 * se


@pytest.mark.parametrize("columns", [1, 2, 3, 16])
def test_log_sum_rows_is_logsumexp(columns):
    # the mixture's own log-sum-exp: scipy's to rounding, -inf rows and
    # terms, NaN kept
    rng = np.random.default_rng(columns)
    a = 30.0 * rng.standard_normal((2000, columns))
    a[::7, 0] = -np.inf
    a[::11] = -np.inf
    a[5, -1] = np.nan
    with np.errstate(invalid="ignore"):
        got, expected = log_sum_rows(a), logsumexp(a, axis=1)
    assert np.array_equal(np.isnan(got), np.isnan(expected))
    assert np.array_equal(np.isneginf(got), np.isneginf(expected))
    finite = np.isfinite(expected)
    np.testing.assert_allclose(got[finite], expected[finite], rtol=1e-15, atol=1e-14)


def test_exact_search_from_above_stops_once_newton_is_within_tolerance():
    # a start above the root leaves the bracket's lower end at 0: the
    # tolerance must still be relative (to the point), or the rows Newton
    # has put within rounding of the root step on until the bracket closes
    s = np.geomspace(0.05, 20.0, 200)
    delta = 1e-6
    root = gaussian_epsilon(delta, s)
    calls = np.zeros(s.size, dtype=int)
    tail = GaussianLoss(s).directions[0]

    def counted(eps, idx):
        calls[idx] += 1
        return tail(eps, idx)

    out = _search._exact_search([counted], np.full(s.size, np.log(delta)), np.arange(s.size),
                                root * 1.01)
    assert calls.max() <= 4  # (41 with the tolerance relative to the lower end)
    assert np.all(gaussian_delta(out, s) <= delta)
    np.testing.assert_allclose(out, root, rtol=1e-10)
