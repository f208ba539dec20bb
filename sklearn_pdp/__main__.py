"""Command-line release with a per-instance privacy report.

``python -m sklearn_pdp`` fits a private regressor at a privacy budget
(epsilon = 1, delta = 1e-6 by default) on scikit-learn's bundled diabetes data
and explains, in plain words, what the release costs every person in it: the
guarantee that holds for everyone, the distribution of the per-instance
epsilons, and the test R^2 next to that of (non-private) least squares.
``python -m sklearn_pdp data.csv --target y`` does the same for a table of
one's own; ``--json`` prints a machine-readable report instead, ``--plot
FILE`` writes the report's plot as a PNG.
"""

import argparse
import json
import sys
import warnings

import numpy as np
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import train_test_split

from ._report import PDPReport
from .exceptions import PrivacyLeakWarning

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


def _numbers(text):
    """A float, or a comma-separated list of floats, from the command line."""
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number or a list of numbers: {text!r}")
    return values[0] if len(values) == 1 else values


def _parser():
    parser = argparse.ArgumentParser(
        prog="python -m sklearn_pdp",
        description=(
            "Fit a differentially private linear regression at a privacy budget "
            "and report how much privacy every person in the training data "
            "loses (per-instance epsilon) next to the guarantee that holds for "
            "everyone (DP epsilon)."
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
    bounds.add_argument("--data-norm", type=float,
                        help="bound on the l2 norm of the feature rows")
    bounds.add_argument(
        "--bounds-x", nargs=2, type=_numbers, metavar=("LOWER", "UPPER"),
        help="per-feature ranges: two numbers, or two comma-separated lists "
             "with one value per feature",
    )
    bounds.add_argument("--y-bound", type=_numbers, metavar="B or LOW,HIGH",
                        help="range of the label: B for [-B, B], or LOW,HIGH")
    expert = parser.add_argument_group("expert options (the budget is met without them)")
    expert.add_argument("--gamma", type=float,
                        help="ops: posterior scaling instead of --epsilon (no budget)")
    expert.add_argument("--alpha", type=float, help="ridge strength on the scaled data")
    expert.add_argument(
        "--kappa", type=float,
        help="adaops: fixed condition-number parameter of the eigenvalue floor "
             "n / (d kappa) (default: chosen from the released eigenvalue)",
    )
    parser.add_argument("--test-size", type=float, default=0.25,
                        help="held-out fraction for the test R^2 (default: %(default)s)")
    parser.add_argument("--random-state", type=int, default=0,
                        help="seed of the split and of the noise (default: %(default)s)")
    parser.add_argument(
        "--thresholds", type=float, nargs="+", default=[0.1, 1.0], metavar="EPS",
        help="report the fraction of people whose epsilon is at most these values "
             "(default: %(default)s)",
    )
    parser.add_argument(
        "--publish-epsilon", type=float, metavar="EPS",
        help="also publish the report with differential privacy at this extra "
             "budget (every estimator): the per-instance numbers then include its "
             "cost, and the JSON report its private summary",
    )
    parser.add_argument("--json", action="store_true",
                        help="print a machine-readable JSON report instead of text")
    parser.add_argument(
        "--plot", metavar="FILE",
        help="write the report's plot to this PNG file (needs matplotlib)",
    )
    return parser


def _load(args, parser):
    """Features, labels, a name for the data and its declared bounds."""
    if args.csv is None:
        if args.target is not None or args.features is not None:
            parser.error("--target and --features need a CSV file")
        from sklearn.datasets import load_diabetes

        X, y = load_diabetes(return_X_y=True)
        return X, y, "diabetes (scikit-learn)", DIABETES_BOUNDS
    if args.target is None:
        parser.error("--target is required with a CSV file")
    import csv

    try:
        with open(args.csv, newline="") as f:
            rows = list(csv.reader(f))
    except OSError as exc:
        parser.error(f"cannot read {args.csv}: {exc.strerror}")
    if not rows:
        parser.error(f"{args.csv} is empty")
    header, body = rows[0], rows[1:]
    features = args.features or [c for c in header if c != args.target]
    for column in [args.target, *features]:
        if column not in header:
            parser.error(f"column {column!r} not in {args.csv} (columns: {', '.join(header)})")
    if not features:
        parser.error(f"{args.csv} needs at least one feature column besides the target")
    if any(len(row) != len(header) for row in body):
        parser.error(f"{args.csv} has ragged rows (not as many values as the header)")
    if len(body) < 2:
        parser.error(f"{args.csv} needs at least two data rows")
    columns = {}
    for column in [*features, args.target]:
        j = header.index(column)
        try:
            columns[column] = np.array([row[j] for row in body], dtype=float)
        except ValueError:
            hint = "" if args.features else "; choose numeric feature columns with --features"
            parser.error(f"column {column!r} of {args.csv} has non-numeric or empty values{hint}")
        if not np.all(np.isfinite(columns[column])):
            parser.error(f"column {column!r} of {args.csv} contains missing or infinite values")
    X = np.column_stack([columns[c] for c in features])
    return X, columns[args.target], args.csv, {}


def _estimator(args, parser, bounds):
    import sklearn_pdp

    est = getattr(sklearn_pdp, ESTIMATORS[args.estimator])()
    params = {"epsilon": args.epsilon, "delta": args.delta,
              "random_state": args.random_state, **bounds}
    if args.data_norm is not None:  # replaces the bundled data's bounds_X
        params.pop("bounds_X", None)
    # both given by the user: the estimator's own error says so
    for name, value in (("data_norm", args.data_norm), ("y_bound", args.y_bound),
                        ("bounds_X", args.bounds_x)):
        if value is not None:
            params[name] = value
    for name in EXPERT:
        value = getattr(args, name)
        if value is None:
            continue
        if name not in est.get_params():
            parser.error(f"--{name} does not apply to --estimator {args.estimator}")
        params[name] = value
    if args.gamma is not None:  # a raw noise level instead of a budget
        params["epsilon"] = None
    return est.set_params(**params)


def _report(args, X, y, name, bounds, parser):
    """Fit the release on a training split; the numbers of the report."""
    est = _estimator(args, parser, bounds)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=args.test_size, random_state=args.random_state
    )
    # delta is the estimator's (set above): its own error names a bad value
    report = PDPReport(est, thresholds=args.thresholds,
                       publish_epsilon=args.publish_epsilon, random_state=args.random_state)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PrivacyLeakWarning)
        try:
            report.fit(X_train, y_train)
        # invalid parameters, or an estimator that cannot publish its report
        except (ValueError, TypeError, NotImplementedError) as exc:
            parser.exit(2, f"{parser.prog}: error: {exc}\n")
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
    return report, {
        "data": name,
        "n_train": int(X_train.shape[0]),
        "n_features": int(X.shape[1]),
        "estimator": ESTIMATORS[args.estimator],
        "mean_only": bool(getattr(report.estimator_, "mean_only_", False)),
        "dp_epsilon": float(s["dp_epsilon"]),
        "dp_delta": float(s["dp_delta"]),
        "pdp_delta": s["delta"],
        "pdp_epsilon": {key: s[key] for key in ("mean", "median", "q90", "q99", "max")},
        "fraction_below": {f"{t:g}": frac for t, frac in s["below"].items()},
        "fraction_below_tenth_of_dp": float(np.mean(eps <= s["dp_epsilon"] / 10)),
        "test_r2": float(report.estimator_.score(X_test, y_test)),
        "test_r2_least_squares": float(
            LinearRegression().fit(X_train, y_train).score(X_test, y_test)),
        "published": published,
        "bounds_read_from_data": [
            str(w.message).split(" was not given")[0] for w in caught
            if issubclass(w.category, PrivacyLeakWarning)
        ],
    }


