"""The law of a published report of output perturbation's private ridge
(:doc:`/publish`, section "Output perturbation's private ridge").

A row's exact loss (:class:`~sklearn_pdp.mechanisms.output_perturbation._private_ridge.PrivateRidgeRelease`)
is the Gaussian epsilon at ``delta - delta_bound`` of its ratio
``sqrt(s_1^2 + max_k (s_2k^2 + s_3k^2))``: its change of lambda_min over
the eigenvalue's noise, its ridge sensitivity at each cell k of its window
over that cell's noise, and its change of the means over their noise in
cell k (released above the floor cell, with an intercept). From a published report alone each part is bounded with high
probability: lambda_min from the released eigenvalue (and Weyl's bound on
the noisy Gram), hence the window's cells; its change from the noisy feature
mean; each cell's sensitivity from the leverage bounds of the noisy Gram at
the cell's ridge, floored by that lambda_min, and the residual against the
released coefficients moved to the cell's ridge; the means' change from the
released means.
"""

import numpy as np
from scipy.special import ndtri
from scipy.stats import chi2

from ...accounting import gaussian_epsilon, gaussian_noise_scale
from ...utils._eigen import eigen_max_change
from ..output_perturbation._calibration import conditional_sensitivity
from ..mean._released_means import means_bound, means_max_change
from ...utils._ridge_system import leave_one_out


class EigenWindowLaw:
    """What the published laws of a ridge chosen from the released
    eigenvalue share (output perturbation's :class:`PrivateRidgeLaw`,
    objective perturbation's
    :class:`~sklearn_pdp.mechanisms.objective_perturbation._law.PrivateObjPertLaw`):
    the interval of lambda_min, the cells its window can reach and each
    cell's upper statistics. Reads the public ``adaptive`` (an
    :class:`~sklearn_pdp.mechanisms.private_ridge._adaptive.EigenCells` with ``alpha(cell)``),
    ``lowest_eigenvalue``, ``alpha`` and ``coef``."""

    @staticmethod
    def _allowance(total, worst, target):
        """The Gaussian ratio a publication may add to the release's
        ``worst`` within a ``total`` ratio (at ``target``)."""
        if not total > worst:
            raise ValueError(
                f"The release alone costs at least {target:.4g} at this delta: "
                "nothing is left for a publication; raise publish_epsilon."
            )
        return float(np.sqrt(total**2 - worst**2))

    def eigen_interval(self, published, beta):
        """An interval holding lambda_min(S) except with probability ``beta``
        (the released value's noise beyond its two-sided quantile), within
        Weyl's interval from the noisy Gram (:meth:`PublishedReport.scatter_interval`)."""
        spread = -ndtri(beta / 2.0) * self.adaptive.eigen_noise
        low, high = published.scatter_interval()
        low = max(low, self.lowest_eigenvalue - spread, 0.0)
        high = min(high, self.lowest_eigenvalue + spread)
        return low, max(high, low)

    def window(self, low, high):
        """``(cell, alpha, floor)`` of every cell the window of a lambda_min
        in [low, high] meets; cell k is in the data's window only if
        ``lambda_min >= floor_k + margin - reach``, the floor its statistics
        may take."""
        ad = self.adaptive
        for k in range(ad.cell(low - ad.reach), ad.cell(high + ad.reach) + 1):
            floor = max(low, ad.floor(k) + ad.margin - ad.reach) if k >= 0 else low
            yield k, ad.alpha(k), floor

    def cell_statistics(self, published, Xs, alpha, floor, residual, noise):
        """Upper in-sample statistics of each row at ridge ``alpha``, with
        lambda_min(S) >= ``floor`` (:meth:`PublishedReport.upper_statistics`),
        the residual moved to that ridge.

        ``residual`` bounds ``|y - x^T theta_hat*|`` at the released ridge
        alpha*, ``noise`` the norm of the released noise; the fit moves by
        ``theta_hat_alpha - theta_hat* = (alpha* - alpha) H_alpha^{-1} P
        theta_hat*``, along the row at most ``||H_alpha^{-1} x|| (||P theta|| +
        noise)`` or ``sqrt(mu') (||P theta||_{M^{-1}} + noise /
        sqrt(lambda_min(M)))`` with M <= H_alpha (Cauchy-Schwarz).
        """
        stats = published.upper_statistics(Xs, alpha, floor)
        if alpha != self.alpha:
            penalised = self.coef.copy()
            if self.intercept:
                penalised[-1] = 0.0
            moved = abs(alpha - self.alpha)
            shift = moved * (np.linalg.norm(penalised) + noise) * np.sqrt(stats["inverse_norm2"])
            along = published.upper_statistics(penalised[None, :], alpha, floor)
            with np.errstate(divide="ignore", invalid="ignore"):
                weighted = np.sqrt(along["leverage"][0]) + noise / np.sqrt(stats["lowest"])
            residual = residual + np.fmin(shift, moved * weighted * np.sqrt(stats["leverage"]))
        stats["residual"] = residual
        return stats


