"""The leverage column of :class:`~sklearn_pdp.PDPReport`: the scaled
design's ridge system and each training row's hat value and residual."""

from numbers import Real

import numpy as np

from ..utils._ridge_system import leverage_ridge


def design_ridge(est, data):
    """H = X^T X + alpha P of the scaled training rows, for the leverage scores.

    The mechanism's own factorisation when it keeps one (``design_ridge``);
    otherwise (e.g. AdaSSP, random projection, whose losses take no
    leverage) built here with its ridge strength, if any: the fitted
    ``alpha_``, a numeric ``alpha`` parameter, or 0. A fit that released the
    label mean alone has the slopes infinitely penalised: every row's
    leverage is then 1/n, that of the mean. Where H is singular (linearly
    dependent columns without a ridge) the leverage is its limit as the
    ridge falls to 0 (:class:`~sklearn_pdp.utils._ridge_system.SpanRidgeSystem`).
    """
    ridge = est.design_ridge()
    if ridge is not None:
        return ridge
    alpha = getattr(est, "alpha_", est.get_params().get("alpha", 0.0))
    alpha = alpha if isinstance(alpha, Real) and not np.isnan(alpha) else 0.0
    if getattr(est, "mean_only_", False):
        alpha = np.inf
    return leverage_ridge(*data.gram(), alpha, est.fit_intercept)


def leverage_residual(ridge):
    def rows(Xs, ys):
        stats = ridge.row_statistics(Xs, ys)
        return np.column_stack((stats["leverage"], stats["residual"]))

    return rows
