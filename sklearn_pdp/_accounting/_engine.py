"""The engine: hockey-stick divergences, their inverse, and calibration roots.

A mechanism supplies, per direction, a *tails* function returning
``(log A, log B)`` (see the package docstring) and subclasses
:class:`PrivacyLoss`; this module turns it into delta(eps) and into
eps(delta) with one vectorised, safeguarded Newton search that always
returns an upper bound, and solves the calibrations of every mechanism
(a noise level as small as a budget allows) with :func:`largest_root`.
"""

from functools import lru_cache

import numpy as np
from scipy.interpolate import CubicSpline, RectBivariateSpline
from scipy.optimize import brentq
from scipy.special import log_ndtr, ndtri_exp

# Search limits of eps(delta).  A loss that still exceeds the target at
# _EPS_MAX is reported as +inf, which is always a valid (if useless) bound.
_EPS_MAX = 1e6
_RTOL = 1e-11
_ATOL = 1e-16
_MAX_ITER = 200
_NEWTON_STEPS = 40
_LOG_SQRT_2PI = 0.5 * np.log(2 * np.pi)
# Calls with at least this many rows at one delta (and gamma) start the
# search from a spline through exact epsilons on a grid of this many nodes
# for one row statistic, or per axis for two (see _spline_start).
_TABLE_MIN_ROWS = 2048
_TABLE_NODES = {1: 256, 2: 64}
_SPLINE_SHIFT = 1e-8

# log of the standard normal CDF, accurate in both tails
log_phi = log_ndtr


def _log1mexp(a):
    """log(1 - exp(a)) for a <= 0, stable at both ends (-inf for a >= 0)."""
    a = np.minimum(a, 0.0)
    out = np.empty_like(a)
    near = a > -np.log(2.0)
    with np.errstate(divide="ignore"):
        # each branch only where it is the accurate one (half the work)
        np.log(-np.expm1(a, where=near, out=out), where=near, out=out)
        np.log1p(-np.exp(a, where=~near, out=out), where=~near, out=out)
    return out


def log_gauss_mass(lo, hi):
    """log(Phi(hi) - Phi(lo)) for lo <= hi, computed in the thinner tail."""
    lo, hi = np.broadcast_arrays(np.asarray(lo, float), np.asarray(hi, float))
    # Phi(hi) - Phi(lo) = Phi(-lo) - Phi(-hi): use the side whose tails are small.
    flip = lo > 0
    a = np.where(flip, -hi, lo)
    b = np.where(flip, -lo, hi)
    lb = log_phi(b)
    with np.errstate(invalid="ignore"):
        return np.where(b <= a, -np.inf, lb + _log1mexp(log_phi(a) - lb))


def _log_delta(eps, log_a, log_b):
    """log(A - e^eps B), -inf when the difference is not positive."""
    with np.errstate(invalid="ignore"):
        diff = eps + log_b - log_a
        out = log_a + _log1mexp(diff)
    return np.where((diff >= 0) | np.isneginf(log_a), -np.inf, out)


def hockey_stick(tails, eps, size):
    """delta(eps) = max over directions of A(eps) - e^eps B(eps).

    Parameters
    ----------
    tails : sequence of callables
        One per direction; ``tails[k](eps, idx)`` returns ``(log A, log B)``
        for the instances ``idx`` (an integer index array) at ``eps``.
    eps : array-like
        Broadcast against ``size`` instances.
    size : int
        Number of instances.
    """
    eps = np.broadcast_to(np.asarray(eps, dtype=float), (size,)).copy()
    idx = np.arange(size)
    out = np.zeros(size)
    for tail in tails:
        log_a, log_b = tail(eps, idx)
        out = np.maximum(out, np.exp(_log_delta(eps, log_a, log_b)))
    return out


