"""Random projection's release: a Gaussian sketch of the scaled data plus
noise and, with an intercept, the label sum plus Laplace noise, with their
calibration, their exact per-row losses (chi-square tails, composed with
the Laplace ones) and the publication law
(:doc:`/mechanisms/random_projection`)."""

import warnings

import numpy as np
from scipy import linalg

from ...accounting import chi2_epsilon, chi2_noise_scale, compose_with_gaussian
from ...accounting._person_change import sketch_person_epsilon, whitened_change
from ...utils._arrays import row_norms
from ...utils._people import PersonLosses
from ...utils._rows import TwoStageRows
from .._release import Release, _label_change
from ...utils._ridge_system import RidgeSystem, leave_one_out
from ...exceptions import PrivacyLeakWarning
from ._sketch import (
    _LabelledRows, _column_max_squares, _label_quadratic, _labelled_gram, label_mean_intercept,
    paper_noise_scale, solve_sketch,
)

# tau_in above this is 1 up to rounding: the row alone spans a direction
_ONE = 1.0 - 1e-12
# Components of a row along a null direction of a singular Sigma, relative
# to the row's norm, that are within rounding of zero (computed as z . v with
# eigenvectors v accurate to ~1e-15 for well-separated eigenvalues).
_NULL_RTOL = 1e-12
# Share of epsilon spent on the label sum (Laplace) with an intercept: the
# released label mean replaces the sketch's where it is the less noisy.
_LABEL_SHARE = 0.1


