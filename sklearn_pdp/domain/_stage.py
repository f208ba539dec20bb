"""The stage that resolves a fit's domain before the model: the first step
of the fit template (:class:`~sklearn_pdp.linear_model._base.PrivateRegressorMixin`).

A stage answers, for one fit, on which domain, on which rows and with which
budget the model is fitted, and what each row's loss for the whole release
is, with the kind of that number. Two stages:

- :class:`DeclaredStage` (here): the declared bounds (or those read from
  the data); nothing is released before the model, which has the whole
  budget, and each row's loss is the release's own.
- :class:`~._split.SplitStage`: the declared bounds privately tightened on
  one part of the rows, the model fitted on the other part at the released
  bounds (parallel composition); chosen by
  :func:`~._split.resolve_stage`.

Also here: what a model fitted on bounds released elsewhere (the private
search's, which tightens once for all its fits and composes sequentially)
charges each row whatever bounds were released (:func:`charged_loss`,
:class:`_BoxRows`).
"""

import numpy as np

from ..utils._arrays import is_dask_array, row_norms
from ..utils._dask import scaled_data
from ..utils._people import person_sums
from ._scaler import warn_clipping
from ..mechanisms._release import MeanRelease


class DeclaredStage:
    """The declared domain: the whole budget for the model, whose own
    per-row losses are the fit's (of the release's kind).

    Parameters
    ----------
    bounds : tuple
        The resolved ``(data_norm, bounds_X, y_bound)``.
    n_samples : int
        Number of training rows.
    n_jobs : int or None
        Threads of a pass over rows held in memory.
    """

    model_params = {}  # the model's calibration is the estimator's own
    clips_rows = False

    def __init__(self, bounds, n_samples, n_jobs=None):
        self.bounds = bounds
        self.n_jobs = n_jobs
        self.model_rows = np.ones(n_samples, dtype=bool)
        self.losses = np.zeros(n_samples)

    def model_part(self, X, y):
        """The rows the model is fitted on: all of them."""
        return X, y

    def fit_model(self, release, scaler, X):
        """Bind the drawn model ``release`` and its ``scaler`` (training rows ``X``)."""
        self.release, self.scaler = release, scaler
        return self

    @property
    def kind(self):
        return self.release.kind

    def guarantee(self):
        return self.release.guarantee

    def fitted_attributes(self):
        return {}

    def row_losses(self, X, y, add=False, data=None, keys=None):
        """Each row's loss for the whole release: the release's own
        (``data``: the rows already scaled; ``keys``, their people's, play
        no part)."""
        data = scaled_data(X, y, self.scaler, self.n_jobs) if data is None else data
        return data.map_rows(self.release.row_losses(add=add))

    def dp_epsilon(self, delta):
        """The data-independent epsilon of the whole release at ``delta``."""
        return float(self.release.dp_epsilon(delta))

    def group_losses(self, X, y, codes, sizes, add=False, data=None, keys=None):
        """Each group's loss for removing (adding) its rows ``X``, ``y``
        together, with its kind (``codes``: each row's group, -1 for none;
        ``sizes``: the groups' numbers of rows; ``data``: the rows scaled,
        if at hand): the release's
        :class:`~sklearn_pdp.utils._people.PersonLosses`, or None where it
        has no closed form."""
        if getattr(self.release, "person_losses", None) is None:
            return None
        data = scaled_data(X, y, self.scaler, self.n_jobs) if data is None else data
        return release_person_losses(self.release, data, codes, sizes, add)

    def statistics(self):
        return self.release.statistics

    def law(self):
        return self.release.public()

    def profile(self, losses, mechanism):
        return self.release.profile(losses, mechanism)

    def clip(self, X):
        return X

    def cap(self):
        """The largest loss at ``delta`` of a person removed or added, over
        every data set of the domain: the guarantee, and for a person added
        the release's cap (:func:`added_guarantee`)."""
        return max(float(self.release.guarantee[0]), added_guarantee(self.release))

    def box_rows(self, bounds_release, X):
        """The :class:`_BoxRows` of a model fitted on bounds drawn from
        ``bounds_release`` elsewhere (a private search's), or None where it
        charges its guarantee (:func:`box_rows`)."""
        return box_rows(bounds_release, self.release, self.scaler, X)

    def warn_clipping(self, clipped, stacklevel):
        warn_clipping(clipped, stacklevel=stacklevel + 1)


def release_person_losses(release, data, codes, sizes, add=False):
    """The release's loss of each person with its kind, a
    :class:`~sklearn_pdp.utils._people.PersonLosses` (``codes``: each scaled
    row's person in ``data``, -1 for none; ``sizes``: their numbers of
    rows), from their sums; None where the release has no closed form."""
    exact = getattr(release, "person_losses", None)
    if exact is None:
        return None
    extra = {}
    if getattr(release, "person_label_squares", False):
        extra["label_squares"] = label_squares(data, codes, sizes.size)
    return exact(*person_sums(data, codes, sizes.size), sizes, add=add, **extra)


def label_squares(data, codes, n_people):
    """Each person's ``sum y^2`` over their scaled labels (rows with a
    negative code left out): with :func:`person_sums`, the Gram matrix of
    their rows [x, y] (the sketch's)."""
    def part(start, Xs, ys):
        own = codes[start:start + Xs.shape[0]]
        keep = own >= 0
        return np.bincount(own[keep], weights=np.square(np.asarray(ys)[keep]),
                           minlength=n_people)

    return data.reduce(part, combine=np.add)


