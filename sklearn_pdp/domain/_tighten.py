"""Private tightening of the declared bounds: the release of the bounds
(:doc:`/mechanisms/tightening`).

Declared ranges are a schema's (what a value can be); the noise of every
mechanism scales with them. Before the model, tighter ranges are released
(in a fit from a public share of the rows with the whole epsilon,
:mod:`._split`; in a private search from every row with a share of
epsilon): for each declared range [a, b] two quantiles by the
exponential mechanism (:mod:`sklearn_pdp.accounting._exponential`), of the distance
of the clipped values above a and below b, on a public grid of distances,
geometric (fine near the data's own end, coarse in a long tail) and
uniform; for ``data_norm`` one quantile of the row norms. On rows too few
for all of them, the label's two alone (:func:`label_release`).

Accounting. The quantiles are independent pure-DP releases: the bounds cost
the sum of their epsilons, and a row's exact pure loss for all of them is
the larger of the sums over the releases of its largest log-ratio in each
direction (each a function of the grid cell it falls in,
:func:`~sklearn_pdp.accounting._exponential.quantile_loss_table`). The model fitted
on the released bounds, and each row's loss for the whole release, are the
stage's (:class:`~._split.SplitStage`).
"""

import warnings

import numpy as np

from ..accounting._exponential import quantile_log_proba, quantile_loss_table, select
from ..utils._arrays import is_dask_array, row_norms
from ._scaler import label_range
from ..exceptions import BoundsWarning

# Share of epsilon spent on the bounds by default (chosen on the utility
# benchmark's declared-schema protocol: see the schema page of the Benchmarks).
TIGHTEN_SHARE = 0.1
# Quantile level of each end: the share of rows left beyond a released bound.
_LEVEL = 0.005
# The level is raised so that a grid point beyond the data weighs at most
# G^(-_TAIL_GUARD / 2) of an exact quantile: "The level" in the tightening page.
_TAIL_GUARD = 4.0
# Largest level; "auto" does not tighten where the tail guard asks for a level
# above _AUTO_TAIL (the ends would collapse: "When to tighten", same page).
_MAX_LEVEL = 0.1
_AUTO_TAIL = 1.0
# Each end of the label's range is released twice, at its level and at
# _INNER times it, and extrapolated from the two as an exponential tail to
# the level 1 / n (the largest of n rows), within the declared range: a
# quantile end clips a long-tailed label where its error is ("The label's
# ends" in the tightening page).
_INNER = 4.0
# Share of delta kept, for a model that bounds its rows' losses over the
# plausible released bounds (AdaSSP), for the bounds falling outside them.
_EVENT_SHARE = 0.1
# Grid of widths, as fractions of the declared width: geometric from
# _GRID_FLOOR (fine near the data's own end, for long tails) and uniform
# (for data in the middle of a wide range), up to the declared width.
_GRID = np.unique(np.concatenate([np.geomspace(1e-3, 1.0, 48), np.linspace(0.0, 1.0, 33)[1:]]))
_GRID_POINTS = _GRID.size


def _tail(epsilon_q, n_samples):
    """The tail guard's level for quantiles of ``epsilon_q`` each on ``n_samples`` rows."""
    return _TAIL_GUARD * np.log(_GRID_POINTS) / (epsilon_q * n_samples)


def tightening_on(estimator, per_person=False):
    """Whether ``fit`` tightens the bounds (``tighten_bounds``; "auto" is
    decided later, by :attr:`BoundsRelease.worthwhile`). ``per_person``: a
    search guaranteeing epsilon per person (``max_records``), whose bounds'
    release is sized for one record: "auto" does not tighten there (and the
    search refuses True)."""
    mode = getattr(estimator, "tighten_bounds", False)
    if not _always(mode) and (mode != "auto" or per_person):
        return False
    epsilon = getattr(estimator, "epsilon", None)
    if mode == "auto" and (epsilon is None or not np.isfinite(epsilon)):
        return False  # no budget to spend a share of (inf: least squares)
    if epsilon is None:
        raise ValueError(
            "tighten_bounds needs an epsilon budget to spend a share of; this "
            f"{type(estimator).__name__} has epsilon=None (a raw noise level)."
        )
    return True


def _always(mode):
    """``tighten_bounds`` asks for tightening whatever the data size."""
    return not isinstance(mode, str) and bool(mode)