class RandomProjectionRelease(Release):
    """``n_components`` rows N(0, Sigma), ``Sigma = Z^T Z + diag(noise
    variances)`` of the scaled rows ``z = [x, y]`` (the released sketch
    ``S Z + noise``, whatever S is), and the ridge regression on them.

    A row's statistic is its in-sample ``tau' = z^T Sigma^{-1} z`` and its
    loss the chi-square one at ``tau = tau' / (1 - tau')``, non-decreasing
    in tau'. For a published report the released sketch R bounds it:
    ``R^T R = Sigma^{1/2} G^T G Sigma^{1/2}`` with G an n' x p matrix of
    independent N(0, 1) entries, whose largest singular value is at most
    ``sqrt(n') + sqrt(p) + sqrt(2 log(1/beta))`` except with probability
    beta (Gordon's bound and Gaussian concentration). On that event
    ``R^T R <= s^2 Sigma``, so ``tau' <= s^2 z^T (R^T R)^{-1} z`` for every
    z at once (:doc:`/publish`). The publication needs no Gram matrix
    (``needs_gram``): it costs the summary alone.

    With an intercept (``variant="dp"``) the sketch is calibrated to
    ``(1 - _LABEL_SHARE) epsilon`` and the label sum of the scaled rows is
    released with Laplace noise of scale ``1 / label_epsilon``, the rest of
    the budget (:func:`label_mean_intercept` then chooses the intercept).
    The two compose by basic composition: a row's loss is the sketch's plus
    ``|y| label_epsilon`` (its change of the sum over the noise's scale),
    the same removed or added.

    Holds Sigma factorised (``sigma``, with ``basis`` and ``null`` where it
    is singular) and the label sum (``label_sum``): statistics of the
    private data.
    """

    needs_gram = False
    # its person_losses needs each person's sum of squared labels
    person_label_squares = True
    _private = ("sigma", "basis", "null", "label_sum")

    def __init__(self, *, n_components, noise_scale, variant, label_epsilon=0.0,
                 sketch_epsilon=None, **common):
        super().__init__(alpha=noise_scale**2, **common)
        self.n_components = int(n_components)
        self.noise_scale = float(noise_scale)
        self.variant = variant
        self.signal_ridge = 0.0
        # the label sum's share (0: none released) and the sketch's own budget
        self.label_epsilon = float(label_epsilon)
        self.sketch_epsilon = self.guarantee[0] if sketch_epsilon is None else float(
            sketch_epsilon)
        self.released_label_mean = None
        self.centred = False

    @staticmethod
    def noise_scale_for(epsilon, delta, n_components, fit_intercept):
        """The noise's standard deviation for (epsilon, delta)-DP: a row
        ``[x, 1, y]`` of the scaled domain has ``||z||^2 <= 2 +
        fit_intercept``, where the chi-square loss is the largest."""
        return chi2_noise_scale(epsilon, delta, n_components, 2.0 + fit_intercept)

    @staticmethod
    def budget_split(epsilon, fit_intercept, variant="dp"):
        """``(sketch_epsilon, label_epsilon)``: with an intercept
        (``variant="dp"``) the label sum's ``_LABEL_SHARE`` of epsilon,
        the rest to the sketch (their sum is epsilon)."""
        if not (fit_intercept and variant == "dp" and np.isfinite(epsilon)):
            return float(epsilon), 0.0
        sketch = (1.0 - _LABEL_SHARE) * float(epsilon)
        return sketch, float(epsilon) - sketch

    @staticmethod
    def dp_guarantee(epsilon, delta, variant):
        """The data-independent ``(epsilon, delta)`` at every size:
        :meth:`noise_scale_for` verifies the budget's delta at every size;
        the paper's variant has none."""
        return (float(epsilon) if variant == "dp" else np.inf), delta

    @classmethod
    def from_budget(cls, epsilon, delta, data, *, scaler, n_components, variant="dp"):
        ZtZ = data.scan(_labelled_gram)
        p = data.n_features
        sketch_epsilon, label_epsilon = cls.budget_split(epsilon, scaler.fit_intercept, variant)
        if variant == "dp":
            s = cls.noise_scale_for(sketch_epsilon, delta, n_components, scaler.fit_intercept)
            penalty = np.full(p + 1, s**2)
        else:
            col_max_sq = data.reduce(_column_max_squares, np.maximum)
            s = paper_noise_scale(epsilon, n_components, np.diag(ZtZ)[:p], col_max_sq)
            penalty = np.append(np.full(p, s**2), 0.0)
        release = cls(n_components=n_components, noise_scale=s, variant=variant,
                      label_epsilon=label_epsilon,
                      sketch_epsilon=sketch_epsilon if variant == "dp" else np.inf,
                      scaler=scaler, n_samples=data.n_samples, delta=delta,
                      guarantee=cls.dp_guarantee(epsilon, delta, variant))
        # the constant's entry of the label column: the label sum
        release.label_sum = float(ZtZ[-2, -1]) if label_epsilon else 0.0
        release._factor_sigma(ZtZ + np.diag(penalty))
        if variant == "paper":
            # only without noise on a column can a row alone span a direction
            # of Sigma (tau_in = 1) or leave its range (tau = inf); counting
            # them costs one more pass
            exposed = data.reduce(
                lambda start, Xs, ys: int(np.sum(release._tau(_LabelledRows(Xs, ys)) > _ONE))
            )
            if exposed:
                warnings.warn(
                    f"{exposed} training row(s) alone span a direction of the "
                    "released sketch's covariance, or break a linear relation "
                    "that it reveals (possible only without noise on some "
                    "column): their privacy loss is infinite.",
                    PrivacyLeakWarning,
                    stacklevel=6,  # from_budget, _make_release, _choose_release, fit
                )
        return release

    def _factor_sigma(self, sigma):
        """Cholesky of Sigma, restricted to its range when it is singular.

        A singular Sigma (only possible without noise on some column) means
        the sketch reveals an exact linear relation of [X, y]; targets with a
        component outside its range have infinite loss.
        """
        lam, vec = linalg.eigh(sigma, check_finite=False)
        keep = lam > lam[-1] * sigma.shape[0] * np.finfo(float).eps
        try:
            if keep.all():
                self.basis = self.null = None
                self.sigma = RidgeSystem(sigma, None, 0.0)
                return
            self.null = vec[:, ~keep]
            self.sigma = RidgeSystem(np.diag(lam[keep]), None, 0.0)
        except ValueError:
            # Nearly singular: leverages along the smallest directions would
            # be rounding noise, so no per-instance loss could be trusted.
            raise ValueError(
                "The covariance of the released sketch is too ill-conditioned "
                "for exact per-instance losses: a linear relation between the "
                "columns of [X, y] holds almost exactly and the noise "
                f"(noise_scale_={self.noise_scale:.3g}, variant="
                f"{self.variant!r}) does not mask it. Use variant='dp', or a "
                "smaller epsilon."
            ) from None
        warnings.warn(
            "The covariance of the released sketch is singular: it reveals an "
            "exact linear relation between the columns of [X, y] (e.g. y in the "
            "span of X without noise on y). Targets off that relation have "
            "infinite privacy loss.",
            PrivacyLeakWarning,
            stacklevel=7,  # _factor_sigma, from_budget, _make_release, _choose_release, fit
        )
        self.basis = vec[:, keep]

    def draw(self, rng, size=None):
        """Draw(s) of the released sketch (scaled coordinates), of shape
        (n_components, n_features + 1): its rows are N(0, Sigma) whatever
        the draw of S, so they are drawn from Sigma's Cholesky factor, in
        distribution the explicit sketch, without the training data."""
        chol = self.sigma.chol
        shape = (self.n_components, chol.shape[0])
        G = rng.standard_normal(shape if size is None else (size, *shape))
        draw = G @ chol.T
        return draw if self.null is None else draw @ self.basis.T

    def release(self, rng):
        """Draws the sketch (``sketch``) and solves it for ``coef``, then
        (``label_epsilon``) the label sum, whose mean may replace the
        sketch's in the intercept (:func:`label_mean_intercept`)."""
        self.sketch = self.draw(rng)
        theta, self.signal_ridge = self.solve(self.sketch)
        if np.isinf(self.signal_ridge):
            self.reason = (
                "the released sketch shows no signal whose slopes surely predict "
                "better than the label mean (the signal test and its risk bound, "
                "post-processing: the losses are those of the sketch); the "
                "sketch's noise relative to the signal falls with n_samples and "
                "epsilon")
        if self.label_epsilon:
            noisy_sum = self.label_sum + rng.laplace(scale=1.0 / self.label_epsilon)
            self.released_label_mean = noisy_sum / self.n_samples
            theta, self.centred = label_mean_intercept(
                self.sketch, theta, self.n_samples, self.noise_scale**2,
                self.released_label_mean, self.label_mean_variance)
        self.coef = np.asarray(theta, dtype=np.float64)
        return self.coef

    @property
    def label_mean_variance(self):
        """The released label mean's noise variance, ``2 b^2 / n^2``
        (Laplace of scale ``b = 1 / label_epsilon`` on the sum)."""
        return 2.0 / (self.label_epsilon * self.n_samples) ** 2

    def solve(self, sketch):
        """``(coef, signal_ridge)`` of the ridge regression on ``sketch``
        (post-processing, :func:`solve_sketch`)."""
        return solve_sketch(sketch, self.noise_scale**2, self.n_samples, self.intercept,
                            debias=self.variant == "dp")

    def fitted_attributes(self):
        return {"n_components_": self.n_components, "sketch_": self.sketch,
                "signal_ridge_": self.signal_ridge, "noise_scale_": self.noise_scale,
                "released_label_mean_": self.released_label_mean,
                "label_noise_scale_": (1.0 / self.label_epsilon if self.label_epsilon
                                       else None),
                "centred_intercept_": self.centred}

    def _tau(self, Z):
        """z^T Sigma^+ z of the rows of ``Z`` (:class:`_LabelledRows`), inf
        off the range of Sigma."""
        if self.null is None:
            return self.sigma.row_statistics(Z)["leverage"]
        tau = self.sigma.row_statistics(Z @ self.basis)["leverage"]
        # A component along a null direction that is more than rounding (of
        # the row and of the eigenvectors) is real: the relation is not exact
        # for this row, and its loss is infinite (Sigma may be singular only
        # to working precision, so that direction's variance is unknown).
        off = row_norms(Z @ self.null)
        rounding = _NULL_RTOL * np.sqrt(Z.squared_norms())
        return np.where(off > rounding, np.inf, tau)

    def _training_tau(self, Xs, ys):
        """In-sample tau' = z^T Sigma^{-1} z of the training rows."""
        tau_in = self._tau(_LabelledRows(Xs, ys))
        # A row alone spanning a direction of Sigma has tau_in = 1 exactly;
        # within rounding of 1 report it as such (infinite loss), never as a
        # large finite number that rounding produced.
        tau_in[tau_in > _ONE] = 1.0
        return tau_in

    def _row_statistics(self, Xs, ys):
        """Training rows' in-sample tau' and change of the label sum, |y|."""
        return np.column_stack((self._training_tau(Xs, ys), np.abs(ys)))

    def _training_losses(self, stats):
        return self.epsilon(self.delta, {"tau": stats[:, 0], "ysum": stats[:, 1]})

    def losses(self, Xs, ys, add=False):
        if not add:
            return self._training_losses(self._row_statistics(Xs, ys))
        tau = _label_quadratic(self._tau, Xs, ys)
        # an added row is not a neighbour the calibration covered: uncapped
        return (chi2_epsilon(self.delta, tau, self.n_components)
                + self.label_epsilon * _label_change(Xs, ys)["ysum"])

    def person_losses(self, gram, cross, sizes, add=False, label_squares=None):
        """Certified loss at ``delta`` of removing (adding, ``add``) each
        person's rows together, from their sums ``gram``, ``cross`` and
        ``label_squares`` (``sum y^2``) of the rows z = [x, y]: the
        sketch's generalised chi-square loss
        (:func:`~sklearn_pdp.accounting._person_change.sketch_person_epsilon`)
        plus, with the label sum, ``|sum y|`` times its share (basic
        composition, as for a row). None on a singular Sigma; ``nan`` for a
        person whose law is not certified within its public cap (the fit
        charges them the labelled group-privacy bound)."""
        if self.null is not None or label_squares is None:
            return None
        labelled = np.concatenate([
            np.concatenate([gram, cross[:, :, None]], axis=2),
            np.concatenate([cross, label_squares[:, None]], axis=1)[:, None, :]], axis=1)
        tau, _ = whitened_change(self.sigma._whitener, labelled, add=add)
        sketch = sketch_person_epsilon(self.delta, tau, self.n_components)
        # the constant feature is the last column of the rows (with an intercept)
        return PersonLosses.of(sketch + self.label_epsilon * np.abs(cross[:, -1]), self.kind)

    def row_losses(self, add=False):
        """Training rows: a :class:`~sklearn_pdp.utils._rows.TwoStageRows`, the
        in-sample tau' and |y| of each row (one product), then its exact
        loss."""
        if add:
            return super().row_losses(add)
        return TwoStageRows(self._row_statistics, self._training_losses, 2)

    def statistics(self, Xs, ys, add=False):
        """The in-sample tau' of training rows, or (``add``) the in-sample
        equivalent tau / (1 + tau) of rows added (``ys`` None: the worst
        label), which :func:`leave_one_out` maps back to tau; and each
        row's change of the label sum (``ysum``)."""
        stats = _label_change(Xs, ys)
        if not add:
            stats["tau"] = self._training_tau(Xs, ys)
            return stats
        tau = _label_quadratic(self._tau, Xs, ys)
        with np.errstate(invalid="ignore"):
            stats["tau"] = np.where(np.isinf(tau), 1.0, tau / (1.0 + tau))
        return stats

    def public(self):
        if self.variant != "dp":
            raise NotImplementedError(
                "RandomProjectionRegressor with variant='paper' has no DP "
                "guarantee, so its report cannot be published (variant='dp' can)."
            )
        law = super().public()
        # its Gram matrix is all a published report needs of the sketch
        law.sketch_gram = law.__dict__.pop("sketch").T @ self.sketch
        return law

    # -- the law of a published report ------------------------------------

    @property
    def max_tau(self):
        """The domain's largest tau, ``||z||^2 / s^2``."""
        if self.noise_scale == 0:
            return np.inf
        return (2.0 + self.intercept) / self.noise_scale**2

    def _dp(self, delta):
        # the sketch's guarantee at the fit's delta; elsewhere the loss at the corner
        if delta == self.guarantee[1]:
            return self.sketch_epsilon
        return float(chi2_epsilon(delta, self.max_tau, self.n_components))

    def _dp_total(self, delta):
        # with the label sum's worst loss; the budget at the fit's delta
        if delta == self.guarantee[1]:
            return self.guarantee[0]
        return self._dp(delta) + self.label_epsilon

    def epsilon(self, delta, stats, gaussian_ratio=None):
        # Sherman-Morrison: tau of the data set without the row (residual
        # unused); capped at the guarantee, which the calibration verified
        # at the corner: the root search's tolerance must not report more
        tau, _ = leave_one_out(stats["tau"], np.zeros_like(stats["tau"]))
        label = self.label_epsilon * stats["ysum"]

        def alone(d):
            sketch = np.minimum(chi2_epsilon(d, tau, self.n_components), self._dp(d))
            return np.minimum(sketch + label, self._dp_total(d))

        return compose_with_gaussian(alone, delta, gaussian_ratio)

    def dp_epsilon(self, delta, gaussian_ratio=None):
        return compose_with_gaussian(self._dp_total, delta, gaussian_ratio)

    def cap_epsilon(self, delta, gaussian_ratio=None):
        """The removal guarantee, which also covers a person added: the loss
        is the chi-square one at tau = z^T Sigma_s^{-1} z, Sigma_s the
        smaller data set's ``Z^T Z + s^2 I >= s^2 I`` whichever its size, so
        tau <= ||z||^2 / s^2 = ``max_tau`` for a row removed from the n rows
        or added to them (n', s fixed by the release)."""
        return self.dp_epsilon(delta, gaussian_ratio)

    def published_statistics(self, published, Xs, ys):
        k, p = self.n_components, self.sketch_gram.shape[0]
        scale = (np.sqrt(k) + np.sqrt(p) + np.sqrt(2.0 * np.log(1.0 / published.beta))) ** 2
        try:
            sketch = RidgeSystem(self.sketch_gram, None, 0.0)
        except ValueError:  # fewer sketch rows than columns: nothing is bounded
            return dict(_label_change(Xs, ys), tau=np.full(Xs.shape[0], np.inf))
        quad = _label_quadratic(lambda Z: sketch.row_statistics(Z)["leverage"], Xs, ys)
        return dict(_label_change(Xs, ys), tau=scale * quad)


