"""The data of a release: a bundled public table, or a CSV read, checked
and encoded (text columns one-hot with declared categories)."""

import re

import numpy as np

from ..report._public import one_hot_encoder
from ._options import DataError

# bounds of the bundled data, declared as public knowledge of its domain
DIABETES_BOUNDS = {"bounds_X": (-0.2, 0.2), "y_bound": (0.0, 400.0)}


def _read_csv(args):
    """Header and rows of the CSV, checked for shape."""
    import csv

    try:
        with open(args.csv, newline="") as f:
            rows = list(csv.reader(f))
    except OSError as exc:
        raise DataError(f"cannot read {args.csv}: {exc.strerror}") from None
    if not rows:
        raise DataError(f"{args.csv} is empty")
    header, body = rows[0], rows[1:]
    if any(len(row) != len(header) for row in body):
        raise DataError(f"{args.csv} has ragged rows (not as many values as the header)")
    if len(body) < 2:
        raise DataError(f"{args.csv} needs at least two data rows")
    return header, body


def _numeric(values):
    """The column as floats, or None if some value is not a number."""
    try:
        return np.array(values, dtype=float)
    except ValueError:
        return None


_KEY_NAMES = re.compile(r"(?i)^(id|index|row|rowid|row_id|key|unnamed: ?0)$|[ _-]id$")


def _row_numbers(column, numbers):
    """Whether a numeric column is a key rather than a measurement: distinct
    whole numbers that are consecutive, or under a key's name (``id``,
    ``index``, ``..._id``). Used only where the features were not listed."""
    if numbers.size < 3 or not np.all(numbers == np.round(numbers)):
        return False
    distinct = np.unique(numbers)
    if distinct.size < numbers.size:
        return False
    consecutive = distinct[-1] - distinct[0] == numbers.size - 1
    return bool(consecutive or _KEY_NAMES.search(column.strip()))


def _one_hot(column, values, declared, source):
    """One-hot columns of a text column with declared categories (the first
    dropped: the intercept carries it), and their names."""
    unknown = sorted(set(values) - set(declared))
    if unknown:
        shown = ", ".join(map(repr, unknown[:5])) + (" ..." if len(unknown) > 5 else "")
        raise DataError(f"column {column!r} of {source} has values not in its declared "
                        f"categories: {shown}")
    if len(set(declared)) < 2:
        raise DataError(f"column {column!r} needs at least two distinct categories, "
                        f"got {declared}")
    encoder = one_hot_encoder(declared)
    encoded = encoder.fit_transform(np.asarray(values, dtype=object)[:, None])
    return encoded, list(encoder.get_feature_names_out([column]))


def _load(args):
    """Features, labels, a name for the data, its declared bounds, the
    encoding (feature names, one-hot mask, categories read from the data, and
    the encoding of the saved model: None for the diabetes data) and the
    person key of each row (None without ``--ledger``)."""
    if args.csv is None:
        if (args.target is not None or args.features is not None or args.categories
                or args.id_column is not None):
            raise DataError("--target, --features, --categories and --id-column need "
                            "a CSV file")
        return _bundled(args)
    if args.dataset is not None:
        raise DataError("--dataset chooses a bundled table: not with a CSV file")
    if args.target is None:
        raise DataError("--target is required with a CSV file")
    header, body = _read_csv(args)
    features = args.features or [c for c in header if c not in (args.target, args.id_column)]
    declared = dict(args.categories)
    key = [] if args.id_column is None else [args.id_column]
    for column in [args.target, *key, *features, *declared]:
        if column not in header:
            raise DataError(f"column {column!r} not in {args.csv} "
                            f"(columns: {', '.join(header)})")
    if args.id_column is not None and args.id_column in (args.target, *features, *declared):
        raise DataError(f"the id column {args.id_column!r} cannot also be the target, a "
                        "feature or a category")
    if not features:
        raise DataError(f"{args.csv} needs at least one feature column besides the target")
    ids = None
    if args.id_column is not None:
        ids = np.array([row[header.index(args.id_column)] for row in body], dtype=str)
        if np.any(np.char.strip(ids) == ""):
            raise DataError(f"the id column {args.id_column!r} of {args.csv} has empty "
                            "values")
    X, y, encoding = _encode(header, body, args.csv, args.target, features, declared,
                             listed=args.features is not None)
    return X, y, args.csv, {}, encoding, ids


