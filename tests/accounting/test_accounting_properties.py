"""Property-based tests of the privacy-loss core, one entry per loss family.

For random parameters (hypothesis), every (epsilon, delta) family of
``_accounting`` (Gaussian, Laplace, One Posterior Sample, objective
perturbation, the chi-square loss of the random projection): delta(eps) is
non-increasing in eps, eps(delta) is its tight inverse and an upper bound
(delta(eps(delta)) <= delta), non-negative and non-increasing in delta, and
non-decreasing in the row's statistic; both directions are computed and
"both" is their maximum; results are finite or +inf and never NaN; and the
exact values bound Monte Carlo estimates of the hockey-stick divergences of
the mechanism's release. Adding a family takes one entry in MECHANISMS.
AdaOPS's mixture and the exponential mechanism (pure DP, exact by
enumeration) have their own properties below. The default run keeps the
example counts small; the ``audit`` marker runs the same properties with
many more examples and larger Monte Carlo samples.
"""

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from scipy import stats

from sklearn_pdp.accounting import (
    chi2_delta, chi2_epsilon, gaussian_delta, gaussian_epsilon, laplace_delta, laplace_epsilon,
    objpert_delta, objpert_epsilon, ops_delta, ops_epsilon, ops_mixture_epsilon,
)
from sklearn_pdp.accounting._exponential import (
    exponential_log_proba, quantile_log_proba, quantile_loss_table,
)

from .._mc import hockey_stick_mc, sampled_losses
from .test_accounting import _ops_losses


@dataclass
class Mechanism:
    """How the property tests see one mechanism of ``_accounting``.

    ``delta(eps, params, direction)`` and ``epsilon(delta, params, direction)``
    with ``direction`` one of ``directions`` or "both"; ``directions=None``
    means the mechanism is symmetric (one formula serves both directions).
    ``losses(params, size, rng)`` samples L = log dP/dQ under P and under Q,
    or returns None for degenerate parameters (zero or infinite loss).
    ``grow(params, factor)`` scales the row's statistic (the one the loss is
    non-decreasing in) by ``factor`` >= 1. ``aim``: the relative share of
    delta by which the epsilon search deliberately stays below its target
    (objective perturbation's quadrature), which the tightness check allows;
    ``tight``: the relative share of delta within which the tightness check
    holds where it is larger than ``aim`` (objective perturbation: its
    Gauss-Hermite ladder's error in the far tails, where the search's
    verdict that delta exceeds the target rests on a coarser rule than the
    reference; conservative, never below the target, which stays checked
    exactly).
    """

    name: str
    delta: Callable
    epsilon: Callable
    params: st.SearchStrategy
    losses: Callable
    grow: Callable
    directions: Optional[tuple] = ("remove", "add")
    aim: float = 0.0
    tight: float = 0.0

    def __repr__(self):
        return self.name


def _log_uniform(lo, hi):
    return st.floats(np.log10(lo), np.log10(hi)).map(lambda t: 10.0**t)


_entry = st.floats(-1, 1).filter(lambda v: v == 0 or abs(v) >= 1e-6)


def _with_limits(strategy):
    """Mostly ``strategy``, sometimes the limits 0 and +inf."""
    return st.one_of(strategy, st.sampled_from([0.0, np.inf]))


def _ops_mc(p, size, rng):
    if not (0 < p["mu"] < np.inf):
        return None
    return _ops_losses(p["mu"], p["r"], p["gamma"], size, rng)


def _gaussian_mc(p, size, rng):
    # P = N(0, 1), Q = N(s, 1): L = s^2/2 - s x
    s = p["s"]
    if not (0 < s < np.inf):
        return None
    xp, xq = rng.normal(0, 1, size), rng.normal(s, 1, size)
    return s**2 / 2 - s * xp, s**2 / 2 - s * xq


