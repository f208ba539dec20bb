"""Privacy accounting: tight hockey-stick divergences and their inverses.

Every mechanism of the package reduces to a pair of output distributions P (the
smaller data set) and Q (the larger one, with the privacy target added) and the
privacy loss L = log dP/dQ.  The tight per-instance guarantee is (doc/mechanisms/index.rst)

    delta_PQ(eps) = P(L > eps) - e^eps Q(L > eps),
    delta_QP(eps) = Q(L < -eps) - e^eps P(L < -eps),
    delta(eps) = max(delta_PQ, delta_QP).

Both directions have the shape ``A(eps) - e^eps B(eps)`` and the derivative
``-e^eps B(eps)``.  A mechanism therefore only supplies a *tails* function
returning ``(log A, log B)`` for one direction; this module turns it into
delta(eps) and into eps(delta) with one vectorised, safeguarded Newton search
that always returns an upper bound (the end of the bracket whose delta was
checked to be at most the target).

Nothing here knows about scikit-learn: the estimators feed it arrays of
per-row statistics.
"""

from functools import lru_cache
from itertools import pairwise

import numpy as np
from scipy.interpolate import CubicSpline, RectBivariateSpline
from scipy.optimize import brentq
from scipy.special import chdtr, chdtrc, log_ndtr, logsumexp, ndtr, ndtri_exp

__all__ = [
    "log_phi",
    "log_gauss_mass",
    "hockey_stick",
    "epsilon_from_delta",
    "ops_delta",
    "ops_epsilon",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_noise_scale",
    "compose_with_gaussian",
    "gaussian_allowance",
    "chi2_delta",
    "chi2_epsilon",
    "chi2_noise_scale",
    "ops_gamma",
    "ops_mixture_epsilon",
    "objpert_delta",
    "objpert_epsilon",
]

# Search limits of eps(delta).  A loss that still exceeds the target at
# _EPS_MAX is reported as +inf, which is always a valid (if useless) bound.
_EPS_MAX = 1e6
_RTOL = 1e-11
_ATOL = 1e-16
_MAX_ITER = 200
_NEWTON_STEPS = 40
_LOG_SQRT_2PI = 0.5 * np.log(2 * np.pi)
# Calls with at least this many rows at one delta (and gamma) start the
# search from a spline through exact epsilons on a grid of this many nodes
# for one row statistic, or per axis for two (see _spline_start).
_TABLE_MIN_ROWS = 2048
_TABLE_NODES = {1: 256, 2: 64}
_SPLINE_SHIFT = 1e-8

# log of the standard normal CDF, accurate in both tails
log_phi = log_ndtr


def _log1mexp(a):
    """log(1 - exp(a)) for a <= 0, stable at both ends (-inf for a >= 0)."""
    a = np.minimum(a, 0.0)
    with np.errstate(divide="ignore"):
        return np.where(
            a > -np.log(2.0), np.log(-np.expm1(a)), np.log1p(-np.exp(a))
        )


def log_gauss_mass(lo, hi):
    """log(Phi(hi) - Phi(lo)) for lo <= hi, computed in the thinner tail."""
    lo, hi = np.broadcast_arrays(np.asarray(lo, float), np.asarray(hi, float))
    # Phi(hi) - Phi(lo) = Phi(-lo) - Phi(-hi): use the side whose tails are small.
    flip = lo > 0
    a = np.where(flip, -hi, lo)
    b = np.where(flip, -lo, hi)
    lb = log_phi(b)
    with np.errstate(invalid="ignore"):
        return np.where(b <= a, -np.inf, lb + _log1mexp(log_phi(a) - lb))


def _log_delta(eps, log_a, log_b):
    """log(A - e^eps B), -inf when the difference is not positive."""
    with np.errstate(invalid="ignore"):
        diff = eps + log_b - log_a
        out = log_a + _log1mexp(diff)
    return np.where((diff >= 0) | np.isneginf(log_a), -np.inf, out)


def hockey_stick(tails, eps, size):
    """delta(eps) = max over directions of A(eps) - e^eps B(eps).

    Parameters
    ----------
    tails : sequence of callables
        One per direction; ``tails[k](eps, idx)`` returns ``(log A, log B)``
        for the instances ``idx`` (an integer index array) at ``eps``.
    eps : array-like
        Broadcast against ``size`` instances.
    size : int
        Number of instances.
    """
    eps = np.broadcast_to(np.asarray(eps, dtype=float), (size,)).copy()
    idx = np.arange(size)
    out = np.zeros(size)
    for tail in tails:
        log_a, log_b = tail(eps, idx)
        out = np.maximum(out, np.exp(_log_delta(eps, log_a, log_b)))
    return out


