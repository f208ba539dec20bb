"""The private label mean: what an estimator releases when n epsilon is too
small to learn slopes (doc/mechanisms/index.rst, "Falling back to the mean").

Below about 100 units of ``n_samples * epsilon`` per coefficient, the slope
estimates of the package's mechanisms buy little (mostly under 5% of the
mean predictor's error on the utility benchmark) while the mechanisms' own
intercepts are noisy: their residual-based sensitivity
is 2 (a label in [-1, 1] against a prediction in [-1, 1]) where the label
sum's is 1, and they spend part of the budget on the slopes. There the
estimators (with an intercept and an epsilon budget) release the label mean
alone, by the analytic Gaussian mechanism with the whole budget: slopes 0,
intercept ``(sum y + sigma N(0, 1)) / n`` with n public. A row's loss is
that of the Gaussian mechanism at ratio ``|y_i| / sigma``, exact and the
same in both directions. The switch is a function of public quantities
(n, d, epsilon) only.
"""

import numpy as np

from ._accounting import gaussian_epsilon, gaussian_noise_scale
from ._law import GaussianLaw

# n epsilon per coefficient (the d slopes and the intercept) at or below which
# the label mean is released alone (AdaSSP, whose intercept is the label sum's
# and whose slopes are less noisy, uses its own rate). Measured on the utility
# benchmark (5 splits): at 40, statsmodels' "fair" (labels of variance
# 1.5e-3, n epsilon = 509, d = 8) was 1.13-1.40 times the mean predictor's
# error, 1.06 with the private mean; the cells it gives up (n epsilon per
# coefficient 40-100) were 0.94-1.02, but for random projection on diabetes
# at epsilon 3 (0.84, now 1.003).
MEAN_ONLY_RATE = 100.0


def mean_only_size(epsilon, n_features, rate=MEAN_ONLY_RATE):
    """The largest sample size whose fit releases the label mean alone."""
    return int(np.floor(rate * (n_features + 1) / epsilon))


def _label_sum(start, Xs, ys):
    return ys.sum()


class PrivateMean:
    """The label sum of the scaled data plus N(0, sigma^2), sigma from the
    analytic Gaussian mechanism for sensitivity 1 at (epsilon, delta).

    Holds the exact sum (a non-private statistic, like the mechanisms'
    ridge): per-row functions take it to the workers as O(1) state.
    """

    def __init__(self, epsilon, delta, data):
        self.dp = (float(epsilon), float(delta))
        self.noise_scale = gaussian_noise_scale(epsilon, delta)
        self.n_samples, self.n_coef = data.n_samples, data.n_features
        self.label_sum = float(data.reduce(_label_sum))

    def release(self, rng, size=None):
        """Draw(s) of the released coefficients (scaled): slopes 0, intercept
        the noisy mean."""
        noise = rng.standard_normal(1 if size is None else size)
        theta = np.zeros((noise.size, self.n_coef))
        theta[:, -1] = (self.label_sum + self.noise_scale * noise) / self.n_samples
        return theta[0] if size is None else theta

    def statistics(self, Xs, ys, add=False):
        """Squared change of the label sum by each row (the worst, 1, when
        ``ys`` is None): the one block of :meth:`law`."""
        return _label_change2(Xs, ys)

    def law(self, **public):
        """The release law of the noisy mean, for a published report: one
        Gaussian block, the label sum (``public``: the quantities every
        :class:`~sklearn_pdp._law.ReleaseLaw` holds)."""
        return MeanLaw(noise_scale={"ysum": self.noise_scale},
                       worst_ratio=1.0 / self.noise_scale, **public)

    def epsilon(self, Xs, ys):
        """Exact loss of each row, removed or added (the same)."""
        ratio = np.sqrt(self.statistics(Xs, ys)["ysum"]) / self.noise_scale
        # the worst row costs exactly the budget: the search's tolerance must not add
        return np.minimum(gaussian_epsilon(self.dp[1], ratio), self.dp[0])


def _label_change2(Xs, ys):
    return {"ysum": np.ones(Xs.shape[0]) if ys is None else ys**2}


class MeanLaw(GaussianLaw):
    """The law of the noisy label mean: its loss is a public function of the
    label, so a published report needs no Gram matrix (``needs_gram``)."""

    needs_gram = False

    def published_statistics(self, published, Xs, ys):
        return _label_change2(Xs, ys)
