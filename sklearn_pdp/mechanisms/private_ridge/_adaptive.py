"""The private release of the scatter's smallest eigenvalue that a private
ridge is chosen from (:doc:`/mechanisms/output_perturbation`,
:doc:`/mechanisms/objective_perturbation`).

``lambda~ = lambda_min(S) + sigma_1 N(0, 1)`` (S the slopes' matrix of
:func:`~sklearn_pdp.utils._eigen.scatter_eigen`, ``sigma_1 = c / s_1`` with c the
largest change of lambda_min by one row and s_1 the Gaussian ratio the
release spends); the lower bound ``lambda~ - z sigma_1 - c`` (z the
``1 - delta_bound`` normal quantile) is rounded down to a public grid of
cells, 0 and ``low * ratio^k``: with probability at least
``1 - delta_bound`` the cell's floor is below lambda_min of the data set and
of any neighbour. The ridge (and the second stage's calibration) is a public
function of the cell.
"""

import numpy as np
from scipy.special import ndtri

from ...utils._eigen import eigen_change, eigen_max_change, scatter_eigen
from ...utils._ridge_system import RidgeSystem
from .._signal import signal_ridge

# Public grid of lower bounds: 0 and _CELL_LOW * _CELL_RATIO^k.
_CELL_LOW = 1e-2
_CELL_RATIO = 2.0 ** 0.125
# Standard deviations of their noise's chi-square by which the released
# slopes must exceed it to be kept (AdaSSP's signal test).
_SIGNAL_MARGIN = 1.5
# mean_only_reason_ of a release whose slopes the test drops
NO_SIGNAL = ("the released slopes show no signal above their noise (the signal test, "
             "post-processing: the losses are those of the release); their noise "
             "relative to the signal falls with n_samples and epsilon")


class EigenCells:
    """The eigenvalue's release and its public grid of cells (module
    docstring), for a Gaussian ratio ``ratio``, the failure probability
    ``delta_bound`` of the lower bound, the size n and the intercept."""

    def __init__(self, ratio, delta_bound, n_samples, intercept, *, low=_CELL_LOW,
                 cell_ratio=_CELL_RATIO):
        self.delta_bound = delta_bound
        self.change = eigen_max_change(n_samples, intercept)
        self.eigen_noise = self.change / ratio
        self.margin = -ndtri(self.delta_bound) * self.eigen_noise + self.change
        # a row's neighbour may also have one more row (pdp_epsilon of new rows)
        self.reach = (-ndtri(self.delta_bound / 2.0) * self.eigen_noise
                      + eigen_max_change(n_samples + 1, intercept))
        self.cell_low, self.cell_ratio = low, cell_ratio

    def cell(self, released):
        """Cell of a released lambda~: -1 for the floor 0, else the largest
        k with ``low * ratio^k`` at most the lower bound."""
        raw = released - self.margin
        if not raw >= self.cell_low:
            return -1
        k = int(np.floor(np.log(raw / self.cell_low) / np.log(self.cell_ratio)))
        while self.floor(k) > raw:  # rounding of the logarithm
            k -= 1
        return k

    def floor(self, cell):
        return 0.0 if cell < 0 else self.cell_low * self.cell_ratio ** cell

    def reachable(self, lowest):
        """Cells that lambda~ reaches with probability above delta_bound
        under a data set with lambda_min(S) = ``lowest`` or a neighbour."""
        return range(self.cell(lowest - self.reach), self.cell(lowest + self.reach) + 1)

    def person_reachable(self, lowest, change, n_samples, intercept):
        """Each person's first and last reachable cell (arrays), as
        :meth:`reachable`, their window widened by what their rows' exact
        ``change`` of lambda_min exceeds one row's largest (at ``n_samples``
        + 1 rows)."""
        reach = self.reach + np.maximum(
            change - eigen_max_change(n_samples + 1, intercept), 0.0)
        return (np.array([self.cell(v) for v in lowest - reach]),
                np.array([self.cell(v) for v in lowest + reach]))

    def slope_noise(self, cell):
        """Variance (or an upper bound) per slope of the released
        coefficients' noise in ``cell``: the mechanism's."""
        raise NotImplementedError

    def shrink(self, coef, cell):
        """Post-processing of the coefficients released in ``cell``: the
        slopes and their James-Stein ridge (:func:`~sklearn_pdp.mechanisms._signal.signal_ridge`
        of the slopes against their noise, :meth:`slope_noise`,
        ``_SIGNAL_MARGIN`` deviations higher). In the floor cell the slopes
        are divided by one plus that ridge; in the others kept whole where it
        is finite (their ridge already weighs shrinkage against noise).
        ``inf``: slopes 0."""
        slopes = coef.shape[0] - int(self.intercept)
        noise2 = self.slope_noise(cell)
        ridge = float(signal_ridge(coef[:slopes], noise2, noise2, 1.0, _SIGNAL_MARGIN))
        if cell >= 0 and np.isfinite(ridge):
            ridge = 0.0
        out = np.array(coef, dtype=np.float64)
        out[:slopes] = 0.0 if np.isinf(ridge) else out[:slopes] / (1.0 + ridge)
        return out, ridge


class ScatterRelease:
    """What a release with a private ridge reads of the data: the Gram
    matrix (``XtX``, ``Xty``), the scatter's eigen-system (``eig``,
    ``mean``) and the ridge systems of the cells it needs (``cells``);
    ``cells_of`` gives the public parameters (an :class:`EigenCells` with
    ``alpha(cell)``). Statistics of the private data."""

    def read_scatter(self, data, cells_of):
        self.XtX, self.Xty = data.gram()
        self.eig, self.mean = scatter_eigen(self.XtX, data.n_samples, self.intercept)
        self.cells, self.cells_of = {}, cells_of

    def draw_cell(self, rng):
        """The released eigenvalue and its cell."""
        released = float(self.eig[0][0] + self.cells_of.eigen_noise * rng.standard_normal())
        return released, self.cells_of.cell(released)

    def cell_ridge(self, cell):
        """The non-private ridge solution at a cell's ridge (cached)."""
        if cell not in self.cells:
            self.cells[cell] = RidgeSystem(self.XtX, self.Xty, self.cells_of.alpha(cell),
                                           self.intercept)
        return self.cells[cell]

    def reachable(self):
        return self.cells_of.reachable(self.eig[0][0])

    def eigen_ratio(self, Xs, add):
        """Each row's exact change of lambda_min over the eigenvalue's noise."""
        x = Xs[:, : self.mean.shape[0]]
        change = eigen_change(self.eig, self.mean, self.n_samples, x,
                              intercept=self.intercept, add=add)
        return change / self.cells_of.eigen_noise