def _solve_direction(tail, log_target, size, start=None, floor=None):
    """Smallest eps >= 0 with A(eps) - e^eps B(eps) <= target, for one direction.

    Safeguarded Newton on the probit scale, f(eps) = Phi^{-1}(delta(eps)) -
    Phi^{-1}(target), which is nearly linear for the Gaussian-like losses of
    this package (exactly so for the Gaussian mechanism's tail), using
    d delta / d eps = -e^eps B.  A bracket [lo, hi] with delta(lo) > target >=
    delta(hi) is kept for every instance and the answer is ``hi``, so rounding
    can only make the reported epsilon larger.  ``start`` is an optional
    first guess per instance (a good one saves most of the iterations);
    with ``floor`` the result is max(floor, eps), found without solving for
    the instances whose eps is below their floor.
    """
    lo = np.zeros(size) if floor is None else floor.copy()
    hi = np.full(size, np.inf)
    q_target = ndtri_exp(log_target)
    log_target = np.broadcast_to(log_target, (size,))
    q_target = np.broadcast_to(q_target, (size,))
    x = np.zeros(size) if start is None else np.maximum(start, 0.0)
    if floor is not None:
        x = floor.copy()
    active = np.flatnonzero(np.isfinite(x))  # an infinite floor is the answer
    zero_tried = np.zeros(size, dtype=bool)
    for iteration in range(_MAX_ITER):
        if active.size == 0:
            break
        xa = x[active]
        zero_tried[active] |= xa == 0
        log_a, log_b = tail(xa, active)
        ld = _log_delta(xa, log_a, log_b)
        above = ld > log_target[active]
        lo[active] = np.where(above, xa, lo[active])
        hi[active] = np.where(above, hi[active], xa)
        la, ha = lo[active], hi[active]
        tol = _RTOL * la + _ATOL
        # Newton step, aimed half a tolerance above the estimated root so
        # that the next point is, most likely, a verified upper end.
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            q = ndtri_exp(np.minimum(ld, 0.0))
            log_slope = xa + log_b + 0.5 * q**2 + _LOG_SQRT_2PI
            step = (q - q_target[active]) * np.exp(-log_slope)
            guess = xa + step + 0.5 * tol
        # Done when the bracket is closed, or when a verified upper end is
        # within one tolerance of Newton's estimate of the root.
        done = ((ha - la) <= tol) | (~above & (-step <= tol))
        # a root at (or within a tolerance of) eps = 0 is found by trying 0
        # itself, not by halving towards it
        try_zero = (guess <= 2 * tol) & (la == 0) & (ha > 0) & ~zero_tried[active]
        done &= ~try_zero
        # past _NEWTON_STEPS only bisection: Newton can creep towards the
        # root from one side on a mixture of losses (AdaOPS)
        bad = ~np.isfinite(guess) | (guess <= la) | (guess >= ha) | (iteration >= _NEWTON_STEPS)
        fallback = np.where(
            np.isfinite(ha), 0.5 * (la + ha), np.maximum(2.0 * la, 1.0)
        )
        guess = np.where(try_zero, 0.0, np.where(bad, fallback, guess))
        give_up = ~np.isfinite(ha) & (la >= _EPS_MAX)
        keep = ~done & ~give_up
        x[active[keep]] = guess[keep]
        active = active[keep]
    else:  # pragma: no cover - bisection closes any finite bracket in ~60 steps
        raise RuntimeError("epsilon search did not converge")
    return hi


def epsilon_from_delta(tails, delta, size, start=None):
    """eps(delta) = min{eps >= 0 : delta(eps) <= delta}, +inf if none exists.

    The maximum over directions of each direction's own eps(delta), which is
    the same as inverting their maximum because every direction is
    non-increasing in eps.
    """
    delta = np.broadcast_to(np.asarray(delta, dtype=float), (size,))
    with np.errstate(divide="ignore"):
        log_target = np.log(delta)
    # The first direction is solved from ``start``; each further one only
    # where it exceeds the running maximum (usually one evaluation).
    out = _solve_direction(tails[0], log_target, size, start)
    for tail in tails[1:]:
        out = _solve_direction(tail, log_target, size, floor=out)
    return out


# ---------------------------------------------------------------------------
# One Posterior Sample (doc/mechanisms/ops.rst)
# ---------------------------------------------------------------------------


def _log_sq_above(t, m, s):
    """log P(e^2 > t) for e ~ N(m, s^2)."""
    with np.errstate(invalid="ignore"):
        root = np.sqrt(np.maximum(t, 0.0))
    up = np.logaddexp(log_phi((m - root) / s), log_phi((-m - root) / s))
    return np.where(t <= 0, 0.0, up)


def _log_sq_below(t, m, s):
    """log P(e^2 < t) for e ~ N(m, s^2)."""
    root = np.sqrt(np.maximum(t, 0.0))
    m = np.abs(m)
    return np.where(t <= 0, -np.inf, log_gauss_mass((-root - m) / s, (root - m) / s))


def _ops_tails(mu, r, gamma):
    """Tails of the OPS loss L = -log(1+mu)/2 + gamma/2 (e^2 - r^2/(1+mu)).

    Under P, e ~ N(r, mu/gamma); under Q, e ~ N(r/(1+mu), mu/(gamma (1+mu))).
    """
    log1p_mu = np.log1p(mu)
    r2 = r**2 / (1.0 + mu)
    sd_p = np.sqrt(mu / gamma)
    sd_q = sd_p / np.sqrt(1.0 + mu)
    mean_q = r / (1.0 + mu)

    def remove(eps, idx):  # delta_PQ: P(L > eps) - e^eps Q(L > eps)
        t = (2 * eps + log1p_mu[idx]) / gamma[idx] + r2[idx]
        return (
            _log_sq_above(t, r[idx], sd_p[idx]),
            _log_sq_above(t, mean_q[idx], sd_q[idx]),
        )

    def add(eps, idx):  # delta_QP: Q(L < -eps) - e^eps P(L < -eps)
        t = (-2 * eps + log1p_mu[idx]) / gamma[idx] + r2[idx]
        return (
            _log_sq_below(t, mean_q[idx], sd_q[idx]),
            _log_sq_below(t, r[idx], sd_p[idx]),
        )

    return {"remove": remove, "add": add}


def _pick(tails, direction):
    if direction == "both":
        return list(tails.values())
    if direction not in tails:
        raise ValueError(
            f"direction must be 'both' or one of {sorted(tails)}, got {direction!r}"
        )
    return [tails[direction]]


def _flat(*arrays):
    """Broadcast to one shape and flatten; returns the shape and the arrays."""
    arrays = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in arrays))
    return arrays[0].shape, [np.ravel(a) for a in arrays]


def _shaped(values, shape):
    return float(values[0]) if shape == () else values.reshape(shape)


def _ops_setup(mu, r, gamma, direction):
    # No leverage: the target does not move the posterior (delta = 0).
    # Infinite leverage or residual: no finite epsilon exists (delta = 1).
    zero = mu <= 0
    infinite = ~np.isfinite(mu) | ~np.isfinite(r)
    safe = zero | infinite
    tails = _ops_tails(np.where(safe, 1.0, mu), np.where(safe, 0.0, r), gamma)
    return _pick(tails, direction), zero, infinite


