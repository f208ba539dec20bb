"""AdaSSP: sufficient statistics perturbation with a privately chosen ridge
(Wang 2018, Algorithm 2; doc/mechanisms/adassp.rst).

Every released statistic is a sum over the rows plus independent Gaussian
noise, so the whole release is one Gaussian mechanism: a row's privacy loss
is that of the analytic Gaussian mechanism at the ratio
s^2 = sum over blocks of (the row's l2 change of the block / its sigma)^2,
exact and the same in both directions. The model is post-processing.
"""

from numbers import Real

import numpy as np

from ._sklearn import Interval
from ._accounting import gaussian_epsilon, gaussian_noise_scale
from ._base import PrivateRegressorMixin
from ._docstrings import fill_doc
from ._eigen import eigen_change, eigen_max_change, scatter_eigen
from ._law import GaussianLaw, block_ratio
from ._profile import PrivacyProfile
from ._signal import signal_ridge

# The released blocks, in the order of ``budget_split``.
_BLOCKS = ("gram", "xy", "ysum", "eigen")


def ssp_statistics(XtX, Xty, n_samples, intercept):
    """The exact (noiseless) statistics that AdaSSP releases, as a dict.

    From the sufficient statistics of the scaled rows z (the constant
    feature last when ``intercept``) and labels: ``gram`` = Z^T Z with the
    constant's own entry set to the public size, ``xy`` = X^T y (slopes
    part), ``ysum`` = sum y (intercept only) and ``eigen`` = the smallest
    eigenvalue of the matrix that governs the slopes: X^T X, or with an
    intercept the centred scatter S = sum (x_i - x_bar)(x_i - x_bar)^T.
    ``n_samples`` is the data set's own count (it centres S). Also returns
    the eigendecomposition of that matrix and the feature mean (keys
    ``_eig`` and ``_mean``) for the per-row changes.
    """
    d = XtX.shape[0] - int(intercept)
    stats = {"gram": XtX.copy(), "xy": Xty[:d].copy()}
    if intercept:
        stats["gram"][d, d] = n_samples
        stats["ysum"] = np.float64(Xty[d])
    eig, mean = scatter_eigen(XtX, n_samples, intercept)
    stats["eigen"] = eig[0][0]
    return stats, eig, mean


def gram_change2(Xs, intercept):
    """Squared l2 change of the released Gram entries when each row of ``Xs`` is
    added or removed: sum over j <= k of (z_j z_k)^2, without the constant's
    own entry (the public size) when ``intercept``.

    With the features x of z: (||x||^4 + sum x_j^4) / 2, plus ||x||^2 for the
    constant's column (summed from x, never as a difference with 1, which
    would round the change of a short row to 0).
    """
    return _gram_change2(*_feature_powers(Xs, intercept), intercept)


def _feature_powers(Xs, intercept):
    """||x||^2 and sum x_j^4 of the features x of each scaled row."""
    x = np.asarray(Xs)[:, : Xs.shape[1] - int(intercept)]
    sq = np.square(x)
    # (einsum sums the short rows 5 times as fast as .sum(axis=1))
    return np.einsum("ij->i", sq), np.einsum("ij,ij->i", sq, sq)


def _gram_change2(norm2, fourth, intercept):
    return 0.5 * (norm2**2 + fourth) + int(intercept) * norm2


def gram_max_change(intercept):
    """Largest l2 change of the released Gram entries over the domain: 1, or
    sqrt(2) with the constant feature (x = e_1: (4 + 2)/2 - 1 = 2)."""
    return np.sqrt(2.0) if intercept else 1.0


def gram_noise(rng, n_coef, intercept, size=None):
    """Symmetric N(0, 1) noise for a released Gram matrix: independent entries on
    and above the diagonal, none on the constant's own entry (the public size).
    ``size`` matrices along a leading axis, or one."""
    E = rng.standard_normal((1 if size is None else size, n_coef, n_coef))
    E = np.triu(E) + np.swapaxes(np.triu(E, 1), 1, 2)
    if intercept:
        E[:, -1, -1] = 0.0
    return E[0] if size is None else E


