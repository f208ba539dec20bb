"""The exponential mechanism with a monotone loss, as the search uses it
(doc/mechanisms/tuning.rst)."""

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
