"""Command-line per-instance privacy report.

``python -m sklearn_pdp`` fits a private regressor on scikit-learn's bundled
diabetes data and prints, as a table, its test R^2 and the report of
:class:`~sklearn_pdp.PDPReport`: the distribution of the per-instance epsilons
of the training rows next to the data-independent DP epsilon. ``python -m
sklearn_pdp data.csv --target y`` does the same for a table of one's own;
``--plot FILE`` also writes the report's plot as a PNG.
"""

import argparse
import sys
import warnings

import numpy as np
from sklearn.model_selection import train_test_split

from ._report import PDPReport
from .exceptions import PrivacyLeakWarning

# command-line name -> class name in sklearn_pdp
ESTIMATORS = {
    "ops": "OPSRegressor",
    "adaops": "AdaOPSRegressor",
    "output": "OutputPerturbationRegressor",
    "objpert": "ObjPertRegressor",
    "projection": "RandomProjectionRegressor",
}
# options set on the estimator only if it has a parameter of that name
TUNABLE = ("epsilon", "gamma", "alpha", "kappa")


def _parser():
    parser = argparse.ArgumentParser(
        prog="python -m sklearn_pdp",
        description=(
            "Fit a differentially private linear regression and report how much "
            "privacy every person in the training data loses (per-instance "
            "epsilon) next to the worst-case DP epsilon."
        ),
    )
    parser.add_argument(
        "csv",
        nargs="?",
        help="CSV file with a header row (default: scikit-learn's diabetes data)",
    )
    parser.add_argument("--target", help="name of the label column of the CSV")
    parser.add_argument(
        "--estimator", choices=sorted(ESTIMATORS), default="ops",
        help="private regressor (default: %(default)s)",
    )
    parser.add_argument("--delta", type=float, default=1e-6,
                        help="delta of the reported epsilons (default: %(default)s)")
    parser.add_argument(
        "--epsilon", type=float,
        help="privacy budget, for the estimators that take one (not ops)",
    )
    parser.add_argument("--gamma", type=float, help="OPS posterior scaling")
    parser.add_argument("--alpha", type=float, help="ridge strength on the scaled data")
    parser.add_argument(
        "--kappa", type=float, help="AdaOPS: largest acceptable condition number"
    )
    parser.add_argument(
        "--data-norm", type=float,
        help="bound on the row norms of X (default: read from the data, a leak)",
    )
    parser.add_argument(
        "--y-bound", type=float,
        help="bound on |y| (default: read from the data, a leak)",
    )
    parser.add_argument("--test-size", type=float, default=0.25,
                        help="held-out fraction for the test R^2 (default: %(default)s)")
    parser.add_argument("--random-state", type=int, default=0,
                        help="seed of the split and of the noise (default: %(default)s)")
    parser.add_argument(
        "--thresholds", type=float, nargs="+", default=[0.1, 1.0], metavar="EPS",
        help="report the fraction of rows with epsilon at most these values "
             "(default: %(default)s)",
    )
    parser.add_argument(
        "--plot", metavar="FILE",
        help="write the report's plot to this PNG file (needs matplotlib)",
    )
    return parser


def _load(args, parser):
    if args.csv is None:
        if args.target is not None:
            parser.error("--target needs a CSV file")
        from sklearn.datasets import load_diabetes

        X, y = load_diabetes(return_X_y=True)
        return X, y, "diabetes (scikit-learn)"
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
    if args.target not in header:
        parser.error(f"column {args.target!r} not in {args.csv} (columns: {', '.join(header)})")
    try:
        table = np.array(body, dtype=float)
    except ValueError:
        parser.error(f"{args.csv} has non-numeric, empty or ragged values")
    if table.ndim != 2 or table.shape[0] < 2:
        parser.error(f"{args.csv} needs at least two data rows")
    if table.shape[1] < 2:
        parser.error(f"{args.csv} needs at least one feature column besides the target")
    if not np.all(np.isfinite(table)):
        parser.error(f"{args.csv} contains missing or infinite values")
    j = header.index(args.target)
    return np.delete(table, j, axis=1), table[:, j], args.csv


def _estimator(args, parser):
    import sklearn_pdp

    est = getattr(sklearn_pdp, ESTIMATORS[args.estimator])()
    params = {"data_norm": args.data_norm, "y_bound": args.y_bound,
              "random_state": args.random_state}
    for name in TUNABLE:
        value = getattr(args, name)
        if value is None:
            continue
        if name not in est.get_params():
            parser.error(f"--{name} does not apply to --estimator {args.estimator}")
        params[name] = value
    return est.set_params(**params)


def _table(report):
    s = report.summary_
    rows = [
        ("per-instance eps", f"of the {s['n_samples']} training rows at delta = {s['delta']:g}"),
        ("  mean", f"{s['mean']:.4g}"),
        ("  median", f"{s['median']:.4g}"),
        ("  90%", f"{s['q90']:.4g}"),
        ("  99%", f"{s['q99']:.4g}"),
        ("  max", f"{s['max']:.4g}"),
        *((f"  <= {t:g}", f"{frac:.1%} of the rows") for t, frac in s["below"].items()),
        ("DP epsilon", f"{s['pdp_for_all']:.4g} at delta = {s['dp_delta']:g} "
                       "(any person, any data set of this size in the domain)"),
    ]
    if np.isfinite(s["dp_over_median"]):
        rows.append(("DP / median pDP", f"{s['dp_over_median']:.3g}x"))
    return rows


def main(argv=None):
    parser = _parser()
    args = parser.parse_args(argv)
    X, y, name = _load(args, parser)
    est = _estimator(args, parser)
    if args.plot is not None:
        try:  # fail before the fit, not after
            import matplotlib
        except ImportError:
            parser.error("--plot needs matplotlib: pip install 'sklearn-pdp[plot]'")
        matplotlib.use("Agg")

    report = PDPReport(est, delta=args.delta, thresholds=args.thresholds)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=args.test_size, random_state=args.random_state
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PrivacyLeakWarning)
        try:
            report.fit(X_train, y_train)
        except ValueError as exc:  # invalid parameters, singular ridge
            parser.exit(2, f"{parser.prog}: error: {exc}\n")
    leaks = [str(w.message).split(" was not given")[0] for w in caught
             if issubclass(w.category, PrivacyLeakWarning)]
    fitted = report.estimator_

    rows = [
        ("data set", f"{name} ({X_train.shape[0]} training rows, {X.shape[1]} features)"),
        ("estimator", repr(fitted)),
        ("scaling", f"rows / {fitted.data_norm_:.4g} into the unit ball, "
                    f"y / {fitted.y_bound_:.4g} into [-1, 1]"),
    ]
    if leaks:
        rows.append(("note", f"{', '.join(leaks)} read from the data (not private); "
                             "declare them with --data-norm / --y-bound"))
    rows.append(("test R^2", f"{fitted.score(X_test, y_test):.4f}"))
    rows += _table(report)
    if args.plot is not None:
        axes = report.plot(leverage=True)
        figure = axes[0].figure
        figure.tight_layout()
        try:
            figure.savefig(args.plot, format="png")
        except OSError as exc:
            parser.exit(2, f"{parser.prog}: error: cannot write {args.plot}: {exc.strerror}\n")
        rows.append(("plot", args.plot))
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        print(f"{label:<{width}} : {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
