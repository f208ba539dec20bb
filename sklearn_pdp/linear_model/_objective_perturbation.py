"""Objective perturbation for ridge regression (Wang, lecture notes on
objective perturbation; :doc:`/mechanisms/objective_perturbation`): the
estimator and its release."""

from numbers import Real


from ..utils._sklearn import Interval, StrOptions
from ._base import PrivateRegressorMixin
from ..utils._docstrings import fill_doc
from ..mechanisms.objective_perturbation._release import ObjPertRelease


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
    :func:`sklearn_pdp.accounting.objpert_delta`); against adaptive
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
        self.max_records = max_records

    def _mechanism_guarantee(self, n_samples, n_features, min_samples=None):
        return ObjPertRelease.dp_guarantee(
            self.epsilon, self.delta, self.alpha, self.sigma, n_samples, n_features,
            self.fit_intercept, min_samples,
        )

    def _make_release(self, data, scaler):
        if self.alpha == "auto" and self.sigma is None and self.epsilon is not None:
            # the private ridge, where the budget lets the eigenvalue help
            from ..mechanisms.objective_perturbation._adaptive import PrivateObjPertRelease

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


