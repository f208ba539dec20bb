"""Objective perturbation for ridge regression (Wang, lecture notes on objective perturbation; doc/mechanisms/objective_perturbation.rst)."""

from functools import lru_cache
from numbers import Real

import numpy as np
from scipy import linalg
from scipy.optimize import brentq, minimize_scalar
from sklearn.utils._param_validation import Interval

from ._accounting import objpert_epsilon
from ._base import PrivateRegressorMixin, Ridge, leave_one_out


class ObjPertRegressor(PrivateRegressorMixin):
    """Ridge regression by objective perturbation, with per-instance privacy.

    The released coefficients minimise
    ``1/2 ||y - X theta||^2 + alpha/2 ||theta||^2 + b^T theta`` with
    ``b ~ N(0, sigma^2 I)``, on the data scaled into the privacy domain (rows
    in the unit ball, labels in [-1, 1]); that is, one draw from
    ``N(theta_hat, sigma^2 H^{-2})``, ``H = X^T X + alpha I``. Every training
    row's exact per-instance epsilon is reported in ``pdp_losses_``;
    ``dp_epsilon_`` is the data-independent guarantee.

    Parameters
    ----------
    epsilon : float or None, default=None
        Privacy budget at ``delta``: ``sigma`` is calibrated so that
        ``dp_epsilon_ <= epsilon`` (pass ``sigma=None`` with it). Exactly one
        of ``epsilon`` and ``sigma`` must be given.
    sigma : float or None, default=1.0
        Standard deviation of the linear noise term ``b``, used as given
        (scaled data: rows in the unit ball, labels in [-1, 1]).
    alpha : float, default=50.0
        Ridge strength on the scaled data, as ``Ridge(alpha=alpha,
        fit_intercept=False)`` would use it there. Objective perturbation
        loses about ``log(1 + 1/alpha)`` plus a tail term however large
        ``sigma`` is, so an ``epsilon`` budget needs ``alpha`` large enough;
        ``alpha=0`` gives no data-independent guarantee.
    delta : float, default=1e-6
        The delta at which ``pdp_losses_`` and ``dp_epsilon_`` are reported.
    data_norm : float, default=None
        Bound on the l2 norm of the rows of X. Longer rows are scaled down to it
        (on a copy). If None it is read from the data with a
        :class:`~sklearn_pdp.exceptions.PrivacyLeakWarning`.
    y_bound : float, default=None
        Bound on ``|y|``; larger labels are clipped. If None it is read from the
        data with a :class:`~sklearn_pdp.exceptions.PrivacyLeakWarning`.
    fit_intercept : bool, default=True
        Fit an intercept as a constant feature inside the privacy analysis,
        never by centring with data means.
    random_state : int, RandomState instance or None, default=None
        Seeds the noise. Pass an int for a reproducible fit.
    n_jobs : int, default=None
        Threads that process chunks of rows in parallel in the passes over
        the data (numpy and scipy release the GIL there; BLAS is limited to
        one thread each meanwhile). ``None`` means 1 unless in a
        :func:`joblib.parallel_config` context, -1 means all processors.
        Results agree up to floating-point rounding. Dask input is
        parallelised by its scheduler instead.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Released coefficients, in the units of the input.
    intercept_ : float
        Released intercept (0.0 when ``fit_intercept=False``).
    pdp_losses_ : ndarray of shape (n_samples,)
        Exact per-instance epsilon, at ``delta``, of removing each training
        row (maximum of both directions of the hockey-stick divergence).
    dp_epsilon_ : float
        Data-independent epsilon at ``delta`` for any data set of this size in
        the declared domain; ``inf`` when ``alpha=0``.
    dp_delta_ : float
        The delta of ``dp_epsilon_``.
    noise_scale_ : float
        The ``sigma`` used (given, or calibrated for ``epsilon``).
    data_norm_, y_bound_ : float
        The bounds used (the parameters, or the data's own when not given).
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when X has string column names.

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
    for ridge (erratum E6 in doc/errata.rst).

    ``dp_epsilon_`` is the exact loss at the worst statistics the domain
    allows: ``||x|| = 1``, ``|r| = 1 + sqrt(n)/(2 sqrt(alpha))`` and
    ``(mu, s)`` on the arc ``mu^2 + s^2 = 1/alpha^2`` where
    ``s^2 = ||x||^2 x^T H^{-2} x - mu^2``; the loss grows in ``|r|``, in
    ``||x||`` and towards that arc (checked numerically in the tests), and
    the arc is searched on a grid refined by bounded scalar maximisation.
    The sample size is treated as public. The fitted estimator keeps the
    non-private ridge solution for :meth:`pdp_epsilon`; publish ``coef_``,
    ``intercept_`` or predictions, not the estimator object.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_pdp import ObjPertRegressor
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-1, 1, size=(500, 3)) / np.sqrt(3)
    >>> y = np.clip(X @ [1.0, -0.5, 0.2] + 0.1 * rng.randn(500), -1, 1)
    >>> reg = ObjPertRegressor(epsilon=2.0, sigma=None, alpha=50.0, data_norm=1.0,
    ...                        y_bound=1.0, random_state=0).fit(X, y)
    >>> bool(reg.dp_epsilon_ <= 2.0)
    True
    >>> bool(np.all(reg.pdp_losses_ <= reg.dp_epsilon_))
    True
    """

    _parameter_constraints: dict = {
        **PrivateRegressorMixin._parameter_constraints,
        "epsilon": [Interval(Real, 0, None, closed="neither"), None],
        "sigma": [Interval(Real, 0, None, closed="neither"), None],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "delta": [Interval(Real, 0, 1, closed="neither")],
    }

    def __init__(
        self,
        epsilon=None,
        *,
        sigma=1.0,
        alpha=50.0,
        delta=1e-6,
        data_norm=None,
        bounds_X=None,
        y_bound=None,
        fit_intercept=True,
        random_state=None,
        n_jobs=None,
    ):
        self.epsilon = epsilon
        self.sigma = sigma
        self.alpha = alpha
        self.delta = delta
        self.data_norm = data_norm
        self.bounds_X = bounds_X
        self.y_bound = y_bound
        self.fit_intercept = fit_intercept
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _noise_scale(self, n_samples):
        """sigma as given, or calibrated from public quantities only."""
        if (self.epsilon is None) == (self.sigma is None):
            raise ValueError(
                "Give exactly one of epsilon and sigma (got "
                f"epsilon={self.epsilon!r}, sigma={self.sigma!r}); set "
                "sigma=None to calibrate sigma for an epsilon budget."
            )
        if self.sigma is not None:
            return float(self.sigma)
        return objpert_noise_scale(self.epsilon, self.delta, self.alpha, n_samples)

    def dp_guarantee(self, n_samples, n_features, min_samples=None):
        sigma = self._noise_scale(n_samples)
        if self.sigma is None:
            # objpert_noise_scale verified the budget at this size
            return float(self.epsilon), self.delta
        # a fixed sigma: the worst corner, growing with n_samples
        return objpert_dp_epsilon(self.delta, self.alpha, sigma, n_samples), self.delta

    def _fit_scaled(self, data, rng):
        self.noise_scale_ = self._noise_scale(data.n_samples)
        self._ridge = Ridge(*data.gram(), self.alpha, self.fit_intercept)
        self.dp_epsilon_, self.dp_delta_ = self.dp_guarantee(
            data.n_samples, self.n_features_in_
        )
        return self._release(rng)

    def _release(self, rng, size=None):
        """Draw(s) of the released coefficients (scaled coordinates).

        theta = H^{-1}(X^T y - b) = theta_hat - H^{-1} b, b ~ N(0, sigma^2 I).
        """
        d = self._ridge.chol.shape[0]
        b = self.noise_scale_ * rng.standard_normal(d if size is None else (d, size))
        shift = linalg.cho_solve((self._ridge.chol, True), b, check_finite=False)
        return self._ridge.coef - (shift if size is None else shift.T)

    def _training_epsilon(self, Xs, ys):
        stats = self._ridge.row_statistics(Xs, ys, inverse_norm=True, norm=True)
        return objpert_epsilon(self.delta, *_remove_row(stats), self.noise_scale_)

    def _target_epsilon(self, Xs, ys):
        stats = self._ridge.row_statistics(Xs, inverse_norm=True, norm=True)
        fitted = Xs @ self._ridge.coef
        # The loss grows with |r|: the worst label is an end of [-1, 1].
        r = 1.0 + np.abs(fitted) if ys is None else ys - fitted
        return objpert_epsilon(
            self.delta, stats["norm2"], stats["leverage"], stats["inverse_norm2"],
            r, self.noise_scale_,
        )


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


