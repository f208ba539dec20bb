"""Many rows at once: the searches started from a spline (per call, at one
delta and gamma) return the same verified epsilons as the plain search."""

import numpy as np
import pytest

from sklearn_pdp._accounting import _engine, _ops
from sklearn_pdp._accounting import gaussian_delta, gaussian_epsilon, ops_delta, ops_epsilon
from sklearn_pdp._accounting._gaussian import GaussianLoss


@pytest.fixture
def plain_search(monkeypatch):
    """Runs a function with the spline start switched off."""

    def run(func, *args):
        with monkeypatch.context() as m:
            m.setattr(_engine, "_TABLE_MIN_ROWS", np.inf)
            return func(*args)

    return run


def _check(fast, slow, achieved, delta):
    assert fast.shape == slow.shape
    # +inf (valid, if useless) where the search passes its limit of 1e6: a
    # root just below it may be reported as either
    finite = np.isfinite(fast) & np.isfinite(slow)
    assert np.all(np.where(finite, True, np.fmin(fast, slow) > 1e5) | (fast == slow))
    assert np.array_equal(fast == 0, slow == 0)
    # tight: the plain search's answer to 1e-9 relative (and 1e-14 absolute
    # at epsilons near 0, where both resolve the root to ~1e-16 / B absolute,
    # B = e^-eps times the slope of delta)
    np.testing.assert_allclose(fast[finite], slow[finite], rtol=1e-9, atol=1e-14)
    # never optimistic: delta at the reported epsilon is verified, in log
    # space (exp of a verified log delta rounds by up to ~|log delta| ulps)
    slack = 4 * np.finfo(float).eps * abs(np.log(delta))
    assert np.all(achieved[np.isfinite(fast)] <= delta * (1 + slack))


def _ops_rows(rng, n):
    mu = 10.0 ** rng.uniform(-12, 3, n)
    r = rng.normal(size=n) * 10.0 ** rng.uniform(-8, 3, n)
    mu[:4] = [0.0, np.inf, 1e-3, 1e-3]
    r[:4] = [1.0, 0.0, np.inf, 0.0]
    return mu, r


@pytest.mark.parametrize("gamma, delta", [(10.0, 1e-6), (3e4, 1e-10), (0.05, 1e-2)])
def test_ops_many_rows_equal_the_plain_search(plain_search, gamma, delta):
    rng = np.random.default_rng(0)
    mu, r = _ops_rows(rng, 6000)
    fast = ops_epsilon(delta, mu, r, gamma)
    slow = plain_search(ops_epsilon, delta, mu, r, gamma)
    _check(fast, slow, ops_delta(fast, mu, r, gamma), delta)
    assert fast[0] == 0 and fast[1] == np.inf and fast[2] == np.inf


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
    _check(fast, slow, ops_delta(fast, mu, r, 10.0, direction), 1e-6)


@pytest.mark.parametrize("delta", [1e-12, 1e-6, 0.1])
def test_gaussian_many_rows_equal_the_plain_search(plain_search, delta):
    rng = np.random.default_rng(3)
    s = 10.0 ** rng.uniform(-9, 3, 6000)
    s[:3] = [0.0, np.inf, 1e-300]
    fast = gaussian_epsilon(delta, s)
    slow = plain_search(gaussian_epsilon, delta, s)
    _check(fast, slow, gaussian_delta(fast, s), delta)


def test_tables_are_per_delta_and_skipped_for_few_rows(monkeypatch):
    """A table is built per call at one delta (any mix of gammas: OPS's loss
    depends on gamma only through a = |r| sqrt(gamma mu)); few rows, or rows
    at different deltas, take the plain search and still get exact answers."""
    built = []
    table_for = _engine.table_for

    def recorded(*args):
        built.append(args[1])
        return table_for(*args)

    monkeypatch.setattr(_engine, "table_for", recorded)
    rng = np.random.default_rng(4)
    mu, r = _ops_rows(rng, 3000)
    ops_epsilon(1e-6, mu[:100], r[:100], 10.0)
    ops_epsilon(rng.uniform(1e-7, 1e-6, 3000), mu, r, 10.0)
    assert not built
    gamma = rng.uniform(1, 10, 3000)
    eps = ops_epsilon(1e-6, mu, r, gamma)
    assert built == [(1e-6, "both")]
    slow = ops_epsilon(np.full(3000, 1e-6), mu, r, gamma * np.ones(3000), "both")
    np.testing.assert_array_equal(np.isfinite(eps), np.isfinite(slow))


@pytest.mark.parametrize("start", [1e-300, 1.8e-23, 1e-17])
def test_start_just_above_a_zero_loss_still_finds_zero(start):
    """A first guess a few ulps above 0 (a spline's rounding, which differs
    between platforms) for a row whose loss is 0 closes the bracket on
    [0, start] at once: the search must still try 0 itself."""
    s = np.array([1e-300, 1e-12, 1.0])
    loss = GaussianLoss(s, table=False)
    guess = np.array([start, start, 0.2])
    eps = _engine.epsilon_from_delta(loss.directions, np.full(3, 1e-6), 3, guess)
    assert eps[0] == 0 and eps[1] == 0
    np.testing.assert_allclose(eps[2], gaussian_epsilon(1e-6, 1.0), rtol=1e-9)
