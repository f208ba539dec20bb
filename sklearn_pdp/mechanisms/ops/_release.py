"""One Posterior Sample's release (Wang 2017, sections 2-4; :doc:`/mechanisms/ops`)."""

from functools import lru_cache, partial

import numpy as np
from scipy.special import ndtri

from ...accounting._person_change import person_epsilon, whitened_change
from ...accounting import (
    GAUSSIAN_DELTA_SHARE, compose_with_gaussian, domain_bounds, gaussian_allowance, ops_auto_alpha,
    ops_dp_epsilon, ops_epsilon, ops_gamma,
)
from ..mean._fallback import InfeasibleBudget, ridge_fallback
from ...utils._rows import TwoStageRows
from ...utils._people import PersonLosses
from .._release import Release
from ...utils._ridge_system import RidgeSystem, leave_one_out


class OPSRelease(Release):
    """OPS's release: coef ~ N(theta_hat, (gamma H)^{-1}) (:doc:`/publish`).

    x^T (coef - theta_hat) ~ N(0, mu' / gamma) with the in-sample leverage
    mu'; the loss grows with the leverage and the |residual| (section 2 of
    :doc:`/mechanisms/ops`), so upper values give an upper bound. A
    published bound is capped by the domain's worst loss of a row removed
    from the n rows or added to them (the corners at n and n + 1 rows),
    which holds for anyone. Holds the ridge system of the data (``ridge``).
    """

    def __init__(self, *, gamma, capped, **common):
        super().__init__(**common)
        self.gamma = float(gamma)
        self.noise_scale = 1.0 / np.sqrt(self.gamma)
        # calibrated to a budget: no row costs more than it
        self.capped = capped

    @staticmethod
    def calibrate(epsilon, delta, alpha, gamma, n_samples, n_features, intercept):
        """(alpha, gamma) for a data set of ``n_samples`` rows (public);
        :class:`~sklearn_pdp.mechanisms.mean._fallback.InfeasibleBudget` where ``alpha`` cannot
        meet the budget."""
        if (epsilon is None) == (gamma is None):
            raise ValueError(
                "Give exactly one of epsilon (a privacy budget) and gamma (a raw "
                f"posterior scaling, for experts); got epsilon={epsilon!r}, "
                f"gamma={gamma!r}."
            )
        if alpha == "auto":  # with a budget, the release is AdaOPS's
            raise ValueError("alpha='auto' needs epsilon; give alpha with gamma.")
        alpha = float(alpha)
        if epsilon is None:
            return alpha, float(gamma)
        gamma = OPSRelease.budget_gamma(epsilon, delta, alpha, n_samples, intercept)
        if gamma is None:
            try:
                auto = ops_auto_alpha(epsilon, delta, n_samples, n_features, intercept)
            except ValueError:
                auto = None
            raise InfeasibleBudget(
                f"OPSRegressor cannot meet epsilon={epsilon} at alpha={alpha:.4g} "
                f"with n_samples={n_samples}: its loss at the worst leverage stays "
                "above the budget however much noise it adds. "
                + (f"alpha={auto:.4g} (the public rule ops_auto_alpha) meets it." if auto
                   else "No alpha meets it at this size; raise epsilon."),
                ridge=auto,
            )
        return alpha, gamma

    # Cached: public parameters only (a float or None), and every fit and
    # guarantee of the same configuration asks for it again.
    @staticmethod
    @lru_cache(maxsize=64)
    def budget_gamma(epsilon, delta, alpha, n_samples, intercept):
        """The budget's gamma at this ridge, or None where none meets it."""
        corner = domain_bounds(n_samples, alpha, intercept)
        try:
            return ops_gamma(epsilon, delta, corner["leverage"], corner["residual"])
        except ValueError:
            return None

    @classmethod
    def dp_guarantee(cls, epsilon, delta, n_samples, n_features, min_samples=None, *,
                     alpha, gamma, intercept):
        """The data-independent guarantee (see
        :meth:`~sklearn_pdp.OPSRegressor.dp_guarantee`)."""
        if epsilon is not None:
            # calibrated at the fitted size, verified there: the budget holds
            # at every size it accepts (each refusal is raised here)
            for n in {n_samples, min_samples or n_samples}:
                cls.calibrate(epsilon, delta, alpha, gamma, n, n_features, intercept)
            return float(epsilon), delta
        alpha, gamma = cls.calibrate(epsilon, delta, alpha, gamma, n_samples, n_features,
                                     intercept)
        # the corner of the domain over the sizes (ops_dp_epsilon)
        return ops_dp_epsilon(delta, alpha, gamma, n_samples, intercept, min_samples), delta

    @classmethod
    def from_budget(cls, epsilon, delta, data, *, scaler, alpha, gamma=None):
        n, intercept = data.n_samples, scaler.fit_intercept
        d = data.n_features - int(intercept)
        try:
            alpha, gamma = cls.calibrate(epsilon, delta, alpha, gamma, n, d, intercept)
        except InfeasibleBudget as exc:
            # here, from_budget, _make_release, _choose_release, fit,
            # scikit-learn's fit wrapper, the user
            alpha = ridge_fallback(exc, stacklevel=7)
            gamma = cls.budget_gamma(epsilon, delta, alpha, n, intercept)
        guarantee = ((float(epsilon), delta) if epsilon is not None
                     else (ops_dp_epsilon(delta, alpha, gamma, n, intercept), delta))
        release = cls(gamma=gamma, capped=epsilon is not None, scaler=scaler, n_samples=n,
                      delta=delta, guarantee=guarantee, alpha=alpha)
        release.ridge = RidgeSystem(*data.gram(), alpha, intercept)
        return release

    def draw(self, rng, size=None):
        return self.ridge.coef + self.ridge.sample(rng, self.noise_scale, size)

    def fitted_attributes(self):
        return {"alpha_": self.alpha, "gamma_": self.gamma, "noise_scale_": self.noise_scale}

    def losses(self, Xs, ys, add=False):
        return self.row_losses(add)(Xs, ys)

    def row_losses(self, add=False):
        """Training rows as a :class:`TwoStageRows`: the leverage and the
        residual of each row (one product), then its exact loss."""
        if add:
            # an added row is not a neighbour the calibration covered: uncapped
            return partial(ops_target_epsilon, self.ridge, delta=self.delta, gamma=self.gamma)
        ridge = self.ridge

        def statistics(Xs, ys):
            stats = ridge.row_statistics(Xs, ys)
            return np.column_stack((stats["leverage"], stats["residual"]))

        def finish(stats):
            mu, r = leave_one_out(stats[:, 0], stats[:, 1])
            eps = ops_epsilon(self.delta, mu, r, self.gamma)
            # a row at the calibration corner costs exactly the budget: the
            # root search's tolerance must not report more
            return np.minimum(eps, self.guarantee[0]) if self.capped else eps

        return TwoStageRows(statistics, finish, 2)

    def person_losses(self, gram, cross, sizes, add=False):
        """Certified loss at ``delta`` of removing (adding, ``add``) each
        person's rows together, from their sums ``gram`` (``sum z z^T``)
        and ``cross`` (``sum y z``): a generalised chi-square
        (:mod:`~sklearn_pdp.accounting._gchi`), in closed form where the
        rows span one direction; ``nan`` for a person whose law neither
        method certifies within its public cap (the fit charges them the
        labelled group-privacy bound)."""
        # X_p^T e_p: the persons' residuals on the fitted system
        g = cross - gram @ self.ridge.coef
        w, b = whitened_change(self.ridge._whitener, gram, g, add=add)
        return PersonLosses.of(person_epsilon(self.delta, w, b, self.gamma), self.kind)

    # -- the law of a published report ----------------------------------------

    def residual_margin(self, beta, stats):
        return ndtri(1.0 - beta / 2.0) * np.sqrt(stats["leverage"] / self.gamma)

    def _dp(self, delta):
        return ops_dp_epsilon(delta, self.alpha, self.gamma, self.n_samples, self.intercept)

    def _cap(self, delta):
        # a person removed from the n rows or added to them: the domain's
        # corner at n and at n + 1 rows, at this gamma
        return max(self._dp(delta), ops_dp_epsilon(
            delta, self.alpha, self.gamma, self.n_samples + 1, self.intercept))

    def epsilon(self, delta, stats, gaussian_ratio=None):
        mu, r = leave_one_out(stats["leverage"], stats["residual"])
        return compose_with_gaussian(
            lambda d: np.minimum(ops_epsilon(d, mu, r, self.gamma), self._cap(d)),
            delta, gaussian_ratio,
        )

    def cap_epsilon(self, delta, gaussian_ratio=None):
        return compose_with_gaussian(self._cap, delta, gaussian_ratio)

    def dp_epsilon(self, delta, gaussian_ratio=None):
        return compose_with_gaussian(self._dp, delta, gaussian_ratio)

    def gaussian_allowance(self, delta, target):
        return gaussian_allowance(self._dp(delta - GAUSSIAN_DELTA_SHARE * delta), delta, target)


def ops_target_epsilon(ridge, Xs, ys, delta, gamma):
    """Exact OPS epsilon of adding the targets ``Xs`` (labels ``ys``, or the
    worst label in [-1, 1] when None)."""
    mu = ridge.row_statistics(Xs)["leverage"]
    fitted = Xs @ ridge.coef
    # The loss grows with |r| (OPS page): the worst label is an end of [-1, 1].
    r = 1.0 + np.abs(fitted) if ys is None else ys - fitted
    return ops_epsilon(delta, mu, r, gamma)
