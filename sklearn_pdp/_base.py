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

import copy
import secrets
import warnings
from numbers import Integral, Real

import numpy as np
from scipy import linalg
from scipy.linalg import lapack
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ._sklearn import Interval, StrOptions, _fit_context
from ._config import get_config as _get_pdp_config
from ._mean import MEAN_ONLY_RATE, PrivateMean, mean_only_size
from ._profile import PrivacyProfile
from ._public import public_model
from ._arrays import compute
from ._domain import (
    DomainScaler,
    bound_params,
    read_from_data,
    resolve_bounds,
    warn_clipping,
)
from ._rows import scaled_data, squared_norms
from ._validation import validate_rows, warn_large_delta
from .exceptions import FallbackWarning, PrivacyLeakWarning
from . import _tighten

# Leverages computed through the Cholesky factor carry a relative error of
# about cond(H) * 2.2e-16: below this reciprocal condition number they would
# be meaningless, and so would the per-instance epsilons built on them.
_MIN_RCOND = 1e-10


class InfeasibleBudget(ValueError):
    """A user-set hyper-parameter cannot meet the epsilon budget at this size.

    Raised by a mechanism's calibration (a function of public quantities
    only), with ``ridge`` the larger ridge that meets the budget (the one
    of ``alpha="auto"``), which the mechanism then uses
    (:func:`ridge_fallback`), or None: :meth:`PrivateRegressorMixin.fit`
    then releases the label mean at the budget. Either way a
    :class:`~sklearn_pdp.exceptions.FallbackWarning` carries the message,
    which names the parameter and a value that meets the budget.
    """

    def __init__(self, message, ridge=None):
        super().__init__(message)
        self.ridge = ridge


def ridge_fallback(exc, stacklevel=5):
    """The ridge that :class:`InfeasibleBudget` ``exc`` offers, with a
    FallbackWarning; ``exc`` itself again where it offers none (the label
    mean). ``stacklevel`` 5: here, ``_fit_scaled``, ``fit``, scikit-learn's
    fit wrapper, the user."""
    if exc.ridge is None:
        raise exc
    warnings.warn(f"{exc} It is used instead.", FallbackWarning, stacklevel=stacklevel)
    return exc.ridge


