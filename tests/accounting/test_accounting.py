import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import stats

from sklearn_pdp.accounting import (
    gaussian_delta, gaussian_epsilon, gaussian_noise_scale, log_gauss_mass, ops_delta, ops_epsilon,
)

from .._mc import assert_matches_mc, sampled_losses


def test_log_gauss_mass_matches_direct_difference():
    rng = np.random.default_rng(0)
    lo = rng.uniform(-8, 8, 500)
    hi = lo + rng.uniform(1e-3, 5, 500)
    # reference computed in the tail where it has no cancellation
    expected = np.log(
        np.where(lo > 0, stats.norm.sf(lo) - stats.norm.sf(hi), stats.norm.cdf(hi) - stats.norm.cdf(lo))
    )
    assert_allclose(log_gauss_mass(lo, hi), expected, rtol=1e-9)
    assert log_gauss_mass(1.0, 1.0) == -np.inf


# ---------------------------------------------------------------- OPS ------


def _ops_losses(mu, r, gamma, size, rng):
    """Samples of L under P and Q from the scalar reduction of doc/mechanisms/ops.rst."""
    e_p = rng.normal(r, np.sqrt(mu / gamma), size)
    e_q = rng.normal(r / (1 + mu), np.sqrt(mu / (gamma * (1 + mu))), size)

    def loss(e):
        return -0.5 * np.log1p(mu) + 0.5 * gamma * (e**2 - r**2 / (1 + mu))

    return loss(e_p), loss(e_q)


@pytest.mark.parametrize(
    "mu, r, gamma",
    [(0.05, 0.3, 10.0), (0.5, 1.5, 2.0), (2.0, 0.0, 1.0), (0.01, 2.0, 100.0)],
)
def test_ops_delta_matches_monte_carlo(mu, r, gamma):
    rng = np.random.default_rng(1)
    loss_p, loss_q = _ops_losses(mu, r, gamma, 400_000, rng)
    for eps in (0.0, 0.1, 0.5, 1.0):
        assert_matches_mc(
            ops_delta(eps, mu, r, gamma, direction="remove"),
            ops_delta(eps, mu, r, gamma, direction="add"),
            loss_p,
            loss_q,
            eps,
        )


def test_ops_monte_carlo_on_real_posteriors():
    """End to end: sample both posteriors of an actual data set and its
    neighbour, evaluate the log-density ratio with scipy, and compare."""
    rng = np.random.default_rng(2)
    n, d, alpha, gamma = 15, 3, 0.5, 20.0
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.clip(X @ [0.5, -0.3, 0.1] + 0.2 * rng.normal(size=n), -1, 1)
    x, yz = X[0] * 0.9, -0.8  # privacy target added to the data set

    def posterior(Xa, ya):
        H = Xa.T @ Xa + alpha * np.eye(d)
        return stats.multivariate_normal(np.linalg.solve(H, Xa.T @ ya), np.linalg.inv(gamma * H))

    P = posterior(X, y)
    Q = posterior(np.vstack([X, x]), np.append(y, yz))
    loss_p, loss_q = sampled_losses(P, Q, 300_000, rng)

    H = X.T @ X + alpha * np.eye(d)
    mu = x @ np.linalg.solve(H, x)
    r = yz - x @ np.linalg.solve(H, X.T @ y)
    for eps in (0.0, 0.2, 0.6):
        assert_matches_mc(
            ops_delta(eps, mu, r, gamma, "remove"),
            ops_delta(eps, mu, r, gamma, "add"),
            loss_p,
            loss_q,
            eps,
        )


def test_ops_epsilon_inverts_delta_down_to_1e_12():
    mu = np.array([1e-4, 1e-2, 0.3, 2.0, 5.0])
    r = np.array([0.1, 1.0, 0.0, 3.0, 30.0])
    for delta in (1e-2, 1e-6, 1e-12):
        eps = ops_epsilon(delta, mu, r, 10.0)
        assert np.all(np.isfinite(eps))
        achieved = ops_delta(eps, mu, r, 10.0)
        # the returned epsilon is the upper end of the bracket: never optimistic
        assert np.all(achieved <= delta)
        positive = eps > 0  # eps = 0 when delta(0) is already below the target
        assert positive.sum() >= 4
        assert_allclose(achieved[positive], delta, rtol=1e-5)
        # and it is tight: slightly less epsilon is not enough
        smaller = eps[positive] * (1 - 1e-6)
        assert np.all(ops_delta(smaller, mu[positive], r[positive], 10.0) > delta)


def test_ops_both_directions_are_covered():
    mu, r, gamma, delta = 0.2, 0.0, 5.0, 1e-6
    both = ops_epsilon(delta, mu, r, gamma)
    remove = ops_epsilon(delta, mu, r, gamma, direction="remove")
    add = ops_epsilon(delta, mu, r, gamma, direction="add")
    assert both == max(remove, add)
    assert remove != add