def _laplace_mc(p, size, rng):
    # P = Lap(0, 1), Q = Lap(t, 1): L = |x - t| - |x|
    t = p["ratio"]
    if not (0 < t < np.inf):
        return None
    xp, xq = rng.laplace(0, 1, size), rng.laplace(t, 1, size)
    return np.abs(xp - t) - np.abs(xp), np.abs(xq - t) - np.abs(xq)


def _chi2_mc(p, size, rng):
    # df rows N(0, 1) against N(0, 1 + tau) in the whitened direction of z:
    # L = (df / 2) log(1 + tau) - tau S / (2 (1 + tau)), S their sum of squares
    tau, df = p["tau"], p["df"]
    if not (0 < tau < np.inf):
        return None
    s_p = rng.chisquare(df, size)
    s_q = (1 + tau) * rng.chisquare(df, size)

    def loss(s):
        return 0.5 * df * np.log1p(tau) - tau * s / (2 * (1 + tau))

    return loss(s_p), loss(s_q)


def _objpert_params(eigenvalues, angle, x, r, sigma):
    """A 2-D objective perturbation: Hessian H (eigenvalues, rotated by
    ``angle``), target x with residual r, noise sigma; with the statistics
    the loss reads (||x||^2, x^T H^-1 x, ||H^-1 x||^2)."""
    c, s = np.cos(angle), np.sin(angle)
    rot = np.array([[c, -s], [s, c]])
    H = rot @ np.diag(eigenvalues) @ rot.T
    x = np.asarray(x, dtype=float)
    h_inv_x = np.linalg.solve(H, x)
    return {"H": H, "x": x, "r": r, "sigma": sigma, "norm2": x @ x, "mu": x @ h_inv_x,
            "inverse_norm2": h_inv_x @ h_inv_x}


def _objpert_mc(p, size, rng):
    # the release itself: theta = H^-1 (g - b), b ~ N(0, sigma^2 I), on the
    # smaller data set (mean 0) and on the larger one (H' = H + x x^T, mean
    # H'^-1 x r); L = log dP/dQ of the two Gaussian laws of theta
    H, x, r, sigma = p["H"], p["x"], p["r"], p["sigma"]
    if not p["mu"] > 0:
        return None
    H_big = H + np.outer(x, x)
    laws = [(np.zeros(2), sigma**2 * np.linalg.inv(H @ H)),
            (np.linalg.solve(H_big, x) * r, sigma**2 * np.linalg.inv(H_big @ H_big))]
    return sampled_losses(*(stats.multivariate_normal(mean, cov) for mean, cov in laws),
                          size, rng)


def _scaled(p, factor, *keys):
    return {**p, **{k: p[k] * factor for k in keys}}


def _symmetric(name, delta, epsilon, losses, key):
    """A family of one ratio ``key`` whose two directions are equal."""
    return Mechanism(
        name,
        delta=lambda eps, p, d: delta(eps, p[key]),
        epsilon=lambda target, p, d: epsilon(target, p[key]),
        params=st.fixed_dictionaries({key: _with_limits(_log_uniform(1e-3, 1e2))}),
        losses=losses,
        grow=lambda p, f: _scaled(p, f, key),
        directions=None,
    )


