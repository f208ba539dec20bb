"""One Posterior Sample (Wang 2017, sections 2-4; doc/mechanisms/ops.rst)."""

from numbers import Real

import numpy as np
from scipy.special import ndtri

from ._sklearn import Interval, StrOptions
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
from ._adaops import AdaOPSRegressor
from ._base import InfeasibleBudget, PrivateRegressorMixin, ridge_fallback
from ._ridge_system import RidgeSystem, leave_one_out
from ._rows import TwoStageRows
from ._law import ReleaseLaw
from ._docstrings import fill_doc


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
    them. The fit is :class:`AdaOPSRegressor`'s, and ``pdp_losses_`` the
    exact loss of that whole release (a mixture over the released cells,
    the same for every ``random_state``). The former public rule
    (``ops_auto_alpha``, a function of n, d and epsilon) shrank the slopes
    to a third on well-conditioned data (doc/mechanisms/ops.rst).

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
        self.tighten_bounds = tighten_bounds
        self.tighten_share = tighten_share
        self.fit_intercept = fit_intercept
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _calibrate(self, n_samples, n_features):
        """(alpha, gamma) for a data set of ``n_samples`` rows (public)."""
        if (self.epsilon is None) == (self.gamma is None):
            raise ValueError(
                "Give exactly one of epsilon (a privacy budget) and gamma (a raw "
                f"posterior scaling, for experts); got epsilon={self.epsilon!r}, "
                f"gamma={self.gamma!r}."
            )
        if self.alpha == "auto":  # with a budget, the fit is AdaOPS's (_fit_adaops)
            raise ValueError("alpha='auto' needs epsilon; give alpha with gamma.")
        alpha = float(self.alpha)
        if self.epsilon is None:
            return alpha, float(self.gamma)
        gamma = self._gamma(alpha, n_samples)
        if gamma is None:
            try:
                auto = ops_auto_alpha(
                    self.epsilon, self.delta, n_samples, n_features, self.fit_intercept)
            except ValueError:
                auto = None
            raise InfeasibleBudget(
                f"OPSRegressor cannot meet epsilon={self.epsilon} at alpha={alpha:.4g} "
                f"with n_samples={n_samples}: its loss at the worst leverage stays "
                "above the budget however much noise it adds. "
                + (f"alpha={auto:.4g} (the public rule ops_auto_alpha) meets it." if auto
                   else "No alpha meets it at this size; raise epsilon."),
                ridge=auto,
            )
        return alpha, gamma

    def _gamma(self, alpha, n_samples):
        """The budget's gamma at this ridge, or None where none meets it."""
        corner = domain_bounds(n_samples, alpha, self.fit_intercept)
        try:
            return ops_gamma(self.epsilon, self.delta, corner["leverage"], corner["residual"])
        except ValueError:
            return None

    def _private_ridge(self):
        """Whether ``alpha="auto"`` chooses the ridge privately from the data:
        with a budget, the fit is AdaOPS's (see Notes)."""
        return self.alpha == "auto" and self.epsilon is not None and self.gamma is None

    def _adaops(self):
        """The AdaOPS mechanism with this estimator's budget."""
        return AdaOPSRegressor(epsilon=self.epsilon, delta=self.delta,
                               fit_intercept=self.fit_intercept)

    def _mechanism_guarantee(self, n_samples, n_features, min_samples=None):
        if self._private_ridge():
            return self._adaops()._mechanism_guarantee(n_samples, n_features, min_samples)
        if self.epsilon is not None:
            # calibrated at the fitted size, verified there: the budget holds
            # at every size it accepts (each refusal is raised here)
            for n in {n_samples, min_samples or n_samples}:
                self._calibrate(n, n_features)
            return float(self.epsilon), self.delta
        alpha, gamma = self._calibrate(n_samples, n_features)
        # the corner of the domain over the sizes (ops_dp_epsilon)
        return ops_dp_epsilon(
            self.delta, alpha, gamma, n_samples, self.fit_intercept, min_samples
        ), self.delta

    def _fit_scaled(self, data, rng):
        if self._private_ridge():
            return self._fit_adaops(data, rng)
        try:
            self.alpha_, self.gamma_ = self._calibrate(data.n_samples, self.n_features_in_)
        except InfeasibleBudget as exc:
            self.alpha_ = ridge_fallback(exc)
            self.gamma_ = self._gamma(self.alpha_, data.n_samples)
        self._n = data.n_samples
        self._ridge = RidgeSystem(*data.gram(), self.alpha_, self.fit_intercept)
        self.dp_epsilon_, self.dp_delta_ = self.dp_guarantee(
            data.n_samples, self.n_features_in_
        )
        self.noise_scale_ = 1.0 / np.sqrt(self.gamma_)
        return self._mechanism_release(rng)

    def _fit_adaops(self, data, rng):
        """The fit of ``alpha="auto"`` with a budget: AdaOPS's release (the
        conditioning's cell, the residual bound's cell, one posterior
        sample), whose exact per-row losses of the whole release it reports."""
        ada = self._adaops_ = self._adaops()
        ada.n_features_in_, ada._scaler = self.n_features_in_, self._scaler
        theta = ada._fit_scaled(data, rng)
        ada._theta = theta
        for name in ("alpha_", "gamma_", "noise_scale_", "floor_", "residual_bound_",
                     "dp_epsilon_", "dp_delta_", "_n", "_ridge"):
            setattr(self, name, getattr(ada, name))
        return theta

    def _mechanism_release(self, rng, size=None):
        """Draw(s) of the released coefficients (scaled coordinates)."""
        if hasattr(self, "_adaops_"):
            return self._adaops_._mechanism_release(rng, size)
        return self._ridge.coef + self._ridge.sample(rng, self.noise_scale_, size)

    def _training_epsilon(self, Xs, ys):
        return self._training_stages()(Xs, ys)

    def _training_stages(self):
        """:meth:`_training_epsilon` as a :class:`TwoStageRows`: the leverage
        and the residual of each row (one product), then its exact loss."""
        if hasattr(self, "_adaops_"):
            return self._adaops_._training_epsilon
        ridge = self._ridge

        def statistics(Xs, ys):
            stats = ridge.row_statistics(Xs, ys)
            return np.column_stack((stats["leverage"], stats["residual"]))

        def finish(stats):
            mu, r = leave_one_out(stats[:, 0], stats[:, 1])
            return self._capped(ops_epsilon(self.delta, mu, r, self.gamma_))

        return TwoStageRows(statistics, finish, 2)

    def _target_epsilon(self, Xs, ys):
        if hasattr(self, "_adaops_"):
            return self._adaops_._target_epsilon(Xs, ys)
        # an added row is not a neighbour the calibration covered: uncapped
        return ops_target_epsilon(self._ridge, Xs, ys, self.delta, self.gamma_)

    def _capped(self, eps):
        # a row at the calibration corner costs exactly the budget: the root
        # search's tolerance must not report more
        return eps if self.epsilon is None else np.minimum(eps, self.dp_epsilon_)

    def _mechanism_law(self):
        """Public description of the release, for a published report.

        Returns
        -------
        law : OPSLaw
            The posterior scaling ``gamma_``, the ridge, the public size, the
            domain and the released (scaled) coefficients: see
            :class:`sklearn_pdp._law.ReleaseLaw`.
        """
        if hasattr(self, "_adaops_"):
            return self._adaops_._mechanism_law()
        return OPSLaw(gamma=self.gamma_, **self._law_public())

    def _law_statistics(self, Xs, ys, add=False):
        if hasattr(self, "_adaops_"):
            return self._adaops_._law_statistics(Xs, ys, add)
        return super()._law_statistics(Xs, ys, add)


class OPSLaw(ReleaseLaw):
    """OPS's release law: coef ~ N(theta_hat, (gamma H)^{-1}) (doc/publish.rst).

    x^T (coef - theta_hat) ~ N(0, mu' / gamma) with the in-sample leverage
    mu'; the loss grows with the leverage and the |residual| (section 2 of
    doc/mechanisms/ops.rst), so upper values give an upper bound. It is
    capped by the domain's worst loss of a row removed from the n rows or
    added to them (the corners at n and n + 1 rows), which holds for anyone.
    """

    def __init__(self, *, gamma, **public):
        super().__init__(**public)
        self.gamma = float(gamma)

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
    # The loss grows with |r| (doc/mechanisms/ops.rst): the worst label is an end of [-1, 1].
    r = 1.0 + np.abs(fitted) if ys is None else ys - fitted
    return ops_epsilon(delta, mu, r, gamma)
