"""The engine: hockey-stick divergences, their inverse, and calibration roots.

A mechanism supplies, per direction, a *tails* function returning
``(log A, log B)`` (see the package docstring) and subclasses
:class:`PrivacyLoss`; this module turns it into delta(eps) and into
eps(delta) with one vectorised, safeguarded Newton search that always
returns an upper bound (:func:`_exact_search`), and solves the calibrations
of every mechanism (a noise level as small as a budget allows) with
:func:`largest_root`.

Many rows at one delta (a fit's ``pdp_losses_``)
-------------------------------------------------
A fit asks for the epsilons of up to millions of rows, each described by
one or two statistics. Three pieces bring that to about one evaluation of
the tails per row, every answer still a verified upper bound within
``_QUICK_RTOL`` (relative) or ``_QUICK_ATOL`` (absolute) of the root:

1. *A start from a table* (:class:`PolyTable`): exact epsilons (solved to
   ``_NODE_RTOL``) on a grid of the statistics, in coordinates where log
   eps is smooth, interpolated by local polynomials (degree 5 through the
   six nodes around a cell). A table depends on delta and on the grid's
   range only (rounded outward to whole units, so that the chunks of a fit
   share it, and coarsened beyond ``_TABLE_MAX_NODES``), and is cached. The
   start is only a guess: a poor one costs stages, never validity.
2. *Quick stages* (:func:`_quick_step`), on blocks of ``_BLOCK`` rows: the
   mechanism's tails in the linear domain as bounds ``A_lo <= A <= A_hi``,
   ``B_lo <= B <= B_hi`` (a negligible term costs one ``exp``, a Mills
   ratio, instead of a special function). A point x is an upper end when
   ``A_hi - e^x B_lo <= target`` for every direction (with a rounding
   slack, ``_ROUNDING``), and it is certified *tight* without a second
   evaluation by convexity: each direction's delta is, as a function of
   g = e^eps, the supremum over events S of the affine functions
   P(S) - g Q(S), hence convex with slope -B. Its tangent at x lies below
   it, so no eps below ``x + log(1 - u)``, ``u = (target - D_lo(x)) /
   (e^x B_lo(x))``, meets the target: that direction's root, hence the
   maximum over directions, is within ``-log(1 - u)`` of x. A row not
   certified takes a Newton step (on g near the root, where by the same
   convexity it lands at or below it and a margin from the size of the
   step puts it above; on the probit scale of delta from afar) and is
   checked again.
3. *The exact search* on the rows the quick stages leave (starts near a
   kink of eps, such as where it leaves 0, or terms the bounds cannot
   resolve), all blocks together, from the last point tried.

Validity rests on the verification, not on the table or the steps; the
rounding slack makes the linear-domain verdict agree with the log-domain
evaluation of delta that the tests (and :meth:`PrivacyLoss.delta`) use.
Rows with equal statistics are not merged: finding them (a sort) costs more
than the one evaluation each of them takes.
"""

from functools import lru_cache

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from scipy.optimize import brentq
from scipy.special import log_ndtr, ndtr, ndtri, ndtri_exp

# Search limits of eps(delta).  A loss that still exceeds the target at
# _EPS_MAX is reported as +inf, which is always a valid (if useless) bound.
_EPS_MAX = 1e6
_RTOL = 1e-11
_ATOL = 1e-16
_MAX_ITER = 200
_NEWTON_STEPS = 40
_LOG_SQRT_2PI = 0.5 * np.log(2 * np.pi)
# Calls with at least this many rows at one delta start from a table (or
# the mechanism's fast start) and take the quick stages.
_TABLE_MIN_ROWS = 2048
# Largest number of nodes of a table (exact epsilons: ~5 us each to build).
_TABLE_MAX_NODES = 2**16
# Rows searched at once: the temporaries of a block stay in the cache.
_BLOCK = 16384
# Quick stages: the tolerance the tangent bound certifies (relative: the
# plain search stops within ~1e-11 of the root, and an answer must not
# depend on which of the two a row took by more than 1e-10, e.g. a Dask
# fit's small chunk against the same rows in memory; absolute near eps = 0,
# where rounding of A - e^eps B limits every method), their number, the
# rounding slack on A - e^eps B (one ulp of A + e^eps B per unit of
# 3 + |log A| + eps: the rounding of the linear terms and of the log-domain
# evaluation of delta, log A + log(1 - exp(eps + log B - log A)), whose logs
# carry ~|log A| ulps, so that both agree that an answer meets the target),
# and the largest eps they handle (e^eps stays far from overflow).
_QUICK_RTOL = 8e-11
_QUICK_ATOL = 5e-15
_QUICK_STAGES = 3
_ROUNDING = np.finfo(float).eps
_QUICK_EPS_MAX = 500.0
# A quick stage's Newton step works on g = e^eps when it is at most this
# fraction of eps, on the probit scale of delta otherwise.
_NEAR = 1e-3
_TINY = 1e-300
# A table's start is raised by this much (relative and absolute): above
# the root by more than the interpolation error and the rounding slack, and
# within the tolerance, for most rows, so that the first quick stage can
# verify and certify it (first-stage rates on fits' statistics: Gaussian
# ~100%, chi-square 86%, OPS 68% at d = 10 (many losses near 0, where the
# absolute tolerance is about three times the slack) and 97% at d = 100).
_START_RTOL = 3e-11
_START_ATOL = 0.5 * _QUICK_ATOL
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