def ops_delta(eps, mu, r, gamma, direction="both"):
    """Tight delta(eps) of One Posterior Sample (doc/mechanisms/ops.rst).

    Parameters
    ----------
    eps : float or array-like
        Privacy level(s) at which to evaluate.
    mu : float or array-like
        Leverage x^T H^{-1} x of the target w.r.t. the smaller data set.
    r : float or array-like
        Residual y_z - x^T theta_hat on the smaller data set.
    gamma : float or array-like
        Posterior scaling; the release is N(theta_hat, (gamma H)^{-1}).
    direction : {"both", "remove", "add"}, default="both"
        "remove" is delta_PQ, "add" is delta_QP, "both" their maximum.

    Returns
    -------
    delta : float or ndarray
        Broadcast shape of the inputs.
    """
    shape, (eps, mu, r, gamma) = _flat(eps, mu, r, gamma)
    tails, zero, infinite = _ops_setup(mu, r, gamma, direction)
    out = hockey_stick(tails, eps, eps.size)
    out[zero] = 0.0
    out[infinite] = 1.0
    return _shaped(out, shape)


def ops_epsilon(delta, mu, r, gamma, direction="both"):
    """Tight eps(delta) of One Posterior Sample, +inf where none exists.

    Same parameters as :func:`ops_delta`, with ``delta`` in (0, 1).
    """
    shape, arrays = _flat(delta, mu, r, gamma)
    return _shaped(_ops_epsilon(*arrays, direction), shape)


def _ops_nodes(delta, gamma, direction, log_mu, log_r):
    mu, r = np.exp(log_mu), np.exp(log_r)
    return _ops_epsilon(*_flat(delta, mu, r, gamma)[1], direction, table=False)


def _ops_epsilon(delta, mu, r, gamma, direction, table=True):
    tails, zero, infinite = _ops_setup(mu, r, gamma, direction)
    # First guess, for many rows at one (delta, gamma), from a spline: the
    # loss depends on (mu, r, gamma) only through mu and a = |r| sqrt(gamma mu),
    # and eps is smooth in log mu and log a, so in log mu and log |r| too
    # (whose grid spans the rows' own ranges of mu and r); where a < 1e-3 mu,
    # r hardly matters.
    start = None
    regular = np.flatnonzero(~(zero | infinite))
    if table and regular.size and np.ptp(delta) == 0 and np.ptp(gamma) == 0:
        d0, g0, m = delta[0], gamma[0], mu[regular]
        with np.errstate(divide="ignore"):
            log_r = np.log(np.abs(r[regular]))
        log_r = np.maximum(log_r, np.log(1e-3 * np.sqrt(m.min() / g0)))

        start = _spline_start(_ops_nodes, (d0, g0, direction), np.log(m), log_r)
    # Otherwise, and where the spline is far off (it can ring between nodes
    # of very different epsilons, and a start at an absurd epsilon costs many
    # iterations), the Gaussian mechanism whose loss has the same variance,
    # Var_P(L) = mu^2/2 + gamma mu r^2.
    with np.errstate(invalid="ignore", over="ignore"):
        guess = _gaussian_guess(delta, np.sqrt(mu**2 / 2 + gamma * mu * r**2))
    if start is not None:
        table, start = start, guess
        start[regular] = np.where(table <= 10.0 * guess[regular] + 1.0, table, start[regular])
    else:
        start = guess
    out = epsilon_from_delta(tails, delta, delta.size, start=start)
    out[zero] = 0.0
    out[infinite] = np.inf
    return out


# ---------------------------------------------------------------------------
# Gaussian mechanism (doc/mechanisms/output_perturbation.rst; Balle and Wang 2018)
# ---------------------------------------------------------------------------


def _gaussian_guess(delta, s):
    """eps of the Gaussian mechanism with ratio ``s`` ignoring its e^eps B term
    (an overestimate): a first guess for losses that are nearly Gaussian."""
    return s * ndtri_exp(np.log1p(-delta)) + s**2 / 2


def _gaussian_tails(s):
    """delta(eps) = Phi(s/2 - eps/s) - e^eps Phi(-s/2 - eps/s), both directions."""

    def tail(eps, idx):
        si = s[idx]
        return log_phi(si / 2 - eps / si), log_phi(-si / 2 - eps / si)

    return [tail]


def gaussian_delta(eps, s):
    """Tight delta(eps) of the Gaussian mechanism with sensitivity/noise ratio ``s``.

    ``s`` = ||Delta||_{Sigma^{-1}}: the per-instance sensitivity measured in
    the noise's Mahalanobis norm (Delta / sigma for isotropic noise).
    """
    shape, (eps, s) = _flat(eps, s)
    zero, infinite = s <= 0, ~np.isfinite(s)
    out = hockey_stick(_gaussian_tails(np.where(zero | infinite, 1.0, s)), eps, eps.size)
    out[zero] = 0.0
    out[infinite] = 1.0
    return _shaped(out, shape)


def _spline_start(exact, params, *coords):
    """First guesses of eps(delta) for rows with statistics ``coords`` (one
    or two arrays, in coordinates in which eps is smooth), from a cubic
    spline through the exact values ``exact(*params, *axes)`` on an even grid
    over their range; None for too few rows.

    Only a start: the search verifies every answer, so a poor guess costs
    iterations, never validity. A good one (about 1e-8 relative for the
    Gaussian mechanism, 1e-5 for OPS, except near kinks such as eps = 0)
    leaves two or three evaluations per row instead of five to seven. The
    grid's range is rounded outward to whole units, so that the chunks of
    one fit share one table (the last few are kept).
    """
    if coords[0].size < _TABLE_MIN_ROWS:
        return None
    bounds = tuple(
        (float(np.floor(c.min())), float(max(np.ceil(c.max()), np.floor(c.min()) + 1)))
        for c in coords
    )
    spline = _spline(exact, params, bounds)
    return None if spline is None else spline(*coords)


