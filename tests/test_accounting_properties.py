"""Property-based tests of the privacy-loss core, one entry per mechanism.

For random parameters (hypothesis): delta(eps) is non-increasing in eps,
eps(delta) is its tight inverse and an upper bound (delta(eps(delta)) <= delta),
both directions are computed and "both" is their maximum, results are finite
or +inf and never NaN, and the exact values bound Monte Carlo estimates of the
hockey-stick divergences. Adding a mechanism takes one entry in MECHANISMS.
The default run keeps the example counts small; the ``audit`` marker runs the
same properties with many more examples and larger Monte Carlo samples.
"""

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sklearn_pdp._accounting import (
    gaussian_delta,
    gaussian_epsilon,
    ops_delta,
    ops_epsilon,
)

from ._mc import hockey_stick_mc
from .test_accounting import _ops_losses


@dataclass
class Mechanism:
    """How the property tests see one mechanism of ``_accounting``.

    ``delta(eps, params, direction)`` and ``epsilon(delta, params, direction)``
    with ``direction`` one of ``directions`` or "both"; ``directions=None``
    means the mechanism is symmetric (one formula serves both directions).
    ``losses(params, size, rng)`` samples L = log dP/dQ under P and under Q,
    or returns None for degenerate parameters (zero or infinite loss).
    """

    name: str
    delta: Callable
    epsilon: Callable
    params: st.SearchStrategy
    losses: Callable
    directions: Optional[tuple] = ("remove", "add")

    def __repr__(self):
        return self.name


def _log_uniform(lo, hi):
    return st.floats(np.log10(lo), np.log10(hi)).map(lambda t: 10.0**t)


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
    ),
    Mechanism(
        "gaussian",
        delta=lambda eps, p, d: gaussian_delta(eps, p["s"]),
        epsilon=lambda delta, p, d: gaussian_epsilon(delta, p["s"]),
        params=st.fixed_dictionaries({"s": _with_limits(_log_uniform(1e-3, 1e2))}),
        losses=_gaussian_mc,
        directions=None,
    ),
]


def _directions(mech):
    return list(mech.directions or ()) + ["both"]


def _check_delta(value):
    assert not np.isnan(value) and 0.0 <= value <= 1.0, value


def _check_epsilon(value):
    assert not np.isnan(value) and value >= 0.0, value


# ------------------------------------------------------------ properties ---


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
        assert per_direction["both"] == max(per_direction[d] for d in mech.directions)


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
            assert mech.delta(max(below, 0.0), p, direction) > target
    if mech.directions:
        assert per_direction["both"] == max(per_direction[d] for d in mech.directions)


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


# --------------------------------------------------------------- runners ---

_FAST = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_LONG = settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("mech", MECHANISMS, ids=repr)
@_FAST
@given(data=st.data())
def test_delta_is_non_increasing(mech, data):
    _delta_non_increasing(mech, data)


@pytest.mark.parametrize("mech", MECHANISMS, ids=repr)
@_FAST
@given(data=st.data())
def test_epsilon_inverts_delta(mech, data):
    _epsilon_inverts_delta(mech, data)


@pytest.mark.parametrize("mech", MECHANISMS, ids=repr)
@_FAST
@given(data=st.data())
def test_exact_delta_bounds_monte_carlo(mech, data):
    _exact_bounds_monte_carlo(mech, data, size=20_000)


@pytest.mark.audit
@pytest.mark.parametrize("mech", MECHANISMS, ids=repr)
@_LONG
@given(data=st.data())
def test_delta_is_non_increasing_long(mech, data):
    _delta_non_increasing(mech, data)


@pytest.mark.audit
@pytest.mark.parametrize("mech", MECHANISMS, ids=repr)
@_LONG
@given(data=st.data())
def test_epsilon_inverts_delta_long(mech, data):
    _epsilon_inverts_delta(mech, data)


@pytest.mark.audit
@pytest.mark.parametrize("mech", MECHANISMS, ids=repr)
@settings(_LONG, max_examples=200)
@given(data=st.data())
def test_exact_delta_bounds_monte_carlo_long(mech, data):
    _exact_bounds_monte_carlo(mech, data, size=1_000_000)
