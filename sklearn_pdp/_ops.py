"""One Posterior Sample (Wang 2017, seed 000 sections 2-4)."""

from numbers import Real

import numpy as np
from sklearn.utils._param_validation import Interval

from ._accounting import ops_epsilon
from ._base import PrivateRegressorMixin, Ridge, leave_one_out


class OPSRegressor(PrivateRegressorMixin):
    """Linear regression by One Posterior Sample, with per-instance privacy.

    The released coefficients are one draw from the scaled ridge posterior
    ``N(theta_hat, (gamma H)^{-1})``, ``H = X^T X + alpha I``, computed on the
    data scaled into the privacy domain (rows in the unit ball, labels in
    [-1, 1]). Every training row's exact per-instance epsilon is reported in
    ``pdp_losses_``; ``dp_epsilon_`` is the data-independent guarantee.

    Parameters
    ----------
    gamma : float, default=10.0
        Posterior scaling: the draw has covariance (gamma H)^{-1}. Larger values
        mean less noise and more privacy loss; gamma=1 is the Bayesian posterior
        of a model with unit noise variance, far noisier than labels scaled
        into [-1, 1] need, hence the default of 10.
    alpha : float, default=1.0
        Ridge strength on the scaled data (rows of norm <= 1, labels in
        [-1, 1]), as ``Ridge(alpha=alpha, fit_intercept=False)`` would use it
        there. ``alpha=0`` gives no data-independent guarantee.
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
        Fit an intercept as a constant feature inside the privacy analysis (the
        scaled row is ``[x / data_norm, 1] / sqrt(2)``), never by centring with
        data means.
    random_state : int, RandomState instance or None, default=None
        Seeds the posterior draw. Pass an int for a reproducible fit.

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
        ``1 / sqrt(gamma)``: the draw is ``theta_hat + noise_scale_ * N(0, H^{-1})``.
    data_norm_, y_bound_ : float
        The bounds used (the parameters, or the data's own when not given).
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when X has string column names.

    See Also
    --------
    AdaOPSRegressor : OPS with privately chosen regularisation for a budget.

    Notes
    -----
    The fitted estimator keeps the non-private ridge solution for
    :meth:`pdp_epsilon`; publish ``coef_``, ``intercept_`` or predictions, not
    the estimator object. The sample size is treated as public.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_pdp import OPSRegressor
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-1, 1, size=(500, 3)) / np.sqrt(3)
    >>> y = np.clip(X @ [1.0, -0.5, 0.2] + 0.1 * rng.randn(500), -1, 1)
    >>> reg = OPSRegressor(gamma=10.0, data_norm=1.0, y_bound=1.0,
    ...                    random_state=0).fit(X, y)
    >>> bool(np.median(reg.pdp_losses_) < reg.dp_epsilon_)
    True
    >>> reg.pdp_losses_.shape
    (500,)
    """

    _parameter_constraints: dict = {
        **PrivateRegressorMixin._parameter_constraints,
        "gamma": [Interval(Real, 0, None, closed="neither")],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "delta": [Interval(Real, 0, 1, closed="neither")],
    }

    def __init__(
        self,
        gamma=10.0,
        *,
        alpha=1.0,
        delta=1e-6,
        data_norm=None,
        y_bound=None,
        fit_intercept=True,
        random_state=None,
    ):
        self.gamma = gamma
        self.alpha = alpha
        self.delta = delta
        self.data_norm = data_norm
        self.y_bound = y_bound
        self.fit_intercept = fit_intercept
        self.random_state = random_state

    def _fit_scaled(self, data, rng):
        self._ridge = Ridge(*data.gram(), self.alpha)
        stats = self._ridge.training_statistics(data)
        mu, r = leave_one_out(stats["leverage"], stats["residual"])
        self.pdp_losses_ = ops_epsilon(self.delta, mu, r, self.gamma)
        self.dp_epsilon_ = ops_dp_epsilon(
            self.delta, self.alpha, self.gamma, data.n_samples
        )
        self.dp_delta_ = self.delta
        self.noise_scale_ = 1.0 / np.sqrt(self.gamma)
        return self._release(rng)

    def _release(self, rng, size=None):
        """Draw(s) of the released coefficients (scaled coordinates)."""
        return self._ridge.coef + self._ridge.sample(rng, self.noise_scale_, size)

    def _target_epsilon(self, Xs, ys):
        mu = self._ridge.row_statistics(Xs)["leverage"]
        fitted = Xs @ self._ridge.coef
        # The loss grows with |r| (SPEC.md 2): the worst label is an end of [-1, 1].
        r = 1.0 + np.abs(fitted) if ys is None else ys - fitted
        return ops_epsilon(self.delta, mu, r, self.gamma)


def ops_dp_epsilon(delta, alpha, gamma, n_samples):
    """Data-independent OPS epsilon for rows in the unit ball (SPEC.md 2).

    mu <= 1/alpha and |r| <= 1 + sqrt(n)/(2 sqrt(alpha)); the loss grows in
    both, so the corner is the worst case. No guarantee without ridge.
    """
    if alpha <= 0:
        return np.inf
    r = 1.0 + np.sqrt(n_samples) / (2.0 * np.sqrt(alpha))
    return ops_epsilon(delta, 1.0 / alpha, r, gamma)
