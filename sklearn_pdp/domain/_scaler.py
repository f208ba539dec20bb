"""The privacy domain: the public bounds of the data and the map into them.

Every mechanism works on rows in the unit ball and labels in [-1, 1]. This
module holds what defines that domain for a fit: the declared bounds
(``data_norm`` or ``bounds_X``, and ``y_bound``), their validation, their
resolution (a bound not declared is read from the data, with a
:class:`~sklearn_pdp.exceptions.PrivacyLeakWarning`, and recorded as such),
the :class:`DomainScaler` that maps rows and labels into the domain and
models back, and the curator's warning when the bounds clip much of the
data. The accounting's worst cases over the domain are in
``_accounting._domain``.
"""

import warnings

import numpy as np

from ..utils._arrays import compute, is_dask_array, row_norms
from ._schema import estimator_layout, schema_bounds
from ..exceptions import BoundsWarning, PrivacyLeakWarning

# The estimator parameters that declare the domain.
BOUND_PARAMS = ("data_norm", "bounds_X", "y_bound")

# Share of the rows or of the labels that the declared bounds may clip
# before the curator is warned (BoundsWarning).
CLIP_WARN_SHARE = 0.05


class DomainScaler:
    """Maps data into the domain of the privacy analysis, and models back.

    The declared bounds are public. With ``bounds_X = (lower, upper)`` each
    feature is clipped to its range, centred and divided by its half-width
    times ``sqrt(d)``, so every row lies in the unit ball; with
    ``data_norm`` rows are divided by it and rows still longer than 1 are
    scaled down to norm 1. Labels are clipped to ``y_bound`` (a pair
    ``(low, high)`` or ``b`` for ``(-b, b)``), centred and divided by its
    half-width, so they lie in [-1, 1]. With ``fit_intercept`` a constant
    feature 1 is appended: the mechanisms leave it unpenalised, so the
    intercept is not shrunk; a range's centre is then its midpoint and its
    half-width half its length. Without, the map goes through the origin
    (:func:`centre`): centre 0 and half-width ``max(|lower|, |upper|)``, so
    that a model without intercept in the domain has ``intercept_`` 0 in
    the user's units; the values still clip to [lower, upper] (a subset of
    [-1, 1] once scaled). Clipping happens on copies.

    With a ``layout`` (a schema's :class:`~sklearn_pdp.domain._schema.FeatureLayout`,
    whose indicators' ``bounds_X`` are (0, 1)) the row is structured: each
    numeric feature is clipped, centred and divided by its half-width, each
    categorical column's indicator block is clipped to [0, 1] and, where its
    norm exceeds 1, scaled back to norm 1, not centred; the whole row is
    divided by ``sqrt(m)``, m the numeric plus categorical columns. Every
    row then has squared norm at most (numeric + categorical) / m = 1.
    """

    # the label's range once scaled; an instance's own without an
    # intercept (a subset of [-1, 1]); scalers pickled before it had none
    y_ends = (-1.0, 1.0)

    def __init__(self, data_norm, y_bound, fit_intercept, bounds_X=None, layout=None):
        self.data_norm = data_norm
        self.y_bound = y_bound
        self.fit_intercept = fit_intercept
        self.bounds_X = bounds_X
        self.layout = layout
        low, high = label_range(y_bound)
        self.y_mid, self.y_half = centre(low, high, fit_intercept)
        if not fit_intercept:
            self.y_ends = (low / self.y_half, high / self.y_half)
        if bounds_X is None:
            self.x_mid, self.x_scale = 0.0, data_norm
        else:
            lower, upper = bounds_X
            self.x_mid, half = centre(lower, upper, fit_intercept)
            shares = lower.shape[0] if layout is None else layout.n_shares
            if layout is not None:  # indicators as they are: 0 or 1
                self.x_mid[layout.indicators] = 0.0
                half[layout.indicators] = 1.0
            self.x_scale = half * np.sqrt(shares)

    def scale(self, X, y=None, *, out=None):
        """Scaled (and clipped) copy of the rows ``X`` and labels ``y``.

        ``out``: an array of shape (n, d + fit_intercept) to write the rows into.
        """
        d = X.shape[1]
        Xs = np.empty((X.shape[0], d + int(self.fit_intercept))) if out is None else out
        self._unit_ball(X, Xs[:, :d])
        if self.fit_intercept:
            Xs[:, d] = 1.0
        if y is None:
            return Xs
        return Xs, self.scale_labels(y)

    def scale_labels(self, y):
        """Scaled labels in [-1, 1] (clipped to ``y_bound``)."""
        with np.errstate(over="ignore", invalid="ignore"):  # +-inf clips to an end
            return np.clip((y - self.y_mid) / self.y_half, *self.y_ends)

    def range_magnitudes(self, V, lo, hi, cross):
        """Bounds on the magnitude of the scaled values of ``V`` over every
        range [a, b] with a in [lo[0], lo[1]] and b in [hi[0], hi[1]] (e.g.
        the ranges a tightening may release), 1 where ``cross`` (the ends may
        cross: only |z| <= 1 holds)."""
        # a crossing box's corners may be empty ranges: their 0 / 0 is masked
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if self.fit_intercept:
                # |clip(v, a, b) - mid| / half is largest at (lo[0], hi[0]) or
                # (lo[1], hi[1]): 1 outside [a, b], and inside it falls in
                # both ends above the midpoint and rises in both below it
                out = np.zeros(np.shape(V))
                for a, b in zip(lo, hi):
                    out = np.maximum(out, np.abs(np.clip(V, a, b) - 0.5 * (a + b))
                                     / (0.5 * (b - a)))
                return np.where(cross, 1.0, out)
            # |clip(v, a, b)| / max(|a|, |b|): clip grows with both ends, so
            # the numerator is at most its value at a corner, and the
            # denominator at least the larger of the ends' smallest
            # magnitudes over the box
            top = np.maximum(np.abs(np.clip(V, lo[0], hi[0])), np.abs(np.clip(V, lo[1], hi[1])))
            least = np.maximum(_least_magnitude(*lo), _least_magnitude(*hi))
            ratio = np.where(least > 0, top / least, 1.0)
        return np.where(cross, 1.0, np.minimum(ratio, 1.0))

    def clip(self, X):
        """Copy of ``X`` with every row moved into the declared bounds.

        The rows as the mechanism sees them, in the units of the data: a model
        evaluated on them treats every row like a training row. Rows inside
        the domain are copied unchanged; so is every row without a bound on
        the rows (``data_norm`` None: a norm read from the data is private,
        and a public model does not know it).
        """
        if self.bounds_X is not None:
            clipped = np.clip(X, *self.bounds_X)
            return clipped if self.layout is None else self.layout.project_blocks(clipped)
        if self.data_norm is None:
            return np.array(X, dtype=np.float64)
        unit = np.empty(X.shape)
        outside = self._unit_ball(X, unit)
        clipped = np.array(X, dtype=np.float64)
        clipped[outside] = unit[outside] * self.data_norm
        return clipped

    def _unit_ball(self, X, out):
        """The scaled rows of ``X`` into ``out``, rows longer than 1 scaled to norm 1.

        Returns the mask of the rows that were scaled down.
        """
        if self.bounds_X is None:
            with np.errstate(over="ignore"):  # an overflow is a long row: handled below
                np.divide(X, self.data_norm, out=out)
            # Rows outside the ball (or overflowing: inf and nan fail the
            # test) are rare: only they take the careful path below.
            long = np.flatnonzero(~(np.einsum("ij,ij->i", out, out) <= 1.0))
            clipped = np.zeros(X.shape[0], dtype=bool)
            if long.size:
                rows = X[long]
                # only the direction survives: divided by its largest entry
                # first, its squares cannot overflow even near 1e308
                peak = np.abs(rows).max(axis=1, initial=0.0)
                rows /= np.maximum(peak, self.data_norm)[:, None]
                clipped[long] = (peak > self.data_norm) | _to_unit_ball(rows)
                out[long] = rows
            return clipped
        # np.clip's values, a third faster
        np.maximum(X, self.bounds_X[0], out=out)
        np.minimum(out, self.bounds_X[1], out=out)
        if self.layout is not None:
            self.layout.project_blocks(out)
        out -= self.x_mid
        out /= self.x_scale
        # only rounding can leave a row a hair outside
        return _to_unit_ball(out)

    def entry_magnitudes(self, M, X):
        """Bounds on the magnitudes of the scaled features of the rows ``X``
        from ``M``, each numeric feature's bound of |clip(x) - centre| / half
        (e.g. over ranges that may be released, :meth:`range_magnitudes`):
        ``M / sqrt(d)``, or with a
        layout ``M / sqrt(m)`` and the indicators' own scaled values (their
        ranges are never tightened)."""
        d = X.shape[1]
        if self.layout is None:
            return M / np.sqrt(d)

        def scaled(rows):
            return np.abs(self.scale(rows)[:, :d])

        own = X.map_blocks(scaled, dtype=np.float64) if is_dask_array(X) else scaled(X)
        return np.where(self.layout.indicators, own, M / np.sqrt(self.layout.n_shares))

    def unscale_coef(self, theta):
        """``coef_`` and ``intercept_`` in the user's units for the scaled model ``theta``."""
        d = theta.shape[0] - int(self.fit_intercept)
        coef = theta[:d] * (self.y_half / self.x_scale)
        intercept = self.y_mid - np.sum(coef * self.x_mid)
        if self.fit_intercept:
            intercept += self.y_half * theta[d]
        return coef, float(intercept)


