"""The James-Stein ridge of noisy normal equations: shrink the slopes to 0
where the cross term shows no signal above its noise.

AdaSSP (:doc:`/mechanisms/adassp`) and random projection
(:doc:`/mechanisms/random_projection`) both fit slopes from normal equations
``scatter beta = cross`` built from released noisy quantities; where the
labels hardly depend on the features those slopes are mostly noise and cost
more than predicting the label mean. The ridge is post-processing of the
release: it costs no privacy.
"""

import numpy as np


def signal_ridge(cross, noise_var, coef_noise_var, mean_eigen, margin):
    """The ridge that the signal in a noisy cross term supports (James-Stein).

    With an isotropic scatter of mean eigenvalue ``s``, slopes ``beta`` and
    noise of variance ``v`` per coordinate of the normal equations, the
    prediction risk of the ridge solution ``(scatter + alpha I)^{-1} cross``
    is smallest at ``alpha = v d / (s ||beta||^2)``. ``s^2 ||beta||^2`` is
    estimated by ``||cross||^2`` less its noise, ``d`` times the cross term's
    noise variance per coordinate, taken ``margin`` standard deviations of
    the noise's chi-square (``sqrt(2 d)`` of them) higher.

    Parameters
    ----------
    cross : ndarray of shape (..., d)
        The noisy cross term(s); leading axes are independent systems.
    noise_var : float or ndarray of shape (...)
        Variance of the cross term's noise per coordinate.
    coef_noise_var : float or ndarray of shape (...)
        ``v``: variance per coordinate of the noise of the normal equations
        at the slopes (the cross term's, plus the scatter's times the slopes).
    mean_eigen : float or ndarray of shape (...)
        ``s``: the mean eigenvalue of the scatter (of the data, not of its noise).
    margin : float
        Standard deviations by which the cross term must exceed its noise
        before slopes are fitted at all (negative: less than its mean).

    Returns
    -------
    alpha : ndarray of shape (...)
        The ridge; ``inf`` where no signal is left (the label mean alone).
    """
    d = cross.shape[-1]
    signal = np.einsum("...i,...i->...", cross, cross) - noise_var * (d + margin * np.sqrt(2 * d))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(signal > 0, mean_eigen * coef_noise_var * d / signal, np.inf)