@fill_doc
class AdaSSPRegressor(PrivateRegressorMixin):
    """Linear regression by noisy sufficient statistics and adaptive ridge.

    AdaSSP (Wang 2018, Algorithm 2) with exact per-instance privacy losses.
    On the data scaled into the privacy domain (rows ``z`` in the unit ball
    plus the constant feature 1, labels in [-1, 1]) it releases, with
    independent Gaussian noise, the Gram matrix ``Z^T Z`` (upper triangle;
    the constant's own entry is the public size ``n``), ``X^T y``, the
    label sum and the smallest eigenvalue of the centred scatter matrix of
    the features. The coefficients solve the ridge system built from these
    noisy statistics, with a ridge ``alpha_`` chosen from them and no
    penalty on the intercept: pure post-processing, so the ridge costs no
    privacy.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy budget: the noise is calibrated so that ``dp_epsilon_ <=
        epsilon`` at ``delta``.
    delta : float, default=1e-6
        The delta of the budget, of ``pdp_losses_`` and of ``dp_epsilon_``.
    budget_split : array-like of shape (4,) or None, default=None
        Non-negative weights (normalised to sum 1) of the Gram matrix, of
        ``X^T y``, of the label sum and of the eigenvalue in the squared
        privacy ratio ``s^2`` of the whole release (see Notes); all must be
        positive but the third, which is ignored without intercept. None:
        ``(0.35, 0.3, 0.25, 0.1)``, the best of the splits measured on the
        utility benchmark.
    {bounds}
    {tighten}
    {fit_intercept}
    {random_state}
    {n_jobs}

    Attributes
    ----------
    {model}
    {mean_only}
    alpha_ : float
        The ridge chosen from the noisy statistics (scaled domain); ``inf``
        where they show no signal above their noise (the label mean alone).
    lambda_min_ : float
        The released (noisy) smallest eigenvalue.
    noise_scale_ : dict
        Standard deviation of the noise of each released block: ``"gram"``,
        ``"xy"``, ``"ysum"`` (with an intercept) and ``"eigen"``.
    pdp_losses_ : ndarray of shape (n_samples,)
        Exact per-instance epsilon, at ``delta``, of removing each training
        row from the whole release.
    dp_epsilon_ : float
        Data-independent epsilon at ``delta`` for any data set of this size
        in the declared domain (the budget, met exactly at the domain's
        worst case).
    dp_delta_ : float
        The delta of ``dp_epsilon_``.
    {fitted_bounds}

    See Also
    --------
    AdaOPSRegressor : One posterior sample with a privately chosen ridge.

    Notes
    -----
    Releases (the constant feature's own Gram entry is the public size, not
    computed from the data; the sample size is treated as public):

    - ``Z^T Z + sigma_G E``, ``E`` symmetric with independent N(0, 1)
      entries on and above the diagonal; a row's change of these entries
      has squared norm ``sum_(j <= k) (z_j z_k)^2`` (less the constant's own
      entry), at most 2 with an intercept and 1 without;
    - ``X^T y + sigma_xy N(0, I)``: change ``|y| ||x||``, at most 1;
    - with an intercept, ``sum y + sigma_y N(0, 1)``: change ``|y|``;
    - ``lambda_min(S) + sigma_lambda N(0, 1)``, S the centred scatter matrix
      (``X^T X`` without intercept). Removing row i changes S by the rank
      one matrix ``n/(n-1) (x_i - x_bar)(x_i - x_bar)^T``, and
      ``lambda_min`` by the root of the rank-one secular equation; at most
      ``4 (n - 1)/n`` (1 without intercept), attained in one dimension.

    The noise is independent, so the release is one Gaussian mechanism with
    ``s_i^2 = sum_b (Delta_b(i) / sigma_b)^2`` and ``pdp_losses_[i]`` is the
    analytic Gaussian epsilon at ``s_i`` (Balle and Wang 2018), identical
    in both directions. All the largest changes are reached together (a row
    ``x = e_1``, ``|y| = 1`` against rows at ``-e_1``; approached in more
    than one dimension), so the domain's worst ratio is
    ``s_max^2 = sum_b (max Delta_b / sigma_b)^2``; the sigmas
    are ``max Delta_b / (sqrt(w_b) s*)`` with ``s*`` the largest ratio whose
    epsilon at ``delta`` is ``epsilon`` and ``w`` the budget split.

    Model: with the noisy Schur complement ``S~ = G~_xx - s~ s~^T / n`` (the
    centred Gram) and cross term ``b~ = (X^T y)~ - s~ (sum y)~ / n``, slopes
    ``(S~ + alpha_ I)^{-1} b~`` and intercept ``((sum y)~ - s~^T beta) / n``:
    the ridge shrinks the slopes only, towards the private label mean.
    ``alpha_ = max(0, t - lambda_min_, t/4 - lambda_min(S~))`` with the
    noise level ``t = 3 sigma_G sqrt(d)`` (Wang's rule, with the last term
    keeping the noisy system positive definite).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_pdp import AdaSSPRegressor
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-1, 1, size=(20000, 3)) / np.sqrt(3)
    >>> y = np.clip(0.3 + X @ [1.0, -0.5, 0.2] + 0.1 * rng.randn(20000), -1, 1)
    >>> reg = AdaSSPRegressor(epsilon=1.0, data_norm=1.0, y_bound=1.0,
    ...                       random_state=0).fit(X, y)
    >>> bool(reg.dp_epsilon_ <= 1.0)
    True
    >>> bool(np.all(reg.pdp_losses_ <= reg.dp_epsilon_))
    True
    >>> bool(reg.score(X, y) > 0.9)
    True
    """

    _parameter_constraints: dict = {
        **PrivateRegressorMixin._parameter_constraints,
        "epsilon": [Interval(Real, 0, None, closed="right")],
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "budget_split": ["array-like", None],
    }

    def __init__(
        self,
        epsilon=1.0,
        *,
        delta=1e-6,
        budget_split=None,
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
        self.budget_split = budget_split
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
        # scikit-learn's check data (200 rows, 10 features) at epsilon=1 is
        # mostly noise: the model falls back towards the label mean
        tags.regressor_tags.poor_score = True
        return tags

    # Its noisy statistics learn slopes at lower n epsilon than the other
    # mechanisms (centred synthetic, 73 per coefficient: 0.74 of the mean
    # predictor's error), so it falls back to the mean only below. At 20,
    # "fair" at n epsilon = 509 (57 per coefficient) was 1.27: the label sum's
    # share of the budget makes its mean's variance 4 times that of a
    # Gaussian mean at the whole budget (about 36 times the Laplace fallback's).
    _mean_only_rate = 60.0

    def _weights(self, n_samples):
        """Shares of s*^2 of the blocks in ``_BLOCKS`` (zero for an absent block)."""
        if self.budget_split is None:
            weights = np.array(_DEFAULT_SPLIT)
        else:
            weights = np.array(self.budget_split, dtype=float)
            # the label sum's weight may be 0 only without an intercept (read from it)
            needed = [0, 1, 2, 3] if self.fit_intercept else [0, 1, 3]
            if weights.shape != (4,) or not np.all(weights >= 0) or weights[needed].min() <= 0:
                raise ValueError(
                    "budget_split must be four non-negative weights (Gram matrix, "
                    "X^T y, label sum, eigenvalue), all positive but the label "
                    f"sum's without an intercept; got {self.budget_split!r}."
                )
        weights[2] *= self.fit_intercept
        return weights / weights.sum()

    def _max_change(self, n_samples):
        """Largest l2 change of each block by one row, over the domain."""
        return np.array([
            gram_max_change(self.fit_intercept), 1.0, float(self.fit_intercept),
            eigen_max_change(n_samples, self.fit_intercept),
        ])

    def _noise_scales(self, n_samples):
        """Noise standard deviation of each released block, for the public size.

        A block without a share is not released; one that no row can change
        (the eigenvalue of a single row's scatter) gets no noise.
        """
        ratio = 1.0 / gaussian_noise_scale(self.epsilon, self.delta)
        weights = self._weights(n_samples)
        change = self._max_change(n_samples)
        return {
            key: float(c / (np.sqrt(w) * ratio))
            for key, c, w in zip(_BLOCKS, change, weights) if w > 0
        }

    def _mechanism_guarantee(self, n_samples, n_features, min_samples=None):
        # the noise is calibrated at every size so that the domain's worst
        # ratio is exactly the budget's
        self._weights(n_samples)
        return float(self.epsilon), self.delta

    def _fit_scaled(self, data, rng):
        n = data.n_samples
        self.dp_epsilon_, self.dp_delta_ = self.dp_guarantee(n, self.n_features_in_)
        XtX, Xty = data.gram()
        self._stats, self._eig, self._mean = ssp_statistics(XtX, Xty, n, self.fit_intercept)
        self._n = n
        self.noise_scale_ = self._noise_scales(n)
        noisy = self._noisy(rng)
        self.lambda_min_ = float(noisy["eigen"][0])
        theta, alpha = self._model(noisy)
        self.alpha_ = float(alpha[0])
        if np.isinf(self.alpha_):
            self.mean_only_reason_ = self._no_signal_reason(noisy)
        return theta[0]

    def _no_signal_reason(self, noisy):
        """Why the signal test set the slopes to 0, with the public threshold:
        the norm that the centred cross term must exceed, from the noise
        levels and released quantities alone."""
        d = noisy["xy"].shape[1]
        # the test passes where ||cross||^2 exceeds v (d + margin sqrt(2 d)),
        # whose noise adds v d on average: the signal's norm must exceed
        # sqrt(v margin sqrt(2 d)) (times n, cross is a sum over the rows)
        level = float(np.sqrt(self._cross_noise_var(noisy)[0] * _SIGNAL_MARGIN * np.sqrt(2 * d)))
        return (
            "the link between the features and the label is too weak to show "
            "through the privacy noise (a test that is part of the release: the "
            "per-person losses cover it). Slopes need, with features and label "
            "mapped into their declared bounds, a covariance above about "
            f"{level / self._n:.3g}; that threshold halves with twice the rows or "
            "twice the epsilon, and tighter bounds (the data spread wider within "
            "them) raise the covariance"
        )

    def _noisy(self, rng, size=1):
        """``size`` independent noisy releases of the statistics (leading axis)."""
        sigma = self.noise_scale_
        gram = self._stats["gram"]
        out = {
            "gram": gram + sigma["gram"] * gram_noise(rng, gram.shape[0], self.fit_intercept, size),
            "xy": self._stats["xy"]
            + sigma["xy"] * rng.standard_normal((size, self._mean.shape[0])),
            "eigen": self._stats["eigen"] + sigma["eigen"] * rng.standard_normal(size),
        }
        if self.fit_intercept:
            out["ysum"] = self._stats["ysum"] + sigma["ysum"] * rng.standard_normal(size)
        return out

    def _model(self, noisy):
        """Coefficients (scaled) and ridge of noisy releases: post-processing."""
        G, xy = noisy["gram"], noisy["xy"]
        d = xy.shape[1]
        if self.fit_intercept:
            s = G[:, :d, d]
            scatter = G[:, :d, :d] - s[:, :, None] * s[:, None, :] / self._n
            cross = xy - s * (noisy["ysum"] / self._n)[:, None]
        else:
            scatter, cross = G, xy
        level = _RIDGE_SCALE * self.noise_scale_["gram"] * np.sqrt(d)
        noisy_min = np.linalg.eigvalsh(scatter)[:, 0]
        alpha = np.maximum.reduce([
            np.zeros_like(noisy_min),
            level - noisy["eigen"],
            _PD_FRACTION * level - noisy_min,
        ])
        system = scatter + alpha[:, None, None] * np.eye(d)
        beta = np.linalg.solve(system, cross[:, :, None])[:, :, 0]
        # a ridge larger than Wang's where the signal is weak; none of it
        # (inf) releases the label mean alone
        alpha = np.maximum(alpha, self._signal_ridge(scatter, cross, beta, noisy))
        fitted = np.isfinite(alpha)
        system[fitted] = scatter[fitted] + alpha[fitted, None, None] * np.eye(d)
        beta = np.where(fitted[:, None], np.linalg.solve(system, cross[:, :, None])[:, :, 0], 0.0)
        if not self.fit_intercept:
            return beta, alpha
        intercept = (noisy["ysum"] - np.einsum("ij,ij->i", s, beta)) / self._n
        return np.column_stack([beta, intercept]), alpha

    def _signal_ridge(self, scatter, cross, beta, noisy):
        """The ridge that the signal in the noisy cross term supports
        (:func:`~sklearn_pdp._signal.signal_ridge`): inf where it shows none
        above its noise, taken _SIGNAL_MARGIN standard deviations higher so
        that noise alone rarely passes for signal. The noise of the normal
        equations at the slopes adds the Gram noise times the slopes."""
        d = cross.shape[1]
        sigma = self.noise_scale_
        v = self._cross_noise_var(noisy)
        noise = v + sigma["gram"] ** 2 * np.einsum("ij,ij->i", beta, beta)
        mean_eigen = np.maximum(np.trace(scatter, axis1=1, axis2=2) / d, 0.0)
        return signal_ridge(cross, v, noise, mean_eigen, _SIGNAL_MARGIN)

    def _cross_noise_var(self, noisy):
        """Noise variance per coordinate of the centred cross term of noisy
        releases: X^T y's, plus the noisy feature sums times the label mean
        and the feature mean times the label sum's."""
        d = noisy["xy"].shape[1]
        sigma = self.noise_scale_
        v = np.full(noisy["xy"].shape[0], sigma["xy"] ** 2)
        if self.fit_intercept:
            s = noisy["gram"][:, :d, d]
            v += (sigma["gram"] * noisy["ysum"] / self._n) ** 2
            v += np.einsum("ij,ij->i", s, s) / d * (sigma["ysum"] / self._n) ** 2
        return v

    def _mechanism_release(self, rng, size=None):
        """Draw(s) of the released coefficients (scaled coordinates)."""
        theta = self._model(self._noisy(rng, 1 if size is None else size))[0]
        return theta[0] if size is None else theta

    def _row_ratio(self, Xs, ys, add):
        """The privacy ratio s of each row: removing it (or adding, ``add``)."""
        return block_ratio(self.noise_scale_, self._law_statistics(Xs, ys, add))

    def _law_statistics(self, Xs, ys, add=False):
        """Squared change of each released block when the rows are removed
        (or added, ``add``; ``ys`` None: the worst label): exact."""
        x = Xs[:, : self._mean.shape[0]]
        return _row_changes2(Xs, ys, self.fit_intercept, eigen_change(
            self._eig, self._mean, self._n, x, intercept=self.fit_intercept, add=add
        ) ** 2)

    def _mechanism_law(self):
        """Public description of the release, for a published report.

        Returns
        -------
        law : AdaSSPLaw
            The noise of each released block, the public size, the domain
            and the released (scaled) coefficients.
        """
        return AdaSSPLaw(
            noise_scale=self.noise_scale_,
            worst_ratio=1.0 / gaussian_noise_scale(self.epsilon, self.delta),
            **self._law_public(),
        )

    def _mechanism_profile(self, losses):
        """Gaussian: the whole release is one Gaussian mechanism (Notes), so
        each row's ratio s is recovered exactly from its loss. Only the
        eigenvalue's largest change, ``4 (m - 1) / m``, depends on the size
        ``m`` of the data set holding the record: it grows with it."""
        def worst(size):
            return float(block_ratio(self.noise_scale_, dict(
                zip(_BLOCKS, self._max_change(size) ** 2))))

        return PrivacyProfile.from_losses(
            "gaussian", losses, self.delta, guarantee=worst(self._n), n_samples=self._n,
            mechanism=type(self).__name__, step=worst,
        )

    def _epsilon(self, ratio):
        # a row at the domain's worst case costs exactly the budget: the root
        # search's tolerance must not report more
        return np.minimum(gaussian_epsilon(self.delta, ratio), self.dp_epsilon_)

    def _box_epsilon(self, Z, ys, eigen2, delta):
        """Per-row epsilon at ``delta`` from upper bounds on the magnitudes
        of the scaled rows' entries (``Z``, the constant last with an
        intercept), of their labels (``ys``; None: 1) and on the eigenvalue's
        squared change: every block's change grows with them. What a fit
        on privately tightened bounds charges for the model, over all the
        bounds it could have released (doc/mechanisms/tightening.rst)."""
        changes = _row_changes2(Z, ys, self.fit_intercept, eigen2)
        return gaussian_epsilon(delta, block_ratio(self.noise_scale_, changes))

    def _training_epsilon(self, Xs, ys):
        return self._epsilon(self._row_ratio(Xs, ys, add=False))

    def _target_epsilon(self, Xs, ys):
        # the noise was sized for removals from n rows; an added row can
        # move the release more (4 n / (n + 1) > 4 (n - 1) / n for the
        # eigenvalue): its exact loss, uncapped
        return gaussian_epsilon(self.delta, self._row_ratio(Xs, ys, add=True))


def _row_changes2(Xs, ys, intercept, eigen2):
    """Squared changes of the blocks by each row; ``eigen2`` that of the eigenvalue."""
    norm2, fourth = _feature_powers(Xs, intercept)
    y2 = np.ones(Xs.shape[0]) if ys is None else ys**2
    return {
        "gram": _gram_change2(norm2, fourth, intercept),
        "xy": y2 * norm2,
        "ysum": y2,
        "eigen": eigen2,
    }


class AdaSSPLaw(GaussianLaw):
    """AdaSSP's release law (doc/publish.rst): one Gaussian mechanism of the
    released blocks (:class:`~sklearn_pdp._law.GaussianLaw`).

    A row's statistics are the squared changes of the released blocks
    (:meth:`AdaSSPRegressor._law_statistics`). From the published object
    alone, every change but the eigenvalue's is a function of the row
    itself; the eigenvalue moves by at most ``n/(n-1) ||x - x_bar||^2`` (a
    rank-one update; ``||x||^2`` without intercept), with ``x_bar`` read
    from the noisy Gram's constant column, whose noise is at most
    ``sigma t / n`` in norm on the event of
    :func:`~sklearn_pdp._publish.gram_noise_bound`.

    Its bounds hold for a person added to the ``n`` rows too, whose row can
    move the eigenvalue by up to ``4 n / (n + 1)``, more than the
    ``4 (n - 1) / n`` of a removal that the noise was sized for: the caps
    (:meth:`cap_ratio`) are the worst of both.
    """

    def cap_ratio(self):
        if not self.intercept:  # ||x||^2 <= 1 either way
            return self.worst_ratio
        n, sigma = self.n_samples, self.noise_scale["eigen"]
        if not sigma > 0:
            return self.worst_ratio
        removed, added = 4.0 * max(n - 1, 0) / n, 4.0 * n / (n + 1)
        return float(np.sqrt(self.worst_ratio**2 + (added**2 - removed**2) / sigma**2))

    def published_statistics(self, published, Xs, ys):
        n, d = self.n_samples, Xs.shape[1] - int(self.intercept)
        x = Xs[:, :d]
        if self.intercept:
            centre, shift = published.feature_mean()
            gap = np.linalg.norm(x - centre, axis=1) + shift
            # n / (n - 1) gap^2 bounds a removal's change and an addition's
            # (n / (n + 1) ||x - x_bar||^2); the domain caps both
            eigen = np.minimum(n / max(n - 1, 1) * gap**2, 4.0 * n / (n + 1))
        else:
            eigen = np.minimum(np.einsum("ij,ij->i", x, x), 1.0)
        return _row_changes2(Xs, ys, self.intercept, eigen**2)


# Ridge rule, in units of the Gram noise level sigma_G sqrt(d) (about half
# the spectral norm of the Gram noise): see doc/mechanisms/adassp.rst.
_RIDGE_SCALE = 3.0
# The ridge also keeps the noisy centred Gram's smallest eigenvalue at least
# this fraction of the level.
_PD_FRACTION = 0.25
# Standard deviations of the noise's chi-square by which the noisy cross
# term must exceed its noise before slopes are fitted at all (see
# _signal_ridge); noise alone passes for signal with probability about 8% at
# d = 8 (16% at 1). Measured on survey data whose labels vary little
# (statsmodels' "fair" and "randhie", 5 splits, epsilon 0.1-3), the test MSE
# over the mean predictor's went from 0.96-1.99 (Wang's ridge alone) to
# 0.95-1.84 with 0 and 0.95-1.27 with 1; with 1.5 "fair" at epsilon 0.3 went
# from 1.141 to 1.071 (2: 1.010), while the synthetic grid's best cells
# moved from 0.739 to 0.771 (centred n=1e3, epsilon=1; 2: 0.858) and from
# 0.692 to 0.730 (centred n=1e4, epsilon=0.1).
_SIGNAL_MARGIN = 1.5

# Default ``budget_split`` (Gram, X^T y, label sum, eigenvalue).
_DEFAULT_SPLIT = (0.35, 0.3, 0.25, 0.1)