class Ridge:
    """Non-private ridge solution on scaled data, kept for the privacy report.

    H = X^T X + alpha P = L L^T (Cholesky), theta_hat = H^{-1} X^T y, where P
    is the identity, or with ``intercept`` the identity without its last
    diagonal entry: the constant feature (the last column) is not penalised.
    ``Xty`` may be None when only the quadratic forms x^T H^{-1} x are
    needed (``coef`` is then None).
    A singular H, or one too ill-conditioned for accurate leverages
    (reciprocal condition number below 1e-10), is a ValueError naming alpha.
    With rows in the unit ball this cannot happen once alpha >= 1e-9 n d.

    The fitted estimators keep this object (``_ridge``): it holds non-private
    statistics, so publish ``public_model()`` or predictions, never the
    pickled estimator.
    """

    def __init__(self, XtX, Xty, alpha, intercept=False):
        H = XtX + alpha * penalty(XtX.shape[0], intercept)
        try:
            self.chol = linalg.cholesky(H, lower=True, check_finite=False)
            rcond, _ = lapack.dpocon(self.chol, np.abs(H).sum(axis=0).max(), uplo="L")
        except linalg.LinAlgError:
            rcond = 0.0
        if not rcond >= _MIN_RCOND:
            raise ValueError(
                "X^T X + alpha I is singular or too ill-conditioned for exact "
                "per-instance losses: this mechanism needs a larger alpha when "
                "the columns of X are (nearly) linearly dependent "
                f"(alpha={alpha})."
            )
        self.alpha = alpha
        self.coef = (
            None if Xty is None
            else linalg.cho_solve((self.chol, True), Xty, check_finite=False)
        )
        # L^{-T}: the rows of Xs @ L^{-T} are the whitened rows L^{-1} x, and
        # those of Xs @ L^{-T} L^{-1} the rows H^{-1} x: one GEMM per chunk
        # of rows (on which the scaling of the rows is folded) gives every
        # quadratic form, as accurately as triangular solves (both err by
        # about cond(H) ulp; measured against exact rational solves)
        self._whitener = np.ascontiguousarray(lapack.dtrtri(self.chol, lower=1)[0].T)
        self._inverse = self._whitener @ self._whitener.T

    def sample(self, rng, scale=1.0, size=None):
        """``scale`` times a draw from N(0, H^{-1}); ``size`` draws as rows."""
        d = self.chol.shape[0]
        z = rng.standard_normal(d if size is None else (d, size))
        draw = linalg.solve_triangular(
            self.chol, z, lower=True, trans="T", check_finite=False
        )
        return scale * (draw if size is None else draw.T)

    def row_statistics(self, Xs, ys=None, *, inverse_norm=False, norm=False,
                       inverse_rows=False):
        """Leverage x^T H^{-1} x and residual y - x^T theta_hat of the rows.

        With ``inverse_norm`` also ||H^{-1} x||^2, with ``inverse_rows`` also
        the vectors H^{-1} x themselves (key ``"inverse_rows"``, one row each),
        with ``norm`` also ||x||^2 (key ``"norm2"``). ``Xs``: an array or
        :class:`~sklearn_pdp._rows.ScaledRows`; all the products come from
        one pass over it.
        """
        k, p = self._whitener.shape[1], self._inverse.shape[1]
        inverse_norm = inverse_norm or inverse_rows
        blocks = [self._whitener]
        if inverse_norm:
            blocks.append(self._inverse)
        if ys is not None:  # the fitted values x^T theta_hat
            blocks.append(self.coef[:, None])
        null = getattr(self, "_null", None)
        if null is not None:
            blocks.append(null)
        products = Xs @ np.hstack(blocks)
        W = products[:, :k]
        stats = {"leverage": np.einsum("ij,ij->i", W, W)}
        if null is not None:
            # off the span of the rows: x^T H^{-1} x grows without bound
            off = products[:, products.shape[1] - null.shape[1]:]
            stats["leverage"][np.einsum("ij,ij->i", off, off) > self._null_tol] = np.inf
        if inverse_norm:
            V = products[:, k: k + p]
            stats["inverse_norm2"] = np.einsum("ij,ij->i", V, V)
            if inverse_rows:
                stats["inverse_rows"] = V
        if ys is not None:
            stats["residual"] = ys - products[:, k + p * inverse_norm]
        if norm:
            stats["norm2"] = squared_norms(Xs)
        return stats


class SpanRidge(Ridge):
    """:class:`Ridge` in the limits where H is singular, for leverages that
    no per-instance loss is computed from (a report's leverage column).

    ``alpha = inf`` (the slopes infinitely penalised: a release of the label
    mean alone or zero slopes) is the limit of x^T H^{-1} x as alpha grows:
    the ridge of the unpenalised coordinates alone (the intercept: 1/n for
    every row). A singular H (``alpha = 0`` on linearly dependent columns)
    is the limit as alpha falls to 0: x^T H^+ x (the hat value) for rows in
    the span of the training rows, ``inf`` for rows with a component off it
    larger than any training row can have (a training row's squared
    component along a null direction is at most that direction's
    eigenvalue, below the cut-off). ``coef`` is the minimum-norm solution.
    """

    def __init__(self, XtX, Xty, alpha, intercept=False):
        n_coef = XtX.shape[0]
        if np.isinf(alpha):
            free = penalty(n_coef, intercept).diagonal() == 0
            H = XtX[np.ix_(free, free)]
        else:
            free = np.ones(n_coef, dtype=bool)
            H = XtX + alpha * penalty(n_coef, intercept)
        # no free coefficient (an infinite ridge without intercept): nothing
        # to decompose (older LAPACK wrappers refuse an empty matrix)
        eigenvalues, vectors = (linalg.eigh(H, check_finite=False) if H.size
                                else (np.zeros(0), np.zeros((0, 0))))
        cut = max(eigenvalues.max(initial=0.0), 0.0) * H.shape[0] * np.finfo(float).eps
        keep = eigenvalues > cut
        self.alpha = alpha
        self._whitener = np.zeros((n_coef, keep.sum()))
        self._whitener[free] = vectors[:, keep] / np.sqrt(eigenvalues[keep])
        self._null = np.zeros((n_coef, (~keep).sum()))
        self._null[free] = vectors[:, ~keep]
        # twice the most a training row can have (its eigenvalues, and their rounding)
        self._null_tol = 2.0 * (~keep).sum() * cut
        if not self._null.shape[1]:
            self._null = None
        self._inverse = self._whitener @ self._whitener.T
        self.coef = None if Xty is None else self._inverse @ Xty


