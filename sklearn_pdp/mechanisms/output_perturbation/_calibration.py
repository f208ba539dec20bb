"""Calibration of output perturbation (:doc:`/mechanisms/output_perturbation`).

The global sensitivities of (ball-constrained) ridge, the public rule for
``alpha="auto"``, the private ridge's public parameters
(:class:`AdaptiveRidge`), each row's exact sensitivity, the ball-constrained
ridge solution and the norm-exponential sampler: functions of public
quantities, or of one data set's ridge system, that
:mod:`sklearn_pdp.mechanisms.output_perturbation._release` composes into the release.
"""

import numpy as np
from scipy import linalg
from scipy.optimize import brentq

from ...accounting import PREDICTION_NOISE, domain_bounds, gaussian_epsilon, gaussian_noise_scale
from ...accounting._engine import largest_root
from ..private_ridge._adaptive import EigenCells
from ..mean._released_means import centred_intercept, means_max_change
from ...utils._ridge_system import leave_one_out


def _ridge_shift(stats, in_sample):
    """The factor s of theta_hat(smaller) - theta_hat(larger) = s H^{-1} x in
    the row's statistics against ``H`` (Sherman-Morrison)."""
    if in_sample:
        # theta_hat_{-i} = theta_hat - H^{-1} x_i r_i / (1 - mu_i)
        _, r = leave_one_out(stats["leverage"], stats["residual"])
        return -r
    # theta_hat_{+z} = theta_hat + H^{-1} x r / (1 + mu)
    return stats["residual"] / (1.0 + stats["leverage"])


def ridge_row_sensitivity(eig, mean, n_samples, ridges, Xs, ys, in_sample, projected=None):
    """Exact ||theta_hat(larger) - theta_hat(smaller)|| of unconstrained
    ridge for each row, removed (``in_sample``) or added, at each of
    ``ridges`` (:class:`~sklearn_pdp.utils._ridge_system.RidgeSystem` of one Gram
    matrix at several alphas; one column each).

    In the eigenbasis ``(lambda, U)`` of the slopes' scatter S with feature
    mean ``mean`` (:func:`~sklearn_pdp.utils._eigen.scatter_eigen`), H = X^T X +
    alpha P has ``H^{-1} (x, 1) = (A v, 1 / n - x_bar^T A v)`` with
    ``v = x - x_bar`` and ``A = U diag(1 / (lambda + alpha)) U^T`` (the
    intercept's Schur complement; without one, ``A v`` with ``x_bar = 0``):
    one product ``V U`` of the rows serves every ridge, and each ridge's
    statistics are sums over the eigen-directions: products with the
    matrix ``1 / (lambda_j + alpha_k)``, O(n d) per ridge instead of a pass
    of O(n d^2). ``projected``: ``V U`` if the caller has it."""
    eigvals, U = eig
    d = mean.shape[0]
    Z = (Xs[:, :d] - mean) @ U if projected is None else projected
    Z2 = Z * Z
    inverse = 1.0 / (eigvals[:, None] + np.array([ridge.alpha for ridge in ridges]))
    stats = {"leverage": Z2 @ inverse,
             "residual": ys[:, None] - Xs @ np.column_stack([ridge.coef for ridge in ridges])}
    norm2 = Z2 @ inverse**2
    if Xs.shape[1] > d:  # the intercept's terms
        stats["leverage"] += 1.0 / n_samples
        norm2 += (1.0 / n_samples - Z @ (inverse * (U.T @ mean)[:, None])) ** 2
    with np.errstate(invalid="ignore"):
        return np.abs(_ridge_shift(stats, in_sample)) * np.sqrt(norm2)


# AdaptiveRidge: share of the squared Gaussian ratio spent on lambda_min, on
# the means of the rows and labels (with an intercept), and of delta on the
# failure of the eigenvalue's lower bound.
_EIGEN_SHARE = 0.1
_MEANS_SHARE = 0.05
_BOUND_DELTA_SHARE = 0.5
# Number of candidate ridges (a public geometric grid).
_ALPHA_GRID = 400
# Largest noise variance of a prediction at a unit row (labels in [-1, 1])
# that the private ridge allows, as AdaOPS's target; larger with an intercept,
# whose noise the released means replace.
_NOISE_TARGET = 1e-3
_CENTRED_NOISE_TARGET = 3e-3
# The floor cell's (nothing known of the conditioning, the slopes shrunk all
# but to 0): labels that vary little are not to pay for the intercept's noise.
_FLOOR_NOISE = 1e-5