def tighten_share(estimator):
    """The estimator's ``tighten_share`` (None: ``TIGHTEN_SHARE``)."""
    share = getattr(estimator, "tighten_share", None)
    return TIGHTEN_SHARE if share is None else float(share)


class BoundsRelease:
    """The quantiles that tighten the declared bounds: plan, draw and losses.

    Built from public quantities (the declared bounds, the public size, the
    budget); ``fit`` records the private grid counts. Which ranges are
    tightened: every feature range of ``bounds_X`` except (0, 1) (indicator
    and one-hot columns: their values sit at the ends), ``data_norm`` (one
    upper quantile of the row norms) and ``y_bound``; only declared ones (a
    bound read from the data stays as read).

    Parameters
    ----------
    data_norm, bounds_X, y_bound : declared bounds (None: not declared)
    n_samples : int
        The public size (sets the quantile levels).
    epsilon : float
        Budget of all the quantiles together (pure DP).
    """

    def __init__(self, data_norm, bounds_X, y_bound, n_samples, epsilon):
        self.declared = (data_norm, bounds_X, y_bound)
        origin, sign, width, source = [], [], [], []
        if bounds_X is not None:
            lower, upper = bounds_X
            for j in np.flatnonzero(~((lower == 0.0) & (upper == 1.0))):
                for o, s in ((lower[j], 1.0), (upper[j], -1.0)):
                    origin.append(o), sign.append(s), width.append(upper[j] - lower[j])
                    source.append(int(j))
        elif data_norm is not None:
            origin.append(0.0), sign.append(1.0), width.append(float(data_norm))
            source.append("norm")
        n_features = len(source)
        # the label's four quantiles each at least the epsilon of its
        # uncapped level (the tail guard's at _MAX_LEVEL), the features an
        # even share of the rest; the label only where the whole budget
        # gives it that (its ends are extrapolated from a spacing, which
        # noise would stretch)
        # (_tail inverted: the epsilon whose level is _MAX_LEVEL is _tail(_MAX_LEVEL, n))
        label_epsilon = max(epsilon / (n_features + 4), _tail(_MAX_LEVEL, n_samples))
        if y_bound is not None and 4 * label_epsilon <= epsilon:
            # the inner quantiles first: the label's two ends are the last
            low, high = label_range(y_bound)
            for o, s in ((low, 1.0), (high, -1.0)) * 2:
                origin.append(o), sign.append(s), width.append(high - low)
                source.append("y")
        self.origin, self.sign = np.array(origin), np.array(sign)
        self.width, self.source = np.array(width), source
        self.n_quantiles = len(source)
        inner = np.zeros(self.n_quantiles, dtype=bool)
        label = np.array([s == "y" for s in source], dtype=bool)
        if label.any():
            inner[-4:-2] = True
        else:  # the label keeps its declared range
            self.declared = (data_norm, bounds_X, None)
            label_epsilon = 0.0
        feature_epsilon = (epsilon - 4 * label_epsilon) / max(n_features, 1)
        self.epsilon_q = np.where(label, label_epsilon, feature_epsilon)
        while self.epsilon_q.sum() > epsilon:  # rounding
            self.epsilon_q = np.nextafter(self.epsilon_q, 0.0)
        self.epsilon = float(self.epsilon_q.sum())
        self.grid = self.width[:, None] * _GRID
        self.grid[:, -1] = self.width  # the declared end itself
        # the features' tail guard (the label's when it is alone)
        spent = feature_epsilon if n_features else label_epsilon
        self.tail = _tail(spent, n_samples) if spent > 0 else np.inf
        # "auto" tightens only where the levels stay small (public rule)
        self.worthwhile = self.n_quantiles > 0 and self.tail <= _AUTO_TAIL
        level = min(max(_LEVEL, self.tail), _MAX_LEVEL)
        label_level = max(_LEVEL, _tail(label_epsilon, n_samples)) if label.any() else level
        self.inner = inner
        self.levels = np.where(label, label_level, level) * np.where(inner, _INNER, 1.0)
        # the label's ends: extrapolated over log_INNER(level n) inner spacings
        self.stretch = max(np.log(label_level * n_samples) / np.log(_INNER), 0.0)

    def cells(self, X, y):
        """Grid cell (values rounded up) of each row for each quantile: (n, k)."""
        cells = np.empty((X.shape[0], self.n_quantiles), dtype=np.intp)
        norms = None
        for k, src in enumerate(self.source):
            if src == "norm":
                norms = row_norms(X) if norms is None else norms
                raw = norms
            else:
                raw = y if src == "y" else X[:, src]
            v = np.clip(self.sign[k] * (raw - self.origin[k]), 0.0, self.width[k])
            cells[:, k] = np.searchsorted(self.grid[k], v, side="left")
        return np.minimum(cells, _GRID_POINTS - 1)

    def fit(self, X, y):
        """Record the grid counts of the training rows (private); on Dask,
        summed from per-block histograms."""
        if is_dask_array(X):
            import dask

            parts = [dask.delayed(self._counts)(xb, yb)
                     for xb, yb in zip(X.to_delayed().ravel(), y.to_delayed())]
            self.counts_ = sum(dask.compute(*parts))
        else:
            self.counts_ = self._counts(X, y)
        return self

    def _counts(self, X, y):
        cells = self.cells(X, y)
        return np.stack([np.bincount(cells[:, k], minlength=_GRID_POINTS)
                         for k in range(self.n_quantiles)])

    def log_proba(self, counts=None):
        """Log output probabilities of each quantile, (k, G)."""
        counts = self.counts_ if counts is None else counts
        return quantile_log_proba(counts, 1.0 - self.levels[:, None], self.epsilon_q[:, None])

    def draw(self, rng):
        """Released bounds ``(data_norm, bounds_X, y_bound)``, post-processed.

        A released lower end above the released upper one (only when the
        column's values are nearly constant) is swapped with it.
        """
        return self.assemble(self.grid[np.arange(self.n_quantiles),
                                       select(self.log_proba(), rng)])

    def assemble(self, picked):
        """The released bounds of the quantiles' released distances
        ``picked`` (one grid point each; the label's ends extrapolated)."""
        ends = self.origin + self.sign * self._extrapolated(picked, picked)
        data_norm, bounds_X, y_bound = self.declared
        if bounds_X is not None:
            lower, upper = (b.copy() for b in bounds_X)
            cols = np.array([s for s in self.source if s not in ("y", "norm")], dtype=np.intp)
            if cols.size:
                a, b = ends[: cols.size: 2], ends[1: cols.size: 2]
                lo, hi = np.minimum(a, b), np.maximum(a, b)
                same = lo >= hi  # (not seen: the grids' ends rarely meet)
                lower[cols[::2]] = np.where(same, bounds_X[0][cols[::2]], lo)
                upper[cols[::2]] = np.where(same, bounds_X[1][cols[::2]], hi)
            bounds_X = (lower, upper)
        elif data_norm is not None:
            data_norm = float(ends[0])
        if y_bound is not None:
            a, b = sorted(ends[-2:])
            y_bound = (float(a), float(b)) if a < b else y_bound
        return data_norm, bounds_X, y_bound

    def plausible(self, delta):
        """``(low, high)`` of each released end over a set of grid points
        outside which it falls with probability at most ``delta`` over the k
        quantiles together, on these data and on any neighbour (each
        quantile is epsilon_q-DP: the set leaves out at most
        ``delta e^-epsilon_q / k`` of each quantile's mass here); (k, 2)."""
        budget = (delta * np.exp(-self.epsilon_q) / max(self.n_quantiles, 1))[:, None]
        p = np.exp(self.log_proba())
        order = np.argsort(p, axis=1)
        dropped = np.cumsum(np.take_along_axis(p, order, axis=1), axis=1) <= budget
        keep = np.empty_like(dropped)
        np.put_along_axis(keep, order, ~dropped, axis=1)
        ends = self.origin[:, None] + self.sign[:, None] * self.grid
        return np.stack([np.where(keep, ends, np.inf).min(axis=1),
                         np.where(keep, ends, -np.inf).max(axis=1)], axis=1)

    def _extrapolated(self, distances, inner):
        """The distances of the released ends from their origins, the
        label's two extrapolated from the inner quantiles' distances in
        ``inner`` (the label's end moves ``stretch`` times its spacing from
        the inner quantile, within the declared range)."""
        out = np.array(distances, dtype=np.float64)
        if self.source[-1:] == ["y"]:
            spacing = np.maximum(out[-2:] - inner[-4:-2], 0.0)
            out[-2:] = np.minimum(out[-2:] + self.stretch * spacing, self.width[-2:])
        return out

    def box(self, ranges):
        """For released quantiles within ``ranges`` (:meth:`plausible`; the
        label's ends extrapolated from them), the box of the ranges' ends:
        ``(lo, hi)`` arrays of shape (2, m) for the features (bounds_X) then
        the label, the smallest and the largest of each end, and a mask of
        the ranges whose released ends may cross (then only |z| <= 1
        holds); :meth:`~sklearn_pdp.domain._scaler.DomainScaler.range_magnitudes`
        bounds a scaled value's magnitude over it."""
        data_norm, bounds_X, y_bound = self.declared
        lows, highs = [], []
        if bounds_X is not None:
            lows.append(np.stack([bounds_X[0], bounds_X[0]]))
            highs.append(np.stack([bounds_X[1], bounds_X[1]]))
        if y_bound is not None:
            low, high = label_range(y_bound)
            lows.append(np.full((2, 1), low))
            highs.append(np.full((2, 1), high))
        lo, hi = np.hstack(lows), np.hstack(highs)
        # as distances from the origins: the extrapolated distance grows
        # with the end's and falls with the inner quantile's
        dist = np.sort(self.sign[:, None] * (np.asarray(ranges) - self.origin[:, None]), axis=1)
        near = self._extrapolated(dist[:, 0], dist[:, 1])
        far = self._extrapolated(dist[:, 1], dist[:, 0])
        ranges = np.sort(self.origin[:, None] + self.sign[:, None] * np.stack([near, far], 1), 1)
        # pairs of quantiles, after the norm's (alone, first) if any; the
        # label's inner quantiles are in its ends' ranges
        for k in range(int(self.source[:1] == ["norm"]), self.n_quantiles, 2):
            if self.inner[k]:
                continue
            col = lo.shape[1] - 1 if self.source[k] == "y" else self.source[k]
            # quantile k releases the upper end, k + 1 the lower one
            hi[:, col], lo[:, col] = ranges[k], ranges[k + 1]
        return lo, hi, lo[1] >= hi[0]

    def _tables(self, add):
        """Per quantile, the (upper, lower) log-ratio extremes by cell: (2, k, G)."""
        out = np.empty((2, self.n_quantiles, _GRID_POINTS))
        for k in range(self.n_quantiles):
            out[:, k] = quantile_loss_table(self.counts_[k], 1.0 - self.levels[k],
                                            self.epsilon_q[k], add=add)
        return out

    def row_epsilon(self, X, y, add=False):
        """Exact pure epsilon of the whole bounds release for each row.

        ``add``: the rows as targets added to the training data (``y`` None:
        the worst label in the declared range); else training rows removed.
        Lazy, with the row chunks of ``X``, for a Dask array.
        """
        if is_dask_array(X):
            if y is None:
                return X.map_blocks(lambda b: self.row_epsilon(b, None, add), drop_axis=1,
                                    dtype=np.float64)
            return X.map_blocks(lambda b, yb: self.row_epsilon(b, yb[:, 0], add), y[:, None],
                                drop_axis=1, dtype=np.float64)
        tables = self._tables(add)
        cells = self.cells(X, np.zeros(X.shape[0]) if y is None else y)
        k = np.arange(self.n_quantiles)
        labels = [i for i, s in enumerate(self.source) if s == "y"]
        features = np.setdiff1d(k, labels) if y is None else k
        up = tables[0][features, cells[:, features]].sum(axis=1)
        down = tables[1][features, cells[:, features]].sum(axis=1)
        if y is None and labels:
            # every pair of label cells a value can fall in: the grids' points
            # (as distances) from both ends, and the gaps between them
            low, high = label_range(self.declared[2])
            points = np.sort(np.concatenate([
                self.origin[i] + self.sign[i] * self.grid[i] for i in labels]))
            cand = np.concatenate([points, 0.5 * (points[1:] + points[:-1]), [low, high]])
            ycells = self.cells(np.zeros((cand.size, X.shape[1])), cand)[:, labels]
            yup = tables[0][labels, ycells].sum(axis=1)
            ydown = tables[1][labels, ycells].sum(axis=1)
            return np.max(np.maximum(up[:, None] + yup, down[:, None] + ydown), axis=1)
        return np.maximum(up, down)


