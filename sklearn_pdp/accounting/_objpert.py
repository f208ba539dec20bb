"""Objective perturbation for ridge (:doc:`/mechanisms/objective_perturbation`):
the tight loss by Gauss-Hermite quadrature, the data-independent guarantee,
and the calibration (the automatic ridge and the noise for a budget).

The loss of a row depends on it only through ``m0 = ||x|| r / sigma``, its
leverage ``mu`` and ``s_perp = sqrt(||x||^2 x^T H^{-2} x - mu^2)``; given
one standard normal ``zeta_perp`` it is a quadratic in another, ``zeta``,
whose tails are closed forms in Phi, and the expectation over ``zeta_perp``
is a Gauss-Hermite sum (the derivation and the stopping rules are on the
mechanism's page).
"""

from functools import lru_cache
from itertools import pairwise

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import ndtr

from ..utils._docstrings import fill_doc
from ._domain import PREDICTION_NOISE, domain_bounds, quiet_ridge
from ._engine import PrivacyLoss, _pick, largest_root
from ._ops import ops_epsilon


# Outer expectation over zeta_perp by probabilists' Gauss-Hermite rules of
# increasing order; a row stops once the comparison with the target is
# settled (stopping rules: the mechanism's page, "Quadrature").
def _gh_rule(n):
    x, w = np.polynomial.hermite_e.hermegauss(n)
    return x, w / w.sum()


_GH_LADDER = [_gh_rule(n) for n in (2, 3, 6, 12, 24, 96)]
# The added person's event needs |alpha| beyond an edge: its probabilities
# vanish like sqrt(distance) at the two kinks zeta_perp = (+-edge - |m0|) /
# s_perp, which Gauss-Hermite resolves so slowly that even 96 points were
# seen off by 1% of delta (both signs). Rows with a kink within _KINK_REACH
# instead integrate each side of the gap with z = kink +- u^2 (smooth in u)
# by Gauss-Legendre of the ladder's orders in u, over _KINK_SPAN beyond the
# kink or 0 (the normal mass left out is below 2e-33).
_GL_LADDER = [np.polynomial.legendre.leggauss(n) for n in (2, 3, 6, 12, 24, 96)]
_KINK_REACH = 20.0
_KINK_SPAN = 12.0
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


def _split_rule(kinks, order):
    """Per-row nodes and weights (rows, 2 n) of the Gauss-Legendre rung
    ``order`` on both sides of the gap between ``kinks`` = (left, right)."""
    x, w = _GL_LADDER[order]
    parts = []
    for kink, sign in zip(kinks, (-1.0, 1.0)):
        # from the kink away from the gap, to _KINK_SPAN beyond it or 0
        length = np.maximum(sign * kink, 0.0) + _KINK_SPAN - sign * kink
        half = 0.5 * np.sqrt(length)[:, None]
        u = half * (x + 1.0)
        z = kink[:, None] + sign * u * u
        parts.append((z, 2.0 * u * half * w * np.exp(-0.5 * z * z) / np.sqrt(2.0 * np.pi)))
    return tuple(np.concatenate(pair, axis=1) for pair in zip(*parts))


