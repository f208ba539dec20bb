"""Laplace mechanism (the label mean of the fallback, :ref:`mean-fallback`):
its tight loss in closed form and its calibration.

A row that moves a released scalar by ``c`` against Laplace noise of scale
``b`` has ratio t = c / b. With P = Lap(0, 1) and Q = Lap(t, 1) the loss
L = |x - t| - |x| is t for x <= 0, t - 2x on [0, t] and -t beyond, so for
0 <= eps < t

    delta_PQ(eps) = P(x < a) - e^eps Q(x < a),  a = (t - eps) / 2,
                  = 1 - e^-a / 2 - e^eps e^(a - t) / 2 = 1 - e^(-(t - eps) / 2),

and 0 for eps >= t; delta_QP is the same by symmetry. Hence the tight
eps(delta) = max(0, t + 2 log(1 - delta)): no search.
"""

import numpy as np

# The closed form is rounded upward by this relative margin (a few ulps of
# its two terms), so that no reported epsilon is below the exact one.
_ROUND_UP = 8 * np.finfo(float).eps


def laplace_delta(eps, ratio):
    """Tight delta(eps) of the Laplace mechanism at ``ratio`` (change over
    scale), both directions (they are equal)."""
    eps, ratio = np.broadcast_arrays(np.asarray(eps, float), np.asarray(ratio, float))
    return np.where(eps < ratio, -np.expm1(-0.5 * (ratio - eps)), 0.0)


def laplace_epsilon(delta, ratio):
    """Tight eps(delta) of the Laplace mechanism at ``ratio``: max(0, ratio +
    2 log(1 - delta)), rounded upward."""
    ratio = np.asarray(ratio, dtype=float)
    eps = ratio + 2.0 * np.log1p(-np.asarray(delta, dtype=float))
    return np.maximum(eps * (1.0 + _ROUND_UP), 0.0)


def laplace_noise_scale(epsilon, delta, sensitivity=1.0):
    """Scale ``b`` of Laplace noise for which a change of ``sensitivity``
    costs exactly ``epsilon`` at ``delta``: ratio epsilon - 2 log(1 - delta)."""
    return sensitivity / (epsilon - 2.0 * np.log1p(-delta))