@lru_cache(maxsize=16)
def _spline(exact, params, bounds):
    """The spline of :func:`_spline_start`, through log(eps + 1e-8): that is
    nearly linear in the log coordinates, so that a wide range of epsilons
    does not make it ring. None if some node has no finite epsilon."""
    axes = [np.linspace(lo, hi, _TABLE_NODES[len(bounds)]) for lo, hi in bounds]
    grid = np.meshgrid(*axes, indexing="ij")
    values = exact(*params, *(g.ravel() for g in grid))
    if not np.all(np.isfinite(values)):
        return None
    values = np.log(values + _SPLINE_SHIFT).reshape(grid[0].shape)
    if len(bounds) == 1:
        spline = CubicSpline(axes[0], values)
    else:
        spline = RectBivariateSpline(*axes, values, s=0).ev
    low, high = values.min(), values.max()

    def guess(*coords):
        # ringing cannot take the guess beyond the range of the exact values
        return np.exp(np.clip(spline(*coords), low, high)) - _SPLINE_SHIFT

    return guess


def gaussian_epsilon(delta, s):
    """Tight eps(delta) of the Gaussian mechanism with ratio ``s``."""
    shape, arrays = _flat(delta, s)
    return _shaped(_gaussian_epsilon(*arrays), shape)


def _gaussian_nodes(delta, log_s):
    return _gaussian_epsilon(*_flat(delta, np.exp(log_s))[1], table=False)


def _gaussian_epsilon(delta, s, table=True):
    zero, infinite = s <= 0, ~np.isfinite(s)
    regular = np.flatnonzero(~(zero | infinite))
    start = None
    if table and regular.size and np.ptp(delta) == 0:
        # eps is smooth in log s: many rows at one delta share one spline
        guess = _spline_start(_gaussian_nodes, (delta[0],), np.log(s[regular]))
        if guess is not None:
            start = np.zeros(s.size)
            start[regular] = guess
    out = epsilon_from_delta(
        _gaussian_tails(np.where(zero | infinite, 1.0, s)), delta, delta.size, start
    )
    out[zero] = 0.0
    out[infinite] = np.inf
    return out


def gaussian_noise_scale(epsilon, delta, sensitivity=1.0):
    """Smallest sigma for which N(0, sigma^2 I) noise on a query of l2
    sensitivity ``sensitivity`` is (epsilon, delta)-DP (analytic Gaussian
    mechanism; the classical sqrt(2 log(1.25/delta))/epsilon rule is invalid
    for large epsilon, erratum E2 in doc/errata.rst).
    """
    # delta(epsilon) grows with s = sensitivity/sigma: find the largest s.
    def excess(log_s):
        with np.errstate(divide="ignore"):
            return np.log(gaussian_delta(epsilon, np.exp(log_s))) - np.log(delta)

    log_s = _largest_log_root(excess)
    return sensitivity / np.exp(log_s)


# Share of delta that a basic composition with a Gaussian mechanism gives the
# Gaussian (the rest goes to the other mechanism, whose loss at small epsilon
# is the larger one).
GAUSSIAN_DELTA_SHARE = 0.1


def compose_with_gaussian(epsilon_at, delta, ratio):
    """Valid eps(delta) of a mechanism composed with a Gaussian mechanism.

    ``epsilon_at(delta')`` is the mechanism's epsilon at delta' and
    ``ratio`` the Gaussian mechanism's (l2 change over noise). Basic
    composition: ``epsilon_at((1 - f) delta) + gaussian_epsilon(f delta,
    ratio)`` with ``f = GAUSSIAN_DELTA_SHARE``, an upper bound on the tight
    epsilon of the pair. ``ratio=None`` is the mechanism alone at ``delta``.
    """
    if ratio is None:
        return epsilon_at(delta)
    share = GAUSSIAN_DELTA_SHARE * delta
    return epsilon_at(delta - share) + gaussian_epsilon(share, ratio)


def gaussian_allowance(epsilon, delta, target):
    """Largest Gaussian ratio that :func:`compose_with_gaussian` keeps within ``target``.

    ``epsilon`` is the mechanism's (worst-case) epsilon at
    ``(1 - GAUSSIAN_DELTA_SHARE) delta``; a ValueError when it alone
    reaches ``target``.
    """
    if not epsilon < target:
        raise ValueError(
            f"The release alone costs {epsilon:.4g} at this delta: nothing is left "
            f"for a publication within {target:.4g}; raise publish_epsilon."
        )
    return 1.0 / gaussian_noise_scale(target - epsilon, GAUSSIAN_DELTA_SHARE * delta)


# ---------------------------------------------------------------------------
# Gaussian sketch / chi-square loss (doc/mechanisms/random_projection.rst; random projection)
# ---------------------------------------------------------------------------


def _chi2_log_cdf(x, k):
    """log P(W <= x), W ~ chi-square(k): scipy.stats.chi2.logcdf's two
    branches (the log of the smaller tail), chosen by cdf < 1/2 instead of
    its per-element median (an inverse incomplete gamma, most of its cost)."""
    x = np.maximum(x, 0.0)
    cdf = chdtr(k, x)
    with np.errstate(divide="ignore"):
        return np.where(cdf < 0.5, np.log(cdf), np.log1p(-chdtrc(k, x)))


def _chi2_log_sf(x, k):
    """log P(W > x), W ~ chi-square(k), as :func:`_chi2_log_cdf`."""
    x = np.maximum(x, 0.0)
    sf = chdtrc(k, x)
    with np.errstate(divide="ignore"):
        return np.where(sf < 0.5, np.log(sf), np.log1p(-chdtr(k, x)))


def _chi2_tails(tau, df):
    """Tails of the loss of n' = ``df`` rows N(0, Sigma) vs N(0, Sigma + z z^T).

    With tau = z^T Sigma^{-1} z and W ~ chi-square(df): under P,
    L = (df/2) log(1 + tau) - tau W / (2 (1 + tau)); under Q,
    L = (df/2) log(1 + tau) - tau W / 2.  Both are decreasing in W, so every
    event on L is a chi-square tail.
    """
    log_det = df * np.log1p(tau)

    def remove(eps, idx):  # delta_PQ: P(L > eps) - e^eps Q(L > eps)
        t, k = tau[idx], df[idx]
        w = (log_det[idx] - 2 * eps) / t
        return _chi2_log_cdf(w * (1 + t), k), _chi2_log_cdf(w, k)

    def add(eps, idx):  # delta_QP: Q(L < -eps) - e^eps P(L < -eps)
        t, k = tau[idx], df[idx]
        w = (log_det[idx] + 2 * eps) / t
        return _chi2_log_sf(w, k), _chi2_log_sf(w * (1 + t), k)

    # "add" first: it is the larger for every (tau, df) seen, so the search
    # solves it from its start and checks "remove" with one evaluation
    return {"add": add, "remove": remove}


