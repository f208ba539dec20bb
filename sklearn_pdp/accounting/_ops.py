"""One Posterior Sample (:doc:`/mechanisms/ops`): the tight loss, its
calibration (the posterior scaling gamma for a budget, the automatic ridge,
the data-independent guarantee) and the AdaOPS mixture of OPS losses
(:doc:`/mechanisms/adaops`).

Many rows at one delta start from a table: the loss depends on (mu, r,
gamma) only through mu and a = |r| sqrt(gamma mu) (the standardised
residual is m = a / mu), so one table per delta serves every gamma. Its
coordinates are log mu and log(1 + m / ``_RATIO_SCALE``): logarithmic in
m where it is large, linear where it is small, and eps is even in a, so
smooth in both, down to m = 0 (measured: about 1e-11 relative for most rows
of fits, against 1e-8 on a grid in log m of as many nodes). The quick stages
bound each tail by its main normal term (``ndtr``) plus the other, far one,
which a Mills ratio bounds with one ``exp`` where it is negligible (a
standardised residual of a few is enough).
"""

from functools import lru_cache

import numpy as np
from scipy.special import ndtr

from ..utils._docstrings import fill_doc
from ._divergence import (
    log_gauss_mass,
    log_phi,
    mixture_tails,
    normal_tail_bounds,
    prune_columns,
)
from ._domain import domain_bounds, quiet_ridge
from ._engine import PrivacyLoss, largest_root
from ._search import _QUICK_ATOL, _QUICK_RTOL, _ROUNDING, _search
from ._table import _NODE_RTOL
from ._gaussian import _gaussian_guess

_RATIO_SCALE = 0.1
# Far edges of the tails beyond this many deviations past the near one
# are left out of the exact tails (:func:`_log_beyond`).
_FAR_GAP = 20.0
# A far tail is bounded by its Mills ratio where that costs at most this
# fraction of the quick stages' tolerance (times the main term of B).
_FAR_SHARE = 0.05


def _ops_standard(mu, r, gamma):
    """Per-row constants of the standardised OPS loss (see :func:`_ops_tails`)."""
    m_p = np.abs(r) * np.sqrt(gamma / mu)
    grow2 = 1.0 + mu  # (sd_p / sd_q)^2 and (m_p / m_q)^2
    grow = np.sqrt(grow2)
    return {"m_p": m_p, "m_q": m_p / grow, "m_q2": m_p**2 / grow2, "grow": grow,
            "grow2": grow2, "v": gamma * r**2 / grow2, "log1p_mu": np.log1p(mu) / mu,
            "two_over_mu": 2.0 / mu}


def _ops_edges(c, eps, idx, sign):
    """Where L = sign * eps on the standardised scales, at the rows ``idx``:
    ``(p_edge, q_edge, p_far, q_far)``. The event L > eps ("remove",
    ``sign`` 1) is e outside [-root, root]; L < -eps ("add", -1) inside it.
    With rho = root / sd, the P probability of being beyond the near edge
    is Phi(p_edge), p_edge = m_p - rho_p, and beyond the far one
    Phi(-p_far), p_far = m_p + rho_p; the same under Q. The differences
    m - rho are computed as (m^2 - rho^2) / (m + rho), free of cancellation
    (rho and m can be 1e7 times their difference). Where the interval is
    empty (root^2 < 0) all four are +inf: probability 1 outside, 0 inside.
    """
    # k = (sign 2 eps + log(1 + mu)) / mu; rho_p^2 = m_q^2 + k, rho_q = grow rho_p
    k = c["two_over_mu"][idx] * eps
    if sign < 0:
        np.negative(k, out=k)
    k += c["log1p_mu"][idx]
    rho2 = c["m_q2"][idx] + k
    rho_p = np.sqrt(np.maximum(rho2, 0.0))
    v = c["v"][idx]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # m_p^2 - rho_p^2 = v - k, m_q^2 - rho_q^2 = -(v + (1 + mu) k)
        p_far = c["m_p"][idx] + rho_p
        q_far = c["m_q"][idx] + c["grow"][idx] * rho_p
        p_edge = (v - k) / p_far
        q_edge = c["grow2"][idx] * k
        q_edge += v
        q_edge /= q_far
        np.negative(q_edge, out=q_edge)
    parts = (p_edge, q_edge, p_far, q_far)
    if not np.isfinite(k).all():  # eps = inf: no mass beyond an edge at infinity
        for part in parts[:2]:
            part[np.isnan(part)] = -np.inf
    empty = ~(rho2 > 0)
    if empty.any():
        for part in parts:
            part[empty] = np.inf
    return parts


