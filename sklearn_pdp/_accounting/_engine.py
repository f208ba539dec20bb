"""The engine: hockey-stick divergences, their inverse, and calibration roots.

A mechanism supplies, per direction, a *tails* function returning
``(log A, log B)`` (see the package docstring) and subclasses
:class:`PrivacyLoss`; this module turns it into delta(eps) and into
eps(delta) with one vectorised, safeguarded Newton search that always
returns an upper bound, and solves the calibrations of every mechanism
(a noise level as small as a budget allows) with :func:`largest_root`.

Many rows at one delta (a fit's ``pdp_losses_``)
-------------------------------------------------
A fit asks for the epsilons of up to millions of rows, each described by
one or two statistics. Three pieces bring that to about one evaluation of
the tails per row, with every answer still verified:

1. *A start from a table* (:class:`PolyTable`): exact epsilons on a grid
   of the statistics, in coordinates where eps is smooth, interpolated by
   local polynomials (degree 5 through the six nodes around a cell: about
   1e-11 relative for most rows, measured in the tests). A table depends
   on delta and on the grid's range only (rounded outward to whole units so
   that the chunks of a fit share it), and is cached.
2. *Quick stages* (:func:`_quick_step`): the mechanism's tails in the
   linear domain as bounds ``A_lo <= A <= A_hi``, ``B_lo <= B <= B_hi``
   (cheap where a term is negligible: a Mills-ratio bound needs one
   ``exp``). A point x is an upper end when
   ``A_hi - e^x B_lo <= target`` (with a rounding slack, ``_ROUNDING``),
   and it is certified *tight* without
   a second evaluation by convexity: each direction's delta is, as a function
   of g = e^eps, the supremum over events S of the affine functions
   P(S) - g Q(S), hence convex with slope -B. Its tangent at x is below it,
   so no eps below ``x + log(1 - u)``, ``u = (target - D_lo(x)) / (e^x B_lo(x))``,
   can meet the target: the root is within ``-log(1 - u)`` of x. A row
   whose start is not certified takes a Newton step on g (which, by the
   same convexity, lands at or below the root: a margin from the size of
   the step puts it above) and is checked again.
3. *The safeguarded search* (:func:`_solve_direction`) on the few rows
   left (starts near a kink of eps, such as where it leaves 0, or terms
   the quick bounds cannot resolve), with the exact log-domain tails and
   the bracket the quick stages found.

Rows with equal statistics are not merged: finding them (a sort) costs
more than the one evaluation each of them takes.
"""

from functools import lru_cache

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from scipy.optimize import brentq
from scipy.special import log_ndtr, ndtr, ndtri_exp

# Search limits of eps(delta).  A loss that still exceeds the target at
# _EPS_MAX is reported as +inf, which is always a valid (if useless) bound.
_EPS_MAX = 1e6
_RTOL = 1e-11
_ATOL = 1e-16
_MAX_ITER = 200
_NEWTON_STEPS = 40
_LOG_SQRT_2PI = 0.5 * np.log(2 * np.pi)
# Calls with at least this many rows at one delta (and mechanism
# parameters) start from a table and take the quick stages.
_TABLE_MIN_ROWS = 2048
# Rows searched at once: the temporaries of a block stay in the cache.
_BLOCK = 16384
# Quick stages: the tolerance the tangent bound certifies (relative, and
# absolute near eps = 0, where rounding of A - e^eps B limits every method),
# their number, the rounding slack on A - e^eps B (one ulp of A + e^eps B
# per unit of 3 + |log A| + eps: the rounding of the linear terms and of
# the log-domain evaluation of delta, log A + log(1 - exp(eps + log B -
# log A)), whose logs carry ~|log A| ulps, so that both agree that an
# answer meets the target), and the largest eps they handle (e^eps stays
# far from overflow).
_QUICK_RTOL = 5e-10
_QUICK_ATOL = 5e-15
_QUICK_STAGES = 3
_ROUNDING = np.finfo(float).eps
_QUICK_EPS_MAX = 500.0
_TINY = 1e-300
# A table's start is raised by this much (relative and absolute): above
# the root by more than the interpolation error and the rounding slack for
# most rows, so that the first quick stage can verify and certify it.
_START_RTOL = 3e-11
_START_ATOL = _QUICK_ATOL
# Table nodes are solved this tightly, so that interpolation, not the
# nodes, limits a start.
_NODE_RTOL = 1e-14

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