MECHANISMS = [
    Mechanism(
        "ops",
        delta=lambda eps, p, d: ops_delta(eps, p["mu"], p["r"], p["gamma"], d),
        epsilon=lambda delta, p, d: ops_epsilon(delta, p["mu"], p["r"], p["gamma"], d),
        params=st.fixed_dictionaries(
            {
                "mu": _with_limits(_log_uniform(1e-6, 1e2)),
                "r": st.floats(-30, 30),
                "gamma": _log_uniform(1e-2, 1e4),
            }
        ),
        losses=_ops_mc,
        # |r| (not the leverage: the loss is not monotone in mu)
        grow=lambda p, f: _scaled(p, f, "r"),
    ),
    _symmetric("gaussian", gaussian_delta, gaussian_epsilon, _gaussian_mc, "s"),
    _symmetric("laplace", laplace_delta, laplace_epsilon, _laplace_mc, "ratio"),
    Mechanism(
        "chi2",
        delta=lambda eps, p, d: chi2_delta(eps, p["tau"], p["df"], d),
        epsilon=lambda delta, p, d: chi2_epsilon(delta, p["tau"], p["df"], d),
        params=st.fixed_dictionaries(
            {
                "tau": _with_limits(_log_uniform(1e-5, 1e2)),
                "df": _log_uniform(1, 3000).map(round),
            }
        ),
        losses=_chi2_mc,
        # tau and the number of released rows
        grow=lambda p, f: {"tau": p["tau"] * f, "df": round(p["df"] * f)},
    ),
    Mechanism(
        "objpert",
        delta=lambda eps, p, d: objpert_delta(
            eps, p["norm2"], p["mu"], p["inverse_norm2"], p["r"], p["sigma"], d),
        epsilon=lambda delta, p, d: objpert_epsilon(
            delta, p["norm2"], p["mu"], p["inverse_norm2"], p["r"], p["sigma"], d),
        params=st.builds(
            _objpert_params,
            eigenvalues=st.tuples(_log_uniform(1e-1, 1e2), _log_uniform(1e-1, 1e2)),
            angle=st.floats(0, np.pi),
            # entries of x at least 1e-6 or 0: below, the loss is within
            # float64 rounding of 0 and so are its epsilons
            x=st.one_of(st.tuples(_entry, _entry), st.just((0.0, 0.0))),
            r=st.floats(-10, 10),
            sigma=_log_uniform(0.1, 10),
        ),
        losses=_objpert_mc,
        # |r| (the loss reads sigma only through r / sigma)
        grow=lambda p, f: _scaled(p, f, "r"),
        aim=1e-5,
        tight=0.1,
    ),
]


def _directions(mech):
    return list(mech.directions or ()) + ["both"]


def _check_delta(value):
    assert not np.isnan(value) and 0.0 <= value <= 1.0, value


def _check_epsilon(value):
    assert not np.isnan(value) and value >= 0.0, value


# ------------------------------------------------------------ properties ---

_FAST = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# the audit's examples are reproducible (the same on every machine)
_LONG = settings(max_examples=1000, deadline=None, derandomize=True,
                 suppress_health_check=[HealthCheck.too_slow])


def _delta_non_increasing(mech, data):
    p = data.draw(mech.params, label="params")
    eps = sorted(data.draw(st.lists(st.floats(0, 60), min_size=2, max_size=2), label="eps"))
    per_direction = {}
    for direction in _directions(mech):
        lo, hi = (mech.delta(e, p, direction) for e in eps)
        _check_delta(lo), _check_delta(hi)
        # rounding of A - e^eps B in log space: a relative 1e-9
        assert hi <= lo * (1 + 1e-9) + 1e-300, (direction, eps, lo, hi)
        per_direction[direction] = lo
    if mech.directions:
        # the same search from another start: equal within its tolerances
        assert per_direction["both"] == pytest.approx(
            max(per_direction[d] for d in mech.directions), rel=1e-10, abs=1e-15)


def _epsilon_inverts_delta(mech, data):
    p = data.draw(mech.params, label="params")
    target = data.draw(_log_uniform(1e-15, 0.5), label="delta")
    per_direction = {}
    for direction in _directions(mech):
        eps = mech.epsilon(target, p, direction)
        _check_epsilon(eps)
        per_direction[direction] = eps
        if np.isfinite(eps):
            # an upper bound: the delta reached is at most the target
            assert mech.delta(eps, p, direction) <= target * (1 + 1e-12)
        if eps > 0:
            # and tight: any epsilon below the search's bracket is not enough
            below = min(eps * (1 - 1e-7) - 1e-11, 1e3)
            slack = max(mech.aim, mech.tight)
            assert mech.delta(max(below, 0.0), p, direction) > target * (1 - slack)
    if mech.directions:
        # the same search from another start: equal within its tolerances
        assert per_direction["both"] == pytest.approx(
            max(per_direction[d] for d in mech.directions), rel=1e-10, abs=1e-15)


