"""The command's options: its argument parser and the types of its values."""

import argparse
import csv
import re

from .._registry import DEFAULT_REGRESSOR, REGRESSORS

# expert options, set only on estimators with a parameter of that name
EXPERT = ("gamma", "alpha", "kappa")


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


def _names(text):
    """A comma-separated list, quoted as in a CSV file: a name holding a
    comma is written in double quotes (``a,"b, c"``)."""
    return next(csv.reader([text]))


def _categories(text):
    """``COLUMN=a,b,c``: the declared categories of a text column."""
    column, sep, values = text.partition("=")
    if not sep or not column or not values:
        raise argparse.ArgumentTypeError(
            f"expected COLUMN=a,b,c (the categories of a text column), got {text!r}")
    return column, _names(values)


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
    # A value such as "-3,0" (one lower end per feature) or "-1e3" is a
    # value, not an option: Python 3.13's rule, which older argparse lacks
    # (it takes only plain negative numbers, so "--bounds-x -3,0 3,10" failed).
    parser._negative_number_matcher = re.compile(r"^-\.?\d")
    parser.add_argument(
        "csv", nargs="?",
        help="CSV file with a header row (default: a bundled public table, --dataset)",
    )
    parser.add_argument(
        "--dataset", choices=("nyc_weather", "diabetes"),
        help="bundled public table used without a CSV file: nyc_weather (the "
             "default; sklearn_pdp.datasets.load_nyc_weather: the temperature from "
             "the dew point, humidity, wind, rain, visibility, airport and season, "
             "26110 hourly rows with public bounds and categories) or diabetes "
             "(scikit-learn's, 442 rows: too few for slopes at epsilon 1)",
    )
    parser.add_argument("--target", help="name of the label column of the CSV")
    parser.add_argument(
        "--features", type=_names, metavar="A,B,...",
        help="feature columns of the CSV (default: every column but the target); "
             "a name holding a comma in double quotes, as in the CSV file",
    )
    parser.add_argument(
        "--categories", type=_categories, action="append", default=[],
        metavar="COLUMN=a,b,c",
        help="declared categories of a text column, one-hot encoded (the first "
             "category is the reference, carried by the intercept); repeat for "
             "each text column. A category holding a comma in double quotes, as "
             "in the CSV file: 'job=\"Sales, retail\",Clerical'. Categories not "
             "declared are read from the data, which leaks",
    )
    parser.add_argument(
        "--estimator", choices=sorted(REGRESSORS), default=DEFAULT_REGRESSOR,
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
    bounds.add_argument(
        "--schema", metavar="FILE",
        help="JSON file of a declared schema (sklearn_pdp.Schema.to_json): the "
             "feature columns with their ranges or categories, the target and its "
             "range, the id column; in place of --features, --categories and "
             "--bounds-x. With either, each text column takes one share of the row "
             "norm, whatever its number of categories",
    )
    bounds.add_argument("--data-norm", type=float,
                        help="bound on the l2 norm of the (encoded) feature rows")
    bounds.add_argument("--y-bound", type=_numbers, metavar="B or LOW,HIGH",
                        help="range of the label: B for [-B, B], or LOW,HIGH")
    bounds.add_argument(
        "--tighten-bounds", nargs="?", const="yes", default="auto",
        choices=("yes", "auto", "no"),
        help="on by default ('auto'): release tighter bounds than the declared "
             "ones first, from a public share of the rows (chosen by a hash of each "
             "row) with the whole budget, the model fitted on the other rows, where "
             "the data suffice (a public rule, the label's range first; 'auto' is "
             "silent where they do not, 'yes' warns); the released bounds are "
             "reported, and each per-instance epsilon is then given them (pdp_kind "
             "'conditional'). 'no' switches it off: the declared bounds, with exact "
             "per-instance losses",
    )
    bounds.add_argument("--tighten-share", type=float, metavar="SHARE",
                        help="share of the rows for the bounds (default: 0.1)")
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
                        help="held-out fraction for the test R^2; with --id-column the "
                             "share of people held out, each with all their records "
                             "(drawn as scikit-learn's GroupShuffleSplit draws groups, "
                             "rounded up); 0 fits on every row and skips the evaluation "
                             "(default: %(default)s)")
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
        "people with several records, and the per-person privacy ledger (summarise one with: python -m sklearn_pdp ledger FILE)")
    ledger.add_argument(
        "--ledger", metavar="FILE",
        help="record the release in the privacy ledger in this SQLite file (created "
             "if missing) and report each person's total loss over every release "
             "recorded in it; the held-out people are charged the loss of adding "
             "all their records together. Needs --id-column with a CSV; for a bundled "
             "table a person is their row number in it, from 0",
    )
    ledger.add_argument(
        "--id-column", metavar="ID",
        help="column of the CSV with each row's person key (kept out of the "
             "features; a key on several rows is one person): the curator's numbers "
             "are then per person, for all their records together (per record with "
             "--publish-epsilon); the guarantee stays per record unless --max-records",
    )
    ledger.add_argument(
        "--max-records", metavar="K", type=int,
        help="a public cap on each person's records (needs --id-column): records "
             "beyond a person's first K in the file are left out, and the guarantee "
             "holds per person, for all their records (not with --publish-epsilon)",
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