class AdaptiveRidge(EigenCells):
    """Output perturbation's private ridge (:doc:`/mechanisms/output_perturbation`).

    Public parameters of the release, for a budget (epsilon, delta), the size
    n and the Gram matrix's order. With ``delta_bound = delta / 2`` and the
    Gaussian ratio mu of (epsilon, delta - delta_bound):

    1. ``lambda~ = lambda_min(S) + sigma_1 N(0, 1)``, S the scatter of the
       slopes (:func:`scatter_eigen`), ``sigma_1 = c / s_1``, c the largest
       change of lambda_min by one row, ``s_1^2 = 0.1 mu^2``.
    2. The lower bound ``lambda~ - z sigma_1 - c`` (z the (1 - delta_bound)
       normal quantile) rounded down to the public grid gives the cell k and
       its floor L_k: with probability at least 1 - delta_bound, L_k is below
       lambda_min of both the data set and any neighbour.
    3. ``theta = theta_hat(alpha_k) + sigma_2k N(0, I)``, with ``sigma_2k =
       Delta(L_k, alpha_k) / s_2k``, Delta the largest change of the ridge
       solution by one row over data sets whose lambda_min(S) is at least
       L_k (:func:`conditional_sensitivity`), and alpha_k the candidate
       ridge that minimises the squared bias factor ``(alpha / (L_k +
       alpha))^2`` plus the noise variance p sigma_2^2, raised to meet the
       noise target at a unit row (``_CENTRED_NOISE_TARGET`` with an
       intercept, ``_NOISE_TARGET`` without), and at most the public rule's
       (:func:`output_perturbation_auto_alpha`); the floor cell L = 0 takes
       the public rule at the smaller target ``_FLOOR_NOISE``, a ridge at
       least the public rule's. In the floor cell (and without an
       intercept) ``s_2k^2 = 0.9 mu^2``; above it, with an intercept,
       ``s_2k^2 = 0.85 mu^2`` and the means of the rows and of the label
       are released with ``s_3^2 = 0.05 mu^2`` (:func:`means_max_change`).
    4. Post-processing (:meth:`shrink`, :meth:`center`): the released slopes
       are shrunk to 0 where they show no signal above their noise, and the
       intercept is re-centred on the released means.

    Guarantee: on the event where L_k bounds lambda_min of the smaller data
    set, the stages are Gaussian mechanisms with ratios at most s_1 and
    ``sqrt(s_2k^2 + s_3k^2) = sqrt(0.9) mu`` (the second chosen adaptively),
    so the release is mu-GDP (Dong, Roth and Su's adaptive composition),
    whose delta(epsilon) is the Gaussian mechanism's; the event fails with
    probability at most delta_bound, which adds to delta. A row's loss: the
    same argument with its exact ratios, s_1i = |change of lambda_min| /
    sigma_1 and the largest ``sqrt(s_2ki^2 + s_3ki^2)`` (:meth:`stage_ratio`)
    over the cells the released value reaches with probability above
    delta_bound (two tails of delta_bound / 2) under the data set or the
    neighbour; never conditioned on the draw.
    """

    def __init__(self, epsilon, delta, n_samples, order, intercept):
        delta_bound = _BOUND_DELTA_SHARE * delta
        self.delta_gauss = delta - delta_bound
        self.budget = float(epsilon)
        mu = 1.0 / gaussian_noise_scale(epsilon, self.delta_gauss)
        self.ratio_eigen = np.sqrt(_EIGEN_SHARE) * mu
        # the coefficients' ratio in the floor cell (and without an
        # intercept); above it, with an intercept, the means take a share
        self.ratio_output = np.sqrt(1.0 - _EIGEN_SHARE) * mu
        means_share = _MEANS_SHARE if intercept else 0.0
        self.ratio_means = np.sqrt(means_share) * mu
        self.ratio_centred = np.sqrt(1.0 - _EIGEN_SHARE - means_share) * mu
        super().__init__(self.ratio_eigen, delta_bound, n_samples, intercept)
        self.n_samples = n_samples
        self.intercept = intercept
        self.coords = order
        # candidate ridges: from where any positive definite H is accurate
        # (Ridge) to where the slopes are all but zero
        low = max(1e-9 * n_samples * order, 1e-6)
        self.alphas = np.geomspace(low, max(1e8, 1e3 * n_samples), _ALPHA_GRID)
        # the public rule: the largest ridge of every other cell
        self.public = output_perturbation_auto_alpha(epsilon, delta, n_samples,
                                                     order - int(intercept), intercept)
        # the floor cell's (nothing known of the conditioning): the public rule
        # at a smaller noise target
        self.floor_ridge = output_perturbation_auto_alpha(
            epsilon, delta, n_samples, order - int(intercept), intercept, target=_FLOOR_NOISE)

    def output_ratio(self, cell):
        """The coefficients' Gaussian ratio in ``cell``."""
        return self.ratio_output if cell < 0 else self.ratio_centred

    def means_noise(self, cell):
        """The released means' noise in ``cell`` (a row moves them by at most
        :func:`means_max_change`); ``inf`` where none are released: the
        floor cell, whose noise target keeps the intercept's noise small
        already, and without an intercept."""
        if cell < 0 or not self.ratio_means > 0:
            return np.inf
        return means_max_change(self.n_samples) / self.ratio_means

    def alpha(self, cell):
        if cell < 0:
            return self.floor_ridge
        lower = self.floor(cell)
        noise2 = (conditional_sensitivity(lower, self.alphas, self.n_samples, self.intercept)
                  / self.output_ratio(cell)) ** 2
        bias = (self.alphas / (lower + self.alphas)) ** 2
        best = np.argmin(bias + self.coords * noise2)
        # labels that vary little: no smaller ridge than the one whose noise
        # at a unit row (with the constant) is at the target (noise2 falls)
        target = _CENTRED_NOISE_TARGET if self.intercept else _NOISE_TARGET
        quiet = np.flatnonzero((1.0 + self.intercept) * noise2 <= target)
        if quiet.size:
            best = max(best, quiet[0])
        # never more than the public rule's, whose noise at the global
        # sensitivity (above the conditional one) meets PREDICTION_NOISE: the
        # bias factor saturates where the floor is small and would otherwise
        # ask for a ridge that silences every direction
        return float(min(self.alphas[best], self.public))

    def sensitivity(self, cell):
        return float(conditional_sensitivity(self.floor(cell), self.alpha(cell),
                                             self.n_samples, self.intercept))

    def noise(self, cell):
        return self.sensitivity(cell) / self.output_ratio(cell)

    def slope_noise(self, cell):
        return self.noise(cell) ** 2

    def stage_ratio(self, cell, ridge, means):
        """A row's Gaussian ratio of the second stage in ``cell``: its ridge
        sensitivity there and its change of the means."""
        return np.hypot(ridge / self.noise(cell), means / self.means_noise(cell))

    def center(self, coef, means, cell):
        """Post-processing: with an intercept, the intercept of the released
        slopes at the released means (``means``: the rows' then the label's),
        ``mean(y) - mean(x)^T slopes``, where its noise variance
        ``means_noise(cell)^2 (1 + ||slopes||^2)`` is below the released
        intercept's ``noise(cell)^2``: the slopes' noise then enters a prediction
        only through ``x - mean(x)``. Returns the coefficients and whether
        the intercept was replaced."""
        if not self.intercept:
            return coef, False
        slopes = coef[:-1]
        if not self.means_noise(cell) ** 2 * (1.0 + slopes @ slopes) < self.noise(cell) ** 2:
            return coef, False
        out = np.array(coef, dtype=np.float64)
        out[-1] = centred_intercept(slopes, means)
        return out, True

    def epsilon(self, ratio, cap=True):
        eps = gaussian_epsilon(self.delta_gauss, ratio)
        # a row at the largest ratios costs exactly the budget
        return np.minimum(eps, self.budget) if cap else eps