def _epsilon_non_increasing_in_delta(mech, data):
    p = data.draw(mech.params, label="params")
    deltas = sorted(data.draw(st.lists(_log_uniform(1e-15, 0.5), min_size=2, max_size=2),
                              label="deltas"))
    for direction in _directions(mech):
        small, large = (mech.epsilon(d, p, direction) for d in deltas)
        _check_epsilon(small), _check_epsilon(large)
        # each is an upper bound within the search's tolerance of the tight value
        assert large <= small * (1 + 1e-6) + 1e-10, (direction, deltas, small, large)


def _non_decreasing_in_the_statistic(mech, data):
    p = data.draw(mech.params, label="params")
    factor = data.draw(st.floats(1, 10), label="factor")
    target = data.draw(_log_uniform(1e-12, 0.1), label="delta")
    larger = mech.grow(p, factor)
    for direction in _directions(mech):
        before, after = mech.epsilon(target, p, direction), mech.epsilon(target, larger, direction)
        _check_epsilon(before), _check_epsilon(after)
        assert after >= before * (1 - 1e-6) - 1e-10, (direction, factor, before, after)


def _exact_bounds_monte_carlo(mech, data, size):
    p = data.draw(mech.params, label="params")
    eps = data.draw(st.floats(0, 3), label="eps")
    seed = data.draw(st.integers(0, 2**32 - 1), label="seed")
    samples = mech.losses(p, size, np.random.default_rng(seed))
    if samples is None:  # degenerate: covered by the limit tests
        _check_delta(mech.delta(eps, p, "both"))
        return
    estimates = hockey_stick_mc(*samples, eps)
    for direction, (estimate, _) in zip(mech.directions or ("both", "both"), estimates):
        exact = mech.delta(eps, p, direction)
        # Bernstein's inequality for a mean of [0, 1] terms with variance at
        # most m (1 - m), m = the exact mean: a two-sided miss rate of 1e-6.
        log_term = np.log(2e6)
        tol = np.sqrt(2 * exact * (1 - exact) * log_term / size) + log_term / (3 * size)
        assert abs(estimate - exact) <= tol, (direction, p, eps, exact, estimate, tol)


# ------------------------------------------------ AdaOPS's mixture ---------
# The release (k, theta): an index k with probabilities p_k (smaller data set)
# and q_k (larger), then OPS with index k's statistics.


@st.composite
def _mixture(draw, same_weights=False):
    k = draw(st.integers(1, 3), label="indices")
    mu = np.array([draw(_log_uniform(1e-4, 10)) for _ in range(k)])
    r = np.array([draw(st.floats(-5, 5)) for _ in range(k)])
    gamma = np.array([draw(_log_uniform(1e-1, 1e2)) for _ in range(k)])
    logits = [np.array([draw(st.floats(-3, 3)) for _ in range(k)]) for _ in range(2)]
    log_p, log_q = (v - np.logaddexp.reduce(v) for v in logits)
    if same_weights:
        log_q = log_p
    return mu, r, gamma, log_p, log_q


def _mixture_epsilon(delta, mu, r, gamma, log_p, log_q, rest=(-np.inf, -np.inf)):
    return ops_mixture_epsilon(delta, mu[None], r[None], gamma, log_p[None], log_q[None],
                               np.array([rest[0]]), np.array([rest[1]]))[0]


def _mixture_mc(mu, r, gamma, log_p, log_q, size, rng):
    """Samples of L = log p_k / q_k + OPS's loss under P (k ~ p) and Q (k ~ q)."""
    samples = []
    for side, log_w in enumerate((log_p, log_q)):
        counts = rng.multinomial(size, np.exp(log_w) / np.exp(log_w).sum())
        parts = [log_p[k] - log_q[k] + _ops_losses(mu[k], r[k], gamma[k], c, rng)[side]
                 for k, c in enumerate(counts)]
        samples.append(np.concatenate(parts))
    return samples


