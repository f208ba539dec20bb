"""Spread of the test R^2 over draws of the noise, on public data: the
table the command line's curator block reads (``sklearn_pdp/_cli/spread.csv``).

A release is one draw of a noisy mechanism. How far another draw could have
landed is measured here, on the bundled public weather table
(``sklearn_pdp.datasets.load_nyc_weather``, encoded as the command line
encodes it), never on a curator's private rows: a curator shown several
draws of their own data could publish the best, which breaks the guarantee.
For every estimator and each cell of a grid of training sizes n, feature
counts d (the 5 numeric columns, or all 10 encoded ones) and budgets
epsilon, a fixed random subsample of n training rows is fitted with
``--draws`` noise seeds, each scored on the same held-out rows. Run from
the repository root::

    python benchmarks/spread.py            # writes sklearn_pdp/_cli/spread.csv
"""

import argparse
import csv
import sys
import warnings
from pathlib import Path

import numpy as np
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import train_test_split

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sklearn_pdp.cli._options import _parser  # noqa: E402
from sklearn_pdp.cli._spread import COLUMNS, TABLE  # noqa: E402
from sklearn_pdp.cli._table import _load  # noqa: E402
from sklearn_pdp._registry import REGRESSORS  # noqa: E402

DELTA = 1e-6


def cells(args):
    """Yield one row of the table per estimator, n, d and epsilon."""
    X, y, _, bounds, (names, one_hot, _, _), _ = _load(_parser().parse_args([]))
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0)
    lower, upper = (np.asarray(b, dtype=float) for b in bounds["bounds_X"])
    for d, columns in ((int((~one_hot).sum()), ~one_hot), (X.shape[1], np.ones_like(one_hot))):
        for n in args.n:
            rows = np.random.default_rng(n).choice(len(y_train), min(n, len(y_train)),
                                                   replace=False)
            Xn, yn, Xt = X_train[rows][:, columns], y_train[rows], X_test[:, columns]
            ls = LinearRegression().fit(Xn, yn).score(Xt, y_test)
            for eps in args.epsilon:
                for name in args.estimators:
                    scores, mean_only = [], []
                    for seed in range(args.draws):
                        est = REGRESSORS[name](
                            epsilon=eps, delta=DELTA, random_state=seed,
                            bounds_X=(lower[columns], upper[columns]),
                            y_bound=bounds["y_bound"])
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")  # label-mean fallbacks
                            scores.append(est.fit(Xn, yn).score(Xt, y_test))
                        mean_only.append(est.mean_only_)
                    row = [name, len(yn), d, eps, args.draws, min(scores), np.median(scores),
                           max(scores), ls, all(mean_only)]
                    print(*row, sep="\t", flush=True)
                    yield row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[2000, 19582])
    parser.add_argument("--epsilon", type=float, nargs="+", default=[0.3, 1.0, 3.0])
    parser.add_argument("--estimators", nargs="+", default=sorted(REGRESSORS))
    parser.add_argument("--draws", type=int, default=5)
    parser.add_argument("--out", default=str(TABLE))
    args = parser.parse_args()
    rows = list(cells(args))
    with open(args.out, "w", newline="") as f:
        f.write("# written by: python benchmarks/spread.py " + " ".join(sys.argv[1:]) + "\n")
        writer = csv.writer(f)
        writer.writerow(COLUMNS)
        writer.writerows([r[:4] + [r[4]] + [f"{v:.4f}" for v in r[5:9]] + [int(r[9])]
                          for r in rows])


if __name__ == "__main__":
    main()
