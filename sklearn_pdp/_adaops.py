"""AdaOPS: One Posterior Sample with a privately chosen ridge and a private
residual bound (Wang 2017, Algorithm 1, corrected; Wang 2018's local
Lipschitz bound; doc/mechanisms/adaops.rst).

The release is a triple (cell, bound, theta). A noisy lower bound on the
conditioning G = lambda_min(S) / (1 + ||x_bar||)^2 of the data falls into a
cell of a public grid, which fixes an eigenvalue floor and a ridge; a noisy
upper bound on the log of the fit's Lipschitz constant R = 1 + |b| + ||beta||
(the largest residual of any target) falls into a cell of a second public
grid; gamma is OPS's at the worst leverage and residual the two cells allow,
and theta is one OPS draw. Only cells are released, so a row's exact loss is
a finite mixture of OPS losses over pairs of cells (ops_mixture_epsilon).
"""

from functools import lru_cache
from numbers import Real

import numpy as np
from scipy import linalg
from scipy.special import log_ndtr, ndtri
from scipy.stats import chi2

from ._sklearn import Interval
from ._accounting import (
    compose_with_gaussian,
    gaussian_epsilon,
    gaussian_noise_scale,
    log_gauss_mass,
    ops_epsilon,
    ops_gamma,
    ops_mixture_epsilon,
)
from ._base import InfeasibleBudget, PrivateRegressorMixin
from ._ridge_system import RidgeSystem, leave_one_out
from ._docstrings import fill_doc
from ._eigen import eigen_change, scatter_eigen
from ._law import ReleaseLaw

# Width of a cell of either grid, in noise deviations of its release: a row's
# mixture spans about 2 * 8.8 / 6 + 2 cells per grid (the cost of a loss),
# and rounding down to a cell costs at most 6 deviations on top of the
# margin's 5 (utility grid: widths 3 to 6 agree within the splits' noise).
_CELL_WIDTH = 6.0
# Smallest width of a cell of the conditioning, in units of its sensitivity:
# at a huge budget the noise is tiny and a row's window would span millions
# of cells of width _CELL_WIDTH deviations (each one a gamma to calibrate);
# rounding down by half a row's largest change costs no utility.
_MIN_CELL_CHANGES = 0.5
# Growth of the cells without ridge once they are wider than _CELL_WIDTH.
_FLOOR_RATIO = 1.5
# Smallest width of a bound cell, in log R.
_MIN_BOUND_WIDTH = 0.05
# The smallest floor without ridge, in units of the bound's noise scale per
# unit sensitivity: there the bound's noise is about 0.1 in log R, and the
# bound within a factor 3 of R (margin and cell).
_BOUND_FLOOR = 10.0
# Target of the average posterior noise variance of the training predictions
# (labels scaled to [-1, 1]) that fixes the ridge's floor, at the residual
# bound released for R = 2 (utility grid, doc/mechanisms/adaops.rst).
_NOISE_TARGET = 1e-3
_NOMINAL_R = 2.0
# Smallest ridge, relative to the smallest floor and to n d: keeps the
# posterior proper and well conditioned even when the margin event fails.
_RIDGE_FLOOR = 1e-6
_RIDGE_FLOOR_ND = 1e-8
# Cells further than this many noise deviations from a row's two releases
# are left out of its loss and counted as revealing everything: their mass,
# ~1e-18, is far below any delta.
_CELL_WINDOW = 8.8
# Default ``budget_split`` (eigenvalue, residual bound, sample), measured on
# the utility grid.
_DEFAULT_SPLIT = (0.2, 0.2, 0.6)
# A published bound leaves out the pairs of cells beyond a row's window
# (doc/publish.rst): their mass, on both grids and both sides, is this share
# of the law's delta.
_PUBLISHED_WINDOW_SHARE = 0.05


def conditioning(eigvals, mean, intercept):
    """G = lambda_min / (1 + ||x_bar||)^2 (lambda_min of X^T X without intercept)."""
    return eigvals[0] / (1.0 + np.linalg.norm(mean)) ** 2 if intercept else eigvals[0]


def conditioning_max_change(n_samples, n_features, intercept):
    """Largest change of G by one row over the domain (rows in the unit ball).

    Without intercept G = lambda_min(X^T X) moves by at most ||x||^2 <= 1. With
    it, m = n - 1 rows and w = 1 + ||x_bar||: one row moves lambda_min(S) by
    at most m / (m + 1) (1 + ||x_bar||)^2 and w by at most w / (m + 1), and
    G <= tr(S) / d <= m / d, so |Delta G| <= 1 + 1/m + (2 + 1/m) / d
    (doc/mechanisms/adaops.rst).
    """
    if not intercept:
        return 1.0
    m = n_samples - 1
    return 1.0 + 1.0 / m + (2.0 + 1.0 / m) / n_features if m > 0 else 0.0


def lipschitz(theta, intercept):
    """R = 1 + |b| + ||beta|| (1 + ||theta|| without intercept) of the rows of
    ``theta``: the largest |y - x^T beta - b| over the domain."""
    theta = np.asarray(theta)
    if not intercept:
        return 1.0 + np.linalg.norm(theta, axis=-1)
    return 1.0 + np.abs(theta[..., -1]) + np.linalg.norm(theta[..., :-1], axis=-1)