@_FAST
@given(mix=_mixture(same_weights=True), target=_log_uniform(1e-12, 0.1))
def test_mixture_with_equal_weights_lies_between_its_components(mix, target):
    """With p = q the mixture's delta is the average of its components', so
    its epsilon lies between their smallest and largest (one index: OPS's)."""
    mu, r, gamma, log_p, log_q = mix
    eps = _mixture_epsilon(target, mu, r, gamma, log_p, log_q)
    parts = ops_epsilon(target, mu, r, gamma)
    _check_epsilon(eps)
    assert parts.min() * (1 - 1e-6) - 1e-10 <= eps <= parts.max() * (1 + 1e-6) + 1e-10
    if len(mu) == 1:
        assert_allclose(eps, parts[0], rtol=1e-6, atol=1e-10)


@_FAST
@given(mix=_mixture(), target=_log_uniform(1e-12, 0.1), data=st.data())
def test_mixture_is_tight_and_an_index_left_out_never_lowers_it(mix, target, data):
    """delta of the mixture written out at the reported epsilon is at most
    the target and just below it exceeds it; moving an index's mass into the
    part counted as revealing everything never lowers the epsilon."""
    mu, r, gamma, log_p, log_q = mix
    eps = _mixture_epsilon(target, mu, r, gamma, log_p, log_q)
    _check_epsilon(eps)
    L = log_p - log_q

    def delta(e):
        remove = np.sum(np.exp(log_p) * ops_delta(e - L, mu, r, gamma, "remove"))
        add = np.sum(np.exp(log_q) * ops_delta(e + L, mu, r, gamma, "add"))
        return max(remove, add)

    assert delta(eps) <= target * (1 + 1e-9)
    if eps > 0:
        assert delta(max(eps * (1 - 1e-6) - 1e-10, 0.0)) > target
    if len(mu) > 1:
        k = data.draw(st.integers(0, len(mu) - 1), label="left out")
        keep = np.arange(len(mu)) != k
        fewer = _mixture_epsilon(target, mu[keep], r[keep], gamma[keep], log_p[keep],
                                 log_q[keep], rest=(log_p[k], log_q[k]))
        assert fewer >= eps * (1 - 1e-6) - 1e-10


@_FAST
@given(mix=_mixture(), target=_log_uniform(1e-3, 0.3), seed=st.integers(0, 2**32 - 1))
def test_mixture_epsilon_bounds_monte_carlo(mix, target, seed):
    """At the reported epsilon, Monte Carlo of the release's own loss finds
    no delta above the target (a one-sided Bernstein bound, miss rate 1e-6)."""
    mu, r, gamma, log_p, log_q = mix
    eps = _mixture_epsilon(target, mu, r, gamma, log_p, log_q)
    size = 20_000
    estimates = hockey_stick_mc(*_mixture_mc(mu, r, gamma, log_p, log_q, size,
                                             np.random.default_rng(seed)), eps)
    log_term = np.log(1e6)
    tol = np.sqrt(2 * target * (1 - target) * log_term / size) + log_term / (3 * size)
    for estimate, _ in estimates:
        assert estimate <= target + tol, (eps, estimate, target, tol)


# ------------------------------------------- the exponential mechanism -----


def _enumerated_quantile_log_proba(values, n_cells, q, epsilon):
    """Log probabilities of the q-quantile over cells 0..n_cells-1, from the
    values themselves (cell indices), counted one by one."""
    values = np.asarray(values)
    n = values.size
    utility = np.array([-max(np.sum(values < k) - q * n, q * n - np.sum(values <= k), 0.0)
                        for k in range(n_cells)])
    logits = epsilon * utility / 2
    return logits - np.logaddexp.reduce(logits)