class PrivateRidgeLaw(EigenWindowLaw):
    """The published-report law of the private ridge (a mixin of
    :class:`~sklearn_pdp.mechanisms.output_perturbation._private_ridge.PrivateRidgeRelease`):
    reads only its public attributes (``adaptive``, ``lowest_eigenvalue``,
    ``alpha``, ``noise_scale``, ``coef``, ``released_means``, ``delta``,
    ``n_samples``, ``intercept``) and the published report.

    Row statistics are ``{"ratio": s}``, the Gaussian ratio of the model's
    two stages (exact from :meth:`statistics`, an upper bound from
    :meth:`published_statistics`). Both stages and a published Gram matrix
    are Gaussian mechanisms on the event where the cell's floor bounds the
    smaller data set's lambda_min: the ratios add in squares, and the event's
    failure ``delta_bound`` adds to delta (as for the guarantee).
    """

    def _ratio_cap(self):
        """The largest model ratio of a row removed from the n rows (the
        guarantee's, ``mu``) or added to them: an added row is removed from
        n + 1 rows, whose eigenvalue may move by ``eigen_max_change(n + 1)``
        and whose ridge sensitivity, at a cell k its window reaches, is at
        most :func:`conditional_sensitivity` at n + 1 rows above the floor
        that reaching k implies, ``floor_k + margin - reach``."""
        if "_cap_ratio" not in self.__dict__:
            ad = self.adaptive
            n = self.n_samples
            # lambda_min(S) <= trace(S) <= n: no window reaches further
            cells = range(-1, ad.cell(n + ad.reach) + 1)
            # the means move by at most those of n + 1 rows <= n rows'
            means = means_max_change(n) if self.intercept else 0.0
            second = max(
                float(ad.stage_ratio(k, conditional_sensitivity(
                    max(ad.floor(k) + ad.margin - ad.reach, 0.0) if k >= 0 else 0.0,
                    ad.alpha(k), n + 1, self.intercept), means))
                for k in cells
            )
            first = eigen_max_change(n + 1, self.intercept) / ad.eigen_noise
            self._cap_ratio = max(self._removal_ratio(), float(np.hypot(first, second)))
        return self._cap_ratio

    def _removal_ratio(self):
        """The guarantee's ratio mu = sqrt(s_1^2 + s_2^2) (s_2 the floor
        cell's, that of the coefficients and the means above it)."""
        ad = self.adaptive
        return float(np.hypot(ad.ratio_eigen, ad.ratio_output))

    def _gauss_delta(self, delta):
        # below the cells' share of delta nothing is left: eps is inf, never 0
        return max(delta - self.adaptive.delta_bound, 0.0)

    def statistics(self, Xs, ys, add=False):
        """Each row's exact model ratio (``ys`` None: the worst label, an end
        of [-1, 1]); a training row's at most the guarantee's (its loss is
        capped at the budget)."""
        if ys is None:
            ends = (np.full(Xs.shape[0], end) for end in (-1.0, 1.0))
            ratio = np.maximum(*(self.ratio(Xs, e, in_sample=not add) for e in ends))
        else:
            ratio = self.ratio(Xs, ys, in_sample=not add)
        if not add:
            ratio = np.minimum(ratio, self._removal_ratio())
        return {"ratio": ratio}

    def epsilon(self, delta, stats, gaussian_ratio=None):
        ratio = np.minimum(stats["ratio"], self._ratio_cap())
        extra = 0.0 if gaussian_ratio is None else gaussian_ratio
        eps = gaussian_epsilon(self._gauss_delta(delta), np.hypot(ratio, extra))
        if gaussian_ratio is None and delta == self.delta:
            # the guarantee's ratio costs exactly the budget: the root
            # search's tolerance must not report more
            eps = np.where(ratio <= self._removal_ratio(),
                           np.minimum(eps, self.adaptive.budget), eps)
        return eps

    def dp_epsilon(self, delta, gaussian_ratio=None):
        if gaussian_ratio is None and delta == self.delta:
            return self.adaptive.budget
        extra = 0.0 if gaussian_ratio is None else gaussian_ratio
        return float(gaussian_epsilon(self._gauss_delta(delta),
                                      np.hypot(self._removal_ratio(), extra)))

    def cap_epsilon(self, delta, gaussian_ratio=None):
        extra = 0.0 if gaussian_ratio is None else gaussian_ratio
        cap = gaussian_epsilon(self._gauss_delta(delta), np.hypot(self._ratio_cap(), extra))
        return float(max(cap, self.dp_epsilon(delta, gaussian_ratio)))

    def gaussian_allowance(self, delta, target):
        worst = self._removal_ratio()
        total = 1.0 / gaussian_noise_scale(target, self._gauss_delta(delta))
        return self._allowance(total, worst, target)

    def residual_margin(self, beta, stats):
        """The released coefficients' Gaussian noise along each row."""
        return ndtri(1.0 - beta / 2.0) * self.noise_scale * np.sqrt(stats["norm2"])

    # -- bounds from a published report --------------------------------------

    def published_statistics(self, published, Xs, ys):
        """An upper bound on each row's model ratio from the published report,
        valid with probability at least ``1 - published.beta``: beta/2 on the
        Gram noise (:meth:`PublishedReport.noise_bound`), beta/8 on the
        eigenvalue's noise, beta/4 on the coefficients' noise along the row,
        beta/16 on its norm and beta/16 on the means' noise
        (:meth:`means_bound`)."""
        ad, beta = self.adaptive, published.beta
        low, high = self.eigen_interval(published, beta / 8.0)
        residual = published.observed_residual(Xs, ys) + self.residual_margin(
            beta / 4.0, {"norm2": np.einsum("ij,ij->i", Xs, Xs)})
        noise = self.noise_scale * np.sqrt(chi2.isf(beta / 16.0, self.coef.size))
        means = self.means_bound(Xs, ys, beta / 16.0) if self.intercept else 0.0
        second = np.zeros(Xs.shape[0])
        bounds = {}  # cells of one ridge and floor share their bound
        for k, *key in self.window(low, high):
            key = tuple(key)
            if key not in bounds:
                bounds[key] = self.cell_sensitivity(published, Xs, *key, residual, noise)
            second = np.maximum(second, ad.stage_ratio(k, bounds[key], means))
        first = published.eigen_change_bound(Xs) / ad.eigen_noise
        return {"ratio": np.hypot(first, second)}

    def means_bound(self, Xs, ys, beta):
        """Upper bound on each row's change of the means (removed or added),
        ``||z - mean(z)|| / (n - 1)``, except with probability ``beta``: the
        distance to the released means plus their noise's norm quantile, at
        most the global change (``ys`` None: the worst label, an end of
        [-1, 1]); the global change where the release drew none (its cell
        the floor)."""
        if self.released_means is None:
            return np.full(Xs.shape[0], means_max_change(self.n_samples))
        noise = self.adaptive.means_noise(self.cell)
        return noise * means_bound(self.released_means, noise, self.n_samples, Xs, ys, beta)

    def cell_sensitivity(self, published, Xs, alpha, floor, residual, noise):
        """Upper bound on each row's ridge sensitivity ``|r| ||H^{-1} x||``
        (leave-one-out r) at ridge ``alpha``, with lambda_min(S) >= ``floor``
        (:meth:`cell_statistics`)."""
        stats = self.cell_statistics(published, Xs, alpha, floor, residual, noise)
        _, r = leave_one_out(stats["leverage"], stats["residual"])
        with np.errstate(invalid="ignore"):
            bound = np.abs(r) * np.sqrt(stats["inverse_norm2"])
        return np.where(np.isnan(bound), np.inf, bound)
