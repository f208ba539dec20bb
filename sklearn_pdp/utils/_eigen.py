"""The smallest eigenvalue of the scatter matrix, and its change by one row.

AdaSSP and AdaOPS both release lambda_min of the matrix that governs the
slopes: X^T X, or with an unpenalised intercept the centred scatter matrix
S = sum_i (x_i - x_bar)(x_i - x_bar)^T. Removing (adding) a row changes S by
a rank-one matrix, and lambda_min by the root of a secular equation: the
row's per-instance sensitivity, for all rows from one eigendecomposition.

For many rows the change is small against the gap g_2 = lambda_2 -
lambda_1 (at most ||x||^2 <= 1 against gaps that grow with n), and the
secular function is a few moments away from exact: with
R_k = sum_{j>1} c_j^2 / g_j^k (one matrix-vector product each),

    removing:  F(s) = c_1^2 / s + R_1 - s R_2 + s^2 R_3 - ...,
    adding:    F(s) = c_1^2 / s - R_1 - s R_2 - s^2 R_3 - ...,

for s < g_2. Term by term, the removing series alternates with decreasing
magnitudes, so its partial sums bound F from both sides; the adding series
has terms of one sign, and its tail after K terms is at most
s^K R_K / (g_2 - s). Each row's root is found on these bounds in O(1)
operations, and certified: an upper end with F_upper <= 1 and a lower end
with F_lower > 1 within the tolerance. Rows the series cannot certify
(s near or above g_2, a repeated smallest eigenvalue) take the iteration
on the exact sums.
"""

import numpy as np
from scipy import linalg

# The change in lambda_min is resolved to 1e-12 relative (or 1e-16 absolute),
# far finer than the noise that releases it; rows take 2 to ~15 steps.
_SECULAR_RTOL = 1e-12
_SECULAR_ATOL = 1e-16
_SECULAR_MAX_ITER = 200
# Moments of the series (module docstring), and its Newton steps per row.
_MOMENTS = 8
_SERIES_STEPS = 2
# rounding slack of a bound on F, per unit of its terms' magnitude
_ROUNDING = 8 * np.finfo(float).eps


def scatter_eigen(XtX, n_samples, intercept):
    """Eigendecomposition of the slopes' matrix, and the feature mean.

    ``XtX`` is the Gram matrix of the scaled rows, with the constant feature
    last when ``intercept``; the matrix is then the centred scatter
    ``S = X^T X - n x_bar x_bar^T`` (``n_samples`` the data set's own count).
    Returns ``((eigvals, eigvecs), x_bar)``, eigenvalues ascending.
    """
    d = XtX.shape[0] - int(intercept)
    mean = np.zeros(d)
    scatter = XtX[:d, :d]
    if intercept and n_samples > 0:
        mean = XtX[:d, d] / n_samples
        scatter = scatter - n_samples * np.outer(mean, mean)
    return linalg.eigh(scatter, check_finite=False), mean


def eigen_max_change(n_samples, intercept):
    """Largest change of lambda_min by one row over the domain (rows in the
    unit ball): 1, or ``4 (n - 1) / n`` for the centred scatter of n rows
    (both attained in one dimension)."""
    if not intercept:
        return 1.0
    return 4.0 * max(n_samples - 1, 0) / n_samples


def set_eigen_change(XtX, n_samples, lam, gram, sizes, *, intercept, add=False):
    """Change of lambda_min (``lam``, of the slopes' matrix of the Gram
    ``XtX`` of ``n_samples`` rows, as :func:`scatter_eigen`) when the rows
    of each group are removed together (added, ``add``): ``gram`` holds
    each group's ``sum z z^T`` (constant last with an intercept), ``sizes``
    its number of rows. One eigenvalue problem per group, the scatter
    centred with the data set's own count (empty: 0); rounded up by the
    rounding of the two eigenvalues."""
    d = XtX.shape[0] - int(intercept)
    sign = 1.0 if add else -1.0
    other = XtX[:d, :d] + sign * gram[:, :d, :d]
    if intercept:
        sums = XtX[:d, d] + sign * gram[:, :d, d]
        count = n_samples + sign * sizes
        with np.errstate(divide="ignore", invalid="ignore"):
            centre = np.where(count[:, None, None] > 0, sums[:, :, None] * sums[:, None, :]
                              / count[:, None, None], other)
        other = other - centre
    new = np.linalg.eigvalsh(other)[:, 0]
    scale = np.abs(other).sum(axis=(1, 2)) + np.abs(XtX[:d, :d]).sum()
    return np.abs(new - lam) + 4 * d * np.finfo(float).eps * scale