# Angles of the worst-case search on the arc mu^2 + s^2 = 1/alpha^2 (the end
# pi/2 is mu = 0, i.e. x = 0, which loses nothing).
_ARC = np.linspace(0.0, 0.5 * np.pi * (1.0 - 1e-9), 17)


def _arc_epsilon(theta, delta, alpha, r, sigma):
    """Loss of ||x|| = 1, mu = cos(theta)/alpha, s = sin(theta)/alpha, residual r."""
    return objpert_epsilon(delta, 1.0, np.cos(theta) / alpha, alpha**-2.0, r, sigma)


def objpert_dp_epsilon(delta, alpha, sigma, n_samples, *, residual=None, refine=True):
    """Data-independent epsilon of objective perturbation (doc/mechanisms/objective_perturbation.rst).

    The worst exact loss over the statistics the domain allows: ||x|| <= 1,
    mu <= ||x||^2/alpha, x^T H^{-2} x <= ||x||^2/alpha^2 and
    |r| <= 1 + sqrt(n)/(2 sqrt(alpha)). The loss grows with ||x||, |r| and the
    radius of (mu, s), s^2 = ||x||^2 x^T H^{-2} x - mu^2, so the search runs
    over the arc ||x|| = 1, mu^2 + s^2 = 1/alpha^2 at the largest residual: a
    grid of 17 angles, then a bounded maximisation around the best of them,
    reporting the largest value seen. No guarantee without ridge.
    ``residual`` overrides the residual bound (0 gives the floor of the loss
    as sigma grows); ``refine=False`` skips the maximisation (a lower value,
    used only inside the calibration, which then checks the refined one).
    """
    if alpha <= 0:
        return np.inf
    if residual is None:
        residual = 1.0 + np.sqrt(n_samples) / (2.0 * np.sqrt(alpha))
    grid = _arc_epsilon(_ARC, delta, alpha, residual, sigma)
    best = int(np.argmax(grid))
    if not refine:
        return float(grid[best])
    lo, hi = _ARC[max(best - 1, 0)], _ARC[min(best + 1, _ARC.size - 1)]
    refined = minimize_scalar(
        lambda t: -_arc_epsilon(t, delta, alpha, residual, sigma),
        bounds=(lo, hi), method="bounded", options={"xatol": 1e-5},
    )
    return float(max(grid[best], -refined.fun))