def conditional_sensitivity(lower, alpha, n_samples, intercept):
    """Largest ||theta_hat(larger) - theta_hat(smaller)|| of unconstrained
    ridge over neighbouring data sets of at most ``n_samples`` rows in the
    domain whose smaller one has lambda_min(S) >= ``lower`` (S as in
    :func:`scatter_eigen`). :func:`domain_bounds`' argument with
    A = S + alpha I >= (lower + alpha) I: ||beta|| <= sqrt(n) g with
    g = max over singular values s >= sqrt(lower) of s / (s^2 + alpha),
    ``sqrt(lower) / (lower + alpha)`` if lower >= alpha, else
    ``1 / (2 sqrt(alpha))``; at ``lower = 0`` the global bound
    (:func:`output_perturbation_sensitivity`).
    """
    lower = np.maximum(np.float64(lower), 0.0)
    alpha = np.asarray(alpha, dtype=np.float64)
    total = lower + alpha
    g = np.where(lower >= alpha, np.sqrt(lower) / total, 0.5 / np.sqrt(alpha))
    spread = np.sqrt(n_samples) * g
    if not intercept:
        return (1.0 + spread) / total
    m = np.float64(n_samples - 1)
    return (2.0 + 2.0 * spread) * np.hypot(2.0 / total, 1.0 / m + 2.0 / total)


