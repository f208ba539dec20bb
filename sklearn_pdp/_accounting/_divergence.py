"""Hockey-stick divergences from a mechanism's tails, and the normal
probabilities the tails are built from.

A mechanism's tails give, per direction, ``(log A, log B)`` with
delta(eps) = A(eps) - e^eps B(eps) (see :doc:`/mechanisms/accounting`).
"""

import numpy as np
from scipy.special import log_ndtr, ndtr

_LOG_SQRT_2PI = 0.5 * np.log(2 * np.pi)

# log of the standard normal CDF, accurate in both tails
log_phi = log_ndtr


def _log1mexp(a):
    """log(1 - exp(a)) for a <= 0, stable at both ends (-inf for a >= 0)."""
    a = np.minimum(a, 0.0)
    out = np.empty_like(a)
    near = a > -np.log(2.0)
    with np.errstate(divide="ignore"):
        # each branch only where it is the accurate one (half the work)
        np.log(-np.expm1(a, where=near, out=out), where=near, out=out)
        np.log1p(-np.exp(a, where=~near, out=out), where=~near, out=out)
    return out


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


def normal_tail_bounds(budget, *ys):
    """Bounds ``(lo, hi)`` on Phi(-y) for each of the arrays ``ys`` (y >= 0),
    spending special functions only where they matter.

    Where the Mills-ratio bound phi(y) / y at the smallest of the ``ys`` is
    at most ``budget``, it bounds them all: [0, phi(y) / y] (one ``exp``);
    elsewhere both bounds are Phi(-y) itself (``ndtr``, rows gathered). For
    the negligible far tails of normal probabilities.
    """
    y = ys[0] if len(ys) == 1 else np.minimum(*ys)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        hi = np.exp(-0.5 * y * y - _LOG_SQRT_2PI)
        hi /= y
    exact = np.flatnonzero(~(hi <= budget))
    out = []
    for y in ys:
        lo, upper = np.zeros_like(hi), hi.copy()
        if exact.size:
            lo[exact] = upper[exact] = ndtr(-y[exact])
        out.append((lo, upper))
    return out


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