def _log_beyond(edge, far):
    """log(Phi(edge) + Phi(-far)): the far term only where it can count.

    Where far >= max(_FAR_GAP, |edge| + _FAR_GAP) the Mills ratio puts
    Phi(-far) below exp(-_FAR_GAP^2 / 2) Phi(edge) (and below that
    absolutely), far under the rounding of the sum: ``log_ndtr`` of the far
    edge, half of the cost, is then skipped.
    """
    out = log_phi(edge)
    near = np.flatnonzero(~((far >= _FAR_GAP) & (far >= np.abs(edge) + _FAR_GAP)))
    if near.size:
        out[near] = np.logaddexp(out[near], log_phi(-far[near]))
    return out


def _ops_tails(mu, r, gamma, c=None):
    """Tails of the OPS loss L = -log(1+mu)/2 + gamma/2 (e^2 - r^2/(1+mu)).

    Under P, e ~ N(r, mu/gamma); under Q, e ~ N(r/(1+mu), mu/(gamma (1+mu))).
    Standardised (sd_p = sqrt(mu / gamma), sd_q = sd_p / sqrt(1 + mu)), the
    means are m_p = |r| / sd_p and m_q = m_p / sqrt(1 + mu), and L = eps at
    |e| = root with rho_p^2 = (root / sd_p)^2 = m_q^2 + (2 eps + log(1 + mu)) / mu.
    ``c``: the constants of :func:`_ops_standard`, if already computed.
    """
    c = _ops_standard(mu, r, gamma) if c is None else c

    def remove(eps, idx):  # delta_PQ: P(L > eps) - e^eps Q(L > eps)
        p_edge, q_edge, p_far, q_far = _ops_edges(c, eps, idx, 1.0)
        return _log_beyond(p_edge, p_far), _log_beyond(q_edge, q_far)

    def add(eps, idx):  # delta_QP: Q(L < -eps) - e^eps P(L < -eps)
        p_edge, q_edge, p_far, q_far = _ops_edges(c, eps, idx, -1.0)
        return log_gauss_mass(-q_far, -q_edge), log_gauss_mass(-p_far, -p_edge)

    return {"remove": remove, "add": add}


def _ops_quick(c):
    """The tails of :func:`_ops_tails` as linear-domain bounds for the quick
    stages, from the constants ``c`` of :func:`_ops_standard`: each
    probability is a main normal term (``ndtr``) and a far one, Phi(-far),
    bounded by :func:`normal_tail_bounds` where it is negligible."""

    def quick(eps, idx, target, names):
        out = []
        for name in names:
            sign = 1.0 if name == "remove" else -1.0
            p_edge, q_edge, p_far, q_far = _ops_edges(c, eps, idx, sign)
            if sign > 0:  # P(L > eps), Q(L > eps): beyond either edge
                main_a, main_b = ndtr(p_edge), ndtr(q_edge)
            else:  # Q(L < -eps), P(L < -eps): between the edges
                main_a, main_b = ndtr(-q_edge), ndtr(-p_edge)
            budget = _FAR_SHARE * (_QUICK_RTOL * eps + _QUICK_ATOL) * main_b
            far_p, far_q = normal_tail_bounds(budget, p_far, q_far)
            if sign > 0:
                out.append((main_a + far_p[0], main_a + far_p[1],
                            main_b + far_q[0], main_b + far_q[1]))
            else:  # a difference of terms: its rounding is relative to the main term
                slack_a, slack_b = _ROUNDING * main_a, _ROUNDING * main_b
                out.append((np.maximum(main_a - far_q[1] - slack_a, 0.0),
                            main_a - far_q[0] + slack_a,
                            np.maximum(main_b - far_p[1] - slack_b, 0.0),
                            main_b - far_p[0] + slack_b))
        return out

    return quick


