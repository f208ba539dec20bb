"""The change of lambda_min by one row: the moment series (certified per
row) against the iteration on the exact secular sums and against eigvalsh."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from sklearn_pdp.utils import _eigen
from sklearn_pdp.utils._eigen import eigen_change, lambda_min_change, scatter_eigen


@pytest.fixture
def iteration_only(monkeypatch):
    """Runs a function with the series switched off (every row iterates)."""

    def run(func, *args, **kwargs):
        with monkeypatch.context() as m:
            m.setattr(_eigen, "_series_roots", lambda *a: a[6])
            return func(*args, **kwargs)

    return run


def _rows(rng, n, d, scales):
    X = rng.normal(size=(n, d)) * scales / (2 * np.sqrt(d))
    return X / np.maximum(np.linalg.norm(X, axis=1), 1.0)[:, None]


def _series_share(monkeypatch, func, *args, **kwargs):
    """The result, and the share of rows the series certified."""
    seen = []
    series = _eigen._series_roots

    def counted(*a):
        left = series(*a)
        seen.append(1 - left.size / max(a[6].size, 1))
        return left

    monkeypatch.setattr(_eigen, "_series_roots", counted)
    return func(*args, **kwargs), (seen[0] if seen else 0.0)


@pytest.mark.parametrize("n, d, spread", [(20000, 10, 1.0), (5000, 30, 1.0), (20000, 8, 10.0)])
@pytest.mark.parametrize("add", [False, True])
@pytest.mark.parametrize("intercept", [False, True])
def test_series_equals_the_iteration(monkeypatch, iteration_only, n, d, spread, add, intercept):
    """Isotropic rows (small gaps) and spread spectra: the certified series
    agrees with the iteration to the tolerance both are solved to."""
    rng = np.random.default_rng(d + int(add) + 2 * intercept)
    X = _rows(rng, n, d, spread ** np.linspace(0, 1, d))
    Z = np.hstack([X, np.ones((n, 1))]) if intercept else X
    eig, mean = scatter_eigen(Z.T @ Z, n, intercept)
    rows = X[:3000]
    fast, share = _series_share(monkeypatch, eigen_change, eig, mean, n, rows,
                                intercept=intercept, add=add)
    slow = iteration_only(eigen_change, eig, mean, n, rows, intercept=intercept, add=add)
    assert share > 0.5
    tol = 2 * (_eigen._SECULAR_RTOL * np.maximum(fast, slow) + _eigen._SECULAR_ATOL)
    assert np.all(np.abs(fast - slow) <= tol)


@pytest.mark.parametrize("add", [False, True])
def test_series_matches_eigvalsh_and_falls_back_near_the_second_eigenvalue(monkeypatch, add):
    """Gaps from far above ||x||^2 down to below it: rows the series cannot
    certify (s near or beyond g_2) take the iteration; all match eigvalsh."""
    rng = np.random.default_rng(20 + add)
    d = 5
    V = np.linalg.qr(rng.normal(size=(d, d)))[0]
    w = np.array([1.0, 1.3, 4.0, 9.0, 30.0])
    A = V @ np.diag(w) @ V.T
    w, V = np.linalg.eigh(A)
    X = rng.normal(size=(60, d)) * rng.uniform(0.01, 1.0, (60, 1))
    X /= np.maximum(np.linalg.norm(X, axis=1), 1.0)[:, None]
    if not add:  # rows A can lose: inside its Gram
        X *= 0.5
    got, share = _series_share(monkeypatch, lambda_min_change, w, V, X, add=add)
    sign = 1 if add else -1
    exact = [abs(np.linalg.eigvalsh(A + sign * np.outer(x, x))[0] - w[0]) for x in X]
    assert_allclose(got, exact, rtol=1e-10, atol=1e-13)
    assert 0 < share < 1


@pytest.mark.parametrize("add", [False, True])
def test_series_bounds_contain_the_secular_function(add):
    """The two-sided bounds of the series hold for s below g_2, also on F
    at points below and above s (its terms beyond the pole bounded at s)."""
    rng = np.random.default_rng(30 + add)
    d, n = 12, 2000
    gaps = np.concatenate([[0.0], np.sort(rng.uniform(0.5, 50, d - 1))])
    C2 = rng.uniform(0, 1, (n, d)) ** 3 * 0.1
    s = rng.uniform(0, 1, n) * gaps[1] * rng.choice([0.01, 0.3, 0.9], n)
    powers = (1.0 / gaps[1:])[:, None] ** np.arange(1, _eigen._MOMENTS + 1)
    moments = powers.T @ C2[:, 1:].T

    def secular(s):
        terms = C2[:, 1:] / (s[:, None] - gaps[1:]) if add else C2[:, 1:] / (gaps[1:] + s[:, None])
        return C2[:, 0] / s + terms.sum(axis=1)

    lower, upper = _eigen._series(C2[:, 0], moments, gaps[1], s, add)
    exact = secular(s)
    assert np.all(lower <= exact) and np.all(exact <= upper)
    # tight where s is far below g_2
    small = s < 0.01 * gaps[1]
    assert np.all((upper - lower)[small] <= 1e-12 * np.abs(exact[small]) + 1e-14)
    bottom, top = s * rng.uniform(0.5, 1, n), s * rng.uniform(1, 1.1, n)
    lower, upper = _eigen._series(C2[:, 0], moments, gaps[1], s, add, bottom, top)
    assert np.all(lower <= secular(bottom)) and np.all(secular(top) <= upper)
