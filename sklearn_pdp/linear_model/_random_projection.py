"""Gaussian sketch plus additive noise (Showkatbakhsh et al.;
:doc:`/mechanisms/random_projection`): the estimator. Its release, with the
calibration, the losses and the publication law, is
:class:`~sklearn_pdp.mechanisms.random_projection._release.RandomProjectionRelease`."""

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.exceptions import DataDimensionalityWarning

from ..utils._sklearn import Interval, StrOptions
from ..accounting import PREDICTION_NOISE
from ._base import PrivateRegressorMixin
from ..mechanisms._release import noise_scale as mean_noise_scale
from ..mechanisms.random_projection._release import RandomProjectionRelease
from ..utils._docstrings import fill_doc
from ..exceptions import PrivacyLeakWarning

# Unit of the paper's projection-size rules (its data sets have n = 1000 k).
_RULE_UNIT = 1000


@fill_doc
class RandomProjectionRegressor(PrivateRegressorMixin):
    """Least squares on a noisy Gaussian sketch, with per-instance privacy.

    The data, scaled into the privacy domain (rows in the unit ball, labels in
    [-1, 1]), are released as the sketch ``S [X, y] + noise`` with ``S`` an
    ``n_components x n_samples`` matrix of independent N(0, 1) entries; the
    coefficients are post-processing of the sketch: least squares on its
    normal equations with the noise's variance taken off the slopes'
    diagonal (errors in variables), a ridge chosen from the sketch itself
    (``signal_ridge_``) and an unshrunk intercept, so that with a strong
    signal the fit approaches least squares and a model without signal
    falls back to the private label mean. With an intercept
    (``variant="dp"``) the label sum is also released with Laplace noise
    from 10% of ``epsilon`` (the sketch gets the rest), and the intercept is
    taken from the released label mean where that is the less noisy.
    Every released row is N(0, Sigma) with ``Sigma = [X y]^T [X y] +
    diag(noise variances)``, which gives the exact per-instance loss of every
    training row in closed form (chi-square tails), plus the label sum's
    Laplace loss.

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
        The ridge on the slopes chosen from the sketch (scaled domain, in
        units of the data's Gram matrix; see Notes). For ``variant="dp"``
        the ridge on the data's de-biased scatter: near 0 where the sketch
        shows a strong signal and the data's scatter well above its noise
        (least squares on the de-biased sketch), at least
        ``noise_scale_**2`` (the noise's own ridge) where the signal is
        weak. For ``variant="paper"`` the part on top of the noise's own
        ridge. ``inf`` where the sketch's cross term shows no signal, or
        (``variant="dp"``) none whose slopes surely predict better than
        none (``coef_`` is 0 and ``intercept_`` the label mean's estimate
        from the sketch). Not set when ``mean_only_``.
    released_label_mean_ : float or None
        With an intercept (``variant="dp"``): the label sum of the scaled
        rows plus Laplace noise, over ``n_samples`` (scaled units); None
        otherwise. Not set when ``mean_only_``.
    label_noise_scale_ : float or None
        The scale ``b`` of that Laplace noise on the sum: ``1 / (0.1
        epsilon)``; the released mean's noise variance is ``2 b^2 /
        n_samples^2``. None without a released label mean.
    centred_intercept_ : bool
        Whether the intercept is the released label mean's,
        ``released_label_mean_ - x_bar . slopes`` with the sketch's feature
        means ``x_bar``, chosen (post-processing) where its estimated noise
        variance is below that of the sketch's own intercept.
    pdp_losses_ : ndarray of shape (n_samples,)
        Exact per-instance epsilon, at ``delta``, of removing each training
        row (maximum of both directions; with a released label mean, the
        sketch's plus the label sum's ``|y| / b``, basic composition);
        ``inf`` where the row lies outside
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
    loss grows with tau, so s is found by a root search at that corner,
    at ``0.9 epsilon`` with an intercept: the label sum (sensitivity 1 in
    the scaled domain) takes the rest, by basic composition.

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
    intercept is not shrunk. For ``variant="dp"``, where the centred cross
    term clearly shows a signal (1.5 standard deviations of its noise's
    chi-square above its mean), the slopes' scatter is de-biased, the
    noise's ``s^2`` per sketch row taken off its diagonal (errors in
    variables), and the ridge on it is the larger of two rules: a floor
    from a lower bound, with probability 0.9 over the sketch's Wishart
    fluctuation, on the data's smallest scatter eigenvalue (0 where the
    data's scatter is well above the fluctuation, at most the noise's own
    ridge where the sketch cannot tell it from the noise), and the
    James-Stein ridge that the cross term supports, ``s_bar v d /
    (||b||^2 - v (d + c sqrt(2 d)))`` at ``c = 1.5``, with ``b`` the
    sketch's centred cross term, ``v`` its noise variance per coordinate
    (the residual variance of the sketch's regression times the mean
    diagonal entry of its centred scatter) and ``s_bar`` the data's mean
    scatter eigenvalue estimated from the sketch. Where the signal is
    weaker the slopes keep the noise's ridge, or the James-Stein ridge at
    ``c = -0.5`` if larger; where ``||b||^2`` is below ``v (d - 0.5
    sqrt(2 d))`` they are 0. Then, for ``variant="dp"``, the ridge is
    raised to the least at which Stein's unbiased estimate of the slopes'
    prediction risk, less that of slopes 0, is below 0 by 1.5 of its
    standard deviations, or to ``inf`` (slopes 0) where no ridge's is: a
    chance pass of the test costs the slopes' noise, which on labels of
    small variance is a large share of it. The paper's variant keeps the
    noise's ridge in every case. See :doc:`/mechanisms/random_projection`.

    The released sketch rows have the distribution N(0, Sigma) whatever S is
    drawn from, so the privacy analysis covers every draw. The fitted
    estimator keeps Sigma (non-private, in its ``release_``) for
    :meth:`pdp_epsilon`: publish :meth:`public_model` (or ``sketch_``),
    never the estimator object. The sample size is treated as public.

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
        schema=None,
        tighten_bounds="auto",
        tighten_share=None,
        fit_intercept=True,
        random_state=None,
        n_jobs=None,
        max_records=None,
    ):
        self.epsilon = epsilon
        self.n_components = n_components
        self.variant = variant
        self.delta = delta
        self.data_norm = data_norm
        self.bounds_X = bounds_X
        self.y_bound = y_bound
        self.schema = schema
        self.tighten_bounds = tighten_bounds
        self.tighten_share = tighten_share
        self.fit_intercept = fit_intercept
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.max_records = max_records

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
        (n^2 (k - 2))`` (:doc:`/mechanisms/random_projection`): there no
        slope can make up for the intercept. A rule's ``k`` only: a fixed
        ``n_components`` keeps the size of the base class. ``s`` is that of
        the whole budget, below the sketch's at its share: still a lower
        bound."""
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
        s2 = RandomProjectionRelease.noise_scale_for(
            self.epsilon, self.delta, k, self.fit_intercept) ** 2
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
                stacklevel=6,  # here, _make_release, _choose_release, fit, its wrapper
            )
        return int(self.n_components)

    def _mechanism_guarantee(self, n_samples, n_features, min_samples=None):
        return RandomProjectionRelease.dp_guarantee(self.epsilon, self.delta, self.variant)

    def _make_release(self, data, scaler):
        if self.variant == "paper":
            warnings.warn(
                "variant='paper' has no differential privacy guarantee: the "
                "paper's MI-DP claim does not hold and y is not protected "
                "(dp_epsilon_ is inf). Use it only to reproduce the paper.",
                PrivacyLeakWarning,
                stacklevel=5,  # here, _choose_release, fit, its wrapper, the user
            )
        return RandomProjectionRelease.from_budget(
            self.epsilon, self.delta, data, scaler=scaler,
            n_components=self._resolve_n_components(data.n_samples), variant=self.variant,
        )
