"""Output perturbation of ridge regression (Wu, Fredrikson, Wu, Jha and
Naughton 2015, Algorithms 2 and 4; doc/mechanisms/output_perturbation.rst)."""

from functools import partial
from numbers import Real

import numpy as np
from scipy import linalg
from scipy.optimize import brentq
from scipy.special import ndtri
from scipy.stats import gamma as gamma_law
from sklearn.utils.validation import check_is_fitted

from ._sklearn import Interval, StrOptions
from ._accounting import (
    PREDICTION_NOISE,
    domain_bounds,
    gaussian_epsilon,
    gaussian_noise_scale,
)
from ._accounting._engine import largest_root
from ._base import PrivateRegressorMixin
from ._ridge_system import RidgeSystem, leave_one_out, out_of_sample, penalty
from ._rows import TwoStageRows, squared_norms
from ._eigen import eigen_change, eigen_max_change, scatter_eigen
from ._docstrings import fill_doc
from ._law import ReleaseLaw
from ._profile import PrivacyProfile

# A neighbouring solution counts as inside the ball (closed-form leave-one-out
# valid) only with this relative margin, so that rounding never picks the
# exact formula for a neighbour whose constraint is active.
_INSIDE_RTOL = 1e-9


@fill_doc
class OutputPerturbationRegressor(PrivateRegressorMixin):
    """Ridge regression plus calibrated noise, with per-instance privacy.

    Solves ridge regression on the data scaled into the privacy domain (rows
    in the unit ball, labels in [-1, 1]), optionally constrained to the ball
    ``||theta|| <= radius`` as in Wu et al.'s rls-out, and adds noise
    calibrated to the global l2 sensitivity of that solution over the domain:
    Gaussian noise for (epsilon, delta)-DP, calibrated by the analytic
    Gaussian mechanism, or norm-exponential noise (density proportional to
    ``exp(-||k|| / noise_scale_)``) for pure epsilon-DP. Every training row's
    per-instance epsilon is reported in ``pdp_losses_``.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy budget the noise is calibrated for (over the whole domain).
    delta : float, default=1e-6
        The delta of the Gaussian calibration, and the delta at which
        ``pdp_losses_`` are reported. Ignored with ``noise="laplace"``, which
        is pure epsilon-DP.
    noise : {"gaussian", "laplace"}, default="gaussian"
        ``"gaussian"``: N(0, noise_scale_^2 I). ``"laplace"``: the
        norm-exponential distribution of Wu et al., density proportional to
        ``exp(-||k||_2 / noise_scale_)``, sampled as a
        ``Gamma(d, noise_scale_)`` radius times a uniform direction.
    alpha : float or "auto", default="auto"
        Ridge strength on the scaled data, as ``RidgeSystem(alpha=alpha)`` would use
        it there (sum of squared errors convention, intercept not penalised).
        The sensitivity, hence the noise, shrinks like 1/alpha^1.5 (about
        sqrt(n) / alpha^1.5 without ``radius``): useful values grow with the
        sample size. "auto" with Gaussian noise and no ``radius``: a private,
        data-adaptive ridge (:class:`AdaptiveRidge`): a tenth of the budget's
        squared Gaussian ratio releases the smallest eigenvalue of the
        scatter, the noise is calibrated to the sensitivity of every data set
        at least that well conditioned (half of ``delta`` covers the release's
        lower bound failing), and the ridge is the one that minimises the
        slopes' shrinkage plus the noise there. "auto" otherwise:
        :func:`output_perturbation_auto_alpha`, a rule in the public (n, d,
        epsilon, delta).
    radius : float, default=None
        Constrain the solution to ``||theta|| <= radius`` (scaled coordinates),
        as rls-out does. The sensitivity is then independent of the sample
        size. None solves unconstrained ridge.
    {bounds}
    {tighten}
    {fit_intercept}
    {random_state}
    {n_jobs}

    Attributes
    ----------
    {model}
    {mean_only}
    pdp_losses_ : ndarray of shape (n_samples,)
        Per-instance epsilon of removing each training row: at ``delta`` for
        Gaussian noise (exact), pure for ``"laplace"`` (exact,
        ``sensitivity / noise_scale_``). Exact wherever the ball constraint is
        inactive for the data set and for the neighbour without the row; an
        upper bound elsewhere (see Notes).
    dp_epsilon_ : float
        Data-independent epsilon of the release for any data set of this size
        in the declared domain (the ``epsilon`` it was calibrated for).
    dp_delta_ : float
        The delta of ``dp_epsilon_``: ``delta``, or 0.0 for ``"laplace"``.
    noise_scale_ : float
        Standard deviation of the Gaussian noise per coordinate, or the scale
        1/c of the norm-exponential density ``exp(-c ||k||)``, in scaled
        coordinates.
    sensitivity_ : float
        The global l2 sensitivity the noise is calibrated to (scaled
        coordinates); with the private ridge, over the data sets at least as
        well conditioned as the released eigenvalue's cell floor.
    lowest_eigenvalue_ : float
        With the private ridge only: the released smallest eigenvalue of the
        scatter (scaled coordinates) plus its Gaussian noise.
    eigen_noise_ : float
        With the private ridge only: the standard deviation of that noise.
    {fitted_bounds}

    See Also
    --------
    OPSRegressor : One Posterior Sample, noise shaped by the data.

    Notes
    -----
    Global sensitivity (sum-of-losses convention, strong convexity ``alpha``,
    rows with ``||x|| <= 1`` and ``|y| <= 1``): with a radius R the squared
    loss has gradient norm at most R + 1 on the ball, so the solution moves by
    at most ``(R + 1) / alpha`` when one row is added or removed; both
    solutions lie in the ball, so by at most ``2 R`` as well, and the smaller
    of the two is used. Without a radius, ``||theta_hat|| <= sqrt(n) / (2
    sqrt(alpha))`` gives ``(1 + sqrt(n) / (2 sqrt(alpha))) / alpha``, which
    grows with n. The sample size is treated as public.

    Per-instance sensitivity of a training row i: without an active
    constraint, ``||theta_hat - theta_hat_{-i}|| = |r_i| ||H^{-1} x_i|| /
    (1 - mu_i)`` with the in-sample residual ``r_i``, leverage ``mu_i`` and
    ``H = X^T X + alpha I`` of the full data (Sherman-Morrison; no refit per
    row). With a radius this is exact when both ``theta_hat`` and
    ``theta_hat_{-i}`` lie inside the ball (their norms are also available in
    closed form). Otherwise ``pdp_losses_`` uses the valid upper bound
    ``min(|r_i| (||H^{-1} x_i|| + sqrt(mu_i / lambda_min(H))) / (2 (1 - mu_i)),
    ||x_i|| (R ||x_i|| + |y_i|) / alpha, 2 R)``, ``r_i`` against the
    constrained solution (:func:`ball_sensitivity`): the variational
    inequalities of the two constrained problems, the strong-convexity
    argument with the gradient of row i alone, or the ball's diameter.

    Choosing ``alpha`` and ``radius`` (they must not be tuned on the private
    data, or tuned privately): with Gaussian noise and no radius
    ``alpha="auto"`` is chosen privately (:class:`AdaptiveRidge`; each row's
    loss is then that of the joint release of the eigenvalue and the
    coefficients, at ``delta``, and ``privacy_profile`` gives only these
    (epsilon, delta) pairs); otherwise it is ``10 (d + 1) n^(1/3) /
    epsilon^(2/3)``, measured on the utility grid, or larger (the public
    rule). A radius below the norm of the scaled true coefficients biases
    the fit.

    The fitted estimator keeps the non-private ridge solution for
    :meth:`pdp_epsilon`; publish ``coef_``, ``intercept_`` or predictions, not
    the estimator object.

    References
    ----------
    X. Wu, M. Fredrikson, W. Wu, S. Jha and J. F. Naughton, "Revisiting
    Differentially Private Regression: Lessons From Learning Theory and their
    Consequences", 2015 (rls-out, Algorithm 4).
    B. Balle and Y.-X. Wang, "Improving the Gaussian Mechanism for
    Differential Privacy: Analytical Calibration and Optimal Denoising",
    ICML 2018.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_pdp import OutputPerturbationRegressor
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-1, 1, size=(2000, 3)) / np.sqrt(3)
    >>> y = np.clip(X @ [1.0, -0.5, 0.2] + 0.1 * rng.randn(2000), -1, 1)
    >>> reg = OutputPerturbationRegressor(epsilon=1.0, alpha=200.0, radius=1.0,
    ...                                   data_norm=1.0, y_bound=1.0,
    ...                                   random_state=0).fit(X, y)
    >>> reg.dp_epsilon_
    1.0
    >>> bool(np.all(reg.pdp_losses_ < reg.dp_epsilon_))
    True
    >>> reg.pdp_losses_.shape
    (2000,)
    """

    _parameter_constraints: dict = {
        **PrivateRegressorMixin._parameter_constraints,
        "epsilon": [Interval(Real, 0, None, closed="right")],
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "noise": [StrOptions({"gaussian", "laplace"})],
        # alpha > 0: the sensitivity comes from strong convexity
        "alpha": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "radius": [Interval(Real, 0, None, closed="neither"), None],
    }

    def __init__(
        self,
        epsilon=1.0,
        *,
        delta=1e-6,
        noise="gaussian",
        alpha="auto",
        radius=None,
        data_norm=None,
        bounds_X=None,
        y_bound=None,
        tighten_bounds=False,
        tighten_share=None,
        fit_intercept=True,
        random_state=None,
        n_jobs=None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.noise = noise
        self.alpha = alpha
        self.radius = radius
        self.data_norm = data_norm
        self.bounds_X = bounds_X
        self.y_bound = y_bound
        self.tighten_bounds = tighten_bounds
        self.tighten_share = tighten_share
        self.fit_intercept = fit_intercept
        self.random_state = random_state
        self.n_jobs = n_jobs

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # scikit-learn's check_regressors_train sets alpha=0.01 on its 200-row
        # data: the sensitivity is then 100x that at alpha=1 and the noise at
        # epsilon=1 swamps the fit. R^2 > 0.5 is reachable only with a much
        # larger epsilon or alpha, i.e. by changing the defaults.
        tags.regressor_tags.poor_score = True
        return tags

    def _mean_fallback_budget(self):
        # the pure (norm-exponential) variant keeps pure epsilon-DP: no fallback
        # (the label mean is calibrated at the budget's (epsilon, delta))
        return self.epsilon if self.noise == "gaussian" else None

    def _mechanism_guarantee(self, n_samples, n_features, min_samples=None):
        if self.fit_intercept and min(n_samples, min_samples or n_samples) < 2:
            # without its only row the data set has no intercept direction:
            # the sensitivity is unbounded (a function of the public size)
            raise ValueError(
                "OutputPerturbationRegressor with fit_intercept=True needs at "
                f"least 2 samples, got n_samples={min(n_samples, min_samples or n_samples)}."
            )
        # calibrated to the budget at every size; "laplace" is pure
        return float(self.epsilon), float(self.delta) if self.noise == "gaussian" else 0.0

    def _fit_scaled(self, data, rng):
        self.dp_epsilon_, self.dp_delta_ = self.dp_guarantee(
            data.n_samples, self.n_features_in_
        )
        XtX, Xty = data.gram()
        self._n = data.n_samples
        self._adaptive = None
        if self._is_adaptive():
            return self._fit_adaptive(XtX, Xty, rng)
        self.alpha_ = (
            output_perturbation_auto_alpha(self.epsilon, self.delta, data.n_samples,
                                           self.n_features_in_, self.fit_intercept)
            if self.alpha == "auto" else float(self.alpha)
        )
        self._ridge = RidgeSystem(XtX, Xty, self.alpha_, self.fit_intercept)
        self._center = self._ridge.coef
        if self.radius is not None:  # for the sensitivity bound of ball_sensitivity
            H = self._ridge.chol @ self._ridge.chol.T
            self._lowest = linalg.eigvalsh(H, subset_by_index=[0, 0], check_finite=False)[0]
        self._inside = self.radius is None or (
            linalg.norm(self._center) <= self.radius * (1 - _INSIDE_RTOL)
        )
        if not self._inside:
            self._center = ball_ridge(
                XtX + self.alpha_ * penalty(XtX.shape[0], self.fit_intercept),
                Xty, self.radius,
            )
        elif self.radius is not None:
            # x^T H^{-1} theta_hat gives the neighbours' norms in closed form
            self._inverse_coef = linalg.cho_solve(
                (self._ridge.chol, True), self._ridge.coef, check_finite=False
            )

        self.sensitivity_ = output_perturbation_sensitivity(
            self.alpha_, data.n_samples, self.radius, self.fit_intercept
        )
        if self.noise == "gaussian":
            self.noise_scale_ = gaussian_noise_scale(
                self.epsilon, self.delta, self.sensitivity_
            )
        else:  # norm-exponential: pure epsilon = c * sensitivity
            self.noise_scale_ = self.sensitivity_ / self.epsilon
        return self._mechanism_release(rng)

    def _is_adaptive(self):
        """``alpha="auto"`` with Gaussian noise and no radius: the ridge is
        chosen from a private release of lambda_min (:class:`AdaptiveRidge`)."""
        return self.alpha == "auto" and self.noise == "gaussian" and self.radius is None

    def _fit_adaptive(self, XtX, Xty, rng):
        """Release lambda_min(S) + N(0, sigma_1^2), then the ridge solution at
        the ridge of the released value's cell plus Gaussian noise calibrated
        to the sensitivity of every data set whose lambda_min is above the
        cell's lower bound (:class:`AdaptiveRidge`)."""
        release = AdaptiveRidge(self.epsilon, self.delta, self._n, XtX.shape[0],
                                self.fit_intercept)
        self._eig, self._mean = scatter_eigen(XtX, self._n, self.fit_intercept)
        self._XtX, self._Xty = XtX, Xty
        self._adaptive = release
        self.lowest_eigenvalue_ = float(
            self._eig[0][0] + release.eigen_noise * rng.standard_normal())
        cell = release.cell(self.lowest_eigenvalue_)
        self.alpha_ = release.alpha(cell)
        self.sensitivity_ = release.sensitivity(cell)
        self.noise_scale_ = release.noise(cell)
        self.eigen_noise_ = release.eigen_noise
        self._cells = {}
        self._ridge = self._cell_ridge(cell)
        self._center = self._ridge.coef
        self._inside = True
        return self._mechanism_release(rng)

    def _cell_ridge(self, cell):
        """The non-private ridge solution at a cell's ridge (cached)."""
        if cell not in self._cells:
            self._cells[cell] = RidgeSystem(self._XtX, self._Xty, self._adaptive.alpha(cell),
                                      self.fit_intercept)
        return self._cells[cell]

    def _adaptive_ratio(self, Xs, ys, in_sample):
        """Each row's Gaussian ratio bound sqrt(s_1^2 + max_k s_2k^2)
        (:class:`AdaptiveRidge`): s_1 its exact change of lambda_min over
        sigma_1, s_2k its exact sensitivity at cell k's ridge over cell k's
        noise, over every cell the released value reaches with probability
        above the bound's delta share under this data set or the neighbour."""
        release = self._adaptive
        x = Xs[:, : self._mean.shape[0]]
        first = eigen_change(self._eig, self._mean, self._n, x,
                             intercept=self.fit_intercept, add=not in_sample)
        second = np.zeros(Xs.shape[0])
        for cell in release.reachable(self._eig[0][0]):
            ratio = ridge_row_sensitivity(self._cell_ridge(cell), Xs, ys, in_sample)
            second = np.maximum(second, ratio / release.noise(cell))
        return np.hypot(first / release.eigen_noise, second)

    def _training_epsilon(self, Xs, ys):
        return self._training_stages()(Xs, ys)

    def _training_stages(self):
        """:meth:`_training_epsilon` as a :class:`TwoStageRows`: the
        sensitivity of each row, then its exact loss."""
        if getattr(self, "_adaptive", None) is not None:
            return TwoStageRows(partial(self._adaptive_ratio, in_sample=True),
                                self._adaptive.epsilon)
        return TwoStageRows(partial(self._row_sensitivity, in_sample=True), self._epsilon)

    def _row_sensitivity(self, Xs, ys, in_sample):
        """||theta(larger) - theta(smaller)|| for each row (or its upper bound).

        ``in_sample``: the rows are in the training data (smaller = without
        them); otherwise they are added to it.
        """
        stats = self._ridge.row_statistics(Xs, ys, inverse_norm=True)
        shift = _ridge_shift(stats, in_sample)
        with np.errstate(invalid="ignore"):
            exact = np.abs(shift) * np.sqrt(stats["inverse_norm2"])
        if self.radius is None:
            return exact
        R = self.radius
        # the bound valid whether or not the constraint binds, in the
        # in-sample statistics against the released (constrained) centre
        ball = dict(stats, residual=ys - Xs @ self._center,
                    norm2=squared_norms(Xs), label=np.abs(ys))
        if not in_sample:
            ball = out_of_sample(ball)
        _, convexity = _ball_constants(self.alpha_, self._n, R, self.fit_intercept)
        bound = ball_sensitivity(ball, self._lowest, R, convexity)
        if not self._inside:
            return bound
        with np.errstate(invalid="ignore", over="ignore"):
            other_norm2 = (
                self._center @ self._center
                + 2.0 * shift * (Xs @ self._inverse_coef)
                + shift**2 * stats["inverse_norm2"]
            )
        inside = other_norm2 <= (R * (1 - _INSIDE_RTOL)) ** 2
        return np.where(inside, exact, bound)

    def _epsilon(self, sensitivity, cap=True):
        if self.noise == "gaussian":
            eps = gaussian_epsilon(self.delta, sensitivity / self.noise_scale_)
        else:
            eps = sensitivity / self.noise_scale_
        # A row at the global sensitivity costs exactly epsilon (the calibration
        # checked delta(epsilon) <= delta there); the root search's tolerance
        # must not report more. An added row is not a neighbour the
        # calibration covered: no cap (``cap=False``).
        return np.minimum(eps, self.dp_epsilon_) if cap else eps

    def _mechanism_profile(self, losses):
        if getattr(self, "_adaptive", None) is not None:
            # the lambda release's lower bound fails with probability
            # delta_bound: only the epsilons at delta are exact bounds
            return super()._mechanism_profile(losses)
        return self._fixed_profile(losses)

    def _fixed_profile(self, losses):
        """Gaussian noise: the release is the Gaussian mechanism with each
        row's ratio sensitivity / noise_scale_, recovered from its loss.
        The norm-exponential noise's pure epsilons compose only by basic
        composition. A record added to a data set of ``m`` rows (its own
        included) moves the solution by at most the global sensitivity at
        ``m``, with this release's ``alpha_`` and noise."""
        def worst(size):
            return output_perturbation_sensitivity(
                self.alpha_, size, self.radius, self.fit_intercept) / self.noise_scale_

        common = dict(guarantee=worst(self._n), n_samples=self._n,
                      mechanism=type(self).__name__, step=worst)
        if self.noise == "gaussian":
            return PrivacyProfile.from_losses("gaussian", losses, self.delta, **common)
        return PrivacyProfile("epsilon_delta", losses, delta=0.0, **common)

    def _mechanism_release(self, rng, size=None):
        """Draw(s) of the released coefficients (scaled coordinates)."""
        d = self._center.shape[0]
        if self.noise == "gaussian":
            draw = rng.standard_normal(d if size is None else (size, d))
            return self._center + self.noise_scale_ * draw
        return self._center + norm_exponential_noise(rng, d, self.noise_scale_, size)

    def _mechanism_law(self):
        """Public description of the release, for a published report.

        Returns
        -------
        law : OutputPerturbationLaw
            The noise law and scale, the global sensitivity, the radius, the
            ridge, the public size, the domain and the released (scaled)
            coefficients: see :class:`sklearn_pdp._law.ReleaseLaw`.
        """
        check_is_fitted(self)
        if getattr(self, "_adaptive", None) is not None:
            raise NotImplementedError(
                "published reports of OutputPerturbationRegressor with its private "
                "ridge (alpha='auto') are not supported yet: give a numeric alpha."
            )
        return OutputPerturbationLaw(
            noise=self.noise, noise_scale=self.noise_scale_, sensitivity=self.sensitivity_,
            dp=(self.dp_epsilon_, self.dp_delta_), radius=self.radius, **self._law_public(),
        )

    def _law_statistics(self, Xs, ys, add=False):
        """Exact statistics of the rows for :meth:`release_law`'s ``epsilon``.

        Without a radius those of every ridge mechanism. With one, the
        residual is taken against the released centre (the constrained
        solution), and the rows also carry ``|y|`` (``label``), the smallest
        eigenvalue of H (``lowest``) and the estimator's own sensitivity of
        each row (``sensitivity``: exact where the constraint is inactive),
        which the law's bound, valid in every case, can only lower.
        """
        if self.radius is None:
            return super()._law_statistics(Xs, ys, add)
        stats = self._ridge.row_statistics(Xs, inverse_norm=True, norm=True)
        fitted = Xs @ self._center
        # every bound grows with |r| and |y|: the worst label is an end of [-1, 1]
        stats["residual"] = 1.0 + np.abs(fitted) if ys is None else ys - fitted
        stats["label"] = np.ones(Xs.shape[0]) if ys is None else np.abs(ys)
        stats["lowest"] = self._lowest
        if not add:
            stats["sensitivity"] = self._row_sensitivity(Xs, ys, in_sample=True)
            return stats
        stats["sensitivity"] = self._added_sensitivity(Xs, ys)
        return out_of_sample(stats)

    def _added_sensitivity(self, Xs, ys):
        """Sensitivity (or its bound) of adding each row; ``ys`` None: the worst label."""
        if ys is not None:
            return self._row_sensitivity(Xs, ys, in_sample=False)
        # The worst label is an end of [-1, 1]: the exact sensitivity grows
        # with |residual|, the set of labels whose neighbour stays inside the
        # ball is an interval (a convex quadratic in the label), and the bound
        # is largest at |y| = 1.
        return np.maximum(*(
            self._row_sensitivity(Xs, np.full(Xs.shape[0], end), in_sample=False)
            for end in (-1.0, 1.0)
        ))

    def _target_epsilon(self, Xs, ys):
        if getattr(self, "_adaptive", None) is not None:
            if ys is None:  # the worst label is an end of [-1, 1] (|residual| grows)
                return np.maximum(*(self._target_epsilon(Xs, np.full(Xs.shape[0], end))
                                    for end in (-1.0, 1.0)))
            return self._adaptive.epsilon(self._adaptive_ratio(Xs, ys, in_sample=False),
                                          cap=False)
        return self._epsilon(self._added_sensitivity(Xs, ys), cap=False)


class OutputPerturbationLaw(ReleaseLaw):
    """Output perturbation's release law (doc/publish.rst).

    coef = theta_c + k with Gaussian k ~ N(0, noise_scale^2 I) or
    norm-exponential k (||k|| ~ Gamma(d, noise_scale)), theta_c the ridge
    solution (constrained to ``||theta|| <= radius`` with a radius). Without
    a radius a training row's sensitivity is |r'| ||H^{-1} x|| / (1 - mu')
    in its in-sample statistics. With one it is at most the smallest of
    |r'| (||H^{-1} x|| + sqrt(mu' / lambda_min(H))) / (2 (1 - mu')), r' the
    residual against theta_c (the variational inequalities of the two
    constrained problems), ||x|| (R ||x|| + |y|) / c (strong convexity c)
    and 2R, valid whether or not the constraint binds, and of the
    estimator's own value where given (``sensitivity``). Each is
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
    """

    def __init__(self, *, noise, noise_scale, sensitivity, dp, radius=None, **public):
        super().__init__(**public)
        self.noise = noise
        self.noise_scale = float(noise_scale)
        self.sensitivity = float(sensitivity)
        self.dp = dp
        self.radius = None if radius is None else float(radius)
        self.cap_sensitivity = max(self.sensitivity, output_perturbation_sensitivity(
            self.alpha, self.n_samples + 1, self.radius, self.intercept))

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
        _, convexity = _ball_constants(self.alpha, self.n_samples, self.radius, self.intercept)
        return ball_sensitivity(stats, stats["lowest"], self.radius, convexity)

    def _loss(self, delta, ratio, gaussian_ratio):
        if self.noise == "gaussian":
            extra = 0.0 if gaussian_ratio is None else gaussian_ratio
            return gaussian_epsilon(delta, np.hypot(ratio, extra))
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
        if gaussian_ratio is None and delta == self.dp[1]:
            return self.dp[0]
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


def _ridge_shift(stats, in_sample):
    """The factor s of theta_hat(smaller) - theta_hat(larger) = s H^{-1} x in
    the row's statistics against ``H`` (Sherman-Morrison)."""
    if in_sample:
        # theta_hat_{-i} = theta_hat - H^{-1} x_i r_i / (1 - mu_i)
        _, r = leave_one_out(stats["leverage"], stats["residual"])
        return -r
    # theta_hat_{+z} = theta_hat + H^{-1} x r / (1 + mu)
    return stats["residual"] / (1.0 + stats["leverage"])


def ridge_row_sensitivity(ridge, Xs, ys, in_sample):
    """Exact ||theta_hat(larger) - theta_hat(smaller)|| of unconstrained ridge
    for each row, removed (``in_sample``) or added."""
    stats = ridge.row_statistics(Xs, ys, inverse_norm=True)
    with np.errstate(invalid="ignore"):
        return np.abs(_ridge_shift(stats, in_sample)) * np.sqrt(stats["inverse_norm2"])


# AdaptiveRidge: share of the squared Gaussian ratio spent on lambda_min, and
# of delta on the failure of its lower bound.
_EIGEN_SHARE = 0.1
_BOUND_DELTA_SHARE = 0.5
# Public grid of lower bounds: 0 and _CELL_LOW * _CELL_RATIO^k.
_CELL_LOW = 1e-2
_CELL_RATIO = 2.0 ** 0.125
# Number of candidate ridges (a public geometric grid).
_ALPHA_GRID = 400
# Largest noise variance of a prediction at a unit row (labels in [-1, 1])
# that the private ridge allows, as AdaOPS's target.
_NOISE_TARGET = 1e-3


class AdaptiveRidge:
    """Output perturbation's private ridge (doc/mechanisms/output_perturbation.rst).

    Public parameters of the release, for a budget (epsilon, delta), the size
    n and the Gram matrix's order. With ``delta_bound = delta / 2`` and the
    Gaussian ratio mu of (epsilon, delta - delta_bound):

    1. ``lambda~ = lambda_min(S) + sigma_1 N(0, 1)``, S the scatter of the
       slopes (:func:`scatter_eigen`), ``sigma_1 = c / s_1``, c the largest
       change of lambda_min by one row, ``s_1^2 = 0.1 mu^2``.
    2. The lower bound ``lambda~ - z sigma_1 - c`` (z the (1 - delta_bound)
       normal quantile) rounded down to the public grid gives the cell k and
       its floor L_k: with probability at least 1 - delta_bound, L_k is below
       lambda_min of both the data set and any neighbour.
    3. ``theta = theta_hat(alpha_k) + sigma_2k N(0, I)``, with ``sigma_2k =
       Delta(L_k, alpha_k) / s_2``, ``s_2^2 = 0.9 mu^2``, Delta the largest
       change of the ridge solution by one row over data sets whose
       lambda_min(S) is at least L_k (:func:`conditional_sensitivity`), and
       alpha_k the candidate ridge that minimises the squared bias factor
       ``(alpha / (L_k + alpha))^2`` plus the noise variance p sigma_2^2,
       raised to meet the noise target ``_NOISE_TARGET`` at a unit row, and
       at most the public rule's (:func:`output_perturbation_auto_alpha`),
       which is the ridge of the floor cell L = 0.

    Guarantee: on the event where L_k bounds lambda_min of the smaller data
    set, both stages are Gaussian mechanisms with ratios at most s_1 and s_2
    (the second adaptively chosen), so the pair is mu-GDP (Dong, Roth and
    Su's adaptive composition), whose delta(epsilon) is the Gaussian
    mechanism's; the event fails with probability at most delta_bound, which
    adds to delta. A row's loss: the same argument with its exact ratios,
    s_1i = |change of lambda_min| / sigma_1 and the largest s_2ki over the
    cells the released value reaches with probability above delta_bound
    (two tails of delta_bound / 2) under the data set or the neighbour;
    never conditioned on the draw.
    """

    def __init__(self, epsilon, delta, n_samples, order, intercept):
        self.delta_bound = _BOUND_DELTA_SHARE * delta
        self.delta_gauss = delta - self.delta_bound
        self.budget = float(epsilon)
        mu = 1.0 / gaussian_noise_scale(epsilon, self.delta_gauss)
        self.ratio_eigen = np.sqrt(_EIGEN_SHARE) * mu
        self.ratio_output = np.sqrt(1.0 - _EIGEN_SHARE) * mu
        self.change = eigen_max_change(n_samples, intercept)
        self.eigen_noise = self.change / self.ratio_eigen
        self.margin = -ndtri(self.delta_bound) * self.eigen_noise + self.change
        # a row's neighbour may also have one more row (pdp_epsilon of new rows)
        self.reach = (-ndtri(self.delta_bound / 2.0) * self.eigen_noise
                      + eigen_max_change(n_samples + 1, intercept))
        self.n_samples = n_samples
        self.intercept = intercept
        self.coords = order
        # candidate ridges: from where any positive definite H is accurate
        # (Ridge) to where the slopes are all but zero
        low = max(1e-9 * n_samples * order, 1e-6)
        self.alphas = np.geomspace(low, max(1e8, 1e3 * n_samples), _ALPHA_GRID)
        # the public rule: the ridge of the floor cell (nothing known of the
        # conditioning) and the largest of every cell
        self.public = output_perturbation_auto_alpha(epsilon, delta, n_samples,
                                                     order - int(intercept), intercept)

    def cell(self, released):
        """Cell of a released lambda~: -1 for the floor 0, else the largest
        k with ``_CELL_LOW * _CELL_RATIO^k`` at most the lower bound."""
        raw = released - self.margin
        if not raw >= _CELL_LOW:
            return -1
        k = int(np.floor(np.log(raw / _CELL_LOW) / np.log(_CELL_RATIO)))
        while self.floor(k) > raw:  # rounding of the logarithm
            k -= 1
        return k

    def floor(self, cell):
        return 0.0 if cell < 0 else _CELL_LOW * _CELL_RATIO ** cell

    def reachable(self, lowest):
        """Cells that lambda~ reaches with probability above delta_bound
        under a data set with lambda_min(S) = ``lowest`` or a neighbour."""
        return range(self.cell(lowest - self.reach), self.cell(lowest + self.reach) + 1)

    def _noise(self, lower, alphas):
        return conditional_sensitivity(lower, alphas, self.n_samples,
                                       self.intercept) / self.ratio_output

    def alpha(self, cell):
        if cell < 0:
            return self.public
        lower = self.floor(cell)
        noise2 = self._noise(lower, self.alphas) ** 2
        bias = (self.alphas / (lower + self.alphas)) ** 2
        best = np.argmin(bias + self.coords * noise2)
        # labels that vary little: no smaller ridge than the one whose noise
        # at a unit row (with the constant) is at the target (noise2 falls)
        quiet = np.flatnonzero((1.0 + self.intercept) * noise2 <= _NOISE_TARGET)
        if quiet.size:
            best = max(best, quiet[0])
        # never more than the public rule's, whose noise at the global
        # sensitivity (above the conditional one) meets PREDICTION_NOISE: the
        # bias factor saturates where the floor is small and would otherwise
        # ask for a ridge that silences every direction
        return float(min(self.alphas[best], self.public))

    def sensitivity(self, cell):
        return float(conditional_sensitivity(self.floor(cell), self.alpha(cell),
                                             self.n_samples, self.intercept))

    def noise(self, cell):
        return self.sensitivity(cell) / self.ratio_output

    def epsilon(self, ratio, cap=True):
        eps = gaussian_epsilon(self.delta_gauss, ratio)
        # a row at the largest ratios costs exactly the budget
        return np.minimum(eps, self.budget) if cap else eps


def conditional_sensitivity(lower, alpha, n_samples, intercept):
    """Largest ||theta_hat(larger) - theta_hat(smaller)|| of unconstrained
    ridge over neighbouring data sets of at most ``n_samples`` rows in the
    domain whose smaller one has lambda_min(S) >= ``lower`` (S as in
    :func:`scatter_eigen`). :func:`domain_bounds`' argument with
    A = S + alpha I >= (lower + alpha) I: ||beta|| <= sqrt(n) g with
    g = max over singular values s >= sqrt(lower) of s / (s^2 + alpha),
    ``sqrt(lower) / (lower + alpha)`` if lower >= alpha, else
    ``1 / (2 sqrt(alpha))``; at ``lower = 0`` the global bound
    (:func:`output_perturbation_sensitivity`).
    """
    lower = np.maximum(np.float64(lower), 0.0)
    alpha = np.asarray(alpha, dtype=np.float64)
    total = lower + alpha
    g = np.where(lower >= alpha, np.sqrt(lower) / total, 0.5 / np.sqrt(alpha))
    spread = np.sqrt(n_samples) * g
    if not intercept:
        return (1.0 + spread) / total
    m = np.float64(n_samples - 1)
    return (2.0 + 2.0 * spread) * np.hypot(2.0 / total, 1.0 / m + 2.0 / total)


def ball_sensitivity(stats, lowest, radius, convexity):
    """Bound on the sensitivity of the ball-constrained ridge solution to a
    row, valid whether or not the constraint binds (doc/publish.rst): the
    smallest of the variational bound
    ``|r| (||H^{-1} x|| + sqrt(mu / lowest)) / (2 (1 - mu))``, the strong
    convexity bound ``||x|| (R ||x|| + |y|) / convexity`` and ``2 R``, in the
    row's in-sample statistics (keys of ``Ridge.row_statistics`` with
    ``inverse_norm2`` and ``norm2``, the residual against the constrained
    solution, and ``label`` = |y|); ``lowest`` is the smallest eigenvalue of
    H. Non-decreasing in every statistic and in ``1 / lowest``.
    """
    mu = stats["leverage"]
    valid = (mu < 1.0) & (lowest > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = np.sqrt(stats["inverse_norm2"]) + np.sqrt(mu / lowest)
        variational = np.abs(stats["residual"]) * spread / (2.0 * (1.0 - mu))
    variational = np.where(valid, variational, np.inf)
    norm = np.sqrt(stats["norm2"])
    strong = norm * (radius * norm + stats["label"]) / convexity
    return np.minimum(np.minimum(variational, strong), 2.0 * radius)


# Constant of the automatic ridge, measured on the utility grid.
_AUTO_ALPHA_SCALE = 10.0
# Largest multiple of the n^(1/3) rule that the noise bound may take.
_AUTO_ALPHA_CAP = 100.0


def output_perturbation_auto_alpha(epsilon, delta, n_samples, n_features, intercept=True):
    """``alpha="auto"``: a rule in the public (n, d, epsilon, delta).

    The larger of ``10 (d + 1) n^(1/3) / epsilon^(2/3)`` and the smallest
    alpha at which the Gaussian noise of a prediction at a row of norm 1,
    ``(1 + intercept) sigma(alpha)^2``, is at most ``PREDICTION_NOISE``
    (1e-4; at most 100 times the first, where the intercept's own noise
    stays above). For large n the
    sensitivity is about ``sqrt(n / alpha) / alpha`` and the first rule keeps
    the noise about constant while the slopes are shrunk less as n grows
    (measured against rules in n^0.6 and in 1 / epsilon); for small n the
    sensitivity's constant part (the residual 2 and the intercept's leverage)
    dominates and the second keeps the noise small, shrinking the slopes
    (never the intercept) instead.
    """
    rule = _AUTO_ALPHA_SCALE * (n_features + 1) * n_samples ** (1 / 3) / epsilon ** (2 / 3)
    coords = 1.0 + bool(intercept)

    def excess(x):  # noise over its target at alpha = e^-x: grows with x
        sensitivity = output_perturbation_sensitivity(np.exp(-x), n_samples,
                                                      intercept=intercept)
        return coords * gaussian_noise_scale(epsilon, delta, sensitivity) ** 2 - PREDICTION_NOISE

    if excess(-np.log(rule)) <= 0:
        return float(rule)
    # on the line of -log alpha the excess grows: the largest root is the
    # smallest alpha. At most 100 times the rule: with few rows the
    # intercept's own noise (leverage 1 / (n - 1)) may stay above the target.
    try:
        return float(np.exp(-largest_root(excess, start=-np.log(rule), step=2.0, xtol=1e-6,
                                          lowest=-np.log(_AUTO_ALPHA_CAP * rule))))
    except ValueError:
        return float(_AUTO_ALPHA_CAP * rule)


def output_perturbation_sensitivity(alpha, n_samples, radius=None, intercept=False):
    """Global l2 sensitivity of (ball-constrained) ridge, doc/mechanisms/output_perturbation.rst.

    Rows in the unit ball, labels in [-1, 1], sum-of-losses convention.
    With ``radius`` R: ``min(L / c, 2 R)`` (Lipschitz constant over strong
    convexity, or the ball's diameter); without: the largest |residual| times
    the largest ||H^{-1} x|| over the domain (:func:`domain_bounds`).
    """
    if radius is None:
        corner = domain_bounds(n_samples, alpha, intercept)
        return corner["residual"] * corner["inverse_norm"]
    lipschitz, convexity = _ball_constants(alpha, n_samples, radius, intercept)
    return min(lipschitz / convexity, 2.0 * radius)


def _ball_constants(alpha, n_samples, radius, intercept):
    """Bound on one row's loss gradient on the ball, and the strong convexity.

    The gradient (x^T theta - y) x has norm <= ||x|| (R ||x|| + 1). Without
    intercept the penalty gives convexity alpha. With an unpenalised
    intercept, a unit direction (v, t) has curvature
    sum (x_i^T v + t)^2 + alpha ||v||^2 >= min(alpha, m) / 5 over m >= n - 1
    rows in the unit ball: ||v||^2 >= 1/5 gives alpha / 5, otherwise
    |t| - ||v|| >= 1/sqrt(5) gives m / 5 from the data term.
    """
    if not intercept:
        return radius + 1.0, alpha
    norm = np.sqrt(2.0)
    return norm * (radius * norm + 1.0), min(alpha, n_samples - 1) / 5.0


def ball_ridge(H, Xty, radius):
    """argmin 1/2 theta^T H theta - theta^T X^T y s.t. ||theta|| <= radius.

    ``H = X^T X + alpha P`` (the ridge objective). The KKT conditions give
    theta(nu) = (H + nu I)^{-1} X^T y
    with the smallest nu >= 0 such that ||theta(nu)|| <= radius. In the
    eigenbasis of H the norm is an explicit decreasing function of nu, so
    nu is a scalar root search.
    """
    shift, U = linalg.eigh(H, check_finite=False)
    g = U.T @ Xty

    def excess(nu):
        return linalg.norm(g / (shift + nu)) - radius

    if excess(0.0) <= 0:
        nu = 0.0
    else:
        # at nu = ||g|| / radius the norm is below radius since shift > 0
        # (H is positive definite: Ridge has checked it)
        nu = brentq(excess, 0.0, linalg.norm(g) / radius, xtol=1e-14, rtol=1e-15)
    theta = U @ (g / (shift + nu))
    # rounding must not leave the ball the sensitivity analysis assumes
    return theta * min(1.0, radius / linalg.norm(theta))


def norm_exponential_noise(rng, n_features, scale, size=None):
    """Draw(s) with density proportional to exp(-||k||_2 / scale) on R^d.

    In polar coordinates the density of the radius is proportional to
    rho^(d-1) exp(-rho / scale), a Gamma(d, scale) law, and the direction is
    uniform on the sphere (a normalised standard normal vector).
    """
    shape = n_features if size is None else (size, n_features)
    direction = rng.standard_normal(shape)
    direction /= linalg.norm(direction, axis=-1, keepdims=True)
    radius = rng.gamma(n_features, scale, size)
    return direction * (radius if size is None else radius[:, None])
