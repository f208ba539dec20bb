"""Gaussian sketch / chi-square loss (doc/mechanisms/random_projection.rst):
the tight loss of releasing Gaussian rows N(0, Sigma) against
N(0, Sigma + z z^T), and its calibration.
"""

import numpy as np
from scipy.special import chdtr, chdtrc

from .._docstrings import fill_doc
from ._engine import PrivacyLoss, _spline_start, largest_root


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


class Chi2Loss(PrivacyLoss):
    """Loss of releasing ``df`` sketch rows for targets with
    tau = z^T Sigma^{-1} z. ``table``: start the search of many instances at
    one (delta, df) from a spline in log tau."""

    def __init__(self, tau, df, direction="both", table=True):
        # tau = 0: the target is invisible to the release (delta = 0);
        # tau = inf: it lies outside the support of the smaller data set's
        # release (delta = 1, no finite epsilon).
        zero = tau <= 0
        infinite = ~np.isfinite(tau)
        self.tau, self.df = np.where(zero | infinite, 1.0, tau), df
        self.direction, self.table = direction, table
        super().__init__(_chi2_tails(self.tau, df), zero, infinite, direction)

    def first_guess(self, delta):
        regular = np.flatnonzero(~(self.zero | self.infinite))
        if not (self.table and regular.size and np.ptp(delta) == 0 and np.ptp(self.df) == 0):
            return None
        # eps is smooth in log tau: many rows at one (delta, df) share one spline
        guess = _spline_start(_chi2_nodes, (delta[0], self.df[0], self.direction),
                              np.log(self.tau[regular]))
        if guess is None:
            return None
        start = np.zeros(self.tau.size)
        start[regular] = guess
        return start


def _chi2_nodes(delta, df, direction, log_tau):
    return Chi2Loss.epsilon_of(delta, np.exp(log_tau), df, direction=direction, table=False)


@fill_doc
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
    {direction_delta}
    """
    return Chi2Loss.delta_of(eps, tau, df, direction=direction)


def chi2_epsilon(delta, tau, df, direction="both"):
    """Tight eps(delta) of releasing ``df`` Gaussian sketch rows, +inf where
    none exists. Same parameters as :func:`chi2_delta`, ``delta`` in (0, 1).

    eps(delta) is non-decreasing in ``tau`` and in ``df``.
    """
    return Chi2Loss.epsilon_of(delta, tau, df, direction=direction)


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