def plan_release(estimator, resolved, n_samples, epsilon, delta, stacklevel=5, split=False):
    """The :class:`BoundsRelease` of ``estimator``'s declared ranges with its
    share of the total ``epsilon``, or None where tightening does not apply
    (too little data, nothing declared; with ``tighten_bounds=True`` the
    first warns). ``resolved``: the bounds
    of ``resolve_bounds`` (those read from the data are not tightened).

    Where the rows are too few for the ends of every declared range but
    enough for the label's two alone (:func:`label_release`), only the
    label's range is tightened (``tighten_bounds=True`` warns).

    Its ``event_`` is the share of ``delta`` kept, for a model that bounds
    its rows' losses over the plausible released bounds (AdaSSP), for the
    bounds falling outside them (0 for the others).

    ``split``: the bounds are released from the public share
    ``tighten_share`` of the rows with the whole ``epsilon``
    (:class:`~._split.SplitStage`), rather than from every row with that
    share of ``epsilon``; the levels and the rule are the same (each end's
    epsilon times its number of rows), and nothing of ``delta`` is kept."""
    schema = getattr(estimator, "schema", None)
    label_declared = estimator.y_bound is not None or (
        schema is not None and schema.label_range is not None)
    declared = (
        None if estimator.data_norm is None else resolved[0],
        resolved[1],
        resolved[2] if label_declared else None,
    )
    share = tighten_share(estimator)
    n_rows, budget = (share * n_samples, epsilon) if split else (n_samples, share * epsilon)
    release = BoundsRelease(*declared, n_rows, budget)
    # the label first: feature ranges tightened around a loose declared
    # label only magnify the model's noise in the label's units, so where
    # the label's ends cannot join the others at their uncapped level they
    # are released alone, or nothing is ("The label first", tightening page)
    label_left = declared[2] is not None and release.declared[2] is None
    if label_left or not release.worthwhile:
        label = label_release(declared, n_rows, budget, release.n_quantiles + 4 * label_left)
        if release.n_quantiles and _always(estimator.tighten_bounds):
            warnings.warn(
                f"tighten_bounds=True: {n_samples} rows are too few to tighten the "
                f"{release.n_quantiles} declared ends" + (" and the label's range" if
                                                          label_left else "")
                + f" with tighten_share {share:g} at epsilon={epsilon:g} (each end's "
                "epsilon times the number of rows it is released from must be at least "
                f"{_TAIL_GUARD * np.log(_GRID_POINTS) / _AUTO_TAIL:.1f}, and the "
                "label's four "
                f"{_TAIL_GUARD * np.log(_GRID_POINTS) / _MAX_LEVEL:.0f}, or the released "
                "ends fall almost anywhere); "
                + ("only the label's range is tightened, the features keep their "
                   "declared bounds. " if label is not None else
                   "the model is fitted on the declared bounds with the whole budget. ")
                + "Declare tighter bounds, or raise epsilon or tighten_share.",
                BoundsWarning, stacklevel=stacklevel)
        if label is None:
            return None
        release = label
    release.event_ = _EVENT_SHARE * delta if _bounds_its_rows(estimator) and not split else 0.0
    return release