def centre(lower, upper, fit_intercept):
    """Centre and half-width of the map of the range [lower, upper] (floats
    or arrays) into [-1, 1]: its midpoint and half-width with an intercept;
    without, 0 and ``max(|lower|, |upper|)``: through the origin, so that a
    model without intercept in the domain has none in the user's units."""
    if fit_intercept:
        return 0.5 * (lower + upper), 0.5 * (upper - lower)
    return np.zeros_like(lower) if np.ndim(lower) else 0.0, np.maximum(abs(lower), abs(upper))


def _least_magnitude(a0, a1):
    """The smallest |a| over a in [a0, a1]: 0 where it holds 0."""
    return np.where((a0 <= 0) & (a1 >= 0), 0.0, np.minimum(abs(a0), abs(a1)))


def _to_unit_ball(rows):
    """Scale the rows longer than 1 to norm 1, in place; their mask."""
    norms = np.sqrt(np.einsum("ij,ij->i", rows, rows))
    long = norms > 1.0
    if long.any():
        rows[long] /= norms[long, None]
    return long


def label_range(y_bound):
    """``(low, high)`` of a ``y_bound`` given as a pair or as ``b`` for ``(-b, b)``."""
    if np.ndim(y_bound) == 0:
        return -float(y_bound), float(y_bound)
    low, high = (float(v) for v in y_bound)
    return low, high


