"""Gaussian sketch / chi-square loss (:doc:`/mechanisms/random_projection`):
the tight loss of releasing Gaussian rows N(0, Sigma) against
N(0, Sigma + z z^T), and its calibration.

Many rows at one (delta, df) start from a table of eps in u = log(tau -
tau0), tau0 the largest tau whose delta(0) meets the target (eps leaves 0
linearly there, so log eps is smooth in u). Each tail is one chi-square
distribution function, evaluated in the linear domain by the quick stages;
it dominates the cost (an incomplete gamma function of order df / 2), so
a direction far from binding is checked with the Chernoff bound
P(W <= k z) <= exp(-k (z - 1 - log z) / 2) (z < 1; the same for
P(W >= k z), z > 1), which needs no special function.
"""

from functools import lru_cache

import numpy as np
from scipy.special import chdtr, chdtrc

from ..utils._docstrings import fill_doc
from ._engine import PrivacyLoss, largest_root
from ._table import _NODE_RTOL


def _chi2_log_cdf(x, k):
    """log P(W <= x), W ~ chi-square(k): scipy.stats.chi2.logcdf's two
    branches (the log of the smaller tail), chosen by cdf < 1/2 instead of
    its per-element median (an inverse incomplete gamma, most of its cost)."""
    return _log_tail(chdtr, chdtrc, x, k)


def _chi2_log_sf(x, k):
    """log P(W > x), W ~ chi-square(k), as :func:`_chi2_log_cdf`."""
    return _log_tail(chdtrc, chdtr, x, k)


def _log_tail(first, other, x, k):
    """log first(k, x), from log1p(-other(k, x)) where first is at least 1/2;
    ``other`` only on those rows (an incomplete gamma function each: both on
    every row took twice the time of the exact search's steps)."""
    x = np.maximum(x, 0.0)
    p = first(k, x)
    with np.errstate(divide="ignore"):
        out = np.log(p)
    big = np.flatnonzero(p >= 0.5)
    if big.size:
        out[big] = np.log1p(-other(np.broadcast_to(k, x.shape)[big], x[big]))
    return out


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


# Relative accuracy allowed to scipy's chi-square distribution functions
# (incomplete gamma functions, good to a few ulps): the bounds are widened by
# it, so that a point verified in the linear domain is also below the target
# in the log domain (where A - e^eps B cancels, 1e-14 of A moves a root near
# eps = 0 by ~1e-14: such rows go to the exact search).
_CHI2_RTOL = 1e-14


def _chi2_prob(x, k, lower):
    """Bounds ``(lo, hi)`` on P(W <= x) (``lower``) or P(W > x), from the
    same branches as :func:`_chi2_log_cdf` and :func:`_chi2_log_sf` (the
    other distribution function where the probability is at least 1/2)."""
    first, other = (chdtr, chdtrc) if lower else (chdtrc, chdtr)
    p = first(k, x)
    big = np.flatnonzero(p >= 0.5)
    if big.size:
        p[big] = 1.0 - other(k[big], x[big])
    return p * (1.0 - _CHI2_RTOL), p * (1.0 + _CHI2_RTOL)


def _chi2_tail(x, k, lower, target):
    """Bounds ``(lo, hi)`` on P(W <= x) (``lower``) or P(W >= x), W ~
    chi-square(k): [0, Chernoff bound] where that bound is at most half of
    ``target`` (the tail cannot make its direction bind), the distribution
    function elsewhere (rows gathered)."""
    x = np.maximum(x, 0.0)
    z = x / k
    with np.errstate(divide="ignore", invalid="ignore"):
        hi = np.exp(-0.5 * k * (z - 1.0 - np.log(z)))
    hi = np.where((z < 1.0) if lower else (z > 1.0), hi, 1.0)
    lo = np.zeros_like(hi)
    exact = np.flatnonzero(~(hi <= 0.5 * target))
    if exact.size:
        lo[exact], hi[exact] = _chi2_prob(x[exact], k[exact], lower)
    return lo, hi