def added_guarantee(release):
    """The largest loss, at the release's delta, of a person added to the n
    rows it was calibrated for, over every data set and row of the domain
    (so whatever bounds were released): its ``cap_epsilon``, the removal
    guarantee where that covers additions (:doc:`/mechanisms/tightening`)."""
    if not np.isfinite(release.guarantee[0]):
        return release.guarantee[0]
    return float(release.cap_epsilon(release.delta))


def charged_loss(model, rows, X, y, add):
    """A fit on bounds released elsewhere (a private search's): each row's
    model loss valid for every released bound, at the model's delta:
    AdaSSP's largest over the plausible bounds (``rows``,
    :func:`bounded_loss`), else the guarantee for a training row and the
    stage's cap for one added (with the model's own bounds' guarantee where
    it tightened them again)."""
    if rows is not None:
        return bounded_loss(model.release_, rows, X, y, add, model.delta, model.dp_epsilon_)
    return model.domain_stage().cap() if add else model.dp_epsilon_


def box_rows(bounds_release, release, scaler, X):
    """The :class:`_BoxRows` of a model ``release`` (on ``scaler``, training
    rows ``X``) fitted on bounds drawn from ``bounds_release``, or None when
    the model charges its guarantee (no ``box_epsilon``, no share of delta
    kept, or the label mean alone)."""
    if not (hasattr(release, "box_epsilon") and bounds_release.event_) or isinstance(
            release, MeanRelease):
        return None
    return _BoxRows(bounds_release, bounds_release.plausible(bounds_release.event_),
                    scaler).fit(X)


def bounded_loss(release, rows, X, y, add, delta, guarantee):
    """A row's largest loss for the model ``release`` at ``delta`` over the
    plausible released bounds of ``rows`` (:class:`_BoxRows`), capped at
    ``guarantee`` for a training row; not for an added one (``add``), whose
    row can move the release more than the noise was sized for (AdaSSP's
    eigenvalue)."""
    Z, ys, eigen2 = rows.bound(X, y, add)
    eps = release.box_epsilon(Z, ys, eigen2, delta)
    return eps if add else np.minimum(eps, guarantee)


class _BoxRows:
    """Upper bounds on a row's scaled entries, label and eigenvalue change
    that hold for every released bound within the plausible ranges."""

    def __init__(self, release, ranges, scaler):
        self.release = release
        self.scaler = scaler  # the model's: for the ranges not tightened
        self.intercept = scaler.fit_intercept
        data_norm, bounds_X, y_bound = release.declared
        self.norm_min = None
        if bounds_X is None and data_norm is not None:
            self.norm_min = ranges[0][0]
        self.lo, self.hi, self.cross = release.box(ranges) if (
            bounds_X is not None or y_bound is not None) else (None, None, None)
        self.n_features = None if bounds_X is None else bounds_X[0].shape[0]

    def _entries(self, X, y):
        """|z| bounds of the feature entries (scaled, unit ball) and |y_s|."""
        ys = None
        d = X.shape[1]
        if self.n_features is not None:
            Z = self.scaler.entry_magnitudes(
                self.scaler.range_magnitudes(X, self.lo[:, :d], self.hi[:, :d], self.cross[:d]),
                X)
        elif self.norm_min is not None:  # |x_j| / max(c, ||x||) falls with c
            Z = np.abs(X) / np.maximum(self.norm_min, row_norms(X))[:, None]
        elif is_dask_array(X):  # the features' declared bounds, not tightened
            Z = X.map_blocks(lambda b: np.abs(self.scaler.scale(b)[:, :d]), dtype=np.float64)
        else:
            Z = np.abs(self.scaler.scale(X)[:, :d])
        if y is not None and self.release.declared[2] is not None:
            ys = self.scaler.range_magnitudes(y, self.lo[:, -1], self.hi[:, -1], self.cross[-1])
        return Z, ys

    def fit(self, X):
        """Record the mean of the entries' bounds over the training rows."""
        Z, _ = self._entries(X, None)
        self.mean = Z.mean(axis=0) if not is_dask_array(Z) else Z.mean(axis=0).compute()
        self.n = X.shape[0]
        return self

    def bound(self, X, y, add):
        """``(Z, ys, eigen2)`` for :meth:`~sklearn_pdp.mechanisms.adassp._release.AdaSSPRelease.box_epsilon`."""
        Z, ys = self._entries(X, y)
        if y is not None and ys is None:  # the label range was not tightened
            ys = np.abs(self.scaler.scale_labels(y))
        if self.intercept:
            # rank-one change n/(n -+ 1) ||z - z_bar||^2 (Weyl), with
            # |z_j - z_bar_j| <= |z_j| + mean |z_j| for every released bound
            gap = np.einsum("ij,ij->i", Z + self.mean, Z + self.mean)
            eigen = gap * self.n / (self.n + 1 if add else max(self.n - 1, 1))
            Z = np.column_stack([Z, np.ones(Z.shape[0])])
        else:
            eigen = np.einsum("ij,ij->i", Z, Z)
        return Z, ys, eigen**2

