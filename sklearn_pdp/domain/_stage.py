"""The stage that resolves a fit's domain before the model: the first step
of the fit template (:class:`~sklearn_pdp.linear_model._base.PrivateRegressorMixin`).

A stage answers, for one fit, on which domain, on which rows and with which
budget the model is fitted, and what each row's loss for the whole release
is, with the kind of that number. Two stages:

- :class:`DeclaredStage`: the declared bounds (or those read from the
  data); nothing is released before the model, which has the whole budget,
  and each row's loss is the release's own.
- :class:`TightenedStage`: the declared bounds privately tightened first
  (:mod:`._tighten`), the model fitted on the released ones with the rest
  of the budget (sequential composition: every row is seen by both).

Accounting of the tightened stage. The model is chosen by the released
bounds (adaptive composition); its per-instance loss at the released
bounds would condition on the draw. Whatever bounds are released, the
model's rows lie in the unit ball of its privacy domain, so its
data-independent guarantee bounds every row's loss for every outcome, and
its cap for a person added (:func:`added_guarantee`) every added row's;
AdaSSP charges instead its largest per-row loss over the bounds released
with non-negligible probability (:class:`_BoxRows`), keeping a share of
delta for the others. A row's loss for the whole release is the sum (an
upper bound: kind "bound").

A stage reads the estimator's parameters (:func:`resolve_stage`) and,
once the release is drawn, the release and the scaler it is given
(``fit_model``): it never calls back into the estimator.
"""

import numpy as np

from ..utils._arrays import is_dask_array, row_norms
from ..utils._dask import scaled_data
from ._scaler import resolve_bounds, warn_clipping
from ..mechanisms._guarantee_law import GuaranteeLaw
from ..report._profile import PrivacyProfile
from ..mechanisms._release import MeanRelease
from ._schema import estimator_layout
from ._tighten import plan_release, released_bounds, remaining_epsilon, tightening_on


def resolve_stage(estimator, X, y, resolved, rng):
    """The stage of a fit of ``estimator`` (its parameters only) on the
    validated ``X``, ``y``: the :class:`TightenedStage` where its
    ``tighten_bounds`` applies (the bounds drawn from ``rng``, before the
    model's noise), else the :class:`DeclaredStage` of ``resolved`` (the
    bounds of :meth:`~sklearn_pdp.linear_model._base.PrivateRegressorMixin.resolve_bounds`)."""
    epsilon, delta = getattr(estimator, "epsilon", None), estimator.delta
    if tightening_on(estimator):
        # stack of its warning: plan_release, here, fit, its wrapper, the user
        release = plan_release(estimator, resolved, X.shape[0], epsilon, delta, stacklevel=5)
        if release is not None:
            return TightenedStage(release, resolved, X, y, rng, epsilon, delta,
                                  estimator.n_jobs, estimator_layout(estimator))
    return DeclaredStage(resolved, X.shape[0], estimator.n_jobs)


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

    def row_losses(self, X, y, add=False, data=None):
        """Each row's loss for the whole release: the release's own
        (``data``: the rows already scaled)."""
        data = scaled_data(X, y, self.scaler, self.n_jobs) if data is None else data
        return data.map_rows(self.release.row_losses(add=add))

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


