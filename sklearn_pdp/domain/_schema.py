"""A declared schema: the public domain of a table, declared once.

:class:`Schema` names the numeric columns with their ranges, the
categorical columns with their categories, the label with its range and
the person key. It makes the declared encoder (:class:`SchemaEncoder`) and
the layout of the encoded columns (:class:`FeatureLayout`) that an
estimator given ``schema=`` scales with: each numeric column to [-1, 1],
each categorical column's indicator block as it is, the row divided by the
square root of the number of columns (:doc:`/preprocessing`, "Categorical
columns as one share").
"""

import json
import os
from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted


class Schema:
    """The declared public domain of a table.

    What a value of each column can be, declared from the columns' meaning
    (never read from the private rows): the ranges of the numeric columns,
    the categories of the categorical ones (the first one the reference
    level, carried by the intercept), the label's name and range, and
    optionally the column that names the person of each row. A schema is
    immutable; :meth:`encoder` makes the transformer that encodes a table
    as the estimators expect it, and an estimator given ``schema=`` takes
    its bounds from it and gives each categorical column one share of the
    row norm, whatever its number of categories.

    Parameters
    ----------
    numeric : dict of str to (float, float), default=None
        Each numeric column's range ``(low, high)``, ``low < high``, finite.
    categorical : dict of str to list, default=None
        Each categorical column's categories, at least two, distinct; the
        first is the reference level (no indicator).
    label : str, default=None
        Name of the label column.
    label_range : (float, float), default=None
        Range of the label; None leaves it to the estimator's ``y_bound``.
    person_key : str, default=None
        Name of the column that identifies the person of each row.
    order : list of str, default=None
        Order of the columns in the encoded features (numeric and
        categorical names, each once); None puts the numeric columns first,
        then the categorical ones, each in declaration order.

    Attributes
    ----------
    columns : tuple of str
        The feature columns in encoded order.
    n_shares : int
        Number of shares of the row norm: numeric plus categorical columns.

    Examples
    --------
    >>> from sklearn_pdp import Schema
    >>> schema = Schema(numeric={"age": (18, 90), "hours": (0, 80)},
    ...                 categorical={"sector": ["private", "public", "self"]},
    ...                 label="wage", label_range=(0, 200))
    >>> schema.n_shares
    3
    >>> list(schema.encoder().get_feature_names_out())
    ['age', 'hours', 'sector_public', 'sector_self']
    >>> Schema.from_json(schema.to_json()) == schema
    True
    """

    def __init__(self, numeric=None, categorical=None, label=None, label_range=None,
                 person_key=None, order=None):
        numeric = {str(k): _range(k, v) for k, v in dict(numeric or {}).items()}
        categorical = {str(k): _categories(k, v) for k, v in dict(categorical or {}).items()}
        both = set(numeric) & set(categorical)
        if both:
            raise ValueError(f"column {sorted(both)[0]!r} is declared both numeric and "
                             "categorical.")
        if not numeric and not categorical:
            raise ValueError("a schema declares at least one numeric or categorical column.")
        default = list(numeric) + list(categorical)
        order = default if order is None else [str(c) for c in order]
        if sorted(order) != sorted(default):
            raise ValueError(f"order must list every feature column once: {default}, "
                             f"got {order}.")
        for name, role in ((label, "label"), (person_key, "person_key")):
            if name is not None and str(name) in default:
                raise ValueError(f"column {name!r} is both a feature and the {role}.")
        if label_range is not None:
            label_range = _range(label, label_range, "label")
        set_ = object.__setattr__
        set_(self, "numeric", numeric)
        set_(self, "categorical", categorical)
        set_(self, "label", None if label is None else str(label))
        set_(self, "label_range", label_range)
        set_(self, "person_key", None if person_key is None else str(person_key))
        set_(self, "columns", tuple(order))

    def __setattr__(self, name, value):
        raise AttributeError("a Schema is immutable: make a new one.")

    @property
    def n_shares(self):
        return len(self.columns)

    def feature_names(self):
        """Names of the encoded features: numeric columns as they are, an
        indicator ``column_category`` for each category but the reference."""
        names = []
        for column in self.columns:
            if column in self.numeric:
                names.append(column)
            else:
                names += [f"{column}_{c}" for c in self.categorical[column][1:]]
        return names

    def feature_layout(self):
        """The structure of the encoded features, for the estimators.

        Returns
        -------
        layout : FeatureLayout
        """
        lower, upper, numeric, blocks = [], [], [], []
        for column in self.columns:
            if column in self.numeric:
                numeric.append(len(lower))
                lower.append(self.numeric[column][0]), upper.append(self.numeric[column][1])
            else:
                k = len(self.categorical[column]) - 1
                blocks.append(np.arange(len(lower), len(lower) + k))
                lower += [0.0] * k
                upper += [1.0] * k
        return FeatureLayout(np.array(lower), np.array(upper), np.array(numeric, dtype=int),
                             tuple(blocks), self.feature_names())

    def with_bounds(self, bounds_X=None, y_bound=None):
        """A copy with the numeric ranges (and the label's) replaced by those
        of ``bounds_X``, a pair of per-encoded-feature arrays (indicators'
        entries ignored), and ``y_bound``: a schema at released bounds."""
        numeric = dict(self.numeric)
        if bounds_X is not None:
            layout = self.feature_layout()
            for column, j in zip([c for c in self.columns if c in numeric], layout.numeric):
                numeric[column] = (float(bounds_X[0][j]), float(bounds_X[1][j]))
        label_range = self.label_range
        if y_bound is not None:
            label_range = (-y_bound, y_bound) if np.ndim(y_bound) == 0 else y_bound
        return Schema(numeric, self.categorical, self.label, label_range, self.person_key,
                      list(self.columns))

    def encoder(self):
        """The declared encoder: a scikit-learn transformer.

        Returns
        -------
        encoder : SchemaEncoder
        """
        return SchemaEncoder(self)

    def to_dict(self):
        """The schema as plain Python values (what :meth:`to_json` writes)."""
        return {
            "numeric": {k: list(v) for k, v in self.numeric.items()},
            "categorical": {k: list(v) for k, v in self.categorical.items()},
            "label": self.label,
            "label_range": None if self.label_range is None else list(self.label_range),
            "person_key": self.person_key,
            "order": list(self.columns),
        }

    @classmethod
    def from_dict(cls, document):
        """The schema of :meth:`to_dict`'s dictionary."""
        if not isinstance(document, dict):
            raise ValueError(f"a schema is a JSON object, got {type(document).__name__}.")
        unknown = set(document) - set(_KEYS)
        if unknown:
            raise ValueError(f"unknown schema entries {sorted(unknown)}; expected some "
                             f"of {list(_KEYS)}.")
        return cls(**document)

    def to_json(self, path=None):
        """The schema as JSON text, or written to ``path`` (returns None then)."""
        return write_json(json.dumps(self.to_dict(), indent=2), path)

    @classmethod
    def from_json(cls, source):
        """The schema of a JSON file's path or of JSON text (starting with ``{``)."""
        try:
            document = read_json(source)
        except json.JSONDecodeError as exc:
            raise ValueError(f"the schema is not valid JSON: {exc}") from None
        return cls.from_dict(document)

    def __eq__(self, other):
        return isinstance(other, Schema) and self.to_dict() == other.to_dict()

    def __hash__(self):
        return hash(json.dumps(self.to_dict(), sort_keys=True))

    def __repr__(self):
        parts = [f"numeric={self.numeric!r}"] if self.numeric else []
        if self.categorical:
            parts.append(f"categorical={self.categorical!r}")
        parts += [f"{k}={getattr(self, k)!r}" for k in ("label", "label_range", "person_key")
                  if getattr(self, k) is not None]
        return f"Schema({', '.join(parts)})"


