"""The public model: what a private fit releases, and nothing else."""

import json
from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.preprocessing import OneHotEncoder
from sklearn.utils.validation import check_array, validate_data

from ..domain._scaler import DomainScaler
from ..domain._tighten import TIGHTEN_SHARE
from ..domain._schema import Schema, read_json, write_json


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
    bounds : dict, default=None
        The declared bounds the model was fitted under: ``data_norm``,
        ``bounds_X`` (a pair of per-feature lists) and ``y_bound``; None
        where a bound was not declared (it was read from the private data,
        and is not written here).
    params : dict, default=None
        The estimator's other parameters (``epsilon``, ``delta``, ``alpha``,
        ...), without ``random_state`` (a seed would make the noise, and so
        the private statistics, recoverable) and ``n_jobs``; a ``schema``
        as its :meth:`~sklearn_pdp.Schema.to_dict`.
    version : str, default=None
        Version of sklearn-pdp that made the release.
    clip : bool, default=False
        Whether :meth:`predict` clips rows to ``bounds`` first, as the
        estimator did: True where the bounds were themselves released
        (``tighten_bounds``), so that they are public. A ``data_norm`` read
        from the data is not written, so rows are not clipped to it (the
        estimator's own ``predict`` does clip them to it).
    encoding : dict, default=None
        How the features are made from the columns of the raw table (the
        command line sets it for a CSV): ``columns``, the raw feature columns
        in order; ``categories``, for each text column its categories in
        order, each one-hot encoded but the first (``drop="first"``: the
        intercept carries it), numeric columns used as they are; ``drop``,
        ``"first"``; ``read_from_data``, the text columns whose categories
        were not declared but read from the private data (the feature names
        show them too; the command line warns). With it, :meth:`predict`
        also takes a DataFrame with the raw columns.

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

    As a JSON file, read back to the same predictions, bit for bit:

    >>> text = public.to_json()
    >>> loaded = PublicLinearModel.from_json(text)
    >>> bool(np.array_equal(loaded.predict(X), public.predict(X)))
    True
    >>> loaded.bounds["y_bound"]
    1.0
    """

    def __init__(self, coef, intercept, dp_epsilon, dp_delta, mechanism, feature_names=None,
                 bounds=None, params=None, version=None, clip=False, encoding=None):
        self.coef = coef
        self.intercept = intercept
        self.dp_epsilon = dp_epsilon
        self.dp_delta = dp_delta
        self.mechanism = mechanism
        self.feature_names = feature_names
        self.bounds = bounds
        self.params = params
        self.version = version
        self.clip = clip
        self.encoding = encoding

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
        X : array-like of shape (n_samples, n_features) or DataFrame
            Samples (checked against the number and names of the features);
            with an ``encoding`` or a ``schema`` among the parameters, also a
            DataFrame holding the raw columns (other columns, such as the
            label, are left out), encoded as the release was; a table of
            named columns that lacks one of an encoding's columns (and is not
            the encoded features) is refused, naming it.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        columns = list(getattr(X, "columns", []))
        schema = self._schema()
        missing = [c for c in (self.encoding or {}).get("columns", []) if c not in columns]
        if self.encoding is not None and not missing:
            X, names = encode_table(X, self.encoding)
            if names != [str(name) for name in self.feature_names_in_]:
                raise ValueError(f"the encoding gives the features {names}, not the "
                                 f"released {list(self.feature_names_in_)}.")
            X = check_array(X, dtype=np.float64)
        elif schema is not None and all(c in columns for c in schema.columns):
            X = schema.encoder().fit_transform(X)
        else:
            if missing and _raw_table(columns, self.feature_names):
                raise ValueError(
                    f"X has no column {', '.join(map(repr, missing))}: the released model "
                    f"takes the raw columns {', '.join(self.encoding['columns'])} (text as "
                    "text), or the encoded features of feature_names_in_.")
            X = validate_data(self, X, reset=False, dtype=np.float64)
        if self.clip:
            bounds_X = self.bounds.get("bounds_X")
            X = DomainScaler(
                self.bounds.get("data_norm"), 1.0, False,
                None if bounds_X is None else tuple(
                    np.asarray(b, dtype=np.float64) for b in bounds_X),
                layout=None if schema is None else schema.feature_layout(),
            ).clip(X)
        return X @ self.coef_ + self.intercept_

    def to_json(self, path=None):
        """The released model as JSON: all that is needed to predict and to
        state its guarantee.

        Every float is written as the shortest decimal that reads back to the
        same float64 (Python's ``repr``), so :meth:`from_json` predicts
        exactly as this model does; ``inf`` (no guarantee) is written as the
        string ``"inf"``.

        Parameters
        ----------
        path : str or path-like, default=None
            File to write. None returns the text instead.

        Returns
        -------
        text : str or None
            The JSON text when ``path`` is None.
        """
        from .. import __version__

        document = {
            "format": FORMAT,
            "estimator": self.mechanism_,
            "sklearn_pdp_version": self.version or __version__,
            "dp_epsilon": self.dp_epsilon_,
            "dp_delta": self.dp_delta_,
            "feature_names": (None if self.feature_names is None
                              else [str(name) for name in self.feature_names]),
            "coef": self.coef_.tolist(),
            "intercept": self.intercept_,
            "bounds": self.bounds,
            "params": self.params,
            "clip": bool(self.clip),
            "encoding": self.encoding,
        }
        return write_json(json.dumps(_plain(document), indent=2, allow_nan=False), path)

    @classmethod
    def from_json(cls, source):
        """A model written by :meth:`to_json` (or ``--save-model``).

        Parameters
        ----------
        source : str or path-like
            The JSON text, or the path of a file holding it.

        Returns
        -------
        model : PublicLinearModel
        """
        document = read_json(source)
        if not isinstance(document, dict) or document.get("format") != FORMAT:
            raise ValueError(
                f"not a sklearn-pdp public model (its 'format' is not {FORMAT!r}).")
        return cls(
            np.asarray(document["coef"], dtype=np.float64), float(document["intercept"]),
            float(document["dp_epsilon"]), float(document["dp_delta"]),
            document["estimator"], document.get("feature_names"),
            document.get("bounds"), document.get("params"),
            document.get("sklearn_pdp_version"), bool(document.get("clip", False)),
            document.get("encoding"),
        )

    def _schema(self):
        """The :class:`~sklearn_pdp.Schema` the model was fitted with, or None."""
        document = (self.params or {}).get("schema")
        return None if document is None else Schema.from_dict(document)

    def __sklearn_is_fitted__(self):
        return True

    def __repr__(self):
        return (
            f"PublicLinearModel(mechanism={self.mechanism_!r}, "
            f"n_features_in_={self.n_features_in_}, dp_epsilon_={self.dp_epsilon_:.4g}, "
            f"dp_delta_={self.dp_delta_:.3g})"
        )


FORMAT = "sklearn-pdp public linear model 1"
# never in a published model: a seed makes the noise recoverable
_PRIVATE_PARAMS = ("random_state", "n_jobs")


def one_hot_encoder(categories):
    """The encoder of one text column with declared categories: one column
    per category but the first (the intercept carries it)."""
    # declared categories: the encoder learns nothing from the rows
    return OneHotEncoder(categories=[list(categories)], drop="first",
                         sparse_output=False, dtype=np.float64)


def encode_table(table, encoding):
    """The encoded features of a table (a DataFrame, or a mapping of column
    name to values) and their names, as ``encoding`` of
    :class:`PublicLinearModel` says."""
    blocks, names = [], []
    for column in encoding["columns"]:
        categories = encoding["categories"].get(column)
        if categories is None:
            try:
                blocks.append(np.asarray(table[column], dtype=np.float64)[:, None])
            except (TypeError, ValueError) as exc:
                raise ValueError(f"column {column!r} must be numeric: {exc}") from None
            names.append(column)
            continue
        # the categories of a CSV are its texts: a numeric column read by
        # pandas compares as text
        values = np.asarray(table[column]).astype(str).astype(object)[:, None]
        encoder = one_hot_encoder(categories).fit(
            np.asarray(categories, dtype=object)[:, None])
        try:
            blocks.append(encoder.transform(values))
        except ValueError as exc:
            raise ValueError(f"column {column!r}: {exc} (its declared categories: "
                             f"{', '.join(categories)})") from None
        names += [str(name) for name in encoder.get_feature_names_out([column])]
    return np.hstack(blocks), names


def _raw_table(columns, feature_names):
    """Whether a table's columns are named and not the encoded features: a
    raw table that lacks some of the encoding's columns."""
    named = bool(columns) and all(isinstance(c, str) for c in columns)
    return named and not set(map(str, feature_names or ())) <= set(columns)


def _plain(value):
    """``value`` with numpy scalars and arrays as Python floats and lists,
    non-finite floats as strings, and anything else as its repr."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, Real):
        value = float(value) if not isinstance(value, (int, np.integer)) else int(value)
        return value if np.isfinite(value) else repr(value)
    return repr(value)


def public_model(coef, intercept, guarantee, mechanism, feature_names, decimals,
                 bounds=None, params=None, clip=False):
    """A :class:`PublicLinearModel`, with coefficients rounded to ``decimals``.

    Rounding is post-processing: it cannot weaken the guarantee, and it
    discards the low-order bits that floating-point attacks on the noise
    samplers read (README, "Noise source and floating point"). ``params``
    loses its private entries (``random_state``, ``n_jobs``); ``clip``: whether predictions clip rows to ``bounds``
    (released bounds: a ``tighten_share`` of None becomes the share they spent).
    """
    from .. import __version__

    if decimals is not None:
        coef, intercept = np.round(coef, decimals), np.round(intercept, decimals)
    if params is not None:  # the bounds have their own entry
        params = {k: v.to_dict() if isinstance(v, Schema) else v for k, v in params.items()
                  if k not in _PRIVATE_PARAMS and (bounds is None or k not in bounds)}
        if clip and params.get("tighten_share", 0) is None:
            # the share spent on the bounds, not the default's None
            params["tighten_share"] = TIGHTEN_SHARE
    return PublicLinearModel(
        np.array(coef, dtype=np.float64), float(intercept), *map(float, guarantee),
        mechanism, None if feature_names is None else list(feature_names),
        None if bounds is None else _plain(bounds),
        None if params is None else _plain(params), __version__, clip,
    )