def normal_tail_bounds(y, budget):
    """Bounds ``(lo, hi)`` on Phi(-y) for y >= 0, spending a special function
    only where it matters.

    Where the Mills-ratio bound Phi(-y) <= phi(y) / y is at most
    ``budget`` the bounds are [0, phi(y) / y] (one ``exp``); elsewhere both
    are Phi(-y) itself (``ndtr``, rows gathered). For the negligible second
    tail of a normal probability.
    """
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        hi = np.exp(-0.5 * y * y - _LOG_SQRT_2PI) / y
    lo = np.zeros_like(hi)
    exact = np.flatnonzero(~(hi <= budget))
    if exact.size:
        lo[exact] = hi[exact] = ndtr(-y[exact])
    return lo, hi


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


def _exact_step(tail, x, idx, target, log_target, lo, rtol):
    """One Newton step of the exact search at ``x`` (rows ``idx``).

    Newton on the probit scale, f(eps) = Phi^{-1}(delta(eps)) -
    Phi^{-1}(target), which is nearly linear for the Gaussian-like losses of
    this package (exactly so for the Gaussian mechanism's tail), using
    d delta / d eps = -e^eps B. Returns ``(above, below, done, guess,
    tol)``: x is a lower or an upper end, a verified upper end within a
    tolerance of Newton's estimate of the root, the next point (aimed half
    a tolerance above the estimate, so that it is, most likely, a verified
    upper end) and the tolerance.
    """
    log_a, log_b = tail(x, idx)
    ld = _log_delta(x, log_a, log_b)
    above = ld > log_target
    tol = rtol * lo + _ATOL
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        q = ndtri_exp(np.minimum(ld, 0.0))
        log_slope = x + log_b + 0.5 * q**2 + _LOG_SQRT_2PI
        step = (q - ndtri_exp(log_target)) * np.exp(-log_slope)
        guess = x + step + 0.5 * tol
    return above, ~above, ~above & (-step <= tol), guess, tol


def _quick_step(quick, x, idx, target, log_target, lo, rtol):
    """One quick stage at ``x`` (rows ``idx``): the certificate of the
    module docstring from the bounds ``(A_lo, A_hi, B_lo, B_hi) = quick(x,
    idx, target)``, and a Newton step on g = e^eps with a margin. Same
    returns as :func:`_exact_step`; a row is ``done`` only when x is a
    verified upper end certified tight (or x = 0 is verified)."""
    handled = x <= _QUICK_EPS_MAX
    if not handled.all():
        x = np.where(handled, x, 0.0)
    a_lo, a_hi, b_lo, b_hi = quick(x, idx, target)
    g = np.exp(x)
    gb_lo, gb_hi = g * b_lo, g * b_hi
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        slack = np.log(a_hi)
        np.abs(slack, out=slack)
        slack += 3.0 + x
        slack *= _ROUNDING
        np.minimum(slack, 1e-3, out=slack)
        slack *= a_hi + gb_hi
        slack += _TINY
        d_hi = a_hi - gb_lo
        d_hi += slack
        d_lo = a_lo - gb_hi
        d_lo -= slack
        below = handled & (d_hi <= target)
        above = handled & (d_lo > target)
        tol = _QUICK_RTOL * x + _QUICK_ATOL
        # the root is at least x + log(1 - u), u = (target - D_lo) / (g B_lo)
        gap = np.log1p((d_lo - target) / gb_lo)
        gap += tol
        done = below & ((x == 0) | ((gap >= 0) & (tol < x)))
        # Newton on g lands at or below the root; the margin covers its
        # error for Gaussian-like losses, about (z^2 / 2) step^2 / eps with
        # z^2 / 2 ~ |log delta| (the next stage checks it)
        d_hi += d_lo
        d_hi *= 0.5
        d_hi -= target
        gb_hi += gb_lo
        gb_hi *= 0.5
        step = np.log1p(d_hi / gb_hi)
        guess = x + step
        step *= step
        guess += ((1.0 - log_target) / np.maximum(guess, _TINY) + 1.0) * step
        guess += 0.25 * (_QUICK_RTOL * guess + _QUICK_ATOL)
    guess[~handled] = np.nan
    return above, below, done, guess, tol