def write_json(text, path):
    """``text`` written to the file ``path`` with a final newline, or
    returned where ``path`` is None."""
    if path is None:
        return text
    with open(path, "w", encoding="utf-8") as f:
        f.write(text + "\n")
    return None


def read_json(source):
    """The document of JSON text (starting with ``{``) or of a file's path."""
    text = source
    if isinstance(source, os.PathLike) or not str(source).lstrip().startswith("{"):
        with open(source, encoding="utf-8") as f:
            text = f.read()
    return json.loads(text)


_KEYS = ("numeric", "categorical", "label", "label_range", "person_key", "order")


def _range(column, value, role="numeric column"):
    try:
        low, high = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ValueError(f"{role} {column!r}: its range must be a pair (low, high); "
                         f"got {value!r}.") from None
    if not (np.isfinite(low) and np.isfinite(high) and low < high):
        raise ValueError(f"{role} {column!r}: its range must have finite low < high; "
                         f"got {value!r}.")
    return low, high


def _categories(column, value):
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise ValueError(f"categorical column {column!r}: its categories must be a list; "
                         f"got {value!r}.")
    categories = [v.item() if isinstance(v, np.generic) else v for v in value]
    if len(categories) < 2 or len({str(c) for c in categories}) < len(categories):
        raise ValueError(f"categorical column {column!r} needs at least two distinct "
                         f"categories (the first the reference); got {categories!r}.")
    return categories


