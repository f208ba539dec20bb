"""AdaOPS's release (:doc:`/mechanisms/adaops`): a cell of the conditioning,
a cell of the residual bound, then one posterior sample.

A noisy lower bound on the conditioning G = lambda_min(S) / (1 + ||x_bar||)^2
of the data falls into a cell of a public grid, which fixes an eigenvalue
floor and a ridge; a noisy upper bound on the log of the fit's Lipschitz
constant R = 1 + |b| + ||beta|| (the largest residual of any target) falls
into a cell of a second public grid; gamma is OPS's at the worst leverage
and residual the two cells allow, and theta is one OPS draw. Only cells are
released, so a row's exact loss is a finite mixture of OPS losses over pairs
of cells (``ops_mixture_epsilon``). The calibration is
``sklearn_pdp.accounting._adaops``; the bounds of a published report are
:class:`~sklearn_pdp.mechanisms.adaops._published.AdaOPSPublishedBounds`.
"""

import numpy as np

from ...accounting import (
    compose_with_gaussian, gaussian_epsilon, gaussian_noise_scale, ops_epsilon,
    ops_mixture_epsilon,
)
from ...accounting._adaops import (
    _CELL_WINDOW, _DEFAULT_SPLIT, _bound_cells, _log_cell_masses, _norm_change, calibration,
    conditioning, lipschitz, lipschitz_log_change,
)
from ._people import adaops_person_losses
from ._published import _PUBLISHED_WINDOW_SHARE, AdaOPSPublishedBounds
from ..mean._fallback import InfeasibleBudget
from ...utils._eigen import eigen_change, scatter_eigen
from ...utils._people import PersonLosses
from .._release import Release
from ..mean._released_means import centred_intercept, data_means, means_change
from ...utils._ridge_system import RidgeSystem, leave_one_out


