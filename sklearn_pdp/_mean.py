"""The private label mean: what an estimator releases when n epsilon is too
small to learn slopes (:ref:`mean-fallback`).

Below about 100 units of ``n_samples * epsilon`` per coefficient, the slope
estimates of the package's mechanisms buy little (mostly under 5% of the
mean predictor's error on the utility benchmark) while the mechanisms' own
intercepts are noisy: their residual-based sensitivity
is 2 (a label in [-1, 1] against a prediction in [-1, 1]) where the label
sum's is 1, and they spend part of the budget on the slopes. There the
estimators (with an intercept and an epsilon budget) release the label mean
alone, by the Laplace mechanism with the whole budget: slopes 0, intercept
``(sum y + Lap(b)) / n`` with n public. For one number the Laplace noise
is far smaller than the Gaussian one for the same (epsilon, delta): its
variance 2 b^2 is 1/6.6 to 1/10.7 of the analytic Gaussian mechanism's at
delta = 1e-6 and epsilon 0.1 to 3. A row's loss is that of the Laplace
mechanism at ratio ``|y_i| / b``, exact, in closed form and the same in both
directions. The switch is a function of public quantities (n, d, epsilon)
only.
"""

import numpy as np

from ._accounting import (
    GAUSSIAN_DELTA_SHARE,
    compose_with_gaussian,
    gaussian_allowance,
    laplace_epsilon,
    laplace_noise_scale,
)
from ._release import Release
from ._profile import PrivacyProfile

# n epsilon per coefficient (slopes and intercept) up to which the label mean
# is released alone: see "Falling back to the mean" in the Mechanisms page.
MEAN_ONLY_RATE = 100.0


def mean_only_size(epsilon, n_features, rate=MEAN_ONLY_RATE):
    """The largest sample size whose fit releases the label mean alone."""
    return int(np.floor(rate * (n_features + 1) / epsilon))


def _label_sum(start, Xs, ys):
    return ys.sum()


class MeanRelease(Release):
    """The label sum of the scaled data plus Laplace noise of scale
    ``noise_scale``, for which a change of 1 costs exactly ``(epsilon,
    delta)``: slopes 0, intercept the noisy sum over the public size.

    Holds the exact sum (a statistic of the private data). A row's loss
    is a public function of its label, the same in both directions, so a
    published report needs no Gram matrix (``needs_gram``); a Gaussian
    publication composes by basic composition.
    """

    needs_gram = False
    _private = ("label_sum",)

    def __init__(self, *, label_sum, n_coef, epsilon, **common):
        super().__init__(alpha=np.inf, guarantee=(epsilon, common["delta"]), **common)
        self.noise_scale = noise_scale(epsilon, self.delta)
        self.budget = (float(epsilon), self.delta)
        self.label_sum = float(label_sum)
        self.n_coef = int(n_coef)

    @classmethod
    def from_budget(cls, epsilon, delta, data, *, scaler):
        # the features play no part: only the labels are read (and their clipping counted)
        label_sum = float(data.scan(_label_sum, rows=False))
        return cls(label_sum=label_sum, n_coef=data.n_features, epsilon=epsilon,
                   delta=delta, scaler=scaler, n_samples=data.n_samples)

    def draw(self, rng, size=None):
        noise = rng.laplace(scale=self.noise_scale, size=1 if size is None else size)
        theta = np.zeros((noise.size, self.n_coef))
        theta[:, -1] = (self.label_sum + noise) / self.n_samples
        return theta[0] if size is None else theta

    def statistics(self, Xs, ys, add=False):
        """Change of the label sum by each row (the worst, 1, when ``ys`` is None)."""
        return _label_change(Xs, ys)

    def losses(self, Xs, ys, add=False):
        ratio = self.statistics(Xs, ys)["ysum"] / self.noise_scale
        # the worst row costs exactly the budget: the upward rounding must not add
        return np.minimum(laplace_epsilon(self.delta, ratio), self.budget[0])

    def profile(self, losses, mechanism):
        """Laplace: each row's ratio ``|y| / b`` recovered from its
        ``losses`` (a function of the row's own label: usable by individual
        filters); a record moves the sum by at most 1 at any size."""
        worst = 1.0 / self.noise_scale
        return PrivacyProfile.from_losses(
            "laplace", losses, self.delta, guarantee=worst, n_samples=self.n_samples,
            mechanism=mechanism, own_record=True, step=lambda size: worst,
        )

    def _epsilon_at(self, ratio):
        def at(delta):
            return np.minimum(laplace_epsilon(delta, ratio), self._dp(delta))
        return at

    def _dp(self, delta):
        # the worst row's ratio is 1 / b; at the fit's delta exactly the budget
        return self.budget[0] if delta == self.budget[1] else laplace_epsilon(
            delta, 1.0 / self.noise_scale)

    def epsilon(self, delta, stats, gaussian_ratio=None):
        return compose_with_gaussian(self._epsilon_at(stats["ysum"] / self.noise_scale),
                                     delta, gaussian_ratio)

    def dp_epsilon(self, delta, gaussian_ratio=None):
        return float(compose_with_gaussian(self._dp, delta, gaussian_ratio))

    def gaussian_allowance(self, delta, target):
        alone = self.dp_epsilon(delta * (1.0 - GAUSSIAN_DELTA_SHARE))
        return gaussian_allowance(alone, delta, target)

    def published_statistics(self, published, Xs, ys):
        return _label_change(Xs, ys)


def noise_scale(epsilon, delta):
    """Scale of the Laplace noise on the label sum (sensitivity 1) at the
    budget; its variance ``2 b^2`` is the private mean's error times n^2."""
    return float(laplace_noise_scale(epsilon, delta))


def _label_change(Xs, ys):
    return {"ysum": np.ones(Xs.shape[0]) if ys is None else np.abs(ys)}
