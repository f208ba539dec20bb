"""A released Gram matrix: its noise and each row's change of it.

AdaSSP releases the Gram matrix of the scaled rows with Gaussian noise
(:doc:`/mechanisms/adassp`) and a published report releases one next to
any model (:doc:`/publish`); both use these helpers.
"""

import numpy as np


def feature_powers(Xs, intercept):
    """``||x||^2`` and ``sum x_j^4`` of the features x of each scaled row
    (the constant feature last when ``intercept``)."""
    x = np.asarray(Xs)[:, : Xs.shape[1] - int(intercept)]
    sq = np.square(x)
    # einsum sums the short rows much faster than .sum(axis=1)
    return np.einsum("ij->i", sq), np.einsum("ij,ij->i", sq, sq)


def gram_change2(Xs, intercept, powers=None):
    """Squared l2 change of the released Gram entries when each row of ``Xs`` is
    added or removed: sum over j <= k of (z_j z_k)^2, without the constant's
    own entry (the public size) when ``intercept``.

    With the features x of z: (||x||^4 + sum x_j^4) / 2, plus ||x||^2 for the
    constant's column (summed from x, never as a difference with 1, which
    would round the change of a short row to 0). ``powers``: the rows'
    :func:`feature_powers`, where already computed.
    """
    norm2, fourth = feature_powers(Xs, intercept) if powers is None else powers
    return 0.5 * (norm2**2 + fourth) + int(intercept) * norm2


def gram_max_change(intercept):
    """Largest l2 change of the released Gram entries over the domain: 1, or
    sqrt(2) with the constant feature (x = e_1: (4 + 2)/2 - 1 = 2)."""
    return np.sqrt(2.0) if intercept else 1.0


def gram_noise(rng, n_coef, intercept, size=None):
    """Symmetric N(0, 1) noise for a released Gram matrix: independent entries on
    and above the diagonal, none on the constant's own entry (the public size).
    ``size`` matrices along a leading axis, or one."""
    E = rng.standard_normal((1 if size is None else size, n_coef, n_coef))
    E = np.triu(E) + np.swapaxes(np.triu(E, 1), 1, 2)
    if intercept:
        E[:, -1, -1] = 0.0
    return E[0] if size is None else E