@_FAST
@given(
    counts=st.lists(st.integers(0, 5), min_size=2, max_size=8).filter(lambda c: sum(c) > 0),
    q=st.floats(0, 1),
    epsilon=_log_uniform(1e-2, 5),
    add=st.booleans(),
)
def test_quantile_losses_equal_enumeration(counts, q, epsilon, add):
    """The exact loss table of a quantile release against the release written
    out for every neighbour, and within the release's pure epsilon."""
    upper, lower = quantile_loss_table(counts, q, epsilon, add=add)
    values = np.repeat(np.arange(len(counts)), counts)
    base = _enumerated_quantile_log_proba(values, len(counts), q, epsilon)
    assert_allclose(quantile_log_proba(counts, q, epsilon), base, rtol=1e-12, atol=1e-12)
    for cell, count in enumerate(counts):
        if not add and count == 0:  # no value there to remove
            assert np.isnan(upper[cell]) and np.isnan(lower[cell])
            continue
        if add:
            other = np.append(values, cell)
            L = base - _enumerated_quantile_log_proba(other, len(counts), q, epsilon)
        else:
            other = np.delete(values, np.flatnonzero(values == cell)[0])
            L = _enumerated_quantile_log_proba(other, len(counts), q, epsilon) - base
        assert_allclose([upper[cell], lower[cell]], [L.max(), (-L).max()], rtol=1e-9, atol=1e-12)
        assert 0 <= upper[cell] <= epsilon * (1 + 1e-12)
        assert 0 <= lower[cell] <= epsilon * (1 + 1e-12)


@_FAST
@given(
    scores=st.lists(st.floats(0, 50), min_size=2, max_size=6),
    epsilon=_log_uniform(1e-2, 10),
    sensitivity=_log_uniform(1e-1, 10),
    data=st.data(),
)
def test_selection_loss_is_at_most_epsilon(scores, epsilon, sensitivity, data):
    """Adding a record raises every score by some amount in [0, sensitivity]:
    no selection probability moves by more than a factor e^epsilon."""
    raises = data.draw(st.lists(st.floats(0, 1), min_size=len(scores), max_size=len(scores)),
                       label="raises")
    before = exponential_log_proba(scores, epsilon, sensitivity)
    after = exponential_log_proba(np.add(scores, sensitivity * np.array(raises)), epsilon,
                                  sensitivity)
    assert_allclose(np.logaddexp.reduce(before), 0.0, atol=1e-12)
    assert np.max(np.abs(after - before)) <= epsilon * (1 + 1e-9) + 1e-12


# --------------------------------------------------------------- runners ---

def _fast_monte_carlo(mech, data):
    _exact_bounds_monte_carlo(mech, data, size=20_000)


def _long_monte_carlo(mech, data):
    _exact_bounds_monte_carlo(mech, data, size=1_000_000)


def _name(check):
    return check.__name__.strip("_")


# every property against every family, with few examples by default
PROPERTIES = [_delta_non_increasing, _epsilon_inverts_delta, _epsilon_non_increasing_in_delta,
              _non_decreasing_in_the_statistic, _fast_monte_carlo]
# the audit: many examples, large Monte Carlo samples
LONG_PROPERTIES = [
    pytest.param(check, budget, id=_name(check))
    for check, budget in [*((c, _LONG) for c in PROPERTIES[:-1]),
                          (_long_monte_carlo, settings(_LONG, max_examples=200))]
]


# 15 examples: test_loss_family_property_long runs the same properties with 1000
@pytest.mark.parametrize("check", PROPERTIES, ids=_name)
@pytest.mark.parametrize("mech", MECHANISMS, ids=repr)
@settings(_FAST, max_examples=15)
@given(data=st.data())
def test_loss_family_property(mech, check, data):
    check(mech, data)


@pytest.mark.audit
@pytest.mark.parametrize("check, budget", LONG_PROPERTIES)
@pytest.mark.parametrize("mech", MECHANISMS, ids=repr)
def test_loss_family_property_long(mech, check, budget):
    @budget
    @given(data=st.data())
    def run(data):
        check(mech, data)

    run()
