"""Shared behaviour of the private regressors.

A fit validates the data, scales every row into the unit ball and every label
into [-1, 1] (chunk by chunk, the scaling folded into d x d products where it
can be: see ``_rows``), accumulates the sufficient statistics, and, after the
mechanism has drawn its noise on the driver, makes one more pass over the
rows for the per-instance losses (leverage, residual: one GEMM per chunk).
No n x d temporary is ever created: memory beyond X itself is O(d^2 +
chunk), on a Dask cluster per block (plus one or two values per row for OPS,
output perturbation and random projection on rows of 32 columns or more,
whose accounting then follows all the products: see ``_rows.TwoStageRows``).
"""

import warnings
from abc import ABCMeta, abstractmethod
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.utils.validation import check_is_fitted

from ..utils._sklearn import HasMethods, Interval, StrOptions, _fit_context
from ..report._public import public_model
from ..mechanisms._release import ExactRelease, MeanRelease
from ..utils._arrays import compute
from ..domain._scaler import bound_params, fitted_scaler, read_from_data, resolve_bounds
from ..utils._dask import scaled_data
from ..mechanisms.mean._fallback import FallbackMixin, released_text
from ..domain._split import resolve_stage
from ._people import added_people, resolve_units
from ..utils._validation import noise_generator, refuse_fit_params, validate_rows, warn_large_delta
from ..exceptions import FallbackWarning

# fitted attributes that validation sets before a fit's others are cleared
_VALIDATED = ("n_features_in_", "feature_names_in_")