def _objpert_log_probs(eps, m0, mu, s_perp, sides, above, target=None):
    """(log A, log B): the probabilities of L > eps (``above``) or L < -eps
    under ``sides`` = (side of A, side of B), with the stopping rules of
    :doc:`/mechanisms/objective_perturbation`; ``target`` is the delta the
    search compares D = A - e^eps B with."""
    t = eps if above else -eps
    start = np.full(m0.shape, np.inf)
    split = np.zeros(m0.shape, dtype=bool)
    if not above:
        # the kinks of the added person's event (none when edge = 0)
        kappa = mu * (2.0 + mu) / 2.0
        edge = 2.0 * np.sqrt(np.maximum(kappa * (eps - np.log1p(mu)), 0.0))
        with np.errstate(divide="ignore", invalid="ignore"):
            kinks = ((-edge - np.abs(m0)) / s_perp, (edge - np.abs(m0)) / s_perp)
        split = (edge > 0) & (s_perp > 0) & (
            (np.abs(kinks[0]) < _KINK_REACH) | (np.abs(kinks[1]) < _KINK_REACH))
        # A's support starts at the right kink: once a Gauss-Hermite rule
        # has a node there A cannot be missed; the split rule's few nodes
        # can miss A's peak far out (A must then agree between rules)
        start = np.where(split, np.inf, np.where(edge <= np.abs(m0), -np.inf, kinks[1]))
        # the loss is even in alpha = m0 + s_perp zeta_perp: the split
        # rule's kinks are those of |m0|
        m0 = np.where(split, np.abs(m0), m0)

    def rule(k, order):
        k = np.arange(m0.size)[k]
        use = split[k]
        out = [np.empty(k.size), np.empty(k.size)]
        for mask in (~use, use):
            rows = k[mask]
            if rows.size == 0:
                continue
            args = (t[rows], m0[rows], mu[rows], s_perp[rows])
            if mask is use:
                nodes, weights = _split_rule((kinks[0][rows], kinks[1][rows]), order)
                probs = [(p * weights).sum(axis=1)
                         for p in _objpert_inner(*args, nodes, sides, above)]
            else:
                nodes, weights = _GH_LADDER[order]
                probs = [p @ weights for p in _objpert_inner(*args, nodes, sides, above)]
            for whole, part in zip(out, probs):
                whole[mask] = part
        return out

    a, b = rule(slice(None), 0)
    pending = np.arange(m0.size)
    last_change = np.full(m0.size, np.inf)
    for order, ((coarse, _), _) in enumerate(pairwise(_GH_LADDER), start=1):
        if pending.size == 0:
            break
        a_new, b_new = rule(pending, order)
        a_change, b_change = np.abs(a_new - a[pending]), np.abs(b_new - b[pending])
        with np.errstate(over="ignore", invalid="ignore"):  # eps in the hundreds
            growth = np.exp(eps[pending])
            d_new = a_new - growth * b_new
            d_change = np.abs(d_new - (a[pending] - growth * b[pending]))
        if target is None:
            # D = A - e^eps B itself, not only A and B: far below A the
            # difference loses the digits that A and B agree on
            agree = (
                (a_change <= _GH_RTOL * a_new) & (a_new > 0)
                & (b_change <= _GH_RTOL * b_new) & (b_new > 0)
                & (d_change <= _GH_RTOL * np.abs(d_new))
            )
        else:
            # Two rules can agree on D by a coincidence of A's and B's
            # errors: D's error is estimated by the last two differences, so
            # no verdict below the target (the optimistic side) rests on the
            # first difference alone (two coarse rules can both miss A).
            both, last_change[pending] = (
                np.maximum(d_change, last_change[pending]), d_change
            )
            seen = start[pending] <= coarse[-1]
            resolved = seen | ((a_new > 0) & (a_change <= _GH_ARTOL * a_new))
            # the verdict against the target cannot flip, or D is accurate
            gap = d_new - target[pending]
            # (the split rule's coarse rungs can agree on a D twice too
            # high: an "above" verdict there also rests on two differences)
            high = gap > 2.0 * np.where(split[pending], both, d_change)
            low = -gap > _GH_BELOW_MARGIN * both
            accurate = both <= _GH_DTOL * target[pending]
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
        return _objpert_log_probs(
            *args, ("Q", "P"), False, None if target is None else target[idx]
        )

    return {"remove": remove, "add": add}


class ObjPertLoss(PrivacyLoss):
    """Loss of objective perturbation for targets with ||x||^2 = ``norm2``,
    leverage ``mu``, x^T H^{-2} x = ``inverse_norm2`` and residual ``r`` (all
    on the smaller data set) at noise ``sigma``."""

    def __init__(self, norm2, mu, inverse_norm2, r, sigma, direction="both"):
        # x = 0 leaves the objective unchanged (delta = 0); infinite leverage or
        # residual has no finite epsilon (delta = 1).
        zero = (norm2 <= 0) | (mu <= 0)
        infinite = ~np.isfinite(mu) | ~np.isfinite(r) | ~np.isfinite(inverse_norm2)
        safe = zero | infinite
        mu = np.where(safe, 1.0, mu)
        self.m0 = np.where(safe, 0.0, np.sqrt(norm2) * r / sigma)
        # a w >= mu^2 by Cauchy-Schwarz; clip the rounding error of nearly parallel x, H^{-1} x
        self.s_perp = np.where(safe, 0.0, np.sqrt(np.maximum(norm2 * inverse_norm2 - mu**2, 0.0)))
        self.mu, self.direction = mu, direction
        super().__init__(_objpert_tails(self.m0, mu, self.s_perp), zero, infinite, direction)

    def first_guess(self, delta):
        # given zeta_perp the loss is OPS's with leverage mu (2 + mu): start
        # from OPS's epsilon at the same second moment (the mechanism's page)
        mu = self.mu
        lev = mu * (2.0 + mu)
        r = (1.0 + mu) * np.hypot(self.m0, self.s_perp) / np.sqrt(lev)
        return ops_epsilon(delta * (1.0 - self.aim), lev, r, 1.0, self.direction)

    # the quadrature's error: aim below the target, so that the true delta
    # at the reported eps is at most delta
    aim = _GH_AIM

    def search_tails(self, delta):
        # accurate enough to compare delta with the target, row by row
        return _pick(_objpert_tails(self.m0, self.mu, self.s_perp, target=delta), self.direction)