def normal_tail_bounds(budget, *ys):
    """Bounds ``(lo, hi)`` on Phi(-y) for each of the arrays ``ys`` (y >= 0),
    spending special functions only where they matter.

    Where the Mills-ratio bound phi(y) / y at the smallest of the ``ys`` is
    at most ``budget``, it bounds them all: [0, phi(y) / y] (one ``exp``);
    elsewhere both bounds are Phi(-y) itself (``ndtr``, rows gathered). For
    the negligible far tails of normal probabilities.
    """
    y = ys[0] if len(ys) == 1 else np.minimum(*ys)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        hi = np.exp(-0.5 * y * y - _LOG_SQRT_2PI)
        hi /= y
    exact = np.flatnonzero(~(hi <= budget))
    out = []
    for y in ys:
        lo, upper = np.zeros_like(hi), hi.copy()
        if exact.size:
            lo[exact] = upper[exact] = ndtr(-y[exact])
        out.append((lo, upper))
    return out


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


def _exact_step(tail, x, idx, target, log_target, lo, tols):
    """One Newton step of the exact search at ``x`` (rows ``idx``).

    Newton on the probit scale, f(eps) = Phi^{-1}(delta(eps)) -
    Phi^{-1}(target), which is nearly linear for the Gaussian-like losses of
    this package (exactly so for the Gaussian mechanism's tail), using
    d delta / d eps = -e^eps B. Returns ``(above, below, done, guess,
    tol)``: x is a lower or an upper end, a verified upper end within a
    tolerance of Newton's estimate of the root, the next point (aimed half
    a tolerance above the estimate, so that it is, most likely, a verified
    upper end) and the tolerance, ``tols = (rtol, atol)`` relative to the
    lower end.
    """
    log_a, log_b = tail(x, idx)
    ld = _log_delta(x, log_a, log_b)
    above = ld > log_target
    tol = tols[0] * lo + tols[1]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        q = ndtri_exp(np.minimum(ld, 0.0))
        log_slope = x + log_b + 0.5 * q**2 + _LOG_SQRT_2PI
        step = (q - ndtri_exp(log_target)) * np.exp(-log_slope)
        guess = x + step + 0.5 * tol
    return above, ~above, ~above & (-step <= tol), guess, tol


