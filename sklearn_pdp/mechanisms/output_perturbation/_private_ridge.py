"""Output perturbation at a privately chosen ridge (``alpha="auto"``;
:doc:`/mechanisms/output_perturbation`): the ridge's release and the ball's,
and each row's loss for the two."""

from functools import partial

import numpy as np

from ...utils._rows import TwoStageRows
from ...utils._eigen import eigen_change, scatter_eigen, set_eigen_change
from ...utils._people import PersonLosses
from ..private_ridge._adaptive import NO_SIGNAL
from ._calibration import (
    AdaptiveRidge, ridge_row_sensitivity,
)
from ..private_ridge._law import PrivateRidgeLaw
from ..mean._released_means import data_means, means_change, person_means_change
from .._release import Release
from ...utils._ridge_system import RidgeSystem, person_shifts
from ._release import _perturb, output_perturbation_guarantee


class PrivateRidgeRelease(PrivateRidgeLaw, Release):
    """Output perturbation at a privately chosen ridge (:class:`AdaptiveRidge`).

    The fit's draw releases lambda_min(S) + N(0, eigen_noise^2), then the
    ridge solution at the ridge of the released value's cell plus Gaussian
    noise calibrated to the sensitivity of every data set whose lambda_min
    is above the cell's lower bound, then (above the floor cell, with an
    intercept) the means of the rows and of the label plus Gaussian noise
    (``released_means``); the estimator's coefficients are that draw
    (``coef``, what a published report reads) post-processed
    (:meth:`AdaptiveRidge.shrink`: slopes without signal set to 0;
    :meth:`AdaptiveRidge.center`: the intercept re-centred on the released
    means). A row's loss is that of the joint release, at ``delta``; the
    law of a published report is
    :class:`~sklearn_pdp.mechanisms.private_ridge._law.PrivateRidgeLaw`.

    Holds the Gram matrix (``XtX``, ``Xty``), the scatter's eigen-system
    (``eig``, ``mean``), the means (``means``) and the ridge systems of the
    cells a row's loss needs (``cells``; ``ridge`` and ``center`` the
    released cell's): statistics of the private data.
    """

    _private = ("ridge", "center", "XtX", "Xty", "eig", "mean", "means", "cells")

    def __init__(self, *, adaptive, **common):
        super().__init__(alpha=np.nan, **common)
        self.adaptive = adaptive
        self.noise = "gaussian"

    @classmethod
    def from_budget(cls, epsilon, delta, data, *, scaler):
        """The private ridge's public parameters at the budget and the
        public size, and the scatter's eigen-system of ``data``."""
        n, intercept = data.n_samples, bool(scaler.fit_intercept)
        guarantee = output_perturbation_guarantee(epsilon, delta, n, noise="gaussian",
                                                  intercept=intercept)
        XtX, Xty = data.gram()
        release = cls(adaptive=AdaptiveRidge(epsilon, delta, n, XtX.shape[0], intercept),
                      scaler=scaler, n_samples=n, delta=delta, guarantee=guarantee)
        release.eig, release.mean = scatter_eigen(XtX, n, intercept)
        release.XtX, release.Xty = XtX, Xty
        # the rows' and the label's means (the constant's row of the Gram)
        release.means = data_means(XtX, Xty, n) if intercept else np.zeros(0)
        release.cells = {}
        return release

    def release(self, rng):
        """Draws the eigenvalue, which decides the ridge and the noise, then
        the coefficients, then (where the cell releases them) the means."""
        adaptive = self.adaptive
        self.lowest_eigenvalue = float(
            self.eig[0][0] + adaptive.eigen_noise * rng.standard_normal())
        self.cell = adaptive.cell(self.lowest_eigenvalue)
        self.alpha = adaptive.alpha(self.cell)
        self.sensitivity = adaptive.sensitivity(self.cell)
        self.noise_scale = adaptive.noise(self.cell)
        self.ridge = self.cell_ridge(self.cell)
        self.center = self.ridge.coef
        # coef stays the released draw: the published law's residuals need it
        coef, self.signal_ridge = adaptive.shrink(super().release(rng), self.cell)
        if np.isinf(self.signal_ridge):
            self.reason = NO_SIGNAL
        self.released_means = None
        if np.isfinite(adaptive.means_noise(self.cell)):
            self.released_means = self.means + adaptive.means_noise(
                self.cell) * rng.standard_normal(self.means.shape[0])
            coef, self.centred = adaptive.center(coef, self.released_means, self.cell)
        else:
            self.centred = False
        return coef

    def draw(self, rng, size=None):
        """Draw(s) of the coefficients given the released cell (before
        :meth:`AdaptiveRidge.shrink`)."""
        return _perturb(self.center, self.noise, self.noise_scale, rng, size)

    def fitted_attributes(self):
        return {"alpha_": self.alpha, "sensitivity_": self.sensitivity,
                "noise_scale_": self.noise_scale,
                "lowest_eigenvalue_": self.lowest_eigenvalue,
                "eigen_noise_": self.adaptive.eigen_noise,
                "signal_ridge_": self.signal_ridge,
                "released_means_": self.released_means,
                "means_noise_": self.adaptive.means_noise(self.cell),
                "centred_intercept_": self.centred}

    def cell_ridge(self, cell):
        """The non-private ridge solution at a cell's ridge (cached)."""
        if cell not in self.cells:
            self.cells[cell] = RidgeSystem(self.XtX, self.Xty, self.adaptive.alpha(cell),
                                           self.intercept)
        return self.cells[cell]

    def ratio(self, Xs, ys, in_sample):
        """Each row's Gaussian ratio bound sqrt(s_1^2 + max_k s_2k^2)
        (:class:`AdaptiveRidge`): s_1 its exact change of lambda_min over
        sigma_1, s_2k that of its exact sensitivity at cell k's ridge over
        cell k's noise and of its exact change of the means over their noise
        there (:meth:`AdaptiveRidge.stage_ratio`), over every cell the
        released value reaches with probability above the bound's delta
        share under this data set or the neighbour."""
        adaptive = self.adaptive
        # the rows in the scatter's eigenbasis: both stages' statistics
        projected = (Xs[:, : self.mean.shape[0]] - self.mean) @ self.eig[1]
        first = eigen_change(self.eig, self.mean, self.n_samples, intercept=self.intercept,
                             add=not in_sample, projected=projected)
        means = (means_change(self.means, self.n_samples, Xs, ys, add=not in_sample)
                 if self.intercept else 0.0)
        cells = adaptive.reachable(self.eig[0][0])
        sensitivity = ridge_row_sensitivity(self.eig, self.mean, self.n_samples,
                                            [self.cell_ridge(cell) for cell in cells],
                                            Xs, ys, in_sample, projected)
        second = np.zeros(Xs.shape[0])
        for k, cell in enumerate(cells):
            second = np.maximum(second, adaptive.stage_ratio(cell, sensitivity[:, k], means))
        return np.hypot(first / adaptive.eigen_noise, second)

    def person_losses(self, gram, cross, sizes, add=False):
        """Exact loss at ``delta`` of removing (adding, ``add``) each
        person's rows together, from their sums ``gram`` (``sum z z^T``),
        ``cross`` (``sum y z``) and numbers of rows ``sizes``: a row's
        composition (:meth:`ratio`) with the person's exact changes, that of
        lambda_min to the scatter without (with) their rows
        (:func:`set_eigen_change`, rounded up), of the ridge solution at each
        cell's ridge (:func:`person_shifts`) and of the means, over the cells
        the released value reaches under the data set or the neighbour
        (whose eigenvalue is the person's change away)."""
        adaptive, n = self.adaptive, self.n_samples
        first = set_eigen_change(self.XtX, n, self.eig[0][0], gram, sizes,
                                 intercept=self.intercept, add=add)
        means = (person_means_change(self.means, n, gram, cross, sizes, add)
                 if self.intercept else np.zeros(sizes.shape))
        low, high = adaptive.person_reachable(self.eig[0][0], first, n, self.intercept)
        second = np.zeros(sizes.shape)
        for cell in range(low.min(), high.max() + 1):
            shift = person_shifts(self.cell_ridge(cell), gram, cross, sizes, n,
                                  self.intercept, add)
            with np.errstate(invalid="ignore"):  # every row removed: inf over inf noise
                ratio = adaptive.stage_ratio(cell, np.linalg.norm(shift, axis=1), means)
            second = np.where((low <= cell) & (cell <= high), np.maximum(second, ratio), second)
        ratio = np.hypot(first / adaptive.eigen_noise, second)
        eps = adaptive.epsilon(ratio, cap=False)
        if not add:  # (an added person is not a neighbour the calibration covered: uncapped)
            # within the largest ratios the loss is at most the budget (the
            # root search's tolerance must not report more)
            worst = np.hypot(adaptive.ratio_eigen, adaptive.ratio_output)
            eps = np.where(ratio <= worst, np.minimum(eps, adaptive.budget), eps)
        return PersonLosses.of(eps, self.kind)

    def row_losses(self, add=False):
        """Training rows as a :class:`TwoStageRows`: the ratio of each row,
        then its exact loss."""
        if add:
            return partial(self.losses, add=True)
        return TwoStageRows(partial(self.ratio, in_sample=True), self.adaptive.epsilon)

    def losses(self, Xs, ys, add=False):
        if not add:
            return self.row_losses()(Xs, ys)
        if ys is None:  # the worst label is an end of [-1, 1] (|residual| grows)
            return np.maximum(*(self.losses(Xs, np.full(Xs.shape[0], end), add=True)
                                for end in (-1.0, 1.0)))
        return self.adaptive.epsilon(self.ratio(Xs, ys, in_sample=False), cap=False)