@lru_cache(maxsize=64)
def objpert_noise_scale(epsilon, delta, alpha, n_samples):
    """Smallest sigma (to 1e-7 relative) with ``objpert_dp_epsilon <= epsilon``.

    Depends on public quantities only, hence the cache.
    """
    if alpha <= 0:
        raise ValueError("An epsilon budget needs alpha > 0; give sigma instead.")
    # The loss stays positive as sigma -> inf (zero residual): its floor.
    floor = objpert_dp_epsilon(delta, alpha, 1.0, n_samples, residual=0.0)
    if epsilon <= floor * (1 + 1e-6):
        raise ValueError(
            f"epsilon={epsilon} cannot be reached with alpha={alpha} at "
            f"delta={delta}: objective perturbation loses at least {floor:.4g} "
            "however much noise it adds. Increase alpha or epsilon."
        )

    def excess(log_sigma, refine=False):
        sigma = np.exp(log_sigma)
        return objpert_dp_epsilon(delta, alpha, sigma, n_samples, refine=refine) - epsilon

    lo, hi = -5.0, 5.0
    while excess(hi) > 0:
        lo, hi = hi, hi + 10.0
    while excess(lo) <= 0:
        lo, hi = lo - 10.0, lo
    log_sigma = brentq(excess, lo, hi, xtol=1e-7)
    # brentq may land a hair below the root, and the refined worst case can
    # exceed the grid's: step up until the reported guarantee holds.
    step = 1e-7
    while excess(log_sigma, refine=True) > 0:
        log_sigma, step = log_sigma + step, 2.0 * step
    return float(np.exp(log_sigma))
