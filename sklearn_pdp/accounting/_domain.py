"""The privacy domain: rows in the unit ball, labels in [-1, 1].

The largest statistics any person can have against any data set of the
domain; every data-independent guarantee is a mechanism's loss there.
"""

import numpy as np


def domain_bounds(n_samples, alpha, intercept, min_samples=None, lower=0.0):
    """Largest leverage, |residual| and ||H^{-1} x|| of any person.

    For any data set of ``n_samples`` rows in the domain (rows in the unit
    ball, labels in [-1, 1]), the data set without one of its rows, and any
    target ``x`` (with its constant feature when ``intercept``) and label,
    with H = X^T X + alpha P and theta_hat on the smaller data set:

    - without intercept: mu <= 1/alpha, |r| <= 1 + sqrt(n)/(2 sqrt(alpha)),
      ||H^{-1} x|| <= 1/alpha, ||x||^2 <= 1;
    - with an unpenalised intercept (m >= n - 1 rows, x_bar their mean,
      A = sum (x_i - x_bar)(x_i - x_bar)^T + alpha I): by the block inverse,
      mu = 1/m + (x - x_bar)^T A^{-1} (x - x_bar) <= 1/m + 4/alpha;
      r = (y - y_bar) - (x - x_bar)^T beta with ||beta|| <= sqrt(n)/(2 sqrt(alpha)),
      so |r| <= 2 + sqrt(n / alpha);
      H^{-1} x = [A^{-1}(x - x_bar), 1/m - x_bar^T A^{-1} (x - x_bar)], so
      ||H^{-1} x||^2 <= 4/alpha^2 + (1/m + 2/alpha)^2; ||x||^2 <= 2.

    With ``min_samples``, the bounds hold for every data set of
    ``min_samples`` to ``n_samples`` rows (the 1/m terms at the smallest
    size, the residual at the largest).

    With ``lower`` = L > 0, for the smaller data sets whose slopes' matrix
    (X^T X, or the centred scatter) has lambda_min >= L: alpha becomes
    L + alpha in the leverage and in ||H^{-1} x||, and sqrt(n)/(2 sqrt(alpha))
    in the residual becomes sqrt(n) g, g = sqrt(L) / (L + alpha) where
    L >= alpha, else 1/(2 sqrt(alpha)) (the largest s / (s^2 + alpha) over
    singular values s >= sqrt(L)).

    Returns a dict with keys ``leverage``, ``residual``, ``inverse_norm``
    and ``norm2``; ``inf`` where alpha = 0, and with an intercept where
    n = 1 (the data set without the row has no intercept direction at all).
    """
    alpha = np.float64(alpha)
    if lower > 0:
        return _conditional_bounds(n_samples, alpha, intercept, min_samples, np.float64(lower))
    with np.errstate(divide="ignore"):
        if not intercept:
            return {
                "leverage": 1.0 / alpha,
                "residual": 1.0 + np.sqrt(n_samples) / (2.0 * np.sqrt(alpha)),
                "inverse_norm": 1.0 / alpha,
                "norm2": 1.0,
            }
        m = np.float64((n_samples if min_samples is None else min_samples) - 1)
        return {
            "leverage": 1.0 / m + 4.0 / alpha,
            "residual": 2.0 + np.sqrt(n_samples / alpha),
            "inverse_norm": np.hypot(2.0 / alpha, 1.0 / m + 2.0 / alpha),
            "norm2": 2.0,
        }


def _conditional_bounds(n_samples, alpha, intercept, min_samples, lower):
    """:func:`domain_bounds` given lambda_min >= ``lower`` > 0."""
    total = lower + alpha
    with np.errstate(divide="ignore"):
        g = np.where(lower >= alpha, np.sqrt(lower) / total, 0.5 / np.sqrt(alpha))
    spread = np.sqrt(n_samples) * g
    if not intercept:
        return {"leverage": 1.0 / total, "residual": 1.0 + spread,
                "inverse_norm": 1.0 / total, "norm2": 1.0}
    m = np.float64((n_samples if min_samples is None else min_samples) - 1)
    with np.errstate(divide="ignore"):
        return {"leverage": 1.0 / m + 4.0 / total, "residual": 2.0 + 2.0 * spread,
                "inverse_norm": np.hypot(2.0 / total, 1.0 / m + 2.0 / total), "norm2": 2.0}


# Largest noise variance the automatic ridges let a release add to a prediction
# one unit from the centre: "Labels that vary little" in the Mechanisms page.
PREDICTION_NOISE = 1e-4


def quiet_ridge(noise, alpha, max_doublings=10, target=PREDICTION_NOISE):
    """The smallest ``alpha * 2^k`` (k = 0, ..., ``max_doublings``) at which
    ``noise(alpha)``, the noise variance a release adds to a prediction at
    a row one unit from the centre (falling with the ridge), is at most
    ``target`` (:data:`PREDICTION_NOISE`); the largest if none is. Public
    quantities only.
    """
    for _ in range(max_doublings):
        if noise(alpha) <= target:
            break
        alpha *= 2.0
    return alpha
