"""Shared data handling of the private regressors.

Data flows through here once: validate, scale every row into the unit ball and
every label into [-1, 1] (on a copy, chunk by chunk), accumulate the sufficient
statistics, and, after the mechanism has drawn its noise, make one more pass
over the rows for the per-instance statistics (leverage, residual).  No n x d
temporary is ever created: memory beyond X itself is O(d^2 + chunk).
"""

import secrets
import warnings
from numbers import Real

import numpy as np
from scipy import linalg
from scipy.linalg import blas, lapack
from sklearn import get_config
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
from sklearn.utils import check_random_state, gen_batches
from sklearn.utils._param_validation import Interval
from sklearn.utils import check_array
from sklearn.utils.validation import (
    check_consistent_length,
    check_is_fitted,
    column_or_1d,
    validate_data,
)

from ._config import get_config as _get_pdp_config
from .exceptions import PrivacyLeakWarning

# The constant feature and the scaled features share the unit ball equally:
# x_aug = [x / data_norm, 1] / sqrt(2), so ||x_aug|| <= 1 still holds.
_AUGMENT_WEIGHT = 1.0 / np.sqrt(2.0)
# Leverages computed through the Cholesky factor carry a relative error of
# about cond(H) * 2.2e-16: below this reciprocal condition number they would
# be meaningless, and so would the per-instance epsilons built on them.
_MIN_RCOND = 1e-10
# Upper limit (MiB) of the scratch memory of one chunk; scikit-learn's
# ``working_memory`` setting applies when it is smaller.
_CHUNK_MIB = 64


class DomainScaler:
    """Maps data into the domain of the privacy analysis, and models back.

    Rows are divided by ``data_norm`` and, if still longer than 1, scaled down
    to norm 1; labels are divided by ``y_bound`` and clipped to [-1, 1]; with
    ``fit_intercept`` a constant feature is appended and the row is weighted by
    1/sqrt(2).  Clipping happens on copies.  A mechanism that releases a
    private label mean may set ``y_offset`` (in scaled units): labels are then
    centred by it before clipping, and it is added back to the intercept.
    """

    def __init__(self, data_norm, y_bound, fit_intercept, y_offset=0.0):
        self.data_norm = data_norm
        self.y_bound = y_bound
        self.fit_intercept = fit_intercept
        self.y_offset = y_offset

    def scale(self, X, y=None):
        """Scaled (and clipped) copy of the rows ``X`` and labels ``y``."""
        d = X.shape[1]
        Xs = np.empty((X.shape[0], d + int(self.fit_intercept)))
        self._unit_ball(X, Xs[:, :d])
        if self.fit_intercept:
            Xs[:, d] = 1.0
            Xs *= _AUGMENT_WEIGHT
        if y is None:
            return Xs
        return Xs, self.scale_labels(y)

    def scale_labels(self, y, centre=True):
        """Scaled labels in [-1, 1], centred by ``y_offset`` unless ``centre=False``."""
        with np.errstate(over="ignore"):  # an overflow to +-inf clips to +-1
            ys = np.clip(y / self.y_bound, -1.0, 1.0)
        if not centre or self.y_offset == 0.0:
            return ys
        # clip to the declared bound first, so that labels beyond it act
        # exactly like labels at it; centred labels must stay in [-1, 1] too
        return np.clip(ys - self.y_offset, -1.0, 1.0)

    def clip(self, X):
        """Copy of ``X`` with the rows longer than ``data_norm`` scaled down to it.

        The rows as the mechanism sees them, in the units of the data: a model
        evaluated on them treats every row like a training row. Rows inside
        the domain are copied unchanged.
        """
        unit = np.empty(X.shape)
        outside = self._unit_ball(X, unit)
        clipped = np.array(X, dtype=np.float64)
        clipped[outside] = unit[outside] * self.data_norm
        return clipped

    def _unit_ball(self, X, out):
        """``X / data_norm`` into ``out``, rows longer than 1 scaled to norm 1.

        Returns the mask of the rows that were scaled down.
        """
        # A row with an entry beyond data_norm is too long and only its
        # direction survives: dividing it by that entry first keeps every
        # entry in [-1, 1], so squaring cannot overflow even near 1e308.
        peak = np.abs(X).max(axis=1, initial=0.0)
        np.divide(X, np.maximum(peak, self.data_norm)[:, None], out=out)
        norms = np.sqrt(np.einsum("ij,ij->i", out, out))
        out /= np.maximum(norms, 1.0)[:, None]
        return (peak > self.data_norm) | (norms > 1.0)

    def unscale_coef(self, theta):
        """``coef_`` and ``intercept_`` in the user's units for the scaled model ``theta``."""
        offset = self.y_offset * self.y_bound
        if not self.fit_intercept:
            return theta * (self.y_bound / self.data_norm), offset
        coef = theta[:-1] * (self.y_bound * _AUGMENT_WEIGHT / self.data_norm)
        return coef, float(theta[-1] * self.y_bound * _AUGMENT_WEIGHT + offset)