@fill_doc
def objpert_delta(eps, norm2, mu, inverse_norm2, r, sigma, direction="both"):
    """Tight delta(eps) of objective perturbation for ridge.

    See :doc:`/mechanisms/objective_perturbation`.

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
    {direction_delta}
    """
    return ObjPertLoss.delta_of(eps, norm2, mu, inverse_norm2, r, sigma, direction=direction)


def objpert_epsilon(delta, norm2, mu, inverse_norm2, r, sigma, direction="both"):
    """Tight eps(delta) of objective perturbation, +inf where none exists.

    Same parameters as :func:`objpert_delta`, with ``delta`` in (0, 1).
    """
    return ObjPertLoss.epsilon_of(delta, norm2, mu, inverse_norm2, r, sigma, direction=direction)


# Fractions of the arc searched for the worst case (its end is mu = 0, where
# the loss is smallest).
_ARC = np.linspace(0.0, 1.0 - 1e-9, 17)


def objpert_dp_epsilon(delta, alpha, sigma, n_samples, intercept=False,
                       min_samples=None, *, residual=None, refine=True, lower=0.0):
    """Data-independent epsilon of objective perturbation.

    See :doc:`/mechanisms/objective_perturbation`.

    The worst exact loss over the statistics the domain allows
    (:func:`domain_bounds`): ||x||^2 <= N, mu <= mu_max, x^T H^{-2} x <= w_max,
    mu^2 <= ||x||^2 x^T H^{-2} x and |r| <= r_max. The loss depends on the
    row only through m0 = ||x|| r / sigma, mu and
    s = sqrt(||x||^2 x^T H^{-2} x - mu^2), and it grows with |m0| and with s
    at fixed mu (checked in the tests), so the worst case lies at
    ||x||^2 = N, |r| = r_max and on the arc mu^2 + s^2 = N w_max with
    mu <= mu_max (without intercept mu_max = sqrt(N w_max) = 1/alpha: the
    whole quarter circle). The arc's angle is searched on a grid of 17
    points, then by a bounded maximisation around the best of them,
    reporting the largest value seen. No guarantee without ridge, nor with
    an intercept and a single row.
    ``residual`` overrides r_max (0 gives the floor of the loss as sigma
    grows); ``refine=False`` skips the maximisation (a lower value, used
    only inside the calibration, which then checks the refined one).
    ``lower`` > 0: the worst case over the data sets whose slopes' matrix
    has lambda_min >= ``lower`` (the bounds of :func:`domain_bounds`).
    """
    if alpha <= 0 and lower <= 0:
        return np.inf
    bound = domain_bounds(n_samples, alpha, intercept, min_samples, lower)
    if not np.isfinite(bound["leverage"]):
        return np.inf
    norm2 = bound["norm2"]
    radius = np.sqrt(norm2) * bound["inverse_norm"]
    residual = bound["residual"] if residual is None else residual
    # angles from the axis mu: the arc starts where mu = mu_max
    first = np.arccos(min(bound["leverage"] / radius, 1.0))

    def arc(t):
        angle = first + (0.5 * np.pi - first) * t
        return objpert_epsilon(
            delta, norm2, radius * np.cos(angle), radius**2 / norm2, residual, sigma
        )

    grid = arc(_ARC)
    best = int(np.argmax(grid))
    if not refine:
        return float(grid[best])
    lo, hi = _ARC[max(best - 1, 0)], _ARC[min(best + 1, _ARC.size - 1)]
    refined = minimize_scalar(
        lambda t: -arc(t), bounds=(lo, hi), method="bounded", options={"xatol": 1e-5},
    )
    return float(max(grid[best], -refined.fun))


# The "auto" rule: the share of the budget the loss floor may take, the
# n * epsilon below which alpha grows as (_FEW / (n * epsilon))^3, and the
# cap of that growth (all chosen by measurement: the mechanism's page).
_FLOOR_SHARE = 0.25
_FEW = 1000.0
_MAX_GROWTH = 1000.0


