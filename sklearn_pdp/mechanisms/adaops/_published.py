"""Bounds of AdaOPS's per-row losses from a published report alone
(:doc:`/publish`): the upper statistics of each row that the adaptive
composition bound of :class:`~sklearn_pdp.mechanisms.adaops._release.AdaOPSRelease`
takes, valid with high probability over the noise of the release and of
the publication.
"""

import numpy as np
from scipy import linalg
from scipy.special import ndtri
from scipy.stats import chi2

from ...accounting._adaops import lipschitz
from ..mean._released_means import means_bound
from ...utils._ridge_system import leave_one_out

# A published bound leaves out the pairs of cells beyond a row's window: their
# mass, on both grids and both sides, is this share of the law's delta.
_PUBLISHED_WINDOW_SHARE = 0.05


class AdaOPSPublishedBounds:
    """The published-report half of AdaOPS's law (a mixin of
    :class:`~sklearn_pdp.mechanisms.adaops._release.AdaOPSRelease`): reads only its
    public attributes (``cal``, ``cell``, ``alpha``, ``gamma``, ``coef``,
    ``released_means``, ``delta``, ``n_samples``, ``intercept``) and the
    published report."""

    def published_statistics(self, published, Xs, ys):
        """Upper statistics of each scaled row from the published object,
        valid with probability at least ``1 - published.beta``: beta/2 on the
        Gram noise (:meth:`PublishedReport.noise_bound`), beta/4 on the
        sample's noise along the row, beta/8 on the sample's noise norm (where
        the means are released beta/16, and beta/16 on their noise's norm:
        :func:`means_bound`), beta/8 on the conditioning's noise given its
        released cell. The means' ratio joins the cells' Gaussian mechanism
        in squares."""
        cal = self.cal
        z_window = -ndtri(_PUBLISHED_WINDOW_SHARE * self.delta / 4.0)
        low, high = self.conditioning_interval(published, published.beta / 8.0)
        # the conditioning cells within z_window deviations of the release
        # of either data set of a pair of neighbours
        reach = z_window * cal.sigma + cal.change
        first, last = cal.index([low - cal.margin - reach, high - cal.margin + reach])
        # A cell k is in the data's window only if G - margin + reach reaches
        # its lower edge: its statistics may assume G >= that edge + margin
        # - reach (a cell outside the window is in delta's share), each cell
        # with its own floor and gamma. The released cell's bounds, which
        # every ridge's start from, assume only G >= low.
        released = self._released_bounds(published, Xs, ys, low)
        ratio2 = np.zeros(Xs.shape[0])
        ops, bounds = [], {}
        for k in range(first, last + 1):
            key = cal.ridge(k), self.cell_floor(k, low)
            if key not in bounds:
                alpha, floor = key
                bounds[key] = self.ridge_bounds(published, Xs, alpha, released, floor)
            k_ratio, k_gamma = self._bound_cells(k, bounds[key], z_window)
            ratio2 = np.maximum(ratio2, k_ratio)
            ops.append((bounds[key]["mu"], bounds[key]["r"], k_gamma))
        change = self.conditioning_change(published, Xs, high)
        cells = np.hypot(change / cal.sigma, ratio2)
        if self.released_means is not None:
            means = means_bound(self.released_means, cal.means_noise, self.n_samples,
                                Xs, ys, published.beta / 16.0)
            cells = np.hypot(cells, means)
        return {"cells": cells, "ops": ops}

    def cell_floor(self, k, low):
        """A lower bound on the data's G wherever cell k is in its window
        (:meth:`published_statistics`): G - margin + reach reaches the
        cell's lower edge; ``low`` (the conditioning interval's) otherwise."""
        cal = self.cal
        reach = -ndtri(_PUBLISHED_WINDOW_SHARE * self.delta / 4.0) * cal.sigma + cal.change
        return max(low, float(cal.edges(k)[0]) + cal.margin - reach)

    def _released_bounds(self, published, Xs, ys, floor=None):
        """What every ridge's bounds start from: the rows' upper statistics
        against the released cell's H, their observed residuals plus the
        sample's noise along them (two-sided beta/4), and a bound on the
        norm of the sample's noise theta - theta_hat (chi-square, beta/8;
        beta/16 where the means are released,
        through lambda_min(H) >= ``lowest``). ``floor``: a lower bound on
        the data's G (:meth:`scatter_floor`)."""
        beta = published.beta
        stats = published.upper_statistics(Xs, self.alpha,
                                           self.scatter_floor(published, floor))
        margin = ndtri(1.0 - beta / 8.0) * np.sqrt(stats["leverage"] / self.gamma)
        with np.errstate(divide="ignore"):
            share = 16.0 if self.released_means is not None else 8.0
            noise = np.sqrt(chi2.isf(beta / share, self.coef.size)
                            / (self.gamma * stats["lowest"]))
        return {"stats": stats, "residual": published.observed_residual(Xs, ys) + margin,
                "noise": noise}

    def scatter_floor(self, published, floor):
        """A lower bound on lambda_min of the centred scatter matrix (of
        X^T X without intercept) from one on G: G (1 + ||x_bar||)^2, with
        ||x_bar|| at least the noisy mean's norm less its error. None for
        ``floor`` None."""
        if floor is None or not self.intercept:
            return floor
        centre, error = published.feature_mean()
        return floor * (1.0 + max(np.linalg.norm(centre) - error, 0.0)) ** 2

    def ridge_bounds(self, published, Xs, alpha, released, floor=None):
        """Upper bounds, for the fit at ridge ``alpha``, on each row's OPS
        statistics against the smaller data set (``mu``, ``r``), on its
        change of log R (``log_step``), and the data's R (``R_low``,
        ``R_high``), on the events of :meth:`published_statistics`.

        ``theta_hat_alpha - theta_hat* = (alpha* - alpha) H_alpha^{-1} P theta_hat*``
        and ``||P theta_hat*|| <= ||P theta|| + noise``; removing a row
        moves the fit by ``H^{-1} x r`` (Sherman-Morrison, leave-one-out r),
        hence R = 1 + |b| + ||beta|| by at most sqrt(2) times its norm. Below
        the released ridge R >= 1 + ||beta*|| >= 1 + ||beta|| - noise.
        """
        stats = (released["stats"] if alpha == self.alpha
                 else published.upper_statistics(Xs, alpha,
                                                 self.scatter_floor(published, floor)))
        penalised = self.coef.copy()
        if self.intercept:
            penalised[-1] = 0.0
        slopes = np.linalg.norm(penalised)
        moved = abs(alpha - self.alpha) * (slopes + released["noise"])
        shift = moved * np.sqrt(stats["inverse_norm2"])
        if alpha != self.alpha:
            # or Cauchy-Schwarz in H^-1's inner product: |x^T H^-1 P theta*|
            # <= sqrt(x^T H^-1 x) (||P theta||_{H^-1} + noise / sqrt(lambda_min(H)))
            norm = published.upper_statistics(
                penalised[None, :], alpha, self.scatter_floor(published, floor))["leverage"][0]
            with np.errstate(divide="ignore", invalid="ignore"):
                along = np.sqrt(norm) + released["noise"] / np.sqrt(stats["lowest"])
            shift = np.fmin(shift, abs(alpha - self.alpha) * along
                            * np.sqrt(stats["leverage"]))
        residual = released["residual"] + shift
        mu, r = leave_one_out(stats["leverage"], residual)
        lipschitz_norm = np.sqrt(2.0) if self.intercept else 1.0
        R = lipschitz(self.coef, self.intercept)
        with np.errstate(divide="ignore", invalid="ignore"):
            distance = released["noise"] + (moved / stats["lowest"] if moved > 0 else 0.0)
            R_low = max(R - lipschitz_norm * distance, 1.0)
            if alpha < self.alpha:
                # less ridge never shrinks the slopes: their fit is
                # (S + alpha)^-1 (S + alpha*) beta*, eigenvalues >= 1
                R_low = max(R_low, 1.0 + slopes - released["noise"])
            step = lipschitz_norm * np.sqrt(stats["inverse_norm2"]) * np.abs(r)
            log_step = np.where(step < R_low, -np.log1p(-step / R_low), np.inf)
        return {"mu": mu, "r": r, "log_step": log_step, "R_low": R_low,
                "R_high": R + lipschitz_norm * distance}

    def _bound_cells(self, k, bounds, z_window):
        """For conditioning cell k: each row's ratio of the bound's release
        (its upper change of log R over the noise) and the largest gamma of
        the bound cells within z_window deviations of either data set's
        release."""
        cal, log_step = self.cal, bounds["log_step"]
        _, sigma, _, last = cal.bound_grid(k)
        if last == 0:  # no bound released: one cell
            return np.zeros(log_step.shape), np.full(log_step.shape, cal.gamma(k, 0))
        reach = z_window * sigma + log_step
        lowest = cal.bound_index(k, np.log(bounds["R_low"]) + cal.z * sigma - reach)
        highest = cal.bound_index(k, np.log(bounds["R_high"]) + cal.z * sigma + reach)
        finite = np.isfinite(log_step)
        if not finite.any():
            return np.full(log_step.shape, np.inf), np.full(log_step.shape, np.inf)
        js = np.arange(lowest[finite].min(), highest[finite].max() + 1)
        gammas = np.array([cal.gamma(k, int(j)) for j in js])
        inside = (js >= lowest[:, None]) & (js <= highest[:, None])
        gamma = np.where(inside, gammas, 0.0).max(axis=1)
        # a row with an unbounded change reveals everything anyway (ratio inf)
        return log_step / sigma, np.where(finite, gamma, gammas.max())

    def conditioning_change(self, published, Xs, high):
        """Upper bound on each row's change of G: the rank-one update of
        lambda_min, ``n/(n-1) ||x - x_bar||^2`` (``||x||^2`` without
        intercept), and the change of w = 1 + ||x_bar|| (at most
        ``||x - x_bar|| / (n - 1)``) at G <= ``high``; capped by the
        sensitivity."""
        cal, n = self.cal, self.n_samples
        if not self.intercept:
            return np.minimum(np.einsum("ij,ij->i", Xs, Xs), cal.change)
        centre, error = published.feature_mean()
        gap = np.linalg.norm(Xs[:, : centre.size] - centre, axis=1) + error
        step = gap / (n - 1)
        return np.minimum(n / (n - 1) * gap**2 + high * step * (2.0 + step), cal.change)

    def conditioning_interval(self, published, beta):
        """An interval holding the data's G: from the noisy Gram (Weyl, on
        the event of its noise bound) and from the released cell (except with
        probability beta: the conditioning's noise beyond its two-sided
        beta quantile)."""
        cal = self.cal
        z = -ndtri(beta / 2.0)
        lower, upper = (float(edge) for edge in cal.edges(self.cell))
        low = lower + cal.margin - z * cal.sigma
        high = upper + cal.margin + z * cal.sigma
        gram, n = published.noisy_gram, self.n_samples
        shift = published.noise_scale * published.noise_bound()
        if self.intercept:
            # S~ - S = sigma E_xx - (s~ s~^T - s s^T) / n with s~ = s + sigma e
            centre, error = published.feature_mean()
            d, norm = centre.size, np.linalg.norm(centre)
            lam = linalg.eigvalsh(gram[:d, :d] - n * np.outer(centre, centre))[0]
            spread = shift * (1.0 + 2.0 * norm + shift / n)
            w_low, w_high = 1.0 + max(norm - error, 0.0), 1.0 + norm + error
            low = max(low, (lam - spread) / w_high**2)
            high = min(high, (lam + spread) / w_low**2)
        else:
            lam = linalg.eigvalsh(gram)[0]
            low, high = max(low, lam - shift), min(high, lam + shift)
        low = max(low, 0.0)
        return low, max(high, low)