def _chi2_setup(tau, df, direction):
    # tau = 0: the target is invisible to the release (delta = 0);
    # tau = inf: it lies outside the support of the smaller data set's
    # release (delta = 1, no finite epsilon).
    zero = tau <= 0
    infinite = ~np.isfinite(tau)
    tails = _chi2_tails(np.where(zero | infinite, 1.0, tau), df)
    return _pick(tails, direction), zero, infinite


def chi2_delta(eps, tau, df, direction="both"):
    """Tight delta(eps) of releasing ``df`` Gaussian sketch rows (doc/mechanisms/random_projection.rst).

    The release is ``df`` independent rows N(0, Sigma) on the smaller data
    set and N(0, Sigma + z z^T) on the larger one.

    Parameters
    ----------
    eps : float or array-like
        Privacy level(s) at which to evaluate.
    tau : float or array-like
        z^T Sigma^{-1} z of the target w.r.t. the smaller data set; ``inf``
        when z is outside the range of a singular Sigma.
    df : int or array-like
        Number of released rows n'.
    direction : {"both", "remove", "add"}, default="both"
        "remove" is delta_PQ, "add" is delta_QP, "both" their maximum.

    Returns
    -------
    delta : float or ndarray
        Broadcast shape of the inputs.
    """
    shape, (eps, tau, df) = _flat(eps, tau, df)
    tails, zero, infinite = _chi2_setup(tau, df, direction)
    out = hockey_stick(tails, eps, eps.size)
    out[zero] = 0.0
    out[infinite] = 1.0
    return _shaped(out, shape)


def chi2_epsilon(delta, tau, df, direction="both"):
    """Tight eps(delta) of releasing ``df`` Gaussian sketch rows, +inf where
    none exists. Same parameters as :func:`chi2_delta`, ``delta`` in (0, 1).

    eps(delta) is non-decreasing in ``tau`` and in ``df``.
    """
    shape, arrays = _flat(delta, tau, df)
    return _shaped(_chi2_epsilon(*arrays, direction), shape)


def _chi2_nodes(delta, df, direction, log_tau):
    return _chi2_epsilon(*_flat(delta, np.exp(log_tau), df)[1], direction, table=False)


def _chi2_epsilon(delta, tau, df, direction, table=True):
    tails, zero, infinite = _chi2_setup(tau, df, direction)
    regular = np.flatnonzero(~(zero | infinite))
    start = None
    if table and regular.size and np.ptp(delta) == 0 and np.ptp(df) == 0:
        # eps is smooth in log tau: many rows at one (delta, df) share one spline
        guess = _spline_start(_chi2_nodes, (delta[0], df[0], direction), np.log(tau[regular]))
        if guess is not None:
            start = np.zeros(tau.size)
            start[regular] = guess
    out = epsilon_from_delta(tails, delta, delta.size, start)
    out[zero] = 0.0
    out[infinite] = np.inf
    return out


def _largest_log_root(excess, start=0.0):
    """Largest x with excess(x) <= 0 for an increasing ``excess``.

    Brackets the root by steps of 5, solves with brentq, then steps down
    until the point is verified, so the result is on the valid side.
    """
    lo, hi = start - 5.0, start
    while excess(hi) <= 0:
        lo, hi = hi, hi + 5.0
    while excess(lo) > 0:
        lo, hi = lo - 5.0, lo
    x = brentq(excess, lo, hi, xtol=1e-13)
    while excess(x) > 0:
        x -= 1e-12
    return x


def chi2_noise_scale(epsilon, delta, df, sq_norm=2.0):
    """Smallest s for which a Gaussian sketch of ``df`` rows with N(0, s^2)
    noise on every column is (epsilon, delta)-DP for targets of squared norm
    at most ``sq_norm``.

    Sigma >= s^2 I on every data set, so tau <= sq_norm / s^2, and the loss
    grows with tau: the calibration is exact at that corner.
    """
    def excess(log_tau):
        with np.errstate(divide="ignore"):
            return np.log(chi2_delta(epsilon, np.exp(log_tau), df)) - np.log(delta)

    return np.sqrt(sq_norm / np.exp(_largest_log_root(excess)))


# ---------------------------------------------------------------------------
# Calibrating One Posterior Sample for a budget (AdaOPS, doc/mechanisms/adaops.rst)
# ---------------------------------------------------------------------------


def ops_gamma(epsilon, delta, mu, r, xtol=1e-12):
    """Largest gamma for which OPS at leverage ``mu`` and residual ``r`` is
    (epsilon, delta) (both directions, exact loss of doc/mechanisms/ops.rst).

    The loss grows with gamma, so a root search on log gamma (to ``xtol``)
    finds the boundary; the result is then stepped down until the exact
    epsilon at it is verified to be within ``epsilon``. Used at the worst
    corner of a region of (mu, |r|), this calibrates OPS for every target in
    the region.
    """

    def excess(log_gamma):
        return ops_epsilon(delta, mu, r, np.exp(log_gamma)) - epsilon

    lo, hi = -5.0, 5.0
    while excess(hi) <= 0:
        lo, hi = hi, hi + 10.0
    while excess(lo) > 0:
        # as gamma -> 0 the loss keeps a non-degenerate limit (gamma e^2 does
        # not vanish): below the limit's epsilon no gamma is private enough
        if lo < -60.0:
            raise ValueError(
                f"no gamma > 0 makes OPS ({epsilon}, {delta})-DP at leverage "
                f"{mu}: epsilon is below the loss's limit as gamma -> 0."
            )
        lo, hi = lo - 10.0, lo
    log_gamma = brentq(excess, lo, hi, xtol=xtol)
    while excess(log_gamma) > 0:
        log_gamma -= max(xtol, 1e-10)
    return float(np.exp(log_gamma))