def eigen_change(eig, mean, n_samples, x=None, *, intercept, add=False, projected=None):
    """Exact change of lambda_min when the rows ``x`` (features only) are
    removed from (or added to, ``add``) the data set of ``n_samples`` rows
    with eigendecomposition ``eig`` and feature mean ``mean`` (0 without an
    intercept); ``projected`` may replace ``x`` by ``(x - mean) @ eig[1]``
    (a caller that needs the projection too computes it once)."""
    factor = 1.0
    if intercept:
        # the centred scatter changes by the rank one n/(n -/+ 1) v v^T,
        # v = x - x_bar (a single row's removal leaves the empty scatter 0)
        n = n_samples
        factor = n / (n + 1) if add else (n / (n - 1) if n > 1 else 0.0)
    if projected is None:
        projected = (x - mean) @ eig[1]
    return secular_change(eig[0], factor * np.square(projected), add=add)


def lambda_min_change(eigvals, eigvecs, Xs, *, add=False):
    """|lambda_min(A +/- x x^T) - lambda_min(A)| for every row x of ``Xs``,
    ``A = eigvecs @ diag(eigvals) @ eigvecs.T`` (:func:`secular_change`)."""
    return secular_change(eigvals, np.square(Xs @ eigvecs), add=add)


def secular_change(eigvals, C2, *, add=False):
    """|lambda_min(A +/- x x^T) - lambda_min(A)| for every row of ``C2``,
    the squares of ``c = eigvecs^T x`` of each row x.

    ``A = eigvecs @ diag(eigvals) @ eigvecs.T`` with ascending ``eigvals``
    (one eigendecomposition for all rows). With c = eigvecs^T x and the
    gaps g_j = lambda_j - lambda_1, the change s solves the rank-one secular
    equation (Golub 1973) F(s) = 1, with

        removing x:  F(s) = sum_j c_j^2 / (g_j + s),  s in [c_1^2, ||x||^2],
        adding x:    F(s) = sum_j c_j^2 / (s - g_j),  s in [0, min(g_2, c_1^2)],

    decreasing on the bracket (Weyl's bound ||x||^2, interlacing, and the
    sign of the terms beyond the first give the brackets). A vectorised
    iteration on the model c^2 / s + b of F (exact when the pole at 0 is the
    only one), safeguarded by bisection, keeps a bracket whose upper end has
    F <= 1 and returns it, so the change (the per-instance sensitivity of
    releasing lambda_min) is never underestimated.
    """
    gaps = eigvals - eigvals[0]
    # Evaluated at the gaps' ends, the terms beyond the first bound F:
    # removing, F(s) <= c_1^2 / s + R, adding, F(s) <= c_1^2 / s - R, with
    # R = sum_{j>1} c_j^2 / g_j, so c_1^2 / (1 -/+ R) is an upper end of the
    # root (removing, where R < 1), close to it when R is small: the start.
    with np.errstate(divide="ignore", invalid="ignore"):
        # R_1 .. R_K of the module docstring, one product (inf on a zero
        # gap), rows last: contiguous for the series
        powers = (1.0 / gaps[1:])[:, None] ** np.arange(1, _MOMENTS + 1)
        moments = powers.T @ C2[:, 1:].T
    rest = moments[0]  # inf or nan on a zero gap
    if add:
        lo, hi = np.zeros(C2.shape[0]), C2[:, 0].copy()
        if gaps.size > 1:
            hi = np.minimum(hi, gaps[1])
        bound = C2[:, 0] / (1.0 + rest)
    else:
        # (einsum sums the short rows faster than .sum(axis=1))
        lo, hi = C2[:, 0].copy(), np.einsum("ij->i", C2)
        with np.errstate(divide="ignore", invalid="ignore"):
            bound = np.where(rest < 1.0, C2[:, 0] / (1.0 - rest), np.inf)
    # widened by a relative 1e-12 against rounding in the bound itself
    bound = bound * (1.0 + 1e-12)
    tighter = bound < hi
    hi = np.where(tighter, bound, hi)
    active = np.flatnonzero(hi > lo)
    # (the old upper ends, Weyl's and g_2, can be poles or far off: not a start)
    s = np.where(tighter, hi, 0.5 * (lo + hi))
    if gaps.size > 1 and gaps[1] > 0 and active.size:
        active = _series_roots(C2[:, 0], moments, gaps[1], lo, hi, s, active, add)
    for _ in range(_SECULAR_MAX_ITER):
        if active.size == 0:
            break
        sa, la, ha = s[active], lo[active], hi[active]
        denom = sa[:, None] - gaps if add else gaps + sa[:, None]
        # 0/0 (a zero weight on a zero gap) is nan and counts as "not above"
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = C2[active] / denom
            value = terms.sum(axis=1)
            slope = (terms / denom).sum(axis=1)  # -F'(s)
            above = value > 1.0
            la = np.where(above, sa, la)
            ha = np.where(above, ha, sa)
            # Root of the model a/s + b that matches F and F' at s (the pole
            # at 0 dominates), aimed a little above so that the next point
            # is, most likely, a verified upper end
            tol = _SECULAR_RTOL * ha + _SECULAR_ATOL
            pole = slope * sa**2
            step = pole / (1.0 - value + pole / sa) - sa
            guess = sa + step + 0.5 * tol
        # (where F <= 1 the model's root is never above s: step <= 0)
        done = (ha - la <= tol) | (~above & (-step <= tol))
        bad = ~np.isfinite(guess) | (guess <= la) | (guess >= ha)
        guess = np.where(bad, 0.5 * (la + ha), guess)
        lo[active], hi[active], s[active] = la, ha, guess
        active = active[~done]
    # hi is an upper end at every step: a row still open after the last one
    # (never seen) would lose tightness, not validity
    return hi


