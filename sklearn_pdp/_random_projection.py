"""Gaussian sketch plus additive noise (Showkatbakhsh et al.; doc/mechanisms/random_projection.rst)."""

import warnings
from numbers import Integral, Real

import numpy as np
from scipy import linalg
from sklearn.exceptions import DataDimensionalityWarning

from ._sklearn import Interval, StrOptions
from ._accounting import (
    PREDICTION_NOISE,
    chi2_epsilon,
    chi2_noise_scale,
    compose_with_gaussian,
)
from ._base import PrivateRegressorMixin
from ._ridge_system import RidgeSystem, leave_one_out
from ._mean import noise_scale as mean_noise_scale
from ._law import ReleaseLaw
from ._arrays import row_norms
from ._rows import TwoStageRows, squared_norms
from ._signal import signal_ridge
from ._docstrings import fill_doc
from .exceptions import PrivacyLeakWarning

# tau_in above this is 1 up to rounding: the row alone spans a direction
_ONE = 1.0 - 1e-12
# Components of a row along a null direction of a singular Sigma, relative
# to the row's norm, that are within rounding of zero (computed as z . v with
# eigenvectors v accurate to ~1e-15 for well-separated eigenvalues).
_NULL_RTOL = 1e-12
# Unit of the paper's projection-size rules (its data sets have n = 1000 k).
_RULE_UNIT = 1000
# Standard deviations of the noise's chi-square by which the sketch's cross
# term must exceed its noise before slopes are fitted (see _solve). Negative:
# the noise's own ridge s^2 already bounds what noisy slopes cost, while
# dropping real slopes costs in proportion to them. Test MSE over the mean
# predictor's (20 splits; before the rule, then margins -0.5 / 0 / 1):
# centred synthetic n=1e3, epsilon=1: 0.921, 0.930 / 0.937 / 0.965; diabetes,
# epsilon=3: 0.819, 0.820 / 0.839 / 0.849; statsmodels' "fair", epsilon=0.1:
# 1.452, 1.442 / 1.434 / 1.430 (its label mean's own noise in the sketch
# keeps it above 1.4: doc/mechanisms/random_projection.rst; that size now
# falls back to the private mean).
_SIGNAL_MARGIN = -0.5