class AdaOPSRelease(AdaOPSPublishedBounds, Release):
    """AdaOPS's release on one data set: the public calibration ``cal``
    (both grids, the noise and margin of both releases, every pair of
    cells' ridge and gamma) and, once drawn, the released conditioning cell
    ``cell``, its ridge ``alpha`` and the pair's ``gamma``.

    Holds the data's Gram matrix, the scatter's eigen-decomposition, G and
    the cells' ridge fits (statistics of the private data).

    ``epsilon`` takes either of two kinds of row statistics. The data
    holder's (:meth:`statistics`, key ``mixtures``) are the exact mixture
    over pairs of cells. A published report's (:meth:`published_statistics`,
    keys ``cells`` and ``ops``) bound the loss by adaptive composition: the
    two cell releases are dominated by one Gaussian mechanism whose ratio is
    ``cells`` (the row's upper changes of G and of log R over their noise),
    and given any pair of cells within the row's window the sample by the
    OPS loss at upper statistics and the largest gamma of its bound cells
    (``ops``: one (mu, r, gamma) per conditioning cell); the pairs outside
    the window have mass at most ``_PUBLISHED_WINDOW_SHARE * delta``, spent
    from delta. The conditioning's release and a published Gram matrix are
    both Gaussian mechanisms: for the guarantee their worst ratios add in
    squares (:meth:`dp_epsilon`, :meth:`gaussian_allowance`); per row the
    publication composes with the mixture by basic composition, as for OPS
    (:doc:`/publish`).
    """

    _private = ("ridge", "XtX", "Xty", "eig", "mean", "G", "fits", "means")

    def __init__(self, *, cal, shares, n_features, report_kappa=True, **common):
        super().__init__(**common)
        self.cal = cal
        self.shares = tuple(shares)
        self.n_features = int(n_features)
        self.report_kappa = report_kappa

    # -- calibration ---------------------------------------------------------

    @staticmethod
    def budget_shares(epsilon, delta, budget_split):
        """Epsilon of the conditioning, the bound and the sample, and the
        delta of each release and margin event."""
        weights = np.array(_DEFAULT_SPLIT if budget_split is None else budget_split,
                           dtype=float)
        if (weights.shape != (3,) or not np.all(weights >= 0)
                or not weights[0] > 0 or not weights[2] > 0):
            raise ValueError(
                "budget_split must be three non-negative weights (conditioning, "
                "residual bound, sample), the first and last positive; "
                f"got {budget_split!r}."
            )
        eps = epsilon * weights / weights.sum()
        return tuple(float(e) for e in eps), delta / (5 if eps[1] > 0 else 3)

    @staticmethod
    def fixed_floor(epsilon, delta, kappa, n, d):
        """The floor n / (d kappa) of a given kappa, checked against the
        paper's constraint (too large a kappa is refused); None without."""
        if kappa is None:
            return None
        floor = 4 * (1 + np.log(4 / delta)) / epsilon
        if n / (d * kappa) < floor * (1 - 1e-12):
            raise InfeasibleBudget(
                f"kappa={kappa} violates the AdaOPS constraint kappa <= "
                f"n epsilon / (4 d (1 + log(4 / delta))) = {n / (d * floor):.4g} "
                f"for n={n} rows and d={d} features: kappa={n / (d * floor):.4g} would "
                "meet it."
            )
        return float(n / (d * kappa))

    @classmethod
    def calibrate(cls, epsilon, delta, n, d, intercept, kappa=None, budget_split=None):
        """The public calibration for n rows and d features, and the budget's
        shares; raises :class:`~sklearn_pdp.mechanisms.mean._fallback.InfeasibleBudget` where
        ``kappa`` cannot meet the budget."""
        eps, delta_share = cls.budget_shares(epsilon, delta, budget_split)
        cal = calibration(n, d, intercept, eps, delta_share,
                          cls.fixed_floor(epsilon, delta, kappa, n, d))
        if not cal.feasible:
            raise InfeasibleBudget(
                f"AdaOPSRegressor cannot meet epsilon={cal.budget:.4g} with that kappa "
                f"and n_samples={n}: no posterior scaling is private enough at its "
                "floor. Lower kappa (kappa=None, the private choice, would meet it "
                "where n allows) or raise epsilon."
            )
        return cal, eps

    @classmethod
    def dp_guarantee(cls, epsilon, delta, n_samples, n_features, min_samples=None, *,
                     intercept, kappa=None, budget_split=None):
        """The data-independent guarantee: every pair of cells' gamma is
        calibrated to the sample's share, and the floor and the bound hold
        except on their margin events, so ``(epsilon, delta)`` by
        composition, at every size the calibration accepts (each refusal is
        raised here)."""
        for n in {n_samples, min_samples or n_samples}:
            cls.calibrate(epsilon, delta, n, n_features, intercept, kappa, budget_split)
        return float(epsilon), delta

    @classmethod
    def from_budget(cls, epsilon, delta, data, *, scaler, kappa=None, budget_split=None,
                    report_kappa=True):
        """The release calibrated to ``(epsilon, delta)`` on ``data``; with
        ``report_kappa`` False its fitted attributes leave out ``kappa_``."""
        n = data.n_samples
        d = data.n_features - int(scaler.fit_intercept)
        cal, eps = cls.calibrate(epsilon, delta, n, d, scaler.fit_intercept, kappa,
                                 budget_split)
        release = cls(cal=cal, shares=eps, n_features=d, report_kappa=report_kappa,
                      scaler=scaler, n_samples=n, delta=delta,
                      guarantee=(float(epsilon), delta), alpha=np.nan)
        release.XtX, release.Xty = data.gram()
        release.eig, release.mean = scatter_eigen(release.XtX, n, release.intercept)
        release.G = conditioning(release.eig[0], release.mean, release.intercept)
        release.means = (data_means(release.XtX, release.Xty, n) if release.intercept
                         else None)
        release.fits = {}
        return release

    # -- the release -----------------------------------------------------------

    def release(self, rng):
        cal = self.cal
        k, j = (int(c[0]) for c in self._draw_cells(rng, 1))
        self.cell, self.bound_cell = k, j
        self.alpha, self.gamma = cal.ridge(k), cal.gamma(k, j)
        self.ridge = self._cell_fit(k)[0]
        # coef stays the draw: the published law's residuals need it
        self.coef = self.ridge.coef + self.ridge.sample(rng, 1.0 / np.sqrt(self.gamma))
        self.released_means, self.intercept_weight = None, 0.0
        if self.means_noise is None:
            return self.coef
        self.released_means = self.means + cal.means_noise * rng.standard_normal(
            self.means.shape[0])
        return self.centre(self.coef)

    def centre(self, coef):
        """Post-processing: the draw's intercept and the one of its slopes at
        the released means (:func:`centred_intercept`), combined by their
        precisions. Given the slopes, both are unbiased for the posterior's
        ``mean(y) - mean(x)^T slopes``, the draw's with variance
        ``1 / (gamma n)`` (the unpenalised intercept), the other's
        ``sigma_y^2 + sigma_x^2 ||slopes||^2`` (``means_noise``): public
        weights."""
        slopes = coef[:-1]
        draw_var = 1.0 / (self.gamma * self.n_samples)
        noise = self.cal.means_noise
        means_var = noise[-1] ** 2 + noise[:-1] ** 2 @ slopes**2
        self.intercept_weight = draw_var / (draw_var + means_var)
        out = np.array(coef, dtype=np.float64)
        out[-1] += self.intercept_weight * (
            centred_intercept(slopes, self.released_means) - coef[-1])
        return out

    def fitted_attributes(self):
        cal, k = self.cal, self.cell
        floor = cal.floor(k)
        attributes = {"floor_": floor, "alpha_": self.alpha,
                      "residual_bound_": cal.residual(k, self.bound_cell),
                      "gamma_": self.gamma, "noise_scale_": 1.0 / np.sqrt(self.gamma)}
        if self.report_kappa:
            attributes["kappa_"] = self.n_samples / (self.n_features * floor)
        if self.means_noise is not None:
            attributes.update(released_means_=self.released_means,
                              means_noise_=cal.means_noise,
                              intercept_weight_=self.intercept_weight)
        return attributes

    def _cell_fit(self, k):
        """The ridge fit of cell k and the log of its Lipschitz constant R."""
        alpha = self.cal.ridge(k)
        if alpha not in self.fits:
            ridge = RidgeSystem(self.XtX, self.Xty, alpha, self.intercept)
            self.fits[alpha] = ridge, float(np.log(lipschitz(ridge.coef, self.intercept)))
        return self.fits[alpha]

    def _draw_cells(self, rng, size):
        """``size`` draws of the pair of cells (conditioning, then bound)."""
        cal = self.cal
        cells = cal.index(self.G + cal.sigma * rng.standard_normal(size) - cal.margin)
        bounds = np.zeros(size, dtype=int)
        for k in np.unique(cells):
            rows = np.flatnonzero(cells == k)
            _, sigma, _, last = cal.bound_grid(int(k))
            if last:
                u = self._cell_fit(int(k))[1] + sigma * (rng.standard_normal(rows.size) + cal.z)
                bounds[rows] = cal.bound_index(int(k), u)
        return cells, bounds

    def draw(self, rng, size=None):
        """Draw(s) of the whole release (cells, then coefficients; scaled)."""
        cells, bounds = self._draw_cells(rng, 1 if size is None else size)
        theta = np.empty((cells.size, self.XtX.shape[0]))
        for k, j in set(zip(cells.tolist(), bounds.tolist())):
            rows = np.flatnonzero((cells == k) & (bounds == j))
            ridge = self._cell_fit(k)[0]
            scale = 1.0 / np.sqrt(self.cal.gamma(k, j))
            theta[rows] = ridge.coef + ridge.sample(rng, scale, rows.size)
        return theta[0] if size is None else theta

    @property
    def means_noise(self):
        """The released means' noise per coordinate (the label's last), or
        None where none are released."""
        noise = self.cal.means_noise
        return noise if np.all(np.isfinite(noise)) else None

    # -- the rows' exact losses -----------------------------------------------

    def _conditioning_shifts(self, Xs, add):
        """G of the smaller and of the larger data set minus this one's, per row
        (exact, and computed from the changes of lambda_min and of the mean)."""
        n, d = self.n_samples, self.mean.shape[0]
        x = Xs[:, :d]
        change = eigen_change(self.eig, self.mean, n, x, intercept=self.intercept,
                              add=add)
        lam_change = change if add else -change
        if self.intercept:
            # the other data set's mean is x_bar + v, and w = 1 + ||mean||
            v = (x - self.mean) / (n + 1) if add else (self.mean - x) / max(n - 1, 1)
            w = 1.0 + np.linalg.norm(self.mean)
            w_change = _norm_change(self.mean, v)
            w_other = w + w_change
            lam = self.eig[0][0]
            # G' - G = (lambda' - lambda) / w'^2 + lambda (1/w'^2 - 1/w^2)
            shift = (lam_change - lam * w_change * (w + w_other) / w**2) / w_other**2
        else:
            shift = lam_change
        zero = np.zeros(shift.shape)
        return (zero, shift) if add else (shift, zero)

    def _cell_rows(self, k, Xs, ys, add):
        """OPS leverage and residual of each row (against the smaller data set)
        in cell k, and log R of the smaller and the larger data set minus this
        one's (exact: Sherman-Morrison on the cell's ridge fit)."""
        ridge, _ = self._cell_fit(k)
        stats = ridge.row_statistics(Xs, ys, inverse_rows=True)
        V = stats["inverse_rows"]  # H^{-1} x, one row each
        if add:
            mu, r = stats["leverage"], stats["residual"]
            moves = V * (r / (1.0 + mu))[:, None]
        else:
            mu, r = leave_one_out(stats["leverage"], stats["residual"])
            moves = -V * r[:, None]
        with np.errstate(invalid="ignore"):
            shift = lipschitz_log_change(ridge.coef, moves, self.intercept)
        # a row whose removal is undefined (infinite leverage) has infinite loss anyway
        shift = np.where(np.isfinite(shift), shift, 0.0)
        zero = np.zeros(shift.shape)
        return mu, r, (zero, shift) if add else (shift, zero)

    def _mixture_epsilon(self, Xs, ys, add):
        """Exact loss of the whole release for each row removed (or added)."""
        if ys is None:  # the worst label: an end of [-1, 1]
            ones = np.ones(Xs.shape[0])
            return np.maximum(self._mixture_epsilon(Xs, ones, add),
                              self._mixture_epsilon(Xs, -ones, add))
        eps = self._model_epsilon(self.delta, self._mixture_columns(Xs, ys, add),
                                  self._means_ratio(Xs, ys, add))
        # a row removed at the domain's worst case costs at most the budget,
        # a row added at most the cap derived for n + 1 rows
        return np.minimum(eps, self._dp(self.delta, add))

    def _means_ratio(self, Xs, ys, add):
        """Each row's exact change of the released means over their noise
        (None where none are released)."""
        if self.means_noise is None:
            return None
        return means_change(self.means, self.n_samples, Xs, ys, add, self.means_noise)

    @staticmethod
    def _model_epsilon(delta, mixture, means):
        """The release's loss at ``delta``: the exact mixture, composed with
        the released means' Gaussian at the row's ratio ``means``."""
        return compose_with_gaussian(lambda d: ops_mixture_epsilon(d, **mixture), delta, means)

    def _mixture_columns(self, Xs, ys, add):
        """The arguments of ``ops_mixture_epsilon`` (but delta) for each row
        removed (or added): its statistics and log masses on the pairs of
        cells within its window, and its log mass outside."""
        cal = self.cal
        # the conditioning's cells within the window of every row's two releases
        centre = self.G - cal.margin
        reach = _CELL_WINDOW * cal.sigma + cal.change
        first, last = cal.index([centre - reach, centre + reach])
        cells = np.arange(first, last + 1)
        lower, upper = (edge - centre for edge in cal.edges(cells))
        (log_pk, rest_p), (log_qk, rest_q) = (
            _log_cell_masses(lower, upper, shift, cal.sigma)
            for shift in self._conditioning_shifts(Xs, add))
        columns = {key: [] for key in ("mu", "r", "gamma", "log_p", "log_q")}
        rests_p, rests_q = [rest_p], [rest_q]
        rows = {}  # the cells without ridge share one fit
        for col, k in enumerate(cells.tolist()):
            alpha = cal.ridge(k)
            if alpha not in rows:
                rows[alpha] = self._cell_rows(k, Xs, ys, add)
            mu, r, shifts = rows[alpha]
            _, sigma, _, last_bound = cal.bound_grid(k)
            if last_bound:
                bounds, (log_pj, log_qj), (out_p, out_q) = _bound_cells(
                    cal, k, self._cell_fit(k)[1] + cal.z * sigma, shifts, sigma)
                rests_p.append(log_pk[:, col] + out_p)
                rests_q.append(log_qk[:, col] + out_q)
            else:  # one bound cell, the crude one, of probability 1
                bounds = np.zeros(1, dtype=int)
                log_pj = log_qj = np.zeros((mu.size, 1))
            for b, j in enumerate(bounds.tolist()):
                columns["mu"].append(mu)
                columns["r"].append(r)
                columns["gamma"].append(cal.gamma(k, j))
                columns["log_p"].append(log_pk[:, col] + log_pj[:, b])
                columns["log_q"].append(log_qk[:, col] + log_qj[:, b])
        out = {key: np.column_stack(columns[key]) for key in ("mu", "r", "log_p", "log_q")}
        out["gamma"] = np.array(columns["gamma"])
        out["log_p_rest"] = np.logaddexp.reduce(rests_p, axis=0)
        out["log_q_rest"] = np.logaddexp.reduce(rests_q, axis=0)
        return out

    def losses(self, Xs, ys, add=False):
        return self._mixture_epsilon(Xs, ys, add)

    # a person's loss is a bound by composition, not the mixture of a row's
    def person_losses(self, gram, cross, sizes, add=False):
        """Upper bound on the loss of removing (adding, ``add``) each
        person's rows together (:func:`adaops_person_losses`), every one
        labelled "bound"."""
        losses = adaops_person_losses(self, gram, cross, sizes, add)
        return PersonLosses.of(losses, "bound")

    def statistics(self, Xs, ys, add=False):
        """Exact statistics of the rows for :meth:`epsilon`: the arguments of
        the mixture over pairs of cells (``ops_mixture_epsilon`` but delta),
        under both ends of [-1, 1] with ``ys`` None."""
        ones = np.ones(Xs.shape[0])
        labels = [ones, -ones] if ys is None else [ys]
        return {"mixtures": [self._mixture_columns(Xs, y, add) for y in labels],
                "means": [self._means_ratio(Xs, y, add) for y in labels], "add": add}

    # -- the law of a published report ----------------------------------------

    def _eigen_epsilon_ratio(self, delta):
        """The Gaussian releases' budget and their worst joint ratio (the
        conditioning's, with an intercept also the bound's and the means'; at
        ``cal.delta_gauss``); the guarantee is calibrated at the fit's delta
        only."""
        if delta != self.delta:
            raise ValueError(
                f"AdaOPS's guarantee is calibrated at its delta={self.delta:g}, "
                f"not at {delta:g}."
            )
        return self.cal.eps_gauss, self.cal.ratio_gauss

    def dp_epsilon(self, delta, gaussian_ratio=None):
        cal = self.cal
        eps_eigen, first = self._eigen_epsilon_ratio(delta)
        if gaussian_ratio is None:
            return cal.budget
        joint = gaussian_epsilon(cal.delta_gauss, np.hypot(first, gaussian_ratio))
        return float(cal.budget - eps_eigen + joint)

    def gaussian_allowance(self, delta, target):
        cal = self.cal
        eps_eigen, first = self._eigen_epsilon_ratio(delta)
        if not target > cal.budget:
            raise ValueError("nothing is left for a publication; raise publish_epsilon.")
        total = 1.0 / gaussian_noise_scale(eps_eigen + target - cal.budget, cal.delta_gauss)
        return float(np.sqrt(total**2 - first**2))

    def _added_excess(self):
        """What the sample's loss of a person added can exceed its share by
        (``_Calibration.added_sample_epsilon``)."""
        return self.cal.added_sample_epsilon() - self.cal.eps_sample

    def _dp(self, delta, add=True):
        # the budget holds at the fit's delta for a row removed, the budget
        # and the sample's excess for one added; at another delta none is calibrated
        if delta != self.delta:
            return np.inf
        return self.cal.budget + (self._added_excess() if add else 0.0)

    def cap_epsilon(self, delta, gaussian_ratio=None):
        """The guarantee with the sample's loss of a person added to the n
        rows in place of its share, where larger: the conditioning's and the
        bound's sensitivities and the leverage bound only fall from n to
        n + 1 rows, the crude residual bound rises (:doc:`/mechanisms/adaops`)."""
        return self.dp_epsilon(delta, gaussian_ratio) + self._added_excess()

    def epsilon(self, delta, stats, gaussian_ratio=None):
        # the data holder's statistics say which direction; a published
        # report's bound anyone, removed or added
        add = stats.get("add", True)
        if "mixtures" in stats:
            def model(d):
                return np.max([self._model_epsilon(d, m, s) for m, s in
                               zip(stats["mixtures"], stats["means"])], axis=0)
        else:
            def model(d):
                return self._composition(d, stats)
        return compose_with_gaussian(lambda d: np.minimum(model(d), self._dp(d, add)),
                                     delta, gaussian_ratio)

    def _composition(self, delta, stats):
        """The adaptive composition bound at ``delta`` (see the class)."""
        half = 0.5 * (delta - _PUBLISHED_WINDOW_SHARE * self.delta)
        sample = np.max([ops_epsilon(half, *ops) for ops in stats["ops"]], axis=0)
        return gaussian_epsilon(half, stats["cells"]) + sample
