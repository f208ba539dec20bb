"""Tables of exact epsilons, interpolated by local polynomials: the start
of the root search for the many rows of a fit (:doc:`/mechanisms/accounting`).
"""

from functools import lru_cache

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ._search import _QUICK_ATOL

# Largest number of nodes of a table (each an exact epsilon to build).
_TABLE_MAX_NODES = 2**16
# A table's start is raised by this much (relative and absolute): above
# the root by more than the interpolation error and the rounding slack,
# and within the quick stages' tolerance for most rows, so that the first
# stage can verify and certify it.
_START_RTOL = 3e-11
_START_ATOL = 0.5 * _QUICK_ATOL
# Table nodes are solved this tightly, so that interpolation, not the
# nodes, limits a start.
_NODE_RTOL = 1e-14


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
        known = np.asarray(c)[~np.isnan(c)]  # (nanmin warns on all-NaN)
        lo, hi = (known.min(), known.max()) if known.size else (np.nan, np.nan)
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

