"""Output perturbation's release objects (:doc:`/mechanisms/output_perturbation`).

:class:`OutputPerturbationRelease`: the ridge solution at a public ridge
(constrained to a ball with a radius) plus Gaussian or norm-exponential
noise calibrated to its global sensitivity, with the law of a published
report (:doc:`/publish`). :class:`PrivateRidgeRelease`: ``alpha="auto"``
with Gaussian noise and no radius, the ridge chosen from a private release
of the scatter's smallest eigenvalue (:class:`AdaptiveRidge`), with the law
of a published report in :mod:`sklearn_pdp.mechanisms.private_ridge._law`.
"""

from functools import partial

import numpy as np
from scipy import linalg
from scipy.special import ndtri
from scipy.stats import gamma as gamma_law

from ...accounting import gaussian_epsilon, gaussian_noise_scale
from ...utils._rows import TwoStageRows, squared_norms
from ...utils._people import PersonLosses
from ._calibration import (
    _ball_constants, _ridge_shift, ball_ridge, ball_ridge_error, ball_sensitivity,
    norm_exponential_noise, output_perturbation_auto_alpha, output_perturbation_sensitivity,
)
from ...report._profile import PrivacyProfile
from .._release import Release, ridge_statistics
from ...utils._ridge_system import (
    RidgeSystem, leave_one_out, out_of_sample, penalty, person_shifts,
)

# A neighbouring solution counts as inside the ball (closed-form leave-one-out
# valid) only with this relative margin, so that rounding never picks the
# exact formula for a neighbour whose constraint is active.
_INSIDE_RTOL = 1e-9


def output_perturbation_guarantee(epsilon, delta, n_samples, *, noise, intercept,
                                  min_samples=None):
    """The data-independent ``(epsilon, delta)`` of output perturbation
    calibrated to the budget at every size from ``min_samples`` to
    ``n_samples``: the budget (delta 0 for the pure ``"laplace"`` noise).

    Raises ``ValueError`` with an intercept below 2 rows: without its only
    row the data set has no intercept direction, and the sensitivity is
    unbounded (a function of the public size).
    """
    smallest = min(n_samples, min_samples or n_samples)
    if intercept and smallest < 2:
        raise ValueError(
            "OutputPerturbationRegressor with fit_intercept=True needs at "
            f"least 2 samples, got n_samples={smallest}."
        )
    return float(epsilon), float(delta) if noise == "gaussian" else 0.0


def _perturb(center, noise, noise_scale, rng, size):
    """Draw(s) of ``center`` plus the noise (scaled coordinates)."""
    d = center.shape[0]
    if noise == "gaussian":
        draw = rng.standard_normal(d if size is None else (size, d))
        return center + noise_scale * draw
    return center + norm_exponential_noise(rng, d, noise_scale, size)


