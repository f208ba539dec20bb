"""Hockey-stick divergences from a mechanism's tails, and the normal
probabilities the tails are built from.

A mechanism's tails give, per direction, ``(log A, log B)`` with
delta(eps) = A(eps) - e^eps B(eps) (see :doc:`/mechanisms/accounting`).
"""

import numpy as np
from scipy.special import log_ndtr, ndtr

_LOG_SQRT_2PI = 0.5 * np.log(2 * np.pi)
# Indices of a mixture whose masses together stay below this fraction of
# delta are left out (:func:`prune_columns`): far below the search's tolerance.
_PRUNED_SHARE = 1e-10

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


def log_sum_rows(a):
    """log(sum(exp(a), axis=1)) of a 2-d array: the largest term of each row
    factored out and the others summed through log1p (as scipy's
    ``logsumexp``, without its generic overhead: the mixture's tails call it
    on every step of the search)."""
    if a.shape[1] == 1:
        return a[:, 0].copy()
    if a.shape[1] == 2:  # the common mixture of two cells: one ufunc
        with np.errstate(invalid="ignore"):
            return np.logaddexp(a[:, 0], a[:, 1])
    top = np.argmax(a, axis=1)[:, None]
    m = np.take_along_axis(a, top, axis=1)
    finite = np.isfinite(m)
    m = np.where(finite, m, 0.0)
    with np.errstate(invalid="ignore"):
        terms = np.exp(a - m)
    np.put_along_axis(terms, top, 0.0, axis=1)
    out = np.log1p(terms.sum(axis=1))
    out += m[:, 0]
    # a row whose largest term is infinite (or all -inf) is that term
    return np.where(finite[:, 0], out, np.take_along_axis(a, top, axis=1)[:, 0])


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


def mixture_tails(parts, zero, infinite, log_p, log_q, log_p_rest, log_q_rest):
    """Tails of releasing an index k, then a mechanism whose row statistics
    depend on k: per direction ``(log A, log B)`` of the mixture.

    k is drawn with probabilities p_k on the smaller data set and q_k on
    the larger; with L_k = log(p_k / q_k) the loss of (k, output) is L_k
    plus the mechanism's, so

        delta_PQ(eps) = sum_k p_k A_k(eps - L_k) - e^eps sum_k q_k B_k(eps - L_k),

    and delta_QP likewise with the roles swapped and eps + L_k. The indices
    left out (probability ``exp(log_p_rest)``, ``exp(log_q_rest)`` per row)
    count as revealing everything (A = 1, B = 0 on them).

    Parameters
    ----------
    parts : dict
        ``parts[direction](eps, cells)``: the mechanism's ``(log A, log B)``
        at the flat ``eps`` for the flat indices ``cells`` into the
        (n_rows, n_indices) statistics.
    zero, infinite : ndarray of shape (n_rows, n_indices)
        Where the mechanism does not move (delta 0) or reveals the row (delta 1).
    log_p, log_q : ndarray of shape (n_rows, n_indices)
        Log probabilities of the indices kept (-inf on both: not kept).
    log_p_rest, log_q_rest : ndarray of shape (n_rows,)
    """
    n_idx = zero.shape[1]
    # an index impossible on both data sets (mass 0 on each) weighs nothing
    void = np.isneginf(log_p) & np.isneginf(log_q)
    with np.errstate(invalid="ignore"):
        log_ratio = np.where(void, 0.0, log_p - log_q)
    special = bool(np.any(zero) or np.any(infinite))

    def mixture(direction, log_a_weight, log_b_weight, log_rest, sign):
        def tail(eps, idx):
            shift = eps[:, None] - sign * log_ratio[idx]
            cells = (idx[:, None] * n_idx + np.arange(n_idx)).ravel()
            log_a, log_b = (v.reshape(shift.shape)
                            for v in parts[direction](shift.ravel(), cells))
            if special:  # (a fit's rows seldom have any: four passes saved)
                below = np.where(shift < 0, 0.0, -np.inf)
                log_a = np.where(zero[idx], below, np.where(infinite[idx], 0.0, log_a))
                log_b = np.where(zero[idx], below, np.where(infinite[idx], -np.inf, log_b))
            log_a = log_sum_rows(log_a + log_a_weight[idx])
            return np.logaddexp(log_a, log_rest[idx]), log_sum_rows(log_b + log_b_weight[idx])
        return tail

    return [mixture("remove", log_p, log_q, log_p_rest, 1.0),
            mixture("add", log_q, log_p, log_q_rest, -1.0)]


def prune_columns(log_p, log_q, delta, share=_PRUNED_SHARE):
    """The indices of a mixture worth evaluating, and each row's mass of the
    others (log, on P and on Q): an index whose mass is below ``share *
    delta`` divided by their number on every row and both data sets is left
    out. Counted as revealing everything it raises delta(eps) by at most its
    mass (every term of the mixture's delta lies between 0 and its mass), so
    the result stays an upper bound; below a ``share`` of delta it moves
    eps(delta) by far less than the search's tolerance."""
    n_idx = log_p.shape[1]
    with np.errstate(divide="ignore"):
        limit = np.log(share * delta / max(n_idx, 1))
    keep = np.max(np.maximum(log_p, log_q), axis=0) >= limit
    if keep.all():
        empty = np.full(log_p.shape[0], -np.inf)
        return keep, empty, empty
    return keep, log_sum_rows(log_p[:, ~keep]), log_sum_rows(log_q[:, ~keep])