@fill_doc
class RandomProjectionRegressor(PrivateRegressorMixin):
    """Least squares on a noisy Gaussian sketch, with per-instance privacy.

    The data, scaled into the privacy domain (rows in the unit ball, labels in
    [-1, 1]), are released as the sketch ``S [X, y] + noise`` with ``S`` an
    ``n_components x n_samples`` matrix of independent N(0, 1) entries; the
    coefficients are a ridge regression on the sketch (post-processing): the
    noise's own ridge on the slopes, more where the sketch shows no signal
    above its noise (``signal_ridge_``), and an unshrunk intercept, so that
    a model without signal falls back to the private label mean.
    Every released row is N(0, Sigma) with ``Sigma = [X y]^T [X y] +
    diag(noise variances)``, which gives the exact per-instance loss of every
    training row in closed form (chi-square tails).

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy budget. With ``variant="dp"`` the noise is calibrated so that
        the release is (epsilon, delta)-DP. With ``variant="paper"`` it is the
        paper's mutual-information budget in bits, which is not a guarantee
        (see Notes).
    n_components : int or {"log", "linear", "full"}, default="log"
        Number n' of sketch rows. The rules are the paper's for n = 1000 k:
        "log" is ``1000 (1 + ln k)``, "linear" ``1000 (k + 1) / 2`` and "full"
        ``n``; for n <= 1000 all three give n. More rows help accuracy but
        cost privacy: the loss grows with n'. An integer larger than the
        number of samples is used as given, with a
        :class:`~sklearn.exceptions.DataDimensionalityWarning`.
    variant : {"dp", "paper"}, default="dp"
        "dp": noise of the same scale on every column of X and on y, calibrated
        for (epsilon, delta)-DP. "paper": the seed paper's mechanism exactly,
        noise only on X with variance ``(n' / (2^(2 epsilon) - 1) - f(X)^2)_+``;
        it has no DP guarantee and leaves y unprotected.
    delta : float, default=1e-6
        The delta of the calibration and of ``pdp_losses_``.
    {bounds}
    {tighten}
    {fit_intercept}
    {random_state}
    {n_jobs}

    Attributes
    ----------
    {model}
    {mean_only}
    n_components_ : int
        Number of sketch rows used.
    sketch_ : ndarray of shape (`n_components_`, n_features + fit_intercept + 1)
        The released noisy sketch of the scaled ``[X, y]`` (last column: y).
        ``coef_`` is computed from it alone.
    signal_ridge_ : float
        The ridge on the slopes chosen from the sketch on top of the noise's
        own ``noise_scale_**2`` (scaled domain, in units of the data's Gram
        matrix; see Notes): 0 where the sketch's cross term shows enough
        signal, ``inf`` where it shows none (``coef_`` is 0 and
        ``intercept_`` the label mean's estimate from the sketch). Not set
        when ``mean_only_``.
    pdp_losses_ : ndarray of shape (n_samples,)
        Exact per-instance epsilon, at ``delta``, of removing each training
        row (maximum of both directions); ``inf`` where the row lies outside
        the range of the remaining rows' Sigma. When Sigma is singular (the
        paper variant with an exact linear relation between the columns of
        ``[X, y]``), a row that satisfies the relation to within 1e-12 of
        its norm is taken to satisfy it exactly; every other row has
        ``inf``. A relation that holds almost exactly, but not to that
        precision, is a ValueError: the losses cannot be computed reliably.
    dp_epsilon_ : float
        Data-independent epsilon at ``delta``: the exact loss of the worst
        target in the domain (at most ``epsilon`` up to the search tolerance)
        for "dp"; ``inf`` for "paper".
    dp_delta_ : float
        The delta of ``dp_epsilon_``.
    noise_scale_ : float
        Standard deviation of the noise entries (on X and y for "dp", on X only
        for "paper"), in scaled units.
    {fitted_bounds}

    See Also
    --------
    OPSRegressor : One posterior sample of the ridge posterior.

    Notes
    -----
    With tau = z^T Sigma^{-1} z of a target z = [x, y] and W ~ chi-square(n'),
    the privacy loss is ``(n'/2) log(1 + tau) - tau W / (2 (1 + tau))`` when
    the target is absent and ``(n'/2) log(1 + tau) - tau W / 2`` when present.
    For "dp", Sigma >= s^2 I and ``||z||^2 <= 3`` (``[x, 1, y]``; 2 without
    intercept) give tau <= 3 / s^2, and the
    loss grows with tau, so s is found by a root search at that corner.

    The paper's variant claims epsilon-MI-DP for single entries of X. That
    claim is false: the columns of the sketch share S, so when its rule gives
    no noise (large n) the sketch reveals exact linear relations between
    entries; and y is never protected. Its rule uses
    ``f(X) = min_j sqrt(sum_i X_ij^2 - max_i X_ij^2)`` over the columns of
    the scaled X (the paper swaps the indices), and the data-dependent noise
    level is itself not accounted for. ``dp_epsilon_`` is therefore ``inf``;
    ``pdp_losses_`` are its exact row-level losses at the noise it used. It
    exists to reproduce and audit the paper.

    Model (post-processing of the sketch R, k rows): its normal equations
    estimate ``k Sigma``, whose noise ``s^2 I`` is a ridge on every
    coefficient. With an intercept, the regressions of the other columns on
    the constant one estimate their sums over the public ``n + s^2``, which
    centres the features and the label with the public ``n`` instead: the
    intercept is not shrunk. The slopes get the James-Stein ridge that the
    centred cross term supports, ``s_bar v d / (||b||^2 - v (d - 0.5
    sqrt(2 d)))`` in total, with ``b`` the sketch's centred cross term,
    ``v`` its noise variance per coordinate (the residual variance of the
    sketch's regression times the mean diagonal entry of its centred
    scatter) and ``s_bar`` the data's mean scatter eigenvalue estimated
    from the sketch (less the noise's ``k s^2``); only the part above the
    noise's ``k s^2`` is added (``signal_ridge_`` is it over k). Where the
    cross term is below that noise level the slopes are 0.

    The released sketch rows have the distribution N(0, Sigma) whatever S is
    drawn from, so the privacy analysis covers every draw. The fitted
    estimator keeps Sigma (non-private) for :meth:`pdp_epsilon`: publish
    :meth:`public_model` (or ``sketch_``), never the estimator object. The
    sample size is treated as public.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_pdp import RandomProjectionRegressor
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-1, 1, size=(2000, 3)) / np.sqrt(3)
    >>> y = np.clip(X @ [1.0, -0.5, 0.2] + 0.1 * rng.randn(2000), -1, 1)
    >>> reg = RandomProjectionRegressor(epsilon=1.0, n_components=200,
    ...                                 data_norm=1.0, y_bound=1.0,
    ...                                 random_state=0).fit(X, y)
    >>> bool(reg.pdp_losses_.max() <= reg.dp_epsilon_)
    True
    >>> round(reg.dp_epsilon_, 3)
    1.0
    """

    _parameter_constraints: dict = {
        **PrivateRegressorMixin._parameter_constraints,
        "epsilon": [Interval(Real, 0, None, closed="right")],
        "n_components": [
            Interval(Integral, 1, None, closed="left"),
            StrOptions({"log", "linear", "full"}),
        ],
        "variant": [StrOptions({"dp", "paper"})],
        "delta": [Interval(Real, 0, 1, closed="neither")],
    }

    def __init__(
        self,
        epsilon=1.0,
        *,
        n_components="log",
        variant="dp",
        delta=1e-6,
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
        self.n_components = n_components
        self.variant = variant
        self.delta = delta
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
        # The noise is set by the privacy budget, not by the sample size: on
        # a few hundred rows at epsilon=1 the fit is legitimately poor.
        tags.regressor_tags.poor_score = True
        return tags

    def _mean_fallback_budget(self):
        # the paper's variant reproduces the paper: no budget to meet
        return self.epsilon if self.variant == "dp" else None

    def _mean_only_size(self, n_features):
        """Also every size up to which the sketch's own estimate of the label
        mean (slopes 0) is noisier than the private mean by more than
        ``PREDICTION_NOISE``, by its public lower bound ``s^2 (n + s^2) /
        (n^2 (k - 2))`` (doc/mechanisms/random_projection.rst): there no
        slope can make up for the intercept. A rule's ``k`` only: a fixed
        ``n_components`` keeps the size of the base class."""
        size = super()._mean_only_size(n_features)
        if not size or not isinstance(self.n_components, str):
            return size
        noisy = self._sketch_mean_noisy
        if not noisy(size + 1):
            return size
        low, high = size + 1, 2 * (size + 1)  # noisy(low), then not noisy(high)
        while noisy(high):
            low, high = high, 2 * high
        while high - low > 1:
            mid = (low + high) // 2
            low, high = (mid, high) if noisy(mid) else (low, mid)
        return low

    def _sketch_mean_noisy(self, n):
        """Whether the sketch's label mean at size n is too noisy (see
        :meth:`_mean_only_size`); falls with n: k and s grow slowly, n^2 fast."""
        # the private mean's error variance: 2 b^2 / n^2 (Laplace)
        mean_var = 2.0 * mean_noise_scale(self.epsilon, self.delta) ** 2
        k = self._resolve_n_components(n)
        if k <= 2:  # no residual degrees of freedom: nothing bounds it
            return True
        s2 = chi2_noise_scale(self.epsilon, self.delta, k, 2.0 + self.fit_intercept) ** 2
        return s2 * (n + s2) / (n * n * (k - 2)) - mean_var / (n * n) > PREDICTION_NOISE

    def _releases_mean(self, n_samples, n_features):
        # one test at n rather than the search for the largest size (the
        # sketch's noise falls with n)
        base = super()._mean_only_size(n_features)
        if n_samples <= base:
            return True
        return bool(base) and isinstance(self.n_components, str) and self._sketch_mean_noisy(
            n_samples)

    def _resolve_n_components(self, n_samples):
        n = n_samples
        if self.n_components == "full" or (
            isinstance(self.n_components, str) and n <= _RULE_UNIT
        ):
            return n
        if self.n_components == "log":
            return int(round(_RULE_UNIT * (1.0 + np.log(n / _RULE_UNIT))))
        if self.n_components == "linear":
            return int(round((n + _RULE_UNIT) / 2.0))
        if self.n_components > n:
            warnings.warn(
                f"n_components={self.n_components} is larger than the number of "
                f"samples ({n}): the sketch does not compress the data, and the "
                "privacy loss grows with n_components.",
                DataDimensionalityWarning,
                stacklevel=5,
            )
        return int(self.n_components)

    def _mechanism_guarantee(self, n_samples, n_features, min_samples=None):
        # chi2_noise_scale verifies chi2_delta(epsilon) <= delta at every size
        return (float(self.epsilon) if self.variant == "dp" else np.inf), self.delta

    def _fit_scaled(self, data, rng):
        if self.variant == "paper":
            warnings.warn(
                "variant='paper' has no differential privacy guarantee: the "
                "paper's MI-DP claim does not hold and y is not protected "
                "(dp_epsilon_ is inf). Use it only to reproduce the paper.",
                PrivacyLeakWarning,
                stacklevel=4,
            )
        k = self.n_components_ = self._resolve_n_components(data.n_samples)
        self._n = data.n_samples
        ZtZ = data.scan(_labelled_gram)
        p = data.n_features
        if self.variant == "dp":
            # a row [x, 1, y] of the scaled domain: ||x||^2 <= 1, the
            # constant feature 1 (with an intercept), y^2 <= 1
            max_sq_norm = 2.0 + self.fit_intercept
            s = chi2_noise_scale(self.epsilon, self.delta, k, max_sq_norm)
            penalty = np.full(p + 1, s**2)
        else:
            col_max_sq = data.reduce(_column_max_squares, np.maximum)
            s = paper_noise_scale(self.epsilon, k, np.diag(ZtZ)[:p], col_max_sq)
            penalty = np.append(np.full(p, s**2), 0.0)
        self.dp_epsilon_, self.dp_delta_ = self.dp_guarantee(
            data.n_samples, self.n_features_in_
        )
        self.noise_scale_ = float(s)
        self._factor_sigma(ZtZ + np.diag(penalty))

        # S [Z y] + noise has iid rows N(0, Sigma) whatever S is: drawn from
        # the Cholesky factor of Sigma, identical in distribution to the
        # explicit k x n sketch and O(k d^2) work instead of O(k n d)
        self.sketch_ = self._mechanism_release(rng)
        theta = self._solve(self.sketch_, penalty, data.n_samples)
        if np.isinf(self.signal_ridge_):
            self.mean_only_reason_ = (
                "the released sketch shows no signal above its noise (the signal "
                "test, post-processing: the losses are those of the sketch); the "
                "sketch's noise relative to the signal falls with n_samples and "
                "epsilon")

        if self.variant == "paper":
            # only without noise on a column can a row alone span a direction
            # of Sigma (tau_in = 1) or leave its range (tau = inf); counting
            # them costs one more pass
            exposed = data.reduce(
                lambda start, Xs, ys: int(np.sum(self._tau(_LabelledRows(Xs, ys)) > _ONE))
            )
            if exposed:
                warnings.warn(
                    f"{exposed} training row(s) alone span a direction of the "
                    "released sketch's covariance, or break a linear relation "
                    "that it reveals (possible only without noise on some "
                    "column): their privacy loss is infinite.",
                    PrivacyLeakWarning,
                    stacklevel=4,
                )
        return theta

    def _solve(self, sketch, penalty, n_samples):
        """Ridge regression on the released sketch (post-processing).

        The sketch's normal equations estimate ``k Sigma`` (k sketch rows),
        whose noise ``s^2`` acts as a ridge on every coefficient. With an
        intercept the constant column's ``Sigma`` entry ``n + s^2`` is public,
        so the regressions of the other columns on it (their sums over
        ``n + s^2``) are rescaled to the means exactly: the intercept is not
        shrunk towards 0, and with slopes 0 it is the private label mean. The
        slopes get, on top of the noise's ridge ``s^2``, the James-Stein
        ridge that the centred cross term supports against its noise
        (:func:`~sklearn_pdp._signal.signal_ridge`; ``signal_ridge_``): inf,
        the label mean alone, where it shows no signal. Fewer sketch rows
        than columns, or a sketch too ill-conditioned for a Cholesky solve,
        give the minimum-norm least squares on the sketch.
        """
        k, p = sketch.shape[0], sketch.shape[1] - 1
        self.signal_ridge_ = 0.0
        if k > p:  # else no residual is left to measure the noise by
            try:
                return self._shrunk_solve(sketch.T @ sketch, k, penalty[p - 1], n_samples)
            except linalg.LinAlgError:
                pass
        return linalg.lstsq(sketch[:, :p], sketch[:, p], check_finite=False)[0]

    def _shrunk_solve(self, gram, k, s2, n_samples):
        """Slopes (and intercept) of :meth:`_solve` from the sketch's Gram
        matrix ``gram`` of ``[Z y]`` (constant column last in Z)."""
        d = gram.shape[0] - 1 - self.fit_intercept
        centred = corrected = gram
        if self.fit_intercept:
            # Schur complement on the constant column: the centred scatter
            # and cross term of the sketch, of k - 1 rows N(0, Sigma_{.|c})
            keep = np.r_[:d, d + 1]
            g = gram[d, keep] / gram[d, d]
            centred = gram[np.ix_(keep, keep)] - gram[d, d] * np.outer(g, g)
            # Sigma's centred blocks use the public n, not n + s^2
            corrected = centred - k * s2 * (n_samples + s2) / n_samples * np.outer(g, g)
        scatter, cross = centred[:d, :d], centred[:d, d]
        chol = linalg.cho_factor(scatter, check_finite=False)
        # Given the sketch's features, its labels are theirs times Sigma's
        # coefficients plus independent noise of variance sigma_e^2 per row,
        # so the cross term's noise has covariance sigma_e^2 scatter
        residual = centred[d, d] - cross @ linalg.cho_solve(chol, cross, check_finite=False)
        noise = max(residual, 0.0) / (k - d - self.fit_intercept) * np.trace(scatter) / d
        # the data's scatter is the sketch's less the noise's k s^2 I, which
        # is already a ridge on the slopes
        mean_eigen = max(np.trace(corrected[:d, :d]) / d - k * s2, 0.0)
        ridge = float(signal_ridge(cross, noise, noise, mean_eigen, _SIGNAL_MARGIN))
        extra = max(ridge - k * s2, 0.0)
        if np.isinf(extra):
            beta = np.zeros(d)
        else:
            system = corrected[:d, :d] + extra * np.eye(d)
            beta = linalg.cho_solve(linalg.cho_factor(system, check_finite=False),
                                    corrected[:d, d], check_finite=False)
        self.signal_ridge_ = extra / k
        if not self.fit_intercept:
            return beta
        return np.append(beta, (n_samples + s2) / n_samples * (g[d] - g[:d] @ beta))

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
                self._basis = self._null = None
                self._sigma = RidgeSystem(sigma, None, 0.0)
                return
            self._null = vec[:, ~keep]
            self._sigma = RidgeSystem(np.diag(lam[keep]), None, 0.0)
        except ValueError:
            # Nearly singular: leverages along the smallest directions would
            # be rounding noise, so no per-instance loss could be trusted.
            raise ValueError(
                "The covariance of the released sketch is too ill-conditioned "
                "for exact per-instance losses: a linear relation between the "
                "columns of [X, y] holds almost exactly and the noise "
                f"(noise_scale_={self.noise_scale_:.3g}, variant="
                f"{self.variant!r}) does not mask it. Use variant='dp', or a "
                "smaller epsilon."
            ) from None
        warnings.warn(
            "The covariance of the released sketch is singular: it reveals an "
            "exact linear relation between the columns of [X, y] (e.g. y in the "
            "span of X without noise on y). Targets off that relation have "
            "infinite privacy loss.",
            PrivacyLeakWarning,
            stacklevel=5,
        )
        self._basis = vec[:, keep]

    def _tau(self, Z):
        """z^T Sigma^+ z of the rows of ``Z`` (:class:`_LabelledRows`), inf
        off the range of Sigma."""
        if self._null is None:
            return self._sigma.row_statistics(Z)["leverage"]
        tau = self._sigma.row_statistics(Z @ self._basis)["leverage"]
        # A component along a null direction that is more than rounding (of
        # the row and of the eigenvectors) is real: the relation is not exact
        # for this row, and its loss is infinite (Sigma may be singular only
        # to working precision, so that direction's variance is unknown).
        off = row_norms(Z @ self._null)
        rounding = _NULL_RTOL * np.sqrt(Z.squared_norms())
        return np.where(off > rounding, np.inf, tau)

    def _mechanism_release(self, rng, size=None):
        """Draw(s) of the released sketch (scaled coordinates).

        Uses that the sketch rows are N(0, Sigma) whatever the draw of S:
        ``size`` sketches of shape (n_components_, n_features + 1) are drawn
        without the training data.
        """
        chol = self._sigma.chol
        shape = (self.n_components_, chol.shape[0])
        G = rng.standard_normal(shape if size is None else (size, *shape))
        draw = G @ chol.T
        return draw if self._null is None else draw @ self._basis.T

    def _training_tau(self, Xs, ys):
        """In-sample tau' = z^T Sigma^{-1} z of the training rows."""
        tau_in = self._tau(_LabelledRows(Xs, ys))
        # A row alone spanning a direction of Sigma has tau_in = 1 exactly;
        # within rounding of 1 report it as such (infinite loss), never as a
        # large finite number that rounding produced.
        tau_in[tau_in > _ONE] = 1.0
        return tau_in

    def _training_epsilon(self, Xs, ys):
        return self._training_stages()(Xs, ys)

    def _training_stages(self):
        """:meth:`_training_epsilon` as a :class:`TwoStageRows`: the in-sample
        tau' of each row (one product), then its exact loss."""

        def finish(tau_in):
            # Sherman-Morrison: tau of the data set without the row (residual unused)
            tau, _ = leave_one_out(tau_in, np.zeros_like(tau_in))
            # tau <= 2 / s^2, where the calibration verified epsilon: the root
            # search's tolerance must not report more than dp_epsilon_
            return np.minimum(chi2_epsilon(self.delta, tau, self.n_components_),
                              self.dp_epsilon_)

        return TwoStageRows(self._training_tau, finish)

    def _target_epsilon(self, Xs, ys):
        tau = _label_quadratic(self._tau, Xs, ys)
        # an added row is not a neighbour the calibration covered: uncapped
        return chi2_epsilon(self.delta, tau, self.n_components_)

    def _law_statistics(self, Xs, ys, add=False):
        """Exact statistic of the rows for :meth:`release_law`'s ``epsilon``:
        the in-sample tau' of training rows, or (``add``) the in-sample
        equivalent tau / (1 + tau) of rows added (``ys`` None: the worst
        label), which :func:`leave_one_out` maps back to tau."""
        if not add:
            return {"tau": self._training_tau(Xs, ys)}
        tau = _label_quadratic(self._tau, Xs, ys)
        with np.errstate(invalid="ignore"):
            return {"tau": np.where(np.isinf(tau), 1.0, tau / (1.0 + tau))}

    def _mechanism_law(self):
        """Public description of the release, for a published report.

        Returns
        -------
        law : RandomProjectionLaw
            The Gram matrix of the released sketch, the number of sketch
            rows, the domain's largest tau (from the noise level), the
            guarantee, the public size, the domain and the released (scaled)
            coefficients.

        Raises
        ------
        NotImplementedError
            For ``variant="paper"``, which has no guarantee to publish under.
        """
        if self.variant != "dp":
            raise NotImplementedError(
                "RandomProjectionRegressor with variant='paper' has no DP "
                "guarantee, so its report cannot be published (variant='dp' can)."
            )
        return RandomProjectionLaw(
            sketch_gram=self.sketch_.T @ self.sketch_, n_components=self.n_components_,
            max_tau=(2.0 + self.fit_intercept) / self.noise_scale_**2,
            dp=(self.dp_epsilon_, self.dp_delta_), scaler=self._scaler, coef=self._theta,
            # the noise's implicit ridge on the sketch's normal equations
            alpha=self.noise_scale_**2, n_samples=self._n,
        )


class RandomProjectionLaw(ReleaseLaw):
    """Random projection's release law (doc/publish.rst): n' rows N(0, Sigma).

    A row's statistic is its in-sample ``tau' = z^T Sigma^{-1} z``,
    ``z = [x, y]``, and its loss the chi-square one at
    ``tau = tau' / (1 - tau')``, non-decreasing in tau'. The released sketch
    R bounds it: ``R^T R = Sigma^{1/2} G^T G Sigma^{1/2}`` with G an
    n' x p matrix of independent N(0, 1) entries, whose largest singular
    value is at most ``sqrt(n') + sqrt(p) + sqrt(2 log(1/beta))`` except
    with probability beta (Gordon's bound and Gaussian concentration). On
    that event ``R^T R <= s^2 Sigma``, so ``tau' <= s^2 z^T (R^T R)^{-1} z``
    for every z at once. The publication needs no Gram matrix
    (``needs_gram``): it costs the summary alone.
    """

    needs_gram = False

    def __init__(self, *, sketch_gram, n_components, max_tau, dp, **public):
        super().__init__(**public)
        self.sketch_gram = np.asarray(sketch_gram, dtype=np.float64)
        self.n_components = int(n_components)
        self.max_tau = float(max_tau)
        self.dp = dp

    def _dp(self, delta):
        # the guarantee at the fit's delta; elsewhere the loss at the corner
        if delta == self.dp[1]:
            return self.dp[0]
        return float(chi2_epsilon(delta, self.max_tau, self.n_components))

    def epsilon(self, delta, stats, gaussian_ratio=None):
        tau, _ = leave_one_out(stats["tau"], np.zeros_like(stats["tau"]))
        return compose_with_gaussian(
            lambda d: np.minimum(chi2_epsilon(d, tau, self.n_components), self._dp(d)),
            delta, gaussian_ratio,
        )

    def dp_epsilon(self, delta, gaussian_ratio=None):
        return compose_with_gaussian(self._dp, delta, gaussian_ratio)

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
            return {"tau": np.full(Xs.shape[0], np.inf)}
        quad = _label_quadratic(lambda Z: sketch.row_statistics(Z)["leverage"], Xs, ys)
        return {"tau": scale * quad}


def _label_quadratic(quad, Xs, ys):
    """``quad(z)`` of the rows ``z = [x, y]``; with ``ys`` None the worst
    label: a quadratic form is convex in the label, so an end of [-1, 1]."""
    if ys is not None:
        return quad(_LabelledRows(Xs, ys))
    return np.maximum(*(quad(_LabelledRows(Xs, np.full(Xs.shape[0], v))) for v in (-1.0, 1.0)))


class _LabelledRows:
    """The rows z = [x, y] of scaled rows ``Xs`` and labels ``ys``, for
    products ``Z @ A`` without stacking the columns (no copy of the rows)."""

    def __init__(self, Xs, ys):
        self.Xs, self.ys = Xs, ys

    def __matmul__(self, A):
        """``Z @ A`` for A of shape (p + 1, k)."""
        out = self.Xs @ A[:-1]
        # the labels' row of A (of Sigma's whitener: its last entry alone)
        cols = np.flatnonzero(A[-1])
        out[:, cols] += np.multiply.outer(self.ys, A[-1, cols])
        return out

    def squared_norms(self):
        return squared_norms(self.Xs) + self.ys**2


def _labelled_gram(start, Xs, ys):
    """Z^T Z of Z = [Xs ys]."""
    XtX, Xty = Xs.gram(ys)
    # not ys @ ys: right after the Gram's threaded BLAS calls that dot took
    # 5-7 ms a chunk in some runs (0.2 s of a fit at n = 1e6, d = 10),
    # einsum 20 us
    yy = np.einsum("i,i->", ys, ys)
    return np.block([[XtX, Xty[:, None]], [Xty[None, :], yy]])


def _column_max_squares(start, Xs, ys):
    """The largest square in each column of the scaled rows."""
    return np.square(Xs).max(axis=0)


def paper_noise_scale(epsilon, n_components, col_sq, col_max_sq):
    """sigma_RP of the paper's rule (13), with f(X) over columns (erratum E9).

    sigma_RP^2 = (n' / (2^(2 epsilon) - 1) - f(X)^2)_+ with
    f(X)^2 = min_j (sum_i X_ij^2 - max_i X_ij^2), from the column sums and
    maxima of the squared entries.
    """
    f_sq = np.min(col_sq - col_max_sq)
    return np.sqrt(max(n_components / np.expm1(2 * epsilon * np.log(2)) - f_sq, 0.0))