def _moment_series(moments, t, slope=False):
    """P(t) = sum_k R_(k+1) t^k (and P'(t) if ``slope``) by Horner's scheme."""
    value = moments[-1].copy()
    deriv = np.zeros_like(t) if slope else None
    for m in moments[-2::-1]:
        if slope:
            deriv *= t
            deriv += value
        value *= t
        value += m
    return value, deriv


def _series(c1, moments, g2, s, add, bottom=None, top=None):
    """Bounds ``(lower, upper)`` on F(bottom) and F(top) (both s unless
    given, bottom <= s <= top) from the series (module docstring) at s <
    g_2, with a rounding slack; ``moments`` R_1 .. R_K, rows last.

    The terms beyond the pole, -P(s) adding and P(-s) removing with
    P(t) = sum_k R_(k+1) t^k, decrease in s: bounded at s, they are
    bounded at bottom from below and at top from above."""
    bottom = s if bottom is None else bottom
    top = s if top is None else top
    series, _ = _moment_series(moments, s if add else -s)
    last = np.abs(moments[-1]) * s ** (len(moments) - 1)  # |R_K| s^(K-1)
    if add:  # terms of one sign: the tail is at most s^K R_K / (g_2 - s)
        tail = last * s / (g2 - s)
        upper = -series
        lower = upper - tail
    else:  # alternating, decreasing: the partial sums bracket it
        tail = last
        lower = series  # an even number of terms ends on a negative one
        upper = lower + tail
    pole = c1 / bottom
    slack = _ROUNDING * (pole + np.abs(series) + tail)
    return pole + lower - slack, c1 / top + upper + slack


def _series_roots(c1, moments, g2, lo, hi, s, active, add):
    """Roots of the series model of F for the rows ``active``, certified
    where possible (``lo`` and ``hi`` updated in place); returns the rows
    left to the iteration on the exact sums."""
    if active.size < c1.size:
        c1, moments, x = c1[active], moments[:, active], s[active]
    else:  # all rows (the usual case): no gathers
        x = s.copy()
    sign = -1.0 if add else 1.0  # the terms beyond the pole: G(s) = sign P(-sign s)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # Newton on h(s) = s (1 - G(s)) - c_1^2, nearly linear where the pole
        # dominates: two steps suffice ("Smallest eigenvalue changes" in the
        # page on computing the exact losses)
        for _ in range(_SERIES_STEPS):
            value, deriv = _moment_series(moments, -sign * x, slope=True)
            rest = 1.0 - sign * value
            x = x - (x * rest - c1) / (rest + x * deriv)
        tol = _SECULAR_RTOL * x + _SECULAR_ATOL
        top, bottom = x + 0.5 * tol, x - 0.5 * tol
        # F decreasing: F(top) <= 1 makes top an upper end of the root, F(bottom)
        # > 1 makes bottom a lower one; both within the series' range s < g_2
        # (one evaluation of the series bounds F at both)
        lower, upper = _series(c1, moments, g2, x, add, bottom, top)
        ok = (top < g2) & (bottom > 0.0) & (upper <= 1.0) & (lower > 1.0)
    rows = active[ok]
    lo[rows], hi[rows] = bottom[ok], top[ok]
    return active[~ok]