def leverage_ridge(XtX, Xty, alpha, intercept=False):
    """:class:`Ridge` of H = X^T X + alpha P for leverages, or its limit
    (:class:`SpanRidge`) where alpha is infinite or H singular."""
    if np.isfinite(alpha):
        try:
            return Ridge(XtX, Xty, alpha, intercept)
        except ValueError:
            pass
    return SpanRidge(XtX, Xty, alpha, intercept)


def _ceil(value, digits=4):
    """``value`` rounded up to ``digits`` significant digits, as a string
    (a threshold that still holds once printed)."""
    if not (np.isfinite(value) and value > 0):
        return f"{value:g}"
    step = 10.0 ** (np.floor(np.log10(value)) - digits + 1)
    return f"{np.ceil(value / step) * step:.{digits}g}"


def penalty(n_coef, intercept):
    """The ridge penalty matrix: the identity, without the intercept's entry."""
    P = np.eye(n_coef)
    if intercept:
        P[-1, -1] = 0.0
    return P


def noise_generator(random_state):
    """The random generator from which a fit draws all of its noise.

    ``random_state`` is used as scikit-learn uses it (``check_random_state``)
    except for None: an int seeds a new ``RandomState`` (reproducible fits,
    for experiments), an instance is used as is, and None gives a fresh
    ``RandomState`` seeded with 256 bits from :mod:`secrets`, so that no
    ``np.random.seed`` can predict a release. Under
    ``sklearn_pdp.set_config(secure_noise=False)``, None is numpy's global
    ``RandomState`` (predictable after ``np.random.seed``), as in
    scikit-learn.
    The noise is sampled in float64, so the reported epsilons are those of
    the ideal real-valued mechanism (floating-point caveats, Mironov 2012:
    see the README section "Noise source and floating point").
    """
    if random_state is None and _get_pdp_config()["secure_noise"]:
        seed = np.random.SeedSequence(secrets.randbits(256))
        return np.random.RandomState(np.random.MT19937(seed))
    return check_random_state(random_state)