class OPSLoss(PrivacyLoss):
    """Loss of OPS for targets with leverage ``mu`` and residual ``r`` (on the
    smaller data set) at posterior scaling ``gamma``. ``table``: start the
    search of many instances at one delta from a table (module docstring)."""

    def __init__(self, mu, r, gamma, direction="both", table=True):
        # No leverage: the target does not move the posterior (delta = 0).
        # Infinite leverage or residual: no finite epsilon exists (delta = 1).
        # An infinite gamma (no noise, a published window without a bound)
        # reveals a row that moves the posterior: no finite epsilon either.
        zero = mu <= 0
        noiseless = ~np.isfinite(gamma)
        infinite = ~np.isfinite(mu) | ~np.isfinite(r) | (noiseless & ~zero)
        safe = zero | infinite
        self.mu, self.r = np.where(safe, 1.0, mu), np.where(safe, 0.0, r)
        if np.any(noiseless):
            gamma = np.where(noiseless, 1.0, gamma)
        self.gamma, self.direction = gamma, direction
        c = _ops_standard(self.mu, self.r, gamma)
        super().__init__(_ops_tails(self.mu, self.r, gamma, c), zero, infinite, direction,
                         quick=_ops_quick(c), table=table)
        self.standard = c

    def first_guess(self, delta):
        # the Gaussian mechanism whose loss has the same variance,
        # Var_P(L) = mu^2/2 + gamma mu r^2
        mu, r, gamma = self.mu, self.r, self.gamma
        with np.errstate(invalid="ignore", over="ignore"):
            return _gaussian_guess(delta, np.sqrt(mu**2 / 2 + gamma * mu * r**2))

    table_grid = (1 / 32, 5)

    def table_coords(self, delta):
        # m = a / mu = |r| / sd_p
        ratio = np.log1p(self.standard["m_p"] / _RATIO_SCALE)
        return _ops_nodes, (delta, self.direction), (np.log(self.mu), ratio)


def _ops_nodes(delta, direction, log_mu, ratio):
    # gamma = 1: r = a / sqrt(mu) = sqrt(mu) m (a negative r below the grid's
    # m = 0 mirrors it: the loss is even in r)
    mu = np.exp(log_mu)
    r = np.sqrt(mu) * _RATIO_SCALE * np.expm1(ratio)
    return OPSLoss.epsilon_of(delta, mu, r, 1.0, direction=direction, table=False,
                              rtol=_NODE_RTOL)


@fill_doc
def ops_delta(eps, mu, r, gamma, direction="both"):
    """Tight delta(eps) of One Posterior Sample (:doc:`/mechanisms/ops`).

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
    {direction_delta}
    """
    return OPSLoss.delta_of(eps, mu, r, gamma, direction=direction)


def ops_epsilon(delta, mu, r, gamma, direction="both"):
    """Tight eps(delta) of One Posterior Sample, +inf where none exists.

    Same parameters as :func:`ops_delta`, with ``delta`` in (0, 1).
    """
    return OPSLoss.epsilon_of(delta, mu, r, gamma, direction=direction)


