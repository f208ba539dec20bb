"""The exponential mechanism: selection with a monotone loss (the private
search, :doc:`/mechanisms/tuning`) and quantiles over a public grid (bound
tightening and the published summary, :doc:`/mechanisms/tightening`), with
the exact per-instance loss of a quantile release."""

import numpy as np
from scipy.special import logsumexp


def exponential_log_proba(scores, epsilon, sensitivity):
    """Log selection probabilities of the exponential mechanism, low score wins.

    P(k) is proportional to exp(-epsilon * scores[k] / sensitivity), where
    each score is a sum over records of a per-record loss in
    [0, sensitivity]. Adding a record raises every score by some amount in
    [0, sensitivity] (all in the same direction), so
    |log P(k) - log P'(k)| <= epsilon for every k: the selection is
    epsilon-DP, and the bound is attained in the limit. The textbook factor
    1/2 in the exponent is only needed when scores can move in opposite
    directions; with it this mechanism would spend epsilon/2.

    Parameters
    ----------
    scores : array-like of shape (..., n_candidates)
        Summed losses, one per candidate (last axis).
    epsilon : float
        Privacy budget of the selection (pure DP).
    sensitivity : float
        Largest loss one record can contribute to a score.

    Returns
    -------
    log_proba : ndarray of the shape of ``scores``
    """
    logits = -(epsilon / sensitivity) * np.asarray(scores, dtype=float)
    return logits - logsumexp(logits, axis=-1, keepdims=True)


def select(log_proba, rng, size=None):
    """Index(es) drawn with the log probabilities ``log_proba``.

    Gumbel-max sampling: argmax_k (log P(k) + G_k) with G_k iid standard
    Gumbel is distributed as P, and needs no normalisation in linear scale.
    """
    log_proba = np.asarray(log_proba, dtype=float)
    shape = log_proba.shape if size is None else (size, log_proba.size)
    return np.argmax(log_proba + rng.gumbel(size=shape), axis=-1)


def quantile_log_proba(cell_counts, q, epsilon):
    """Log probabilities of the exponential-mechanism q-quantile over a grid.

    The values are rounded up to a public grid t_1 < ... < t_G:
    ``cell_counts[..., k]`` is the number of values rounded to t_k (last
    axis; leading axes are independent data sets). Candidate t_k has utility
    ``-max(#{v < t_k} - q n, q n - #{v <= t_k}, 0)`` with n the data set's
    own size: zero exactly at a q-quantile of the rounded values, ties
    included. Removing a value lowers each count by 0 or 1 and q n by q,
    so the utility moves by at most 1 (in either direction): t_k is drawn
    with probability proportional to ``exp(epsilon u(t_k) / 2)``, which is
    epsilon-DP.

    Parameters
    ----------
    cell_counts : array-like of shape (..., G)
    q : float
        Quantile level in [0, 1].
    epsilon : float

    Returns
    -------
    log_proba : ndarray of shape (..., G)
    """
    counts = np.asarray(cell_counts, dtype=np.float64)
    at_most = np.cumsum(counts, axis=-1)
    below = at_most - counts
    target = q * at_most[..., -1:]
    shortfall = np.maximum(np.maximum(below - target, target - at_most), 0.0)
    return exponential_log_proba(shortfall, epsilon, 2.0)


def quantile_loss_table(cell_counts, q, epsilon, add=False):
    """Exact privacy-loss extremes of one value, by the cell it falls in.

    For a value rounded to grid point k, compare the release on the data
    set without it (P) and with it (Q): both are explicit vectors over the
    grid (:func:`quantile_log_proba`), so the loss L = log P/Q takes G
    values and every value of the same cell has the same pair. ``add``:
    ``cell_counts`` are those of the data set without the value (a target
    added); else with it (a training value removed). O(G^2).

    Returns
    -------
    upper : ndarray of shape (G,)
        max over outputs of L, for a value in each cell.
    lower : ndarray of shape (G,)
        max over outputs of -L.
        The value's pure epsilon is ``max(upper, lower)``; for independent
        releases the pure epsilon of the whole is the larger of the sums
        of ``upper`` and of ``lower`` (the worst output of each release can
        be taken together). A cell holding no training value (``add``
        False) has no row to remove: its entries are ``nan``.
    """
    counts = np.asarray(cell_counts, dtype=np.float64)
    G = counts.size
    changed = counts + (1.0 if add else -1.0) * np.eye(G)
    base = quantile_log_proba(counts, q, epsilon)
    with np.errstate(invalid="ignore"):
        moved = quantile_log_proba(np.maximum(changed, 0.0), q, epsilon)
    # L = log P(without) - log Q(with), rows: the value's cell
    L = (base[None, :] - moved) if add else (moved - base[None, :])
    upper, lower = L.max(axis=1), (-L).max(axis=1)
    if not add:
        empty = counts <= 0
        upper[empty] = lower[empty] = np.nan
    return upper, lower