def _quick_step(quick, x, idx, target, log_target, lo, tols):
    """One quick stage at ``x`` (rows ``idx``) for the maximum of the roots
    of the directions whose bounds ``(A_lo, A_hi, B_lo, B_hi)`` are the
    list ``quick(x, idx, target)``: x is verified when it is for every
    direction, and certified tight when the tangent bound of one of them
    puts its root (hence the maximum) within the tolerance of x (module
    docstring). The next point is the largest of the directions' Newton
    steps on g = e^eps, with a margin. Same returns as :func:`_exact_step`;
    a row is ``done`` only when x is verified and certified (or x = 0 is
    verified)."""
    handled = x <= _QUICK_EPS_MAX
    if not handled.all():
        x = np.where(handled, x, 0.0)
    g = np.exp(x)
    tol = _QUICK_RTOL * x + _QUICK_ATOL
    below, above, close, terms = handled.copy(), np.zeros(x.shape, bool), x == 0, []
    for a_lo, a_hi, b_lo, b_hi in quick(x, idx, target):
        gb_lo, gb_hi = g * b_lo, g * b_hi
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            # rounding slack per unit of the terms of each bound (not of a
            # loose bound such as B <= 1: the slack of D_hi must stay small)
            scale = np.log(a_hi)
            np.abs(scale, out=scale)
            scale += 3.0 + x
            scale *= _ROUNDING
            np.minimum(scale, 1e-3, out=scale)
            d_hi = a_hi - gb_lo
            d_hi += scale * (a_hi + gb_lo) + _TINY
            d_lo = a_lo - gb_hi
            d_lo -= scale * (a_lo + gb_hi) + _TINY
            below &= d_hi <= target
            above |= d_lo > target
            # this direction's root is at least x + log(1 - u),
            # u = (target - D_lo) / (g B_lo)
            gap = np.log1p((d_lo - target) / gb_lo)
            gap += tol
            close |= (gap >= 0) & (tol < x)
        terms.append((d_lo, d_hi, gb_lo, gb_hi))
    done = below & close
    guess = np.full(x.shape, np.nan)
    rows = np.flatnonzero(handled & ~done)
    if rows.size:
        xr, tr = x[rows], target[rows]
        step = np.full(rows.size, -np.inf)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            for d_lo, d_hi, gb_lo, gb_hi in terms:
                mid = 0.5 * (d_lo[rows] + d_hi[rows])
                slope = 0.5 * (gb_lo[rows] + gb_hi[rows])  # -d delta / d eps
                # Newton on g: near the root it lands at or below it, and
                # the margin below covers its error; from afar, Newton on
                # the probit scale (nearly linear for Gaussian-like losses)
                near = np.log1p((mid - tr) / slope)
                q = ndtri(np.clip(mid, 0.0, 1.0))
                far = (q - ndtri(tr)) * np.exp(-0.5 * q * q - _LOG_SQRT_2PI) / slope
                far[~np.isfinite(far)] = -np.inf
                np.fmax(step, np.where(np.abs(near) <= _NEAR * xr, near, far), out=step)
            # the margin: Newton's error for Gaussian-like losses, about
            # (z^2 / 2) step^2 / eps with z^2 / 2 ~ |log delta| (the next
            # stage checks it)
            new = xr + step
            step *= step
            new += ((1.0 - log_target[rows]) / np.maximum(new, _TINY) + 1.0) * step
            new += 0.25 * (_QUICK_RTOL * new + _QUICK_ATOL)
        guess[rows] = new
    return above & handled, below, done, guess, tol


class _Open:
    """The rows of one direction's search still open, kept compact: their
    positions ``pos`` in the output, the current point ``x``, the bracket
    ``[lo, hi]`` (delta(lo) > target >= delta(hi)), whether 0 was tried, and
    the target and its log. Every step gathers nothing and scatters only the
    rows it finishes."""

    fields = ("pos", "x", "lo", "hi", "tried", "t", "lt")
    # while the rows are a whole slice of the instances, the mechanism's
    # arrays are read through the slice (views, not gathers)
    span = None

    def __init__(self, pos, x, lo, log_target, span=None):
        self.pos, self.x, self.lo, self.span = pos, x, lo, span
        self.hi = np.full(pos.size, np.inf)
        self.tried = np.zeros(pos.size, dtype=bool)
        self.lt = np.broadcast_to(log_target, pos.shape)
        with np.errstate(divide="ignore"):
            self.t = np.exp(self.lt)
        finite = np.isfinite(x)  # an infinite floor is the answer
        if not finite.all():
            self.keep(finite)

    def keep(self, mask):
        self.span = None
        for name in self.fields:
            setattr(self, name, getattr(self, name)[mask])

    @classmethod
    def merge(cls, parts):
        merged = cls.__new__(cls)
        for name in cls.fields:
            setattr(merged, name, np.concatenate([getattr(p, name) for p in parts]))
        return merged

    def step(self, kind, fn, index, out, tols, iteration):
        """One step of ``kind`` (:func:`_quick_step` or :func:`_exact_step`)
        on every open row: the bracket is updated, finished rows write their
        upper end to ``out``, the others move to their next point."""
        rows = index[self.pos] if self.span is None else self.span
        above, below, done, guess, tol = kind(fn, self.x, rows, self.t, self.lt, self.lo, tols)
        np.copyto(self.lo, self.x, where=above)
        np.copyto(self.hi, self.x, where=below)
        lo, hi = self.lo, self.hi
        # Done when the bracket is closed, or when the step says so.
        closed = (hi - lo) <= tol
        done |= closed
        # a root at (or within a tolerance of) eps = 0 is found by trying 0
        # itself, not by halving towards it; a bracket that closes on
        # [0, tiny] (from a start just above 0) tries 0 too
        self.tried |= self.x == 0
        try_zero = ((guess <= 2 * tol) | closed) & (lo == 0) & (hi > 0) & ~self.tried
        done &= ~try_zero
        finished = done | (~np.isfinite(hi) & (lo >= _EPS_MAX))
        out[self.pos[finished]] = hi[finished]
        if finished.any():
            keep = ~finished
            self.keep(keep)
            guess, try_zero = guess[keep], try_zero[keep]
            lo, hi = self.lo, self.hi
        # past _NEWTON_STEPS only bisection: Newton can creep towards the
        # root from one side on a mixture of losses (AdaOPS)
        bad = ~np.isfinite(guess) | (guess <= lo) | (guess >= hi) | (iteration >= _NEWTON_STEPS)
        # a wide bracket is halved on the log scale (a huge budget gives
        # losses in the thousands, and a Newton step may have set hi near
        # 1e30: halving linearly would take a hundred steps)
        with np.errstate(invalid="ignore", over="ignore"):
            middle = np.where((lo > 0) & (hi > 4.0 * lo), np.sqrt(lo * hi), 0.5 * (lo + hi))
        fallback = np.where(np.isfinite(hi), middle, np.maximum(2.0 * lo, 1.0))
        self.x = np.where(try_zero, 0.0, np.where(bad, fallback, guess))


