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


def means_max_ratio(n_samples, noise):
    """Largest change of the means by one row over the domain in units of
    their Gaussian ``noise`` (one scale per coordinate, the label's last):
    ``(2 / n) sqrt(sum_x 1 / noise_x^2 ... )`` over the worst row, each part of
    ``z_i - mean(z)`` at most ``(n - 1) / n * 2`` in norm; with one scale
    for every coordinate ``means_max_change / noise``."""
    noise = np.asarray(noise, dtype=np.float64)
    if noise.ndim == 0:
        return means_max_change(n_samples) / float(noise)
    return 2.0 / n_samples * float(np.hypot(1.0 / noise[:-1].min(), 1.0 / noise[-1]))


def means_change(mean, n_samples, Xs, ys, add, noise=1.0):
    """Exact ||mean(z) - mean(z')|| of each row removed from the data
    (``add`` False; ``mean`` the data's means, the label's last) or added:
    ``||z - mean(z)|| / (n - 1)`` or ``/ (n + 1)``; with ``noise`` (a scale,
    or one per coordinate) the change in its units (Mahalanobis)."""
    scale = np.broadcast_to(np.asarray(noise, dtype=np.float64), mean.shape)
    x = (Xs[:, : mean.shape[0] - 1] - mean[:-1]) / scale[:-1]
    gap = np.sqrt(np.einsum("ij,ij->i", x, x) + ((ys - mean[-1]) / scale[-1]) ** 2)
    return gap / (n_samples + 1.0 if add else n_samples - 1.0)


def person_means_change(mean, n_samples, gram, cross, sizes, add, noise=1.0):
    """Exact change of the means (as :func:`means_change`) when each
    person's rows are removed together (added, ``add``), from their sums
    ``gram`` (``sum z z^T``, the constant last: its last column holds the
    rows' sums) and ``cross`` (``sum y z``, the label sum last) and their
    numbers of rows ``sizes``: ``||sum z - m mean(z)|| / (n - m)`` or ``/ (n
    + m)`` (``inf`` where no row is left)."""
    scale = np.broadcast_to(np.asarray(noise, dtype=np.float64), mean.shape)
    d = mean.shape[0] - 1
    sums = np.column_stack([gram[:, :d, d], cross[:, d]])
    gap = np.linalg.norm((sums - sizes[:, None] * mean) / scale, axis=1)
    with np.errstate(divide="ignore"):
        return gap / (n_samples + sizes if add else np.maximum(n_samples - sizes, 0))


def means_bound(released, noise, n_samples, Xs, ys, beta):
    """Upper bound on each row's change of the means (removed or added),
    ``||z - mean(z)|| / (n - 1)`` in units of their Gaussian ``noise`` (a
    scale, or one per coordinate), from the ``released`` means, except with
    probability ``beta``: the distance to the released means plus their
    noise's norm quantile, at most :func:`means_max_ratio` (``ys`` None: the
    worst label, an end of [-1, 1])."""
    x = Xs[:, : released.shape[0] - 1] - released[:-1]
    label = 1.0 + abs(released[-1]) if ys is None else ys - released[-1]
    scale = np.broadcast_to(np.asarray(noise, dtype=np.float64), released.shape)
    x = x / scale[:-1]
    gap = np.sqrt(np.einsum("ij,ij->i", x, x) + (label / scale[-1]) ** 2)
    gap += np.sqrt(chi2.isf(beta, released.shape[0]))
    return np.minimum(gap / (n_samples - 1.0), means_max_ratio(n_samples, noise))


def centred_intercept(slopes, means):
    """The intercept of ``slopes`` at the released ``means`` (the rows' then
    the label's): ``mean(y) - mean(x)^T slopes``; its noise variance is the
    means' times ``1 + ||slopes||^2``."""
    return means[-1] - means[:-1] @ slopes
