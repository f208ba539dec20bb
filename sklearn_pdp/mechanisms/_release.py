"""Release objects: one per mechanism, the whole of what it releases and costs.

A :class:`Release` is one mechanism's release on one data set, in the
privacy domain (rows in the unit ball, labels in [-1, 1]): calibrated from
the budget by its classmethod ``from_budget`` (the model is dp-accounting's
``from_privacy_guarantee``), it draws the released coefficients, states the
data-independent guarantee, gives every row's exact per-instance loss in
both directions (removed from the data, or added to it), and holds the law
that a published report bounds losses with (:doc:`/publish`). The estimator
stores it as ``release_`` and reads ``pdp_losses_``, ``dp_epsilon_`` and
:meth:`pdp_epsilon` from it; the report and the publication use the same
object, so no loss is computed in two places.

Two releases any estimator can make live here too: :class:`MeanRelease`,
the private label mean where the budget buys no slopes, and
:class:`ExactRelease`, least squares at ``epsilon=inf``.

A release holds statistics of the private data (its ridge system, sums):
:meth:`Release.public` is the copy without them that a published report
keeps.
"""

import copy
from abc import ABC, abstractmethod
from functools import partial

import numpy as np
from scipy import linalg

from ..accounting import (
    GAUSSIAN_DELTA_SHARE, compose_with_gaussian, gaussian_allowance, gaussian_epsilon,
    gaussian_noise_scale, laplace_epsilon, laplace_noise_scale,
)
from ..report._profile import PrivacyProfile
from ..utils._people import PersonLosses
from ..utils._ridge_system import RidgeSystem, out_of_sample


