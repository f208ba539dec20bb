"""AdaSSP's release (:doc:`/mechanisms/adassp`): noisy sufficient statistics,
their calibration to the budget, the model built from them and each row's
exact loss.

Every released statistic is a sum over the rows plus independent Gaussian
noise, so the whole release is one Gaussian mechanism: a row's privacy loss
is that of the analytic Gaussian mechanism at the ratio
s^2 = sum over blocks of (the row's l2 change of the block / its sigma)^2,
exact and the same in both directions. The model is post-processing.
"""

import numpy as np

from ...accounting import (
    feature_powers, gaussian_epsilon, gaussian_noise_scale, gram_change2, gram_max_change,
    gram_noise,
)
from ...utils._eigen import eigen_change, eigen_max_change, scatter_eigen, set_eigen_change
from ...utils._people import PersonLosses
from ...report._profile import PrivacyProfile
from .._release import GaussianRelease, block_ratio
from .._signal import signal_ridge

# The released blocks, in the order of ``budget_split``.
_BLOCKS = ("gram", "xy", "ysum", "eigen")
# Default ``budget_split`` (Gram, X^T y, label sum, eigenvalue).
_DEFAULT_SPLIT = (0.35, 0.3, 0.25, 0.1)
# Ridge rule, in units of the Gram noise level sigma_G sqrt(d) (about half
# the spectral norm of the Gram noise): see :doc:`/mechanisms/adassp`.
_RIDGE_SCALE = 3.0
# The ridge also keeps the noisy centred Gram's smallest eigenvalue at least
# this fraction of the level.
_PD_FRACTION = 0.25
# Standard deviations of the noise's chi-square by which the noisy cross
# term must exceed its noise before slopes are fitted at all (chosen on the
# utility benchmark: :doc:`/mechanisms/adassp`).
_SIGNAL_MARGIN = 1.5


def ssp_statistics(XtX, Xty, n_samples, intercept):
    """The exact (noiseless) statistics that AdaSSP releases, as a dict.

    From the sufficient statistics of the scaled rows z (the constant
    feature last when ``intercept``) and labels: ``gram`` = Z^T Z with the
    constant's own entry set to the public size, ``xy`` = X^T y (slopes
    part), ``ysum`` = sum y (intercept only) and ``eigen`` = the smallest
    eigenvalue of the matrix that governs the slopes: X^T X, or with an
    intercept the centred scatter S = sum (x_i - x_bar)(x_i - x_bar)^T.
    ``n_samples`` is the data set's own count (it centres S). Also returns
    the eigendecomposition of that matrix and the feature mean, for the
    per-row changes.
    """
    d = XtX.shape[0] - int(intercept)
    stats = {"gram": XtX.copy(), "xy": Xty[:d].copy()}
    if intercept:
        stats["gram"][d, d] = n_samples
        stats["ysum"] = np.float64(Xty[d])
    eig, mean = scatter_eigen(XtX, n_samples, intercept)
    stats["eigen"] = eig[0][0]
    return stats, eig, mean


def split_weights(budget_split, intercept):
    """Shares of s*^2 of the blocks in ``_BLOCKS`` (zero for an absent block),
    from the ``budget_split`` parameter (validated)."""
    if budget_split is None:
        weights = np.array(_DEFAULT_SPLIT)
    else:
        weights = np.array(budget_split, dtype=float)
        # the label sum's weight may be 0 only without an intercept (read from it)
        needed = [0, 1, 2, 3] if intercept else [0, 1, 3]
        if weights.shape != (4,) or not np.all(weights >= 0) or weights[needed].min() <= 0:
            raise ValueError(
                "budget_split must be four non-negative weights (Gram matrix, "
                "X^T y, label sum, eigenvalue), all positive but the label "
                f"sum's without an intercept; got {budget_split!r}."
            )
    weights[2] *= intercept
    return weights / weights.sum()


def max_change(n_samples, intercept):
    """Largest l2 change of each block by one row, over the domain."""
    return np.array([
        gram_max_change(intercept), 1.0, float(intercept),
        eigen_max_change(n_samples, intercept),
    ])