def ops_mixture_epsilon(delta, mu, r, gamma, log_p, log_q, log_p_rest, log_q_rest):
    """Tight eps(delta) of releasing an index k, then OPS with k's parameters.

    The release (k, theta): k is drawn with probabilities p_k on the smaller
    data set and q_k on the larger, then theta is one OPS draw whose row
    statistics (leverage ``mu[:, k]``, residual ``r[:, k]``) and scaling
    ``gamma[k]`` depend on k (AdaOPS, doc/mechanisms/adaops.rst). With
    L_k = log(p_k / q_k) the loss of (k, theta) is L_k plus OPS's, so

        delta_PQ(eps) = sum_k p_k delta_OPS,k^PQ(eps - L_k)
                      = sum_k p_k A_k(eps - L_k) - e^eps sum_k q_k B_k(eps - L_k),

    and delta_QP likewise with the roles swapped and eps + L_k: the same
    shape A - e^eps B as every mechanism here, solved by the same search.
    The indices left out (total probability ``exp(log_p_rest)`` and
    ``exp(log_q_rest)`` per row) are counted as revealing everything
    (delta 1 on them), so the result is an upper bound, exact up to them.

    Parameters
    ----------
    delta : float
    mu, r : ndarray of shape (n_rows, n_indices)
        OPS statistics of each row under each index (on the smaller data set).
    gamma : ndarray of shape (n_indices,)
    log_p, log_q : ndarray of shape (n_rows, n_indices)
        Log probabilities of the indices kept, per row.
    log_p_rest, log_q_rest : ndarray of shape (n_rows,)

    Returns
    -------
    eps : ndarray of shape (n_rows,)
        ``inf`` where no finite epsilon exists.
    """
    n_rows, n_idx = mu.shape
    # a row whose target does not move the posterior (mu = 0, no intercept and
    # x = 0) has OPS loss 0: A = B = [eps' < 0]; an infinite leverage or
    # residual reveals the row: A = 1, B = 0
    zero = mu <= 0
    infinite = ~np.isfinite(mu) | ~np.isfinite(r)
    safe = zero | infinite
    parts = _ops_tails(np.where(safe, 1.0, mu).ravel(), np.where(safe, 0.0, r).ravel(),
                       np.broadcast_to(gamma, mu.shape).ravel())
    log_ratio = log_p - log_q

    def mixture(direction, log_a_weight, log_b_weight, log_rest, sign):
        def tail(eps, idx):
            shift = eps[:, None] - sign * log_ratio[idx]
            cells = (idx[:, None] * n_idx + np.arange(n_idx)).ravel()
            log_a, log_b = (v.reshape(shift.shape)
                            for v in parts[direction](shift.ravel(), cells))
            below = np.where(shift < 0, 0.0, -np.inf)
            log_a = np.where(zero[idx], below, np.where(infinite[idx], 0.0, log_a))
            log_b = np.where(zero[idx], below, np.where(infinite[idx], -np.inf, log_b))
            log_a = logsumexp(log_a + log_a_weight[idx], axis=1)
            return np.logaddexp(log_a, log_rest[idx]), logsumexp(log_b + log_b_weight[idx], axis=1)
        return tail

    tails = [mixture("remove", log_p, log_q, log_p_rest, 1.0),
             mixture("add", log_q, log_p, log_q_rest, -1.0)]
    # First guess: each row's OPS loss under its most likely index, within
    # about 1% of the mixture's for the rows of a fit (the search verifies it)
    modal = np.argmax(log_p, axis=1)
    start = np.zeros(n_rows)
    for k in np.unique(modal):
        rows = np.flatnonzero(modal == k)
        start[rows] = _ops_epsilon(np.full(rows.size, float(delta)), mu[rows, k],
                                   r[rows, k], np.full(rows.size, gamma[k]), "both")
    return epsilon_from_delta(tails, delta, n_rows, start=np.where(np.isfinite(start), start, 0.0))


# ---------------------------------------------------------------------------
# Objective perturbation for ridge (doc/mechanisms/objective_perturbation.rst)
# ---------------------------------------------------------------------------
#
# The release is theta = H^{-1}(g - b), b ~ N(0, sigma^2 I).  With a = ||x||^2,
# mu = x^T H^{-1} x, w = x^T H^{-2} x, r the residual (all on the smaller data
# set), u = x^T b and v = x^T H^{-1} b, the loss is
#     L = -log(1 + mu) + (r + v) u / sigma^2 + a (r + v)^2 / (2 sigma^2).
# Standardise: E = sqrt(a) (r + v) / sigma and zeta = u / (sigma sqrt(a)), so
# under P   L = -log(1 + mu) + E zeta + E^2 / 2,  with E ~ N(m0, a w),
#           zeta ~ N(0, 1), Cov(E, zeta) = mu, m0 = sqrt(a) r / sigma.
# Under Q, theta ~ N(theta_hat', sigma^2 H'^{-2}) with H' = H + x x^T; with
# b' = g' - H' theta ~ N(0, sigma^2 I), b = b' - x e where e = y_z - x^T theta
# = (r + x^T H^{-1} b') / (1 + mu) (Sherman-Morrison: H'^{-1} x = H^{-1} x /
# (1 + mu)).  The same standardisation of (x^T b', x^T H^{-1} b') gives
# under Q   L = -log(1 + mu) + E zeta - E^2 / 2,  E = (m0 + sqrt(a w) z1) / (1 + mu),
# with (z1, zeta) distributed exactly as under P.
# Split z1 = rho zeta + sqrt(1 - rho^2) zeta_perp (rho = mu / sqrt(a w)), with
# zeta_perp ~ N(0, 1) independent of zeta.  Given zeta_perp,
# alpha = m0 + s_perp zeta_perp (s_perp^2 = a w - mu^2 >= 0, Cauchy-Schwarz)
# and E = alpha + mu zeta, so L is a quadratic in zeta alone:
#     P:  L + log(1 + mu) = kappa zeta^2 + alpha (1 + mu) zeta + alpha^2 / 2,
#     Q:  L + log(1 + mu) = (kappa zeta^2 + alpha zeta - alpha^2 / 2) / (1 + mu)^2,
# kappa = mu (2 + mu) / 2.  The inner probability is a closed form in Phi; the
# outer expectation over zeta_perp is a Gauss-Hermite sum.  The loss therefore
# depends on a row only through (m0, mu, s_perp), and on sigma only through m0.
# Conditioning on zeta_perp (not on E or u) keeps the outer integrand smooth
# in the common regime s_perp -> 0 (H close to isotropic), where it becomes
# constant and the rule exact.

