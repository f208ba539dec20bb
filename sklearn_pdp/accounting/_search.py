"""The root search of eps(delta): the exact search, and the quick stages
that settle most rows of a fit in about one evaluation each.

Every answer is the upper end of a bracket whose delta was checked to be
at most the target, so rounding can only make a reported epsilon larger;
how the quick stages certify an answer without a second evaluation is
derived in :doc:`/mechanisms/accounting`.
"""

import numpy as np
from scipy.special import ndtri, ndtri_exp

from ._divergence import _LOG_SQRT_2PI, _log_delta

# A loss that still exceeds the target at _EPS_MAX is reported as +inf,
# always a valid (if useless) bound.
_EPS_MAX = 1e6
_RTOL = 1e-11
_ATOL = 1e-16
_MAX_ITER = 200
_NEWTON_STEPS = 40
# Rows searched at once: the temporaries of a block stay in the cache.
_BLOCK = 16384
# The quick stages' tolerance (relative: an answer must not depend on which
# search a row took by more than 1e-10; absolute near eps = 0, where
# rounding limits every method), their number, the unit of their rounding
# slack on A - e^eps B (:doc:`/mechanisms/accounting`) and the largest eps
# they handle (e^eps stays far from overflow).
_QUICK_RTOL = 8e-11
_QUICK_ATOL = 5e-15
_QUICK_STAGES = 3
_ROUNDING = np.finfo(float).eps
_QUICK_EPS_MAX = 500.0
# A quick stage's Newton step works on g = e^eps when it is at most this
# fraction of eps, on the probit scale of delta otherwise.
_NEAR = 1e-3
_TINY = 1e-300


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
    larger of x and the lower end (not to the lower end alone: a start above
    the root leaves it at 0 until a step lands below, and an absolute
    tolerance of 1e-16 kept the rows that Newton had already put within
    rounding of the root stepping on, two more steps a row on AdaOPS).
    """
    log_a, log_b = tail(x, idx)
    ld = _log_delta(x, log_a, log_b)
    above = ld > log_target
    tol = tols[0] * np.maximum(lo, x) + tols[1]
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
    puts its root (hence the maximum) within the tolerance of x
    (:doc:`/mechanisms/accounting`). The next point is the largest of the directions' Newton
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
