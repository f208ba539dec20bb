"""Random projection's estimates from a released sketch
(:doc:`/mechanisms/random_projection`): the intercept from the label mean, the
slopes from the sketch at a shrunk ridge, and the paper's noise scale."""

import numpy as np
from scipy import linalg

from ...utils._rows import squared_norms
from .._signal import risk_ridge, signal_ridge


# Standard deviations of the noise's chi-square by which the sketch's cross
# term must exceed its noise before slopes are fitted (see solve_sketch).
# Negative: the noise's own ridge bounds what noisy slopes cost (the
# measurements: "The model" in the mechanism's page).
_SIGNAL_MARGIN = -0.5


# ... and before the noise's ridge is taken off the slopes (de-biased):
# AdaSSP's margin, as nothing else then bounds what noisy slopes cost.
_DEBIAS_MARGIN = 1.5


# Standard deviations of the estimated prediction risk by which the slopes
# must beat none (risk_ridge).
_RISK_MARGIN = 1.5


# Probability that the Wishart lower bound on the data's smallest scatter
# eigenvalue fails (the floor of the de-biased ridge, _noise_ridge).
_WISHART_BETA = 0.1


def label_mean_intercept(sketch, coef, n_samples, s2, label_mean, label_variance):
    """Post-processing: the intercept of the sketch's slopes at the released
    label mean, ``label_mean - x_bar . slopes`` with the sketch's feature
    means ``x_bar`` (as :func:`solve_sketch` reads them), where its noise
    variance is below that of the sketch's own intercept.

    The sketch's means are the regressions of its columns on the constant
    one: given that column ``a``, a combination ``w`` of them has variance
    ``w^T Sigma_c w / ||a||^2`` (``Sigma_c`` Sigma's blocks given the
    constant, estimated by the sketch's centred scatter over ``k - 1``).
    The sketch's intercept is ``w = (-slopes, 1)``, the released one has
    ``w = (-slopes, 0)`` plus ``label_variance``. A public rule of the
    sketch and of the released mean: the losses do not depend on it.

    Returns
    -------
    coef : ndarray
        The coefficients, the intercept last, replaced where chosen.
    centred : bool
        Whether the intercept is the released label mean's.
    """
    k, d = sketch.shape[0], sketch.shape[1] - 2
    gram = sketch.T @ sketch
    if k < 2 or not gram[d, d] > 0:
        return coef, False
    keep = np.r_[:d, d + 1]
    g = gram[d, keep] / gram[d, d]
    centred = gram[np.ix_(keep, keep)] - gram[d, d] * np.outer(g, g)
    factor = (n_samples + s2) / n_samples
    scale = factor**2 / ((k - 1) * gram[d, d])
    w = np.append(-coef[:d], 1.0)
    own = scale * (w @ centred @ w)
    features = scale * (w[:d] @ centred[:d, :d] @ w[:d])
    if not label_variance + features < own:
        return coef, False
    out = np.array(coef, dtype=np.float64)
    out[-1] = label_mean - factor * (g[:d] @ coef[:d])
    return out, True


