"""The public model: what a private fit releases, and nothing else."""

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import validate_data

from ._data import DomainScaler


class PublicLinearModel(RegressorMixin, BaseEstimator):
    """A released linear model with the guarantee it was released under.

    Made by ``public_model()`` of a fitted private estimator. It holds the
    released coefficients and intercept, the feature names and the
    ``(dp_epsilon_, dp_delta_)`` guarantee, and no other state: unlike the
    fitted estimator (which keeps non-private statistics for its privacy
    report), it is safe to pickle, publish and hand out.

    Parameters
    ----------
    coef : array-like of shape (n_features,)
        Released coefficients.
    intercept : float
        Released intercept.
    dp_epsilon, dp_delta : float
        The data-independent guarantee of the release.
    mechanism : str
        Name of the estimator that released it.
    feature_names : array-like of str, default=None
        Names of the features seen during fit, if any.
    bounds_X : tuple (lower, upper), default=None
        Released per-feature bounds: rows are clipped to them before
        predicting (post-processing).
    data_norm : float, default=None
        Released bound on the row norms: longer rows are scaled down to it
        before predicting. At most one of ``bounds_X`` and ``data_norm``.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
    dp_epsilon_, dp_delta_ : float
    mechanism_ : str
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Only when the estimator saw string feature names.

    Examples
    --------
    >>> import pickle
    >>> import numpy as np
    >>> from sklearn_pdp import OutputPerturbationRegressor
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-1, 1, size=(2000, 2))
    >>> y = X @ [0.5, -0.2] + 0.1 * rng.randn(2000)
    >>> reg = OutputPerturbationRegressor(epsilon=1.0, data_norm=1.5, y_bound=1.0,
    ...                                   random_state=0).fit(X, y)
    >>> public = reg.public_model(decimals=4)
    >>> public.dp_epsilon_
    1.0
    >>> bool(np.allclose(public.predict(X), reg.predict(X), atol=1e-3))
    True
    >>> len(pickle.dumps(public)) < 2000
    True
    """

    def __init__(self, coef, intercept, dp_epsilon, dp_delta, mechanism, feature_names=None,
                 bounds_X=None, data_norm=None):
        self.coef = coef
        self.intercept = intercept
        self.dp_epsilon = dp_epsilon
        self.dp_delta = dp_delta
        self.mechanism = mechanism
        self.feature_names = feature_names
        self.bounds_X = bounds_X
        self.data_norm = data_norm

    # The release is given, not fitted: the fitted attributes read the
    # parameters, so that there is one copy of each number.
    coef_ = property(lambda self: np.asarray(self.coef, dtype=np.float64))
    intercept_ = property(lambda self: float(self.intercept))
    dp_epsilon_ = property(lambda self: float(self.dp_epsilon))
    dp_delta_ = property(lambda self: float(self.dp_delta))
    mechanism_ = property(lambda self: str(self.mechanism))
    n_features_in_ = property(lambda self: self.coef_.shape[0])

    @property
    def feature_names_in_(self):
        if self.feature_names is None:
            raise AttributeError("The released model saw no feature names.")
        return np.asarray(self.feature_names, dtype=object)

    def predict(self, X):
        """``X @ coef_ + intercept_``, rows first clipped to the released bounds.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples (checked against the number and names of the features).

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        X = validate_data(self, X, reset=False, dtype=np.float64)
        if self.bounds_X is not None or self.data_norm is not None:
            bounds = None if self.bounds_X is None else tuple(
                np.asarray(b, dtype=np.float64) for b in self.bounds_X)
            X = DomainScaler(self.data_norm, 1.0, False, bounds).clip(X)
        return X @ self.coef_ + self.intercept_

    def __sklearn_is_fitted__(self):
        return True

    def __repr__(self):
        return (
            f"PublicLinearModel(mechanism={self.mechanism_!r}, "
            f"n_features_in_={self.n_features_in_}, dp_epsilon_={self.dp_epsilon_:.4g}, "
            f"dp_delta_={self.dp_delta_:.3g})"
        )


def public_model(coef, intercept, guarantee, mechanism, feature_names, decimals, clip=None):
    """A :class:`PublicLinearModel`, with coefficients rounded to ``decimals``.

    Rounding is post-processing: it cannot weaken the guarantee, and it
    discards the low-order bits that floating-point attacks on the noise
    samplers read (README, "Noise source and floating point"). ``clip``: the
    :class:`~sklearn_pdp._data.DomainScaler` of released bounds to clip rows
    to, or None.
    """
    bounds = {}
    if clip is not None:
        bounds = ({"data_norm": float(clip.data_norm)} if clip.bounds_X is None else
                  {"bounds_X": tuple(b.tolist() for b in clip.bounds_X)})
    if decimals is not None:
        coef, intercept = np.round(coef, decimals), np.round(intercept, decimals)
    return PublicLinearModel(
        np.array(coef, dtype=np.float64), float(intercept), *map(float, guarantee),
        mechanism, None if feature_names is None else list(feature_names), **bounds,
    )