@lru_cache(maxsize=64)
def objpert_auto_alpha(epsilon, delta, n_samples, n_features, intercept=False,
                       target=PREDICTION_NOISE, refine=0):
    """The ridge strength of ``alpha="auto"``, from public quantities only.

    The loss-floor rule (:func:`_floor_alpha`), doubled until the noise the
    release adds along a unit slope direction, ``sigma^2 / alpha^2``
    (theta - theta_hat = -H^{-1} b), is at most ``target``
    (``PREDICTION_NOISE``, :func:`quiet_ridge`), then the last doubling
    bisected ``refine`` times on the log scale (the smallest step that meets
    it; the noise falls with alpha). ``n_features`` is part of the signature
    of the rule; it does not use it.
    """
    def noise(alpha):
        try:
            return (objpert_noise_scale(epsilon, delta, float(alpha), n_samples,
                                        intercept) / alpha) ** 2
        except ValueError:
            return np.inf

    floor = _floor_alpha(epsilon, delta, n_samples, intercept)
    alpha = quiet_ridge(noise, floor, target=target)
    if alpha <= floor or noise(alpha) > target:
        return float(alpha)
    low = alpha / 2.0  # above the target: quiet_ridge went on from it
    for _ in range(refine):
        middle = np.sqrt(low * alpha)
        if noise(middle) <= target:
            alpha = middle
        else:
            low = middle
    return float(alpha)


def _floor_alpha(epsilon, delta, n_samples, intercept):
    """The floor of the loss (its worst case at zero residual, which no
    sigma removes) falls with alpha towards its limit f_inf (0 without
    intercept; with one, the unpenalised intercept's leverage 1/(n - 1)
    remains). alpha is where the floor is f_inf + epsilon / 4, times
    ``(1000 / (n epsilon))^3`` when n epsilon < 1000 (at most 1000 times):
    with few data the slopes cannot be learnt and a large alpha shrinks them
    to 0 (the intercept is not penalised). A size whose f_inf is above 3/4
    of the budget is refused.
    """
    def floor(alpha):
        return objpert_dp_epsilon(
            delta, alpha, 1.0, n_samples, intercept, residual=0.0, refine=False
        )

    limit = floor(np.inf) if intercept else 0.0
    if not limit < (1.0 - _FLOOR_SHARE) * epsilon:
        raise ValueError(
            f"n_samples={n_samples} is too few for objective perturbation with an "
            f"intercept at epsilon={epsilon}, delta={delta}: it loses at least "
            f"{limit:.4g} however large alpha is. Use more samples or a larger "
            "epsilon."
        )
    target = limit + _FLOOR_SHARE * epsilon
    # the smallest alpha whose floor is within the target (the floor falls with alpha)
    log_alpha = -largest_root(lambda t: floor(np.exp(-t)) - target, xtol=1e-4, lowest=-40.0)
    return np.exp(log_alpha) * np.clip((_FEW / (n_samples * epsilon)) ** 3, 1.0, _MAX_GROWTH)


@lru_cache(maxsize=64)
def objpert_noise_scale(epsilon, delta, alpha, n_samples, intercept=False, lower=0.0):
    """Smallest sigma (to 1e-7 relative) with ``objpert_dp_epsilon <= epsilon``
    (over the data sets with lambda_min >= ``lower``).

    Depends on public quantities only, hence the cache.
    """
    if alpha <= 0 and lower <= 0:
        raise ValueError("An epsilon budget needs alpha > 0; give sigma instead.")
    # The loss stays positive as sigma -> inf (zero residual): its floor.
    floor = objpert_dp_epsilon(delta, alpha, 1.0, n_samples, intercept, residual=0.0,
                               lower=lower)
    if epsilon <= floor * (1 + 1e-6):
        raise ValueError(
            f"epsilon={epsilon} cannot be reached with alpha={alpha} at "
            f"delta={delta} and n_samples={n_samples}: objective perturbation "
            f"loses at least {floor:.4g} however much noise it adds. Increase "
            "alpha or epsilon."
        )

    def excess(log_sigma, refine=False):
        sigma = np.exp(log_sigma)
        return objpert_dp_epsilon(
            delta, alpha, sigma, n_samples, intercept, refine=refine, lower=lower
        ) - epsilon

    # the loss falls with sigma: the largest -log sigma within the budget,
    # verified with the refined worst case (which can exceed the grid's)
    log_sigma = -largest_root(
        lambda t: excess(-t), start=5.0, step=10.0, xtol=1e-7,
        verify=lambda t: excess(-t, refine=True),
    )
    return float(np.exp(log_sigma))