def solve_sketch(sketch, s2, n_samples, fit_intercept, debias=True):
    """Ridge regression on the released sketch (post-processing).

    The sketch's normal equations estimate ``k Sigma`` (k sketch rows),
    whose noise ``s2`` acts as a ridge on every coefficient. With an
    intercept the constant column's ``Sigma`` entry ``n + s^2`` is public,
    so the regressions of the other columns on it (their sums over
    ``n + s^2``) are rescaled to the means exactly: the intercept is not
    shrunk towards 0, and with slopes 0 it is the private label mean.
    The slopes get the James-Stein ridge that the data's centred cross
    term (the sketch's less the noise's share of the means) supports
    against its noise (:func:`~sklearn_pdp.mechanisms._signal.signal_ridge`;
    inf, the label mean alone, where it shows no signal) or the noise's
    ridge if larger; with ``debias``, where the cross term clears
    ``_DEBIAS_MARGIN``, the noise's ``s2`` is taken off the slopes' scatter
    instead (errors in variables) and the ridge is the larger of the
    James-Stein ridge at that margin and the floor of :func:`_noise_ridge`;
    with ``debias`` it is then raised to the least whose slopes surely
    predict better than none (:func:`~sklearn_pdp.mechanisms._signal.risk_ridge`,
    ``_RISK_MARGIN``), inf where none does.
    Fewer sketch rows than columns, or a sketch too ill-conditioned for a
    Cholesky solve, give the minimum-norm least squares on the sketch.

    Returns
    -------
    coef : ndarray of shape (sketch.shape[1] - 1,)
    signal_ridge : float
        The ridge on the slopes chosen from the sketch, per sketch row
        (``signal_ridge_``): on the de-biased scatter with ``debias``, on
        top of the noise's otherwise.
    """
    k, p = sketch.shape[0], sketch.shape[1] - 1
    if k > p:  # else no residual is left to measure the noise by
        try:
            return _shrunk_solve(sketch.T @ sketch, k, s2, n_samples, fit_intercept, debias)
        except linalg.LinAlgError:
            pass
    return linalg.lstsq(sketch[:, :p], sketch[:, p], check_finite=False)[0], 0.0


def _shrunk_solve(gram, k, s2, n_samples, fit_intercept, debias):
    """:func:`solve_sketch` from the sketch's Gram matrix ``gram`` of
    ``[Z y]`` (constant column last in Z)."""
    d = gram.shape[0] - 1 - fit_intercept
    # the centred sketch's rows: k - 1 with an intercept (the paper's
    # variant keeps its model as published, with k)
    m = k - fit_intercept if debias else k
    centred = corrected = gram
    mean_noise = 0.0
    if fit_intercept:
        # Schur complement on the constant column: the centred scatter
        # and cross term of the sketch, of k - 1 rows N(0, Sigma_{.|c})
        keep = np.r_[:d, d + 1]
        g = gram[d, keep] / gram[d, d]
        centred = gram[np.ix_(keep, keep)] - gram[d, d] * np.outer(g, g)
        # Sigma's centred blocks use the public n, not n + s^2
        shift = m * s2 * (n_samples + s2) / n_samples
        corrected = centred - shift * np.outer(g, g)
        # the correction's noise per coordinate: the columns' regressions on
        # the constant one have variances Sigma_{.|c} / gram[d, d]
        spread = (g[d] ** 2 * np.trace(centred[:d, :d]) + (g[:d] @ g[:d]) * centred[d, d]) / d
        mean_noise = shift**2 * spread / ((k - 1) * gram[d, d])
    scatter, cross = centred[:d, :d], centred[:d, d]
    chol = linalg.cho_factor(scatter, check_finite=False)
    # Given the sketch's features, its labels are theirs times Sigma's
    # coefficients plus independent noise of variance sigma_e^2 per row,
    # so the cross term's noise has covariance sigma_e^2 scatter
    residual = centred[d, d] - cross @ linalg.cho_solve(chol, cross, check_finite=False)
    sigma_e2 = max(residual, 0.0) / (k - d - fit_intercept)
    noise = sigma_e2 * np.trace(scatter) / d
    # the signal is in the data's cross term, the sketch's less the
    # noise's share of the means (off-centre labels and features give the
    # sketch's a part that is no signal)
    cross = corrected[:d, d]
    noise += mean_noise
    # the data's scatter is the sketch's less the noise's m s^2 I
    mean_eigen = max(np.trace(corrected[:d, :d]) / d - m * s2, 0.0)
    ridge = float(signal_ridge(cross, noise, noise, mean_eigen, _SIGNAL_MARGIN))
    # the noise's own ridge, unless the signal is clearly above the noise:
    # then the James-Stein ridge at that margin and the noise floor
    clear = cross @ cross - noise * (d + _DEBIAS_MARGIN * np.sqrt(2.0 * d))
    if debias and clear > 0:
        signal = cross @ cross - noise * (d + _SIGNAL_MARGIN * np.sqrt(2.0 * d))
        ridge = max(ridge * signal / clear, m * _noise_ridge(corrected[:d, :d] / m, s2, m, d))
    else:
        ridge = max(ridge, m * s2)
    if debias and np.isfinite(ridge):
        # only as much of the slopes as surely predicts better than none
        noise_cov = sigma_e2 * scatter + mean_noise * np.eye(d)
        ridge = risk_ridge(corrected[:d, :d] - m * s2 * np.eye(d), cross, noise_cov,
                           ridge, _RISK_MARGIN)
    if np.isinf(ridge):
        beta = np.zeros(d)
    else:
        system = corrected[:d, :d] + (ridge - m * s2) * np.eye(d)
        beta = linalg.cho_solve(linalg.cho_factor(system, check_finite=False),
                                corrected[:d, d], check_finite=False)
    if fit_intercept:
        beta = np.append(beta, (n_samples + s2) / n_samples * (g[d] - g[:d] @ beta))
    return beta, ridge / m - (0.0 if debias else s2)