def _exact_search(tails, log_target, index, start, tols=(_RTOL, _ATOL), bracket=None):
    """eps(delta) of the instances ``index`` by the exact steps, every
    direction: the first from ``start`` (None: 0), each further one only
    where it exceeds the running maximum, from there (usually one step).
    ``tols``: (rtol, atol) of the steps; ``bracket``: ends ``(lo, hi)`` of
    the maximum over directions already known (valid for the first
    direction's search too: it then finds max(its root, lo), and the
    maximum is unchanged)."""
    out = np.full(index.size, np.inf)
    for number, tail in enumerate(tails):
        if number == 0:
            lo = np.zeros(index.size) if bracket is None else bracket[0].copy()
            # (an infinite start would read as an infinite floor: from 0)
            x = lo.copy() if start is None else np.where(np.isfinite(start),
                                                         np.maximum(start, lo), lo)
        else:
            x, lo = out.copy(), out.copy()
        open_rows = _Open(np.arange(index.size), x, lo, log_target)
        if number == 0 and bracket is not None:
            open_rows.hi = bracket[1].copy()
        for iteration in range(_MAX_ITER):
            if open_rows.pos.size == 0:
                break
            open_rows.step(_exact_step, tail, index, out, tols, iteration)
        else:  # pragma: no cover - bisection closes any finite bracket in ~60 steps
            raise RuntimeError("epsilon search did not converge")
    return out


def _search(tails, quick, log_target, size, starts, rtol=_RTOL, block=_BLOCK,
            stages=_QUICK_STAGES):
    """eps(delta) of ``size`` instances, every direction, into one array.

    ``starts(rows)``: the first guesses of the rows of a slice (None: 0).
    Without ``quick`` (bounds of every direction, :func:`_quick_step`),
    :func:`_exact_search` (relative tolerance ``rtol``). With it, the rows
    are taken in blocks of ``block`` through ``stages`` quick stages (all
    directions at once); the rows they leave, from all blocks, are finished
    together by the exact search (its cost is mostly per step, not per row)
    from the last point and bracket the quick stages found, to the quick
    stages' tolerance.
    """
    log_target = np.broadcast_to(log_target, (size,))
    index = np.arange(size)
    if quick is None:
        return _capped(_exact_search(tails, log_target, index, starts(slice(0, size)),
                                     (rtol, _ATOL)))
    out = np.full(size, np.inf)
    left = []
    for first in range(0, size, block):
        rows = slice(first, min(first + block, size))
        start = starts(rows)
        x = np.zeros(rows.stop - first) if start is None else np.where(
            np.isfinite(start), np.maximum(start, 0.0), 0.0)
        part = _Open(index[rows], x, np.zeros(x.size), log_target[rows], rows)
        for stage in range(stages):
            if part.pos.size == 0:
                break
            part.step(_quick_step, quick, index, out, None, stage)
        left.append(part)
    rest = _Open.merge(left)
    if rest.pos.size:
        out[rest.pos] = _exact_search(tails, log_target[rest.pos], rest.pos, rest.x,
                                      (_QUICK_RTOL, _QUICK_ATOL), (rest.lo, rest.hi))
    return _capped(out)


