"""Objective perturbation for ridge regression (Wang, lecture notes on
objective perturbation; :doc:`/mechanisms/objective_perturbation`): the
estimator and its release."""

from numbers import Real

import numpy as np
from scipy import linalg
from scipy.special import ndtri

from ._sklearn import Interval, StrOptions
from ._accounting import (
    GAUSSIAN_DELTA_SHARE,
    compose_with_gaussian,
    gaussian_allowance,
    objpert_auto_alpha,
    objpert_dp_epsilon,
    objpert_epsilon,
    objpert_noise_scale,
)
from ._base import PrivateRegressorMixin
from ._fallback import InfeasibleBudget, ridge_fallback
from ._release import Release
from ._ridge_system import RidgeSystem, leave_one_out
from ._docstrings import fill_doc


@fill_doc
class ObjPertRegressor(PrivateRegressorMixin):
    """Ridge regression by objective perturbation, with per-instance privacy.

    The released coefficients minimise
    ``1/2 ||y - X theta||^2 + alpha/2 ||theta||^2 + b^T theta`` with
    ``b ~ N(0, sigma^2 I)``, on the data scaled into the privacy domain (rows
    in the unit ball, labels in [-1, 1], with an intercept the constant
    feature 1, which the penalty leaves out); that is, one draw from
    ``N(theta_hat, sigma^2 H^{-2})``, ``H = X^T X + alpha P``. The noise
    enters every coordinate, the intercept's too. Every training row's exact
    per-instance epsilon is reported in ``pdp_losses_``; ``dp_epsilon_`` is
    the data-independent guarantee.

    Parameters
    ----------
    epsilon : float or None, default=1.0
        Privacy budget at ``delta``: ``sigma`` is calibrated so that
        ``dp_epsilon_ <= epsilon``. None to give ``sigma`` instead.
    delta : float, default=1e-6
        The delta of the budget, of ``pdp_losses_`` and of ``dp_epsilon_``.
    alpha : float or "auto", default="auto"
        Ridge strength on the scaled data (the intercept is not penalised).
        Objective perturbation loses about ``log(1 + 4/alpha)`` plus a tail
        term however large ``sigma`` is, so a budget needs ``alpha`` large
        enough. "auto" (with ``epsilon``) chooses it privately from the data
        where the budget allows: ``0.2 epsilon`` releases the smallest
        eigenvalue of the scatter, whose lower bound picks the ridge (with
        an intercept ``0.02 epsilon`` more the means of the rows and of
        the label), and objective perturbation at that ridge is calibrated
        to the rest (:ref:`objpert-private-ridge`). Where the eigenvalue's noise margin
        exceeds ``n_samples / (3 n_features)``, "auto" is the public rule:
        the smallest alpha whose loss floor is a quarter of ``epsilon``,
        raised by ``(1000 / (n_samples * epsilon))^3`` when the data are too
        few for slopes, then doubled until the noise along a unit slope
        direction, ``sigma^2 / alpha^2``, is at most 1e-4; see
        :func:`objpert_auto_alpha`. A numeric alpha is always used as given.
        ``alpha=0`` gives no data-independent guarantee.
    sigma : float or None, default=None
        For experts, with ``epsilon=None``: the standard deviation of the
        noise ``b``, used as given (scaled data), and ``dp_epsilon_`` is
        whatever it gives. Needs a numeric ``alpha``.
    {bounds}
    {tighten}
    {fit_intercept}
    {random_state}
    {n_jobs}

    Attributes
    ----------
    {model}
    {mean_only}
    alpha_ : float
        The ridge strength used (``alpha``, or the "auto" choice).
    lowest_eigenvalue_ : float
        With the private ridge only: the released (noisy) smallest
        eigenvalue of the scatter of the scaled features.
    eigen_noise_ : float
        With the private ridge only: the standard deviation of its noise.
    signal_ridge_ : float
        With the private ridge only: 0 where the released slopes show
        signal above their noise (kept whole), ``inf`` where they show none
        (post-processing, the losses are those of the release): ``coef_``
        is then 0 and the intercept follows the dropped slopes at the
        released rows' mean.
    released_means_ : ndarray of shape (n_features + 1,) or None
        With the private ridge and an intercept: the released means of the
        scaled rows and of the scaled label (the label's last).
    means_noise_ : float
        With the private ridge: the standard deviation of their noise
        (``inf`` without an intercept).
    pdp_losses_ : ndarray of shape (n_samples,)
        Exact per-instance epsilon, at ``delta``, of removing each training
        row (maximum of both directions of the hockey-stick divergence);
        with the private ridge, the basic composition of the row's exact
        eigenvalue loss and a bound on its largest objective perturbation
        loss over the cells the release can reach.
    dp_epsilon_ : float
        Data-independent epsilon at ``delta`` for any data set of this size in
        the declared domain (``epsilon`` when calibrated); ``inf`` when
        ``alpha=0``.
    dp_delta_ : float
        The delta of ``dp_epsilon_``.
    noise_scale_ : float
        The ``sigma`` used (given, or calibrated for ``epsilon``).
    {fitted_bounds}

    See Also
    --------
    OPSRegressor : One Posterior Sample, the posterior-sampling alternative.

    Notes
    -----
    The privacy loss of one row is a quadratic form in two correlated Gaussian
    variables; its tight delta(epsilon) is a one-dimensional Gauss-Hermite
    integral of normal CDFs, evaluated for all rows at once (see
    :func:`sklearn_pdp._accounting.objpert_delta`); against adaptive
    quadrature the reported epsilons are valid and within a relative 1e-6 of
    the tight value down to delta = 1e-10. The bound of the lecture notes
    assumes a Lipschitz loss, which squared loss is not, and does not hold
    for ridge (erratum E6 in :doc:`/errata`).

    ``dp_epsilon_`` is the exact loss at the worst statistics the domain
    allows (:func:`objpert_dp_epsilon`): the loss depends on a row through
    ``m0 = ||x|| r / sigma``, the leverage ``mu`` and
    ``s = sqrt(||x||^2 x^T H^{-2} x - mu^2)``; it grows with ``|m0|`` and
    with ``s`` at fixed ``mu`` (checked numerically in the tests), so the
    worst case is at the largest ``||x||`` and ``|r|`` and on the arc
    ``mu^2 + s^2 = max ||x||^2 x^T H^{-2} x`` with ``mu`` at most its bound,
    searched on a grid refined by bounded scalar maximisation. The sample
    size is treated as public. The fitted estimator keeps the non-private
    ridge solution for :meth:`pdp_epsilon`; publish ``coef_``,
    ``intercept_`` or predictions, not the estimator object.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_pdp import ObjPertRegressor
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-1, 1, size=(2000, 3)) / np.sqrt(3)
    >>> y = np.clip(0.3 + X @ [1.0, -0.5, 0.2] + 0.1 * rng.randn(2000), -1, 1)
    >>> reg = ObjPertRegressor(epsilon=1.0, data_norm=1.0, y_bound=1.0,
    ...                        random_state=0).fit(X, y)
    >>> bool(reg.dp_epsilon_ <= 1.0)
    True
    >>> bool(np.all(reg.pdp_losses_ <= reg.dp_epsilon_))
    True
    """

    _parameter_constraints: dict = {
        **PrivateRegressorMixin._parameter_constraints,
        "epsilon": [Interval(Real, 0, None, closed="right"), None],
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "alpha": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
        "sigma": [Interval(Real, 0, None, closed="neither"), None],
    }

    def __init__(
        self,
        epsilon=1.0,
        *,
        delta=1e-6,
        alpha="auto",
        sigma=None,
        data_norm=None,
        bounds_X=None,
        y_bound=None,
        schema=None,
        tighten_bounds=False,
        tighten_share=None,
        fit_intercept=True,
        random_state=None,
        n_jobs=None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.alpha = alpha
        self.sigma = sigma
        self.data_norm = data_norm
        self.bounds_X = bounds_X
        self.y_bound = y_bound
        self.schema = schema
        self.tighten_bounds = tighten_bounds
        self.tighten_share = tighten_share
        self.fit_intercept = fit_intercept
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _mechanism_guarantee(self, n_samples, n_features, min_samples=None):
        return ObjPertRelease.dp_guarantee(
            self.epsilon, self.delta, self.alpha, self.sigma, n_samples, n_features,
            self.fit_intercept, min_samples,
        )

    def _make_release(self, data, scaler):
        if self.alpha == "auto" and self.sigma is None and self.epsilon is not None:
            # the private ridge, where the budget lets the eigenvalue help
            from ._objective_perturbation_adaptive import PrivateObjPertRelease

            intercept = bool(scaler.fit_intercept)
            adaptive = PrivateObjPertRelease.calibration(
                self.epsilon, self.delta, data.n_samples, data.n_features - intercept,
                intercept)
            if adaptive is not None:
                return PrivateObjPertRelease.from_budget(
                    self.epsilon, self.delta, data, scaler=scaler, adaptive=adaptive)
        return ObjPertRelease.from_budget(
            self.epsilon, self.delta, data, scaler=scaler, alpha=self.alpha,
            sigma=self.sigma,
        )


class ObjPertRelease(Release):
    """Objective perturbation's release: coef = theta_hat - H^{-1} b,
    ``b ~ N(0, noise_scale^2 I)`` (:doc:`/mechanisms/objective_perturbation`).

    Calibrated by :meth:`from_budget` (:meth:`calibrate` gives the ridge
    and the noise from public quantities only); holds the ridge system of
    the scaled data (``ridge``, private). A row's loss is the tight loss of
    :func:`~sklearn_pdp._accounting.objpert_epsilon` at its leverage,
    residual, ``||x||^2`` and ``||H^{-1} x||^2`` against the data without it.

    For a published report (:doc:`/publish`):
    ``x^T (coef - theta_hat) ~ N(0, sigma^2 ||H^{-1} x||^2)``. The loss
    grows with ``|r|``, with ``x^T H^{-2} x`` at fixed leverage and with the
    leverage at fixed ``x^T H^{-2} x`` up to ``mu^2 = ||x||^2 x^T H^{-2} x``
    (checked in the tests), so over a box of upper values its largest value
    is at the upper corner, the leverage capped by that constraint. It is
    capped by the domain's worst loss of a row removed from the n rows or
    added to them (at n and n + 1 rows), which holds for anyone.
    """

    def __init__(self, *, noise_scale, **common):
        super().__init__(**common)
        self.noise_scale = float(noise_scale)
        # a few deltas per report, each a costly worst-case search: kept
        self._dp_cache = {}

    @staticmethod
    def calibrate(epsilon, delta, alpha, sigma, n_samples, n_features, intercept):
        """``(alpha, sigma)`` of a fit of this size, from public quantities
        only; raises :class:`InfeasibleBudget` where a given ``alpha``
        cannot meet the budget."""
        if (epsilon is None) == (sigma is None):
            raise ValueError(
                "Give a budget epsilon, or epsilon=None and a noise level sigma "
                f"(got epsilon={epsilon!r}, sigma={sigma!r})."
            )
        if sigma is not None:
            if alpha == "auto":
                raise ValueError(
                    "alpha='auto' is chosen for an epsilon budget: give a "
                    "numeric alpha with sigma."
                )
            return float(alpha), float(sigma)
        auto = alpha == "auto"
        alpha = (objpert_auto_alpha(epsilon, delta, n_samples, n_features, intercept)
                 if auto else float(alpha))
        try:
            sigma = objpert_noise_scale(epsilon, delta, alpha, n_samples, intercept)
        except ValueError as exc:
            if auto or alpha <= 0:  # alpha=0: invalid with a budget
                raise
            try:
                ridge = objpert_auto_alpha(epsilon, delta, n_samples, n_features, intercept)
            except ValueError:
                ridge = None
            raise InfeasibleBudget(
                f"ObjPertRegressor: {exc} "
                + (f"alpha={ridge:.4g} (the ridge of alpha='auto') meets it." if ridge
                   else "No alpha meets it at this size."),
                ridge=ridge,
            ) from None
        return alpha, sigma

    @classmethod
    def dp_guarantee(cls, epsilon, delta, alpha, sigma, n_samples, n_features,
                     intercept, min_samples=None):
        """The data-independent ``(epsilon, delta)`` of fits of ``min_samples``
        to ``n_samples`` rows (``dp_guarantee`` of the mechanism)."""
        if sigma is None:
            # every size gets its own alpha and sigma, calibrated and checked
            # there; a size refused is refused below every accepted one
            for n in {n_samples, min_samples or n_samples}:
                cls.calibrate(epsilon, delta, alpha, sigma, n, n_features, intercept)
            return float(epsilon), delta
        alpha, sigma = cls.calibrate(epsilon, delta, alpha, sigma, n_samples, n_features,
                                     intercept)
        return objpert_dp_epsilon(delta, alpha, sigma, n_samples, intercept, min_samples), delta

    @classmethod
    def from_budget(cls, epsilon, delta, data, *, scaler, alpha="auto", sigma=None):
        n, d, intercept = data.n_samples, data.n_features, bool(scaler.fit_intercept)
        d -= intercept  # the features, without the constant column
        try:
            alpha, sigma = cls.calibrate(epsilon, delta, alpha, sigma, n, d, intercept)
        except InfeasibleBudget as exc:
            # stack: here, _make_release, _choose_release, fit, fit wrapper, the user
            alpha = ridge_fallback(exc, stacklevel=7)
            sigma = objpert_noise_scale(epsilon, delta, alpha, n, intercept)
        # a budget is met as calibrated; a given sigma's guarantee is the law's
        dp = epsilon if epsilon is not None else objpert_dp_epsilon(
            delta, alpha, sigma, n, intercept)
        release = cls(noise_scale=sigma, scaler=scaler, n_samples=n, delta=delta,
                      guarantee=(dp, delta), alpha=alpha)
        if epsilon is None:
            release._dp_cache[delta, n] = dp
        release.ridge = RidgeSystem(*data.gram(), alpha, intercept)
        return release

    def draw(self, rng, size=None):
        return objpert_draw(self.ridge, self.noise_scale, rng, size)

    def fitted_attributes(self):
        return {"alpha_": self.alpha, "noise_scale_": self.noise_scale}

    def losses(self, Xs, ys, add=False):
        if not add:
            stats = self.ridge.row_statistics(Xs, ys, inverse_norm=True, norm=True)
            return self._loss(self.delta, *_remove_row(stats))
        stats = self.ridge.row_statistics(Xs, inverse_norm=True, norm=True)
        fitted = Xs @ self.ridge.coef
        # The loss grows with |r|: the worst label is an end of [-1, 1].
        r = 1.0 + np.abs(fitted) if ys is None else ys - fitted
        return self._loss(self.delta, stats["norm2"], stats["leverage"],
                          stats["inverse_norm2"], r)

    def _loss(self, delta, norm2, mu, inverse_norm2, r):
        """The tight loss of a row with these statistics against the data
        without it."""
        return objpert_epsilon(delta, norm2, mu, inverse_norm2, r, self.noise_scale)

    # -- the law of a published report ------------------------------------

    def residual_margin(self, beta, stats):
        return ndtri(1.0 - beta / 2.0) * self.noise_scale * np.sqrt(stats["inverse_norm2"])

    def _dp(self, delta, n_samples=None):
        n_samples = self.n_samples if n_samples is None else n_samples
        if (delta, n_samples) not in self._dp_cache:
            self._dp_cache[delta, n_samples] = objpert_dp_epsilon(
                delta, self.alpha, self.noise_scale, n_samples, self.intercept
            )
        return self._dp_cache[delta, n_samples]

    def _cap(self, delta):
        # a person removed from the n rows or added to them: the domain's
        # worst at n and at n + 1 rows, at this sigma
        return max(self._dp(delta), self._dp(delta, self.n_samples + 1))

    def epsilon(self, delta, stats, gaussian_ratio=None):
        norm2, mu, w, r = _remove_row(stats)
        with np.errstate(invalid="ignore"):
            mu = np.minimum(mu, np.sqrt(norm2 * w))  # Cauchy-Schwarz
        return compose_with_gaussian(
            lambda d: np.minimum(self._loss(d, norm2, mu, w, r), self._cap(d)),
            delta, gaussian_ratio,
        )

    def cap_epsilon(self, delta, gaussian_ratio=None):
        return compose_with_gaussian(self._cap, delta, gaussian_ratio)

    def dp_epsilon(self, delta, gaussian_ratio=None):
        return compose_with_gaussian(self._dp, delta, gaussian_ratio)

    def gaussian_allowance(self, delta, target):
        return gaussian_allowance(self._dp(delta - GAUSSIAN_DELTA_SHARE * delta), delta, target)


def objpert_draw(ridge, sigma, rng, size=None):
    """theta = H^{-1}(X^T y - b) = theta_hat - H^{-1} b, b ~ N(0, sigma^2 I)
    in every coordinate, the intercept's included (``ridge`` the system of H)."""
    d = ridge.chol.shape[0]
    b = sigma * rng.standard_normal(d if size is None else (d, size))
    shift = linalg.cho_solve((ridge.chol, True), b, check_finite=False)
    return ridge.coef - (shift if size is None else shift.T)


def _remove_row(stats):
    """(||x||^2, mu, x^T H^{-2} x, r) of each row w.r.t. the data without it.

    From the full-data mu', r', w' = ||H_full^{-1} x||^2 by Sherman-Morrison:
    H^{-1} x = H_full^{-1} x / (1 - mu'), so w = w' / (1 - mu')^2, and
    mu = mu' / (1 - mu'), r = r' / (1 - mu') (:func:`leave_one_out`).
    """
    mu, r = leave_one_out(stats["leverage"], stats["residual"])
    with np.errstate(divide="ignore", invalid="ignore"):
        keep = 1.0 - stats["leverage"]
        w = np.where(keep <= 0, np.inf, stats["inverse_norm2"] / keep**2)
    return stats["norm2"], mu, w, r