class PrivateRegressorMixin(FallbackMixin, RegressorMixin, BaseEstimator,
                            metaclass=ABCMeta):
    """Base class of the package's private linear regressors.

    A subclass implements one hook, :meth:`_make_release` (the pattern of
    scikit-learn's ``BaseRandomProjection._make_random_matrix``): its
    mechanism's :class:`~sklearn_pdp.mechanisms._release.Release` on the data scaled
    into the privacy domain, calibrated to the budget; and
    ``_mechanism_guarantee``, the data-independent guarantee of
    :meth:`dp_guarantee` for a size (from the release's calibration). The
    fit draws the release, and reads ``dp_epsilon_``, ``pdp_losses_`` and
    the mechanism's fitted attributes from it (``release_``); so do
    :meth:`pdp_epsilon`, :meth:`release_law` and :meth:`privacy_profile`.
    The label mean (where the budget buys no slopes) and least squares (at
    ``epsilon=inf``) are releases like any other (:meth:`_choose_release`).

    The fit template, one pass down: validate ``X`` and ``y``; resolve the
    units of privacy (:func:`~._people.resolve_units`: records, or people
    with ``groups``: their rows kept, the calibration, their losses); resolve
    the domain as a *stage* (:func:`~sklearn_pdp.domain._stage.resolve_stage`:
    the declared bounds, or the bounds privately tightened first); scale
    the rows once; calibrate the release with the estimator's parameters
    at the stage's model budget and draw it; compose each row's losses
    with the stage's; store the fitted attributes. A stage
    (:class:`~sklearn_pdp.domain._stage.DeclaredStage`,
    :class:`~sklearn_pdp.domain._split.SplitStage`) answers through one
    interface:

    - ``bounds``: the released domain ``(data_norm, bounds_X, y_bound)``;
      ``model_rows``: the boolean mask of the rows the model sees, and
      ``model_part(X, y)`` those rows;
      ``model_params``: the model's budget, as parameters (``epsilon``,
      ``delta``); ``losses``: each row's loss for the stage itself;
    - ``fit_model(release, scaler, X)``: binds the drawn release;
    - ``guarantee()``, ``row_losses(X, y, add, data)`` and ``kind``: the
      whole release's ``(epsilon, delta)``, each row's loss and what kind
      of number it is (``"exact"``, ``"conditional"`` given released
      quantities the row cannot influence, or ``"bound"``);
    - ``statistics()``, ``law()``, ``profile(losses, mechanism)``,
      ``cap()``: what :meth:`law_statistics`, :meth:`release_law` and
      :meth:`privacy_profile` return, and the largest loss of anyone
      removed or added over every draw;
    - ``clip(X)`` and ``clips_rows``: the rows a prediction sees;
      ``warn_clipping``, ``box_rows`` and ``fitted_attributes()``.

    Reports and meta-estimators use three public hooks:
    :meth:`resolve_bounds` (the private search resolves the bounds once for
    all its fits), :meth:`domain_scaler` (the fitted map into the privacy
    domain) and :meth:`domain_stage` (the fitted stage).
    """

    _parameter_constraints: dict = {
        "data_norm": [Interval(Real, 0, None, closed="neither"), None],
        "bounds_X": ["array-like", None],
        "y_bound": [Interval(Real, 0, None, closed="neither"), "array-like", None],
        "schema": [HasMethods(["feature_layout", "encoder"]), None],
        "fit_intercept": ["boolean"],
        "random_state": ["random_state"],
        "n_jobs": [Integral, None],
        "tighten_bounds": ["boolean", StrOptions({"auto"})],
        "tighten_share": [Interval(Real, 0, 1, closed="neither"), None],
        "max_records": [Interval(Integral, 1, None, closed="left"), None],
    }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # scikit-learn's R^2 > 0.5 check fits 200 rows and 10 features: at
        # a budget of 1 that buys the label mean alone (or a heavy ridge)
        tags.regressor_tags.poor_score = True
        return tags

    def dp_guarantee(self, n_samples, n_features, min_samples=None):
        """Data-independent (epsilon, delta)-DP guarantee of a fit of this size.

        What the estimator with its current parameters guarantees on any
        data set of ``n_samples`` rows (or, with ``min_samples``, of any size
        from ``min_samples`` to ``n_samples``) with ``n_features`` features in the
        declared domain (rows of norm at most ``data_norm``, labels at most
        ``y_bound``; their values do not matter, the mechanism works in the
        scaled domain), for the neighbours with one row removed. No data is
        needed and nothing is fitted. ``fit`` reports the same pair as
        ``dp_epsilon_`` and ``dp_delta_``.

        Contract, relied on by
        :class:`~sklearn_pdp.model_selection.PrivateGridSearchCV`: the
        epsilon is non-decreasing in ``n_samples`` and non-increasing in
        ``min_samples`` (a wider range of sizes), and the delta depends on
        neither; an
        estimator calibrated to an epsilon budget returns that budget, which
        its calibration verifies at every size; a size that ``fit`` would
        refuse raises the same ``ValueError``, and such sizes are all below
        the accepted ones.

        Parameters
        ----------
        n_samples : int
            Number of rows of the data set.
        n_features : int
            Number of features (without the intercept's constant column).
        min_samples : int, default=None
            Smallest size covered; None means ``n_samples`` alone.

        Returns
        -------
        epsilon : float
            ``inf`` when the mechanism has no data-independent guarantee.
        delta : float
            The delta of ``epsilon``.
        """
        if self._unprotected():
            return np.inf, self.delta
        fallback = self._mean_only_size(n_features)
        if not fallback:
            return self._budget_guarantee(n_samples, n_features, min_samples)
        # Sizes up to ``fallback`` release the label mean within the budget.
        # The mechanism is checked from the first size it fits, whatever the
        # size asked: its invalid parameters and refusals are raised at every
        # size, so refused sizes stay below accepted ones.
        low = max(min_samples or n_samples, fallback + 1)
        high = max(n_samples, low)
        guarantee = self._budget_guarantee(high, n_features, None if low == high else low)
        return (float(self.epsilon), self.delta) if n_samples <= fallback else guarantee

    @abstractmethod
    def _mechanism_guarantee(self, n_samples, n_features, min_samples=None):
        """:meth:`dp_guarantee` of the mechanism itself (sizes above the
        fallback to the label mean), from its release's calibration."""

    def law_statistics(self):
        """The row statistics that :meth:`release_law`'s law takes.

        Returns
        -------
        statistics : callable
            ``statistics(Xs, ys, add=False) -> dict`` on rows in the privacy
            domain (see :meth:`domain_scaler`): the exact statistics of
            training rows, or (``add``) those the rows would have once added
            (``ys`` None: the worst label). It belongs to this fit's
            ``release_``, so it can be sent to Dask workers and survives a
            refit.
        """
        check_is_fitted(self)
        return self._stage.statistics()

    def design_ridge(self):
        """The factorised ``H = X^T X + alpha P`` of the training rows (in the
        privacy domain) that the mechanism's leverages are taken against.

        Returns
        -------
        ridge : RidgeSystem or None
            With ``coef`` and ``row_statistics(Xs, ys=None)`` (leverage and
            residual of rows); None for a release that keeps none (random
            projection, the label mean).
        """
        check_is_fitted(self)
        return getattr(self.release_, "ridge", None)

    def release_law(self):
        """Public description of the fitted release, for a published report.

        What :class:`~sklearn_pdp.PDPReport` with ``publish_epsilon`` needs
        to bound per-instance losses from released quantities alone: the
        fit's :class:`~sklearn_pdp.mechanisms._release.Release` without its statistics
        of the private data (:meth:`~sklearn_pdp.mechanisms._release.Release.public`):
        the declared domain, the released coefficients (scaled), the ridge,
        the public size and the mechanism's noise parameters, with the
        mechanism's per-instance loss as a function of a row's statistics.
        With privately tightened bounds, a
        :class:`~sklearn_pdp.mechanisms._guarantee_law.GuaranteeLaw`: every person's
        bound is the guarantee (:doc:`/mechanisms/tightening`, "Published
        reports").

        Returns
        -------
        law : Release

        Raises
        ------
        NotImplementedError
            For a release whose loss cannot (yet) be bounded this way.
        """
        check_is_fitted(self)
        if isinstance(self.release_, ExactRelease):
            raise ValueError(
                "A fit with epsilon=inf protects nothing: it has no release law to "
                "bound per-instance losses with."
            )
        return self._stage.law()

    def privacy_profile(self, X=None, y=None):
        """Each row's privacy-loss profile, for composing releases per person.

        What :class:`~sklearn_pdp.PrivacyLedger` reads: the family of the
        release's per-row loss and each row's parameter in it (see
        :class:`~sklearn_pdp.report._profile.PrivacyProfile`). A release whose loss
        is exactly a Gaussian mechanism's (AdaSSP, output perturbation with
        Gaussian noise) gives each row's ratio ``s``, the label mean of the
        fallback its Laplace ratio ``|y| / b``, any other only the epsilons
        of ``pdp_losses_`` at ``delta`` (composed by basic composition).
        The ratios are recovered from the exact epsilons (the largest ratio
        whose epsilon is at most the row's), so they are upper bounds of the
        exact ones and functions of the data and the mechanism only.

        Parameters
        ----------
        X : array-like of shape (n_targets, n_features), default=None
            None: the training rows (removing each, as ``pdp_losses_``).
            Otherwise people outside the training data: the loss of adding
            each (as :meth:`pdp_epsilon`).
        y : array-like of shape (n_targets,), default=None
            Their labels (None: the worst label).

        Returns
        -------
        profile : PrivacyProfile
        """
        check_is_fitted(self)
        losses = self.pdp_losses_ if X is None else self.pdp_epsilon(X, y)
        losses = np.asarray(compute(losses)[0], dtype=np.float64)
        return self._stage.profile(losses, type(self).__name__)

    def resolve_bounds(self, X, y, stacklevel=4):
        """The declared bounds, or the data's own with a PrivacyLeakWarning.

        What :meth:`fit` uses; meta-estimators call it once to give all their
        fits the same bounds.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data (validated).
        y : array-like of shape (n_samples,)
            Target values (validated).
        stacklevel : int, default=4
            Stack level of the warning, which must point at the user's call:
            4 from ``fit`` (this method, ``fit``, scikit-learn's fit wrapper,
            the user).

        Returns
        -------
        data_norm : float or None
            None when ``bounds_X`` is given.
        bounds_X : tuple of two ndarrays of shape (n_features,) or None
            The per-feature ranges.
        y_bound : float or tuple (low, high)
            The label range.
        """
        return resolve_bounds(X, y, **bound_params(self), stacklevel=stacklevel)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, groups=None, **fit_params):
        """Fit the private model.

        Parameters
        ----------
        X : array-like or dask array of shape (n_samples, n_features)
            Training data. Rows longer than ``data_norm`` are scaled down to
            it (on a copy) before the mechanism sees them. A Dask array is
            processed block by block where it lives; ``pdp_losses_`` is then
            a lazy Dask array with its row chunks.
        y : array-like or dask array of shape (n_samples,)
            Targets. Values beyond ``y_bound`` are clipped (on a copy).
        groups : array-like of shape (n_samples,), default=None
            A person key per row (scikit-learn's group labels, routed by
            metadata routing: ``set_fit_request(groups=True)``): sets
            ``person_ids_`` and ``person_losses_``, and ``max_records`` caps
            each person's rows (:doc:`/people`).
        **fit_params : dict
            Refused with why, ``sample_weight`` too: the guarantee and the
            per-instance losses assume that every row counts once.

        Returns
        -------
        self : object
            Fitted estimator.

        Warns
        -----
        FallbackWarning
            When the release has no slopes (``mean_only_reason_`` says why,
            with the public epsilon and sample size from which slopes are
            fitted).
        BoundsWarning
            When the declared bounds clip more than 5% of the labels or of
            the rows (for the curator only: the shares are not private).
        PrivacyLeakWarning
            When a bound is read from the data, or when ``delta >= 1 /
            n_samples`` (a guarantee that permits publishing a whole record).
        """
        refuse_fit_params(self, fit_params)
        X, y = validate_rows(self, X, y, reset=True)
        # the units of privacy: records, or people (their first max_records)
        units = resolve_units(self, groups, X.shape[0])
        X, y = units.rows(X, y)
        calibrated = units.calibrated(self)
        rng = noise_generator(self.random_state)
        # the domain: declared, or tightened (its bounds drawn first from rng)
        stage = resolve_stage(calibrated, X, y, self.resolve_bounds(X, y), rng, units.keys)
        # a refit keeps no fitted attribute of the previous fit (private
        # attributes, such as those meta-estimators set, are not the fit's)
        for name in [k for k in vars(self) if k.endswith("_") and not k.startswith("_")
                     and k not in _VALIDATED]:
            delattr(self, name)
        self._stage = stage
        self.bounds_from_data_ = read_from_data(**bound_params(self))
        self.data_norm_, self.bounds_X_, self.y_bound_ = stage.bounds
        warn_large_delta(getattr(self, "delta", None), X.shape[0], stacklevel=3)
        self._scaler = fitted_scaler(self)
        self.model_rows_ = units.model_rows(stage)
        X_model, y_model = stage.model_part(X, y)
        data = scaled_data(X_model, y_model, self._scaler, self.n_jobs)
        # the model's calibration: these parameters at the stage's budget
        release = clone(calibrated).set_params(**stage.model_params)._choose_release(
            data, self._scaler)
        self.release_ = release
        theta = release.release(rng)
        stage.fit_model(release, self._scaler, X_model)
        for name, value in release.fitted_attributes().items():
            setattr(self, name, value)
        self.mean_only_ = isinstance(release, MeanRelease)
        # why the slopes are 0 or less than asked was released: None when
        # the release is what was asked for
        self.mean_only_reason_ = release.reason
        self.dp_epsilon_, self.dp_delta_ = units.guarantee(stage)
        self.model_epsilon_, self.model_delta_ = release.guarantee
        self.coef_, self.intercept_ = self._scaler.unscale_coef(theta)
        self.bounds_losses_ = stage.losses
        # each row's losses, composed with the stage's, then each unit's
        for name, value in units.attributes(stage, X, y, data, self.delta,
                                            self.dp_epsilon_).items():
            setattr(self, name, value)
        for name, value in stage.fitted_attributes().items():
            setattr(self, name, value)
        if self.mean_only_reason_ is not None:
            released = released_text(self.mean_only_, self.fit_intercept, self.coef_)
            warnings.warn(f"{type(self).__name__} released {released}. Why: "
                          f"{self.mean_only_reason_}.", FallbackWarning, stacklevel=3)
        stage.warn_clipping(getattr(data, "clipped", None), stacklevel=3)
        return self

    @abstractmethod
    def _make_release(self, data, scaler):
        """The mechanism's :class:`~sklearn_pdp.mechanisms._release.Release` on ``data``
        (``ScaledData`` or ``DaskScaledData``, scaled by ``scaler``),
        calibrated to the budget and
        not yet drawn; raises :class:`InfeasibleBudget` where a user-set
        hyper-parameter cannot meet the budget at this size."""

    def domain_scaler(self):
        """The fitted map of the declared bounds into the privacy domain.

        A :class:`~sklearn_pdp.domain._scaler.DomainScaler` built from public
        quantities only (the bounds and ``fit_intercept``): reports and the
        private search scale or clip rows with it as the fit did.

        Returns
        -------
        scaler : DomainScaler
        """
        check_is_fitted(self)
        return self._scaler

    def domain_stage(self):
        """The fitted stage that resolved the domain (see the class
        docstring): what reports and meta-estimators ask a fit's composed
        losses, law, cap and clipping of.

        Returns
        -------
        stage : DeclaredStage or SplitStage
        """
        check_is_fitted(self)
        return self._stage

    def predict(self, X):
        """Predict with the released linear model.

        Parameters
        ----------
        X : array-like or dask array of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        y_pred : ndarray or dask array of shape (n_samples,)
            ``X @ coef_ + intercept_`` (lazy for a Dask array); with
            ``tighten_bounds`` the rows are first clipped to the released
            bounds, as the training rows were.
        """
        check_is_fitted(self)
        X, _ = validate_rows(self, X, reset=False)
        return self._stage.clip(X) @ self.coef_ + self.intercept_

    def public_model(self, decimals=None):
        """The release alone, safe to publish: a :class:`PublicLinearModel`.

        The fitted estimator keeps non-private statistics for its privacy
        report (never publish or pickle it for others); the public model
        holds only ``coef_``, ``intercept_``, the feature names, the
        guarantee ``(dp_epsilon_, dp_delta_)``, the bounds it was fitted
        under (with ``tighten_bounds``, the released ones, which its
        predictions clip rows to) and the parameters but ``random_state``
        (its ``to_json`` writes them all).

        Parameters
        ----------
        decimals : int, default=None
            Round the coefficients and the intercept to this many decimals
            (post-processing: never weakens the guarantee, and discards the
            low-order bits of the floating-point noise).

        Returns
        -------
        model : PublicLinearModel
        """
        check_is_fitted(self)
        # a bound read from the data is private: not written
        bounds = {"data_norm": self.data_norm_ if self.data_norm is not None else None,
                  "bounds_X": self.bounds_X_, "y_bound": self.y_bound_
                  if self.y_bound is not None else None}
        return public_model(
            self.coef_, self.intercept_, (self.dp_epsilon_, self.dp_delta_),
            type(self).__name__, getattr(self, "feature_names_in_", None), decimals,
            bounds, self.get_params(), self._stage.clips_rows,
        )

    def pdp_epsilon(self, X, y=None, groups=None):
        """Per-instance epsilon, at ``delta``, of adding new targets.

        For each row of ``X`` (with label ``y``), the epsilon that this
        release would have cost that person had they been added to the
        training set: exact, or an upper bound, as ``pdp_kind_`` says.
        Targets are scaled and clipped like training rows.

        Parameters
        ----------
        X : array-like or dask array of shape (n_samples, n_features)
            Feature vectors of the targets.
        y : array-like or dask array of shape (n_samples,), default=None
            Their labels. If None, the worst label in ``[-y_bound_, y_bound_]``
            is used for each row, which needs only ``X``.
        groups : array-like of shape (n_samples,), default=None
            Person keys of the rows (people absent from the training data;
            needs ``y``): the loss of adding each person's rows together.

        Returns
        -------
        epsilon : ndarray or dask array of shape (n_samples,) or (n_people,)
            ``inf`` where no finite epsilon exists (lazy for a Dask array);
            with ``groups``, one per person of ``np.unique(groups)``: their
            joint loss where the release gives one (of the kinds of
            ``person_pdp_kinds_``), else ``inf`` for several rows.
        """
        check_is_fitted(self)
        X, y = validate_rows(self, X, "no_validation" if y is None else y, reset=False)
        losses = self._stage.row_losses(X, y, add=True, keys=groups)
        return losses if groups is None else added_people(self, X, y, groups, losses)