def _chi2_quick(tau, df):
    """The tails of :func:`_chi2_tails` as linear-domain bounds (quick stages)."""
    log_det = df * np.log1p(tau)

    def bounds(eps, idx, target, sign, lower):
        t, k = tau[idx], df[idx]
        w = (log_det[idx] + sign * 2 * eps) / t
        x_a, x_b = (w * (1 + t), w) if lower else (w, w * (1 + t))
        a_lo, a_hi = _chi2_tail(x_a, k, lower, target)
        # B only lowers delta: where A alone settles the comparison, [0, 1]
        loose = a_lo == 0
        b_lo, b_hi = np.where(loose, 0.0, 1.0), np.ones_like(a_hi)
        exact = np.flatnonzero(~loose)
        if exact.size:
            b_lo[exact], b_hi[exact] = _chi2_prob(x_b[exact], k[exact], lower)
        return a_lo, a_hi, b_lo, b_hi

    def quick(eps, idx, target, names):
        return [bounds(eps, idx, target, *(-1.0, True) if name == "remove" else (1.0, False))
                for name in names]

    return quick


class Chi2Loss(PrivacyLoss):
    """Loss of releasing ``df`` sketch rows for targets with
    tau = z^T Sigma^{-1} z. ``table``: start the search of many instances at
    one (delta, df) from a table (module docstring)."""

    def __init__(self, tau, df, direction="both", table=True):
        # tau = 0: the target is invisible to the release (delta = 0);
        # tau = inf: it lies outside the support of the smaller data set's
        # release (delta = 1, no finite epsilon).
        zero = tau <= 0
        infinite = ~np.isfinite(tau)
        self.tau, self.df = np.where(zero | infinite, 1.0, tau), df
        self.direction = direction
        super().__init__(_chi2_tails(self.tau, df), zero, infinite, direction,
                         quick=_chi2_quick(self.tau, df), table=table)

    def table_coords(self, delta):
        if np.ptp(self.df) != 0:
            return None
        df = float(self.df[0])
        tau0 = _chi2_zero_edge(delta, df, self.direction)
        with np.errstate(invalid="ignore", divide="ignore"):
            u = np.log(np.maximum(self.tau - tau0, 1e-13 * tau0))
        u[self.tau <= tau0] = np.nan  # eps = 0: start there
        return _chi2_nodes, (delta, df, self.direction, tau0), (u,)


@lru_cache(maxsize=16)
def _chi2_zero_edge(delta, df, direction):
    """The largest tau with delta(0) <= ``delta`` (eps is 0 up to it)."""
    def excess(log_tau):
        with np.errstate(divide="ignore"):
            return np.log(chi2_delta(0.0, np.exp(log_tau), df, direction)) - np.log(delta)

    return float(np.exp(largest_root(excess, xtol=1e-12)))


def _chi2_nodes(delta, df, direction, tau0, u):
    return Chi2Loss.epsilon_of(delta, tau0 + np.exp(u), df, direction=direction,
                               table=False, rtol=_NODE_RTOL)


@fill_doc
def chi2_delta(eps, tau, df, direction="both"):
    """Tight delta(eps) of releasing ``df`` Gaussian sketch rows.

    The release is ``df`` independent rows N(0, Sigma) on the smaller data
    set and N(0, Sigma + z z^T) on the larger one
    (:doc:`/mechanisms/random_projection`).

    Parameters
    ----------
    eps : float or array-like
        Privacy level(s) at which to evaluate.
    tau : float or array-like
        z^T Sigma^{-1} z of the target w.r.t. the smaller data set; ``inf``
        when z is outside the range of a singular Sigma.
    df : int or array-like
        Number of released rows n'.
    {direction_delta}
    """
    return Chi2Loss.delta_of(eps, tau, df, direction=direction)


def chi2_epsilon(delta, tau, df, direction="both"):
    """Tight eps(delta) of releasing ``df`` Gaussian sketch rows, +inf where
    none exists. Same parameters as :func:`chi2_delta`, ``delta`` in (0, 1).

    eps(delta) is non-decreasing in ``tau`` and in ``df``.
    """
    return Chi2Loss.epsilon_of(delta, tau, df, direction=direction)


# Cached: public parameters only, and a random projection's fit asks for it at
# every size its mean-only search tries.
@lru_cache(maxsize=256)
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

    return np.sqrt(sq_norm / np.exp(largest_root(excess)))

