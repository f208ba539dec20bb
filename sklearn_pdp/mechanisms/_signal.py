"""The James-Stein ridge of noisy normal equations: shrink the slopes to 0
where the cross term shows no signal above its noise.

AdaSSP (:doc:`/mechanisms/adassp`) and random projection
(:doc:`/mechanisms/random_projection`) both fit slopes from normal equations
``scatter beta = cross`` built from released noisy quantities; where the
labels hardly depend on the features those slopes are mostly noise and cost
more than predicting the label mean. Random projection also bounds the
slopes' estimated prediction risk (:func:`risk_ridge`): a chance pass of
the signal test can cost more than the slopes could gain. The ridges are
post-processing of the release: they cost no privacy.
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


def risk_change(scatter, cross, noise_cov, alphas):
    """Unbiased estimate of how much the ridge slopes' prediction risk
    exceeds that of slopes 0, and its standard deviation (Stein's unbiased
    risk estimate; :doc:`/mechanisms/random_projection`).

    The slopes are ``M cross``, ``M = (scatter + alpha I)^{-1}``, with
    ``cross`` of mean ``scatter beta`` and Gaussian noise of covariance
    ``noise_cov``; the risk is weighed by the scatter, the prediction
    error's ``(b - beta)^T scatter (b - beta)`` less ``beta^T scatter
    beta``, whose mean is that of ``cross^T (M A M - 2 M) cross + 2 tr(M
    V)`` (``A`` the scatter, ``V`` the noise covariance). A negative part
    of an estimated scatter is clipped in the weight, which can only raise
    the estimate.

    Parameters
    ----------
    scatter : ndarray of shape (d, d)
        The data's scatter as estimated; ``scatter + alpha I`` must be
        positive definite for every ``alpha``.
    cross : ndarray of shape (d,)
        The noisy cross term.
    noise_cov : ndarray of shape (d, d)
        Covariance of the cross term's noise.
    alphas : ndarray of shape (g,)
        The ridges.

    Returns
    -------
    change, deviation : ndarray of shape (g,)
        The estimate per ridge, and its standard deviation, whose part due
        to the signal is estimated from ``cross`` (without bias, then
        clipped at 0: never below the deviation without signal).
    """
    eig, vec = np.linalg.eigh(scatter)
    b = vec.T @ cross
    V = vec.T @ noise_cov @ vec
    inv = 1.0 / (eig + np.asarray(alphas, dtype=float)[:, None])
    # the quadratic form is diagonal in the scatter's eigenvectors
    k = np.maximum(eig, 0.0) * inv**2 - 2.0 * inv
    change = k @ (b * b) + 2.0 * inv @ np.diag(V)
    # its variance, 2 tr((K V)^2) + 4 mu^T K V K mu, the signal's part
    # estimated without bias from the cross term, then clipped at 0
    kvk = np.einsum("gi,gj,ij->g", k, k, V * V)
    kb = k * b
    signal = np.maximum(np.einsum("gi,ij,gj->g", kb, V, kb) - kvk, 0.0)
    return change, np.sqrt(2.0 * kvk + 4.0 * signal)


def risk_ridge(scatter, cross, noise_cov, ridge, margin, decades=8, per_decade=8):
    """The least ridge, at least ``ridge``, whose slopes surely predict
    better than none: their estimated risk change (:func:`risk_change`)
    below 0 by ``margin`` standard deviations. A weak signal whose slopes
    cost more in noise than they predict is shrunk further, or dropped.

    Parameters
    ----------
    scatter, cross, noise_cov
        As for :func:`risk_change`.
    ridge : float
        The smallest ridge considered (that of the other rules).
    margin : float
        Standard deviations of the risk estimate by which the slopes must
        be better than none.
    decades, per_decade : int
        The ridges tried: ``ridge`` and ``ridge`` plus the scale (the larger
        of ``ridge`` and the scatter's mean eigenvalue) times ``10^(j /
        per_decade)``, from 3 decades below it to ``decades`` above.

    Returns
    -------
    alpha : float
        The ridge; ``inf`` where no ridge's slopes are surely better than
        none (the label mean alone).
    """
    scale = max(ridge, np.maximum(np.trace(scatter) / scatter.shape[0], 0.0),
                np.finfo(float).tiny)
    steps = np.arange(-3 * per_decade, decades * per_decade + 1) / per_decade
    alphas = np.append(ridge, ridge + scale * 10.0**steps)
    change, deviation = risk_change(scatter, cross, noise_cov, alphas)
    sure = np.flatnonzero(change + margin * deviation < 0)
    return float(alphas[sure[0]]) if sure.size else np.inf
