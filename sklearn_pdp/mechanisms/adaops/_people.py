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
(exact) over their noise, composed by basic composition with the largest
of the sample's losses over the pairs of cells (k, j) within the person's
window; the pairs beyond it (under either data set) have mass at most
``_PUBLISHED_WINDOW_SHARE * delta``, spent from delta.

The largest over the pairs is bounded at few of them, in closed form.
Within one ridge (cell k fixes it; every cell k >= 0 has the same one)
the pairs differ only in gamma, and the sample's loss does not fall as
gamma grows (proof below), so the pair of largest gamma in the window has
the largest loss: one candidate per ridge in the window. Each candidate's
loss, a generalised chi-square, is bounded by Chernoff's bound
(:func:`~sklearn_pdp.accounting._gchi_chernoff.chernoff_epsilon`), valid
and about 10% above its certified value
(:func:`~sklearn_pdp.accounting._person_change.person_epsilon`), which
costs seconds per thousand people where the whole fit costs a tenth of
one.

Proof that the loss does not fall as gamma grows. Whitened by the smaller
data set's posterior precision and scaled by sqrt(gamma), the two
posteriors are Q = N(0, I) and P_t = N(t c, D), t = sqrt(gamma), with c
the whitened change of the ridge solution and D diagonal, 0 < D_jj <= 1
(D_jj = 1 exactly where c_j = 0: those coordinates are the same under both
and drop out); neither c nor D depends on gamma. Shifted by -t c the pair
is P = N(0, D) against Q_t = N(-t c, I) with density q(. + t c). Let
g(y) = log p(y - t c) - log q(y): a separable concave quadratic, largest at
y*_j = t c_j / (1 - D_jj), so y*_j c_j >= 0 and every level set
{g > a} is an axis-parallel ellipsoid centred at y*. Differentiating under
the integral (the integrands are Lipschitz in t),

    d/dt int (p(x) - e^eps q(x + t c))_+ dx = e^eps int_{g > eps} (y . c) q(y) dy,
    d/dt int (q(x + t c) - e^eps p(x))_+ dx = int_{g >= -eps} (y . c) q(y) dy

(the second with int (y . c) q(y) dy = 0 over the whole space). Each
integral splits over j as c_j times an integral over the other coordinates
of int y_j phi(y_j) dy_j on the ellipsoid's slice, an interval
(y*_j - h, y*_j + h), which is phi(y*_j - h) - phi(y*_j + h): of the sign
of y*_j, hence c_j times it is >= 0. Both hockey-stick divergences are
therefore non-decreasing in t at every eps, and so is the smallest eps
whose delta is at most any target. The certified loss at the largest gamma
bounds the exact loss at every gamma of the window (Chernoff's bound at
the largest gamma bounds it in turn).
"""

import numpy as np
from scipy.special import ndtri

from ...accounting import gaussian_epsilon
from ...accounting._adaops import lipschitz_log_change
from ...accounting._gchi_chernoff import chernoff_epsilon
from ...accounting._person_change import whitened_change
from ..mean._released_means import person_means_change
from ...utils._eigen import set_eigen_change
from ...utils._ridge_system import person_shifts
from ._published import _PUBLISHED_WINDOW_SHARE


def adaops_person_losses(release, gram, cross, sizes, add=False):
    """Upper bound at ``release.delta`` on the loss of removing (adding,
    ``add``) each person's rows together from AdaOPS's ``release``, from
    their sums ``gram`` (``sum z z^T``), ``cross`` (``sum y z``) and numbers
    of rows ``sizes`` (module docstring)."""
    cal, delta = release.cal, release.delta
    window = _PUBLISHED_WINDOW_SHARE * delta
    z_window = -ndtri(window / 4.0)  # two tails on each grid
    half = 0.5 * (delta - window)
    change = conditioning_change(release, gram, cross, sizes, add)
    centre, reach = release.G - cal.margin, z_window * cal.sigma + change
    first, last = cal.index(centre - reach), cal.index(centre + reach)
    bound2 = np.zeros(sizes.shape)
    ridges = {}  # per ridge: the person's step of log R, (w, b) and largest gamma
    for k in range(int(first.min()), int(last.max()) + 1):
        within = (first <= k) & (k <= last)
        if not within.any():
            continue
        ridge, log_r = release._cell_fit(k)
        if ridge not in ridges:
            ridges[ridge] = _ridge_change(release, ridge, gram, cross, sizes, add)
        step, w, b, largest = ridges[ridge]
        _, sigma, _, last_bound = cal.bound_grid(k)
        low = high = np.zeros(sizes.shape, dtype=int)
        if last_bound:
            bound2 = np.where(within, np.maximum(bound2, (step / sigma) ** 2), bound2)
            u, spread = log_r + cal.z * sigma, z_window * sigma + step
            low, high = cal.bound_index(k, u - spread), cal.bound_index(k, u + spread)
        cells = np.arange(low[within].min(), high[within].max() + 1)
        gammas = np.array([cal.gamma(k, j) for j in cells.tolist()])
        reached = within[:, None] & (low[:, None] <= cells) & (cells <= high[:, None])
        np.maximum(largest, np.where(reached, gammas, 0.0).max(axis=1), out=largest)
    sample = _largest_loss(half, list(ridges.values()))
    ratio2 = (change / cal.sigma) ** 2 + bound2
    if release.means_noise is not None:
        ratio2 += person_means_change(release.means, release.n_samples, gram, cross, sizes,
                                      add, release.means_noise) ** 2
    return gaussian_epsilon(half, np.sqrt(ratio2)) + sample


def _ridge_change(release, ridge, gram, cross, sizes, add):
    """Each person's change on one cell's ridge fit: ``[step, w, b,
    largest]``, the absolute change of log R (``inf`` where undefined),
    the whitened change of :func:`whitened_change` and the largest gamma
    of their window so far (0: none)."""
    shift = person_shifts(ridge, gram, cross, sizes, release.n_samples, release.intercept, add)
    with np.errstate(invalid="ignore"):
        step = np.abs(lipschitz_log_change(ridge.coef, shift, release.intercept))
    g = cross - gram @ ridge.coef  # X_p^T e_p: the persons' residuals
    w, b = whitened_change(ridge._whitener, gram, g, add=add)
    return [np.where(np.isfinite(step), step, np.inf), w, b, np.zeros(sizes.shape)]


def _largest_loss(delta, candidates):
    """Each person's largest sample loss at ``delta`` over the
    ``candidates`` ``[step, w, b, gamma]`` (gamma 0: not a candidate), each
    bounded by Chernoff (module docstring)."""
    out = np.zeros(candidates[0][3].size)
    for _, w, b, gamma in candidates:
        rows = np.flatnonzero(gamma > 0)
        w, b = w[rows], b[rows]
        present = (w > 0) & np.isfinite(w)
        with np.errstate(divide="ignore", invalid="ignore"):
            lam = np.where(present, gamma[rows, None] * b**2 / np.where(present, w, 1.0)**2, 0.0)
        out[rows] = np.maximum(out[rows], chernoff_epsilon(delta, w, lam, 1.0))
    return out


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
