"""The declared schema on the command line: ``--schema FILE`` fills the
options it declares, and the options (``--bounds-x`` with the categories of
a CSV's text columns) make the :class:`~sklearn_pdp.Schema` the estimator
takes, so that each categorical column takes one share of the row norm."""

import numpy as np

from ..domain._schema import Schema
from ._options import DataError

# options a schema file declares itself
_DECLARED = (("bounds_x", "--bounds-x"), ("data_norm", "--data-norm"),
             ("categories", "--categories"), ("features", "--features"))


def apply_schema_file(args):
    """Read ``--schema`` and set the options it declares (features, their
    ranges and categories, the target and its range, the id column)."""
    if args.schema is None:
        return
    try:
        schema = Schema.from_json(args.schema)
    except OSError as exc:
        raise DataError(f"cannot read {args.schema}: {exc.strerror}") from None
    except (TypeError, ValueError) as exc:
        raise DataError(f"--schema {args.schema}: {exc}") from None
    for name, option in _DECLARED:
        if getattr(args, name):
            raise DataError(f"--schema declares the features: give it without {option}")
    for name, value, option in (("target", schema.label, "label"),
                                ("id_column", schema.person_key, "person_key")):
        given = getattr(args, name)
        if given is not None and value is not None and given != value:
            raise DataError(f"--{name.replace('_', '-')} {given!r} is not the schema's "
                            f"{option} {value!r}")
        setattr(args, name, given if value is None else value)
    if schema.label_range is not None:
        if args.y_bound is not None:
            raise DataError("--schema declares the label's range: give it without --y-bound")
        args.y_bound = list(schema.label_range)
    args.features = list(schema.columns)
    args.categories = [(c, [str(v) for v in cats]) for c, cats in schema.categorical.items()]
    numeric = [schema.numeric[c] for c in schema.columns if c in schema.numeric]
    args.bounds_x = [[r[0] for r in numeric], [r[1] for r in numeric]] if numeric else None
    args.schema_numeric = [c for c in schema.columns if c in schema.numeric]


def flag_schema(bounds_x, one_hot, encoding, args):
    """The schema of a CSV's options: ``bounds_x`` per encoded column (one-hot
    columns' entries ignored: an indicator is 0 or 1), the categories of its
    text columns (declared or read), the target and the id column."""
    categories = encoding["categories"]
    for column in getattr(args, "schema_numeric", ()):
        if column in categories:
            raise DataError(f"column {column!r} is numeric in --schema {args.schema} but "
                            "holds text")
    lower, upper = (np.broadcast_to(np.asarray(b, dtype=float), one_hot.shape)
                    for b in bounds_x)
    numeric = [c for c in encoding["columns"] if c not in categories]
    ranges = {c: (lo, hi) for c, lo, hi in zip(numeric, lower[~one_hot], upper[~one_hot])}
    try:
        return Schema(ranges, categories, args.target, None, args.id_column,
                      encoding["columns"])
    except ValueError as exc:
        raise DataError(str(exc)) from None