def ops_gamma(epsilon, delta, mu, r, xtol=1e-12):
    """Largest gamma for which OPS at leverage ``mu`` and residual ``r`` is
    (epsilon, delta) (both directions, exact loss of :doc:`/mechanisms/ops`).

    The loss grows with gamma, so a root search on log gamma (to ``xtol``)
    finds the boundary; the result is then stepped down until the exact
    epsilon at it is verified to be within ``epsilon``. Used at the worst
    corner of a region of (mu, |r|), this calibrates OPS for every target in
    the region.
    """

    def excess(log_gamma):
        return ops_epsilon(delta, mu, r, np.exp(log_gamma)) - epsilon

    try:
        # as gamma -> 0 the loss keeps a non-degenerate limit (gamma e^2 does
        # not vanish): below the limit's epsilon no gamma is private enough
        log_gamma = largest_root(excess, start=5.0, step=10.0, xtol=xtol, lowest=-60.0)
    except ValueError:
        raise ValueError(
            f"no gamma > 0 makes OPS ({epsilon}, {delta})-DP at leverage "
            f"{mu}: epsilon is below the loss's limit as gamma -> 0."
        ) from None
    return float(np.exp(log_gamma))




# Multiplier of the public ridge rule (d + 1) / epsilon, chosen on the utility
# grid: see "The default ridge" in the OPS page.
_AUTO_ALPHA_SCALE = 100.0


@lru_cache(maxsize=64)
def ops_auto_alpha(epsilon, delta, n_samples, n_features, intercept):
    """A data-independent ridge for OPS: a function of public quantities only.

    ``OPSRegressor``'s ``alpha="auto"`` was this rule; it now chooses the
    ridge privately from the data (AdaOPS's release). The rule stays for
    experts who want a ridge fixed in advance (``alpha=ops_auto_alpha(...)``).

    ``100 (d + 1) / epsilon``. OPS is calibrated at the worst leverage
    ``~ 4 / alpha`` and residual ``~ sqrt(n / alpha)`` of the domain, so
    its noise falls steeply with alpha; a ridge of this size (measured on the
    utility grid against multiples of n and of sqrt(n)) shrinks the slopes,
    never the intercept. Raised, if needed, until the loss limit as
    gamma -> 0 (the posterior covariance itself reveals the leverage) is at
    most half the budget, so that the budget can be met; then doubled until
    the posterior noise along a unit slope direction, ``1 / (alpha gamma)``,
    is at most ``PREDICTION_NOISE`` (:func:`quiet_ridge`), so that the
    release is never much worse than the mean predictor where the labels
    vary little.
    """
    alpha = _AUTO_ALPHA_SCALE * (n_features + 1) / epsilon

    def excess(log_inverse):  # non-decreasing in -log alpha
        return ops_dp_epsilon(delta, np.exp(-log_inverse), 1e-12, n_samples, intercept) - epsilon / 2

    if excess(-np.log(alpha)) > 0:
        try:
            alpha = np.exp(-largest_root(
                excess, start=-np.log(alpha), step=1.0, xtol=1e-6, lowest=-np.log(alpha) - 20.0
            ))
        except ValueError:  # the intercept's 1/(n - 1) alone exceeds it
            raise ValueError(
                f"OPSRegressor cannot meet epsilon={epsilon} with n_samples={n_samples}"
                " and an intercept: too few samples (a function of the public size)."
            ) from None

    def noise(alpha):  # posterior variance along a unit slope direction
        corner = domain_bounds(n_samples, alpha, intercept)
        try:
            return 1.0 / (alpha * ops_gamma(epsilon, delta, corner["leverage"],
                                            corner["residual"], xtol=1e-6))
        except ValueError:
            return np.inf

    return float(quiet_ridge(noise, alpha))


def ops_dp_epsilon(delta, alpha, gamma, n_samples, intercept=False, min_samples=None):
    """Data-independent OPS epsilon for rows in the unit ball (:doc:`/mechanisms/ops`).

    The loss grows in the leverage and the |residual|, so the corner of their
    bounds over the domain (:func:`domain_bounds`) is the worst case. No
    guarantee without ridge.
    """
    if alpha <= 0:
        return np.inf
    corner = domain_bounds(n_samples, alpha, intercept, min_samples)
    return ops_epsilon(delta, corner["leverage"], corner["residual"], gamma)


