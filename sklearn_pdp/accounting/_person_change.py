"""A person's change of a factorised Gaussian release and its certified
loss (:doc:`/people`): the eigen-decomposition of the change that all of a
person's rows make together, and the generalised chi-square loss of
:mod:`._gchi` over it for One Posterior Sample and the Gaussian sketch,
in closed form where the rows span a single direction."""

import numpy as np

from ._chi2 import chi2_epsilon
from ._gchi import gchi_epsilon
from ._ops import ops_epsilon


# Eigenvalues of the whitened change at most this are rounding: no direction.
_NULL_EIGEN = 1e-13
# In-sample eigenvalues within rounding of 1: the rows alone span a direction.
_ONE = 1.0 - 1e-12


def whitened_change(whitener, gram, cross=None, add=False):
    """The eigen-decomposition of each person's change of a factorised
    positive-definite system S = L L^T (``whitener`` = L^-T): the weights
    w_j (eigenvalues of L^-1 G L^-T on the smaller system, 0 for none),
    and with ``cross`` (each person's X_p^T e_p, e_p their residuals on the
    fitted system) its coordinates b_j in the same basis on the smaller
    system. On a removal (the fitted system holds the person) the in-sample
    eigenvalue a maps to w = a / (1 - a) and the coordinate to
    b / (1 - a)^(3/2) (Sherman-Morrison-Woodbury); a = 1 is an infinite
    weight."""
    A = np.einsum("ji,pjk,kl->pil", whitener, gram, whitener)
    a, U = np.linalg.eigh(A)
    b = None if cross is None else np.einsum("pji,kj,pk->pi", U, whitener, cross)
    a = np.where(a > _NULL_EIGEN, a, 0.0)
    if add:
        return a, b
    with np.errstate(divide="ignore", invalid="ignore"):
        keep = 1.0 - a
        w = np.where(a > _ONE, np.inf, a / keep)
        if b is not None:
            b = np.where(a > _ONE, 0.0, b / keep**1.5)
    return w, b


def person_epsilon(delta, w, b, gamma):
    """Each person's OPS loss at ``delta`` from the weights ``w`` and
    coordinates ``b`` of :func:`whitened_change` (posterior scaling
    ``gamma``): noncentralities gamma b^2 / w^2, one degree of freedom
    each. A person whose rows span one direction has the one-row loss at
    leverage w and residual b / sqrt(w) (closed form); one with an infinite
    weight, an infinite loss; ``nan`` for a person whose law is not
    certified within the public caps (the others keep theirs)."""
    present = w > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.where(present & np.isfinite(w), gamma * b**2 / np.where(present, w, 1.0)**2, 0.0)
    out = np.zeros(w.shape[0])
    infinite = ~np.isfinite(w).all(axis=1)
    out[infinite] = np.inf
    rank = present.sum(axis=1)
    one = np.flatnonzero(~infinite & (rank == 1))
    if one.size:
        col = np.argmax(w[one], axis=1)
        mu, coord = w[one, col], b[one, col]
        out[one] = ops_epsilon(delta, mu, coord / np.sqrt(mu), gamma)
    many = np.flatnonzero(~infinite & (rank > 1))
    if many.size:
        out[many] = gchi_epsilon(delta, w[many], lam[many], 1.0)
    return out


def sketch_person_epsilon(delta, tau, n_components):
    """Each person's loss at ``delta`` for a Gaussian sketch of
    ``n_components`` rows, from the eigenvalues ``tau`` of their change of
    the covariance (:func:`whitened_change`, on the smaller data set):
    central, ``n_components`` degrees of freedom per direction; the
    one-row chi-square loss where the rows span one direction; ``nan`` for
    a person whose law is not certified within the public caps."""
    out = np.zeros(tau.shape[0])
    infinite = ~np.isfinite(tau).all(axis=1)
    out[infinite] = np.inf
    rank = (tau > 0).sum(axis=1)
    one = np.flatnonzero(~infinite & (rank == 1))
    if one.size:
        out[one] = chi2_epsilon(delta, tau[one].max(axis=1), n_components)
    many = np.flatnonzero(~infinite & (rank > 1))
    if many.size:
        out[many] = gchi_epsilon(delta, tau[many], 0.0, float(n_components))
    return out
