"""AdaOPS's loss of a person with several rows (:doc:`/people`), a bound by
composition.

A row's loss is the exact mixture over pairs of cells of OPS losses
(:class:`~sklearn_pdp.mechanisms.adaops._release.AdaOPSRelease`); a
person's sample, given a pair, is a generalised chi-square
(:func:`~sklearn_pdp.accounting._person_change.person_epsilon`), whose
mixture over pairs is not computed. The bound is the adaptive composition
that a published report's bound uses: the two cell releases and the
released means are one Gaussian mechanism, with the person's changes of
the conditioning G (bounded), of each cell's log R and of the means
(exact) over their noise, composed by basic composition with the
sample's certified loss at the largest over the pairs of cells within the
person's window; the pairs beyond it (under either data set) have mass
at most ``_PUBLISHED_WINDOW_SHARE * delta``, spent from delta.
"""

import numpy as np
from scipy.special import ndtri

from ...accounting import gaussian_epsilon
from ...accounting._adaops import lipschitz_log_change
from ...accounting._person_change import person_epsilon, whitened_change
from ..mean._released_means import person_means_change
from ...utils._eigen import set_eigen_change
from ...utils._ridge_system import person_shifts
from ._published import _PUBLISHED_WINDOW_SHARE


def adaops_person_losses(release, gram, cross, sizes, add=False):
    """Upper bound at ``release.delta`` on the loss of removing (adding,
    ``add``) each person's rows together from AdaOPS's ``release``, from
    their sums ``gram`` (``sum z z^T``), ``cross`` (``sum y z``) and numbers
    of rows ``sizes`` (module docstring); ``nan`` for a person whose
    sample's loss is not certified on some pair of cells within their
    window (the fit then charges them group privacy)."""
    cal, delta = release.cal, release.delta
    window = _PUBLISHED_WINDOW_SHARE * delta
    z_window = -ndtri(window / 4.0)  # two tails on each grid
    half = 0.5 * (delta - window)
    change = conditioning_change(release, gram, cross, sizes, add)
    centre, reach = release.G - cal.margin, z_window * cal.sigma + change
    first, last = cal.index(centre - reach), cal.index(centre + reach)
    bound2, sample = np.zeros(sizes.shape), np.zeros(sizes.shape)
    for k in range(int(first.min()), int(last.max()) + 1):
        within = (first <= k) & (k <= last)
        ridge, log_r = release._cell_fit(k)
        shift = person_shifts(ridge, gram, cross, sizes, release.n_samples,
                              release.intercept, add)
        with np.errstate(invalid="ignore"):
            step = np.abs(lipschitz_log_change(ridge.coef, shift, release.intercept))
        step = np.where(np.isfinite(step), step, np.inf)
        _, sigma, _, last_bound = cal.bound_grid(k)
        low = high = np.zeros(sizes.shape, dtype=int)
        if last_bound:
            bound2 = np.where(within, np.maximum(bound2, (step / sigma) ** 2), bound2)
            u, spread = log_r + cal.z * sigma, z_window * sigma + step
            low, high = cal.bound_index(k, u - spread), cal.bound_index(k, u + spread)
        g = cross - gram @ ridge.coef
        w, b = whitened_change(ridge._whitener, gram, g, add=add)
        for j in range(int(low[within].min(initial=0)), int(high[within].max(initial=0)) + 1):
            rows = np.flatnonzero(within & (low <= j) & (j <= high))
            if not rows.size:
                continue
            # nan where not certified: that person falls back to group privacy
            sample[rows] = np.maximum(sample[rows], person_epsilon(
                half, w[rows], b[rows], cal.gamma(k, j), all_or_none=False))
    ratio2 = (change / cal.sigma) ** 2 + bound2
    if release.means_noise is not None:
        ratio2 += person_means_change(release.means, release.n_samples, gram, cross, sizes,
                                      add, release.means_noise) ** 2
    return gaussian_epsilon(half, np.sqrt(ratio2)) + sample


def conditioning_change(release, gram, cross, sizes, add):
    """Upper bound on each person's change of G = lambda_min / (1 +
    ||x_bar||)^2 (lambda_min of X^T X without intercept): the exact change
    of lambda_min (:func:`set_eigen_change`, rounded up) over the other
    data set's weight, plus lambda_min times the change of the inverse
    squared weight; ``inf`` where no row is left."""
    n = release.n_samples
    lam_change = set_eigen_change(release.XtX, n, release.eig[0][0], gram, sizes,
                                  intercept=release.intercept, add=add)
    if not release.intercept:
        return lam_change
    d = release.mean.shape[0]
    sign = 1.0 if add else -1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        other_mean = (n * release.mean + sign * gram[:, :d, d]) / (n + sign * sizes)[:, None]
        weight2 = (1.0 + np.linalg.norm(release.mean)) ** 2
        other2 = (1.0 + np.linalg.norm(other_mean, axis=1)) ** 2
        out = lam_change / other2 + release.eig[0][0] * np.abs(1.0 / other2 - 1.0 / weight2)
    return np.where(n + sign * sizes > 0, out, np.inf)
