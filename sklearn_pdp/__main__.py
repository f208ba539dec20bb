"""Command-line release with a per-instance privacy report.

``python -m sklearn_pdp`` fits a private regressor at a privacy budget
(epsilon = 1, delta = 1e-6 by default) on scikit-learn's bundled diabetes data
and explains, in plain words, what may be published (the released model and
its guarantee) and what is for the curator's eyes only (the per-instance
epsilons of the people in it and the test R^2, computed from the private data
without privacy). ``python -m sklearn_pdp data.csv --target y`` does the same
for a table of one's own (text columns are one-hot encoded with the categories
declared by ``--categories``); ``--save-model FILE`` writes the released model
as JSON (read it back with ``sklearn_pdp.PublicLinearModel.from_json``),
``--json`` prints a machine-readable report instead, ``--plot FILE`` writes
the report's plot as a PNG. ``--ledger FILE --id-column ID`` records the
release in a per-person privacy ledger (doc/ledger.rst) and reports each
person's total over every release recorded in it; ``python -m sklearn_pdp
ledger FILE`` summarises a ledger.
"""

import argparse
import os
import re
import sqlite3
import sys
import warnings

import numpy as np
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import train_test_split

from ._domain import read_from_data_warning
from ._ledger import LedgerError, PrivacyLedger
from ._ledger_cli import describe_summary, record_from_cli, strict_json, summarise_record
from ._public import one_hot_encoder
from ._report import PDPReport
from .exceptions import BoundsWarning, FallbackWarning, PrivacyLeakWarning

# command-line name -> class name in sklearn_pdp; every one takes a budget
ESTIMATORS = {
    "ops": "OPSRegressor",
    "adaops": "AdaOPSRegressor",
    "adassp": "AdaSSPRegressor",
    "output": "OutputPerturbationRegressor",
    "objpert": "ObjPertRegressor",
    "projection": "RandomProjectionRegressor",
}
DEFAULT_ESTIMATOR = "adassp"
# expert options, set only on estimators with a parameter of that name
EXPERT = ("gamma", "alpha", "kappa")
# bounds of the bundled data, declared as public knowledge of its domain
DIABETES_BOUNDS = {"bounds_X": (-0.2, 0.2), "y_bound": (0.0, 400.0)}
# above this DP epsilon the guarantee protects practically no one
MEANINGLESS_EPSILON = 10.0
# the text report: labels padded to at most this width (a longer one is not
# padded), values wrapped to this many columns
LABEL_WIDTH = 22
TEXT_WIDTH = 100
PLOT_HINT = 'pip install matplotlib (or, from a checkout, pip install ".[plot]")'


class DataError(Exception):
    """A problem with the data or the options: one line, no usage block."""


def _numbers(text):
    """A float, or a comma-separated list of floats, from the command line."""
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number or a list of numbers: {text!r}")
    return values[0] if len(values) == 1 else values


def _seed(text):
    """An int seed, or None (``none``): secure noise."""
    if text.lower() == "none":
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer seed: {text!r}")


def _categories(text):
    """``COLUMN=a,b,c``: the declared categories of a text column."""
    column, sep, values = text.partition("=")
    if not sep or not column or not values:
        raise argparse.ArgumentTypeError(
            f"expected COLUMN=a,b,c (the categories of a text column), got {text!r}")
    return column, values.split(",")


def _plural(n, word):
    return f"{n} {word}{'' if n == 1 else 's'}"


