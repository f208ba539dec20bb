"""Objective perturbation at a privately chosen ridge
(:doc:`/mechanisms/objective_perturbation`, "The private ridge").

A share of the budget releases the smallest eigenvalue of the scatter
(:mod:`sklearn_pdp.mechanisms.private_ridge._adaptive`) and, with an intercept, the means of
the rows and of the label (:mod:`sklearn_pdp.mechanisms.mean._released_means`); the
eigenvalue's lower bound's cell decides the ridge, and objective
perturbation at that ridge is calibrated to the rest of the budget over the
data sets whose eigenvalue is at least the cell's floor. The Gaussian stage
and objective perturbation compose by basic composition, row by row.
"""

import numpy as np

from ...accounting import (
    domain_bounds, gaussian_noise_scale, objpert_auto_alpha, objpert_noise_scale,
)
from ..private_ridge._adaptive import _SIGNAL_MARGIN, NO_SIGNAL, EigenCells, ScatterRelease
from ...accounting._objpert_person import objpert_person_epsilon
from ...utils._eigen import eigen_max_change, set_eigen_change
from ...utils._people import PersonLosses
from ._release import _remove_row, objpert_draw
from ._law import PrivateObjPertLaw
from .._release import Release
from .._signal import signal_ridge
from ..mean._released_means import (
    data_means, means_change, means_max_change, means_max_ratio, person_means_change,
)

# Shares of epsilon and of delta spent on lambda_min (a Gaussian release),
# and of delta on the failure of its lower bound; objective perturbation
# has the rest.
_EIGEN_SHARE = 0.2
_EIGEN_DELTA_SHARE = 0.25
_BOUND_DELTA_SHARE = 0.25
# With an intercept, the share of epsilon added to that Gaussian stage for
# the means of the rows and of the label (objective perturbation's is less).
_MEANS_SHARE = 0.02
# Cells a factor 2^(1/4) apart (output perturbation's are 2^(1/8)): each
# reachable cell costs a calibration.
_CELL_RATIO = 2.0 ** 0.25
_CELL_LOW_SHARE = 0.5
# Number of candidate ridges (a public geometric grid).
_ALPHA_GRID = 200
# Largest noise variance of a prediction at a unit row (labels in [-1, 1])
# that the private ridge allows, as output perturbation's.
_NOISE_TARGET = 1e-3
# The floor cell's, along a unit slope direction: its slopes pass the signal
# test and its intercept follows them on the released means.
_FLOOR_NOISE_TARGET = 1e-3
# Bisections of the floor cell's last doubling (its ridge to 2^(1/4)).
_FLOOR_REFINE = 2
# Largest noise variance of the floor cell's intercept, sigma^2 / n^2: a
# twentieth of the variance of labels whose spread is a hundredth of their
# range (the noise a prediction keeps when the slopes are dropped).
_INTERCEPT_NOISE = 2e-5
# Doublings of a cell's ridge where its loss floor is above the budget.
_MAX_DOUBLINGS = 40