def test_ops_monotone_in_leverage_residual_and_delta():
    mu = np.logspace(-5, 0.5, 40)
    eps_mu = ops_epsilon(1e-6, mu, 0.5, 10.0)
    assert np.all(np.diff(eps_mu) >= 0)
    r = np.linspace(0, 10, 40)
    eps_r = ops_epsilon(1e-6, 0.1, r, 10.0)
    assert np.all(np.diff(eps_r) >= 0)
    deltas = np.logspace(-12, -1, 30)
    eps_d = ops_epsilon(deltas, 0.1, 0.5, 10.0)
    assert np.all(np.diff(eps_d) <= 0)
    eps_grid = np.linspace(0, 5, 50)
    assert np.all(np.diff(ops_delta(eps_grid, 0.1, 0.5, 10.0)) <= 0)


def test_ops_limiting_cases():
    assert ops_epsilon(1e-6, 0.0, 5.0, 10.0) == 0.0
    assert ops_delta(0.0, 0.0, 5.0, 10.0) == 0.0
    assert ops_epsilon(1e-6, np.inf, 0.0, 10.0) == np.inf
    assert ops_delta(3.0, np.inf, 0.0, 10.0) == 1.0
    # vanishing noise (gamma -> inf) means unbounded loss
    assert ops_epsilon(1e-6, 0.1, 1.0, 1e8) > 1e3
    # as gamma -> 0 the residual stops mattering, but the covariance of the
    # posterior still changes by the factor (1 + mu): the loss stays positive
    flat = ops_epsilon(1e-6, 0.1, 1.0, 1e-9)
    assert flat == pytest.approx(ops_epsilon(1e-6, 0.1, 0.0, 1e-9), rel=1e-3)
    assert 0 < flat < ops_epsilon(1e-6, 0.1, 1.0, 1.0)


def test_theorem_14_bound_is_optimistic_erratum_e1():
    """erratum E1 in doc/errata.rst: d = 1, X = y = 1_n, n = 100, lambda = 0, add (1, -1),
    gamma = 100, delta = 1e-6. Eq. (7) of the paper claims 9.666."""
    n, gamma, delta = 100, 100.0, 1e-6
    mu, r = 1.0 / n, -1.0 - 1.0
    eq7 = (
        0.5 * abs(-np.log1p(mu) + gamma * mu / (1 + mu) * r**2)
        + mu / 2 * np.log(2 / delta)
        + np.sqrt(gamma * mu * np.log(2 / delta)) * abs(r)
    )
    assert eq7 == pytest.approx(9.666, abs=1e-3)
    exact = ops_epsilon(delta, mu, r, gamma)
    assert exact == pytest.approx(11.081, abs=1e-3)
    # at the paper's epsilon the true delta is about 23 times the claim
    assert ops_delta(eq7, mu, r, gamma) == pytest.approx(2.3e-5, rel=0.05)


# ----------------------------------------------------------- Gaussian ------


@pytest.mark.parametrize("s", [0.1, 1.0, 3.0])
def test_gaussian_delta_matches_monte_carlo(s):
    rng = np.random.default_rng(3)
    # P = N(0, 1), Q = N(s, 1): L = s^2/2 - s x
    xp, xq = rng.normal(0, 1, 400_000), rng.normal(s, 1, 400_000)
    loss_p, loss_q = s**2 / 2 - s * xp, s**2 / 2 - s * xq
    for eps in (0.0, 0.3, 1.0):
        d = gaussian_delta(eps, s)
        assert_matches_mc(d, d, loss_p, loss_q, eps)


def test_gaussian_calibration_is_exact_and_beats_classical_rule():
    eps, delta = 1.0, 1e-5
    sigma = gaussian_noise_scale(eps, delta, sensitivity=2.0)
    assert gaussian_delta(eps, 2.0 / sigma) <= delta
    assert gaussian_delta(eps, 2.0 / sigma * (1 + 1e-6)) > delta
    assert gaussian_epsilon(delta, 2.0 / sigma) == pytest.approx(eps, rel=1e-6)
    classical = 2.0 * np.sqrt(2 * np.log(1.25 / delta)) / eps
    assert sigma < classical
    # the classical rule is not even valid at large epsilon (erratum E2 in doc/errata.rst)
    big = 20.0
    classical_big = np.sqrt(2 * np.log(1.25 / delta)) / big
    assert gaussian_delta(big, 1.0 / classical_big) > delta


def test_gaussian_limits():
    assert gaussian_epsilon(1e-6, 0.0) == 0.0
    assert gaussian_epsilon(1e-6, np.inf) == np.inf
    s = np.logspace(-3, 2, 50)
    eps = gaussian_epsilon(1e-12, s)
    assert np.all(np.isfinite(eps)) and np.all(np.diff(eps) > 0)