def _bundled(args):
    """:func:`_load` for a bundled table (``--dataset``): its public bounds
    and categories declared; a person is a row number (a fixed table)."""
    if args.dataset == "diabetes":
        from sklearn.datasets import load_diabetes

        data = load_diabetes()
        X, y, names = data.data, data.target, list(data.feature_names)
        ids = None if args.ledger is None else np.arange(len(y))
        return X, y, "diabetes (scikit-learn)", DIABETES_BOUNDS, (
            names, np.zeros(len(names), dtype=bool), [], None), ids
    from ..datasets import _nyc_weather as weather

    header, body = weather._rows()
    features = [c for c in header if c != weather.TARGET]
    name = "nyc_weather (bundled; sklearn_pdp.datasets.load_nyc_weather)"
    X, y, encoding = _encode(header, body, name, weather.TARGET, features,
                             weather.CATEGORIES, listed=True)
    numeric = [weather.NUMERIC_BOUNDS[c] for c in features if c not in weather.CATEGORIES]
    bounds_X = _feature_bounds([[b[0] for b in numeric], [b[1] for b in numeric]],
                               encoding[1])
    bounds = {"bounds_X": tuple(bounds_X), "y_bound": weather.TARGET_BOUND}
    return X, y, name, bounds, encoding, None if args.ledger is None else np.arange(len(y))


def _encode(header, body, source, target, features, declared, listed):
    """Features and labels of a table's text rows (text columns one-hot
    encoded with their declared categories, or read from the data with a
    warning), and the encoding of :func:`_load`. ``listed``: the features
    were named (a key-like numeric column is then taken as a feature)."""
    if target in declared:
        raise DataError(f"the target {target!r} must be numeric, not a category")
    stray = [column for column in declared if column not in features]
    if stray:
        raise DataError(f"--categories {stray[0]}=...: {stray[0]!r} is not among the "
                        f"features ({', '.join(features)}); add it to --features or drop "
                        "its --categories")
    y = _numeric([row[header.index(target)] for row in body])
    if y is None:
        raise DataError(f"the target column {target!r} of {source} has "
                        "non-numeric or empty values")
    blocks, names, one_hot, read, categories = [], [], [], [], {}
    for column in features:
        values = [row[header.index(column)] for row in body]
        numbers = None if column in declared else _numeric(values)
        if numbers is not None:
            if not np.all(np.isfinite(numbers)):
                raise DataError(f"column {column!r} of {source} contains missing or "
                                "infinite values: fill them with a public value (not a "
                                "statistic of these rows), drop those rows, or leave the "
                                "column out with --features")
            if not listed and _row_numbers(column, numbers):
                raise DataError(
                    f"column {column!r} of {source} looks like a row number or "
                    "person key (a different whole number on every row): not a "
                    "feature; leave it out with --features (or, with --ledger, give "
                    f"it as --id-column {column})")
            blocks.append(numbers[:, None])
            names.append(column)
            one_hot.append(False)
            continue
        if "" in values:
            raise DataError(f"column {column!r} of {source} has empty values: fill or "
                            "drop them, or leave the column out with --features")
        if column not in declared:
            words = sorted({v for v in values if _numeric([v]) is None})
            if sum(_numeric([v]) is None for v in values) < len(values) / 2:
                raise DataError(
                    f"column {column!r} of {source} is mostly numbers, but not "
                    f"{', '.join(map(repr, words[:3]))}{' ...' if len(words) > 3 else ''}: "
                    "fill or drop missing values (or declare the column's categories "
                    "with --categories if it is text)")
            distinct = len(set(values))
            # a key such as a name or an id, not a category: one-hot encoding it
            # would add a column per person (slow, and no model to speak of)
            if distinct > len(values) / 2:
                raise DataError(
                    f"column {column!r} of {source} has a different text on "
                    f"most rows ({distinct} values in {len(values)} rows): an identifier, "
                    "not a category; leave it out with --features (or, with --ledger, "
                    f"give it as --id-column {column})")
            read.append(column)  # the report's note says that this leaks
        categories[column] = declared.get(column) or sorted(set(values))
        encoded, encoded_names = _one_hot(column, values, categories[column], source)
        blocks.append(encoded)
        names += encoded_names
        one_hot += [True] * len(encoded_names)
    if not np.all(np.isfinite(y)):
        raise DataError(f"column {target!r} of {source} contains missing or "
                        "infinite values")
    # how the saved model encodes the raw table (PublicLinearModel.encoding)
    model_encoding = {"columns": features, "categories": categories, "drop": "first",
                      "read_from_data": read}
    return np.hstack(blocks), y, (names, np.array(one_hot), read, model_encoding)


def _feature_bounds(bounds_x, one_hot):
    """``--bounds-x`` for the encoded columns: one-hot columns in [0, 1], the
    values given for the numeric ones (one per numeric feature, or one per
    encoded column)."""
    numeric = int((~one_hot).sum())
    result = []
    for given in bounds_x:
        values = np.atleast_1d(np.asarray(given, dtype=float))
        if values.size not in (1, numeric, one_hot.size):
            columns = (f" or per encoded column ({one_hot.size})" if one_hot.any()
                       else "")
            raise DataError(
                f"--bounds-x needs one value per numeric feature ({numeric}){columns}, "
                f"got {values.size}")
        if values.size == one_hot.size or not one_hot.any():
            result.append(given)
            continue
        column = np.empty(one_hot.size)
        column[~one_hot] = values
        column[one_hot] = 0.0 if len(result) == 0 else 1.0
        result.append(column.tolist())
    return result