class Release(ABC):
    """One mechanism's release on one data set (scaled coordinates).

    Subclasses implement

    - ``from_budget(epsilon, delta, data, *, scaler, **params)``
      (classmethod): calibrate at the public size and read from ``data``
      (``ScaledData``) the statistics the release needs;
    - :meth:`draw`: fresh draws of the released coefficients;
    - :meth:`losses`: each row's exact per-instance epsilon at ``delta``;

    and, for published reports (:doc:`/publish`), the law: :meth:`epsilon`
    (the loss as a function of a row's statistics, composed with a Gaussian
    publication), :meth:`dp_epsilon`, :meth:`gaussian_allowance`, and where
    the defaults do not fit :meth:`statistics`,
    :meth:`published_statistics`, :meth:`residual_margin` and
    :meth:`cap_epsilon`.

    A release with a closed form (or a certified method) for a person's
    rows removed or added together implements
    ``person_losses(gram, cross, sizes, add=False)``, from each person's
    sums of their scaled rows z (``gram``: ``sum z z^T``, ``cross``:
    ``sum y z``, ``sizes``: their numbers of rows; with a true
    ``person_label_squares`` class attribute, also ``label_squares``:
    ``sum y^2``): a :class:`~sklearn_pdp.utils._people.PersonLosses`, each
    person's epsilon at ``delta`` (``nan`` where it is not certified) and
    its kind, or None where it has none for this data set (:doc:`/people`).

    Public attributes (what a published report may read): ``scaler`` (the
    declared domain, a ``DomainScaler``), ``intercept``, ``n_samples`` (the
    public size), ``delta``, ``guarantee`` (the data-independent
    ``(epsilon, delta)``, reported as ``dp_epsilon_``/``dp_delta_``),
    ``alpha`` (the ridge on the slopes; ``inf`` for the label mean alone),
    ``coef`` (the released coefficients, scaled, once :meth:`release` has
    drawn them), ``reason`` (why less than asked was released, or None) and
    ``kind`` (what kind of number :meth:`losses` gives: ``"exact"``,
    ``"conditional"`` or ``"bound"``).
    The names in ``_private`` hold statistics of the private data.

    Row statistics are dicts with the keys of
    :meth:`~sklearn_pdp.utils._ridge_system.RidgeSystem.row_statistics`
    (``leverage``, ``residual``, ``inverse_norm2``, ``norm2``), in-sample:
    against the ridge system of the data that contains the row.
    """

    # a published report of this law needs a noisy Gram matrix of the rows
    needs_gram = True
    # every person's bound is one public number: the publication spends nothing
    # (:class:`~sklearn_pdp.mechanisms._guarantee_law.GuaranteeLaw`)
    data_independent = False
    # attributes holding statistics of the private data (dropped by :meth:`public`)
    _private = ("ridge",)
    # what each row's loss of :meth:`losses` is: "exact", "conditional" (exact
    # given released quantities the row cannot influence) or "bound" (a valid
    # upper bound); for rows of different kinds, the weakest
    kind = "exact"

    def __init__(self, *, scaler, n_samples, delta, guarantee, alpha=0.0, coef=None):
        self.scaler = scaler
        self.intercept = bool(scaler.fit_intercept)
        self.n_samples = int(n_samples)
        self.delta = float(delta)
        self.guarantee = (float(guarantee[0]), float(guarantee[1]))
        self.alpha = float(alpha)
        self.coef = None if coef is None else np.asarray(coef, dtype=np.float64)
        self.reason = None

    @classmethod
    @abstractmethod
    def from_budget(cls, epsilon, delta, data, *, scaler, **params):
        """The release calibrated to ``(epsilon, delta)`` on ``data``."""

    @abstractmethod
    def draw(self, rng, size=None):
        """Fresh draw(s) of the released coefficients (scaled): one vector,
        or ``size`` of them as rows."""

    def release(self, rng):
        """The fit's draw: sets ``coef`` (and what the draw decides, such as
        ``reason``) and returns it."""
        self.coef = np.asarray(self.draw(rng), dtype=np.float64)
        return self.coef

    def fitted_attributes(self):
        """The mechanism's public fitted attributes for the estimator
        (``alpha_``, ``noise_scale_``, ...), by name."""
        return {}

    @abstractmethod
    def losses(self, Xs, ys, add=False):
        """Exact per-instance epsilon at ``delta`` of each row: removed from
        the data (the rows are training rows) or, with ``add``, added to it
        (``ys`` None: the worst label)."""

    def row_losses(self, add=False):
        """:meth:`losses` as a function of ``(Xs, ys)`` for a pass over the
        rows (a mechanism may return a ``TwoStageRows``)."""
        return partial(self.losses, add=add)

    def statistics(self, Xs, ys, add=False):
        """Exact statistics of the rows for :meth:`epsilon`: in-sample
        leverage, residual, ``||H^{-1} x||^2`` and ``||x||^2`` of training
        rows, or (``add``) those the rows would have once added (``ys``
        None: the worst label, an end of [-1, 1])."""
        return ridge_statistics(self.ridge, Xs, ys, add)

    def profile(self, losses, mechanism):
        """The rows' :class:`~sklearn_pdp.report._profile.PrivacyProfile` from their
        ``losses``: by default only the epsilons at ``delta``."""
        return PrivacyProfile(
            "epsilon_delta", losses, delta=self.delta, guarantee=self.guarantee[0],
            guarantee_delta=self.guarantee[1], n_samples=self.n_samples,
            mechanism=mechanism,
        )

    def public(self):
        """A copy without the statistics of the private data: the law that a
        published report keeps."""
        law = copy.copy(self)
        for name in self._private:
            law.__dict__.pop(name, None)
        return law

    # -- the law of a published report ------------------------------------

    def epsilon(self, delta, stats, gaussian_ratio=None):
        """Per-instance epsilon at ``delta`` of removing a row with
        statistics ``stats``, composed with an independent Gaussian
        mechanism of ratio ``gaussian_ratio``; given upper bounds of the
        statistics, an upper bound (the largest loss over that box)."""
        raise NotImplementedError(
            f"{type(self).__name__} does not support published reports yet.")

    def dp_epsilon(self, delta, gaussian_ratio=None):
        """The data-independent guarantee at ``delta``, composed with a
        Gaussian mechanism of worst ratio ``gaussian_ratio``."""
        raise NotImplementedError(
            f"{type(self).__name__} does not support published reports yet.")

    def gaussian_allowance(self, delta, target):
        """The largest worst ratio of a Gaussian publication for which
        :meth:`dp_epsilon` is at most ``target``."""
        raise NotImplementedError(
            f"{type(self).__name__} does not support published reports yet.")

    def cap_epsilon(self, delta, gaussian_ratio=None):
        """The largest loss at ``delta`` of a row removed from the ``n`` rows
        or added to them; by default :meth:`dp_epsilon` (a release whose
        guarantee does not cover an added person overrides it)."""
        return self.dp_epsilon(delta, gaussian_ratio)

    def residual_margin(self, beta, stats):
        """A bound on ``|x^T (coef - theta_hat)|`` that holds with
        probability at least ``1 - beta`` over the noise, for a fixed row."""
        raise NotImplementedError(
            f"{type(self).__name__} does not support published reports yet.")

    def published_statistics(self, published, Xs, ys):
        """Upper values of each row's statistics from a published report
        alone, valid with probability at least ``1 - published.beta``."""
        return published.ridge_statistics(Xs, ys)


def ridge_statistics(ridge, Xs, ys, add=False):
    """:meth:`Release.statistics` against the ridge system ``ridge``."""
    stats = ridge.row_statistics(Xs, ys, inverse_norm=True, norm=True)
    if not add:
        return stats
    if ys is None:  # the loss grows with |r|
        stats["residual"] = 1.0 + np.abs(Xs @ ridge.coef)
    return out_of_sample(stats)


