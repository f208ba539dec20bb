"""The ridge system H = X^T X + alpha P of scaled rows, factorised once.

What every mechanism's per-instance loss is computed from: the non-private
ridge solution, each row's leverage x^T H^{-1} x and residual, and their
leave-one-out and add-one forms (Sherman-Morrison). Not scikit-learn's
``Ridge`` estimator: a linear-algebra object on data already in the privacy
domain.
"""

import numpy as np
from scipy import linalg
from scipy.linalg import lapack

from ._rows import squared_norms

# Leverages computed through the Cholesky factor carry a relative error of
# about cond(H) * 2.2e-16: below this reciprocal condition number they would
# be meaningless, and so would the per-instance epsilons built on them.
_MIN_RCOND = 1e-10


def penalty(n_coef, intercept):
    """The ridge penalty matrix: the identity, without the intercept's entry."""
    P = np.eye(n_coef)
    if intercept:
        P[-1, -1] = 0.0
    return P



class RidgeSystem:
    """Non-private ridge solution on scaled data, kept for the privacy report.

    H = X^T X + alpha P = L L^T (Cholesky), theta_hat = H^{-1} X^T y, where P
    is the identity, or with ``intercept`` the identity without its last
    diagonal entry: the constant feature (the last column) is not penalised.
    ``Xty`` may be None when only the quadratic forms x^T H^{-1} x are
    needed (``coef`` is then None).
    A singular H, or one too ill-conditioned for accurate leverages
    (reciprocal condition number below 1e-10), is a ValueError naming alpha.
    With rows in the unit ball this cannot happen once alpha >= 1e-9 n d.

    The fitted estimators keep this object (``_ridge``): it holds non-private
    statistics, so publish ``public_model()`` or predictions, never the
    pickled estimator.
    """

    def __init__(self, XtX, Xty, alpha, intercept=False):
        H = XtX + alpha * penalty(XtX.shape[0], intercept)
        try:
            self.chol = linalg.cholesky(H, lower=True, check_finite=False)
            rcond, _ = lapack.dpocon(self.chol, np.abs(H).sum(axis=0).max(), uplo="L")
        except linalg.LinAlgError:
            rcond = 0.0
        if not rcond >= _MIN_RCOND:
            raise ValueError(
                "X^T X + alpha I is singular or too ill-conditioned for exact "
                "per-instance losses: this mechanism needs a larger alpha when "
                "the columns of X are (nearly) linearly dependent "
                f"(alpha={alpha})."
            )
        self.alpha = alpha
        self.coef = (
            None if Xty is None
            else linalg.cho_solve((self.chol, True), Xty, check_finite=False)
        )
        # L^{-T}: the rows of Xs @ L^{-T} are the whitened rows L^{-1} x, and
        # those of Xs @ L^{-T} L^{-1} the rows H^{-1} x: one GEMM per chunk
        # of rows (on which the scaling of the rows is folded) gives every
        # quadratic form, as accurately as triangular solves (both err by
        # about cond(H) ulp; measured against exact rational solves)
        self._whitener = np.ascontiguousarray(lapack.dtrtri(self.chol, lower=1)[0].T)
        self._inverse = self._whitener @ self._whitener.T

    def sample(self, rng, scale=1.0, size=None):
        """``scale`` times a draw from N(0, H^{-1}); ``size`` draws as rows."""
        d = self.chol.shape[0]
        z = rng.standard_normal(d if size is None else (d, size))
        draw = linalg.solve_triangular(
            self.chol, z, lower=True, trans="T", check_finite=False
        )
        return scale * (draw if size is None else draw.T)

    def row_statistics(self, Xs, ys=None, *, inverse_norm=False, norm=False,
                       inverse_rows=False):
        """Leverage x^T H^{-1} x and residual y - x^T theta_hat of the rows.

        With ``inverse_norm`` also ||H^{-1} x||^2, with ``inverse_rows`` also
        the vectors H^{-1} x themselves (key ``"inverse_rows"``, one row each),
        with ``norm`` also ||x||^2 (key ``"norm2"``). ``Xs``: an array or
        :class:`~sklearn_pdp.utils._rows.ScaledRows`; all the products come from
        one pass over it.
        """
        k, p = self._whitener.shape[1], self._inverse.shape[1]
        inverse_norm = inverse_norm or inverse_rows
        blocks = [self._whitener]
        if inverse_norm:
            blocks.append(self._inverse)
        if ys is not None:  # the fitted values x^T theta_hat
            blocks.append(self.coef[:, None])
        null = getattr(self, "_null", None)
        if null is not None:
            blocks.append(null)
        products = Xs @ np.hstack(blocks)
        W = products[:, :k]
        stats = {"leverage": np.einsum("ij,ij->i", W, W)}
        if null is not None:
            # off the span of the rows: x^T H^{-1} x grows without bound
            off = products[:, products.shape[1] - null.shape[1]:]
            stats["leverage"][np.einsum("ij,ij->i", off, off) > self._null_tol] = np.inf
        if inverse_norm:
            V = products[:, k: k + p]
            stats["inverse_norm2"] = np.einsum("ij,ij->i", V, V)
            if inverse_rows:
                stats["inverse_rows"] = V
        if ys is not None:
            stats["residual"] = ys - products[:, k + p * inverse_norm]
        if norm:
            stats["norm2"] = squared_norms(Xs)
        return stats

    def group_shifts(self, gram, cross, add=False):
        """``theta_hat(other) - theta_hat`` for each group of rows removed
        together (added, ``add``), from the groups' sums ``gram`` (``sum z
        z^T``, shape (n_groups, d, d)) and ``cross`` (``sum y z``): with
        ``g = cross - gram theta_hat`` (the rows' ``X_p^T e_p``), ``-(H -
        gram)^{-1} g`` or ``(H + gram)^{-1} g`` (Woodbury's rank-m change,
        one small solve per group: exact). A removal leaving a singular
        system (the group holds every row of an unpenalised direction) is a
        ``LinAlgError``."""
        g = cross - np.einsum("pij,j->pi", gram, self.coef)
        system = self.chol @ self.chol.T
        other = system + gram if add else system - gram
        return np.linalg.solve(other, (g if add else -g)[:, :, None])[:, :, 0]