def leave_one_out(leverage, residual):
    """In-sample (mu', r') to the (mu, r) of the data set without the row.

    mu = mu'/(1 - mu'), r = r'/(1 - mu') (Sherman-Morrison); a row with
    mu' = 1 is the only support of its direction: infinite leverage.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        keep = 1.0 - leverage
        inf = keep <= 0
        mu = np.where(inf, np.inf, leverage / keep)
        r = np.where(inf, np.inf, residual / keep)
    return mu, r


def out_of_sample(stats):
    """In-sample equivalent of a target's statistics against the data without it.

    A target with leverage mu, residual r and ||H^{-1} x||^2 = w against the
    data without it has, in the data with it, mu' = mu/(1 + mu),
    r' = r/(1 + mu) and w' = w/(1 + mu)^2 (Sherman-Morrison): the statistics
    that :func:`leave_one_out` maps back to (mu, r, w). ``stats`` holds
    ``leverage`` and ``residual`` and optionally ``inverse_norm2`` and
    ``norm2`` (unchanged).
    """
    keep = 1.0 + stats["leverage"]
    out = dict(stats, leverage=stats["leverage"] / keep, residual=stats["residual"] / keep)
    if "inverse_norm2" in stats:
        out["inverse_norm2"] = stats["inverse_norm2"] / keep**2
    return out


class PrivateRegressorMixin(RegressorMixin, BaseEstimator):
    """Base class of the package's private linear regressors.

    Subclasses implement, on data scaled into the privacy domain,

    - ``_fit_scaled(data, rng)``: receives the rows (``ScaledData`` or
      ``DaskScaledData``, used only through ``gram``, ``reduce`` and
      ``map_rows``), draws the noise from ``rng``, sets the privacy attributes
      and returns the released coefficient vector;
    - ``_training_epsilon(Xs, ys)``: the exact per-instance epsilon of
      removing each of the training rows ``Xs`` (labels ``ys``), which
      fills ``pdp_losses_`` (optionally also ``_training_stages()``: the
      same as a ``TwoStageRows``, for a pass to run its products and its
      accounting apart);
    - ``_target_epsilon(Xs, ys)``: that of adding the rows (``ys`` None: the
      worst label);
    - ``_mechanism_release(rng, size=None)``: fresh draw(s) of the release
      (audits draw through ``_release``, which is the label mean's where the
      fit fell back to it);
    - :meth:`dp_guarantee`: the data-independent guarantee for a sample size,
      which ``_fit_scaled`` reports as ``dp_epsilon_``/``dp_delta_``.

    Reports and meta-estimators use two public hooks: :meth:`resolve_bounds`
    (the private search resolves the bounds once for all its fits) and
    :meth:`domain_scaler` (the fitted map into the privacy domain).
    """

    _parameter_constraints: dict = {
        "data_norm": [Interval(Real, 0, None, closed="neither"), None],
        "bounds_X": ["array-like", None],
        "y_bound": [Interval(Real, 0, None, closed="neither"), "array-like", None],
        "fit_intercept": ["boolean"],
        "random_state": ["random_state"],
        "n_jobs": [Integral, None],
        "tighten_bounds": ["boolean", StrOptions({"auto"})],
        "tighten_share": [Interval(Real, 0, 1, closed="neither"), None],
    }
    # n epsilon per coefficient up to which a fit releases the label mean alone
    _mean_only_rate = MEAN_ONLY_RATE

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

    def _budget_guarantee(self, n_samples, n_features, min_samples=None):
        """:meth:`_mechanism_guarantee`, or the budget where a user-set
        hyper-parameter cannot meet it (:meth:`fit` then releases the label
        mean at the budget: :class:`InfeasibleBudget`)."""
        try:
            return self._mechanism_guarantee(n_samples, n_features, min_samples)
        except InfeasibleBudget:
            return float(self.epsilon), self.delta

    def _mechanism_guarantee(self, n_samples, n_features, min_samples=None):
        """:meth:`dp_guarantee` of the mechanism itself (sizes above the
        fallback to the label mean)."""
        raise NotImplementedError(
            f"{type(self).__name__} does not implement dp_guarantee."
        )

    def law_statistics(self):
        """The row statistics that :meth:`release_law`'s laws take.

        Returns
        -------
        statistics : callable
            ``statistics(Xs, ys, add=False) -> dict`` on rows in the privacy
            domain (see :meth:`domain_scaler`): the exact leverage, residual,
            ``||H^{-1} x||^2`` and ``||x||^2`` of training rows, or (``add``)
            those the rows would have once added (``ys`` None: the worst
            label). It holds a snapshot of this fit (O(d^2) state), so it can
            be sent to Dask workers and survives a refit.
        """
        check_is_fitted(self)
        return self._row_function("_law_statistics")

    def design_ridge(self):
        """The factorised ``H = X^T X + alpha P`` of the training rows (in the
        privacy domain) that the mechanism's leverages are taken against.

        Returns
        -------
        ridge : object or None
            With ``coef`` and ``row_statistics(Xs, ys=None)`` (leverage and
            residual of rows); None for a mechanism that keeps none (random
            projection).
        """
        check_is_fitted(self)
        return getattr(self, "_ridge", None)

    def _law_statistics(self, Xs, ys, add=False):
        """Exact statistics of the rows for :meth:`release_law`'s ``epsilon``:
        in-sample leverage, residual, ``||H^{-1} x||^2`` and ``||x||^2`` of
        training rows, or (``add``) those the rows would have once added
        (``ys`` None: the worst label, an end of [-1, 1])."""
        stats = self._ridge.row_statistics(Xs, ys, inverse_norm=True, norm=True)
        if not add:
            return stats
        if ys is None:  # the loss grows with |r|
            stats["residual"] = 1.0 + np.abs(Xs @ self._ridge.coef)
        return out_of_sample(stats)

    def _law_public(self):
        """The public quantities every :class:`ReleaseLaw` holds: the domain,
        the released (scaled) coefficients, the ridge and the public size."""
        check_is_fitted(self)
        # the label mean alone: the slopes infinitely penalised
        alpha = np.inf if self._mean_release is not None else self.alpha_
        return {"scaler": self._scaler, "coef": self._theta, "alpha": alpha,
                "n_samples": self._n}

    def release_law(self):
        """Public description of the fitted release, for a published report.

        What :class:`~sklearn_pdp.PDPReport` with ``publish_epsilon`` needs
        to bound per-instance losses from released quantities alone: a
        :class:`ReleaseLaw` holding the declared domain, the released
        coefficients (scaled), the ridge strength, the public size and the
        mechanism's noise parameters, with the mechanism's per-instance loss
        as a function of a row's statistics. It holds no statistic of the
        private data.

        Returns
        -------
        law : ReleaseLaw

        Raises
        ------
        NotImplementedError
            For a mechanism whose loss cannot (yet) be bounded this way.
        """
        check_is_fitted(self)
        if getattr(self, "_unprotected_fit_", False):
            raise ValueError(
                "A fit with epsilon=inf protects nothing: it has no release law to "
                "bound per-instance losses with."
            )
        if _tighten.tightened(self):
            raise NotImplementedError(
                "published reports of a fit with tighten_bounds are not supported yet.")
        if self._mean_release is not None:
            return self._mean_release.law(**self._law_public())
        return self._mechanism_law()

    def _mechanism_law(self):
        """:meth:`release_law` of the mechanism itself."""
        raise NotImplementedError(
            f"{type(self).__name__} does not support published reports "
            "(PDPReport with publish_epsilon) yet."
        )

    def privacy_profile(self, X=None, y=None):
        """Each row's privacy-loss profile, for composing releases per person.

        What :class:`~sklearn_pdp.PrivacyLedger` reads: the family of the
        release's per-row loss and each row's parameter in it (see
        :class:`~sklearn_pdp._profile.PrivacyProfile`). A release whose loss
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
        if _tighten.tightened(self):  # bounds and model: only the composed epsilons
            return PrivateRegressorMixin._mechanism_profile(self, losses)
        if self._mean_release is not None:
            return self._mean_release.profile(losses, type(self).__name__)
        return self._mechanism_profile(losses)

    def _mechanism_profile(self, losses):
        """:meth:`privacy_profile` of the mechanism itself: by default only
        the epsilons at ``delta``, with no bound for other sizes."""
        return PrivacyProfile(
            "epsilon_delta", losses, delta=self.delta, guarantee=self.dp_epsilon_,
            guarantee_delta=self.dp_delta_, n_samples=self._n, mechanism=type(self).__name__,
        )

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
    def fit(self, X, y):
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
        X, y = validate_rows(self, X, y, reset=True)
        tightened = _tighten.fit_tightened(self, X, y)  # bounds released first
        self.bounds_from_data_ = read_from_data(**bound_params(self))
        if tightened:
            return self
        self.data_norm_, self.bounds_X_, self.y_bound_ = self.resolve_bounds(X, y)
        warn_large_delta(getattr(self, "delta", None), X.shape[0], stacklevel=3)
        self._scaler = DomainScaler(
            self.data_norm_, self.y_bound_, self.fit_intercept, self.bounds_X_
        )
        data = scaled_data(X, y, self._scaler, self.n_jobs)
        # a refit must not keep the previous fit's state (mechanism attributes)
        for name in [k for k in vars(self) if k.endswith("_") or k == "_ridge"]:
            if name not in ("data_norm_", "bounds_X_", "y_bound_", "bounds_from_data_",
                            "n_features_in_", "feature_names_in_"):
                delattr(self, name)
        rng = noise_generator(self.random_state)
        self.mean_only_ = data.n_samples <= self._mean_only_size(self.n_features_in_)
        # why the slopes are 0 (also set by a mechanism whose noisy
        # statistics show no signal): None when slopes were released
        self.mean_only_reason_ = None
        if not self.mean_only_:
            self._mean_release = None
            try:
                theta = self._fit_scaled(data, rng)
            except InfeasibleBudget as exc:
                # a function of public quantities (the parameters and n):
                # what the budget allows is the label mean (warned below)
                self.mean_only_ = True
                self.mean_only_reason_ = str(exc).rstrip(".")
        if self.mean_only_:
            if self.mean_only_reason_ is None:
                self.mean_only_reason_ = self._fallback_reason(data.n_samples,
                                                               self.n_features_in_)
            self.dp_epsilon_, self.dp_delta_ = self.dp_guarantee(
                data.n_samples, self.n_features_in_)
            self._mean_release = PrivateMean(self.epsilon, self.delta, data)
            self._n = data.n_samples
            theta = self._mean_release.release(rng)
        self._theta = theta  # the release in scaled coordinates (release_law)
        self.coef_, self.intercept_ = self._scaler.unscale_coef(theta)
        self.pdp_losses_ = data.map_rows(
            self._row_function("_training_epsilon")
        )
        # one warning for every reason a mechanism records (in _fit_scaled)
        if self.mean_only_reason_ is not None:
            released = ("the private label mean alone" if self.mean_only_
                        else "zero slopes (its model is the private label mean)"
                        if not np.any(self.coef_) else "less than it was asked for")
            warnings.warn(f"{type(self).__name__} released {released}. Why: "
                          f"{self.mean_only_reason_}.", FallbackWarning, stacklevel=3)
        warn_clipping(getattr(data, "clipped", None), stacklevel=3)
        return self

    def domain_scaler(self):
        """The fitted map of the declared bounds into the privacy domain.

        A :class:`~sklearn_pdp._domain.DomainScaler` built from public
        quantities only (the bounds and ``fit_intercept``): reports and the
        private search scale or clip rows with it as the fit did.

        Returns
        -------
        scaler : DomainScaler
        """
        check_is_fitted(self)
        return self._scaler

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
        return _tighten.clip_rows(self, X) @ self.coef_ + self.intercept_

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
            bounds, self.get_params(), _tighten.tightened(self),
        )

    def pdp_epsilon(self, X, y=None):
        """Exact per-instance epsilon, at ``delta``, of adding new targets.

        For each row of ``X`` (with label ``y``), the epsilon that this
        release would have cost that person had they been added to the
        training set. Targets are scaled and clipped like training rows.

        Parameters
        ----------
        X : array-like or dask array of shape (n_samples, n_features)
            Feature vectors of the targets.
        y : array-like or dask array of shape (n_samples,), default=None
            Their labels. If None, the worst label in ``[-y_bound_, y_bound_]``
            is used for each row, which needs only ``X``.

        Returns
        -------
        epsilon : ndarray or dask array of shape (n_samples,)
            ``inf`` where no finite epsilon exists (lazy for a Dask array).
        """
        check_is_fitted(self)
        X, y = validate_rows(self, X, "no_validation" if y is None else y, reset=False)
        if _tighten.tightened(self):
            return _tighten.target_epsilon(self, X, y)
        data = scaled_data(X, y, self._scaler, self.n_jobs)
        return data.map_rows(self._row_function("_target_epsilon"))

    def _row_function(self, name):
        """Method ``name`` of a snapshot of this fitted estimator, for per-row passes.

        A shallow copy without the length-n ``pdp_losses_``: a lazy (Dask)
        result keeps the state of the fit that made it even if the estimator
        is refitted or its parameters set before it is computed, and each
        task carries only O(d^2) state to the workers.
        """
        snapshot = copy.copy(self)
        snapshot.__dict__.pop("pdp_losses_", None)
        if getattr(self, "_unprotected_fit_", False) and name != "_law_statistics":
            return _unprotected_losses
        if self._mean_release is not None:  # the label mean alone was released
            mean = self._mean_release
            return {"_training_epsilon": mean.epsilon, "_target_epsilon": mean.epsilon,
                    "_law_statistics": mean.statistics}[name]
        if name == "_training_epsilon" and hasattr(snapshot, "_training_stages"):
            # the same function, its products and its accounting apart
            return snapshot._training_stages()
        return getattr(snapshot, name)

    def _release(self, rng, size=None):
        """Fresh draw(s) of the whole release, scaled: the label mean's where
        the fit released it alone, else the mechanism's."""
        if getattr(self, "_unprotected_fit_", False):  # no noise: least squares itself
            return self._theta if size is None else np.tile(self._theta, (size, 1))
        if self._mean_release is not None:
            return self._mean_release.release(rng, size)
        return self._mechanism_release(rng, size)

    def _mechanism_release(self, rng, size=None):
        """:meth:`_release` of the mechanism itself."""
        raise NotImplementedError(f"{type(self).__name__} does not implement _release.")

    def _mean_only_size(self, n_features):
        """The largest size at which :meth:`fit` releases the label mean alone
        (0: never; only with an intercept and an epsilon budget)."""
        budget = self._mean_fallback_budget()
        if not self.fit_intercept or budget is None:
            return 0
        return mean_only_size(budget, n_features, self._mean_only_rate)

    def _fallback_reason(self, n_samples, n_features):
        """Why a fit of this size releases the label mean alone, with the
        public thresholds (epsilon and size) from which it fits slopes."""
        epsilon = float(self._mean_fallback_budget())
        size = self._mean_only_size(n_features)
        rule = self._mean_only_rate * (n_features + 1)
        slopes = f"{n_features} slope{'' if n_features == 1 else 's'}"
        # the base rule's size; a larger one is a mechanism's own (random
        # projection: its sketch's label mean)
        rule_text = (f" (its rule: rows times epsilon, here {n_samples * epsilon:.4g}, "
                     f"must exceed {self._mean_only_rate:g} per slope and intercept, here "
                     f"{rule:g})"
                     if size == mean_only_size(epsilon, n_features, self._mean_only_rate)
                     else "")
        return (f"{n_samples} rows at epsilon {epsilon:g} are too few for {slopes}: "
                f"this estimator fits slopes from epsilon "
                f"{_ceil(self._slopes_epsilon(n_samples, n_features))} (at {n_samples} "
                f"rows) or from {size + 1} rows (at epsilon {epsilon:g}); below that it "
                f"releases the private label mean{rule_text}")

    def _slopes_epsilon(self, n_samples, n_features):
        """An epsilon (within 1e-6 relative of the smallest) from which a fit
        of ``n_samples`` rows releases slopes: public (n, d and the other
        parameters)."""
        trial = copy.copy(self)

        def mean_only(epsilon):
            trial.epsilon = epsilon
            return trial._releases_mean(n_samples, n_features)

        # the base rule's bound: the label mean alone up to it
        low = self._mean_only_rate * (n_features + 1) / n_samples
        high = 2.0 * low
        while mean_only(high):
            low, high = high, 2.0 * high
        while high > low * (1.0 + 1e-6):
            middle = 0.5 * (low + high)
            low, high = (middle, high) if mean_only(middle) else (low, middle)
        return high

    def _releases_mean(self, n_samples, n_features):
        """Whether a fit of this size releases the label mean alone (as
        :meth:`fit` decides it, from :meth:`_mean_only_size`)."""
        return n_samples <= self._mean_only_size(n_features)

    def _mean_fallback_budget(self):
        """The epsilon budget of the fallback to the label mean, or None where
        the estimator never falls back (a raw noise level, no budget)."""
        return getattr(self, "epsilon", None)

    def _unprotected(self):
        """Whether the budget is ``epsilon=inf``: nothing is protected."""
        epsilon = getattr(self, "epsilon", None)
        return epsilon is not None and np.isposinf(epsilon)

    def _fit_unprotected(self, data):
        """``_fit_scaled`` at ``epsilon=inf``: the non-private estimator every
        mechanism approximates, least squares on the scaled (clipped) data
        (no ridge; the minimum-norm solution where X^T X is singular or too
        ill-conditioned to factorise), with a PrivacyLeakWarning. Every
        row's loss is infinite: the release is a deterministic function of
        the data."""
        warnings.warn(
            "epsilon=inf protects nothing: the fit is least squares on the "
            "clipped data, without noise (dp_epsilon_ and pdp_losses_ are inf). "
            "Use it only to test a pipeline.",
            PrivacyLeakWarning,
            stacklevel=5,
        )
        XtX, Xty = data.gram()
        self._n = data.n_samples
        self._unprotected_fit_ = True  # a fitted flag: refits delete it
        self.dp_epsilon_, self.dp_delta_ = self.dp_guarantee(
            data.n_samples, self.n_features_in_)
        self.alpha_, self.noise_scale_ = 0.0, 0.0
        try:
            self._ridge = Ridge(XtX, Xty, 0.0, self.fit_intercept)
            self._theta = self._ridge.coef
        except ValueError:  # rank deficient: the minimum-norm solution
            self._theta = linalg.lstsq(XtX, Xty, check_finite=False)[0]
        return self._theta


def _unprotected_losses(Xs, ys=None):
    """Per-row losses of a fit at ``epsilon=inf``: infinite."""
    return np.full(Xs.shape[0], np.inf)
