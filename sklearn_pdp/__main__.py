"""Command-line per-instance privacy report.

``python -m sklearn_pdp`` fits a private regressor on scikit-learn's bundled
diabetes data and prints its test R^2, the data-independent DP epsilon and the
distribution of the per-instance epsilons. ``python -m sklearn_pdp data.csv
--target y`` does the same for a table of one's own.
"""

import argparse
import sys
import warnings

import numpy as np
from sklearn.model_selection import train_test_split

from .exceptions import PrivacyLeakWarning

# name -> (class, parameters the command line may set on it)
ESTIMATORS = {
    "ops": ("OPSRegressor", ("gamma", "alpha")),
    "adaops": ("AdaOPSRegressor", ("epsilon", "kappa")),
}


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
    parser.add_argument("--gamma", type=float, help="OPS posterior scaling")
    parser.add_argument("--alpha", type=float, help="ridge strength on the scaled data")
    parser.add_argument("--epsilon", type=float, help="AdaOPS privacy budget")
    parser.add_argument("--kappa", type=float, help="AdaOPS largest acceptable condition number")
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
    return parser


def _load(args, parser):
    if args.csv is None:
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
        parser.error(f"{args.csv} has non-numeric or ragged values")
    if table.ndim != 2 or table.shape[0] < 2:
        parser.error(f"{args.csv} needs at least two data rows")
    if not np.all(np.isfinite(table)):
        parser.error(f"{args.csv} contains missing or infinite values")
    j = header.index(args.target)
    return np.delete(table, j, axis=1), table[:, j], args.csv


def main(argv=None):
    parser = _parser()
    args = parser.parse_args(argv)
    X, y, name = _load(args, parser)

    import sklearn_pdp

    cls_name, tunable = ESTIMATORS[args.estimator]
    params = {k: getattr(args, k) for k in tunable if getattr(args, k) is not None}
    est = getattr(sklearn_pdp, cls_name)(
        delta=args.delta,
        data_norm=args.data_norm,
        y_bound=args.y_bound,
        random_state=args.random_state,
        **params,
    )
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=args.test_size, random_state=args.random_state
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PrivacyLeakWarning)
        est.fit(X_train, y_train)
    leaks = [str(w.message).split(" was not given")[0] for w in caught
             if issubclass(w.category, PrivacyLeakWarning)]

    eps = est.pdp_losses_
    q50, q90 = np.quantile(eps, [0.5, 0.9])
    print(f"data set        : {name} ({X_train.shape[0]} training rows, "
          f"{X.shape[1]} features)")
    print(f"estimator       : {est!r}")
    print(f"scaling         : rows / {est.data_norm_:.4g} into the unit ball, "
          f"y / {est.y_bound_:.4g} into [-1, 1]")
    if leaks:
        print(f"note            : {', '.join(leaks)} read from the data (not private); "
              "declare them with --data-norm / --y-bound")
    print(f"test R^2        : {est.score(X_test, y_test):.4f}")
    print(f"DP epsilon      : {est.dp_epsilon_:.4g} at delta = {est.dp_delta_:g}")
    print(f"per-instance eps: median {q50:.4g}, 90% {q90:.4g}, max {eps.max():.4g} "
          f"at delta = {args.delta:g}")
    if np.isfinite(est.dp_epsilon_) and q50 > 0:
        print(f"DP / median pDP : {est.dp_epsilon_ / q50:.3g}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