def ball_sensitivity(stats, lowest, radius, convexity):
    """Bound on the sensitivity of the ball-constrained ridge solution to a
    row, valid whether or not the constraint binds (:doc:`/publish`): the
    smallest of the variational bound
    ``|r| (||H^{-1} x|| + sqrt(mu / lowest)) / (2 (1 - mu))``, the strong
    convexity bound ``||x|| (R ||x|| + |y|) / convexity`` and ``2 R``, in the
    row's in-sample statistics (keys of ``Ridge.row_statistics`` with
    ``inverse_norm2`` and ``norm2``, the residual against the constrained
    solution, and ``label`` = |y|); ``lowest`` is the smallest eigenvalue of
    H. Non-decreasing in every statistic and in ``1 / lowest``.
    """
    mu = stats["leverage"]
    valid = (mu < 1.0) & (lowest > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = np.sqrt(stats["inverse_norm2"]) + np.sqrt(mu / lowest)
        variational = np.abs(stats["residual"]) * spread / (2.0 * (1.0 - mu))
    variational = np.where(valid, variational, np.inf)
    norm = np.sqrt(stats["norm2"])
    strong = norm * (radius * norm + stats["label"]) / convexity
    return np.minimum(np.minimum(variational, strong), 2.0 * radius)


# Constant of the automatic ridge, measured on the utility grid.
_AUTO_ALPHA_SCALE = 10.0
# Largest multiple of the n^(1/3) rule that the noise bound may take.
_AUTO_ALPHA_CAP = 100.0


def output_perturbation_auto_alpha(epsilon, delta, n_samples, n_features, intercept=True,
                                   target=PREDICTION_NOISE):
    """``alpha="auto"``: a rule in the public (n, d, epsilon, delta).

    The larger of ``10 (d + 1) n^(1/3) / epsilon^(2/3)`` and the smallest
    alpha at which the Gaussian noise of a prediction at a row of norm 1,
    ``(1 + intercept) sigma(alpha)^2``, is at most ``target``
    (``PREDICTION_NOISE``, 1e-4; at most 100 times the first, where the
    intercept's own noise stays above). For large n the
    sensitivity is about ``sqrt(n / alpha) / alpha`` and the first rule keeps
    the noise about constant while the slopes are shrunk less as n grows
    (measured against rules in n^0.6 and in 1 / epsilon); for small n the
    sensitivity's constant part (the residual 2 and the intercept's leverage)
    dominates and the second keeps the noise small, shrinking the slopes
    (never the intercept) instead.
    """
    rule = _AUTO_ALPHA_SCALE * (n_features + 1) * n_samples ** (1 / 3) / epsilon ** (2 / 3)
    coords = 1.0 + bool(intercept)

    def excess(x):  # noise over its target at alpha = e^-x: grows with x
        sensitivity = output_perturbation_sensitivity(np.exp(-x), n_samples,
                                                      intercept=intercept)
        return coords * gaussian_noise_scale(epsilon, delta, sensitivity) ** 2 - target

    if excess(-np.log(rule)) <= 0:
        return float(rule)
    # on the line of -log alpha the excess grows: the largest root is the
    # smallest alpha. At most 100 times the rule: with few rows the
    # intercept's own noise (leverage 1 / (n - 1)) may stay above the target.
    try:
        return float(np.exp(-largest_root(excess, start=-np.log(rule), step=2.0, xtol=1e-6,
                                          lowest=-np.log(_AUTO_ALPHA_CAP * rule))))
    except ValueError:
        return float(_AUTO_ALPHA_CAP * rule)


def output_perturbation_sensitivity(alpha, n_samples, radius=None, intercept=False):
    """Global l2 sensitivity of (ball-constrained) ridge
    (:doc:`/mechanisms/output_perturbation`).

    Rows in the unit ball, labels in [-1, 1], sum-of-losses convention.
    With ``radius`` R: ``min(L / c, 2 R)`` (Lipschitz constant over strong
    convexity, or the ball's diameter); without: the largest |residual| times
    the largest ||H^{-1} x|| over the domain (:func:`domain_bounds`).
    """
    if radius is None:
        corner = domain_bounds(n_samples, alpha, intercept)
        return corner["residual"] * corner["inverse_norm"]
    lipschitz, convexity = _ball_constants(alpha, n_samples, radius, intercept)
    return min(lipschitz / convexity, 2.0 * radius)


def _ball_constants(alpha, n_samples, radius, intercept):
    """Bound on one row's loss gradient on the ball, and the strong convexity.

    The gradient (x^T theta - y) x has norm <= ||x|| (R ||x|| + 1). Without
    intercept the penalty gives convexity alpha. With an unpenalised
    intercept, a unit direction (v, t) has curvature
    sum (x_i^T v + t)^2 + alpha ||v||^2 >= min(alpha, m) / 5 over m >= n - 1
    rows in the unit ball: ||v||^2 >= 1/5 gives alpha / 5, otherwise
    |t| - ||v|| >= 1/sqrt(5) gives m / 5 from the data term (``n_samples``
    may be an array of sizes).
    """
    if not intercept:
        return radius + 1.0, alpha
    norm = np.sqrt(2.0)
    return norm * (radius * norm + 1.0), np.minimum(alpha, n_samples - 1) / 5.0


def ball_ridge(H, Xty, radius):
    """argmin 1/2 theta^T H theta - theta^T X^T y s.t. ||theta|| <= radius.

    ``H = X^T X + alpha P`` (the ridge objective). The KKT conditions give
    theta(nu) = (H + nu I)^{-1} X^T y
    with the smallest nu >= 0 such that ||theta(nu)|| <= radius. In the
    eigenbasis of H the norm is an explicit decreasing function of nu, so
    nu is a scalar root search.
    """
    shift, U = linalg.eigh(H, check_finite=False)
    g = U.T @ Xty

    def excess(nu):
        return linalg.norm(g / (shift + nu)) - radius

    if excess(0.0) <= 0:
        nu = 0.0
    else:
        # at nu = ||g|| / radius the norm is below radius since shift > 0
        # (H is positive definite: Ridge has checked it)
        nu = brentq(excess, 0.0, linalg.norm(g) / radius, xtol=1e-14, rtol=1e-15)
    theta = U @ (g / (shift + nu))
    # rounding must not leave the ball the sensitivity analysis assumes
    return theta * min(1.0, radius / linalg.norm(theta))


def ball_ridge_error(H, Xty, theta, radius, lowest):
    """Upper bound on ``||theta - theta*||``, theta* the exact minimiser of
    ``1/2 t^T H t - t^T X^T y`` over ``||t|| <= radius`` and ``theta`` a
    computed solution (:func:`ball_ridge`, or the unconstrained solve where
    it lies inside the ball), whatever the root search's tolerance.

    The objective is ``m``-strongly convex, ``m = lambda_min(H)``
    (``lowest``), so for a point t of the ball and any v in its gradient
    plus normal cone, ``||t - theta*|| <= ||v|| / m`` (strong monotonicity,
    with 0 in that set at theta*). t is ``theta`` moved onto the sphere
    (normal cone ``{nu t, nu >= 0}``) where it lies on it to rounding,
    ``theta`` itself (normal cone 0) inside; the move, the rounding of the
    residual's evaluation (``(d + 2) eps`` times the magnitudes summed,
    ``||H||_F`` bounding ``|| |H| ||_2``) and that of ``lowest`` (``d eps
    ||H||_F``) are added. ``2 radius``, the
    ball's diameter, where m is not resolved.
    """
    d, eps = H.shape[0], np.finfo(np.float64).eps
    size = linalg.norm(theta)
    on_sphere = size >= radius * (1.0 - 1e-12)
    point = theta * (radius / size) if on_sphere else theta
    grad = H @ point - Xty
    nu = max(0.0, -(grad @ point) / (point @ point)) if on_sphere else 0.0
    scale = linalg.norm(H)
    rounding = (d + 2) * eps * (scale * radius + linalg.norm(Xty) + nu * radius)
    m = lowest - d * eps * scale
    if not m > 0:
        return 2.0 * radius
    moved = linalg.norm(theta - point)
    return float(min(moved + (linalg.norm(grad + nu * point) + rounding) / m, 2.0 * radius))


def norm_exponential_noise(rng, n_features, scale, size=None):
    """Draw(s) with density proportional to exp(-||k||_2 / scale) on R^d.

    In polar coordinates the density of the radius is proportional to
    rho^(d-1) exp(-rho / scale), a Gamma(d, scale) law, and the direction is
    uniform on the sphere (a normalised standard normal vector).
    """
    shape = n_features if size is None else (size, n_features)
    direction = rng.standard_normal(shape)
    direction /= linalg.norm(direction, axis=-1, keepdims=True)
    radius = rng.gamma(n_features, scale, size)
    return direction * (radius if size is None else radius[:, None])