def feature_bounds(bounds_X, n_features):
    """``bounds_X`` as two float arrays of length ``n_features``, lower < upper."""
    try:
        lower, upper = (
            np.broadcast_to(np.asarray(b, dtype=np.float64), (n_features,)).copy()
            for b in bounds_X
        )
    except (TypeError, ValueError):
        raise ValueError(
            "bounds_X must be a pair (lower, upper) of scalars or arrays of length "
            f"n_features={n_features}; got {bounds_X!r}."
        ) from None
    if not (np.all(np.isfinite(lower)) and np.all(np.isfinite(upper))
            and np.all(lower < upper)):
        raise ValueError(
            "bounds_X must have finite lower < upper for every feature; got "
            f"{bounds_X!r}."
        )
    return lower, upper


def label_bounds(y_bound):
    """``(low, high)`` of ``y_bound``, validated: a positive scalar or low < high."""
    try:
        low, high = label_range(y_bound)
    except (TypeError, ValueError):
        raise ValueError(
            f"y_bound must be a positive number or a pair (low, high); got {y_bound!r}."
        ) from None
    if not (np.isfinite(low) and np.isfinite(high) and low < high):
        raise ValueError(
            f"y_bound must be a positive number or a pair with low < high; got {y_bound!r}."
        )
    return low, high


def bound_params(estimator):
    """The declared bounds of ``estimator``: its :data:`BOUND_PARAMS` as a
    dict, or with a ``schema`` the encoded ranges and label range it declares."""
    params = {name: getattr(estimator, name) for name in BOUND_PARAMS}
    schema = getattr(estimator, "schema", None)
    return params if schema is None else schema_bounds(estimator, **params)


def fitted_scaler(estimator):
    """The :class:`DomainScaler` of an estimator's resolved bounds
    (``data_norm_``, ``bounds_X_``, ``y_bound_``) and its schema's layout."""
    return DomainScaler(estimator.data_norm_, estimator.y_bound_, estimator.fit_intercept,
                        estimator.bounds_X_, estimator_layout(estimator))