class FeatureLayout:
    """The encoded features of a :class:`Schema`: ranges and indicator blocks.

    Attributes
    ----------
    lower, upper : ndarray of shape (n_features,)
        Each encoded feature's range; (0, 1) for an indicator.
    numeric : ndarray of int
        Indices of the numeric features.
    blocks : tuple of ndarray of int
        Indices of each categorical column's indicators.
    names : list of str
        Names of the encoded features.
    n_shares : int
        Numeric features plus categorical columns: the row is divided by
        its square root.
    """

    def __init__(self, lower, upper, numeric, blocks, names):
        self.lower, self.upper, self.numeric, self.blocks = lower, upper, numeric, blocks
        self.names = names
        self.n_shares = numeric.size + len(blocks)

    @property
    def indicators(self):
        mask = np.zeros(self.lower.shape[0], dtype=bool)
        for block in self.blocks:
            mask[block] = True
        return mask

    def restore_indicators(self, bounds_X):
        """``bounds_X`` (a pair of per-feature arrays, e.g. released) with
        every indicator's range (0, 1): indicator blocks are never tightened."""
        if bounds_X is None:
            return None
        lower, upper = (np.array(b, dtype=np.float64) for b in bounds_X)
        lower[self.indicators], upper[self.indicators] = 0.0, 1.0
        return lower, upper

    def project_blocks(self, X):
        """Scale each block of ``X`` (in place) whose norm exceeds 1 back to norm 1."""
        for block in self.blocks:
            sq = np.einsum("ij,ij->i", X[:, block], X[:, block])
            over = np.flatnonzero(sq > 1.0)
            if over.size:
                X[np.ix_(over, block)] /= np.sqrt(sq[over])[:, None]
        return X


class SchemaEncoder(TransformerMixin, BaseEstimator):
    """The declared encoder of a :class:`Schema`'s feature columns.

    Fitting checks that the columns exist and learns nothing from the
    values: the categories are the declared ones. The output has the
    numeric columns as they are (the estimator clips them to their declared
    ranges) and, for each categorical column, one 0/1 indicator per
    category but the reference, in the schema's order. A category that was
    not declared (or a missing value) raises a ``ValueError`` naming the
    column: mapping it to the reference level would silently change a row.

    Parameters
    ----------
    schema : Schema

    Attributes
    ----------
    n_features_in_ : int
        Number of feature columns read (the schema's).

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_pdp import Schema
    >>> schema = Schema({"age": (18, 90)}, {"sector": ["private", "public", "self"]})
    >>> table = pd.DataFrame({"age": [30, 41], "sector": ["self", "private"]})
    >>> schema.encoder().fit_transform(table)
    array([[30.,  0.,  1.],
           [41.,  0.,  0.]])
    """

    _parameter_constraints = {"schema": [Schema]}

    def __init__(self, schema):
        self.schema = schema

    def fit(self, X, y=None):
        """Check that ``X`` has the schema's columns (a DataFrame, or an
        array with the columns in the schema's order).

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_columns)
        y : ignored

        Returns
        -------
        self : SchemaEncoder
        """
        self._validate_params()
        self._columns(X)
        self.n_features_in_ = len(self.schema.columns)
        return self

    def _columns(self, X):
        """Each schema column's values, by name (or by position in an array)."""
        columns = self.schema.columns
        if hasattr(X, "columns"):
            missing = [c for c in columns if c not in set(map(str, X.columns))]
            if missing:
                raise ValueError(f"the table has no column {missing[0]!r} of the schema.")
            named = {str(c): c for c in X.columns}
            return {c: np.asarray(X[named[c]]) for c in columns}
        X = np.asarray(X, dtype=object)
        if X.ndim != 2 or X.shape[1] != len(columns):
            raise ValueError(f"an array must have the schema's {len(columns)} columns "
                             f"{list(columns)} in order; got shape {X.shape}.")
        return {c: X[:, j] for j, c in enumerate(columns)}

    def transform(self, X):
        """The encoded features.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_columns)

        Returns
        -------
        features : ndarray of shape (n_samples, n_features_out)
        """
        check_is_fitted(self)
        blocks = []
        for column, values in self._columns(X).items():
            if column in self.schema.numeric:
                blocks.append(_numeric(column, values)[:, None])
            else:
                blocks.append(_indicators(column, values, self.schema.categorical[column]))
        return np.hstack(blocks)

    def get_feature_names_out(self, input_features=None):
        """Names of the encoded features (``column_category`` for indicators)."""
        return np.asarray(self.schema.feature_names(), dtype=object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.requires_fit = False
        return tags


def _numeric(column, values):
    try:
        out = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"numeric column {column!r} holds values that are not "
                         "numbers.") from None
    if np.isnan(out).any():
        raise ValueError(f"numeric column {column!r} has missing values: fill or drop them.")
    return out