def _solve_direction(tail, log_target, size, start=None, floor=None):
    """Smallest eps >= 0 with A(eps) - e^eps B(eps) <= target, for one direction.

    Safeguarded Newton on the probit scale, f(eps) = Phi^{-1}(delta(eps)) -
    Phi^{-1}(target), which is nearly linear for the Gaussian-like losses of
    this package (exactly so for the Gaussian mechanism's tail), using
    d delta / d eps = -e^eps B.  A bracket [lo, hi] with delta(lo) > target >=
    delta(hi) is kept for every instance and the answer is ``hi``, so rounding
    can only make the reported epsilon larger.  ``start`` is an optional
    first guess per instance (a good one saves most of the iterations);
    with ``floor`` the result is max(floor, eps), found without solving for
    the instances whose eps is below their floor.
    """
    lo = np.zeros(size) if floor is None else floor.copy()
    hi = np.full(size, np.inf)
    q_target = ndtri_exp(log_target)
    log_target = np.broadcast_to(log_target, (size,))
    q_target = np.broadcast_to(q_target, (size,))
    x = np.zeros(size) if start is None else np.maximum(start, 0.0)
    if floor is not None:
        x = floor.copy()
    active = np.flatnonzero(np.isfinite(x))  # an infinite floor is the answer
    zero_tried = np.zeros(size, dtype=bool)
    for iteration in range(_MAX_ITER):
        if active.size == 0:
            break
        xa = x[active]
        zero_tried[active] |= xa == 0
        log_a, log_b = tail(xa, active)
        ld = _log_delta(xa, log_a, log_b)
        above = ld > log_target[active]
        lo[active] = np.where(above, xa, lo[active])
        hi[active] = np.where(above, hi[active], xa)
        la, ha = lo[active], hi[active]
        tol = _RTOL * la + _ATOL
        # Newton step, aimed half a tolerance above the estimated root so
        # that the next point is, most likely, a verified upper end.
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            q = ndtri_exp(np.minimum(ld, 0.0))
            log_slope = xa + log_b + 0.5 * q**2 + _LOG_SQRT_2PI
            step = (q - q_target[active]) * np.exp(-log_slope)
            guess = xa + step + 0.5 * tol
        # Done when the bracket is closed, or when a verified upper end is
        # within one tolerance of Newton's estimate of the root.
        done = ((ha - la) <= tol) | (~above & (-step <= tol))
        # a root at (or within a tolerance of) eps = 0 is found by trying 0
        # itself, not by halving towards it; a bracket that closes on
        # [0, tiny] (from a start just above 0) tries 0 too
        near_zero = (guess <= 2 * tol) | ((ha - la) <= tol)
        try_zero = near_zero & (la == 0) & (ha > 0) & ~zero_tried[active]
        done &= ~try_zero
        # past _NEWTON_STEPS only bisection: Newton can creep towards the
        # root from one side on a mixture of losses (AdaOPS)
        bad = ~np.isfinite(guess) | (guess <= la) | (guess >= ha) | (iteration >= _NEWTON_STEPS)
        fallback = np.where(
            np.isfinite(ha), 0.5 * (la + ha), np.maximum(2.0 * la, 1.0)
        )
        guess = np.where(try_zero, 0.0, np.where(bad, fallback, guess))
        give_up = ~np.isfinite(ha) & (la >= _EPS_MAX)
        keep = ~done & ~give_up
        x[active[keep]] = guess[keep]
        active = active[keep]
    else:  # pragma: no cover - bisection closes any finite bracket in ~60 steps
        raise RuntimeError("epsilon search did not converge")
    return hi


def epsilon_from_delta(tails, delta, size, start=None):
    """eps(delta) = min{eps >= 0 : delta(eps) <= delta}, +inf if none exists.

    The maximum over directions of each direction's own eps(delta), which is
    the same as inverting their maximum because every direction is
    non-increasing in eps.
    """
    delta = np.broadcast_to(np.asarray(delta, dtype=float), (size,))
    with np.errstate(divide="ignore"):
        log_target = np.log(delta)
    # The first direction is solved from ``start``; each further one only
    # where it exceeds the running maximum (usually one evaluation).
    out = _solve_direction(tails[0], log_target, size, start)
    for tail in tails[1:]:
        out = _solve_direction(tail, log_target, size, floor=out)
    return out


def _pick(tails, direction):
    """The tails functions of ``direction`` ("both": every direction's)."""
    if direction == "both":
        return list(tails.values())
    if direction not in tails:
        raise ValueError(
            f"direction must be 'both' or one of {sorted(tails)}, got {direction!r}"
        )
    return [tails[direction]]


def _flat(*arrays):
    """Broadcast to one shape and flatten; returns the shape and the arrays."""
    arrays = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in arrays))
    return arrays[0].shape, [np.ravel(a) for a in arrays]


def _shaped(values, shape):
    """``values`` in ``shape``: a float for a scalar input."""
    return float(values[0]) if shape == () else values.reshape(shape)


def _spline_start(exact, params, *coords):
    """First guesses of eps(delta) for rows with statistics ``coords`` (one
    or two arrays, in coordinates in which eps is smooth), from a cubic
    spline through the exact values ``exact(*params, *axes)`` on an even grid
    over their range; None for too few rows.

    Only a start: the search verifies every answer, so a poor guess costs
    iterations, never validity. A good one (about 1e-8 relative for the
    Gaussian mechanism, 1e-5 for OPS, except near kinks such as eps = 0)
    leaves two or three evaluations per row instead of five to seven. The
    grid's range is rounded outward to whole units, so that the chunks of
    one fit share one table (the last few are kept).
    """
    if coords[0].size < _TABLE_MIN_ROWS:
        return None
    bounds = tuple(
        (float(np.floor(c.min())), float(max(np.ceil(c.max()), np.floor(c.min()) + 1)))
        for c in coords
    )
    spline = _spline(exact, params, bounds)
    return None if spline is None else spline(*coords)