class AdaptiveObjPert(EigenCells):
    """Public parameters of objective perturbation's private ridge
    (:doc:`/mechanisms/objective_perturbation`), for a budget (epsilon,
    delta), the size n, the number of features d and the intercept.

    1. ``lambda~ = lambda_min(S) + sigma_1 N(0, 1)`` with the Gaussian ratio
       of ``(0.2 epsilon, delta / 4)``; its lower bound (failure probability
       ``delta / 4``) rounded down to the grid of cells. With an intercept
       the means of the rows and of the label plus Gaussian noise, the
       stage's ratio that of ``(0.22 epsilon, delta / 4)``.
    2. Objective perturbation at the cell's ridge ``alpha_k``, with the
       noise ``sigma_k`` that meets the rest, ``(0.78 epsilon, delta / 2)``
       (0.8 without an intercept), over every data set whose lambda_min(S)
       is at least the cell's floor L_k (:func:`objpert_noise_scale` with
       ``lower=L_k``); the floor cell (L = 0) has the ridge of
       :meth:`public_alpha`. ``alpha_k`` minimises the squared bias
       factor ``(alpha / (L_k + alpha))^2`` plus ``d`` times the noise
       variance along a slope, ``sigma~^2 / (L_k + alpha)^2``, with the
       Gaussian approximation ``sigma~ = sqrt(N) r_max / s_2`` of the noise
       (a row moves the objective's gradient by ``x r``; s_2 the Gaussian
       ratio of the second stage's budget), raised to meet the noise target
       at a unit row, at most the floor cell's, and doubled where the
       loss floor is above the budget.
    3. Post-processing: :meth:`shrink` (the signal test) and
       :meth:`follow` (the intercept of dropped slopes).

    Guarantee: the cell's floor bounds lambda_min of the smaller of two
    neighbours but with probability ``delta / 4`` under either; on that
    event the second stage is ``(epsilon_objpert, delta / 2)``-DP, and basic
    composition gives ``(epsilon, delta)``. A row's loss: the Gaussian
    epsilon at ``delta / 4`` of its exact changes of the eigenvalue and of
    the means over their noises, plus its largest second-stage
    loss at ``delta / 2`` over the cells the released value reaches with
    probability above ``delta / 4`` under the data set or the neighbour.
    """

    def __init__(self, epsilon, delta, n_samples, n_features, intercept):
        self.budget = float(epsilon)
        means_share = _MEANS_SHARE if intercept else 0.0
        self.epsilon_eigen = (_EIGEN_SHARE + means_share) * self.budget
        self.epsilon_objpert = self.budget - self.epsilon_eigen
        self.delta_eigen = _EIGEN_DELTA_SHARE * delta
        self.delta_objpert = (1.0 - _EIGEN_DELTA_SHARE - _BOUND_DELTA_SHARE) * delta
        # the eigenvalue's ratio is that of its share alone; the means take
        # the rest of the Gaussian stage's (the ratios add in squares)
        ratio = 1.0 / gaussian_noise_scale(_EIGEN_SHARE * self.budget, self.delta_eigen)
        total = 1.0 / gaussian_noise_scale(self.epsilon_eigen, self.delta_eigen)
        self.ratio_means = np.sqrt(max(total**2 - ratio**2, 0.0))
        self._means_noise = (means_max_change(n_samples) / self.ratio_means
                             if intercept else np.inf)
        super().__init__(ratio, _BOUND_DELTA_SHARE * delta, n_samples, intercept,
                         cell_ratio=_CELL_RATIO)
        # lower bounds under half the margin (the noise's own scale) round to
        # the floor cell: each cell a row's loss reaches costs a calibration
        self.cell_low = max(self.cell_low, _CELL_LOW_SHARE * self.margin)
        self.n_samples, self.n_features, self.intercept = n_samples, n_features, intercept
        self.ratio_objpert = 1.0 / gaussian_noise_scale(self.epsilon_objpert,
                                                        self.delta_objpert)
        low = max(1e-9 * n_samples * (n_features + intercept), 1e-6)
        self.alphas = np.geomspace(low, max(1e8, 1e3 * n_samples), _ALPHA_GRID)

    def applies(self):
        """Whether the eigenvalue can help: the margin is at most
        ``n / (3 d)``, lambda_min where the features fill the box that the
        unit ball bounds (``||x||^2`` about 1/3, the trace shared by d
        eigenvalues), and the floor cell's public rule exists at the second
        stage's budget. Public quantities only."""
        if not self.margin <= self.n_samples / (3.0 * self.n_features):
            return False
        try:
            self.public_alpha()
        except ValueError:
            return False
        return True

    def public_alpha(self):
        """The floor cell's ridge (cached): the public rule at the second
        stage's budget and at the slopes' noise target
        ``_FLOOR_NOISE_TARGET``, doubled while the intercept's noise
        ``sigma^2 / n^2`` (what a prediction keeps when the signal test drops
        the slopes) is above ``_INTERCEPT_NOISE``; at most the public rule at
        ``PREDICTION_NOISE``."""
        if "_floor_ridge" not in self.__dict__:
            args = (self.epsilon_objpert, self.delta_objpert, self.n_samples,
                    self.n_features, self.intercept)
            public = objpert_auto_alpha(*args)
            alpha = objpert_auto_alpha(*args, target=_FLOOR_NOISE_TARGET,
                                       refine=_FLOOR_REFINE)
            while (self.intercept and alpha < public
                   and (self._sigma(alpha, 0.0) / self.n_samples) ** 2 > _INTERCEPT_NOISE):
                alpha *= 2.0
            self._floor_ridge = float(min(alpha, public))
        return self._floor_ridge

    def gauss_ratio(self, eigen_ratio, means_ratio):
        """A row's Gaussian ratio of the first stage, from its changes of
        lambda_min and of the means over their noises (the ratios add in
        squares)."""
        return np.hypot(eigen_ratio, means_ratio)

    def worst_gauss_ratio(self, n_samples):
        """The first stage's ratio at the largest changes of a row removed
        from ``n_samples`` rows (the means': at most the n rows' bound)."""
        means = (means_max_ratio(self.n_samples, self._means_noise) if self.intercept
                 else 0.0)
        return float(self.gauss_ratio(
            eigen_max_change(n_samples, self.intercept) / self.eigen_noise, means))

    def means_noise(self, cell=None):
        """The released means' noise (every cell's; ``inf`` without an
        intercept: none are released)."""
        return self._means_noise

    def follow(self, raw, coef, means):
        """Post-processing: the intercept of the shrunk slopes ``coef`` at the
        released rows' means. Objective perturbation's intercept is exactly
        ``mean(y) - mean(x)^T slopes - b_0 / n`` of the released ``raw``
        slopes; the part of the slopes the signal test removes is taken out
        of it at the released ``means`` (the rows' then the label's), so a
        dropped slope leaves the label mean, not its noise along the rows'
        mean."""
        if not self.intercept:
            return coef
        out = np.array(coef, dtype=np.float64)
        out[-1] += means[:-1] @ (raw[:-1] - coef[:-1])
        return out

    def alpha(self, cell):
        public = self.public_alpha()
        if cell < 0:
            return public
        lower = self.floor(cell)
        bound = domain_bounds(self.n_samples, self.alphas, self.intercept, lower=lower)
        noise = np.sqrt(bound["norm2"]) * bound["residual"] / self.ratio_objpert
        noise2 = (noise / (lower + self.alphas)) ** 2
        bias = (self.alphas / (lower + self.alphas)) ** 2
        best = np.argmin(bias + self.n_features * noise2)
        quiet = np.flatnonzero((1.0 + self.intercept) * noise2 <= _NOISE_TARGET)
        if quiet.size:
            best = max(best, quiet[0])
        alpha = float(min(self.alphas[best], public))
        # objective perturbation's loss floor (no noise removes it) must be
        # below the budget: a larger ridge lowers it
        for _ in range(_MAX_DOUBLINGS):
            if alpha >= public or self._feasible(alpha, lower):
                break
            alpha *= 2.0
        return min(alpha, public)

    def slope_noise(self, cell, spread=1.0):
        """An upper bound on the noise variance per slope in ``cell``:
        ``theta - theta_hat = -H^{-1} b``, the slopes' block of ``H^{-1}``
        at most ``1 / (L_k + alpha_k)`` on the floor's event, and ``b``'s
        part along them ``b_s - x_bar b_0`` of variance at most
        ``(1 + spread) sigma_k^2`` with an intercept (``spread`` at least
        ``||x_bar||^2``, at most 1)."""
        return ((1.0 + self.intercept * spread) * self.noise(cell) ** 2
                / (self.floor(cell) + self.alpha(cell)) ** 2)

    def shrink(self, coef, cell, means=None):
        """Post-processing of the coefficients released in ``cell``
        (:meth:`EigenCells.shrink`): the slopes set to 0 where they show no
        signal above their noise, else kept whole (the floor cell's too:
        the James-Stein ridge of that bound shrinks informative slopes too
        much); with the released ``means``, the noise of ``b_0`` along the
        slopes taken at the released rows' mean."""
        spread = 1.0
        if means is not None and self.intercept:
            spread = min(float(means[:-1] @ means[:-1]), 1.0)
        noise2 = self.slope_noise(cell, spread)
        slopes = coef.shape[0] - int(self.intercept)
        ridge = float(signal_ridge(coef[:slopes], noise2, noise2, 1.0, _SIGNAL_MARGIN))
        out = np.array(coef, dtype=np.float64)
        if np.isinf(ridge):
            out[:slopes] = 0.0
            return out, ridge
        return out, 0.0

    def _feasible(self, alpha, lower):
        try:
            self._sigma(alpha, lower)
        except ValueError:
            return False
        return True

    def _sigma(self, alpha, lower):
        return objpert_noise_scale(self.epsilon_objpert, self.delta_objpert, alpha,
                                   self.n_samples, self.intercept, lower)

    def noise(self, cell):
        """The noise sigma_k of objective perturbation at the cell."""
        return self._sigma(float(self.alpha(cell)), float(self.floor(cell)))