def _indicators(column, values, categories):
    """The 0/1 indicators of ``values`` for every category but the first;
    a value matches a category equal to it or with the same text."""
    code = {}
    for j, c in enumerate(categories):
        code.setdefault(c, j)
        code.setdefault(str(c), j)
    out = np.zeros((len(values), len(categories) - 1))
    unknown = []
    for i, v in enumerate(values):
        j = code.get(v) if _hashable(v) else None
        j = code.get(str(v)) if j is None else j
        if j is None:
            unknown.append(v)
        elif j:
            out[i, j - 1] = 1.0
    if unknown:
        shown = sorted({str(v) for v in unknown})[:5]
        raise ValueError(f"categorical column {column!r} has values outside its declared "
                         f"categories {categories!r}: {shown}.")
    return out


def _hashable(value):
    try:
        hash(value)
    except TypeError:
        return False
    return not (isinstance(value, Real) and np.isnan(value))


def estimator_layout(estimator):
    """The :class:`FeatureLayout` of an estimator's ``schema`` (None
    without one), checked against the features it is being fitted on
    (``n_features_in_`` and ``feature_names_in_``, where set)."""
    schema = getattr(estimator, "schema", None)
    if schema is None:
        return None
    layout = schema.feature_layout()
    n_features = getattr(estimator, "n_features_in_", layout.lower.shape[0])
    if layout.lower.shape[0] != n_features:
        raise ValueError(
            f"the schema encodes {layout.lower.shape[0]} features {layout.names}, the data "
            f"has {n_features}: pass the rows through schema.encoder() first.")
    names = getattr(estimator, "feature_names_in_", None)
    if names is not None and list(map(str, names)) != layout.names:
        raise ValueError(f"the features {list(names)} are not the schema's encoded "
                         f"{layout.names}: pass the rows through schema.encoder() first.")
    return layout


def schema_bounds(estimator, data_norm, bounds_X, y_bound):
    """The bound parameters of an estimator with a ``schema``: its encoded
    ranges and label range (``y_bound`` where it declares none)."""
    schema = estimator.schema
    if data_norm is not None or bounds_X is not None:
        raise ValueError("Give either schema or data_norm / bounds_X, not both: the "
                         "schema declares the features' ranges.")
    if y_bound is not None and schema.label_range is not None:
        raise ValueError("Give either the schema's label_range or y_bound, not both.")
    layout = estimator_layout(estimator)
    return {"data_norm": None, "bounds_X": (layout.lower, layout.upper),
            "y_bound": y_bound if schema.label_range is None else schema.label_range}


def stage_params(estimator, bounds):
    """The parameters that set a copy of ``estimator`` to the bounds
    ``bounds`` (``data_norm``, ``bounds_X``, ``y_bound``, e.g. released):
    themselves, or with a schema, the schema at those bounds."""
    schema = getattr(estimator, "schema", None)
    if schema is None:
        return bounds
    return {"schema": schema.with_bounds(bounds["bounds_X"], bounds["y_bound"]),
            "y_bound": None}