def _text(r):
    """The report in plain words, as (label, value) rows."""
    rows = [
        ("data", f"{r['data']}: {r['n_train']} people in the training split, "
                 f"{r['n_features']} features"),
        ("model", f"{r['estimator']}, released with differential privacy"
                  + (": too little data for slopes at this budget, the private label "
                     "mean alone" if r["mean_only"] else "")),
        ("guarantee", f"DP epsilon {r['dp_epsilon']:.3g} at delta {r['dp_delta']:.2g}: "
                      "for every person, any conclusion drawn from the model is at "
                      f"most e^{r['dp_epsilon']:.3g} times more likely with their "
                      "data than without it (except with probability delta)"),
    ]
    if not r["dp_epsilon"] <= MEANINGLESS_EPSILON:
        rows.append(("WARNING", f"a DP epsilon above {MEANINGLESS_EPSILON:g} protects "
                                "practically no one: lower --epsilon"))
    p = r["pdp_epsilon"]
    rows += [
        ("per person", "the same bound for each person of the training data, "
                       "computed from their own data (per-instance epsilon, at "
                       "most the DP epsilon):"),
        ("  median", f"{p['median']:.3g}"),
        ("  90% of people", f"at most {p['q90']:.3g}"),
        ("  99% of people", f"at most {p['q99']:.3g}"),
        ("  most exposed", f"{p['max']:.3g}"),
        ("  below a tenth", f"{r['fraction_below_tenth_of_dp']:.1%} of the people lose "
                            "less than a tenth of the DP epsilon"),
        *((f"  <= {t}", f"{frac:.1%} of the people")
          for t, frac in r["fraction_below"].items()),
        ("test R^2", f"{r['test_r2']:.4f} private model, {r['test_r2_least_squares']:.4f} "
                     "least squares without privacy"),
    ]
    if r["published"] is not None:
        q = r["published"]["pdp_epsilon"]
        rows[2:2] = [("published", "this report is itself published with differential "
                                   "privacy; the numbers below include what that costs")]
        rows.append(("private summary", f"safe to publish: median {q['median']:.3g}, "
                                        f"90th percentile {q['q90']:.3g}, 99th "
                                        f"{q['q99']:.3g} (private estimates, noisy when "
                                        "the data are few)"))
    if r["bounds_read_from_data"]:
        rows.append(("note", f"{', '.join(r['bounds_read_from_data'])} read from the data: "
                             "that leaks and the numbers above do not cover it; declare "
                             "them with --data-norm or --bounds-x, and --y-bound"))
    return rows


def main(argv=None):
    parser = _parser()
    args = parser.parse_args(argv)
    X, y, name, bounds = _load(args, parser)
    if args.plot is not None:
        try:  # fail before the fit, not after
            import matplotlib
        except ImportError:
            parser.error("--plot needs matplotlib: pip install 'sklearn-pdp[plot]'")
        matplotlib.use("Agg")
    report, result = _report(args, X, y, name, bounds, parser)
    if args.plot is not None:
        axes = report.plot(leverage=True)
        try:
            axes[0].figure.savefig(args.plot, format="png")
        except OSError as exc:
            parser.exit(2, f"{parser.prog}: error: cannot write {args.plot}: {exc.strerror}\n")
        result["plot"] = args.plot
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    rows = _text(result) + ([("plot", args.plot)] if args.plot else [])
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        print(f"{label:<{width}} : {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