class PrivateObjPertRelease(PrivateObjPertLaw, ScatterRelease, Release):
    """Objective perturbation at a privately chosen ridge
    (:class:`AdaptiveObjPert`).

    The fit's draw releases lambda_min + N(0, eigen_noise^2), then
    objective perturbation at the ridge and the noise of the released
    value's cell. A row's loss is that of the pair at ``delta`` (basic
    composition); the law of a published report is
    :class:`~sklearn_pdp.mechanisms.objective_perturbation._law.PrivateObjPertLaw`.

    Holds the Gram matrix, the scatter's eigen-system and the ridge systems
    of the cells a row's loss needs (``ridge`` the released cell's):
    statistics of the private data.
    """

    _private = ("ridge", "XtX", "Xty", "eig", "mean", "means", "cells")

    def __init__(self, *, adaptive, **common):
        super().__init__(alpha=np.nan, **common)
        self.adaptive = adaptive

    @staticmethod
    def calibration(epsilon, delta, n_samples, n_features, intercept):
        """The private ridge's public parameters, or None where the
        eigenvalue cannot help (then objective perturbation at the public
        rule, :class:`~sklearn_pdp.mechanisms.objective_perturbation._release.ObjPertRelease`)."""
        adaptive = AdaptiveObjPert(epsilon, delta, n_samples, n_features, intercept)
        return adaptive if adaptive.applies() else None

    @classmethod
    def from_budget(cls, epsilon, delta, data, *, scaler, adaptive=None):
        n, intercept = data.n_samples, bool(scaler.fit_intercept)
        if adaptive is None:
            adaptive = AdaptiveObjPert(epsilon, delta, n, data.n_features - intercept,
                                       intercept)
        release = cls(adaptive=adaptive, scaler=scaler, n_samples=n, delta=delta,
                      guarantee=(float(epsilon), float(delta)))
        release.read_scatter(data, adaptive)
        release.means = (data_means(release.XtX, release.Xty, n) if intercept
                         else np.zeros(0))
        return release

    def release(self, rng):
        """Draws the eigenvalue, which decides the ridge and the noise, then
        the coefficients."""
        self.lowest_eigenvalue, self.cell = self.draw_cell(rng)
        self.alpha = self.adaptive.alpha(self.cell)
        self.noise_scale = self.adaptive.noise(self.cell)
        self.ridge = self.cell_ridge(self.cell)
        # coef stays the released draw; the estimator's slopes pass the signal test
        raw = super().release(rng)
        self.released_means = None
        if self.intercept:
            self.released_means = self.means + self.adaptive.means_noise() * rng.standard_normal(
                self.means.shape[0])
        coef, self.signal_ridge = self.adaptive.shrink(raw, self.cell, self.released_means)
        if np.isinf(self.signal_ridge):
            self.reason = NO_SIGNAL
        if self.intercept:
            coef = self.adaptive.follow(raw, coef, self.released_means)
        return coef

    def draw(self, rng, size=None):
        """Draw(s) of the coefficients given the released cell."""
        return objpert_draw(self.ridge, self.noise_scale, rng, size)

    def fitted_attributes(self):
        return {"alpha_": self.alpha, "noise_scale_": self.noise_scale,
                "lowest_eigenvalue_": self.lowest_eigenvalue,
                "eigen_noise_": self.adaptive.eigen_noise,
                "signal_ridge_": self.signal_ridge,
                "released_means_": self.released_means,
                "means_noise_": self.adaptive.means_noise()}

    def second_stage(self, Xs, ys, add):
        """Each row's ``(||x||^2, m0, mu, ||x||^2 x^T H^{-2} x)`` against the
        smaller data set, each the largest over the reachable cells (m0 =
        ||x|| |r| / sigma_k): the loss grows with each (the mechanism's
        page), so its value there bounds every cell's."""
        m0 = mu = spread = 0.0
        for cell in self.reachable():
            ridge = self.cell_ridge(cell)
            if add:
                stats = ridge.row_statistics(Xs, inverse_norm=True, norm=True)
                fitted = Xs @ ridge.coef
                # the loss grows with |r|: the worst label is an end of [-1, 1]
                r = 1.0 + np.abs(fitted) if ys is None else ys - fitted
                norm2, mu_k, w = stats["norm2"], stats["leverage"], stats["inverse_norm2"]
            else:
                norm2, mu_k, w, r = _remove_row(
                    ridge.row_statistics(Xs, ys, inverse_norm=True, norm=True))
            m0 = np.maximum(m0, np.sqrt(norm2) * np.abs(r) / self.adaptive.noise(cell))
            mu = np.maximum(mu, mu_k)
            spread = np.maximum(spread, norm2 * w)
        return norm2, m0, mu, spread

    def first_stage(self, Xs, ys, add):
        """Each row's exact Gaussian ratio of the first stage: its change of
        lambda_min and (with an intercept) of the means over their noises."""
        means = 0.0
        if self.intercept:
            noise = self.adaptive.means_noise()
            ends = [ys] if ys is not None else [np.full(Xs.shape[0], e) for e in (-1.0, 1.0)]
            means = np.max([means_change(self.means, self.n_samples, Xs, y, add, noise)
                            for y in ends], axis=0)
        return self.adaptive.gauss_ratio(self.eigen_ratio(Xs, add), means)

    def statistics(self, Xs, ys, add=False):
        """Each row's exact statistics for :meth:`epsilon`
        (:class:`~sklearn_pdp.mechanisms.objective_perturbation._law.PrivateObjPertLaw`):
        its Gaussian ratio of the first stage (``eigen``, :meth:`first_stage`)
        and :meth:`second_stage`; training rows are marked ``removal``."""
        norm2, m0, mu, spread = self.second_stage(Xs, ys, add)
        return {"eigen": self.first_stage(Xs, ys, add), "norm2": norm2, "m0": m0, "mu": mu,
                "spread": spread, "removal": np.full(Xs.shape[0], not add)}

    def person_losses(self, gram, cross, sizes, add=False):
        """Loss at ``delta`` of removing (adding, ``add``) each person's rows
        together, from their sums ``gram`` (``sum z z^T``), ``cross``
        (``sum y z``) and numbers of rows ``sizes``: a row's composition
        with the person's exact changes, of lambda_min to the scatter
        without (with) their rows (:func:`set_eigen_change`, rounded up) and
        of the means, plus the largest certified objective perturbation loss
        of their rows (:meth:`ObjPertRelease.person_losses`) over the cells
        the released value reaches under the data set or the neighbour
        (whose eigenvalue is the person's change away); of kind "bound"
        where a cell's law was, as in that method."""
        ad, n = self.adaptive, self.n_samples
        change = set_eigen_change(self.XtX, n, self.eig[0][0], gram, sizes,
                                  intercept=self.intercept, add=add)
        means = (person_means_change(self.means, n, gram, cross, sizes, add, ad.means_noise())
                 if self.intercept else 0.0)
        first = self._first(self.delta, ad.gauss_ratio(change / ad.eigen_noise, means), None)
        low, high = ad.person_reachable(self.eig[0][0], change, n, self.intercept)
        second, smoothed = np.zeros(sizes.shape), np.zeros(sizes.shape, dtype=bool)
        for cell in range(low.min(), high.max() + 1):
            inside = np.flatnonzero((low <= cell) & (cell <= high))
            eps, smooth = objpert_person_epsilon(
                self._deltas(self.delta)[1], self.cell_ridge(cell), gram[inside],
                cross[inside], ad.noise(cell), add)
            # nan (not certified) stays nan: the fit falls back to group privacy
            second[inside] = np.maximum(second[inside], eps)
            smoothed[inside] |= smooth
        return PersonLosses.of(first + second, self.kind, bound=smoothed)

    def losses(self, Xs, ys, add=False):
        if ys is None:  # the worst label is an end of [-1, 1] (each stage grows with |y|)
            return np.maximum(*(self.losses(Xs, np.full(Xs.shape[0], end), add)
                                for end in (-1.0, 1.0)))
        return self.epsilon(self.delta, self.statistics(Xs, ys, add))