def _norm_change(a, da):
    """||a + da_i|| - ||a|| for the rows da_i, without cancellation."""
    other = np.linalg.norm(a + da, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        change = (2 * da @ a + np.einsum("ij,ij->i", da, da)) / (other + np.linalg.norm(a))
    return np.where(np.isfinite(change), change, other - np.linalg.norm(a))


def lipschitz_log_change(theta, moves, intercept):
    """log R(theta + move_i) - log R(theta) for the rows of ``moves``, computed
    from the change itself (a row moves log R by ~1e-5 where R is ~1)."""
    if not intercept:
        change = _norm_change(theta, moves)
    else:
        b, db = theta[-1], moves[:, -1]
        change = np.abs(b + db) - abs(b) + _norm_change(theta[:-1], moves[:, :-1])
    return np.log1p(change / lipschitz(theta, intercept))


class _Calibration:
    """AdaOPS's public calibration for n rows and d features: the noise and
    margin of both releases, their grids of cells, and each pair of cells'
    floor, ridge, residual bound and posterior scaling
    (doc/mechanisms/adaops.rst).

    Cells of the conditioning live on the line of e = (released G) - margin.
    Cell k >= 0 is [E_k, E_(k+1)) with E_0 = h0 and steps max(W, E_k / 2),
    W = max(6 sigma, s_1 / 2) (s_1: G's sensitivity): floor E_k and no
    ridge (with a fixed floor, the single cell [h0, inf)). Cell -m < 0 is [h0 - m W, h0 - (m - 1) W), the lowest one
    (-inf, ...): floor ``quiet`` >= h0 and the ridge 4 (quiet - max(lower
    end, 0)) (1 (...) without intercept; 4 is the largest (1 + ||x_bar||)^2,
    and G >= 0 always), so on every cell G + ridge / 4 >= floor when G >= e.
    Every cell also has the tiny ridge ``tiny``, which keeps the posterior
    proper. Cells of the bound live on the line of u = (released log R) +
    margin, per conditioning cell: [j omega, (j + 1) omega) for j = 0 .. J,
    the first and last open-ended.
    """

    def __init__(self, *, n, d, intercept, eps, delta_share, fixed_floor):
        self.n, self.d, self.intercept = n, d, intercept
        eps_eigen, eps_bound, eps_sample = eps
        self.budget = float(sum(eps))
        self.eps_sample, self.delta_share = eps_sample, delta_share
        self.z = -ndtri(delta_share)
        self.change = conditioning_max_change(n, d, intercept)
        self.sigma = gaussian_noise_scale(eps_eigen, delta_share, self.change)
        self.margin = self.z * self.sigma
        self.bound_scale = (gaussian_noise_scale(eps_bound, delta_share)
                            if eps_bound > 0 else np.inf)
        self.ridge_factor = 4.0 if intercept else 1.0
        self.width = max(_CELL_WIDTH * self.sigma, _MIN_CELL_CHANGES * self.change)
        self.fixed = fixed_floor is not None
        self._gammas = {}
        if self.fixed:
            self.h0 = self.quiet = float(fixed_floor)
        else:
            self.quiet = _quiet_floor(self)
            self.h0 = min(self.quiet, max(_BOUND_FLOOR * self.bound_scale, self.smallest_floor()))
            while not self.has_gamma(self.h0):
                self.h0 = min(1.1 * self.h0, self.quiet)
        self.lowest = -max(int(np.ceil(self.h0 / self.width)), 1)
        self.tiny = max(_RIDGE_FLOOR * self.h0, _RIDGE_FLOOR_ND * n * (d + 1))
        # positive cells: arithmetic steps W up to `knee`, then geometric
        start = self.width / (_FLOOR_RATIO - 1.0)
        self.steps = max(int(np.ceil((start - self.h0) / self.width)), 0)
        self.knee = self.h0 + self.steps * self.width

    # -- the conditioning's cells -------------------------------------------------

    def smallest_floor(self):
        """The smallest floor: the leverage bound is at most 1/(n - 1) + 1/4."""
        return self.change + 4.0

    def index(self, e):
        """The cells of the points ``e``."""
        e = np.asarray(e, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            arithmetic = np.floor((e - self.h0) / self.width)
            geometric = self.steps + np.floor(np.log(e / self.knee) / np.log(_FLOOR_RATIO))
            up = np.where(e < self.knee, arithmetic, geometric)
            down = -np.floor((self.h0 - e) / self.width) - 1
        up = np.zeros_like(up) if self.fixed else up
        return np.where(e >= self.h0, up, np.maximum(down, self.lowest)).astype(int)

    def lower_edge(self, k):
        k = np.asarray(k, dtype=float)
        arithmetic = self.h0 + np.minimum(k, self.steps) * self.width
        geometric = self.knee * _FLOOR_RATIO ** np.maximum(k - self.steps, 0)
        up = np.where(k <= self.steps, arithmetic, geometric)
        down = np.where(k == self.lowest, -np.inf, self.h0 + k * self.width)
        return np.where(k >= 0, up, down)

    def edges(self, k):
        """Lower and upper ends (in e) of the cells ``k``."""
        k = np.asarray(k)
        upper = self.lower_edge(k + 1)
        if self.fixed:
            upper = np.where(k >= 0, np.inf, upper)
        return self.lower_edge(k), upper

    def floor(self, k):
        return float(self.lower_edge(k)) if k >= 0 else self.quiet

    def ridge(self, k):
        """The ridge of cell k (the tiny one included)."""
        if k >= 0:
            return self.tiny
        lower = max(float(self.lower_edge(k)), 0.0)
        return self.ridge_factor * (self.quiet - lower) + self.tiny

    # -- the corner of a cell ----------------------------------------------------

    def leverage(self, floor):
        """Largest leverage of any target against a data set whose neighbour
        has regularised conditioning >= floor (the smaller data set's floor is
        floor - change): 1/(n - 1) + 1/(floor - change) with an intercept."""
        return (1.0 / (self.n - 1) if self.intercept else 0.0) + 1.0 / (floor - self.change)

    def crude(self, floor):
        """Largest |residual| of any target with the floor alone (labels in
        [-1, 1]): ||beta|| <= sqrt(n - 1) / (w sqrt(floor - change))."""
        return (2.0 if self.intercept else 1.0) + np.sqrt((self.n - 1) / (floor - self.change))

    # -- the bound's cells ---------------------------------------------------------

    def bound_grid(self, k):
        """(c, sigma, omega, J) of the bound released in cell k: log R moves by
        at most c = -log(1 - leverage) between neighbours whose floor holds;
        its noise sigma = c * bound_scale, cells of width omega, the last J.
        J = 0 (one cell: the crude bound) when no bound is released."""
        return self._bound_scales(self.floor(k))

    def _bound_scales(self, floor):
        mu = self.leverage(floor)
        c = -np.log1p(-mu)
        sigma = c * self.bound_scale
        if not np.isfinite(sigma):
            return c, np.inf, np.inf, 0
        omega = max(_CELL_WIDTH * sigma, _MIN_BOUND_WIDTH)
        last = np.log(self.crude(floor) * (1.0 - mu)) / omega
        return c, sigma, omega, max(int(np.ceil(last)), 0)

    def nominal(self, floor):
        """The residual bound that the release gives, at worst, for R = 2 (a
        model whose predictions span [-1, 1] over the domain): the one the
        ridge's floor is chosen for. The crude bound without release."""
        _, sigma, omega, last = self._bound_scales(floor)
        if last == 0:
            return self.crude(floor)
        bound = _NOMINAL_R * np.exp(self.z * sigma + omega) / (1.0 - self.leverage(floor))
        return min(bound, self.crude(floor))

    def bound_index(self, k, u):
        _, _, omega, last = self.bound_grid(k)
        u = np.asarray(u, dtype=float)
        if last == 0:
            return np.zeros(u.shape, dtype=int)
        return np.clip(np.floor(u / omega), 0, last).astype(int)

    def bound_edges(self, k, j):
        """Lower and upper ends (in u) of the bound cells ``j`` of cell k."""
        _, _, omega, last = self.bound_grid(k)
        j = np.asarray(j, dtype=float)
        lower = np.where(j == 0, -np.inf, j * omega)
        upper = np.where(j == last, np.inf, (j + 1) * omega)
        return lower, upper

    def residual(self, k, j):
        """The residual bound of the pair (k, j): the bound cell's upper end,
        widened to the smaller data set (R moves by the factor 1 - leverage at
        most), or the crude bound when lower."""
        mu = self.leverage(self.floor(k))
        crude = self.crude(self.floor(k))
        _, _, omega, last = self.bound_grid(k)
        if j == last:
            return crude
        return min(np.exp((j + 1) * omega) / (1.0 - mu), crude)

    def gamma(self, k, j):
        """The posterior scaling of the pair (k, j): OPS at the sample's share,
        at the corner (leverage, residual bound) of the pair."""
        if (k, j) not in self._gammas:
            corner = self.leverage(self.floor(k)), self.residual(k, j)
            self._gammas[k, j] = ops_gamma(self.eps_sample, self.delta_share, *corner)
        return self._gammas[k, j]

    def noise_bound(self, floor, residual):
        """Bound on the average posterior noise variance of the training
        predictions, (d + 1) / (n gamma) (the leverages sum to at most d + 1),
        at the floor and the residual bound: inf where no gamma exists."""
        mu = self.leverage(floor)
        try:
            gamma = ops_gamma(self.eps_sample, self.delta_share, mu, residual)
        except ValueError:
            return np.inf
        return (self.d + 1) / (self.n * gamma)

    def has_gamma(self, floor):
        """Whether every pair of cells at this floor has a gamma (the crude
        residual bound is the largest)."""
        return np.isfinite(self.noise_bound(floor, self.crude(floor)))


def _quiet_floor(cal):
    """The smallest floor (on a grid of ratio 1.1) at which every pair of
    cells has a gamma and the average prediction noise with the nominal
    residual bound is below the target, or twice its limit as the floor grows
    when that is larger (the bound falls with the floor): exponential search
    and bisection. A ValueError when even the limit has no gamma: the
    intercept's own posterior, with leverage 1/(n - 1), reveals too much."""
    limit = 0.0
    if cal.intercept:
        mu = 1.0 / (cal.n - 1) if cal.n > 1 else np.inf
        try:
            # the residual bound's limit as the floor grows: 2, both crude and nominal
            gamma = ops_gamma(cal.eps_sample, cal.delta_share, mu, 2.0)
            limit = 2.0 * (cal.d + 1) / (cal.n * gamma)
        except ValueError:
            raise ValueError(
                f"AdaOPSRegressor cannot meet epsilon={cal.budget:.4g} with "
                f"n_samples={cal.n} and an unpenalised intercept: too few samples "
                "(the intercept's own posterior reveals too much). Raise epsilon, "
                "or use AdaSSPRegressor."
            ) from None
    target = max(_NOISE_TARGET, limit)
    start = cal.smallest_floor()

    def quiet(j):
        floor = start * 1.1**j
        return cal.has_gamma(floor) and cal.noise_bound(floor, cal.nominal(floor)) <= target

    lo, hi = -1, 0
    while not quiet(hi):
        lo, hi = hi, 2 * hi + 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if quiet(mid) else (mid, hi)
    return start * 1.1**hi


@lru_cache(maxsize=64)
def _calibration(n, d, intercept, eps, delta_share, fixed_floor):
    """AdaOPS's calibration: a function of public quantities only (cached,
    its root searches are the slow part of small fits)."""
    cal = _Calibration(n=n, d=d, intercept=intercept, eps=eps, delta_share=delta_share,
                       fixed_floor=fixed_floor)
    if cal.fixed and not cal.has_gamma(cal.h0):
        raise InfeasibleBudget(
            f"AdaOPSRegressor cannot meet epsilon={cal.budget:.4g} with that kappa "
            f"and n_samples={n}: no posterior scaling is private enough at its "
            "floor. Lower kappa (kappa=None, the private choice, would meet it "
            "where n allows) or raise epsilon."
        )
    return cal


def _log_cell_masses(lower, upper, shift, sigma):
    """Log Gaussian masses N(shift, sigma^2) of the cells (columns, their ends
    relative to a reference centre) for each row's centre ``shift`` (relative
    to it too: a row moves a release by far less than its value, so centres
    and ends are taken relative to the data set's own centre to keep the
    masses' log ratios exact), and the log mass outside the first and last
    cells."""
    z_lo = (lower[None, :] - shift[:, None]) / sigma
    z_hi = (upper[None, :] - shift[:, None]) / sigma
    rest = np.logaddexp(log_ndtr(z_lo[:, 0]), log_ndtr(-z_hi[:, -1]))
    return log_gauss_mass(z_lo, z_hi), rest


def _bound_cells(cal, k, centre, shifts, sigma):
    """The bound cells of cell k within each row's window, for the rows' two
    centres ``centre + shifts`` (smaller, larger data set): the cells
    spanned, each row's log masses there (-inf outside its own window) and
    its log mass outside its window. Each row's numbers depend on that row
    alone, whatever the other rows of its chunk."""
    reach = _CELL_WINDOW * sigma
    low = cal.bound_index(k, centre + np.minimum(*shifts) - reach)
    high = cal.bound_index(k, centre + np.maximum(*shifts) + reach)
    bounds = np.arange(low.min(), high.max() + 1)
    lower, upper = (edge - centre for edge in cal.bound_edges(k, bounds))
    outside = (bounds[None, :] < low[:, None]) | (bounds[None, :] > high[:, None])
    own_lower = cal.bound_edges(k, low)[0] - centre
    own_upper = cal.bound_edges(k, high)[1] - centre
    masses, rests = [], []
    for shift in shifts:
        z_lo = (lower[None, :] - shift[:, None]) / sigma
        z_hi = (upper[None, :] - shift[:, None]) / sigma
        masses.append(np.where(outside, -np.inf, log_gauss_mass(z_lo, z_hi)))
        rests.append(np.logaddexp(log_ndtr((own_lower - shift) / sigma),
                                  log_ndtr((shift - own_upper) / sigma)))
    return bounds, masses, rests


@fill_doc
class AdaOPSRegressor(PrivateRegressorMixin):
    """OPS with privately chosen regularisation: (epsilon, delta)-DP for a budget.

    The corrected AdaOPS algorithm (Wang 2017, Algorithm 1), with a private
    residual bound as in Wang (2018); see Notes. Three releases share the
    budget. A noisy lower bound on the data's conditioning, the smallest
    eigenvalue of the centred scatter matrix divided by
    ``(1 + ||x_bar||)^2``, falls into one cell of a public grid; the cell fixes
    an eigenvalue floor ``floor_`` and a ridge ``alpha_``, which bound the
    leverage of every possible target. A noisy upper bound on the fit's
    largest residual over the domain, ``1 + |intercept| + ||slopes||``, falls
    into one cell of a second public grid (``residual_bound_``). ``gamma_``
    is the largest posterior scaling for which One Posterior Sample at that
    leverage and residual stays within its share of the budget, and the
    released coefficients are one draw from ``N(theta_hat, (gamma_ H)^{-1})``,
    ``H = X^T X + alpha_ P`` with an unpenalised intercept. Every training
    row's exact per-instance loss of the whole release is in ``pdp_losses_``.

    Parameters
    ----------
    epsilon : float, default=1.0
        Total privacy budget of the whole mechanism.
    delta : float, default=1e-6
        Total delta; also the delta at which ``pdp_losses_`` are reported.
    kappa : float, default=None
        Largest acceptable condition number: a fixed floor ``n / (d kappa)``
        (``d`` features) on the conditioning; below it the ridge lifts it
        there. Must satisfy the paper's constraint ``kappa <= n epsilon /
        (4 d (1 + log(4 / delta)))``. If None, the floor adapts to the
        released cell (see Notes).
    budget_split : array-like of shape (3,), default=None
        Weights, normalised to sum 1, of the epsilon budget spent on the
        conditioning, on the residual bound and on the posterior sample. The
        first and last must be positive; 0 for the bound releases none (the
        residual is then bounded from the floor alone). None means
        ``(0.2, 0.2, 0.6)``.
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
        The ridge strength of the released cell (scaled data).
    floor_ : float
        The floor on the conditioning of the released cell (scaled data).
    residual_bound_ : float
        The bound on any target's residual of the released pair of cells
        (labels scaled to [-1, 1]).
    gamma_ : float
        The posterior scaling of the released pair of cells.
    kappa_ : float
        ``n / (d floor_)``.
    pdp_losses_ : ndarray of shape (n_samples,)
        Exact per-instance epsilon, at ``delta``, of removing each training
        row from the whole release (both cells and the coefficients; see
        Notes).
    dp_epsilon_ : float
        Data-independent epsilon of the whole mechanism (the budget).
    dp_delta_ : float
        The delta of ``dp_epsilon_`` (= ``delta``).
    noise_scale_ : float
        ``1 / sqrt(gamma_)``: the draw is ``theta_hat + noise_scale_ * N(0, H^{-1})``.
    {fitted_bounds}

    See Also
    --------
    OPSRegressor : One Posterior Sample with a ridge fixed in advance.
    AdaSSPRegressor : Noisy sufficient statistics with a private ridge.

    Notes
    -----
    On the data scaled into the unit ball (labels in [-1, 1]), with budget
    shares eps_1, eps_2, eps_3 and delta split equally between the two
    releases, their two margin events and the sample (between three without
    bound), and z the normal quantile at 1 - delta/5:

    1. ``G~ = G + sigma_1 N(0, 1)``, ``G = lambda_min(S) / (1 + ||x_bar||)^2``,
       S the centred scatter matrix (``G = lambda_min(X^T X)`` without
       intercept), sigma_1 from the analytic Gaussian mechanism for G's
       sensitivity ``s_1 = 1 + 1/(n-1) + (2 + 1/(n-1)) / d`` (1 without
       intercept);
    2. ``e = G~ - sigma_1 z`` falls into a cell of a public grid that fixes
       the floor h and the ridge alpha, with ``G + alpha / 4 >= h`` whenever
       ``G >= e`` (``alpha`` without intercept): then every target's leverage
       against either data set of a pair of neighbours is at most
       ``mu = 1/(n-1) + 1/(h - s_1)``;
    3. ``u = log R + sigma_2 (N(0, 1) + z)``, ``R = 1 + |b| + ||beta||`` of the
       cell's ridge fit (the largest residual of any target), which one row
       moves by at most ``c = -log(1 - mu)`` once the floor holds, sigma_2
       from the analytic Gaussian mechanism for c; u falls into a cell of
       width ``max(6 sigma_2, 0.05)`` whose upper end, widened by
       ``1 / (1 - mu)``, bounds every target's residual (capped by the bound
       the floor alone gives, ``2 + sqrt((n - 1) / (h - s_1))``);
    4. ``gamma`` is the largest scaling whose exact OPS loss at delta/5 and
       the corner (mu, residual bound) is eps_3; one posterior sample with
       an unpenalised intercept.

    The grids are functions of public quantities only. Cells without ridge
    start at ten times the bound's noise scale per unit sensitivity (where
    the bound is within a factor 3 of R) and grow by 6 noise deviations or
    half their floor; below them the ridge lifts the floor to the smallest
    one at which the posterior noise variance of the training predictions
    is on average at most 1e-3 with the residual bound the release gives
    for R = 2. The ridge shrinks the slopes only: with little ``n epsilon``
    or an ill-conditioned design the model falls back towards the label
    mean. The guarantee is ``(eps_1 + eps_2 + eps_3, delta)`` by
    composition.

    Only the cells are released: ``pdp_losses_[i]`` is the exact loss of the
    triple (cell, bound cell, coefficients), a finite mixture over pairs of
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
    >>> bool(reg.score(X, y) > 0.9)  # least squares: 0.935
    True
    """

    _parameter_constraints: dict = {
        **PrivateRegressorMixin._parameter_constraints,
        "epsilon": [Interval(Real, 0, None, closed="right")],
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
        tighten_bounds=False,
        tighten_share=None,
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
        self.tighten_bounds = tighten_bounds
        self.tighten_share = tighten_share
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
        """Epsilon of the conditioning, the bound and the sample, and the
        delta of each release and margin event."""
        weights = np.array(_DEFAULT_SPLIT if self.budget_split is None
                           else self.budget_split, dtype=float)
        if (weights.shape != (3,) or not np.all(weights >= 0)
                or not weights[0] > 0 or not weights[2] > 0):
            raise ValueError(
                "budget_split must be three non-negative weights (conditioning, "
                "residual bound, sample), the first and last positive; "
                f"got {self.budget_split!r}."
            )
        eps = self.epsilon * weights / weights.sum()
        return tuple(float(e) for e in eps), self.delta / (5 if eps[1] > 0 else 3)

    def _fixed_floor(self, n, d):
        """The floor n / (d kappa) of a given kappa, checked against the
        paper's constraint (too large a kappa is refused); None without."""
        if self.kappa is None:
            return None
        floor = 4 * (1 + np.log(4 / self.delta)) / self.epsilon
        if n / (d * self.kappa) < floor * (1 - 1e-12):
            raise InfeasibleBudget(
                f"kappa={self.kappa} violates the AdaOPS constraint kappa <= "
                f"n epsilon / (4 d (1 + log(4 / delta))) = {n / (d * floor):.4g} "
                f"for n={n} rows and d={d} features: kappa={n / (d * floor):.4g} would "
                "meet it."
            )
        return float(n / (d * self.kappa))

    def _calibrate(self, n, d):
        """The public calibration for n rows and d features."""
        eps, delta_share = self._budget()
        return _calibration(n, d, self.fit_intercept, eps, delta_share,
                            self._fixed_floor(n, d))

    def _mechanism_guarantee(self, n_samples, n_features, min_samples=None):
        # every pair of cells' gamma is calibrated to the sample's share, and
        # the floor and the bound hold except on their margin events:
        # (eps_1 + eps_2 + eps_3, delta) by composition
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
        self._G = conditioning(self._eig[0], self._mean, self.fit_intercept)
        self._ridges = {}
        k, j = (int(c[0]) for c in self._draw_cells(rng, 1))
        self.floor_, self.alpha_ = cal.floor(k), cal.ridge(k)
        self.residual_bound_, self.gamma_ = cal.residual(k, j), cal.gamma(k, j)
        self.kappa_ = n / (d * self.floor_)
        self.noise_scale_ = 1.0 / np.sqrt(self.gamma_)
        self._ridge = self._cell_fit(k)[0]
        return self._ridge.coef + self._ridge.sample(rng, self.noise_scale_)

    def _cell_fit(self, k):
        """The ridge fit of cell k and the log of its Lipschitz constant R."""
        alpha = self._cal.ridge(k)
        if alpha not in self._ridges:
            ridge = RidgeSystem(self._XtX, self._Xty, alpha, self.fit_intercept)
            self._ridges[alpha] = ridge, float(np.log(lipschitz(ridge.coef, self.fit_intercept)))
        return self._ridges[alpha]

    def _draw_cells(self, rng, size):
        """``size`` draws of the pair of cells (conditioning, then bound)."""
        cal = self._cal
        cells = cal.index(self._G + cal.sigma * rng.standard_normal(size) - cal.margin)
        bounds = np.zeros(size, dtype=int)
        for k in np.unique(cells):
            rows = np.flatnonzero(cells == k)
            _, sigma, _, last = cal.bound_grid(int(k))
            if last:
                u = self._cell_fit(int(k))[1] + sigma * (rng.standard_normal(rows.size) + cal.z)
                bounds[rows] = cal.bound_index(int(k), u)
        return cells, bounds

    def _mechanism_release(self, rng, size=None):
        """Draw(s) of the whole release (cells, then coefficients; scaled)."""
        cells, bounds = self._draw_cells(rng, 1 if size is None else size)
        theta = np.empty((cells.size, self._XtX.shape[0]))
        for k, j in set(zip(cells.tolist(), bounds.tolist())):
            rows = np.flatnonzero((cells == k) & (bounds == j))
            ridge = self._cell_fit(k)[0]
            scale = 1.0 / np.sqrt(self._cal.gamma(k, j))
            theta[rows] = ridge.coef + ridge.sample(rng, scale, rows.size)
        return theta[0] if size is None else theta

    def _conditioning_shifts(self, Xs, add):
        """G of the smaller and of the larger data set minus this one's, per row
        (exact, and computed from the changes of lambda_min and of the mean)."""
        n, d = self._n, self._mean.shape[0]
        x = Xs[:, :d]
        change = eigen_change(self._eig, self._mean, n, x, intercept=self.fit_intercept,
                              add=add)
        lam_change = change if add else -change
        if self.fit_intercept:
            # the other data set's mean is x_bar + v, and w = 1 + ||mean||
            v = (x - self._mean) / (n + 1) if add else (self._mean - x) / max(n - 1, 1)
            w = 1.0 + np.linalg.norm(self._mean)
            w_change = _norm_change(self._mean, v)
            w_other = w + w_change
            lam = self._eig[0][0]
            # G' - G = (lambda' - lambda) / w'^2 + lambda (1/w'^2 - 1/w^2)
            shift = (lam_change - lam * w_change * (w + w_other) / w**2) / w_other**2
        else:
            shift = lam_change
        zero = np.zeros(shift.shape)
        return (zero, shift) if add else (shift, zero)

    def _cell_rows(self, k, Xs, ys, add):
        """OPS leverage and residual of each row (against the smaller data set)
        in cell k, and log R of the smaller and the larger data set minus this
        one's (exact: Sherman-Morrison on the cell's ridge fit)."""
        ridge, _ = self._cell_fit(k)
        stats = ridge.row_statistics(Xs, ys, inverse_rows=True)
        V = stats["inverse_rows"]  # H^{-1} x, one row each
        if add:
            mu, r = stats["leverage"], stats["residual"]
            moves = V * (r / (1.0 + mu))[:, None]
        else:
            mu, r = leave_one_out(stats["leverage"], stats["residual"])
            moves = -V * r[:, None]
        with np.errstate(invalid="ignore"):
            shift = lipschitz_log_change(ridge.coef, moves, self.fit_intercept)
        # a row whose removal is undefined (infinite leverage) has infinite loss anyway
        shift = np.where(np.isfinite(shift), shift, 0.0)
        zero = np.zeros(shift.shape)
        return mu, r, (zero, shift) if add else (shift, zero)

    def _mixture_epsilon(self, Xs, ys, add):
        """Exact loss of the whole release for each row removed (or added)."""
        if ys is None:  # the worst label: an end of [-1, 1]
            ones = np.ones(Xs.shape[0])
            return np.maximum(self._mixture_epsilon(Xs, ones, add),
                              self._mixture_epsilon(Xs, -ones, add))
        eps = ops_mixture_epsilon(self.delta, **self._mixture_columns(Xs, ys, add))
        # a row removed at the domain's worst case costs at most the budget;
        # an added row is not a neighbour the calibration covered: uncapped
        return eps if add else np.minimum(eps, self.dp_epsilon_)

    def _mixture_columns(self, Xs, ys, add):
        """The arguments of ``ops_mixture_epsilon`` (but delta) for each row
        removed (or added): its statistics and log masses on the pairs of
        cells within its window, and its log mass outside."""
        cal = self._cal
        # the conditioning's cells within the window of every row's two releases
        centre = self._G - cal.margin
        reach = _CELL_WINDOW * cal.sigma + cal.change
        first, last = cal.index([centre - reach, centre + reach])
        cells = np.arange(first, last + 1)
        lower, upper = (edge - centre for edge in cal.edges(cells))
        (log_pk, rest_p), (log_qk, rest_q) = (
            _log_cell_masses(lower, upper, shift, cal.sigma)
            for shift in self._conditioning_shifts(Xs, add))
        columns = {key: [] for key in ("mu", "r", "gamma", "log_p", "log_q")}
        rests_p, rests_q = [rest_p], [rest_q]
        rows = {}  # the cells without ridge share one fit
        for col, k in enumerate(cells.tolist()):
            alpha = cal.ridge(k)
            if alpha not in rows:
                rows[alpha] = self._cell_rows(k, Xs, ys, add)
            mu, r, shifts = rows[alpha]
            _, sigma, _, last_bound = cal.bound_grid(k)
            if last_bound:
                bounds, (log_pj, log_qj), (out_p, out_q) = _bound_cells(
                    cal, k, self._cell_fit(k)[1] + cal.z * sigma, shifts, sigma)
                rests_p.append(log_pk[:, col] + out_p)
                rests_q.append(log_qk[:, col] + out_q)
            else:  # one bound cell, the crude one, of probability 1
                bounds = np.zeros(1, dtype=int)
                log_pj = log_qj = np.zeros((mu.size, 1))
            for b, j in enumerate(bounds.tolist()):
                columns["mu"].append(mu)
                columns["r"].append(r)
                columns["gamma"].append(cal.gamma(k, j))
                columns["log_p"].append(log_pk[:, col] + log_pj[:, b])
                columns["log_q"].append(log_qk[:, col] + log_qj[:, b])
        out = {key: np.column_stack(columns[key]) for key in ("mu", "r", "log_p", "log_q")}
        out["gamma"] = np.array(columns["gamma"])
        out["log_p_rest"] = np.logaddexp.reduce(rests_p, axis=0)
        out["log_q_rest"] = np.logaddexp.reduce(rests_q, axis=0)
        return out

    def _training_epsilon(self, Xs, ys):
        return self._mixture_epsilon(Xs, ys, add=False)

    def _target_epsilon(self, Xs, ys):
        return self._mixture_epsilon(Xs, ys, add=True)

    def _law_statistics(self, Xs, ys, add=False):
        """Exact statistics of the rows for :meth:`release_law`'s ``epsilon``:
        the arguments of the mixture over pairs of cells (``ops_mixture_epsilon``
        but delta), under both ends of [-1, 1] with ``ys`` None."""
        ones = np.ones(Xs.shape[0])
        labels = [ones, -ones] if ys is None else [ys]
        return {"mixtures": [self._mixture_columns(Xs, y, add) for y in labels]}

    def _mechanism_law(self):
        """Public description of the release, for a published report.

        Returns
        -------
        law : AdaOPSLaw
            The public calibration (both grids, the noise and margin of both
            releases, every pair of cells' ridge and gamma), the released
            conditioning cell, its ridge and gamma, the public size, the
            domain and the released (scaled) coefficients.
        """
        n, d, cal = self._n, self.n_features_in_, self._cal
        eps, delta_share = self._budget()
        # the released cell: the one with the reported floor and ridge
        cell = next(k for k in range(cal.lowest, int(cal.index(self.floor_)) + 2)
                    if cal.floor(k) == self.floor_ and cal.ridge(k) == self.alpha_)
        return AdaOPSLaw(
            calibration=(n, d, self.fit_intercept, eps, delta_share, self._fixed_floor(n, d)),
            cell=cell, gamma=self.gamma_, delta=self.delta, **self._law_public(),
        )


class AdaOPSLaw(ReleaseLaw):
    """AdaOPS's release law (doc/publish.rst): a cell k of the conditioning,
    a cell j of the residual bound, then theta ~ N(theta_hat_k, (gamma_kj H_k)^{-1}).

    ``epsilon`` takes either of two kinds of row statistics. The data
    holder's (:meth:`AdaOPSRegressor._law_statistics`, key ``mixtures``) are
    the exact mixture over pairs of cells. A published report's
    (:meth:`published_statistics`, keys ``cells`` and ``ops``) bound the
    loss by adaptive composition: the two cell releases are dominated by one
    Gaussian mechanism whose ratio is ``cells`` (the row's upper changes of G
    and of log R over their noise), and given any pair of cells within the
    row's window the sample by the OPS loss at upper statistics and the
    largest gamma of its bound cells (``ops``: one (mu, r, gamma) per
    conditioning cell; a cell's statistics may assume the lower bound on G
    that its presence in the data's window implies, :meth:`cell_floor`);
    the pairs outside the window have mass at most
    ``_PUBLISHED_WINDOW_SHARE * delta``, spent from delta.

    The conditioning's release and a published Gram matrix are both Gaussian
    mechanisms: for the guarantee their worst ratios add in squares
    (``dp_epsilon``, ``gaussian_allowance``); per row the publication
    composes with the mixture by basic composition, as for OPS.
    """

    def __init__(self, *, calibration, cell, gamma, delta, **public):
        super().__init__(**public)
        self.calibration = tuple(calibration)
        self.cell = int(cell)
        self.gamma = float(gamma)
        self.delta = float(delta)

    @property
    def cal(self):
        """The public calibration (rebuilt from its arguments, cached)."""
        return _calibration(*self.calibration)

    def _eigen_epsilon_ratio(self, delta):
        """The conditioning's budget and its worst ratio; the guarantee is
        calibrated at the fit's delta only."""
        if delta != self.delta:
            raise ValueError(
                f"AdaOPS's guarantee is calibrated at its delta={self.delta:g}, "
                f"not at {delta:g}."
            )
        cal = self.cal
        return self.calibration[3][0], cal.change / cal.sigma

    def dp_epsilon(self, delta, gaussian_ratio=None):
        cal = self.cal
        eps_eigen, first = self._eigen_epsilon_ratio(delta)
        if gaussian_ratio is None:
            return cal.budget
        joint = gaussian_epsilon(cal.delta_share, np.hypot(first, gaussian_ratio))
        return float(cal.budget - eps_eigen + joint)

    def gaussian_allowance(self, delta, target):
        cal = self.cal
        eps_eigen, first = self._eigen_epsilon_ratio(delta)
        if not target > cal.budget:
            raise ValueError("nothing is left for a publication; raise publish_epsilon.")
        total = 1.0 / gaussian_noise_scale(eps_eigen + target - cal.budget, cal.delta_share)
        return float(np.sqrt(total**2 - first**2))

    def _dp(self, delta):
        # the budget holds at the fit's delta; at a smaller one none is calibrated
        return self.cal.budget if delta == self.delta else np.inf

    def epsilon(self, delta, stats, gaussian_ratio=None):
        if "mixtures" in stats:
            def model(d):
                return np.max([ops_mixture_epsilon(d, **m) for m in stats["mixtures"]], axis=0)
        else:
            def model(d):
                return self._composition(d, stats)
        return compose_with_gaussian(lambda d: np.minimum(model(d), self._dp(d)),
                                     delta, gaussian_ratio)

    def _composition(self, delta, stats):
        """The adaptive composition bound at ``delta`` (see the class)."""
        half = 0.5 * (delta - _PUBLISHED_WINDOW_SHARE * self.delta)
        sample = np.max([ops_epsilon(half, *ops) for ops in stats["ops"]], axis=0)
        return gaussian_epsilon(half, stats["cells"]) + sample

    def published_statistics(self, published, Xs, ys):
        """Upper statistics of each scaled row from the published object,
        valid with probability at least ``1 - published.beta``: beta/2 on the
        Gram noise (:meth:`PublishedReport.noise_bound`), beta/4 on the
        sample's noise along the row, beta/8 on the sample's noise norm,
        beta/8 on the conditioning's noise given its released cell."""
        cal = self.cal
        z_window = -ndtri(_PUBLISHED_WINDOW_SHARE * self.delta / 4.0)
        low, high = self.conditioning_interval(published, published.beta / 8.0)
        # the conditioning cells within z_window deviations of the release
        # of either data set of a pair of neighbours
        reach = z_window * cal.sigma + cal.change
        first, last = cal.index([low - cal.margin - reach, high - cal.margin + reach])
        # A cell k is in the data's window only if G - margin + reach reaches
        # its lower edge: its statistics may assume G >= that edge + margin
        # - reach (a cell outside the window is in delta's share), each cell
        # with its own floor and gamma. The released cell's bounds, which
        # every ridge's start from, assume only G >= low.
        released = self._released_bounds(published, Xs, ys, low)
        ratio2 = np.zeros(Xs.shape[0])
        ops, bounds = [], {}
        for k in range(first, last + 1):
            key = cal.ridge(k), self.cell_floor(k, low)
            if key not in bounds:
                alpha, floor = key
                bounds[key] = self.ridge_bounds(published, Xs, alpha, released, floor)
            k_ratio, k_gamma = self._bound_cells(k, bounds[key], z_window)
            ratio2 = np.maximum(ratio2, k_ratio)
            ops.append((bounds[key]["mu"], bounds[key]["r"], k_gamma))
        change = self.conditioning_change(published, Xs, high)
        return {"cells": np.hypot(change / cal.sigma, ratio2), "ops": ops}

    def cell_floor(self, k, low):
        """A lower bound on the data's G wherever cell k is in its window
        (:meth:`published_statistics`): G - margin + reach reaches the
        cell's lower edge; ``low`` (the conditioning interval's) otherwise."""
        cal = self.cal
        reach = -ndtri(_PUBLISHED_WINDOW_SHARE * self.delta / 4.0) * cal.sigma + cal.change
        return max(low, float(cal.edges(k)[0]) + cal.margin - reach)

    def _released_bounds(self, published, Xs, ys, floor=None):
        """What every ridge's bounds start from: the rows' upper statistics
        against the released cell's H, their observed residuals plus the
        sample's noise along them (two-sided beta/4), and a bound on the
        norm of the sample's noise theta - theta_hat (chi-square, beta/8,
        through lambda_min(H) >= ``lowest``). ``floor``: a lower bound on
        the data's G (:meth:`scatter_floor`)."""
        beta = published.beta
        stats = published.upper_statistics(Xs, self.alpha,
                                           self.scatter_floor(published, floor))
        margin = ndtri(1.0 - beta / 8.0) * np.sqrt(stats["leverage"] / self.gamma)
        with np.errstate(divide="ignore"):
            noise = np.sqrt(chi2.isf(beta / 8.0, self.coef.size)
                            / (self.gamma * stats["lowest"]))
        return {"stats": stats, "residual": published.observed_residual(Xs, ys) + margin,
                "noise": noise}

    def scatter_floor(self, published, floor):
        """A lower bound on lambda_min of the centred scatter matrix (of
        X^T X without intercept) from one on G: G (1 + ||x_bar||)^2, with
        ||x_bar|| at least the noisy mean's norm less its error. None for
        ``floor`` None."""
        if floor is None or not self.intercept:
            return floor
        centre, error = published.feature_mean()
        return floor * (1.0 + max(np.linalg.norm(centre) - error, 0.0)) ** 2

    def ridge_bounds(self, published, Xs, alpha, released, floor=None):
        """Upper bounds, for the fit at ridge ``alpha``, on each row's OPS
        statistics against the smaller data set (``mu``, ``r``), on its
        change of log R (``log_step``), and the data's R (``R_low``,
        ``R_high``), on the events of :meth:`published_statistics`.

        ``theta_hat_alpha - theta_hat* = (alpha* - alpha) H_alpha^{-1} P theta_hat*``
        and ``||P theta_hat*|| <= ||P theta|| + noise``; removing a row
        moves the fit by ``H^{-1} x r`` (Sherman-Morrison, leave-one-out r),
        hence R = 1 + |b| + ||beta|| by at most sqrt(2) times its norm. Below
        the released ridge R >= 1 + ||beta*|| >= 1 + ||beta|| - noise.
        """
        stats = (released["stats"] if alpha == self.alpha
                 else published.upper_statistics(Xs, alpha,
                                                 self.scatter_floor(published, floor)))
        penalised = self.coef.copy()
        if self.intercept:
            penalised[-1] = 0.0
        slopes = np.linalg.norm(penalised)
        moved = abs(alpha - self.alpha) * (slopes + released["noise"])
        shift = moved * np.sqrt(stats["inverse_norm2"])
        if alpha != self.alpha:
            # or Cauchy-Schwarz in H^-1's inner product: |x^T H^-1 P theta*|
            # <= sqrt(x^T H^-1 x) (||P theta||_{H^-1} + noise / sqrt(lambda_min(H)))
            norm = published.upper_statistics(
                penalised[None, :], alpha, self.scatter_floor(published, floor))["leverage"][0]
            with np.errstate(divide="ignore", invalid="ignore"):
                along = np.sqrt(norm) + released["noise"] / np.sqrt(stats["lowest"])
            shift = np.fmin(shift, abs(alpha - self.alpha) * along
                            * np.sqrt(stats["leverage"]))
        residual = released["residual"] + shift
        mu, r = leave_one_out(stats["leverage"], residual)
        lipschitz_norm = np.sqrt(2.0) if self.intercept else 1.0
        R = lipschitz(self.coef, self.intercept)
        with np.errstate(divide="ignore", invalid="ignore"):
            distance = released["noise"] + (moved / stats["lowest"] if moved > 0 else 0.0)
            R_low = max(R - lipschitz_norm * distance, 1.0)
            if alpha < self.alpha:
                # less ridge never shrinks the slopes: their fit is
                # (S + alpha)^-1 (S + alpha*) beta*, eigenvalues >= 1
                R_low = max(R_low, 1.0 + slopes - released["noise"])
            step = lipschitz_norm * np.sqrt(stats["inverse_norm2"]) * np.abs(r)
            log_step = np.where(step < R_low, -np.log1p(-step / R_low), np.inf)
        return {"mu": mu, "r": r, "log_step": log_step, "R_low": R_low,
                "R_high": R + lipschitz_norm * distance}

    def _bound_cells(self, k, bounds, z_window):
        """For conditioning cell k: each row's ratio of the bound's release
        (its upper change of log R over the noise) and the largest gamma of
        the bound cells within z_window deviations of either data set's
        release."""
        cal, log_step = self.cal, bounds["log_step"]
        _, sigma, _, last = cal.bound_grid(k)
        if last == 0:  # no bound released: one cell
            return np.zeros(log_step.shape), np.full(log_step.shape, cal.gamma(k, 0))
        reach = z_window * sigma + log_step
        lowest = cal.bound_index(k, np.log(bounds["R_low"]) + cal.z * sigma - reach)
        highest = cal.bound_index(k, np.log(bounds["R_high"]) + cal.z * sigma + reach)
        finite = np.isfinite(log_step)
        if not finite.any():
            return np.full(log_step.shape, np.inf), np.full(log_step.shape, np.inf)
        js = np.arange(lowest[finite].min(), highest[finite].max() + 1)
        gammas = np.array([cal.gamma(k, int(j)) for j in js])
        inside = (js >= lowest[:, None]) & (js <= highest[:, None])
        gamma = np.where(inside, gammas, 0.0).max(axis=1)
        # a row with an unbounded change reveals everything anyway (ratio inf)
        return log_step / sigma, np.where(finite, gamma, gammas.max())

    def conditioning_change(self, published, Xs, high):
        """Upper bound on each row's change of G: the rank-one update of
        lambda_min, ``n/(n-1) ||x - x_bar||^2`` (``||x||^2`` without
        intercept), and the change of w = 1 + ||x_bar|| (at most
        ``||x - x_bar|| / (n - 1)``) at G <= ``high``; capped by the
        sensitivity."""
        cal, n = self.cal, self.n_samples
        if not self.intercept:
            return np.minimum(np.einsum("ij,ij->i", Xs, Xs), cal.change)
        centre, error = published.feature_mean()
        gap = np.linalg.norm(Xs[:, : centre.size] - centre, axis=1) + error
        step = gap / (n - 1)
        return np.minimum(n / (n - 1) * gap**2 + high * step * (2.0 + step), cal.change)

    def conditioning_interval(self, published, beta):
        """An interval holding the data's G: from the noisy Gram (Weyl, on
        the event of its noise bound) and from the released cell (except with
        probability beta: the conditioning's noise beyond its two-sided
        beta quantile)."""
        cal = self.cal
        z = -ndtri(beta / 2.0)
        lower, upper = (float(edge) for edge in cal.edges(self.cell))
        low = lower + cal.margin - z * cal.sigma
        high = upper + cal.margin + z * cal.sigma
        gram, n = published.noisy_gram, self.n_samples
        shift = published.noise_scale * published.noise_bound()
        if self.intercept:
            # S~ - S = sigma E_xx - (s~ s~^T - s s^T) / n with s~ = s + sigma e
            centre, error = published.feature_mean()
            d, norm = centre.size, np.linalg.norm(centre)
            lam = linalg.eigvalsh(gram[:d, :d] - n * np.outer(centre, centre))[0]
            spread = shift * (1.0 + 2.0 * norm + shift / n)
            w_low, w_high = 1.0 + max(norm - error, 0.0), 1.0 + norm + error
            low = max(low, (lam - spread) / w_high**2)
            high = min(high, (lam + spread) / w_low**2)
        else:
            lam = linalg.eigvalsh(gram)[0]
            low, high = max(low, lam - shift), min(high, lam + shift)
        low = max(low, 0.0)
        return low, max(high, low)