class AdaSSPRelease(GaussianRelease):
    """AdaSSP's release on one data set: the noisy blocks and the model.

    Noise of standard deviation ``noise_scale[b]`` on each released block
    ``b`` (``"gram"``, ``"xy"``, ``"ysum"`` with an intercept, ``"eigen"``),
    calibrated at the public size so that the domain's worst ratio
    (``worst_ratio``) costs exactly the budget. Holds the exact statistics
    (``exact``), the eigendecomposition of the slopes' matrix (``eig``) and
    the feature mean (``feature_mean``): statistics of the private data.

    As a published report's law (:doc:`/publish`), a row's statistics are
    the squared changes of the released blocks (:meth:`statistics`). From
    the published object alone, every change but the eigenvalue's is a
    function of the row itself; the eigenvalue moves by at most
    ``n/(n-1) ||x - x_bar||^2`` (a rank-one update; ``||x||^2`` without
    intercept), with ``x_bar`` read from the noisy Gram's constant column,
    whose noise is at most ``sigma t / n`` in norm on the event of
    :func:`~sklearn_pdp.report._publish.gram_noise_bound`. Its bounds hold for a
    person added to the ``n`` rows too, whose row can move the eigenvalue
    by up to ``4 n / (n + 1)``, more than the ``4 (n - 1) / n`` of a
    removal that the noise was sized for: the caps (:meth:`cap_ratio`) are
    the worst of both.
    """

    _private = ("exact", "eig", "feature_mean")

    @classmethod
    def budget_guarantee(cls, epsilon, delta, *, budget_split, intercept):
        """The guarantee at any size: the noise is calibrated at every size
        so that the domain's worst ratio is exactly the budget's (raises
        ``ValueError`` for an invalid ``budget_split``)."""
        split_weights(budget_split, intercept)
        return float(epsilon), delta

    @classmethod
    def from_budget(cls, epsilon, delta, data, *, scaler, budget_split=None, records=1):
        """``records``: the public cap on a person's rows, whose joint change
        the noise is sized for (every block's largest change times it)."""
        intercept = bool(scaler.fit_intercept)
        n = data.n_samples
        guarantee = cls.budget_guarantee(epsilon, delta, budget_split=budget_split,
                                         intercept=intercept)
        ratio = 1.0 / gaussian_noise_scale(epsilon, delta)
        # a block without a share is not released; one that no row can
        # change (the eigenvalue of a single row's scatter) gets no noise
        noise_scale = {
            key: float(records * c / (np.sqrt(w) * ratio))
            for key, c, w in zip(_BLOCKS, max_change(n, intercept),
                                 split_weights(budget_split, intercept)) if w > 0
        }
        release = cls(noise_scale=noise_scale, worst_ratio=ratio, scaler=scaler,
                      n_samples=n, delta=delta, guarantee=guarantee)
        XtX, Xty = data.gram()
        release.exact, release.eig, release.feature_mean = ssp_statistics(
            XtX, Xty, n, intercept)
        return release

    def release(self, rng):
        noisy = self._noisy(rng)
        self.lambda_min = float(noisy["eigen"][0])
        theta, alpha = self._model(noisy)
        self.alpha = float(alpha[0])
        if np.isinf(self.alpha):
            self.reason = self._no_signal_reason(noisy)
        self.coef = theta[0]
        return self.coef

    def draw(self, rng, size=None):
        theta = self._model(self._noisy(rng, 1 if size is None else size))[0]
        return theta[0] if size is None else theta

    def fitted_attributes(self):
        return {"alpha_": self.alpha, "lambda_min_": self.lambda_min,
                "noise_scale_": dict(self.noise_scale)}

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
            f"{level / self.n_samples:.3g}; that threshold halves with twice the rows or "
            "twice the epsilon, and tighter bounds (the data spread wider within "
            "them) raise the covariance"
        )

    def _noisy(self, rng, size=1):
        """``size`` independent noisy releases of the statistics (leading axis)."""
        sigma, exact = self.noise_scale, self.exact
        gram = exact["gram"]
        out = {
            "gram": gram + sigma["gram"] * gram_noise(rng, gram.shape[0], self.intercept, size),
            "xy": exact["xy"]
            + sigma["xy"] * rng.standard_normal((size, self.feature_mean.shape[0])),
            "eigen": exact["eigen"] + sigma["eigen"] * rng.standard_normal(size),
        }
        if self.intercept:
            out["ysum"] = exact["ysum"] + sigma["ysum"] * rng.standard_normal(size)
        return out

    def _model(self, noisy):
        """Coefficients (scaled) and ridge of noisy releases: post-processing."""
        G, xy = noisy["gram"], noisy["xy"]
        d, n = xy.shape[1], self.n_samples
        if self.intercept:
            s = G[:, :d, d]
            scatter = G[:, :d, :d] - s[:, :, None] * s[:, None, :] / n
            cross = xy - s * (noisy["ysum"] / n)[:, None]
        else:
            scatter, cross = G, xy
        level = _RIDGE_SCALE * self.noise_scale["gram"] * np.sqrt(d)
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
        if not self.intercept:
            return beta, alpha
        intercept = (noisy["ysum"] - np.einsum("ij,ij->i", s, beta)) / n
        return np.column_stack([beta, intercept]), alpha

    def _signal_ridge(self, scatter, cross, beta, noisy):
        """The ridge that the signal in the noisy cross term supports
        (:func:`~sklearn_pdp.mechanisms._signal.signal_ridge`): inf where it shows none
        above its noise, taken _SIGNAL_MARGIN standard deviations higher so
        that noise alone rarely passes for signal. The noise of the normal
        equations at the slopes adds the Gram noise times the slopes."""
        d = cross.shape[1]
        v = self._cross_noise_var(noisy)
        noise = v + self.noise_scale["gram"] ** 2 * np.einsum("ij,ij->i", beta, beta)
        mean_eigen = np.maximum(np.trace(scatter, axis1=1, axis2=2) / d, 0.0)
        return signal_ridge(cross, v, noise, mean_eigen, _SIGNAL_MARGIN)

    def _cross_noise_var(self, noisy):
        """Noise variance per coordinate of the centred cross term of noisy
        releases: X^T y's, plus the noisy feature sums times the label mean
        and the feature mean times the label sum's."""
        d, n = noisy["xy"].shape[1], self.n_samples
        sigma = self.noise_scale
        v = np.full(noisy["xy"].shape[0], sigma["xy"] ** 2)
        if self.intercept:
            s = noisy["gram"][:, :d, d]
            v += (sigma["gram"] * noisy["ysum"] / n) ** 2
            v += np.einsum("ij,ij->i", s, s) / d * (sigma["ysum"] / n) ** 2
        return v

    def statistics(self, Xs, ys, add=False):
        """Squared change of each released block when the rows are removed
        (or added, ``add``; ``ys`` None: the worst label): exact."""
        x = Xs[:, : self.feature_mean.shape[0]]
        return _row_changes2(Xs, ys, self.intercept, eigen_change(
            self.eig, self.feature_mean, self.n_samples, x, intercept=self.intercept,
            add=add) ** 2)

    def person_losses(self, gram, cross, sizes, add=False):
        """Exact loss at ``delta`` of removing (adding, ``add``) each
        person's rows together, from their sums ``gram`` (``sum z z^T``),
        ``cross`` (``sum y z``) and numbers of rows ``sizes``: every block
        moves by the sum of the rows' changes, the eigenvalue to that of the
        scatter without (with) them (:doc:`/people`)."""
        d = self.feature_mean.shape[0]
        entries = gram.copy()
        if self.intercept:
            entries[:, d, d] = 0.0  # the public size
        upper = np.triu_indices(entries.shape[1])
        changes = {
            "gram": np.square(entries[:, upper[0], upper[1]]).sum(axis=1),
            "xy": np.square(cross[:, :d]).sum(axis=1),
            "ysum": np.square(cross[:, d]) if self.intercept else np.zeros(sizes.size),
            "eigen": set_eigen_change(
                self.exact["gram"], self.n_samples, self.exact["eigen"], gram, sizes,
                intercept=self.intercept, add=add) ** 2,
        }
        return PersonLosses.of(
            gaussian_epsilon(self.delta, block_ratio(self.noise_scale, changes)), self.kind)

    def row_ratio(self, Xs, ys, add=False):
        """The privacy ratio s of each row: removing it (or adding, ``add``)."""
        return block_ratio(self.noise_scale, self.statistics(Xs, ys, add))

    def losses(self, Xs, ys, add=False):
        epsilon = gaussian_epsilon(self.delta, self.row_ratio(Xs, ys, add))
        if add:
            # the noise was sized for removals from n rows; an added row can
            # move the release more (the eigenvalue): its exact loss, uncapped
            return epsilon
        # a row at the domain's worst case costs exactly the budget: the
        # root search's tolerance must not report more
        return np.minimum(epsilon, self.guarantee[0])

    def box_epsilon(self, Z, ys, eigen2, delta):
        """Per-row epsilon at ``delta`` from upper bounds on the magnitudes
        of the scaled rows' entries (``Z``, the constant last with an
        intercept), of their labels (``ys``; None: 1) and on the eigenvalue's
        squared change: every block's change grows with them. What a fit
        on privately tightened bounds charges for the model, over all the
        bounds it could have released (:doc:`/mechanisms/tightening`)."""
        changes = _row_changes2(Z, ys, self.intercept, eigen2)
        return gaussian_epsilon(delta, block_ratio(self.noise_scale, changes))

    def profile(self, losses, mechanism):
        """Gaussian: the whole release is one Gaussian mechanism, so each
        row's ratio s is recovered exactly from its loss. Only the
        eigenvalue's largest change, ``4 (m - 1) / m``, depends on the size
        ``m`` of the data set holding the record: it grows with it."""
        def worst(size):
            return float(block_ratio(self.noise_scale, dict(
                zip(_BLOCKS, max_change(size, self.intercept) ** 2))))

        return PrivacyProfile.from_losses(
            "gaussian", losses, self.delta, guarantee=worst(self.n_samples),
            n_samples=self.n_samples, mechanism=mechanism, step=worst,
        )

    # -- the law of a published report ------------------------------------

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


def _row_changes2(Xs, ys, intercept, eigen2):
    """Squared changes of the blocks by each row; ``eigen2`` that of the eigenvalue."""
    powers = feature_powers(Xs, intercept)
    y2 = np.ones(Xs.shape[0]) if ys is None else ys**2
    return {
        "gram": gram_change2(Xs, intercept, powers),
        "xy": y2 * powers[0],
        "ysum": y2,
        "eigen": eigen2,
    }
