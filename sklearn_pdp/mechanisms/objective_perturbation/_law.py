"""The law of a published report of objective perturbation's private ridge
(:doc:`/publish`, section "Objective perturbation's private ridge").

A row's loss (:class:`~sklearn_pdp.mechanisms.objective_perturbation._adaptive.PrivateObjPertRelease`)
is the Gaussian epsilon of its change of lambda_min and of the means over
their noises, plus objective perturbation's loss at the largest of its
statistics over the cells its window reaches. From a published report
alone, each is bounded as for output perturbation's private ridge
(:class:`~sklearn_pdp.mechanisms.private_ridge._law.EigenWindowLaw`): the eigenvalue's
change from the noisy feature mean, the means' from the released means,
each cell's leverage, ``||H^{-1} x||`` and residual from the noisy Gram at
the cell's ridge.
"""

import numpy as np
from scipy.special import ndtri
from scipy.stats import chi2

from ...accounting import (
    domain_bounds, gaussian_epsilon, gaussian_noise_scale, objpert_dp_epsilon, objpert_epsilon,
)
from ._release import _remove_row
from ..private_ridge._law import EigenWindowLaw
from ..mean._released_means import means_bound


class PrivateObjPertLaw(EigenWindowLaw):
    """The published-report law of objective perturbation's private ridge (a
    mixin of
    :class:`~sklearn_pdp.mechanisms.objective_perturbation._adaptive.PrivateObjPertRelease`):
    reads only its public attributes (``adaptive``, ``lowest_eigenvalue``,
    ``alpha``, ``noise_scale``, ``coef``, ``released_means``, ``delta``,
    ``n_samples``, ``intercept``) and the published report.

    Row statistics: ``eigen`` (the first stage's Gaussian ratio: the change
    of lambda_min and of the means over their noises), ``norm2``, and the
    largest over the cells of ``m0 = ||x|| |r| / sigma_k``, ``mu`` and
    ``spread = ||x||^2 x^T H_k^{-2} x`` against the data without the row;
    ``removal`` marks training rows (their loss is capped by the guarantee).
    The eigenvalue's and the means' releases and a published Gram matrix are
    Gaussian mechanisms (their ratios add in squares), composed with
    objective perturbation by basic composition at the release's shares of
    delta.
    """

    def _deltas(self, delta):
        """The eigenvalue's and objective perturbation's shares of ``delta``."""
        ad = self.adaptive
        if delta == self.delta:
            return ad.delta_eigen, ad.delta_objpert
        return delta * ad.delta_eigen / self.delta, delta * ad.delta_objpert / self.delta

    def _first(self, delta, ratio, gaussian_ratio):
        extra = 0.0 if gaussian_ratio is None else gaussian_ratio
        return gaussian_epsilon(self._deltas(delta)[0], np.hypot(ratio, extra))

    def _cells(self):
        """Every cell a data set of the domain can reach (lambda_min(S) <= n)."""
        ad = self.adaptive
        return range(-1, ad.cell(self.n_samples + ad.reach) + 1)

    def _objpert_dp(self, delta):
        """Objective perturbation's guarantee at its share of ``delta``: the
        budget's share, else the worst over the cells given their floors."""
        ad = self.adaptive
        if delta == self.delta:
            return ad.epsilon_objpert
        share = self._deltas(delta)[1]
        return max(objpert_dp_epsilon(share, ad.alpha(k), ad.noise(k), self.n_samples,
                                      self.intercept, lower=ad.floor(k))
                   for k in self._cells())

    def _added_objpert(self, delta):
        """Objective perturbation's largest loss of a person added to the n
        rows: the row's statistics are each the largest over the cells, so the
        domain's worst case at n + 1 rows with the smallest ``alpha_k + L_k``
        and the largest residual over sigma_k, L_k the floor that reaching
        cell k implies (``floor_k + margin - reach``)."""
        ad, n = self.adaptive, self.n_samples
        total, residual = np.inf, 0.0
        for k in self._cells():
            lower = max(ad.floor(k) + ad.margin - ad.reach, 0.0) if k >= 0 else 0.0
            bound = domain_bounds(n + 1, ad.alpha(k), self.intercept, lower=lower)
            total = min(total, ad.alpha(k) + lower)
            residual = max(residual, float(bound["residual"]) / ad.noise(k))
        return objpert_dp_epsilon(self._deltas(delta)[1], total, 1.0, n + 1, self.intercept,
                                  residual=residual)

    def epsilon(self, delta, stats, gaussian_ratio=None):
        norm2, spread = stats["norm2"], stats["spread"]
        unit = np.where(norm2 > 0, norm2, 1.0)
        with np.errstate(invalid="ignore"):
            mu = np.minimum(stats["mu"], np.sqrt(spread))  # Cauchy-Schwarz
        # objpert_epsilon reads m0 = sqrt(norm2) r / sigma and norm2 * w
        second = objpert_epsilon(self._deltas(delta)[1], norm2, mu, spread / unit,
                                 stats["m0"] / np.sqrt(unit), 1.0)
        eps = self._first(delta, stats["eigen"], gaussian_ratio) + second
        removal = stats.get("removal")
        if removal is None:
            return eps
        # the guarantee covers every row removed from n rows
        return np.where(removal, np.minimum(eps, self.dp_epsilon(delta, gaussian_ratio)), eps)

    def dp_epsilon(self, delta, gaussian_ratio=None):
        if gaussian_ratio is None and delta == self.delta:
            return self.adaptive.budget
        ad = self.adaptive
        return (self._first(delta, ad.worst_gauss_ratio(self.n_samples), gaussian_ratio)
                + self._objpert_dp(delta))

    def cap_epsilon(self, delta, gaussian_ratio=None):
        if "_cap_cache" not in self.__dict__:
            self._cap_cache = {}
        if delta not in self._cap_cache:
            self._cap_cache[delta] = self._added_objpert(delta)
        ratio = self.adaptive.worst_gauss_ratio(self.n_samples + 1)
        cap = self._first(delta, ratio, gaussian_ratio) + self._cap_cache[delta]
        return float(np.max(np.maximum(cap, self.dp_epsilon(delta, gaussian_ratio))))

    def gaussian_allowance(self, delta, target):
        ad = self.adaptive
        worst = ad.worst_gauss_ratio(self.n_samples)
        rest = target - self._objpert_dp(delta)
        total = 1.0 / gaussian_noise_scale(rest, self._deltas(delta)[0]) if rest > 0 else 0.0
        return self._allowance(total, worst, target)

    def residual_margin(self, beta, stats):
        """The released coefficients' noise along each row, ``N(0, sigma^2
        ||H^{-1} x||^2)`` given the cell."""
        return ndtri(1.0 - beta / 2.0) * self.noise_scale * np.sqrt(stats["inverse_norm2"])

    # -- bounds from a published report --------------------------------------

    def published_statistics(self, published, Xs, ys):
        """Upper bounds on each row's statistics from the published report,
        valid with probability at least ``1 - published.beta``: beta/2 on the
        Gram noise (:meth:`PublishedReport.noise_bound`), beta/8 on the
        eigenvalue's noise, beta/4 on the coefficients' noise along the row,
        beta/8 on the norm of ``H*^{-1} b``."""
        ad, beta = self.adaptive, published.beta
        low, high = self.eigen_interval(published, beta / 8.0)
        released = published.upper_statistics(Xs, self.alpha, low)
        residual = published.observed_residual(Xs, ys) + self.residual_margin(
            beta / 4.0, released)
        with np.errstate(divide="ignore"):
            noise = (self.noise_scale * np.sqrt(chi2.isf(beta / 16.0, self.coef.size))
                     / released["lowest"])
        norm2 = released["norm2"]
        m0 = mu = spread = np.zeros(Xs.shape[0])
        bounds = {}  # cells of one ridge and floor share their statistics
        for k, *key in self.window(low, high):
            key = tuple(key)
            if key not in bounds:
                bounds[key] = self._cell_bounds(published, Xs, key, residual, noise)
            mu_k, spread_k, moved = bounds[key]
            m0 = np.maximum(m0, moved / ad.noise(k))
            mu, spread = np.maximum(mu, mu_k), np.maximum(spread, spread_k)
        means = (means_bound(self.released_means, ad.means_noise(), self.n_samples, Xs, ys,
                             beta / 16.0) if self.intercept else 0.0)
        first = ad.gauss_ratio(published.eigen_change_bound(Xs) / ad.eigen_noise, means)
        return {"eigen": first,
                "norm2": norm2, "m0": m0, "mu": mu, "spread": spread}

    def _cell_bounds(self, published, Xs, key, residual, noise):
        """``(mu, spread, ||x|| |r|)`` against the data without each row at a
        cell's ridge and floor (``inf`` where the leverage is not certified
        below 1); an upper bound for a person added too (out of sample,
        each is smaller)."""
        stats = self.cell_statistics(published, Xs, *key, residual, noise)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            norm2, mu, w, r = _remove_row(stats)
            values = (mu, norm2 * w, np.sqrt(norm2) * np.abs(r))
        bad = ~(stats["leverage"] < 1.0)
        return tuple(np.where(bad | np.isnan(v), np.inf, v) for v in values)
