"""Objective perturbation's release at a public ridge (Wang, lecture notes on
objective perturbation; :doc:`/mechanisms/objective_perturbation`): its
calibration, draw and per-row losses."""

from functools import lru_cache

import numpy as np
from scipy import linalg
from scipy.special import ndtri

from ...accounting import (
    GAUSSIAN_DELTA_SHARE, compose_with_gaussian, gaussian_allowance, objpert_auto_alpha,
    objpert_dp_epsilon, objpert_epsilon, objpert_noise_scale,
)
from ...accounting._objpert_person import objpert_person_epsilon
from ..mean._fallback import InfeasibleBudget, ridge_fallback
from ...utils._people import PersonLosses
from .._release import Release
from ...utils._ridge_system import RidgeSystem, leave_one_out


# Cached: public parameters only (a given sigma's worst case over the
# domain), asked for by a fit's guarantee, its release, its reports and refits.
@lru_cache(maxsize=64)
def _sigma_dp_epsilon(delta, alpha, sigma, n_samples, intercept, min_samples):
    return objpert_dp_epsilon(delta, alpha, sigma, n_samples, intercept, min_samples)


class ObjPertRelease(Release):
    """Objective perturbation's release: coef = theta_hat - H^{-1} b,
    ``b ~ N(0, noise_scale^2 I)`` (:doc:`/mechanisms/objective_perturbation`).

    Calibrated by :meth:`from_budget` (:meth:`calibrate` gives the ridge
    and the noise from public quantities only); holds the ridge system of
    the scaled data (``ridge``, private). A row's loss is the tight loss of
    :func:`~sklearn_pdp.accounting.objpert_epsilon` at its leverage,
    residual, ``||x||^2`` and ``||H^{-1} x||^2`` against the data without it.

    For a published report (:doc:`/publish`):
    ``x^T (coef - theta_hat) ~ N(0, sigma^2 ||H^{-1} x||^2)``. The loss
    grows with ``|r|``, with ``x^T H^{-2} x`` at fixed leverage and with the
    leverage at fixed ``x^T H^{-2} x`` up to ``mu^2 = ||x||^2 x^T H^{-2} x``
    (checked in the tests), so over a box of upper values its largest value
    is at the upper corner, the leverage capped by that constraint. It is
    capped by the domain's worst loss of a row removed from the n rows or
    added to them (at n and n + 1 rows), which holds for anyone.
    """

    def __init__(self, *, noise_scale, **common):
        super().__init__(**common)
        self.noise_scale = float(noise_scale)

    @staticmethod
    def calibrate(epsilon, delta, alpha, sigma, n_samples, n_features, intercept):
        """``(alpha, sigma)`` of a fit of this size, from public quantities
        only; raises :class:`InfeasibleBudget` where a given ``alpha``
        cannot meet the budget."""
        if (epsilon is None) == (sigma is None):
            raise ValueError(
                "Give a budget epsilon, or epsilon=None and a noise level sigma "
                f"(got epsilon={epsilon!r}, sigma={sigma!r})."
            )
        if sigma is not None:
            if alpha == "auto":
                raise ValueError(
                    "alpha='auto' is chosen for an epsilon budget: give a "
                    "numeric alpha with sigma."
                )
            return float(alpha), float(sigma)
        auto = alpha == "auto"
        alpha = (objpert_auto_alpha(epsilon, delta, n_samples, n_features, intercept)
                 if auto else float(alpha))
        try:
            sigma = objpert_noise_scale(epsilon, delta, alpha, n_samples, intercept)
        except ValueError as exc:
            if auto or alpha <= 0:  # alpha=0: invalid with a budget
                raise
            try:
                ridge = objpert_auto_alpha(epsilon, delta, n_samples, n_features, intercept)
            except ValueError:
                ridge = None
            raise InfeasibleBudget(
                f"ObjPertRegressor: {exc} "
                + (f"alpha={ridge:.4g} (the ridge of alpha='auto') meets it." if ridge
                   else "No alpha meets it at this size."),
                ridge=ridge,
            ) from None
        return alpha, sigma

    @classmethod
    def dp_guarantee(cls, epsilon, delta, alpha, sigma, n_samples, n_features,
                     intercept, min_samples=None):
        """The data-independent ``(epsilon, delta)`` of fits of ``min_samples``
        to ``n_samples`` rows (``dp_guarantee`` of the mechanism)."""
        if sigma is None:
            # every size gets its own alpha and sigma, calibrated and checked
            # there; a size refused is refused below every accepted one
            for n in {n_samples, min_samples or n_samples}:
                cls.calibrate(epsilon, delta, alpha, sigma, n, n_features, intercept)
            return float(epsilon), delta
        alpha, sigma = cls.calibrate(epsilon, delta, alpha, sigma, n_samples, n_features,
                                     intercept)
        return _sigma_dp_epsilon(delta, alpha, sigma, n_samples, intercept, min_samples), delta

    @classmethod
    def from_budget(cls, epsilon, delta, data, *, scaler, alpha="auto", sigma=None):
        n, d, intercept = data.n_samples, data.n_features, bool(scaler.fit_intercept)
        d -= intercept  # the features, without the constant column
        try:
            alpha, sigma = cls.calibrate(epsilon, delta, alpha, sigma, n, d, intercept)
        except InfeasibleBudget as exc:
            # stack: here, _make_release, _choose_release, fit, fit wrapper, the user
            alpha = ridge_fallback(exc, stacklevel=7)
            sigma = objpert_noise_scale(epsilon, delta, alpha, n, intercept)
        # a budget is met as calibrated; a given sigma's guarantee is the law's
        dp = epsilon if epsilon is not None else _sigma_dp_epsilon(
            delta, alpha, sigma, n, intercept, None)
        release = cls(noise_scale=sigma, scaler=scaler, n_samples=n, delta=delta,
                      guarantee=(dp, delta), alpha=alpha)
        release.ridge = RidgeSystem(*data.gram(), alpha, intercept)
        return release

    def draw(self, rng, size=None):
        return objpert_draw(self.ridge, self.noise_scale, rng, size)

    def fitted_attributes(self):
        return {"alpha_": self.alpha, "noise_scale_": self.noise_scale}

    def losses(self, Xs, ys, add=False):
        if not add:
            stats = self.ridge.row_statistics(Xs, ys, inverse_norm=True, norm=True)
            return self._loss(self.delta, *_remove_row(stats))
        stats = self.ridge.row_statistics(Xs, inverse_norm=True, norm=True)
        fitted = Xs @ self.ridge.coef
        # The loss grows with |r|: the worst label is an end of [-1, 1].
        r = 1.0 + np.abs(fitted) if ys is None else ys - fitted
        return self._loss(self.delta, stats["norm2"], stats["leverage"],
                          stats["inverse_norm2"], r)

    def person_losses(self, gram, cross, sizes, add=False):
        """Certified loss at ``delta`` of removing (adding, ``add``) each
        person's rows together, from their sums ``gram`` (``sum z z^T``)
        and ``cross`` (``sum y z``): an indefinite generalised chi-square
        (:func:`~sklearn_pdp.accounting._objpert_person.objpert_person_epsilon`);
        ``nan`` for a person whose inversion is beyond its public cap of
        nodes (the fit charges them the labelled group-privacy bound); of
        kind "bound" where a person's law needed a normal part to converge
        (a certified upper bound, looser than the inversion's bracket),
        else "exact"."""
        eps, smoothed = objpert_person_epsilon(self.delta, self.ridge, gram, cross,
                                               self.noise_scale, add)
        return PersonLosses.of(eps, self.kind, bound=smoothed)

    def _loss(self, delta, norm2, mu, inverse_norm2, r):
        """The tight loss of a row with these statistics against the data
        without it."""
        return objpert_epsilon(delta, norm2, mu, inverse_norm2, r, self.noise_scale)

    # -- the law of a published report ------------------------------------

    def residual_margin(self, beta, stats):
        return ndtri(1.0 - beta / 2.0) * self.noise_scale * np.sqrt(stats["inverse_norm2"])

    def _dp(self, delta, n_samples=None):
        n_samples = self.n_samples if n_samples is None else n_samples
        return _sigma_dp_epsilon(delta, self.alpha, self.noise_scale, n_samples,
                                 self.intercept, None)

    def _cap(self, delta):
        # a person removed from the n rows or added to them: the domain's
        # worst at n and at n + 1 rows, at this sigma
        return max(self._dp(delta), self._dp(delta, self.n_samples + 1))

    def epsilon(self, delta, stats, gaussian_ratio=None):
        norm2, mu, w, r = _remove_row(stats)
        with np.errstate(invalid="ignore"):
            mu = np.minimum(mu, np.sqrt(norm2 * w))  # Cauchy-Schwarz
        return compose_with_gaussian(
            lambda d: np.minimum(self._loss(d, norm2, mu, w, r), self._cap(d)),
            delta, gaussian_ratio,
        )

    def cap_epsilon(self, delta, gaussian_ratio=None):
        return compose_with_gaussian(self._cap, delta, gaussian_ratio)

    def dp_epsilon(self, delta, gaussian_ratio=None):
        return compose_with_gaussian(self._dp, delta, gaussian_ratio)

    def gaussian_allowance(self, delta, target):
        return gaussian_allowance(self._dp(delta - GAUSSIAN_DELTA_SHARE * delta), delta, target)


