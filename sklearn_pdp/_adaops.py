"""AdaOPS: One Posterior Sample with a privately chosen ridge (Wang 2017,
Algorithm 1, corrected; doc/mechanisms/adaops.rst).

The release is a pair (cell, theta). A noisy smallest eigenvalue of the
scatter matrix falls into one cell of a public partition of the real line;
the cell fixes an eigenvalue floor, a ridge and a posterior scaling, and
theta is one OPS draw with them. Only the cell is released, so a row's
exact loss is a finite mixture of OPS losses (ops_mixture_epsilon).
"""

from functools import lru_cache
from numbers import Real

import numpy as np
from scipy.special import log_ndtr, ndtri

from ._sklearn import Interval
from ._accounting import (
    gaussian_noise_scale,
    log_gauss_mass,
    ops_gamma,
    ops_mixture_epsilon,
)
from ._base import PrivateRegressorMixin, Ridge, leave_one_out
from ._docstrings import fill_doc
from ._eigen import eigen_change, eigen_max_change, scatter_eigen

# Ratio of the cells' floors above the smallest floor h0, and of the growth
# of their ridges below it (see _Cells).
_CELL_RATIO = 1.1
# Bound on the posterior noise variance of a prediction (labels scaled to
# [-1, 1]) that fixes the smallest floor h0 (see AdaOPSRegressor._min_floor).
_NOISE_TARGET = 3e-3
# Smallest ridge, relative to the floor and to n d: keeps the posterior
# proper and well conditioned even when the margin event fails.
_RIDGE_FLOOR = 1e-6
_RIDGE_FLOOR_ND = 1e-8
# Cells further than this many noise deviations from the data's eigenvalue
# are left out of a row's loss and counted as revealing everything: their
# mass, ~1e-18, is far below any delta.
_CELL_WINDOW = 8.8
# Default ``budget_split`` (eigenvalue, sample), measured on the utility grid
# against (0.25, 0.75).
_DEFAULT_SPLIT = (0.1, 0.9)