@lru_cache(maxsize=16)
def _spline(exact, params, bounds):
    """The spline of :func:`_spline_start`, through log(eps + 1e-8): that is
    nearly linear in the log coordinates, so that a wide range of epsilons
    does not make it ring. None if some node has no finite epsilon."""
    axes = [np.linspace(lo, hi, _TABLE_NODES[len(bounds)]) for lo, hi in bounds]
    grid = np.meshgrid(*axes, indexing="ij")
    values = exact(*params, *(g.ravel() for g in grid))
    if not np.all(np.isfinite(values)):
        return None
    values = np.log(values + _SPLINE_SHIFT).reshape(grid[0].shape)
    if len(bounds) == 1:
        spline = CubicSpline(axes[0], values)
    else:
        spline = RectBivariateSpline(*axes, values, s=0).ev
    low, high = values.min(), values.max()

    def guess(*coords):
        # ringing cannot take the guess beyond the range of the exact values
        return np.exp(np.clip(spline(*coords), low, high)) - _SPLINE_SHIFT

    return guess


class PrivacyLoss:
    """The privacy loss of one mechanism for a batch of instances.

    A subclass computes, from flat arrays of per-instance statistics, its
    ``tails`` (a dict from direction, "remove" for delta_PQ and "add" for
    delta_QP, to a function of ``(eps, idx)`` returning ``(log A, log B)``),
    the mask ``zero`` of instances that do not move the release (delta 0)
    and the mask ``infinite`` of those without a finite epsilon (delta 1),
    and passes them here; it may override :meth:`first_guess`, the start of
    the search for eps(delta). ``direction`` picks "both" (the maximum, the
    tight per-instance guarantee) or one of the directions.
    """

    def __init__(self, tails, zero, infinite, direction="both"):
        self.directions = _pick(tails, direction)
        self.zero, self.infinite = zero, infinite

    # The search aims this fraction below delta: for tails that are known
    # only to a relative accuracy near the target (objective perturbation).
    aim = 0.0

    def first_guess(self, delta):
        """Per-instance start of the search (None: from 0)."""
        return None

    def search_tails(self, delta):
        """The directions' tails for the search of eps(delta)."""
        return self.directions

    def delta(self, eps):
        """Tight delta at ``eps`` (an array of the batch's length)."""
        out = hockey_stick(self.directions, eps, eps.size)
        out[self.zero] = 0.0
        out[self.infinite] = 1.0
        return out

    def epsilon(self, delta):
        """Tight eps at ``delta`` (an array of the batch's length), an upper bound."""
        out = epsilon_from_delta(self.search_tails(delta), delta * (1.0 - self.aim),
                                 delta.size, self.first_guess(delta))
        out[self.zero] = 0.0
        out[self.infinite] = np.inf
        return out

    @classmethod
    def delta_of(cls, eps, *stats, **options):
        """``delta`` of broadcast arrays: a float for scalar inputs."""
        shape, (eps, *stats) = _flat(eps, *stats)
        return _shaped(cls(*stats, **options).delta(eps), shape)

    @classmethod
    def epsilon_of(cls, delta, *stats, **options):
        """``epsilon`` of broadcast arrays: a float for scalar inputs."""
        shape, (delta, *stats) = _flat(delta, *stats)
        return _shaped(cls(*stats, **options).epsilon(delta), shape)


def largest_root(excess, start=0.0, step=5.0, xtol=1e-13, lowest=-np.inf, verify=None):
    """Largest x with ``excess(x) <= 0`` for a non-decreasing ``excess``.

    The one root finder of the calibrations (x is the log of a noise level
    or of a ridge, oriented so that larger x costs more privacy): widens
    ``[start - step, start]`` by ``step`` until it brackets the root, solves
    with brentq to ``xtol``, then steps down (by doubling steps) until
    ``verify`` (default ``excess``) confirms the point, so the result is
    always on the valid side. A ValueError when even ``lowest`` exceeds.
    """
    verify = excess if verify is None else verify
    lo, hi = start - step, start
    while excess(hi) <= 0:
        lo, hi = hi, hi + step
    while excess(lo) > 0:
        if lo < lowest:
            raise ValueError("no point of the search range meets the target")
        lo, hi = lo - step, lo
    x = brentq(excess, lo, hi, xtol=xtol)
    down = xtol
    while verify(x) > 0:
        x, down = x - down, 2.0 * down
    return x