def label_release(declared, n_samples, epsilon, n_quantiles):
    """The release of the label's range alone with the whole ``epsilon`` of
    the bounds, where the ``n_quantiles`` ends of every declared range are
    too many for the rows and the label's level with the whole budget is
    the guard's (uncapped, as everywhere for the label); else None. Its
    ``declared`` holds the label's range only: the model keeps the declared
    feature bounds (or ``data_norm``)."""
    if declared[2] is None or not n_quantiles:
        return None
    release = BoundsRelease(None, None, declared[2], n_samples, epsilon)
    return release if release.n_quantiles else None


def _bounds_its_rows(estimator):
    """Whether the estimator's release bounds its rows' losses over the
    plausible released bounds (``box_epsilon``: AdaSSP), read before it is
    fitted from its class's ``_release_type``."""
    return hasattr(getattr(estimator, "_release_type", None), "box_epsilon")


def remaining_epsilon(epsilon, spent):
    """``epsilon - spent``, rounded down so that ``spent`` plus it is at most ``epsilon``."""
    rest = epsilon - spent
    while rest + spent > epsilon:  # rounding
        rest = np.nextafter(rest, 0.0)
    return float(rest)


def released_bounds(drawn, resolved):
    """The bound parameters of the model stage: the drawn bounds
    (:meth:`BoundsRelease.draw`), the resolved ones where none was drawn."""
    data_norm, bounds_X, y_bound = drawn
    return {
        "data_norm": (data_norm or resolved[0]) if bounds_X is None else None,
        "bounds_X": resolved[1] if bounds_X is None else bounds_X,
        "y_bound": resolved[2] if y_bound is None else y_bound,
    }