class OutputPerturbationRelease(Release):
    """Output perturbation at a public ridge (:doc:`/publish` for the law).

    coef = theta_c + k with Gaussian k ~ N(0, noise_scale^2 I) or
    norm-exponential k (||k|| ~ Gamma(d, noise_scale)), theta_c the ridge
    solution (constrained to ``||theta|| <= radius`` with a radius). Without
    a radius a training row's sensitivity is |r'| ||H^{-1} x|| / (1 - mu')
    in its in-sample statistics. With one it is at most the smallest of
    |r'| (||H^{-1} x|| + sqrt(mu' / lambda_min(H))) / (2 (1 - mu')), r' the
    residual against theta_c (the variational inequalities of the two
    constrained problems), ||x|| (R ||x|| + |y|) / c (strong convexity c)
    and 2R, valid whether or not the constraint binds, and of the
    release's own value where given (``sensitivity``). Each is
    non-decreasing in the statistics (and in 1 / lambda_min); the loss is
    the analytic Gaussian epsilon at sensitivity / noise_scale (pure
    sensitivity / noise_scale for "laplace"). A Gaussian publication
    composes exactly with Gaussian noise (the ratios add in squares) and by
    basic composition with "laplace".

    ``sensitivity`` is the global one at n rows (removals). A person added
    to the n rows is a row removed from n + 1, at the same ridge and noise:
    without a radius the domain's corner grows with the size
    (``sqrt(n / alpha)`` in the residual), so :meth:`cap_epsilon` and the
    clip of a row's ratio use the larger of the global sensitivities at n
    and n + 1 (``cap_sensitivity``). With a radius it does not grow
    (``min(L / c, 2R)``, c non-decreasing in n): the two coincide.

    The residual against the centre is ``|r'| + ||x|| e``, e bounding the
    computed centre's error (:func:`ball_ridge_error`): never optimistic.

    Holds the ridge system (``ridge``), the released centre before the noise
    (``center``), whether it lies inside the ball (``inside``) and, with a
    radius, the smallest eigenvalue of H (``lowest``), the centre's error
    bound (``center_error``) and ``H^{-1} theta_hat`` (``inverse_coef``):
    statistics of the private data.
    """

    _private = ("ridge", "center", "inside", "lowest", "center_error", "inverse_coef")

    def __init__(self, *, noise, noise_scale, sensitivity, radius=None, **common):
        super().__init__(**common)
        self.noise = noise
        self.noise_scale = float(noise_scale)
        self.sensitivity = float(sensitivity)
        self.radius = None if radius is None else float(radius)
        self.cap_sensitivity = max(self.sensitivity, output_perturbation_sensitivity(
            self.alpha, self.n_samples + 1, self.radius, self.intercept))

    @classmethod
    def from_budget(cls, epsilon, delta, data, *, scaler, noise="gaussian", alpha="auto",
                    radius=None):
        """Calibrated to ``(epsilon, delta)`` at the public size: the ridge
        ``alpha`` (``"auto"``: :func:`output_perturbation_auto_alpha`), the
        global sensitivity at it and the noise scale that meets the budget."""
        n, intercept = data.n_samples, bool(scaler.fit_intercept)
        guarantee = output_perturbation_guarantee(epsilon, delta, n, noise=noise,
                                                  intercept=intercept)
        XtX, Xty = data.gram()
        if alpha == "auto":
            alpha = output_perturbation_auto_alpha(epsilon, delta, n,
                                                   data.n_features - intercept, intercept)
        alpha = float(alpha)
        sensitivity = output_perturbation_sensitivity(alpha, n, radius, intercept)
        if noise == "gaussian":
            noise_scale = gaussian_noise_scale(epsilon, delta, sensitivity)
        else:  # norm-exponential: pure epsilon = c * sensitivity
            noise_scale = sensitivity / epsilon
        release = cls(noise=noise, noise_scale=noise_scale, sensitivity=sensitivity,
                      radius=radius, scaler=scaler, n_samples=n, delta=delta,
                      guarantee=guarantee, alpha=alpha)
        release._solve(XtX, Xty)
        return release

    def _solve(self, XtX, Xty):
        """The ridge system and the centre (the ball-constrained solution
        where the unconstrained one leaves the ball)."""
        self.ridge = RidgeSystem(XtX, Xty, self.alpha, self.intercept)
        self.center = self.ridge.coef
        radius = self.radius
        self.inside = radius is None or linalg.norm(self.center) <= radius * (1 - _INSIDE_RTOL)
        if radius is None:
            return
        # for the sensitivity bound of ball_sensitivity
        H = XtX + self.alpha * penalty(XtX.shape[0], self.intercept)
        self.lowest = linalg.eigvalsh(H, subset_by_index=[0, 0], check_finite=False)[0]
        if not self.inside:
            self.center = ball_ridge(H, Xty, radius)
        else:
            # x^T H^{-1} theta_hat gives the neighbours' norms in closed form
            self.inverse_coef = linalg.cho_solve(
                (self.ridge.chol, True), self.ridge.coef, check_finite=False)
        self.center_error = ball_ridge_error(H, Xty, self.center, radius, self.lowest)

    def draw(self, rng, size=None):
        return _perturb(self.center, self.noise, self.noise_scale, rng, size)

    def fitted_attributes(self):
        return {"alpha_": self.alpha, "sensitivity_": self.sensitivity,
                "noise_scale_": self.noise_scale}

    # -- the rows' exact losses ----------------------------------------------

    def row_losses(self, add=False):
        """Training rows as a :class:`TwoStageRows`: the sensitivity of each
        row, then its exact loss."""
        if add:
            return partial(self.losses, add=True)
        return TwoStageRows(partial(self.row_sensitivity, in_sample=True), self._epsilon)

    @property
    def kind(self):
        """With a radius a row's sensitivity is the bound valid whether or not
        the constraint binds (exact only for rows whose neighbour stays inside
        the ball): "bound"."""
        return "exact" if self.radius is None else "bound"

    def losses(self, Xs, ys, add=False):
        if not add:
            return self.row_losses()(Xs, ys)
        return self._epsilon(self._added_sensitivity(Xs, ys), cap=False)

    def row_sensitivity(self, Xs, ys, in_sample):
        """||theta(larger) - theta(smaller)|| for each row (or its upper bound).

        ``in_sample``: the rows are in the training data (smaller = without
        them); otherwise they are added to it.
        """
        stats = self.ridge.row_statistics(Xs, ys, inverse_norm=True)
        shift = _ridge_shift(stats, in_sample)
        with np.errstate(invalid="ignore"):
            exact = np.abs(shift) * np.sqrt(stats["inverse_norm2"])
        if self.radius is None:
            return exact
        R = self.radius
        # the bound valid whether or not the constraint binds, in the
        # in-sample statistics against the released (constrained) centre
        norm2 = squared_norms(Xs)
        ball = dict(stats, residual=self._center_residual(ys - Xs @ self.center, norm2),
                    norm2=norm2, label=np.abs(ys))
        if not in_sample:
            ball = out_of_sample(ball)
        bound = ball_sensitivity(ball, self.lowest, R, self._convexity())
        if not self.inside:
            return bound
        with np.errstate(invalid="ignore", over="ignore"):
            other_norm2 = (
                self.center @ self.center
                + 2.0 * shift * (Xs @ self.inverse_coef)
                + shift**2 * stats["inverse_norm2"]
            )
        inside = other_norm2 <= (R * (1 - _INSIDE_RTOL)) ** 2
        return np.where(inside, exact, bound)

    def person_losses(self, gram, cross, sizes, add=False):
        """Loss at ``delta`` of removing (adding, ``add``) each person's rows
        together, from their sums ``gram`` (``sum z z^T``), ``cross`` (``sum
        y z``) and numbers of rows ``sizes``: the noise's loss at the
        person's shift of the centre, exact without a radius (the ridge
        solution's rank-m change, :meth:`RidgeSystem.group_shifts`); with
        one, exact where both solutions stay inside the ball and else the
        bound of :meth:`_ball_person_sensitivity` (a bound, as a row's)."""
        shift = person_shifts(self.ridge, gram, cross, sizes, self.n_samples, self.intercept,
                              add)
        sensitivity = np.linalg.norm(shift, axis=1)
        if self.radius is not None:
            bound = self._ball_person_sensitivity(gram, cross, sizes, add)
            inside = self.inside & (np.linalg.norm(self.center + shift, axis=1)
                                    <= self.radius * (1 - _INSIDE_RTOL))
            sensitivity = np.where(inside, sensitivity, bound)
        eps = self._loss(self.delta, sensitivity / self.noise_scale, None)
        if not add:  # (an added person is not a neighbour the calibration covered: uncapped)
            # within the global sensitivity the loss is at most the guarantee
            # (the root search's tolerance must not report more); beyond it,
            # k rows move the centre further than the calibration covers
            eps = np.where(sensitivity <= self.sensitivity,
                           np.minimum(eps, self.guarantee[0]), eps)
        return PersonLosses.of(eps, self.kind)

    def _ball_person_sensitivity(self, gram, cross, sizes, add):
        """Bound on a person's change of the ball-constrained solution,
        valid whether or not the constraint binds: ``min(||grad||
        / c, 2 R)``, c the strong convexity of the smaller data set's
        objective and ``grad = gram theta - cross`` the person's loss
        gradient at the larger one's solution theta (variational
        inequalities; :doc:`/mechanisms/output_perturbation`), at most ``R
        ||gram||_2 + ||cross||`` over the ball, and on a removal, where
        theta is the released centre, at most its value there plus
        ``||gram||_2`` times the centre's error bound."""
        R = self.radius
        spectral = np.linalg.norm(gram, ord=2, axis=(1, 2))
        gradient = R * spectral + np.linalg.norm(cross, axis=1)
        if not add:
            at_center = np.linalg.norm(cross - gram @ self.center, axis=1)
            gradient = np.minimum(gradient, at_center + spectral * self.center_error)
        # _ball_constants takes the size whose data sets of one row fewer it covers
        smaller = self.n_samples + 1 - (0 if add else sizes)
        convexity = _ball_constants(self.alpha, smaller, R, self.intercept)[1]
        with np.errstate(divide="ignore"):
            return np.minimum(gradient / convexity, 2.0 * R)

    def _center_residual(self, residual, norm2):
        """``|residual|``, raised by what the exact centre's may exceed it."""
        return np.abs(residual) + np.sqrt(norm2) * self.center_error

    def _convexity(self):
        return _ball_constants(self.alpha, self.n_samples, self.radius, self.intercept)[1]

    def _added_sensitivity(self, Xs, ys):
        """Sensitivity (or its bound) of adding each row; ``ys`` None: the worst label."""
        if ys is not None:
            return self.row_sensitivity(Xs, ys, in_sample=False)
        # The worst label is an end of [-1, 1]: the exact sensitivity grows
        # with |residual|, the set of labels whose neighbour stays inside the
        # ball is an interval (a convex quadratic in the label), and the bound
        # is largest at |y| = 1.
        return np.maximum(*(
            self.row_sensitivity(Xs, np.full(Xs.shape[0], end), in_sample=False)
            for end in (-1.0, 1.0)
        ))

    def _epsilon(self, sensitivity, cap=True):
        eps = self._loss(self.delta, sensitivity / self.noise_scale, None)
        # A row at the global sensitivity costs exactly epsilon (the calibration
        # checked delta(epsilon) <= delta there); the root search's tolerance
        # must not report more. An added row is not a neighbour the
        # calibration covered: no cap (``cap=False``).
        return np.minimum(eps, self.guarantee[0]) if cap else eps

    def statistics(self, Xs, ys, add=False):
        """Exact statistics of the rows for :meth:`epsilon`.

        Without a radius those of every ridge mechanism. With one, the
        residual is taken against the released centre (the constrained
        solution), and the rows also carry ``|y|`` (``label``), the smallest
        eigenvalue of H (``lowest``) and the release's own sensitivity of
        each row (``sensitivity``: exact where the constraint is inactive),
        which the law's bound, valid in every case, can only lower.
        """
        if self.radius is None:
            return ridge_statistics(self.ridge, Xs, ys, add)
        stats = self.ridge.row_statistics(Xs, inverse_norm=True, norm=True)
        fitted = Xs @ self.center
        # every bound grows with |r| and |y|: the worst label is an end of [-1, 1]
        stats["residual"] = self._center_residual(
            1.0 + np.abs(fitted) if ys is None else ys - fitted, stats["norm2"])
        stats["label"] = np.ones(Xs.shape[0]) if ys is None else np.abs(ys)
        stats["lowest"] = self.lowest
        if not add:
            stats["sensitivity"] = self.row_sensitivity(Xs, ys, in_sample=True)
            return stats
        stats["sensitivity"] = self._added_sensitivity(Xs, ys)
        return out_of_sample(stats)

    def profile(self, losses, mechanism):
        """Gaussian noise: the release is the Gaussian mechanism with each
        row's ratio sensitivity / noise_scale, recovered from its loss.
        The norm-exponential noise's pure epsilons compose only by basic
        composition. A record added to a data set of ``m`` rows (its own
        included) moves the solution by at most the global sensitivity at
        ``m``, with this release's ``alpha`` and noise."""
        common = {"guarantee": self._worst_ratio(self.n_samples),
                  "n_samples": self.n_samples, "mechanism": mechanism,
                  "step": self._worst_ratio}
        if self.noise == "gaussian":
            return PrivacyProfile.from_losses("gaussian", losses, self.delta, **common)
        return PrivacyProfile("epsilon_delta", losses, delta=0.0, **common)

    def _worst_ratio(self, size):
        return output_perturbation_sensitivity(
            self.alpha, size, self.radius, self.intercept) / self.noise_scale

    # -- the law of a published report ---------------------------------------

    def residual_margin(self, beta, stats):
        if self.noise == "gaussian":
            quantile = ndtri(1.0 - beta / 2.0)
        else:  # |x^T k| <= ||x|| ||k||
            quantile = gamma_law.isf(beta, self.coef.shape[0])
        return quantile * self.noise_scale * np.sqrt(stats["norm2"])

    def published_statistics(self, published, Xs, ys):
        stats = super().published_statistics(published, Xs, ys)
        stats["label"] = np.ones(Xs.shape[0]) if ys is None else np.abs(ys)
        return stats

    def _ratio(self, stats):
        if self.radius is not None:
            sensitivity = np.minimum(stats.get("sensitivity", np.inf), self._ball_bound(stats))
            return sensitivity / self.noise_scale
        _, r = leave_one_out(stats["leverage"], stats["residual"])
        with np.errstate(invalid="ignore"):
            return np.abs(r) * np.sqrt(stats["inverse_norm2"]) / self.noise_scale

    def _ball_bound(self, stats):
        return ball_sensitivity(stats, stats["lowest"], self.radius, self._convexity())

    def _loss(self, delta, ratio, gaussian_ratio):
        if self.noise == "gaussian":
            if gaussian_ratio is not None:  # the ratios add in squares
                ratio = np.hypot(ratio, gaussian_ratio)
            return gaussian_epsilon(delta, ratio)
        if gaussian_ratio is None:
            return ratio
        return ratio + gaussian_epsilon(delta, gaussian_ratio)

    def epsilon(self, delta, stats, gaussian_ratio=None):
        # no row removed from n rows or added to them exceeds the global
        # sensitivity at n or n + 1 rows
        ratio = np.minimum(self._ratio(stats), self.cap_sensitivity / self.noise_scale)
        eps = self._loss(delta, ratio, gaussian_ratio)
        if gaussian_ratio is None:
            # the root search's tolerance must not exceed the guarantee: at
            # most the removal corner's loss where the ratio is within it
            within = ratio <= self.sensitivity / self.noise_scale
            eps = np.where(within, np.minimum(eps, self.dp_epsilon(delta)),
                           np.minimum(eps, self.cap_epsilon(delta)))
        return eps

    def cap_epsilon(self, delta, gaussian_ratio=None):
        """The loss at the global sensitivity at n or n + 1 rows, whichever
        is larger: a row removed from the n rows or added to them."""
        dp = self.dp_epsilon(delta, gaussian_ratio)
        if self.cap_sensitivity <= self.sensitivity:  # the ball: the removal corner
            return dp
        cap = self._loss(delta, self.cap_sensitivity / self.noise_scale, gaussian_ratio)
        return float(max(cap, dp))

    def dp_epsilon(self, delta, gaussian_ratio=None):
        if gaussian_ratio is None and delta == self.guarantee[1]:
            return self.guarantee[0]
        return float(self._loss(delta, self.sensitivity / self.noise_scale, gaussian_ratio))

    def gaussian_allowance(self, delta, target):
        worst = self.sensitivity / self.noise_scale
        if self.noise == "gaussian":
            total = 1.0 / gaussian_noise_scale(target, delta)
            if not total > worst:
                raise ValueError(
                    f"The release alone costs at least {target:.4g} at this delta: "
                    "nothing is left for a publication; raise publish_epsilon."
                )
            return float(np.sqrt(total**2 - worst**2))
        if not worst < target:
            raise ValueError("nothing is left for a publication; raise publish_epsilon.")
        return 1.0 / gaussian_noise_scale(target - worst, delta)