# Outer expectation over zeta_perp ~ N(0, 1) by probabilists' Gauss-Hermite
# rules of increasing order 2, 3, 6, 12, 24, then 96 for the rows that never
# stop; the error of a rule is estimated by its difference from the previous
# one (the finer rule's error is of higher order).  When delta(eps) itself is
# wanted, a row stops once both probabilities agree to _GH_RTOL relative.  In
# the search for eps(delta) only the comparison with the target matters, and
# the error is controlled on D = A - e^eps B, whose cancellation makes relative
# agreement of A and B far too strict (D's error is estimated by the larger of
# its last two differences between rules): a row stops when D is above the target
# by twice the estimated error (an error there can only make the reported eps
# larger), below it by _GH_BELOW_MARGIN times that error (the estimate can be
# several times too small when the nodes have not yet resolved the tails),
# or when D is known to _GH_DTOL times the target; the search then aims below
# the target by that much, so that the reported eps stays an upper bound.  A
# "below" verdict also needs A to be resolved (positive, agreeing to
# _GH_ARTOL): when the event's mass lies beyond the nodes of two small rules,
# both return A ~ 0 and would agree.  (B's mass can be missed without harm:
# it only makes D larger.)  Typical rows stop at 3 nodes (sigma ~ 1) or 6 to
# 12 (sigma calibrated for a budget, residuals ~ 1e-4 sigma).  The accuracy
# of the scheme against adaptive quadrature and against the 200-point rule
# is checked in the tests.
def _gh_rule(n):
    x, w = np.polynomial.hermite_e.hermegauss(n)
    return x, w / w.sum()


_GH_LADDER = [_gh_rule(n) for n in (2, 3, 6, 12, 24, 96)]
_GH_RTOL = 1e-10
_GH_DTOL = 1e-10
_GH_AIM = 2e-6
_GH_ARTOL = 1e-3
_GH_BELOW_MARGIN = 100.0


def _quadratic_roots(kappa, b, c, root_d):
    """Roots lo <= hi of kappa z^2 + b z + c with sqrt(discriminant) ``root_d`` > 0.

    The cancellation-free form: q = -(b + sign(b) root_d) / 2, roots q / kappa
    and c / q, exact also when kappa is tiny (one root runs off to infinity).
    """
    q = -0.5 * (b + np.where(b >= 0, root_d, -root_d))
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        one, two = q / kappa, c / q
    return np.minimum(one, two), np.maximum(one, two)


def _objpert_inner(t, m0, mu, s_perp, nodes, sides, above):
    """P(L > t | zeta_perp) (``above``) or P(L < t | zeta_perp) at the nodes,
    one array for each side in ``sides`` (the two share the discriminant).

    Linear scale: ``ndtr`` is relatively accurate in its lower tail, and only
    probabilities below ~1e-300 (epsilons in the hundreds) underflow to 0,
    which can only make a reported epsilon larger.
    """
    kappa = (mu * (2.0 + mu) / 2.0)[:, None]
    alpha = m0[:, None] + s_perp[:, None] * nodes
    scale = (1.0 + mu)[:, None]
    level = (t + np.log1p(mu))[:, None]  # threshold on L + log(1 + mu)
    disc = alpha**2 + 4.0 * kappa * level
    real = disc > 0
    root_d = np.sqrt(np.where(real, disc, 1.0))
    out = []
    for side in sides:
        if side == "P":
            lo, hi = _quadratic_roots(kappa, alpha * scale, 0.5 * alpha**2 - level, root_d)
        else:  # the Q form times (1 + mu)^2; its discriminant is (1 + mu)^2 disc
            lo, hi = _quadratic_roots(
                kappa, alpha, -0.5 * alpha**2 - level * scale**2, root_d * scale
            )
        if above:  # outside the roots; everything when there are none
            out.append(np.where(real, ndtr(lo) + ndtr(-hi), 1.0))
        else:  # between the roots, on the side of zero with the thinner tails
            flip = lo > 0
            mass = np.where(flip, ndtr(-lo) - ndtr(-hi), ndtr(hi) - ndtr(lo))
            out.append(np.where(real, mass, 0.0))
    return out


def _objpert_log_probs(eps, m0, mu, s_perp, sides, above, target=None, start=np.inf):
    """(log A, log B): the probabilities of L > eps (``above``) or L < -eps
    under ``sides`` = (side of A, side of B), with the stopping rules above;
    ``target`` is the delta the search compares D = A - e^eps B with, and
    a rule with a node beyond ``start`` is known to resolve A."""
    t = eps if above else -eps

    start = np.broadcast_to(start, m0.shape)

    def rule(k, nodes, weights):
        args = (t[k], m0[k], mu[k], s_perp[k], nodes)
        return [inner @ weights for inner in _objpert_inner(*args, sides, above)]

    a, b = rule(slice(None), *_GH_LADDER[0])
    pending = np.arange(m0.size)
    last_change = np.zeros(m0.size)
    for (coarse, _), (nodes, weights) in pairwise(_GH_LADDER):
        if pending.size == 0:
            break
        a_new, b_new = rule(pending, nodes, weights)
        a_change, b_change = np.abs(a_new - a[pending]), np.abs(b_new - b[pending])
        if target is None:
            agree = (
                (a_change <= _GH_RTOL * a_new) & (a_new > 0)
                & (b_change <= _GH_RTOL * b_new) & (b_new > 0)
            )
        else:
            with np.errstate(over="ignore", invalid="ignore"):  # eps in the hundreds
                growth = np.exp(eps[pending])
                d_new = a_new - growth * b_new
                d_change = np.abs(d_new - (a[pending] - growth * b[pending]))
            # Two rules can agree on D by a coincidence of A's and B's
            # errors: D's error is estimated by the last two differences.
            d_change, last_change[pending] = (
                np.maximum(d_change, last_change[pending]), d_change
            )
            seen = start[pending] <= coarse[-1]
            resolved = seen | ((a_new > 0) & (a_change <= _GH_ARTOL * a_new))
            # the verdict against the target cannot flip, or D is accurate
            gap = d_new - target[pending]
            high = gap > 2.0 * d_change
            low = -gap > _GH_BELOW_MARGIN * d_change
            accurate = d_change <= _GH_DTOL * target[pending]
            agree = high | (resolved & (low | accurate))
        a[pending], b[pending] = a_new, b_new
        pending = pending[~agree]
    with np.errstate(divide="ignore"):
        return np.log(a), np.log(b)


