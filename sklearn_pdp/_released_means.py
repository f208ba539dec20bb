"""The released means of the rows and of the label, a stage shared by
output perturbation's private ridge (:doc:`/mechanisms/output_perturbation`)
and AdaOPS (:doc:`/mechanisms/adaops`): with an intercept, the means plus
Gaussian noise, on which the released slopes' intercept is re-centred.

Rows in the unit ball, labels in [-1, 1] (the scaled space); the means are
those of the rows without the constant, then the label's.
"""

import numpy as np
from scipy.stats import chi2


def data_means(XtX, Xty, n_samples):
    """The rows' and the label's means, read from the constant's row of the
    Gram matrix (the constant last)."""
    return np.append(XtX[-1, :-1], Xty[-1]) / n_samples


def means_max_change(n_samples):
    """Largest ||mean(z) - mean(z without a row)|| of the rows z = (x, y)
    (``x`` without the constant) over data sets of ``n_samples`` rows in the
    domain: ``||z_i - mean(z)|| / (n - 1)`` with ``||z_i - mean(z)|| <= (n - 1)
    / n * 2 sqrt(2)`` (rows in the unit ball, labels in [-1, 1])."""
    return 2.0 * np.sqrt(2.0) / n_samples


def means_change(mean, n_samples, Xs, ys, add):
    """Exact ||mean(z) - mean(z')|| of each row removed from the data
    (``add`` False; ``mean`` the data's means, the label's last) or added:
    ``||z - mean(z)|| / (n - 1)`` or ``/ (n + 1)``."""
    z = np.column_stack([Xs[:, : mean.shape[0] - 1], ys])
    gap = np.sqrt(np.einsum("ij,ij->i", z - mean, z - mean))
    return gap / (n_samples + 1.0 if add else n_samples - 1.0)


def means_bound(released, noise, n_samples, Xs, ys, beta):
    """Upper bound on each row's change of the means (removed or added),
    ``||z - mean(z)|| / (n - 1)``, from the ``released`` means with Gaussian
    ``noise``, except with probability ``beta``: the distance to the released
    means plus their noise's norm quantile, at most the global change
    (``ys`` None: the worst label, an end of [-1, 1]); the global change
    where none were released (``released`` None)."""
    worst = means_max_change(n_samples)
    if released is None:
        return np.full(Xs.shape[0], worst)
    x = Xs[:, : released.shape[0] - 1] - released[:-1]
    label = 1.0 + abs(released[-1]) if ys is None else ys - released[-1]
    gap = np.sqrt(np.einsum("ij,ij->i", x, x) + label**2)
    gap += noise * np.sqrt(chi2.isf(beta, released.shape[0]))
    return np.minimum(gap / (n_samples - 1.0), worst)


def centred_intercept(slopes, means):
    """The intercept of ``slopes`` at the released ``means`` (the rows' then
    the label's): ``mean(y) - mean(x)^T slopes``; its noise variance is the
    means' times ``1 + ||slopes||^2``."""
    return means[-1] - means[:-1] @ slopes