def person_shifts(ridge, gram, cross, sizes, n_samples, intercept, add):
    """Each person's change of the unconstrained ridge solution of ``ridge``
    (:meth:`RidgeSystem.group_shifts`), one row each; ``inf`` where
    removing them leaves no row (of ``n_samples``) for an unpenalised
    ``intercept``, whose system is then singular."""
    empty = np.zeros(sizes.shape, dtype=bool) if add or not intercept else (
        sizes >= n_samples)
    out = np.full(cross.shape, np.inf)
    if not empty.all():
        out[~empty] = ridge.group_shifts(gram[~empty], cross[~empty], add=add)
    return out


class SpanRidgeSystem(RidgeSystem):
    """:class:`RidgeSystem` in the limits where H is singular, for leverages that
    no per-instance loss is computed from (a report's leverage column).

    ``alpha = inf`` (the slopes infinitely penalised: a release of the label
    mean alone or zero slopes) is the limit of x^T H^{-1} x as alpha grows:
    the ridge of the unpenalised coordinates alone (the intercept: 1/n for
    every row). A singular H (``alpha = 0`` on linearly dependent columns)
    is the limit as alpha falls to 0: x^T H^+ x (the hat value) for rows in
    the span of the training rows, ``inf`` for rows with a component off it
    larger than any training row can have (a training row's squared
    component along a null direction is at most that direction's
    eigenvalue, below the cut-off). ``coef`` is the minimum-norm solution.
    """

    def __init__(self, XtX, Xty, alpha, intercept=False):
        n_coef = XtX.shape[0]
        if np.isinf(alpha):
            free = penalty(n_coef, intercept).diagonal() == 0
            H = XtX[np.ix_(free, free)]
        else:
            free = np.ones(n_coef, dtype=bool)
            H = XtX + alpha * penalty(n_coef, intercept)
        # no free coefficient (an infinite ridge without intercept): nothing
        # to decompose (older LAPACK wrappers refuse an empty matrix)
        eigenvalues, vectors = (linalg.eigh(H, check_finite=False) if H.size
                                else (np.zeros(0), np.zeros((0, 0))))
        cut = max(eigenvalues.max(initial=0.0), 0.0) * H.shape[0] * np.finfo(float).eps
        keep = eigenvalues > cut
        self.alpha = alpha
        self._whitener = np.zeros((n_coef, keep.sum()))
        self._whitener[free] = vectors[:, keep] / np.sqrt(eigenvalues[keep])
        self._null = np.zeros((n_coef, (~keep).sum()))
        self._null[free] = vectors[:, ~keep]
        # twice the most a training row can have (its eigenvalues, and their rounding)
        self._null_tol = 2.0 * (~keep).sum() * cut
        if not self._null.shape[1]:
            self._null = None
        self._inverse = self._whitener @ self._whitener.T
        self.coef = None if Xty is None else self._inverse @ Xty


def leverage_ridge(XtX, Xty, alpha, intercept=False):
    """:class:`RidgeSystem` of H = X^T X + alpha P for leverages, or its limit
    (:class:`SpanRidgeSystem`) where alpha is infinite or H singular."""
    if np.isfinite(alpha):
        try:
            return RidgeSystem(XtX, Xty, alpha, intercept)
        except ValueError:
            pass
    return SpanRidgeSystem(XtX, Xty, alpha, intercept)


def leave_one_out(leverage, residual):
    """In-sample (mu', r') to the (mu, r) of the data set without the row.

    mu = mu'/(1 - mu'), r = r'/(1 - mu') (Sherman-Morrison); a row with
    mu' = 1 is the only support of its direction: infinite leverage.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        keep = 1.0 - leverage
        inf = keep <= 0
        mu = np.where(inf, np.inf, leverage / keep)
        r = np.where(inf, np.inf, residual / keep)
    return mu, r


def out_of_sample(stats):
    """In-sample equivalent of a target's statistics against the data without it.

    A target with leverage mu, residual r and ||H^{-1} x||^2 = w against the
    data without it has, in the data with it, mu' = mu/(1 + mu),
    r' = r/(1 + mu) and w' = w/(1 + mu)^2 (Sherman-Morrison): the statistics
    that :func:`leave_one_out` maps back to (mu, r, w). ``stats`` holds
    ``leverage`` and ``residual`` and optionally ``inverse_norm2`` and
    ``norm2`` (unchanged).
    """
    keep = 1.0 + stats["leverage"]
    out = dict(stats, leverage=stats["leverage"] / keep, residual=stats["residual"] / keep)
    if "inverse_norm2" in stats:
        out["inverse_norm2"] = stats["inverse_norm2"] / keep**2
    return out