def ops_mixture_epsilon(delta, mu, r, gamma, log_p, log_q, log_p_rest, log_q_rest):
    """Tight eps(delta) of releasing an index k, then OPS with k's parameters.

    The release (k, theta): k is drawn with probabilities p_k on the smaller
    data set and q_k on the larger, then theta is one OPS draw whose row
    statistics (leverage ``mu[:, k]``, residual ``r[:, k]``) and scaling
    ``gamma[k]`` depend on k (AdaOPS, :doc:`/mechanisms/adaops`, where k is
    a pair of cells): the mixture of :func:`~._divergence.mixture_tails`,
    solved by the same search as every mechanism here. The indices left out
    count as revealing everything, so the result is an upper bound, exact up
    to them.

    Parameters
    ----------
    delta : float
    mu, r : ndarray of shape (n_rows, n_indices)
        OPS statistics of each row under each index (on the smaller data set).
    gamma : ndarray of shape (n_indices,)
    log_p, log_q : ndarray of shape (n_rows, n_indices)
        Log probabilities of the indices kept, per row (-inf on both for an
        index a row leaves out: its probability is then in its rest).
    log_p_rest, log_q_rest : ndarray of shape (n_rows,)

    Returns
    -------
    eps : ndarray of shape (n_rows,)
        ``inf`` where no finite epsilon exists.
    """
    # the indices too light to move the result
    gamma = np.asarray(gamma, dtype=float)
    keep, pruned_p, pruned_q = prune_columns(log_p, log_q, float(np.min(delta)))
    if not keep.all():
        mu, r, log_p, log_q = (a[:, keep] for a in (mu, r, log_p, log_q))
        gamma = gamma[keep]
    n_rows = mu.shape[0]
    # a row whose target does not move the posterior (mu = 0, no intercept and
    # x = 0) has OPS loss 0: A = B = [eps' < 0]; an infinite leverage or
    # residual reveals the row: A = 1, B = 0
    zero = mu <= 0
    infinite = ~np.isfinite(mu) | ~np.isfinite(r)
    safe = zero | infinite
    parts = _ops_tails(np.where(safe, 1.0, mu).ravel(), np.where(safe, 0.0, r).ravel(),
                       np.broadcast_to(gamma, mu.shape).ravel())
    tails = mixture_tails(parts, zero, infinite, log_p, log_q,
                          np.logaddexp(log_p_rest, pruned_p), np.logaddexp(log_q_rest, pruned_q))
    # First guess: each row's OPS loss with its most likely index's
    # statistics and the indices' gamma averaged by their masses, within
    # about 0.5% of the mixture's for the rows of a fit (the likeliest
    # index's own gamma: 3% with 7 indices, a Newton step more); the search
    # verifies it, so the OPS table's value serves, unverified
    rows = np.arange(n_rows)
    modal = np.argmax(log_p, axis=1)
    with np.errstate(invalid="ignore"):
        weights = np.exp(log_p - log_p[rows, modal][:, None])
        mean_gamma = weights @ gamma / weights.sum(axis=1)
    mean_gamma = np.where(np.isfinite(mean_gamma), mean_gamma, gamma[modal])
    start = OPSLoss(mu[rows, modal], r[rows, modal], mean_gamma).rough_epsilon(
        np.broadcast_to(delta, (n_rows,)))
    start = np.where(np.isfinite(start), start, 0.0)
    with np.errstate(divide="ignore"):
        log_target = np.log(np.broadcast_to(delta, (n_rows,)))
    # the search's own tolerance: a row's loss must not depend on the chunk
    # or the Dask block it was computed in by more than 1e-10
    return _search(tails, None, log_target, n_rows, lambda rows: start[rows])