def block_ratio(noise_scale, changes2):
    """The Gaussian ratio of a release made of noisy blocks:
    sqrt(sum_b change_b^2 / sigma_b^2) over the blocks with noise."""
    return np.sqrt(sum(
        changes2[key] / sigma**2 for key, sigma in noise_scale.items() if sigma > 0
    ))


class GaussianRelease(Release):
    """A release that is one Gaussian mechanism of noisy blocks.

    ``noise_scale`` maps each released block to its noise's standard
    deviation; a row's statistics are the squared changes of the blocks
    (same keys); the loss is the analytic Gaussian epsilon at their
    :func:`block_ratio`, capped by the domain's ``worst_ratio``, and a
    Gaussian publication composes exactly (the ratios add in squares).
    """

    def __init__(self, *, noise_scale, worst_ratio, **common):
        super().__init__(**common)
        self.noise_scale = dict(noise_scale)
        self.worst_ratio = float(worst_ratio)

    def cap_ratio(self):
        """The largest ratio of a row removed or added: by default the
        domain's worst for removals, ``worst_ratio``."""
        return self.worst_ratio

    def epsilon(self, delta, stats, gaussian_ratio=None):
        extra = 0.0 if gaussian_ratio is None else gaussian_ratio
        ratio = np.minimum(block_ratio(self.noise_scale, stats), self.cap_ratio())
        return gaussian_epsilon(delta, np.hypot(ratio, extra))

    def cap_epsilon(self, delta, gaussian_ratio=None):
        extra = 0.0 if gaussian_ratio is None else gaussian_ratio
        return float(gaussian_epsilon(delta, np.hypot(self.cap_ratio(), extra)))

    def dp_epsilon(self, delta, gaussian_ratio=None):
        extra = 0.0 if gaussian_ratio is None else gaussian_ratio
        return float(gaussian_epsilon(delta, np.hypot(self.worst_ratio, extra)))

    def gaussian_allowance(self, delta, target):
        total = 1.0 / gaussian_noise_scale(target, delta)
        if not total > self.worst_ratio:
            raise ValueError(
                f"The release alone costs {self.dp_epsilon(delta):.4g} at this delta: "
                f"nothing is left for a publication within {target:.4g}; raise "
                "publish_epsilon."
            )
        return float(np.sqrt(total**2 - self.worst_ratio**2))


class ExactRelease(Release):
    """The release at ``epsilon=inf``: least squares on the scaled (clipped)
    data, without noise (no ridge; the minimum-norm solution where X^T X is
    singular or too ill-conditioned to factorise). Every row's loss is
    infinite: the release is a deterministic function of the data."""

    _private = ("ridge", "exact")

    @classmethod
    def from_budget(cls, epsilon, delta, data, *, scaler):
        XtX, Xty = data.gram()
        release = cls(scaler=scaler, n_samples=data.n_samples, delta=delta,
                      guarantee=(np.inf, delta))
        try:
            release.ridge = RidgeSystem(XtX, Xty, 0.0, release.intercept)
            release.exact = release.ridge.coef
        except ValueError:  # rank deficient: the minimum-norm solution
            release.exact = linalg.lstsq(XtX, Xty, check_finite=False)[0]
        return release

    def draw(self, rng, size=None):
        return self.exact.copy() if size is None else np.tile(self.exact, (size, 1))

    def fitted_attributes(self):
        return {"alpha_": 0.0, "noise_scale_": 0.0}

    def losses(self, Xs, ys, add=False):
        return np.full(Xs.shape[0], np.inf)


def _label_sum(start, Xs, ys):
    return ys.sum()