def _solve_direction(tail, log_target, size, start=None, floor=None, quick=None,
                     rtol=_RTOL, index=None):
    """Smallest eps >= 0 with A(eps) - e^eps B(eps) <= target, for one direction.

    A bracket [lo, hi] with delta(lo) > target >= delta(hi) is kept for
    every instance and the answer is ``hi``, so rounding can only make the
    reported epsilon larger. ``start`` is an optional first guess per
    instance (a good one saves most of the iterations); with ``floor`` the
    result is max(floor, eps), found without solving for the instances whose
    eps is below their floor. With ``quick`` (bounds on the tails in the
    linear domain, see :func:`_quick_step`) the first ``_QUICK_STAGES``
    steps are quick stages and the exact search (:func:`_exact_step`)
    finishes the rows they leave; ``rtol`` is the exact search's tolerance.
    ``index`` maps the instances to the tails' rows (default: the same).
    The state of the rows still open is kept compact (one gather per
    iteration, no scatter until a row is done).
    """
    out = np.full(size, np.inf)
    x = np.zeros(size) if start is None else np.maximum(start, 0.0)
    lo = np.zeros(size)
    if floor is not None:
        x, lo = floor.copy(), floor.copy()
    with np.errstate(divide="ignore"):
        lt = np.broadcast_to(log_target, (size,))
        t = np.exp(lt)
    pos = np.arange(size)
    index = pos if index is None else index
    hi = np.full(size, np.inf)
    tried = np.zeros(size, dtype=bool)
    finite = np.isfinite(x)  # an infinite floor is the answer
    if not finite.all():
        pos, x, lo, hi, tried, t, lt = (a[finite] for a in (pos, x, lo, hi, tried, t, lt))
    stages = 0 if quick is None else _QUICK_STAGES
    for iteration in range(_MAX_ITER):
        if pos.size == 0:
            break
        tried |= x == 0
        step = (_quick_step, quick) if iteration < stages else (_exact_step, tail)
        above, below, done, guess, tol = step[0](step[1], x, index[pos], t, lt, lo, rtol)
        np.copyto(lo, x, where=above)
        np.copyto(hi, x, where=below)
        # Done when the bracket is closed, or when the step says so.
        closed = (hi - lo) <= tol
        done |= closed
        # a root at (or within a tolerance of) eps = 0 is found by trying 0
        # itself, not by halving towards it; a bracket that closes on
        # [0, tiny] (from a start just above 0) tries 0 too
        try_zero = ((guess <= 2 * tol) | closed) & (lo == 0) & (hi > 0) & ~tried
        done &= ~try_zero
        give_up = ~np.isfinite(hi) & (lo >= _EPS_MAX)
        finished = done | give_up
        out[pos[finished]] = hi[finished]
        keep = ~finished
        pos, x, lo, hi, tried, t, lt, guess, try_zero = (
            a[keep] for a in (pos, x, lo, hi, tried, t, lt, guess, try_zero))
        # past _NEWTON_STEPS only bisection: Newton can creep towards the
        # root from one side on a mixture of losses (AdaOPS)
        bad = ~np.isfinite(guess) | (guess <= lo) | (guess >= hi) | (iteration >= _NEWTON_STEPS)
        fallback = np.where(np.isfinite(hi), 0.5 * (lo + hi), np.maximum(2.0 * lo, 1.0))
        x = np.where(try_zero, 0.0, np.where(bad, fallback, guess))
    else:  # pragma: no cover - bisection closes any finite bracket in ~60 steps
        raise RuntimeError("epsilon search did not converge")
    return out


def epsilon_from_delta(tails, delta, size, start=None, quick=None, rtol=_RTOL, index=None):
    """eps(delta) = min{eps >= 0 : delta(eps) <= delta}, +inf if none exists.

    The maximum over directions of each direction's own eps(delta), which is
    the same as inverting their maximum because every direction is
    non-increasing in eps. ``quick``: per direction, bounds on the tails in
    the linear domain for the quick stages (see :func:`_solve_direction`).
    ``index``: the instances' indices in the tails' arrays (default
    ``arange(size)``).
    """
    delta = np.broadcast_to(np.asarray(delta, dtype=float), (size,))
    with np.errstate(divide="ignore"):
        log_target = np.log(delta)
    quick = [None] * len(tails) if quick is None else quick
    # The first direction is solved from ``start``; each further one only
    # where it exceeds the running maximum (usually one evaluation).
    out = _solve_direction(tails[0], log_target, size, start, quick=quick[0], rtol=rtol,
                           index=index)
    for tail, bounds in zip(tails[1:], quick[1:]):
        out = _solve_direction(tail, log_target, size, floor=out, quick=bounds, rtol=rtol,
                               index=index)
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
    """Broadcast to one shape and flatten; returns the shape and the arrays
    (a one-dimensional broadcast scalar stays a view, not a copy)."""
    arrays = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in arrays))
    return arrays[0].shape, [a if a.ndim == 1 else np.ravel(a) for a in arrays]