def read_from_data(data_norm=None, bounds_X=None, y_bound=None):
    """Names of the bounds that :func:`resolve_bounds` reads from the data.

    A function of the declared bounds alone: ``data_norm`` when neither it
    nor ``bounds_X`` is given, ``y_bound`` when it is not given. Empty when
    every bound is declared.
    """
    names = []
    if data_norm is None and bounds_X is None:
        names.append("data_norm")
    if y_bound is None:
        names.append("y_bound")
    return tuple(names)


def read_from_data_warning(name):
    """The text of the PrivacyLeakWarning raised when the bound ``name`` is
    read from the data."""
    return (
        f"{name} was not given, so it is read from the data. This "
        "leaks information about the data and the reported privacy "
        f"guarantees do not cover it. Declare {name}"
        f"{' or bounds_X' if name == 'data_norm' else ''} to avoid this."
    )


def resolve_bounds(X, y, data_norm=None, bounds_X=None, y_bound=None, *, stacklevel=2):
    """The declared bounds, validated, or the data's own with a PrivacyLeakWarning.

    ``X`` and ``y`` are the validated training rows and labels (numpy or
    Dask); ``data_norm``, ``bounds_X`` and ``y_bound`` the estimator's
    parameters. Those named by :func:`read_from_data` are read from the
    data: the largest row norm, the largest absolute label (1 where it is
    0). ``stacklevel`` is that of the warnings as the caller would pass it
    to :func:`warnings.warn`: they must point at the user's call.

    Returns ``(data_norm, bounds_X, y_bound)``, as
    :meth:`~sklearn_pdp.linear_model._base.PrivateRegressorMixin.resolve_bounds`
    documents them: ``data_norm`` a float (None with ``bounds_X``),
    ``bounds_X`` two float arrays of length n_features or None.
    """
    declared_X = bounds_X
    if bounds_X is not None:
        if data_norm is not None:
            raise ValueError(
                "Give either data_norm or bounds_X, not both (got "
                f"data_norm={data_norm!r} and bounds_X={bounds_X!r})."
            )
        bounds_X = feature_bounds(bounds_X, X.shape[1])
    observed = {"data_norm": lambda: row_norms(X).max(), "y_bound": lambda: abs(y).max()}
    bounds = {"data_norm": data_norm, "y_bound": y_bound}
    for name in read_from_data(data_norm, bounds_X, y_bound):
        warnings.warn(read_from_data_warning(name), PrivacyLeakWarning,
                      stacklevel=stacklevel + 1)
        bounds[name] = float(compute(observed[name]())[0]) or 1.0
    data_norm, y_bound = bounds["data_norm"], bounds["y_bound"]
    low, high = label_bounds(y_bound)
    x_scale = data_norm if bounds_X is None else np.max(bounds_X[1] - bounds_X[0])
    # coef_ = theta * y_bound / data_norm must be representable.
    ratio = (high - low) / x_scale
    if not (np.isfinite(x_scale) and np.finfo(float).tiny <= ratio < np.inf):
        raise ValueError(
            "y_bound / data_norm (label range over feature range) must be a "
            f"finite, normal float64 number (got data_norm={data_norm!r}, "
            f"bounds_X={declared_X!r}, y_bound={y_bound!r}): the "
            "coefficients in the units of the data would overflow or underflow."
        )
    return (None if data_norm is None else float(data_norm)), bounds_X, y_bound


def warn_clipping(clipped, stacklevel=2):
    """A :class:`~sklearn_pdp.exceptions.BoundsWarning` when the declared
    bounds moved more than ``CLIP_WARN_SHARE`` of the rows or of the labels
    (``clipped``: their shares, from :meth:`~sklearn_pdp.utils._rows.ScaledData.scan`)."""
    if not clipped:
        return
    shares = {k: float(v) for k, v in clipped.items()}
    if not any(v > CLIP_WARN_SHARE for v in shares.values()):
        return
    parts = []
    if shares["labels"] > CLIP_WARN_SHARE:
        parts.append(f"{shares['labels']:.1%} of the labels (outside y_bound)")
    if shares["rows"] > CLIP_WARN_SHARE:
        parts.append(f"{shares['rows']:.1%} of the rows (outside bounds_X, or "
                     "longer than data_norm)")
    warnings.warn(
        f"The declared bounds clip {' and '.join(parts)}: the model is biased "
        "towards the bounds. Check that the bounds are in the units of the "
        "data. For the curator only: these shares are computed from the private "
        "data and are not covered by the privacy guarantee, do not publish them.",
        BoundsWarning, stacklevel=stacklevel + 1,
    )