class TightenedStage:
    """The declared bounds tightened privately before the model.

    Fits the bounds' quantiles (:class:`~._tighten.BoundsRelease`) on the
    rows, draws the released bounds from ``rng``, and leaves the model the
    rest of the budget: ``epsilon`` less the bounds', ``delta`` less the
    share the release keeps (``event_``). ``losses``: each row's exact pure
    loss for the bounds.
    """

    kind = "bound"
    clips_rows = True  # predictions clip rows to the released bounds

    def __init__(self, bounds_release, resolved, X, y, rng, epsilon, delta, n_jobs=None,
                 layout=None):
        self.bounds_release = bounds_release.fit(X, y)
        self.declared = resolved
        released = released_bounds(bounds_release.draw(rng), resolved)
        if layout is not None:  # a schema's indicators keep their (0, 1)
            released["bounds_X"] = layout.restore_indicators(released["bounds_X"])
        self.bounds = resolve_bounds(X, y, **released)
        self.delta, self.event = delta, bounds_release.event_
        self.model_params = {"epsilon": remaining_epsilon(epsilon, bounds_release.epsilon),
                             "delta": delta - self.event, "tighten_bounds": False}
        self.model_rows = np.ones(X.shape[0], dtype=bool)
        self.losses = bounds_release.row_epsilon(X, y)
        self.n_jobs = n_jobs

    def fit_model(self, release, scaler, X):
        """Bind the drawn model ``release`` and its ``scaler``; for AdaSSP,
        record its training rows' box (:class:`_BoxRows`)."""
        self.release, self.scaler = release, scaler
        self.rows = box_rows(self.bounds_release, release, scaler, X)
        return self

    def guarantee(self):
        epsilon, delta = self.release.guarantee
        return self.bounds_release.epsilon + epsilon, delta + self.event

    def fitted_attributes(self):
        return {"declared_bounds_": self.declared, "bounds_release_": self.bounds_release,
                "bounds_epsilon_": self.bounds_release.epsilon}

    def row_losses(self, X, y, add=False, data=None):
        """Each row's loss for the whole release: the bounds' exact pure
        loss plus the model's part (:meth:`model_loss`). Without ``add``,
        ``X`` and ``y`` are the training rows."""
        own = self.bounds_release.row_epsilon(X, y, add=True) if add else self.losses
        return own + self.model_loss(X, y, add)

    def model_loss(self, X, y, add):
        """The model's part of each row's loss: its guarantee for a training
        row and its cap for a row added (:func:`added_guarantee`), or for a
        model whose release has ``box_epsilon`` (AdaSSP) its largest per-row
        loss over the plausible released bounds (at the model's delta; the
        bounds fall outside them with probability at most the rest of
        delta)."""
        epsilon = self.release.guarantee[0]
        if self.rows is None:
            return added_guarantee(self.release) if add else epsilon
        if is_dask_array(X):
            if y is None:
                return X.map_blocks(lambda b: self.model_loss(b, None, add),
                                    drop_axis=1, dtype=np.float64)
            return X.map_blocks(lambda b, yb: self.model_loss(b, yb[:, 0], add),
                                y[:, None], drop_axis=1, dtype=np.float64)
        return bounded_loss(self.release, self.rows, X, y, add, self.delta - self.event, epsilon)

    def law(self):
        """Every person's published bound is the public :meth:`cap`
        (:class:`~sklearn_pdp.mechanisms._guarantee_law.GuaranteeLaw`)."""
        return GuaranteeLaw(scaler=self.scaler, n_samples=self.release.n_samples,
                            delta=self.delta, guarantee=self.guarantee(), cap=self.cap())

    def statistics(self):
        return self.law().statistics

    def profile(self, losses, mechanism):
        """Bounds and model: only the composed epsilons."""
        epsilon, delta = self.guarantee()
        return PrivacyProfile("epsilon_delta", losses, delta=self.delta, guarantee=epsilon,
                              guarantee_delta=delta, n_samples=self.release.n_samples,
                              mechanism=mechanism)

    def clip(self, X):
        """``X`` clipped to the released bounds, as the training rows were."""
        clip = self.scaler.clip
        return X.map_blocks(clip, dtype=np.float64) if is_dask_array(X) else clip(X)

    def cap(self):
        """:meth:`DeclaredStage.cap` over every bound the release could
        produce, with the bounds' pure guarantee. A function of public
        quantities only; AdaSSP's charge over the plausible bounds
        (:func:`bounded_loss`) is at most it, since every scaled row it
        bounds lies in the unit ball."""
        return self.bounds_release.epsilon + max(self.release.guarantee[0],
                                                 added_guarantee(self.release))

    def box_rows(self, bounds_release, X):
        """None: a model that tightened its own bounds charges its cap."""
        return None

    def warn_clipping(self, clipped, stacklevel):
        """Silent: the released bounds clip the tails by design (up to 2
        ``_MAX_LEVEL`` of :mod:`._tighten`)."""


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

    @staticmethod
    def _magnitude(V, lo, hi, cross):
        """max over the two corners of |clip(v, lo, hi) - mid| / half."""
        out = np.zeros(V.shape)
        for a, b in zip(lo, hi):
            out = np.maximum(out, np.abs(np.clip(V, a, b) - 0.5 * (a + b)) / (0.5 * (b - a)))
        return np.where(cross, 1.0, out)

    def _entries(self, X, y):
        """|z| bounds of the feature entries (scaled, unit ball) and |y_s|."""
        ys = None
        d = X.shape[1]
        if self.n_features is not None:
            Z = self.scaler.entry_magnitudes(
                self._magnitude(X, self.lo[:, :d], self.hi[:, :d], self.cross[:d]), X)
        elif self.norm_min is not None:  # |x_j| / max(c, ||x||) falls with c
            Z = np.abs(X) / np.maximum(self.norm_min, row_norms(X))[:, None]
        elif is_dask_array(X):  # the features' declared bounds, not tightened
            Z = X.map_blocks(lambda b: np.abs(self.scaler.scale(b)[:, :d]), dtype=np.float64)
        else:
            Z = np.abs(self.scaler.scale(X)[:, :d])
        if y is not None and self.release.declared[2] is not None:
            ys = self._magnitude(y, self.lo[:, -1], self.hi[:, -1], self.cross[-1])
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

