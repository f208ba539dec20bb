"""The privacy loss of a mechanism as the package computes it.

A mechanism supplies, per direction, a *tails* function returning
``(log A, log B)`` (see the package docstring) and subclasses
:class:`PrivacyLoss`, which turns it into delta(eps)
(:mod:`._divergence`) and into eps(delta) (:mod:`._search`, started from a
table of :mod:`._table` for the many rows of a fit, see
:doc:`/mechanisms/accounting`); :func:`largest_root` solves the
calibrations of every mechanism (a noise level as small as a budget
allows).
"""

import numpy as np
from scipy.optimize import brentq

from ._divergence import hockey_stick
from ._search import _QUICK_STAGES, _RTOL, _search
from ._table import _START_RTOL, _raised, table_for

# Calls with at least this many rows at one delta start from a table (or
# the mechanism's fast start) and take the quick stages.
_TABLE_MIN_ROWS = 2048


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
    with ``target``) and overrides :meth:`table_coords` gets the quick
    stages (:doc:`/mechanisms/accounting`), started from its table.
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

    def _table_start(self, delta):
        """The fast start of :meth:`fast_start` where this batch takes one
        (many rows at one delta), else None."""
        if (self.table and self.quick is not None and delta.size >= _TABLE_MIN_ROWS
                and np.ptp(delta) == 0):
            return self.fast_start(float(delta[0]))
        return None

    def rough_epsilon(self, delta):
        """eps at ``delta`` to the table's accuracy (about 1e-11 relative),
        not verified: a start for a related search (AdaOPS's mixture). The
        verified :meth:`epsilon` where the batch takes no table; 0 (a valid
        start) where the table has no value."""
        starts = self._table_start(delta)
        return self.epsilon(delta) if starts is None else starts(slice(0, delta.size))

    def epsilon(self, delta, rtol=_RTOL):
        """Tight eps at ``delta`` (an array of the batch's length), an upper bound.

        ``rtol``: tolerance of the exact search (tighter for table nodes).
        """
        quick = None
        starts = self._table_start(delta)
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
