"""The Gaussian mechanism (Balle and Wang 2018; :doc:`/mechanisms/output_perturbation`):
its tight loss, its calibration, and composition with it.

Many rows at one delta start from a table of eps in u = log(s - s0), where
s0 is the ratio below which eps is 0 (delta(0) = erf(s / sqrt(8)) <= delta):
eps grows linearly from s0, so log eps is smooth in u right up to the
kink at s0 (degree-5 interpolation at 16 nodes per unit: about 1e-12
relative for most rows), and the quick stages check it with both tails
exact in the linear domain (two ``ndtr``).
"""

import functools

import numpy as np
from scipy.special import erfinv, ndtr, ndtri_exp

from ._divergence import log_phi, mixture_tails
from ._engine import PrivacyLoss, largest_root
from ._search import epsilon_from_delta
from ._table import _NODE_RTOL

# rows closer to s0 than this (relative) start at the table's edge there
_CLOSEST = 1e-13


def _gaussian_guess(delta, s):
    """eps of the Gaussian mechanism with ratio ``s`` ignoring its e^eps B term
    (an overestimate): a first guess for losses that are nearly Gaussian."""
    return s * ndtri_exp(np.log1p(-delta)) + s**2 / 2


class GaussianLoss(PrivacyLoss):
    """Loss of the Gaussian mechanism with per-instance ratio ``s``.

    delta(eps) = Phi(s/2 - eps/s) - e^eps Phi(-s/2 - eps/s), the same in
    both directions. ``table``: start the search of many instances from a
    table (module docstring).
    """

    def __init__(self, s, table=True):
        zero, infinite = s <= 0, ~np.isfinite(s)
        self.s = np.where(zero | infinite, 1.0, s)

        def tail(eps, idx):
            si = self.s[idx]
            return log_phi(si / 2 - eps / si), log_phi(-si / 2 - eps / si)

        def quick(eps, idx, target, names):
            si = self.s[idx]
            a, b = ndtr(si / 2 - eps / si), ndtr(-si / 2 - eps / si)
            return [(a, a, b, b)]

        # the directions are equal: one search for both
        super().__init__({"remove": tail}, zero, infinite, quick=quick, table=table)

    def table_coords(self, delta):
        s0 = np.sqrt(8.0) * erfinv(delta)
        with np.errstate(invalid="ignore", divide="ignore"):
            u = np.log(np.maximum(self.s - s0, _CLOSEST * s0))
        u[self.s <= s0] = np.nan  # eps = 0: start there
        return _gaussian_nodes, (delta, s0), (u,)


def _gaussian_nodes(delta, s0, u):
    return GaussianLoss.epsilon_of(delta, s0 + np.exp(u), table=False, rtol=_NODE_RTOL)


def gaussian_delta(eps, s):
    """Tight delta(eps) of the Gaussian mechanism with sensitivity/noise ratio ``s``.

    ``s`` = ||Delta||_{Sigma^{-1}}: the per-instance sensitivity measured in
    the noise's Mahalanobis norm (Delta / sigma for isotropic noise).
    """
    return GaussianLoss.delta_of(eps, s)


def gaussian_epsilon(delta, s):
    """Tight eps(delta) of the Gaussian mechanism with ratio ``s``."""
    return GaussianLoss.epsilon_of(delta, s)


def gaussian_noise_scale(epsilon, delta, sensitivity=1.0):
    """Smallest sigma for which N(0, sigma^2 I) noise on a query of l2
    sensitivity ``sensitivity`` is (epsilon, delta)-DP (analytic Gaussian
    mechanism; the classical sqrt(2 log(1.25/delta))/epsilon rule is invalid
    for large epsilon, erratum E2 in :doc:`/errata`).
    """
    return sensitivity / _largest_ratio(float(epsilon), float(delta))


@functools.lru_cache(maxsize=1024)
def _largest_ratio(epsilon, delta):
    """The largest ratio s = sensitivity / sigma at which the Gaussian
    mechanism is (epsilon, delta)-DP (cached: calibrations ask for the same
    budget at many sensitivities)."""
    # delta(epsilon) grows with s: find the largest s.
    def excess(log_s):
        with np.errstate(divide="ignore"):
            return np.log(gaussian_delta(epsilon, np.exp(log_s))) - np.log(delta)

    return float(np.exp(largest_root(excess)))


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


def gaussian_mixture_epsilon(delta, s, log_p, log_q, log_p_rest, log_q_rest):
    """Tight eps(delta) of releasing an index k, then a Gaussian mechanism
    whose ratio for the row, ``s[:, k]``, depends on k (the mixture of
    :func:`~._divergence.mixture_tails`; AdaSSP on privately released label
    bounds, :doc:`/mechanisms/tightening`). The indices left out count as
    revealing everything: an upper bound, exact up to them.

    Parameters
    ----------
    delta : float
    s : ndarray of shape (n_rows, n_indices)
    log_p, log_q : ndarray of shape (n_rows, n_indices)
        Log probabilities of the indices kept on the smaller and the larger
        data set (-inf on both: not kept).
    log_p_rest, log_q_rest : ndarray of shape (n_rows,)

    Returns
    -------
    eps : ndarray of shape (n_rows,)
    """
    zero, infinite = s <= 0, ~np.isfinite(s)
    flat = np.where(zero | infinite, 1.0, s).ravel()

    def part(eps, cells):
        si = flat[cells]
        return log_phi(si / 2 - eps / si), log_phi(-si / 2 - eps / si)

    tails = mixture_tails({"remove": part, "add": part}, zero, infinite,
                          log_p, log_q, log_p_rest, log_q_rest)
    # first guess: the Gaussian loss at the row's most likely index
    modal = np.take_along_axis(s, np.argmax(log_p, axis=1)[:, None], axis=1)[:, 0]
    start = gaussian_epsilon(delta, np.where(np.isfinite(modal), modal, 0.0))
    return epsilon_from_delta(tails, delta, s.shape[0], start=start)