def _capped(out):
    """+inf beyond the search limit ``_EPS_MAX`` (whatever the start)."""
    out[out > _EPS_MAX] = np.inf
    return out


def epsilon_from_delta(tails, delta, size, start=None):
    """eps(delta) = min{eps >= 0 : delta(eps) <= delta}, +inf if none exists.

    The maximum over directions of each direction's own eps(delta), which is
    the same as inverting their maximum because every direction is
    non-increasing in eps. A bracket [lo, hi] with delta(lo) > target >=
    delta(hi) is kept for every instance and the answer is ``hi``, so
    rounding can only make the reported epsilon larger. ``start``: a first
    guess per instance (a good one saves most of the iterations).
    """
    delta = np.broadcast_to(np.asarray(delta, dtype=float), (size,))
    with np.errstate(divide="ignore"):
        log_target = np.log(delta)
    return _capped(_exact_search(tails, log_target, np.arange(size), start))


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
    degree ``degrees[axis]`` through the ``degree + 1`` nodes around it (per
    axis, tensor product in two), stored in the power basis of the position
    in the cell, one row of coefficients per cell: an evaluation gathers
    the rows of its points (one ``take``, a few cache lines per point: a
    table of tens of thousands of cells is not in the cache) and runs
    Horner's scheme on their columns. Non-finite node values make their
    cells' values NaN.
    """

    def __init__(self, lows, steps, values, degrees):
        values = np.asarray(values, dtype=float)
        self.dims = values.ndim
        degrees = np.broadcast_to(degrees, (self.dims,))
        self.npts = tuple(int(d) + 1 for d in degrees)
        # the cell [c, c + 1] uses the nodes c - off .. c - off + degree
        off = (degrees - 1) // 2
        self.lows = np.asarray(lows, dtype=float) + off * np.asarray(steps, dtype=float)
        self.steps = np.asarray(steps, dtype=float)
        self.cells = np.array(values.shape) - degrees
        if np.any(self.cells < 1):
            raise ValueError("a table needs more nodes than its degree on every axis")
        # Lagrange through the points -off .. degree - off, in the power
        # basis, highest power first (Horner's order)
        basis = [np.linalg.inv(np.vander(np.arange(n) - o, increasing=True))[::-1]
                 for n, o in zip(self.npts, off)]
        windows = sliding_window_view(values, self.npts)
        with np.errstate(invalid="ignore"):
            if self.dims == 1:
                coef = np.einsum("pi,ai->ap", basis[0], windows)
            else:
                coef = np.einsum("pi,abij,qj->abpq", basis[0], windows, basis[1])
        self.coef = np.ascontiguousarray(coef.reshape(-1, np.prod(self.npts)))

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
        rows = np.take(self.coef, flat, axis=0)
        with np.errstate(invalid="ignore"):  # cells with infinite nodes
            if self.dims == 1:
                out = _horner(rows, 0, self.npts[0], fracs[0])
            else:
                n = self.npts[1]
                out = _horner(rows, 0, n, fracs[1])
                for p in range(1, self.npts[0]):
                    out *= fracs[0]
                    out += _horner(rows, p * n, n, fracs[1])
        out[~inside] = np.nan
        return out


def _horner(rows, first, n, frac):
    """The polynomial in ``frac`` whose coefficients (highest power first)
    are the columns ``first .. first + n - 1`` of ``rows``."""
    out = rows[:, first].copy()
    for k in range(first + 1, first + n):
        out *= frac
        out += rows[:, k]
    return out


@lru_cache(maxsize=4)
def _cached_table(nodes, params, ranges, steps, degrees):
    """The :class:`PolyTable` of log eps through ``nodes(*params, *grid)``
    (exact epsilons, solved to ``_NODE_RTOL``) on ``ranges``. A fit uses one;
    an OPS table takes 5-7 MB (36 coefficients for each of ~20000 cells), so
    only a few are kept."""
    axes = [np.arange(lo, hi + 0.5 * step, step) for (lo, hi), step in zip(ranges, steps)]
    grid = np.meshgrid(*axes, indexing="ij")
    values = nodes(*params, *(g.ravel() for g in grid))
    with np.errstate(divide="ignore"):
        values = np.log(values).reshape(grid[0].shape)
    return PolyTable([lo for lo, _ in ranges], steps, values, degrees)


def table_for(nodes, params, coords, steps=1 / 16, degrees=5):
    """The cached :class:`PolyTable` of log eps(delta) through the exact
    epsilons ``nodes(*params, *axes)``, over the range of the rows'
    ``coords`` (one or two arrays, in coordinates in which log eps is
    smooth; NaN ignored) rounded outward to whole units, so that the chunks
    of one fit share it; ``steps`` and ``degrees``: of the grid and of the
    polynomials, per axis."""
    steps = np.broadcast_to(np.asarray(steps, dtype=float), (len(coords),)).copy()
    degrees = tuple(int(d) for d in np.broadcast_to(degrees, (len(coords),)))
    spans = []
    for c in coords:
        lo, hi = np.nanmin(c), np.nanmax(c)
        if not np.isfinite(lo):  # no row with a coordinate
            lo = hi = 0.0
        lo = float(np.floor(lo))
        spans.append((lo, float(max(np.ceil(hi), lo + 1.0))))
    # a wide range of statistics gets coarser steps (and starts that need
    # more quick stages) rather than an expensive table
    while np.prod([(hi - lo) / h + d + 1 for (lo, hi), h, d in zip(spans, steps, degrees)]) > (
            _TABLE_MAX_NODES):
        steps[np.argmax([(hi - lo) / h for (lo, hi), h in zip(spans, steps)])] *= 2.0
    ranges = []
    for (lo, hi), step, degree in zip(spans, steps, degrees):
        # padded by the nodes the polynomials around the edge cells need
        off = (degree - 1) // 2
        ranges.append((lo - off * step, hi + (degree - off) * step))
    return _cached_table(nodes, params, tuple(ranges), tuple(steps), degrees)


def _raised(log_eps, rtol=_START_RTOL):
    """A table's start: its eps raised by ``rtol`` and ``_START_ATOL`` (above
    the root for most rows, see ``_START_RTOL``); 0 where it has no value."""
    with np.errstate(over="ignore", invalid="ignore"):
        start = np.exp(log_eps)
        start *= 1.0 + rtol
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
    true) a subclass that passes ``quick`` (a function of ``(eps, idx,
    target, names)`` returning, for each direction named, bounds ``(A_lo,
    A_hi, B_lo, B_hi)`` in the linear domain good enough to compare delta
    with ``target``) and overrides :meth:`table_guess` gets the quick stages
    of the module docstring, started from its table.
    """

    def __init__(self, tails, zero, infinite, direction="both", quick=None, table=True):
        self.directions = _pick(tails, direction)
        self.quick = None
        if quick is not None:
            names = list(tails) if direction == "both" else [direction]
            self.quick = lambda eps, idx, target: quick(eps, idx, target, names)
        self.zero, self.infinite, self.table = zero, infinite, table

    # The search aims this fraction below delta: for tails that are known
    # only to a relative accuracy near the target (objective perturbation).
    aim = 0.0
    # steps and polynomial degrees (per axis) of the table (table_for)
    table_grid = (1 / 16, 5)
    # quick stages before the exact search, and the relative raise of a
    # table's start (see _START_RTOL)
    quick_stages = _QUICK_STAGES
    start_rtol = _START_RTOL

    def first_guess(self, delta):
        """Per-instance start of the search (None: from 0)."""
        return None

    def table_coords(self, delta):
        """For many rows at the scalar ``delta``: ``(nodes, params, coords)``
        of a table start (:func:`table_for`), ``coords`` one or two arrays
        over all rows (NaN: the row starts at 0); None: no table."""
        return None

    def fast_start(self, delta):
        """For many rows at the scalar ``delta``: a function of a slice of
        the rows returning their starts for the quick stages (by default
        from the table of :meth:`table_coords`); None: the plain search."""
        spec = self.table_coords(delta)
        if spec is None:
            return None
        nodes, params, coords = spec
        table = table_for(nodes, params, coords, *self.table_grid)
        return lambda rows: _raised(table(*(c[rows] for c in coords)), self.start_rtol)

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
        starts, quick = None, None
        if (self.table and self.quick is not None and delta.size >= _TABLE_MIN_ROWS
                and np.ptp(delta) == 0):
            starts = self.fast_start(float(delta[0]))
        if starts is None:
            plain = self.first_guess(delta)

            def starts(rows):
                return None if plain is None else plain[rows]
        else:
            quick = self.quick

        target = delta * (1.0 - self.aim) if self.aim else delta
        with np.errstate(divide="ignore"):
            log_target = np.log(target)
        out = _search(self.search_tails(delta), quick, log_target, delta.size, starts, rtol,
                      stages=self.quick_stages)
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