def _parser():
    parser = argparse.ArgumentParser(
        prog="python -m sklearn_pdp",
        description=(
            "Fit a differentially private linear regression at a privacy budget, "
            "report the released model and its guarantee (DP epsilon), and, for "
            "the curator only, how much privacy every person in the training "
            "data loses (per-instance epsilon)."
        ),
    )
    parser.add_argument(
        "csv", nargs="?",
        help="CSV file with a header row (default: scikit-learn's diabetes data)",
    )
    parser.add_argument("--target", help="name of the label column of the CSV")
    parser.add_argument(
        "--features", type=lambda s: s.split(","), metavar="A,B,...",
        help="feature columns of the CSV (default: every column but the target)",
    )
    parser.add_argument(
        "--categories", type=_categories, action="append", default=[],
        metavar="COLUMN=a,b,c",
        help="declared categories of a text column, one-hot encoded (the first "
             "category is the reference, carried by the intercept); repeat for "
             "each text column. Categories not declared are read from the data, "
             "which leaks",
    )
    parser.add_argument(
        "--estimator", choices=sorted(ESTIMATORS), default=DEFAULT_ESTIMATOR,
        help="private regressor (default: %(default)s)",
    )
    parser.add_argument("--epsilon", type=float, default=1.0,
                        help="privacy budget epsilon (default: %(default)s)")
    parser.add_argument("--delta", type=float, default=1e-6,
                        help="privacy budget delta (default: %(default)s)")
    bounds = parser.add_argument_group(
        "public bounds of the data (declare them: bounds read from the data leak)"
    )
    bounds.add_argument(
        "--bounds-x", nargs=2, type=_numbers, metavar=("LOWER", "UPPER"),
        help="per-feature ranges (recommended): two numbers, or two "
             "comma-separated lists with one value per numeric feature (one-hot "
             "columns of text features are in [0, 1])",
    )
    bounds.add_argument("--data-norm", type=float,
                        help="bound on the l2 norm of the (encoded) feature rows")
    bounds.add_argument("--y-bound", type=_numbers, metavar="B or LOW,HIGH",
                        help="range of the label: B for [-B, B], or LOW,HIGH")
    bounds.add_argument(
        "--tighten-bounds", nargs="?", const="yes", choices=("yes", "auto"),
        help="spend a share of the budget on releasing tighter bounds than the "
             "declared ones first (auto: only where the data suffice); the "
             "released bounds are reported",
    )
    bounds.add_argument("--tighten-share", type=float, metavar="SHARE",
                        help="share of epsilon for the bounds (default: 0.1)")
    expert = parser.add_argument_group("expert options (the budget is met without them)")
    expert.add_argument("--gamma", type=float,
                        help="ops: posterior scaling instead of --epsilon (no "
                             "budget; needs --alpha)")
    expert.add_argument("--alpha", type=float, help="ridge strength on the scaled data")
    expert.add_argument(
        "--kappa", type=float,
        help="adaops: fixed condition-number parameter of the eigenvalue floor "
             "n / (d kappa) (default: chosen from the released eigenvalue)",
    )
    parser.add_argument("--test-size", type=float, default=0.25,
                        help="held-out fraction for the test R^2; 0 fits on every "
                             "row and skips the evaluation (default: %(default)s)")
    parser.add_argument(
        "--random-state", type=_seed, default=None, metavar="N",
        help="seed of the split and of the noise, for experiments only: seeded "
             "noise is predictable, so not for a release (default: secure noise, "
             "256 bits from the operating system)",
    )
    parser.add_argument(
        "--thresholds", type=float, nargs="+", default=[0.1, 1.0], metavar="EPS",
        help="report the fraction of people whose epsilon is at most these values "
             "(default: %(default)s)",
    )
    parser.add_argument(
        "--publish-epsilon", type=float, metavar="EPS",
        help="also publish the privacy report with differential privacy at this "
             "extra budget (every estimator): the per-instance numbers then "
             "include its cost, and the publishable part its private summary",
    )
    parser.add_argument(
        "--save-model", metavar="FILE",
        help="write the released model (coefficients, intercept, feature names, "
             "bounds, guarantee, parameters) as JSON; load it with "
             "sklearn_pdp.PublicLinearModel.from_json(FILE)",
    )
    ledger = parser.add_argument_group(
        "per-person privacy ledger (summarise one with: python -m sklearn_pdp ledger FILE)")
    ledger.add_argument(
        "--ledger", metavar="FILE",
        help="record the release in the privacy ledger in this SQLite file (created "
             "if missing) and report each person's total loss over every release "
             "recorded in it; the held-out people are charged the loss of adding "
             "their record. Needs --id-column with a CSV; for the bundled data a "
             "person is their row number in it, 0 to 441",
    )
    ledger.add_argument(
        "--id-column", metavar="ID",
        help="column of the CSV with each row's person key (kept out of the "
             "features; a key on several rows is one person); needs --ledger",
    )
    parser.add_argument("--json", action="store_true",
                        help="print a machine-readable JSON report instead of text "
                             '(strict JSON: an infinite epsilon is the string "inf", '
                             "a number not evaluated is null)")
    parser.add_argument(
        "--plot", metavar="FILE",
        help="write the report's plot to this PNG file (needs matplotlib; the "
             "plot is for the curator only)",
    )
    return parser


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
    the encoding of the saved model: None for the bundled data) and the
    person key of each row (None without ``--ledger``)."""
    if args.csv is None:
        if (args.target is not None or args.features is not None or args.categories
                or args.id_column is not None):
            raise DataError("--target, --features, --categories and --id-column need "
                            "a CSV file")
        from sklearn.datasets import load_diabetes

        data = load_diabetes()
        X, y, names = data.data, data.target, list(data.feature_names)
        # the bundled data's people: their row numbers in it (a fixed table)
        ids = None if args.ledger is None else np.arange(len(y))
        return X, y, "diabetes (scikit-learn)", DIABETES_BOUNDS, (
            names, np.zeros(len(names), dtype=bool), [], None), ids
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
    if args.target in declared:
        raise DataError(f"the target {args.target!r} must be numeric, not a category")
    y = _numeric([row[header.index(args.target)] for row in body])
    if y is None:
        raise DataError(f"the target column {args.target!r} of {args.csv} has "
                        "non-numeric or empty values")
    blocks, names, one_hot, read, categories = [], [], [], [], {}
    for column in features:
        values = [row[header.index(column)] for row in body]
        numbers = None if column in declared else _numeric(values)
        if numbers is not None:
            if not np.all(np.isfinite(numbers)):
                raise DataError(f"column {column!r} of {args.csv} contains missing or "
                                "infinite values")
            blocks.append(numbers[:, None])
            names.append(column)
            one_hot.append(False)
            continue
        if "" in values:
            raise DataError(f"column {column!r} of {args.csv} has empty values")
        if column not in declared:
            words = sorted({v for v in values if _numeric([v]) is None})
            if sum(_numeric([v]) is None for v in values) < len(values) / 2:
                raise DataError(
                    f"column {column!r} of {args.csv} is mostly numbers, but not "
                    f"{', '.join(map(repr, words[:3]))}{' ...' if len(words) > 3 else ''}: "
                    "fill or drop missing values (or declare the column's categories "
                    "with --categories if it is text)")
            distinct = len(set(values))
            # a key such as a name or an id, not a category: one-hot encoding it
            # would add a column per person (slow, and no model to speak of)
            if distinct > len(values) / 2:
                raise DataError(
                    f"column {column!r} of {args.csv} has a different text on "
                    f"most rows ({distinct} values in {len(values)} rows): an identifier, "
                    "not a category; leave it out with --features (or, with --ledger, "
                    f"give it as --id-column {column})")
            read.append(column)
            warnings.warn(
                f"the categories of column {column!r} were not declared, so they are "
                "read from the data: a rare category reveals that someone has it, and "
                "the privacy guarantees do not cover this. Declare them with "
                f"--categories {column}=a,b,c.", PrivacyLeakWarning, stacklevel=2)
        categories[column] = declared.get(column) or sorted(set(values))
        encoded, encoded_names = _one_hot(column, values, categories[column], args.csv)
        blocks.append(encoded)
        names += encoded_names
        one_hot += [True] * len(encoded_names)
    if not np.all(np.isfinite(y)):
        raise DataError(f"column {args.target!r} of {args.csv} contains missing or "
                        "infinite values")
    # how the saved model encodes the raw table (PublicLinearModel.encoding)
    model_encoding = {"columns": features, "categories": categories, "drop": "first",
                      "read_from_data": read}
    return np.hstack(blocks), y, args.csv, {}, (
        names, np.array(one_hot), read, model_encoding), ids


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


def _estimator(args, bounds, one_hot):
    import sklearn_pdp

    est = getattr(sklearn_pdp, ESTIMATORS[args.estimator])()
    params = {"epsilon": args.epsilon, "delta": args.delta,
              "random_state": args.random_state, **bounds}
    if args.data_norm is not None:  # replaces the bundled data's bounds_X
        params.pop("bounds_X", None)
    # both given by the user: the estimator's own error says so
    bounds_x = None if args.bounds_x is None else _feature_bounds(args.bounds_x, one_hot)
    for name, value in (("data_norm", args.data_norm), ("y_bound", args.y_bound),
                        ("bounds_X", bounds_x)):
        if value is not None:
            params[name] = value
    for name in EXPERT:
        value = getattr(args, name)
        if value is None:
            continue
        if name not in est.get_params():
            raise DataError(f"--{name} does not apply to --estimator {args.estimator}")
        params[name] = value
    if args.tighten_bounds is not None:
        params["tighten_bounds"] = True if args.tighten_bounds == "yes" else "auto"
    if args.tighten_share is not None:
        params["tighten_share"] = args.tighten_share
    if args.gamma is not None:  # a raw noise level instead of a budget
        if args.alpha is None:
            raise DataError("--gamma needs --alpha: without a budget (--gamma replaces "
                            "--epsilon) the ridge strength is not chosen for you")
        params["epsilon"] = None
    return est.set_params(**params)


def _split(args, X, y):
    """Training and test rows, and their indices; every row trains with
    ``--test-size 0``."""
    if not 0 <= args.test_size < 1:
        raise DataError(f"--test-size must be in [0, 1), got {args.test_size:g}")
    rows = np.arange(len(y))
    if args.test_size == 0:
        return X, None, y, None, rows, rows[:0]
    try:  # the indices do not change the split (it depends on the size only)
        return train_test_split(X, y, rows, test_size=args.test_size,
                                random_state=args.random_state)
    except ValueError as exc:
        raise DataError(f"--test-size {args.test_size:g}: {exc}") from None


def _messages(caught, category):
    return [str(w.message) for w in caught if issubclass(w.category, category)]


def _report(args, X, y, name, bounds, encoding):
    """Fit the release on a training split; the numbers of the report, in a
    publishable block and a block for the curator only."""
    names, one_hot, categories_read, model_encoding = encoding
    est = _estimator(args, bounds, one_hot)
    X_train, X_test, y_train, y_test, train, test = _split(args, X, y)
    # delta is the estimator's (set above): its own error names a bad value
    report = PDPReport(est, thresholds=args.thresholds,
                       publish_epsilon=args.publish_epsilon, random_state=args.random_state)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            report.fit(X_train, y_train)
        # invalid parameters, or an estimator that cannot publish its report
        except (ValueError, TypeError, NotImplementedError) as exc:
            raise DataError(str(exc)) from None
    fitted = report.estimator_
    public = fitted.public_model().set_params(feature_names=names,
                                              encoding=model_encoding)
    s = report.summary_
    eps = np.asarray(report.pdp_losses_)
    published = None
    if args.publish_epsilon is not None:
        p = report.published_.summary
        published = {
            "beta": report.published_.beta,
            "pdp_epsilon": {key: p[key] for key in ("mean", "median", "q90", "q99")},
            "fraction_below": {f"{t:g}": frac for t, frac in p["below"].items()},
        }
    evaluation = {"test_r2": None, "test_r2_least_squares": None, "n_test": 0}
    if X_test is not None:
        evaluation = {
            "n_test": int(X_test.shape[0]),
            "test_r2": float(fitted.score(X_test, y_test)),
            "test_r2_least_squares": float(
                LinearRegression().fit(X_train, y_train).score(X_test, y_test)),
        }
    bounds_read = list(fitted.bounds_from_data_)
    # their warnings say the same: reported once, under read_from_data
    said = {read_from_data_warning(name) for name in bounds_read}
    mean_only = bool(getattr(fitted, "mean_only_", False))
    reason = getattr(fitted, "mean_only_reason_", None) or " ".join(
        _messages(caught, FallbackWarning)) or None
    publishable = {
        "data": name,
        "n_train": int(X_train.shape[0]),
        "n_features": int(X.shape[1]),
        "estimator": ESTIMATORS[args.estimator],
        "model": {"feature_names": names, "coef": public.coef_.tolist(),
                  "intercept": public.intercept_},
        "mean_only": mean_only,
        "zero_slopes": bool(not mean_only and not np.any(public.coef_)),
        "reason": reason,
        "dp_epsilon": float(s["dp_epsilon"]),
        "dp_delta": float(s["dp_delta"]),
        "published": published,
        "released_bounds": _released_bounds(report.estimator_),
    }
    curator = {
        "pdp_delta": s["delta"],
        "pdp_epsilon": {key: s[key] for key in ("mean", "median", "q90", "q99", "max")},
        "fraction_below": {f"{t:g}": frac for t, frac in s["below"].items()},
        "fraction_below_tenth_of_dp": float(np.mean(eps <= s["dp_epsilon"] / 10)),
        **evaluation,
        "ledger": None,  # with --ledger: this release next to the people's totals
        "read_from_data": bounds_read + [f"categories of {c!r}" for c in categories_read],
        "bounds_warnings": _messages(caught, BoundsWarning),
        # anything else the fit said (never swallowed)
        "warnings": [str(w.message) for w in caught if not (
            issubclass(w.category, (BoundsWarning, FallbackWarning))
            or str(w.message) in said)],
    }
    noise = ("secure (256 bits from the operating system)" if args.random_state is None
             else f"seeded with --random-state {args.random_state}: predictable noise, "
             "for experiments only, not for a release")
    return report, public, {"publishable": publishable, "curator_only": curator,
                            "noise": noise}, (train, test)


def _check_ledger(args):
    """The ledger options, checked before the fit (a release that cannot be
    recorded is not made)."""
    if args.ledger is None:
        if args.id_column is not None:
            raise DataError("--id-column needs --ledger FILE (the ids only serve to "
                            "record the release in a privacy ledger)")
        return
    if args.csv is not None and args.id_column is None:
        raise DataError("--ledger needs --id-column with a CSV file: the column of each "
                        "row's person key")
    if args.publish_epsilon is not None and args.test_size > 0:
        raise DataError("--ledger with --publish-epsilon needs --test-size 0: what a "
                        "published report reveals about a held-out person is not known")
    if not os.path.exists(args.ledger):
        folder = os.path.dirname(os.path.abspath(args.ledger))
        if not os.path.isdir(folder):
            raise DataError(f"cannot create the ledger {args.ledger}: no folder {folder}")
        return
    try:
        PrivacyLedger(args.ledger).close()
    except (LedgerError, sqlite3.Error) as exc:
        raise DataError(f"cannot open the ledger {args.ledger}: {exc}") from None


def _record(args, report, X, y, ids, split, name):
    """Record the release in the ledger: the training rows' people charged
    their losses, the held-out people (not in the release) the loss of adding
    their record; its summary, for the curator."""
    train, test = split
    train_ids = ids[train]
    # a held-out row of someone with a training row: the release does not
    # depend on it (they are charged for their training rows)
    held = test[~np.isin(ids[test], train_ids)]
    keys, counts = np.unique(ids[held], return_counts=True)
    if np.any(counts > 1):
        raise DataError(
            f"{_plural(int(np.sum(counts > 1)), 'person')} (e.g. {keys[counts > 1][0]!r}) "
            "with several held-out rows and none in training: the ledger charges an "
            "absent person for adding one record; use --test-size 0")
    absent = {} if not held.size else {"absent": ids[held], "absent_X": X[held],
                                       "absent_y": y[held]}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = record_from_cli(args.ledger, report, train_ids,
                                     name=f"{ESTIMATORS[args.estimator]} on {name}",
                                     total_delta="sum", **absent)
        except (LedgerError, sqlite3.Error) as exc:
            raise DataError(f"cannot record in the ledger {args.ledger}: {exc}") from None
    return {"file": args.ledger, **summarise_record(result)}, [
        str(w.message) for w in caught]


def _number(value):
    return f"{value:.6g}"


def _released_bounds(est):
    """The privately tightened bounds of a fit, or None."""
    if not hasattr(est, "bounds_release_"):
        return None
    out = {"epsilon": float(est.bounds_epsilon_), "y_bound": list(est.y_bound_)}
    if est.bounds_X_ is not None:
        out["bounds_X"] = [b.tolist() for b in est.bounds_X_]
    else:
        out["data_norm"] = est.data_norm_
    return out


def _text(r):
    """The report in plain words, as (label, value) rows in two blocks."""
    p, c = r["publishable"], r["curator_only"]
    if p["mean_only"]:
        what = (": the private label mean alone" + ("" if p["reason"] else
                ", too little data for slopes at this budget"))
    elif p["zero_slopes"]:
        what = ": every slope is 0 (no signal showed through the noise)"
    else:
        what = ""
    rows = [
        ("MAY BE PUBLISHED", "the released model and its guarantee"),
        ("data", f"{p['data']}: {p['n_train']} people in the training data, "
                 f"{_plural(p['n_features'], 'feature')}"),
        ("model", f"{p['estimator']}, released with differential privacy{what}"),
    ]
    if p["reason"]:
        rows.append(("  why", p["reason"]))
    m = p["model"]
    rows.append(("  intercept", _number(m["intercept"])))
    rows += [(f"  {name}", _number(coef)) for name, coef in zip(m["feature_names"], m["coef"])]
    rows.append(("guarantee", f"DP epsilon {p['dp_epsilon']:.3g} at delta "
                              f"{p['dp_delta']:.2g}: for every person, any conclusion "
                              "drawn from the model is at most "
                              f"e^{p['dp_epsilon']:.3g} times more likely with their data "
                              "than without it (except with probability delta)"))
    if not p["dp_epsilon"] <= MEANINGLESS_EPSILON:
        rows.append(("WARNING", f"a DP epsilon above {MEANINGLESS_EPSILON:g} protects "
                                "practically no one: lower --epsilon (or give one "
                                "instead of --gamma)"))
    b = p["released_bounds"]
    if b is not None:
        ranges = (f"features in [{', '.join(f'{v:.4g}' for v in b['bounds_X'][0])}] to "
                  f"[{', '.join(f'{v:.4g}' for v in b['bounds_X'][1])}]"
                  if "bounds_X" in b else f"rows of norm at most {b['data_norm']:.4g}")
        rows.append(("bounds", f"tightened privately (epsilon {b['epsilon']:.3g} of the "
                               f"guarantee): {ranges}; label in [{b['y_bound'][0]:.4g}, "
                               f"{b['y_bound'][1]:.4g}]"))
    rows.append(("noise", r["noise"]))
    if p["published"] is not None:
        q = p["published"]["pdp_epsilon"]
        rows.append(("published report",
                     f"per-instance epsilons, private estimates (noisy when the data "
                     f"are few): median {q['median']:.3g}, 90th percentile "
                     f"{q['q90']:.3g}, 99th {q['q99']:.3g}; the guarantee above "
                     "includes what publishing them costs"))
    if r.get("saved_model"):
        read = [entry for entry in c["read_from_data"] if entry.startswith("categories")]
        rows.append(("saved model", r["saved_model"] + (
            "" if p["data"] != r["saved_model_table"] else
            ": sklearn_pdp.PublicLinearModel.from_json(FILE).predict takes the table's "
            "own columns (text as text) or the encoded ones") + (
                                        f"; it holds the {', '.join(read)}, read from the "
                                        "data (see the note below)" if read else "")))
    q = c["pdp_epsilon"]
    rows += [
        ("", ""),
        ("FOR THE CURATOR ONLY", "computed from the private data without privacy: do "
                                 "not publish"),
        ("per person", "each person's per-instance epsilon: the guarantee above for "
                       "the training data as it is, computed from their own record "
                       "(at most the DP epsilon)"),
        ("  median", f"{q['median']:.3g}"),
        ("  90% of people", f"at most {q['q90']:.3g}"),
        ("  99% of people", f"at most {q['q99']:.3g}"),
        ("  most exposed", f"{q['max']:.3g}"),
        ("  a tenth or less", f"{c['fraction_below_tenth_of_dp']:.1%} of the people lose "
                               "at most a tenth of the DP epsilon"),
        # a threshold at a tenth of the DP epsilon repeats the line above
        *((f"  at most {t}", f"{frac:.1%} of the people")
          for t, frac in c["fraction_below"].items()
          if not np.isclose(float(t), p["dp_epsilon"] / 10)),
    ]
    if c.get("ledger"):
        rows.append(("privacy ledger", f"{c['ledger']['file']}: each person's loss in "
                                       "this release next to their total over every "
                                       "release recorded there"))
        rows += [(f"  {label}", value) for label, value in describe_summary(c["ledger"])]
    if c["test_r2"] is None:
        rows.append(("test R^2", "not evaluated (--test-size 0: every row trains)"))
    else:
        rows.append(("test R^2", f"{c['test_r2']:.4f} private model, "
                                 f"{c['test_r2_least_squares']:.4f} least squares "
                                 f"without privacy ({c['n_test']} held-out rows)"))
    rows += [("bounds", message) for message in c["bounds_warnings"]]
    rows += [("warning", message) for message in c["warnings"]]
    if c["read_from_data"]:
        rows.append(("note", f"{', '.join(c['read_from_data'])} read from the data: "
                             "that leaks and the numbers above do not cover it; declare "
                             "them with --bounds-x (or --data-norm), --y-bound and "
                             "--categories"))
    if r.get("plot"):
        rows.append(("plot", r["plot"]))
    return rows


def main(argv=None):
    try:
        code = _command(argv)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return code
    except BrokenPipeError:  # the reader (such as head) stopped early
        # Python flushes stdout again at exit: let that flush go nowhere
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def _command(argv):
    if (sys.argv[1:] if argv is None else list(argv))[:1] == ["ledger"]:
        from ._ledger_cli import main as ledger_main
        return ledger_main((sys.argv[1:] if argv is None else list(argv))[1:])
    parser = _parser()
    # a value such as -20,40 is not an option (none starts with a digit):
    # argparse would take it for one
    argv = [" " + a if re.match(r"-\.?\d", a) else a
            for a in (sys.argv[1:] if argv is None else argv)]
    args = parser.parse_args(argv)
    try:
        return _main(args)
    except DataError as exc:  # one line: the usage block would hide it
        parser.exit(2, f"{parser.prog}: error: {exc}\n")


def _main(args):
    _check_ledger(args)
    for option, path in (("--save-model", args.save_model), ("--plot", args.plot)):
        folder = os.path.dirname(os.path.abspath(path)) if path is not None else None
        if folder is not None and not os.path.isdir(folder):
            # before the fit: a release recorded in a ledger but never saved
            raise DataError(f"cannot write {path} ({option}): no folder {folder}")
    X, y, name, bounds, encoding, ids = _load(args)
    if args.plot is not None:
        try:  # fail before the fit, not after
            import matplotlib
        except ImportError:
            raise DataError(f"--plot needs matplotlib: {PLOT_HINT}") from None
        matplotlib.use("Agg")
    report, public, result, split = _report(args, X, y, name, bounds, encoding)
    if args.ledger is not None:  # before anything is written: a release not recorded
        curator = result["curator_only"]
        curator["ledger"], messages = _record(args, report, X, y, ids, split, name)
        curator["warnings"] += messages
    if args.save_model is not None:
        try:
            public.to_json(args.save_model)
        except OSError as exc:
            raise DataError(f"cannot write {args.save_model}: {exc.strerror}") from None
        result["saved_model"] = args.save_model
        # the table whose raw columns the saved model encodes (None: the bundled data)
        result["saved_model_table"] = None if public.encoding is None else args.csv
    if args.plot is not None:
        axes = report.plot(leverage=True)
        try:
            axes[0].figure.savefig(args.plot, format="png")
        except OSError as exc:
            raise DataError(f"cannot write {args.plot}: {exc.strerror}") from None
        result["plot"] = args.plot
    if args.json:
        print(strict_json(result))
        return 0
    print(_layout(_text(result)))
    return 0


def _layout(rows):
    """The text report's rows as lines: labels in a column, long values
    wrapped under their start (a label too long for the column is not
    padded)."""
    import textwrap

    width = max(len(label) for label, _ in rows if len(label) <= LABEL_WIDTH)
    lines = []
    for label, value in rows:
        if not label:
            lines.append("")
            continue
        head = f"{label:<{width}} : "
        lines += textwrap.wrap(
            value, TEXT_WIDTH, initial_indent=head, subsequent_indent=" " * (width + 3),
            break_long_words=False, break_on_hyphens=False) or [head.rstrip()]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