def _objpert_tails(m0, mu, s_perp, target=None):
    """Tails of the objective-perturbation loss for rows (m0, mu, s_perp),
    accurate enough to compare delta with ``target`` (per row) if given."""

    def remove(eps, idx):  # delta_PQ: P(L > eps) - e^eps Q(L > eps)
        args = (eps, m0[idx], mu[idx], s_perp[idx])
        return _objpert_log_probs(
            *args, ("P", "Q"), True, None if target is None else target[idx]
        )

    def add(eps, idx):  # delta_QP: Q(L < -eps) - e^eps P(L < -eps)
        args = (eps, m0[idx], mu[idx], s_perp[idx])
        if target is None:
            return _objpert_log_probs(*args, ("Q", "P"), False)
        # Given zeta_perp, L < -eps needs |alpha| > edge (real roots), and
        # the inner probability grows with |alpha| beyond it: A's support
        # starts |zeta_perp| = (edge - |m0|) / s_perp standard deviations out.
        # Once the coarser of two rules has a node there, A cannot be missed,
        # while its kink at the edge makes A itself converge slowly (D
        # converges fast).
        kappa = mu[idx] * (2.0 + mu[idx]) / 2.0
        edge = 2.0 * np.sqrt(np.maximum(kappa * (eps - np.log1p(mu[idx])), 0.0))
        gap = edge - np.abs(m0[idx])
        with np.errstate(divide="ignore", invalid="ignore"):
            start = np.where(gap <= 0, -np.inf, gap / s_perp[idx])
        return _objpert_log_probs(*args, ("Q", "P"), False, target[idx], start)

    return {"remove": remove, "add": add}


def _objpert_setup(norm2, mu, inverse_norm2, r, sigma, direction, target=None):
    # x = 0 leaves the objective unchanged (delta = 0); infinite leverage or
    # residual has no finite epsilon (delta = 1).
    zero = (norm2 <= 0) | (mu <= 0)
    infinite = ~np.isfinite(mu) | ~np.isfinite(r) | ~np.isfinite(inverse_norm2)
    safe = zero | infinite
    mu = np.where(safe, 1.0, mu)
    m0 = np.where(safe, 0.0, np.sqrt(norm2) * r / sigma)
    # a w >= mu^2 by Cauchy-Schwarz; clip the rounding error of nearly parallel x, H^{-1} x
    s_perp = np.where(safe, 0.0, np.sqrt(np.maximum(norm2 * inverse_norm2 - mu**2, 0.0)))
    tails = _objpert_tails(m0, mu, s_perp, target)
    # L is close to a Gaussian mechanism's loss with ratio s, s^2 = E[E^2] =
    # m0^2 + a w: its epsilon is the first guess of the search
    guess_ratio = np.sqrt(m0**2 + s_perp**2 + mu**2)
    return _pick(tails, direction), zero, infinite, guess_ratio


def objpert_delta(eps, norm2, mu, inverse_norm2, r, sigma, direction="both"):
    """Tight delta(eps) of objective perturbation for ridge (doc/mechanisms/objective_perturbation.rst).

    The release is argmin 1/2 ||y - X theta||^2 + alpha/2 ||theta||^2 + b^T theta
    with b ~ N(0, sigma^2 I), that is N(theta_hat, sigma^2 H^{-2}).

    Parameters
    ----------
    eps : float or array-like
        Privacy level(s) at which to evaluate.
    norm2 : float or array-like
        ||x||^2 of the target.
    mu : float or array-like
        Leverage x^T H^{-1} x w.r.t. the smaller data set.
    inverse_norm2 : float or array-like
        x^T H^{-2} x = ||H^{-1} x||^2 w.r.t. the smaller data set.
    r : float or array-like
        Residual y_z - x^T theta_hat on the smaller data set.
    sigma : float or array-like
        Standard deviation of the objective's linear noise b.
    direction : {"both", "remove", "add"}, default="both"
        "remove" is delta_PQ, "add" is delta_QP, "both" their maximum.

    Returns
    -------
    delta : float or ndarray
        Broadcast shape of the inputs.
    """
    shape, (eps, *stats) = _flat(eps, norm2, mu, inverse_norm2, r, sigma)
    tails, zero, infinite, _ = _objpert_setup(*stats, direction)
    out = hockey_stick(tails, eps, eps.size)
    out[zero] = 0.0
    out[infinite] = 1.0
    return _shaped(out, shape)


def objpert_epsilon(delta, norm2, mu, inverse_norm2, r, sigma, direction="both"):
    """Tight eps(delta) of objective perturbation, +inf where none exists.

    Same parameters as :func:`objpert_delta`, with ``delta`` in (0, 1).
    """
    shape, (delta, *stats) = _flat(delta, norm2, mu, inverse_norm2, r, sigma)
    tails, zero, infinite, guess_ratio = _objpert_setup(*stats, direction, target=delta)
    start = gaussian_epsilon(delta, guess_ratio)
    # The tails know delta to _GH_DTOL * delta near the target, and even the
    # 96-point rule was seen off by up to 8e-7 relative (against a 200-point
    # rule; tiny mu, s_perp >> m0): aim _GH_AIM below the target, so that the
    # true delta at the reported eps is at most delta.
    out = epsilon_from_delta(tails, delta * (1.0 - _GH_AIM), delta.size, start)
    out[zero] = 0.0
    out[infinite] = np.inf
    return _shaped(out, shape)