class _Calibration:
    """AdaOPS's public calibration for n rows and d features: the noise of the
    eigenvalue, its margin, and the grid of cells with their floors, ridges
    and posterior scalings (doc/mechanisms/adaops.rst).

    Cells live on the line of e = (released eigenvalue) - margin. Cell k >= 0
    is e in [h0 rho^k, h0 rho^(k+1)): floor h0 rho^k and no ridge (with a
    fixed floor, the single cell [h0, inf) with floor h0). Cell k < 0 is e
    in [h0 (2 - rho^m), h0 (2 - rho^(m-1))), m = -k: floor h0 and ridge
    h0 (rho^m - 1). On every cell e + ridge >= floor, so the floor holds
    for the data whenever lambda_min >= e (the margin event). The lowest
    cell, every e below h0 (2 - rho^(M-1)) with M the first m at which
    2 - rho^m <= 0, has the ridge h0: lambda_min >= 0 always, so its floor
    holds whatever the margin event (a larger ridge would only add bias).
    Every cell also has the tiny ridge ``tiny``, which keeps the posterior
    proper.
    """

    def __init__(self, *, n, intercept, eps_eigen, eps_sample, delta_share, h0, fixed, tiny):
        self.n, self.intercept = n, intercept
        self.budget = (eps_eigen + eps_sample, 3 * delta_share)
        self.eps_sample, self.delta_share = eps_sample, delta_share
        self.change = eigen_max_change(n, intercept)
        self.sigma = gaussian_noise_scale(eps_eigen, delta_share, self.change)
        self.margin = -self.sigma * ndtri(delta_share)
        self.h0, self.fixed, self.tiny = float(h0), fixed, float(tiny)
        self.log_rho = np.log(_CELL_RATIO)
        self.lowest = -int(np.ceil(np.log(2.0) / self.log_rho))
        self._gammas = {}

    def index(self, e):
        """The cells of the points ``e``."""
        e = np.asarray(e, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            up = np.floor(np.log(e / self.h0) / self.log_rho)
            down = -np.ceil(np.log1p((self.h0 - e) / self.h0) / self.log_rho)
        up = np.zeros_like(up) if self.fixed else up
        down = np.clip(down, self.lowest, -1)
        return np.where(e >= self.h0, up, down).astype(int)

    def edges(self, k):
        """Lower and upper ends (in e) of the cells ``k``."""
        k = np.asarray(k, dtype=float)
        rho = np.exp(self.log_rho)
        up, down = np.maximum(k, 0), -np.minimum(k, 0)
        lower = np.where(k >= 0, self.h0 * rho**up, self.h0 * (2.0 - rho**down))
        upper = np.where(k >= 0, self.h0 * rho ** (up + 1), self.h0 * (2.0 - rho ** (down - 1)))
        if self.fixed:
            upper = np.where(k >= 0, np.inf, upper)
        return np.where(k == self.lowest, -np.inf, lower), upper

    def floor(self, k):
        return self.h0 * np.exp(self.log_rho * max(k, 0))

    def ridge(self, k):
        ridge = self.h0 * min(np.expm1(self.log_rho * -k), 1.0) if k < 0 else 0.0
        return ridge + self.tiny

    def corner(self, floor, alpha):
        """Largest leverage and |residual| of any target against any data set
        of at most n rows whose regularised scatter has eigenvalues >= floor."""
        # ||beta|| <= sqrt(n) max over s >= floor - alpha of sqrt(s) / (s + alpha)
        s = max(floor - alpha, 0.0)
        slope = np.sqrt(s) / floor if s >= alpha else 0.5 / np.sqrt(alpha)
        width = 2.0 if self.intercept else 1.0  # ||x - x_bar|| or ||x||
        leverage = width**2 / floor + (self.leverage_limit() if self.intercept else 0.0)
        return leverage, width + width * np.sqrt(self.n) * slope

    def gamma(self, k):
        """The posterior scaling of cell k: OPS at the sample's share, at the
        corner of the data sets whose floor holds, neighbours included (a row
        moves lambda_min by at most ``change``)."""
        if k not in self._gammas:
            if self.floor(k) <= self.change:
                raise ValueError("a row can remove the whole floor: no gamma")
            corner = self.corner(self.floor(k) - self.change, self.ridge(k))
            self._gammas[k] = ops_gamma(self.eps_sample, self.delta_share, *corner)
        return self._gammas[k]

    def noise_bound(self, k):
        """Largest posterior noise variance of a prediction in cell k (no ridge):
        at most the corner's leverage over gamma; inf where no gamma exists."""
        try:
            gamma = self.gamma(k)
        except ValueError:
            return np.inf
        return self.corner(self.floor(k), self.tiny)[0] / gamma

    def leverage_limit(self):
        """The corner leverage as the floor grows: 1/(n - 1) with an intercept."""
        return 1.0 / (self.n - 1) if self.n > 1 else np.inf


def _quiet_floor(cal):
    """The smallest floor of ``cal``'s grid whose prediction noise is below
    _NOISE_TARGET, or twice its limit as the floor grows when that is larger
    (the bound falls with the floor; it is infinite where no gamma meets the
    budget): exponential search and bisection over the cells. A ValueError
    when even the limit has no gamma: the intercept's own posterior, with
    leverage 1/(n - 1), reveals too much."""
    limit = 0.0
    if cal.intercept:
        try:
            limit = 2.0 * cal.leverage_limit() / ops_gamma(
                cal.eps_sample, cal.delta_share, cal.leverage_limit(), 2.0)
        except ValueError:
            raise ValueError(
                f"AdaOPSRegressor cannot meet epsilon={cal.budget[0]:.4g} with "
                f"n_samples={cal.n} and an unpenalised intercept: too few samples "
                "(the intercept's own posterior reveals too much). Raise epsilon, "
                "or use AdaSSPRegressor."
            ) from None
    target = max(_NOISE_TARGET, limit)
    lo, hi = -1, 0
    while cal.noise_bound(hi) > target:
        lo, hi = hi, 2 * hi + 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if cal.noise_bound(mid) > target else (lo, mid)
    return cal.floor(hi)


@lru_cache(maxsize=64)
def _calibration(n, d, paper_floor, kappa, intercept, eps_eigen, eps_sample, delta_share):
    """AdaOPS's calibration: a function of public quantities only (cached,
    its root searches are the slow part of small fits)."""
    common = dict(n=n, intercept=intercept, eps_eigen=eps_eigen, eps_sample=eps_sample,
                  delta_share=delta_share, fixed=kappa is not None,
                  tiny=max(_RIDGE_FLOOR * paper_floor, _RIDGE_FLOOR_ND * n * (d + 1)))
    if kappa is None:
        return _Calibration(h0=_quiet_floor(_Calibration(h0=paper_floor, **common)), **common)
    cal = _Calibration(h0=n / (d * kappa), **common)
    if not np.isfinite(cal.noise_bound(0)):
        raise ValueError(
            f"AdaOPSRegressor cannot meet epsilon={eps_eigen + eps_sample:.4g} with "
            f"kappa={kappa} and n_samples={n}: no posterior scaling is private "
            "enough at that floor. Lower kappa or raise epsilon."
        )
    return cal


@fill_doc
class AdaOPSRegressor(PrivateRegressorMixin):
    """OPS with privately chosen regularisation: (epsilon, delta)-DP for a budget.

    The corrected AdaOPS algorithm (Wang 2017, Algorithm 1; see Notes). The
    smallest eigenvalue of the scatter matrix of the features is released
    with Gaussian noise, less a margin, into one cell of a public grid; the
    cell fixes an eigenvalue floor ``floor_`` and a ridge ``alpha_`` such
    that, except with probability delta / 3, every eigenvalue of the
    regularised scatter matrix is at least the floor. That bounds the
    leverage and residual of every possible target, and ``gamma_`` is the
    largest posterior scaling for which One Posterior Sample at the worst
    such target stays within its share of the budget. The released
    coefficients are one draw from ``N(theta_hat, (gamma_ H)^{{-1}})``,
    ``H = X^T X + alpha_ P`` with an unpenalised intercept. Every training
    row's exact per-instance loss of the whole release is in ``pdp_losses_``.

    Parameters
    ----------
    epsilon : float, default=1.0
        Total privacy budget of the whole mechanism.
    delta : float, default=1e-6
        Total delta; also the delta at which ``pdp_losses_`` are reported.
    kappa : float, default=None
        Largest acceptable condition number: a fixed eigenvalue floor
        ``h = n / (d kappa)`` (``d`` features). Must satisfy the paper's
        constraint ``kappa <= n epsilon / (4 d (1 + log(4 / delta)))``. If
        None, the floor adapts to the released eigenvalue: the largest floor
        of the grid that the data support without ridge, never below a
        public minimum (see Notes).
    budget_split : array-like of shape (2,), default=None
        Positive weights, normalised to sum 1, of the epsilon budget spent on
        the eigenvalue release and on the posterior sample. None means
        ``(0.1, 0.9)``.
    {bounds}
    {fit_intercept}
    {random_state}
    {n_jobs}

    Attributes
    ----------
    {model}
    {mean_only}
    alpha_ : float
        The ridge strength of the released cell (scaled data).
    floor_ : float
        The eigenvalue floor of the released cell (scaled data).
    gamma_ : float
        The posterior scaling of the released cell.
    kappa_ : float
        ``n / (d floor_)``.
    pdp_losses_ : ndarray of shape (n_samples,)
        Exact per-instance epsilon, at ``delta``, of removing each training
        row from the whole release (cell and coefficients; see Notes).
    dp_epsilon_ : float
        Data-independent epsilon of the whole mechanism (the budget).
    dp_delta_ : float
        The delta of ``dp_epsilon_`` (= ``delta``).
    noise_scale_ : float
        ``1 / sqrt(gamma_)``: the draw is ``theta_hat + noise_scale_ * N(0, H^{{-1}})``.
    {fitted_bounds}

    See Also
    --------
    OPSRegressor : One Posterior Sample with a ridge fixed in advance.
    AdaSSPRegressor : Noisy sufficient statistics with a private ridge.

    Notes
    -----
    On the data scaled into the unit ball (labels in [-1, 1]), with budget
    shares eps_1 (eigenvalue) and eps_2 (sample) and delta split equally
    between the eigenvalue, its margin event and the sample:

    1. ``lambda~ = lambda_min(S) + sigma_1 N(0, 1)``, S the centred scatter
       matrix (``X^T X`` without intercept), sigma_1 from the analytic
       Gaussian mechanism for the sensitivity ``4 (n - 1) / n`` (1);
    2. ``e = lambda~ - sigma_1 z_(1 - delta/3)`` falls into one cell of the
       public grid of doc/mechanisms/adaops.rst, which fixes the floor h and
       the ridge alpha with ``e + alpha >= h``;
    3. ``gamma`` is the largest scaling whose exact OPS loss at the worst
       leverage and residual of any data set with ``lambda_min(S) + alpha
       >= h - 4`` (its neighbours included) is eps_2;
    4. one posterior sample with an unpenalised intercept.

    The smallest floor h0 is a function of public quantities only: the
    smallest floor at least the paper's ``4 (1 + log(4 / delta)) / epsilon``
    at which the posterior noise variance of any prediction,
    ``(1/n + 4/h) / gamma(h)``, is below 3e-3. The ridge shrinks the slopes
    only: with a small ``n epsilon`` the model falls back towards the label
    mean. The guarantee is ``(eps_1 + eps_2, delta)`` by composition.

    Only the cell is released, never ``lambda~``: ``pdp_losses_[i]`` is the
    exact loss of the pair (cell, coefficients), a finite mixture over the
    cells of OPS losses shifted by the cells' log probability ratios (cells
    beyond 8.8 noise deviations counted as revealing everything). It is the
    same for every ``random_state``. The sample size is treated as public.

    The fitted estimator keeps non-private statistics for
    :meth:`pdp_epsilon`; publish :meth:`public_model`, not the estimator.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_pdp import AdaOPSRegressor
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-1, 1, size=(20000, 3)) / np.sqrt(3)
    >>> y = np.clip(0.3 + X @ [1.0, -0.5, 0.2] + 0.1 * rng.randn(20000), -1, 1)
    >>> reg = AdaOPSRegressor(epsilon=1.0, data_norm=1.0, y_bound=1.0,
    ...                       random_state=0).fit(X, y)
    >>> bool(reg.dp_epsilon_ <= 1.0)
    True
    >>> bool(np.all(reg.pdp_losses_ <= reg.dp_epsilon_))
    True
    >>> bool(reg.score(X, y) > 0.7)  # least squares: 0.93; the ridge costs slope
    True
    """

    _parameter_constraints: dict = {
        **PrivateRegressorMixin._parameter_constraints,
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "kappa": [Interval(Real, 0, None, closed="neither"), None],
        "budget_split": ["array-like", None],
    }

    def __init__(
        self,
        epsilon=1.0,
        *,
        delta=1e-6,
        kappa=None,
        budget_split=None,
        data_norm=None,
        bounds_X=None,
        y_bound=None,
        fit_intercept=True,
        random_state=None,
        n_jobs=None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.kappa = kappa
        self.budget_split = budget_split
        self.data_norm = data_norm
        self.bounds_X = bounds_X
        self.y_bound = y_bound
        self.fit_intercept = fit_intercept
        self.random_state = random_state
        self.n_jobs = n_jobs

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # scikit-learn's check data (200 rows, 10 features) at epsilon=1 is
        # mostly noise: the model falls back towards the label mean
        tags.regressor_tags.poor_score = True
        return tags

    def _budget(self):
        """Epsilon of the eigenvalue and of the sample, and the delta of each
        of the eigenvalue, the margin event and the sample."""
        weights = np.array(_DEFAULT_SPLIT if self.budget_split is None
                           else self.budget_split, dtype=float)
        if weights.shape != (2,) or not np.all(weights > 0):
            raise ValueError(
                "budget_split must be two positive weights (eigenvalue, sample); "
                f"got {self.budget_split!r}."
            )
        eps = self.epsilon * weights / weights.sum()
        return eps[0], eps[1], self.delta / 3

    def _paper_floor(self, n, d):
        """The paper's smallest floor, 4 (1 + log(4 / delta)) / epsilon; a
        fixed floor below it (too large a kappa) is refused."""
        floor = 4 * (1 + np.log(4 / self.delta)) / self.epsilon
        if self.kappa is not None and n / (d * self.kappa) < floor * (1 - 1e-12):
            raise ValueError(
                f"kappa={self.kappa} violates the AdaOPS constraint kappa <= "
                f"n epsilon / (4 d (1 + log(4 / delta))) = {n / (d * floor):.4g} "
                f"for n={n} rows and d={d} features; lower kappa or raise epsilon."
            )
        return floor

    def _calibrate(self, n, d):
        """The public calibration for n rows and d features."""
        eps_eigen, eps_sample, delta_share = self._budget()
        return _calibration(n, d, self._paper_floor(n, d), self.kappa, self.fit_intercept,
                            float(eps_eigen), float(eps_sample), delta_share)

    def _mechanism_guarantee(self, n_samples, n_features, min_samples=None):
        # every cell's gamma is calibrated to the sample's share, and the
        # floor holds except on the margin event: (eps_1 + eps_2, delta)
        for n in {n_samples, min_samples or n_samples}:
            self._calibrate(n, n_features)  # refuses the sizes fit would refuse
        return float(self.epsilon), self.delta

    def _fit_scaled(self, data, rng):
        n, d = data.n_samples, self.n_features_in_
        self._cal = cal = self._calibrate(n, d)
        self.dp_epsilon_, self.dp_delta_ = float(self.epsilon), self.delta
        self._n = n
        self._XtX, self._Xty = data.gram()
        self._eig, self._mean = scatter_eigen(self._XtX, n, self.fit_intercept)
        self._ridges = {}
        k = int(self._draw_cells(rng, 1)[0])
        self.floor_, self.alpha_, self.gamma_ = cal.floor(k), cal.ridge(k), cal.gamma(k)
        self.kappa_ = n / (d * self.floor_)
        self.noise_scale_ = 1.0 / np.sqrt(self.gamma_)
        self._ridge = self._ridge_of(k)
        return self._ridge.coef + self._ridge.sample(rng, self.noise_scale_)

    def _draw_cells(self, rng, size):
        noisy = self._eig[0][0] + self._cal.sigma * rng.standard_normal(size)
        return self._cal.index(noisy - self._cal.margin)

    def _ridge_of(self, k):
        if k not in self._ridges:
            self._ridges[k] = Ridge(
                self._XtX, self._Xty, self._cal.ridge(k), self.fit_intercept
            )
        return self._ridges[k]

    def _mechanism_release(self, rng, size=None):
        """Draw(s) of the whole release (cell, then coefficients; scaled)."""
        cells = self._draw_cells(rng, 1 if size is None else size)
        theta = np.empty((cells.size, self._XtX.shape[0]))
        for k in np.unique(cells):
            rows = np.flatnonzero(cells == k)
            ridge = self._ridge_of(int(k))
            scale = 1.0 / np.sqrt(self._cal.gamma(int(k)))
            theta[rows] = ridge.coef + ridge.sample(rng, scale, rows.size)
        return theta[0] if size is None else theta

    def _mixture_epsilon(self, Xs, ys, add):
        """Exact loss of the whole release for each row removed (or added)."""
        d = self._mean.shape[0]
        change = eigen_change(self._eig, self._mean, self._n, Xs[:, :d],
                              intercept=self.fit_intercept, add=add)
        cal = self._cal
        lam = self._eig[0][0] - cal.margin
        base = np.full(change.shape, lam)
        lam_p, lam_q = (base, base + change) if add else (base - change, base)
        # the cells within the window of every row's two distributions
        reach = _CELL_WINDOW * cal.sigma
        first, last = cal.index([lam - cal.change - reach, lam + cal.change + reach])
        cells = np.arange(first, last + 1)
        lower, upper = cal.edges(cells)

        def log_masses(centre):
            z_lo = (lower[None, :] - centre[:, None]) / cal.sigma
            z_hi = (upper[None, :] - centre[:, None]) / cal.sigma
            rest = np.logaddexp(log_ndtr(z_lo[:, 0]), log_ndtr(-z_hi[:, -1]))
            return log_gauss_mass(z_lo, z_hi), rest

        (log_p, rest_p), (log_q, rest_q) = log_masses(lam_p), log_masses(lam_q)
        mu = np.empty((Xs.shape[0], cells.size))
        r = np.empty_like(mu)
        for j, k in enumerate(cells):
            ridge = self._ridge_of(int(k))
            stats = ridge.row_statistics(Xs, ys)
            if not add:
                mu[:, j], r[:, j] = leave_one_out(stats["leverage"], stats["residual"])
                continue
            mu[:, j] = stats["leverage"]
            # the loss grows with |r|: the worst label is an end of [-1, 1]
            r[:, j] = 1.0 + np.abs(Xs @ ridge.coef) if ys is None else stats["residual"]
        gamma = np.array([cal.gamma(int(k)) for k in cells])
        eps = ops_mixture_epsilon(self.delta, mu, r, gamma, log_p, log_q, rest_p, rest_q)
        # a row at the domain's worst case costs at most the budget
        return np.minimum(eps, self.dp_epsilon_)

    def _training_epsilon(self, Xs, ys):
        return self._mixture_epsilon(Xs, ys, add=False)

    def _target_epsilon(self, Xs, ys):
        return self._mixture_epsilon(Xs, ys, add=True)