class MeanRelease(Release):
    """The label sum of the scaled data plus Laplace noise of scale
    ``noise_scale``, for which a change of 1 costs exactly ``(epsilon,
    delta)``: slopes 0, intercept the noisy sum over the public size
    (:ref:`mean-fallback`).

    Below about 100 units of ``n_samples * epsilon`` per coefficient the
    mechanisms' slopes buy little while their own intercepts are noisy
    (a residual-based sensitivity of 2 where the label sum's is 1, and a
    share of the budget spent on the slopes); there the estimators (with an
    intercept and an epsilon budget) release the label mean alone, by the
    Laplace mechanism with the whole budget, whose noise on one number is far
    smaller than the Gaussian mechanism's at the same (epsilon, delta). A
    row's loss is that of the Laplace mechanism at ratio ``|y_i| / b``,
    exact, in closed form and the same in both directions. The switch
    (:mod:`~sklearn_pdp.mechanisms.mean._fallback`) is a function of public quantities
    (n, d, epsilon) only.

    Without an intercept (a user-set hyper-parameter that cannot meet the
    budget) no coefficient holds a mean: the release is the zero model,
    which reads no label, and every row's loss is 0.

    Holds the exact sum (a statistic of the private data). A row's loss
    is a public function of its label, the same in both directions, so a
    published report needs no Gram matrix (``needs_gram``); a Gaussian
    publication composes by basic composition.
    """

    needs_gram = False
    _private = ("label_sum",)

    def __init__(self, *, label_sum, n_coef, epsilon, records=1, **common):
        super().__init__(alpha=np.inf, guarantee=(epsilon, common["delta"]), **common)
        # ``records``: the public cap on a person's rows, moving the sum by up to it
        self.records = int(records)
        self.noise_scale = self.records * noise_scale(epsilon, self.delta)
        self.budget = (float(epsilon), self.delta)
        self.label_sum = float(label_sum)
        self.n_coef = int(n_coef)

    @classmethod
    def from_budget(cls, epsilon, delta, data, *, scaler, records=1):
        # the features play no part: only the labels are read (and their clipping counted)
        label_sum = float(data.scan(_label_sum, rows=False))
        return cls(label_sum=label_sum, n_coef=data.n_features, epsilon=epsilon,
                   delta=delta, scaler=scaler, n_samples=data.n_samples, records=records)

    def person_losses(self, gram, cross, sizes, add=False):
        """Exact loss of removing (adding) each person's rows together: the
        Laplace mechanism at the ratio ``|sum y| / b`` (``cross``'s last
        column: the constant feature is 1)."""
        change = np.abs(cross[:, -1]) if self.intercept else np.zeros(sizes.shape[0])
        return PersonLosses.of(laplace_epsilon(self.delta, change / self.noise_scale), self.kind)

    def draw(self, rng, size=None):
        noise = rng.laplace(scale=self.noise_scale, size=1 if size is None else size)
        theta = np.zeros((noise.size, self.n_coef))
        if self.intercept:
            theta[:, -1] = (self.label_sum + noise) / self.n_samples
        return theta[0] if size is None else theta

    def statistics(self, Xs, ys, add=False):
        """Change of the label sum by each row (the worst, 1, when ``ys`` is
        None); 0 without an intercept (the zero model)."""
        return _label_change(Xs, ys, self.intercept)

    def losses(self, Xs, ys, add=False):
        ratio = self.statistics(Xs, ys)["ysum"] / self.noise_scale
        # the worst row costs exactly the budget: the upward rounding must not add
        return np.minimum(laplace_epsilon(self.delta, ratio), self.budget[0])

    def profile(self, losses, mechanism):
        """Laplace: each row's ratio ``|y| / b`` recovered from its
        ``losses`` (a function of the row's own label: usable by individual
        filters); a record moves the sum by at most 1 at any size."""
        worst = 1.0 / self.noise_scale
        return PrivacyProfile.from_losses(
            "laplace", losses, self.delta, guarantee=worst, n_samples=self.n_samples,
            mechanism=mechanism, own_record=True, step=lambda size: worst,
        )

    def _epsilon_at(self, ratio):
        def at(delta):
            return np.minimum(laplace_epsilon(delta, ratio), self._dp(delta))
        return at

    def _dp(self, delta):
        # the worst person's ratio is records / b; at the fit's delta exactly the budget
        return self.budget[0] if delta == self.budget[1] else laplace_epsilon(
            delta, self.records / self.noise_scale)

    def epsilon(self, delta, stats, gaussian_ratio=None):
        return compose_with_gaussian(self._epsilon_at(stats["ysum"] / self.noise_scale),
                                     delta, gaussian_ratio)

    def dp_epsilon(self, delta, gaussian_ratio=None):
        return float(compose_with_gaussian(self._dp, delta, gaussian_ratio))

    def gaussian_allowance(self, delta, target):
        alone = self.dp_epsilon(delta * (1.0 - GAUSSIAN_DELTA_SHARE))
        return gaussian_allowance(alone, delta, target)

    def published_statistics(self, published, Xs, ys):
        return self.statistics(Xs, ys)


def noise_scale(epsilon, delta):
    """Scale of the Laplace noise on the label sum (sensitivity 1) at the
    budget; its variance ``2 b^2`` is the private mean's error times n^2."""
    return float(laplace_noise_scale(epsilon, delta))


def _label_change(Xs, ys, intercept=True):
    if not intercept:
        return {"ysum": np.zeros(Xs.shape[0])}
    return {"ysum": np.ones(Xs.shape[0]) if ys is None else np.abs(ys)}
