"""AdaOPS's public calibration (:doc:`/mechanisms/adaops`): the noise and
margin of its two cell releases, their grids of cells, and each pair of
cells' floor, ridge, residual bound and posterior scaling; the conditioning
G and the Lipschitz constant R it releases, and the Gaussian masses of the
cells that its mixture loss (``ops_mixture_epsilon``) weighs. Functions of
public quantities and of arrays of statistics only.
"""

from functools import lru_cache

import numpy as np
from scipy.special import log_ndtr, ndtri

from . import gaussian_noise_scale, log_gauss_mass, ops_epsilon, ops_gamma

# Width of a cell of either grid, in noise deviations of its release: a row's
# mixture spans about 2 * 8.8 / 6 + 2 cells per grid (the cost of a loss),
# and rounding down to a cell costs at most 6 deviations on top of the
# margin's 5 (chosen on the utility grid: "Cells" in the AdaOPS page).
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
# bound released for R = 2 (utility grid: "Cells" in the AdaOPS page).
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
# Share of the released means' squared ratio that goes to the label's mean:
# the intercept re-centred on them has noise variance sigma_y^2 + sigma_x^2
# ||slopes||^2, and the slopes are small where the intercept costs most
# ("Released means" in the AdaOPS page).
_LABEL_SHARE = 0.9


def conditioning(eigvals, mean, intercept):
    """G = lambda_min / (1 + ||x_bar||)^2 (lambda_min of X^T X without intercept)."""
    return eigvals[0] / (1.0 + np.linalg.norm(mean)) ** 2 if intercept else eigvals[0]


def conditioning_max_change(n_samples, n_features, intercept):
    """Largest change of G by one row over the domain (rows in the unit ball).

    Without intercept G = lambda_min(X^T X) moves by at most ||x||^2 <= 1. With
    it, m = n - 1 rows and w = 1 + ||x_bar||: one row moves lambda_min(S) by
    at most m / (m + 1) (1 + ||x_bar||)^2 and w by at most w / (m + 1), and
    G <= tr(S) / d <= m / d, so |Delta G| <= 1 + 1/m + (2 + 1/m) / d
    (:doc:`/mechanisms/adaops`).
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
    """||a + da_i|| - ||a|| for the rows da_i, without cancellation.

    ||a + da_i|| itself comes from ||a||^2 + 2 da_i^T a + ||da_i||^2 (two
    passes over the rows, no copy of them), except on the rows where it is
    below half of ||a||: there that sum cancels, and the norm is taken
    directly.
    """
    norm = np.linalg.norm(a)
    dot2 = 2.0 * (da @ a)
    sq = np.einsum("ij,ij->i", da, da)
    with np.errstate(invalid="ignore"):
        other = np.sqrt(np.maximum(norm * norm + dot2 + sq, 0.0))
    direct = np.flatnonzero(~(other >= 0.5 * norm))
    if direct.size:
        other[direct] = np.linalg.norm(a + da[direct], axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        change = (dot2 + sq) / (other + norm)
    return np.where(np.isfinite(change), change, other - norm)


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
    (:doc:`/mechanisms/adaops`). ``feasible``: whether every pair of cells
    has a posterior scaling (only a fixed floor can leave one without).

    Cells of the conditioning live on the line of e = (released G) - margin.
    Cell k >= 0 is [E_k, E_(k+1)) with E_0 = h0 and steps max(W, E_k / 2),
    W = max(6 sigma, s_1 / 2) (s_1: G's sensitivity): floor E_k and no
    ridge (with a fixed floor, the single cell [h0, inf)). Cell -m < 0 is
    [h0 - m W, h0 - (m - 1) W), the lowest one (-inf, ...): floor ``quiet`` >= h0 and the ridge 4 (quiet - max(lower
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
        self._release_means(eps_eigen, eps_bound)
        self.ridge_factor = 4.0 if intercept else 1.0
        self.width = max(_CELL_WIDTH * self.sigma, _MIN_CELL_CHANGES * self.change)
        self.fixed = fixed_floor is not None
        self._gammas = {}
        self._added = None
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
        self.feasible = not self.fixed or self.has_gamma(self.h0)

    def _release_means(self, eps_eigen, eps_bound):
        """With an intercept and a released bound, the two cells' Gaussian
        releases and the means' are one Gaussian mechanism (adaptive
        composition: the ratios add in squares) at the cells' two epsilons
        and two deltas, ``eps_gauss`` and ``delta_gauss``, of ratio
        ``ratio_gauss``: the cells keep their noise, the means take the rest
        of the ratio, ``ratio_means``, with noise ``means_noise`` (one scale
        per coordinate, the label's last: ``_LABEL_SHARE`` of the squared
        ratio on the label, each part of a row's change at most ``2 / n``).
        Otherwise the conditioning's release alone, and no means (noise
        inf)."""
        ratio_eigen = self.change / self.sigma
        self.eps_gauss, self.delta_gauss = eps_eigen, self.delta_share
        self.ratio_gauss, self.ratio_means, self.means_noise = ratio_eigen, 0.0, np.inf
        if not (self.intercept and eps_bound > 0):
            return
        self.eps_gauss, self.delta_gauss = eps_eigen + eps_bound, 2.0 * self.delta_share
        self.ratio_gauss = 1.0 / gaussian_noise_scale(self.eps_gauss, self.delta_gauss)
        # max: rounding (by basic composition the cells' ratios are within it)
        cells2 = ratio_eigen**2 + 1.0 / self.bound_scale**2
        self.ratio_means = np.sqrt(max(self.ratio_gauss**2 - cells2, 0.0))
        if self.ratio_means > 0:
            shares = np.append(np.full(self.d, 1.0 - _LABEL_SHARE), _LABEL_SHARE)
            self.means_noise = 2.0 / (self.n * self.ratio_means * np.sqrt(shares))

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

    # -- a person added ---------------------------------------------------------

    def added_sample_epsilon(self):
        """The sample's largest loss at ``delta_share`` for a person added to
        the n rows (the release as calibrated for n rows, run on n + 1): at
        least ``eps_sample``, the corner of every pair of cells but with the
        smaller data set's n rows, ``1/n + 1/(h - s_1)`` and the crude bound
        ``2 + sqrt(n / (h - s_1))``; only the pairs whose residual bound is
        the crude one can exceed ``eps_sample``, one gamma per floor, over the
        cells a margin event allows (lower end at most (n + 1) / d)
        ("A person added" in :doc:`/mechanisms/adaops`). Computed once."""
        if self._added is None:
            worst = self.eps_sample
            top = int(self.index((self.n + 1) / max(self.d, 1)))
            # the cells with ridge share the floor ``quiet``: one of them
            for k in [-1, *range(0, max(top, 0) + 1)]:
                spare = self.floor(k) - self.change
                mu = (1.0 / self.n if self.intercept else 0.0) + 1.0 / spare
                crude = (2.0 if self.intercept else 1.0) + np.sqrt(self.n / spare)
                gamma = self.gamma(k, self.bound_grid(k)[3])
                worst = max(worst, float(ops_epsilon(self.delta_share, mu, crude, gamma)))
            self._added = worst
        return self._added

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
def calibration(n, d, intercept, eps, delta_share, fixed_floor):
    """AdaOPS's calibration: a function of public quantities only (cached,
    its root searches are the slow part of small fits)."""
    return _Calibration(n=n, d=d, intercept=intercept, eps=eps, delta_share=delta_share,
                        fixed_floor=fixed_floor)



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