def _shaped(values, shape):
    """``values`` in ``shape``: a float for a scalar input."""
    return float(values[0]) if shape == () else values.reshape(shape)


class PolyTable:
    """Piecewise-polynomial interpolation on a uniform grid of one or two axes.

    ``values[i]`` (``values[i, j]``) is the value at ``lows + (i, j) *
    steps``. The cell between two neighbouring nodes gets the polynomial of
    degree ``degree`` through the ``degree + 1`` nodes around it (per axis,
    tensor product in two), stored in the power basis of the position in the
    cell, one coefficient-major array: an evaluation gathers
    ``(degree + 1)^dims`` numbers per point and runs Horner's scheme on
    contiguous arrays. Non-finite node values make their cells' values NaN.
    """

    def __init__(self, lows, steps, values, degree=5):
        values = np.asarray(values, dtype=float)
        self.dims = values.ndim
        self.npts = degree + 1
        # the cell [c, c + 1] uses the nodes c - off .. c - off + degree
        self.off = (degree - 1) // 2
        self.lows = np.asarray(lows, dtype=float) + self.off * np.asarray(steps, dtype=float)
        self.steps = np.asarray(steps, dtype=float)
        self.cells = np.array(values.shape) - degree
        if np.any(self.cells < 1):
            raise ValueError("a table needs more nodes than its degree on every axis")
        # Lagrange through the points -off .. degree - off, in the power
        # basis, highest power first (Horner's order)
        basis = np.linalg.inv(np.vander(np.arange(self.npts) - self.off, increasing=True))[::-1]
        windows = sliding_window_view(values, (self.npts,) * self.dims)
        with np.errstate(invalid="ignore"):
            if self.dims == 1:
                coef = np.einsum("pi,ai->pa", basis, windows)
            else:
                coef = np.einsum("pi,abij,qj->pqab", basis, windows, basis)
        self.coef = np.ascontiguousarray(coef.reshape(self.npts ** self.dims, -1))

    def __call__(self, *coords):
        """Interpolated values at ``coords`` (one array per axis); NaN outside
        the cells and at NaN coordinates."""
        flat = None
        inside = True
        fracs = []
        for axis, c in enumerate(coords):
            t = (c - self.lows[axis]) / self.steps[axis]
            cell = np.floor(t)
            fracs.append(t - cell)
            inside = inside & (cell >= 0) & (cell < self.cells[axis])
            cell[~inside] = 0.0  # also NaN coordinates
            cell = cell.astype(np.intp)
            flat = cell if flat is None else flat * self.cells[axis] + cell
        n = self.npts
        with np.errstate(invalid="ignore"):  # cells with infinite nodes
            if self.dims == 1:
                out = self._horner(0, flat, fracs[0])
            else:
                out = self._horner(0, flat, fracs[1])
                for p in range(1, n):
                    out *= fracs[0]
                    out += self._horner(p * n, flat, fracs[1])
        out[~inside] = np.nan
        return out

    def _horner(self, first, flat, frac):
        """The polynomial in ``frac`` whose coefficients (highest power first)
        are ``coef[first:first + npts]``, at the cells ``flat``."""
        rows = self.coef
        out = np.take(rows[first], flat)
        term = np.empty_like(out)
        for k in range(1, self.npts):
            out *= frac
            out += np.take(rows[first + k], flat, out=term)
        return out


@lru_cache(maxsize=16)
def _cached_table(nodes, params, ranges, step, degree):
    """The :class:`PolyTable` of log eps through ``nodes(*params, *grid)``
    (exact epsilons, solved to ``_NODE_RTOL``) on ``ranges``."""
    axes = [np.arange(lo, hi + 0.5 * step, step) for lo, hi in ranges]
    grid = np.meshgrid(*axes, indexing="ij")
    values = nodes(*params, *(g.ravel() for g in grid))
    with np.errstate(divide="ignore"):
        values = np.log(values).reshape(grid[0].shape)
    return PolyTable([lo for lo, _ in ranges], [step] * len(axes), values, degree)