def objpert_draw(ridge, sigma, rng, size=None):
    """theta = H^{-1}(X^T y - b) = theta_hat - H^{-1} b, b ~ N(0, sigma^2 I)
    in every coordinate, the intercept's included (``ridge`` the system of H)."""
    d = ridge.chol.shape[0]
    b = sigma * rng.standard_normal(d if size is None else (d, size))
    shift = linalg.cho_solve((ridge.chol, True), b, check_finite=False)
    return ridge.coef - (shift if size is None else shift.T)


def _remove_row(stats):
    """(||x||^2, mu, x^T H^{-2} x, r) of each row w.r.t. the data without it.

    From the full-data mu', r', w' = ||H_full^{-1} x||^2 by Sherman-Morrison:
    H^{-1} x = H_full^{-1} x / (1 - mu'), so w = w' / (1 - mu')^2, and
    mu = mu' / (1 - mu'), r = r' / (1 - mu') (:func:`leave_one_out`).
    """
    mu, r = leave_one_out(stats["leverage"], stats["residual"])
    with np.errstate(divide="ignore", invalid="ignore"):
        keep = 1.0 - stats["leverage"]
        w = np.where(keep <= 0, np.inf, stats["inverse_norm2"] / keep**2)
    return stats["norm2"], mu, w, r