def _noise_ridge(scatter, s2, dof, d):
    """The ridge kept on the de-biased scatter ``scatter - s2 I``
    (``scatter``: the sketch's estimate of the data's scatter plus
    ``s2 I``, from ``dof`` rows; :doc:`/mechanisms/random_projection`):
    AdaSSP's rule, the fluctuation of the sketch's smallest eigenvalue
    less a lower bound on the data's that holds except with probability
    ``_WISHART_BETA`` (Gordon's bound on the Wishart factor), between 0 and
    the noise's whole ``s2``."""
    low = linalg.eigvalsh(scatter, subset_by_index=[0, 0], check_finite=False)[0]
    upper = (1.0 + np.sqrt(d / dof) + np.sqrt(2.0 * np.log(1.0 / _WISHART_BETA) / dof)) ** 2
    return float(np.clip(s2 - (2.0 / upper - 1.0) * low, 0.0, s2))


def _label_quadratic(quad, Xs, ys):
    """``quad(z)`` of the rows ``z = [x, y]``; with ``ys`` None the worst
    label: a quadratic form is convex in the label, so an end of [-1, 1]."""
    if ys is not None:
        return quad(_LabelledRows(Xs, ys))
    return np.maximum(*(quad(_LabelledRows(Xs, np.full(Xs.shape[0], v))) for v in (-1.0, 1.0)))


class _LabelledRows:
    """The rows z = [x, y] of scaled rows ``Xs`` and labels ``ys``, for
    products ``Z @ A`` without stacking the columns (no copy of the rows)."""

    def __init__(self, Xs, ys):
        self.Xs, self.ys = Xs, ys

    def __matmul__(self, A):
        """``Z @ A`` for A of shape (p + 1, k)."""
        out = self.Xs @ A[:-1]
        # the labels' row of A (of Sigma's whitener: its last entry alone)
        cols = np.flatnonzero(A[-1])
        out[:, cols] += np.multiply.outer(self.ys, A[-1, cols])
        return out

    def squared_norms(self):
        return squared_norms(self.Xs) + self.ys**2


def _labelled_gram(start, Xs, ys):
    """Z^T Z of Z = [Xs ys]."""
    XtX, Xty = Xs.gram(ys)
    # not ys @ ys: right after the Gram's threaded BLAS calls that dot was
    # sometimes far slower than einsum
    yy = np.einsum("i,i->", ys, ys)
    return np.block([[XtX, Xty[:, None]], [Xty[None, :], yy]])


def _column_max_squares(start, Xs, ys):
    """The largest square in each column of the scaled rows."""
    return np.square(Xs).max(axis=0)


def paper_noise_scale(epsilon, n_components, col_sq, col_max_sq):
    """sigma_RP of the paper's rule (13), with f(X) over columns (erratum E9).

    sigma_RP^2 = (n' / (2^(2 epsilon) - 1) - f(X)^2)_+ with
    f(X)^2 = min_j (sum_i X_ij^2 - max_i X_ij^2), from the column sums and
    maxima of the squared entries.
    """
    f_sq = np.min(col_sq - col_max_sq)
    return np.sqrt(max(n_components / np.expm1(2 * epsilon * np.log(2)) - f_sq, 0.0))
