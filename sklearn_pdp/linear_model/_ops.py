"""One Posterior Sample (Wang 2017, sections 2-4; :doc:`/mechanisms/ops`)."""

from numbers import Real


from ..mechanisms.adaops._release import AdaOPSRelease
from ._base import PrivateRegressorMixin
from ..utils._docstrings import fill_doc
from ..utils._sklearn import Interval, StrOptions
from ..mechanisms.ops._release import OPSRelease


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
    (largest leverage and residual, :func:`sklearn_pdp.accounting.domain_bounds`):
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
        tighten_bounds="auto",
        tighten_share=None,
        fit_intercept=True,
        random_state=None,
        n_jobs=None,
        max_records=None,
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
        self.max_records = max_records

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