def table_for(nodes, params, coords, step=1 / 16, degree=5):
    """The cached :class:`PolyTable` of log eps(delta) through the exact
    epsilons ``nodes(*params, *axes)``, over the range of the rows'
    ``coords`` (one or two arrays, in coordinates in which log eps is
    smooth; NaN ignored) rounded outward to whole units, so that the chunks
    of one fit share it."""
    off = (degree - 1) // 2
    ranges = []
    for c in coords:
        lo, hi = np.nanmin(c), np.nanmax(c)
        if not np.isfinite(lo):  # no row with a coordinate
            lo = hi = 0.0
        lo = float(np.floor(lo))
        hi = float(max(np.ceil(hi), lo + 1.0))
        # padded by the nodes the polynomials around the edge cells need
        ranges.append((lo - off * step, hi + (degree - off) * step))
    return _cached_table(nodes, params, tuple(ranges), step, degree)


def _raised(log_eps):
    """A table's start: its eps raised by ``_START_RTOL`` and ``_START_ATOL``
    (above the root for most rows, see there); 0 where it has no value."""
    with np.errstate(over="ignore", invalid="ignore"):
        start = np.exp(log_eps)
        start *= 1.0 + _START_RTOL
        start += _START_ATOL
    start[~np.isfinite(start)] = 0.0
    return start


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

    For many rows at one delta (at least ``_TABLE_MIN_ROWS``, and ``table``
    true) a subclass that passes ``quick`` (per direction, a function of
    ``(eps, idx, target)`` returning bounds ``(A_lo, A_hi, B_lo, B_hi)`` in
    the linear domain, good enough to compare delta with ``target``) and
    overrides :meth:`table_guess` gets the quick stages
    of the module docstring, started from its table.
    """

    def __init__(self, tails, zero, infinite, direction="both", quick=None, table=True):
        self.directions = _pick(tails, direction)
        self.quick = None if quick is None else _pick(quick, direction)
        self.zero, self.infinite, self.table = zero, infinite, table

    # The search aims this fraction below delta: for tails that are known
    # only to a relative accuracy near the target (objective perturbation).
    aim = 0.0

    def first_guess(self, delta):
        """Per-instance start of the search (None: from 0)."""
        return None

    def table_coords(self, delta):
        """For many rows at the scalar ``delta``: ``(nodes, params, coords)``
        of a table start (:func:`table_for`), ``coords`` one or two arrays
        over all rows (NaN: the row starts at 0); None: no table."""
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

    def epsilon(self, delta, rtol=_RTOL):
        """Tight eps at ``delta`` (an array of the batch's length), an upper bound.

        ``rtol``: tolerance of the exact search (tighter for table nodes).
        """
        spec, quick = None, None
        if (self.table and self.quick is not None and delta.size >= _TABLE_MIN_ROWS
                and np.ptp(delta) == 0):
            spec = self.table_coords(float(delta[0]))
        if spec is None:
            start = self.first_guess(delta)
        else:
            quick, (nodes, params, coords) = self.quick, spec
            table, start = table_for(nodes, params, coords), np.empty(delta.size)
        tails = self.search_tails(delta)
        target = delta * (1.0 - self.aim) if self.aim else delta
        # blocks of rows: the search's temporaries stay in the cache
        out = np.empty(delta.size)
        for first in range(0, delta.size, _BLOCK):
            rows = slice(first, min(first + _BLOCK, delta.size))
            if spec is not None:
                start[rows] = _raised(table(*(c[rows] for c in coords)))
            out[rows] = epsilon_from_delta(
                tails, target[rows], rows.stop - first, None if start is None else start[rows],
                quick=quick, rtol=rtol, index=np.arange(first, rows.stop))
        out[self.zero] = 0.0
        out[self.infinite] = np.inf
        return out

    @classmethod
    def delta_of(cls, eps, *stats, **options):
        """``delta`` of broadcast arrays: a float for scalar inputs."""
        shape, (eps, *stats) = _flat(eps, *stats)
        return _shaped(cls(*stats, **options).delta(eps), shape)

    @classmethod
    def epsilon_of(cls, delta, *stats, rtol=_RTOL, **options):
        """``epsilon`` of broadcast arrays: a float for scalar inputs."""
        shape, (delta, *stats) = _flat(delta, *stats)
        return _shaped(cls(*stats, **options).epsilon(delta, rtol), shape)


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
