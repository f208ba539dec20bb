"""One Posterior Sample (Wang 2017, sections 2-4; :doc:`/mechanisms/ops`)."""

from functools import partial
from numbers import Real

import numpy as np
from scipy.special import ndtri

from ._accounting import (
    GAUSSIAN_DELTA_SHARE,
    compose_with_gaussian,
    domain_bounds,
    gaussian_allowance,
    ops_auto_alpha,
    ops_dp_epsilon,
    ops_epsilon,
    ops_gamma,
)
from ._adaops_release import AdaOPSRelease
from ._base import PrivateRegressorMixin
from ._fallback import InfeasibleBudget, ridge_fallback
from ._rows import TwoStageRows
from ._docstrings import fill_doc
from ._release import Release
from ._ridge_system import RidgeSystem, leave_one_out
from ._sklearn import Interval, StrOptions


@fill_doc
class OPSRegressor(PrivateRegressorMixin):
    """Linear regression by One Posterior Sample, with per-instance privacy.

    The released coefficients are one draw from the scaled ridge posterior
    ``N(theta_hat, (gamma H)^{-1})``, ``H = X^T X + alpha P`` (P: the
    identity without the intercept's entry), computed on the data scaled
    into the privacy domain (rows in the unit ball, labels in [-1, 1]).
    Given a budget ``epsilon``, ``gamma_`` is the largest posterior scaling
    whose data-independent guarantee is within it. Every training row's
    exact per-instance epsilon is reported in ``pdp_losses_``.

    Parameters
    ----------
    epsilon : float or None, default=1.0
        Privacy budget: ``gamma_`` is calibrated so that ``dp_epsilon_ <=
        epsilon`` at ``delta``. None (experts) uses ``gamma`` instead.
    delta : float, default=1e-6
        The delta of the budget, of ``pdp_losses_`` and of ``dp_epsilon_``.
    alpha : float or "auto", default="auto"
        Ridge strength on the scaled data (rows of norm <= 1, labels in
        [-1, 1]), as ``RidgeSystem(alpha=alpha)`` would use it there (intercept not
        penalised). "auto" (needs ``epsilon``): chosen privately from the
        data, as :class:`AdaOPSRegressor` with the default ``budget_split``
        does (see Notes); a number is used as given (experts).
        ``alpha=0`` gives no data-independent guarantee.
    gamma : float or None, default=None
        Posterior scaling, for experts, only with ``epsilon=None``: the draw
        has covariance (gamma H)^{-1}; ``dp_epsilon_`` is then whatever it
        gives.
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
        The ridge strength used.
    gamma_ : float
        The posterior scaling used.
    floor_, residual_bound_ : float
        With ``alpha="auto"`` only: the released cells' floor on the
        conditioning and bound on any target's residual (scaled data), as
        :class:`AdaOPSRegressor` reports them.
    released_means_, means_noise_, intercept_weight_ : ndarray or float
        With ``alpha="auto"`` and an intercept only: the released means of
        the rows and the label, their noise and the weight of the intercept
        at them, as :class:`AdaOPSRegressor` reports them.
    pdp_losses_ : ndarray of shape (n_samples,)
        Exact per-instance epsilon, at ``delta``, of removing each training
        row (maximum of both directions of the hockey-stick divergence).
    dp_epsilon_ : float
        Data-independent epsilon at ``delta`` for any data set of this size in
        the declared domain; ``inf`` when ``alpha=0``.
    dp_delta_ : float
        The delta of ``dp_epsilon_``.
    noise_scale_ : float
        ``1 / sqrt(gamma_)``: the draw is ``theta_hat + noise_scale_ * N(0, H^{-1})``.
    {fitted_bounds}

    See Also
    --------
    AdaOPSRegressor : OPS with privately chosen regularisation for a budget.

    Notes
    -----
    With ``alpha="auto"`` and a budget, OPS with a ridge chosen privately
    from the data is AdaOPS: a fifth of the budget releases a noisy lower
    bound on the data's conditioning (smallest eigenvalue of the scatter),
    which fixes the ridge and the leverage bound, a fifth a noisy bound on
    the largest residual, and the rest the posterior sample calibrated to
    them; with an intercept the two cell releases also release the means
    of the rows and the label, on which the intercept is re-centred. The fit
    is :class:`AdaOPSRegressor`'s, and ``pdp_losses_`` the loss of that
    whole release (a mixture over the released cells composed with the
    means, the same for every ``random_state``). The former public rule
    (``ops_auto_alpha``, a function of n, d and epsilon) shrank the slopes
    to a third on well-conditioned data (:doc:`/mechanisms/ops`).

    With a numeric ``alpha``, the guarantee is the exact loss at the worst
    corner of the domain
    (largest leverage and residual, :func:`sklearn_pdp._accounting.domain_bounds`):
    with an unpenalised intercept, leverage ``1/(n - 1) + 4/alpha`` and
    residual ``2 + sqrt(n/alpha)``. The fitted estimator keeps the
    non-private ridge solution for :meth:`pdp_epsilon`; publish
    :meth:`public_model`, never the estimator object. The sample size is
    treated as public.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_pdp import OPSRegressor
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-1, 1, size=(5000, 3)) / np.sqrt(3)
    >>> y = np.clip(X @ [1.0, -0.5, 0.2] + 0.1 * rng.randn(5000), -1, 1)
    >>> reg = OPSRegressor(epsilon=1.0, data_norm=1.0, y_bound=1.0,
    ...                    random_state=0).fit(X, y)
    >>> bool(reg.dp_epsilon_ <= 1.0)
    True
    >>> bool(np.median(reg.pdp_losses_) < reg.dp_epsilon_ / 10)
    True
    """

    _parameter_constraints: dict = {
        **PrivateRegressorMixin._parameter_constraints,
        "epsilon": [Interval(Real, 0, None, closed="right"), None],
        "gamma": [Interval(Real, 0, None, closed="neither"), None],
        "alpha": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
        "delta": [Interval(Real, 0, 1, closed="neither")],
    }

    def __init__(
        self,
        epsilon=1.0,
        *,
        delta=1e-6,
        alpha="auto",
        gamma=None,
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
        self.gamma = gamma
        self.data_norm = data_norm
        self.bounds_X = bounds_X
        self.y_bound = y_bound
        self.schema = schema
        self.tighten_bounds = tighten_bounds
        self.tighten_share = tighten_share
        self.fit_intercept = fit_intercept
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _private_ridge(self):
        """Whether ``alpha="auto"`` chooses the ridge privately from the data:
        with a budget, the fit is AdaOPS's (see Notes)."""
        return self.alpha == "auto" and self.epsilon is not None and self.gamma is None

    def _mechanism_guarantee(self, n_samples, n_features, min_samples=None):
        if self._private_ridge():
            return AdaOPSRelease.dp_guarantee(self.epsilon, self.delta, n_samples, n_features,
                                              min_samples, intercept=self.fit_intercept)
        return OPSRelease.dp_guarantee(
            self.epsilon, self.delta, n_samples, n_features, min_samples,
            alpha=self.alpha, gamma=self.gamma, intercept=self.fit_intercept)

    def _make_release(self, data, scaler):
        if self._private_ridge():
            # AdaOPS's release (its two cells, then one posterior sample),
            # without kappa_ (OPS has no kappa)
            return AdaOPSRelease.from_budget(self.epsilon, self.delta, data,
                                             scaler=scaler, report_kappa=False)
        return OPSRelease.from_budget(self.epsilon, self.delta, data, scaler=scaler,
                                      alpha=self.alpha, gamma=self.gamma)


class OPSRelease(Release):
    """OPS's release: coef ~ N(theta_hat, (gamma H)^{-1}) (:doc:`/publish`).

    x^T (coef - theta_hat) ~ N(0, mu' / gamma) with the in-sample leverage
    mu'; the loss grows with the leverage and the |residual| (section 2 of
    :doc:`/mechanisms/ops`), so upper values give an upper bound. A
    published bound is capped by the domain's worst loss of a row removed
    from the n rows or added to them (the corners at n and n + 1 rows),
    which holds for anyone. Holds the ridge system of the data (``ridge``).
    """

    def __init__(self, *, gamma, capped, **common):
        super().__init__(**common)
        self.gamma = float(gamma)
        self.noise_scale = 1.0 / np.sqrt(self.gamma)
        # calibrated to a budget: no row costs more than it
        self.capped = capped

    @staticmethod
    def calibrate(epsilon, delta, alpha, gamma, n_samples, n_features, intercept):
        """(alpha, gamma) for a data set of ``n_samples`` rows (public);
        :class:`~sklearn_pdp._fallback.InfeasibleBudget` where ``alpha`` cannot
        meet the budget."""
        if (epsilon is None) == (gamma is None):
            raise ValueError(
                "Give exactly one of epsilon (a privacy budget) and gamma (a raw "
                f"posterior scaling, for experts); got epsilon={epsilon!r}, "
                f"gamma={gamma!r}."
            )
        if alpha == "auto":  # with a budget, the release is AdaOPS's
            raise ValueError("alpha='auto' needs epsilon; give alpha with gamma.")
        alpha = float(alpha)
        if epsilon is None:
            return alpha, float(gamma)
        gamma = OPSRelease.budget_gamma(epsilon, delta, alpha, n_samples, intercept)
        if gamma is None:
            try:
                auto = ops_auto_alpha(epsilon, delta, n_samples, n_features, intercept)
            except ValueError:
                auto = None
            raise InfeasibleBudget(
                f"OPSRegressor cannot meet epsilon={epsilon} at alpha={alpha:.4g} "
                f"with n_samples={n_samples}: its loss at the worst leverage stays "
                "above the budget however much noise it adds. "
                + (f"alpha={auto:.4g} (the public rule ops_auto_alpha) meets it." if auto
                   else "No alpha meets it at this size; raise epsilon."),
                ridge=auto,
            )
        return alpha, gamma

    @staticmethod
    def budget_gamma(epsilon, delta, alpha, n_samples, intercept):
        """The budget's gamma at this ridge, or None where none meets it."""
        corner = domain_bounds(n_samples, alpha, intercept)
        try:
            return ops_gamma(epsilon, delta, corner["leverage"], corner["residual"])
        except ValueError:
            return None

    @classmethod
    def dp_guarantee(cls, epsilon, delta, n_samples, n_features, min_samples=None, *,
                     alpha, gamma, intercept):
        """The data-independent guarantee (see
        :meth:`~sklearn_pdp.OPSRegressor.dp_guarantee`)."""
        if epsilon is not None:
            # calibrated at the fitted size, verified there: the budget holds
            # at every size it accepts (each refusal is raised here)
            for n in {n_samples, min_samples or n_samples}:
                cls.calibrate(epsilon, delta, alpha, gamma, n, n_features, intercept)
            return float(epsilon), delta
        alpha, gamma = cls.calibrate(epsilon, delta, alpha, gamma, n_samples, n_features,
                                     intercept)
        # the corner of the domain over the sizes (ops_dp_epsilon)
        return ops_dp_epsilon(delta, alpha, gamma, n_samples, intercept, min_samples), delta

    @classmethod
    def from_budget(cls, epsilon, delta, data, *, scaler, alpha, gamma=None):
        n, intercept = data.n_samples, scaler.fit_intercept
        d = data.n_features - int(intercept)
        try:
            alpha, gamma = cls.calibrate(epsilon, delta, alpha, gamma, n, d, intercept)
        except InfeasibleBudget as exc:
            # here, from_budget, _make_release, _choose_release, fit,
            # scikit-learn's fit wrapper, the user
            alpha = ridge_fallback(exc, stacklevel=7)
            gamma = cls.budget_gamma(epsilon, delta, alpha, n, intercept)
        guarantee = ((float(epsilon), delta) if epsilon is not None
                     else (ops_dp_epsilon(delta, alpha, gamma, n, intercept), delta))
        release = cls(gamma=gamma, capped=epsilon is not None, scaler=scaler, n_samples=n,
                      delta=delta, guarantee=guarantee, alpha=alpha)
        release.ridge = RidgeSystem(*data.gram(), alpha, intercept)
        return release

    def draw(self, rng, size=None):
        return self.ridge.coef + self.ridge.sample(rng, self.noise_scale, size)

    def fitted_attributes(self):
        return {"alpha_": self.alpha, "gamma_": self.gamma, "noise_scale_": self.noise_scale}

    def losses(self, Xs, ys, add=False):
        return self.row_losses(add)(Xs, ys)

    def row_losses(self, add=False):
        """Training rows as a :class:`TwoStageRows`: the leverage and the
        residual of each row (one product), then its exact loss."""
        if add:
            # an added row is not a neighbour the calibration covered: uncapped
            return partial(ops_target_epsilon, self.ridge, delta=self.delta, gamma=self.gamma)
        ridge = self.ridge

        def statistics(Xs, ys):
            stats = ridge.row_statistics(Xs, ys)
            return np.column_stack((stats["leverage"], stats["residual"]))

        def finish(stats):
            mu, r = leave_one_out(stats[:, 0], stats[:, 1])
            eps = ops_epsilon(self.delta, mu, r, self.gamma)
            # a row at the calibration corner costs exactly the budget: the
            # root search's tolerance must not report more
            return np.minimum(eps, self.guarantee[0]) if self.capped else eps

        return TwoStageRows(statistics, finish, 2)

    # -- the law of a published report ----------------------------------------

    def residual_margin(self, beta, stats):
        return ndtri(1.0 - beta / 2.0) * np.sqrt(stats["leverage"] / self.gamma)

    def _dp(self, delta):
        return ops_dp_epsilon(delta, self.alpha, self.gamma, self.n_samples, self.intercept)

    def _cap(self, delta):
        # a person removed from the n rows or added to them: the domain's
        # corner at n and at n + 1 rows, at this gamma
        return max(self._dp(delta), ops_dp_epsilon(
            delta, self.alpha, self.gamma, self.n_samples + 1, self.intercept))

    def epsilon(self, delta, stats, gaussian_ratio=None):
        mu, r = leave_one_out(stats["leverage"], stats["residual"])
        return compose_with_gaussian(
            lambda d: np.minimum(ops_epsilon(d, mu, r, self.gamma), self._cap(d)),
            delta, gaussian_ratio,
        )

    def cap_epsilon(self, delta, gaussian_ratio=None):
        return compose_with_gaussian(self._cap, delta, gaussian_ratio)

    def dp_epsilon(self, delta, gaussian_ratio=None):
        return compose_with_gaussian(self._dp, delta, gaussian_ratio)

    def gaussian_allowance(self, delta, target):
        return gaussian_allowance(self._dp(delta - GAUSSIAN_DELTA_SHARE * delta), delta, target)


def ops_target_epsilon(ridge, Xs, ys, delta, gamma):
    """Exact OPS epsilon of adding the targets ``Xs`` (labels ``ys``, or the
    worst label in [-1, 1] when None)."""
    mu = ridge.row_statistics(Xs)["leverage"]
    fitted = Xs @ ridge.coef
    # The loss grows with |r| (OPS page): the worst label is an end of [-1, 1].
    r = 1.0 + np.abs(fitted) if ys is None else ys - fitted
    return ops_epsilon(delta, mu, r, gamma)