class ScaledData:
    """The training data as the privacy analysis sees it, produced in chunks.

    The scaled rows are never stored whole: every pass scales one chunk at a time.
    """

    def __init__(self, X, y, scaler):
        self.X = X
        self.y = y
        self.scaler = scaler
        self.n_samples = X.shape[0]
        self.n_features = X.shape[1] + int(scaler.fit_intercept)

    def chunks(self):
        """Yield ``(rows, Xs, ys)`` for consecutive row slices."""
        # scaled copy, whitened copy, and their products
        row_bytes = 8 * 4 * self.n_features
        working_memory = min(get_config()["working_memory"], _CHUNK_MIB)
        size = max(int(working_memory * 2**20 // row_bytes), 1)
        for rows in gen_batches(self.n_samples, size):
            yield (rows, *self.scaler.scale(self.X[rows], self.y[rows]))

    def map_rows(self, func):
        """``func(Xs, ys)`` of every chunk, one value per row, in one pass.

        Per-row results are finished chunk by chunk (for example the exact
        epsilons), so no length-n intermediate is kept.
        """
        out = np.empty(self.n_samples)
        for rows, Xs, ys in self.chunks():
            out[rows] = func(Xs, ys)
        return out

    def gram(self):
        """Sufficient statistics X^T X and X^T y of the scaled data."""
        XtX = np.zeros((self.n_features, self.n_features), order="F")
        Xty = np.zeros(self.n_features)
        for _, Xs, ys in self.chunks():
            # syrk on the Fortran-ordered view Xs.T: no copy, half the flops of
            # a general product (and much faster than numpy's Xs.T @ Xs); it
            # accumulates the upper triangle only
            XtX = blas.dsyrk(1.0, Xs.T, beta=1.0, c=XtX, overwrite_c=True)
            Xty += Xs.T @ ys
        return np.triu(XtX) + np.triu(XtX, 1).T, Xty


class Ridge:
    """Non-private ridge solution on scaled data, kept for the privacy report.

    H = X^T X + alpha I = L L^T (Cholesky), theta_hat = H^{-1} X^T y.
    ``Xty`` may be None when only the quadratic forms x^T H^{-1} x are
    needed (``coef`` is then None).
    A singular H, or one too ill-conditioned for accurate leverages
    (reciprocal condition number below 1e-10), is a ValueError naming alpha.
    With rows in the unit ball this cannot happen once alpha >= 1e-9 n d.

    The fitted estimators keep this object (``_ridge``): it holds non-private
    statistics, so publish ``coef_``/``intercept_`` or predictions, never the
    pickled estimator.
    """

    def __init__(self, XtX, Xty, alpha):
        H = XtX + alpha * np.eye(XtX.shape[0])
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

    def whiten(self, Xs):
        """L^{-1} x for every row of ``Xs`` (columns of the result)."""
        return linalg.solve_triangular(self.chol, Xs.T, lower=True, check_finite=False)

    def sample(self, rng, scale=1.0, size=None):
        """``scale`` times a draw from N(0, H^{-1}); ``size`` draws as rows."""
        d = self.chol.shape[0]
        z = rng.standard_normal(d if size is None else (d, size))
        draw = linalg.solve_triangular(
            self.chol, z, lower=True, trans="T", check_finite=False
        )
        return scale * (draw if size is None else draw.T)

    def row_statistics(self, Xs, ys=None, *, inverse_norm=False, norm=False):
        """Leverage x^T H^{-1} x and residual y - x^T theta_hat of the rows.

        With ``inverse_norm`` also ||H^{-1} x||^2 (one more triangular solve),
        with ``norm`` also ||x||^2 (key ``"norm2"``).
        """
        W = self.whiten(Xs)
        stats = {"leverage": np.einsum("ij,ij->j", W, W)}
        if ys is not None:
            stats["residual"] = ys - Xs @ self.coef
        if inverse_norm:
            V = linalg.solve_triangular(
                self.chol, W, lower=True, trans="T", check_finite=False
            )
            stats["inverse_norm2"] = np.einsum("ij,ij->j", V, V)
        if norm:
            stats["norm2"] = np.einsum("ij,ij->i", Xs, Xs)
        return stats

    def training_statistics(self, data, **kwargs):
        """:meth:`row_statistics` of every training row, one chunked pass."""
        out = {}
        for rows, Xs, ys in data.chunks():
            for key, value in self.row_statistics(Xs, ys, **kwargs).items():
                out.setdefault(key, np.empty(data.n_samples))[rows] = value
        return out


def row_norms(X):
    """Euclidean norms of the rows of ``X``, without overflow near 1e308."""
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    big = ~np.isfinite(norms)
    if np.any(big):  # squares overflowed: rescale those rows by their peak
        peak = np.abs(X[big]).max(axis=1)
        norms[big] = peak * np.linalg.norm(X[big] / peak[:, None], axis=1)
    return norms


def noise_generator(random_state):
    """The random generator from which a fit draws all of its noise.

    ``random_state`` is used as scikit-learn uses it (``check_random_state``):
    an int seeds a new ``RandomState`` (reproducible fits), an instance is used
    as is, and None means numpy's global ``RandomState``, seeded from the
    operating system at import but predictable after ``np.random.seed``.
    Under ``sklearn_pdp.set_config(secure_noise=True)``, None instead gives a
    fresh ``RandomState`` seeded with 256 bits from :mod:`secrets`.
    The noise is sampled in float64, so the reported epsilons are those of
    the ideal real-valued mechanism (floating-point caveats, Mironov 2012:
    see the README section "Noise source and floating point").
    """
    if random_state is None and _get_pdp_config()["secure_noise"]:
        seed = np.random.SeedSequence(secrets.randbits(256))
        return np.random.RandomState(np.random.MT19937(seed))
    return check_random_state(random_state)


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


class PrivateRegressorMixin(RegressorMixin, BaseEstimator):
    """Base class of the package's private linear regressors.

    Subclasses implement ``_fit_scaled(data, rng)``: it receives the
    :class:`ScaledData`, sets the privacy attributes, and returns the released
    coefficient vector in scaled coordinates.
    """

    _parameter_constraints: dict = {
        "data_norm": [Interval(Real, 0, None, closed="neither"), None],
        "y_bound": [Interval(Real, 0, None, closed="neither"), None],
        "fit_intercept": ["boolean"],
        "random_state": ["random_state"],
    }

    def _resolve_bounds(self, X, y):
        """The declared bounds, or the data's own with a PrivacyLeakWarning."""
        bounds = {}
        for name, observed in (
            ("data_norm", lambda: row_norms(X).max(initial=0)),
            ("y_bound", lambda: np.abs(y).max(initial=0)),
        ):
            value = getattr(self, name)
            if value is None:
                warnings.warn(
                    f"{name} was not given, so it is read from the data. This "
                    "leaks information about the data and the reported privacy "
                    f"guarantees do not cover it. Declare {name} to avoid this.",
                    PrivacyLeakWarning,
                    stacklevel=4,
                )
                value = float(observed()) or 1.0
            bounds[name] = float(value)
        data_norm, y_bound = bounds["data_norm"], bounds["y_bound"]
        # coef_ = theta * y_bound / data_norm must be representable.
        ratio = y_bound / data_norm
        if not (np.isfinite(data_norm) and np.finfo(float).tiny <= ratio < np.inf):
            raise ValueError(
                "y_bound / data_norm must be a finite, normal float64 number "
                f"(got data_norm={data_norm!r}, y_bound={y_bound!r}): the "
                "coefficients in the units of the data would overflow or underflow."
            )
        return data_norm, y_bound

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit the private model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data. Rows longer than ``data_norm`` are scaled down to
            it (on a copy) before the mechanism sees them.
        y : array-like of shape (n_samples,)
            Targets. Values beyond ``y_bound`` are clipped (on a copy).

        Returns
        -------
        self : object
            Fitted estimator.
        """
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True)
        # y_numeric converts only object arrays: strings and complex end here
        if y.dtype.kind not in "biuf":
            raise ValueError(f"y must contain real numbers, got dtype {y.dtype}.")
        y = y.astype(np.float64, copy=False)
        self.data_norm_, self.y_bound_ = self._resolve_bounds(X, y)
        self._scaler = DomainScaler(self.data_norm_, self.y_bound_, self.fit_intercept)
        data = ScaledData(X, y, self._scaler)
        theta = self._fit_scaled(data, noise_generator(self.random_state))
        self.coef_, self.intercept_ = self._scaler.unscale_coef(theta)
        return self

    def predict(self, X):
        """Predict with the released linear model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            ``X @ coef_ + intercept_``.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return X @ self.coef_ + self.intercept_

    def pdp_epsilon(self, X, y=None):
        """Exact per-instance epsilon, at ``delta``, of adding new targets.

        For each row of ``X`` (with label ``y``), the epsilon that this
        release would have cost that person had they been added to the
        training set. Targets are scaled and clipped like training rows.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Feature vectors of the targets.
        y : array-like of shape (n_samples,), default=None
            Their labels. If None, the worst label in ``[-y_bound_, y_bound_]``
            is used for each row, which needs only ``X``.

        Returns
        -------
        epsilon : ndarray of shape (n_samples,)
            ``inf`` where no finite epsilon exists.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        if y is None:
            return self._target_epsilon(self._scaler.scale(X), None)
        y = column_or_1d(check_array(y, ensure_2d=False, dtype=np.float64, input_name="y"))
        check_consistent_length(X, y)
        return self._target_epsilon(*self._scaler.scale(X, y))
