"""Where the time of the per-row losses goes, for the defaults built from a
budget (``epsilon=1``, declared bounds, ``tighten_bounds=False``).

Run from the repository root::

    python benchmarks/row_losses.py --n 200000 --d 10 100

For each estimator and d: a warm fit (the public calibrations are cached),
then Ridge(solver="cholesky") and the timed fit, ``--repeats`` times
interleaved, reading ``pdp_losses_`` inside the timed call; the minima, in
microseconds per row and as a ratio to Ridge. For the mixture of OPS and
AdaOPS the last fit is split into the rows' statistics (the pairs of cells,
their masses), the start (OPS under each row's likeliest pair) and the root
search, with the mixture's tail evaluations per row (both directions).
Single-threaded BLAS is advised (``OMP_NUM_THREADS=1``): timings on a busy
machine are noisy, compare ratios.
"""

import argparse
import time
import warnings

import numpy as np
from sklearn.linear_model import Ridge

import sklearn_pdp.accounting._divergence as divergence
import sklearn_pdp.accounting._ops as ops
import sklearn_pdp.mechanisms.adaops._release as adaops
from sklearn_pdp import AdaOPSRegressor, ObjPertRegressor, OPSRegressor

ESTIMATORS = {"ops": OPSRegressor, "adaops": AdaOPSRegressor, "objpert": ObjPertRegressor}


def data(n, d, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, (n, d))
    y = np.clip(0.5 * X @ rng.normal(size=d) / np.sqrt(d) + 0.1 * rng.normal(size=n), -1, 1)
    return X, y


def timed(func):
    start = time.perf_counter()
    out = func()
    return time.perf_counter() - start, out


def fit(name, X, y):
    d = X.shape[1]
    model = ESTIMATORS[name](epsilon=1.0, bounds_X=(-np.ones(d), np.ones(d)), y_bound=1.0,
                             tighten_bounds=False, random_state=0)
    model.fit(X, y)
    return np.asarray(model.pdp_losses_)


class Split:
    """Times the mixture's parts by wrapping them (the last fit only)."""

    def __init__(self):
        self.seconds = {"statistics": 0.0, "mixture": 0.0, "search": 0.0}
        self.evaluations = 0
        self.rows = 0

    def wrap(self, owner, attr, key, count_rows=False):
        inner = getattr(owner, attr)

        def wrapped(*args, **kwargs):
            seconds, out = timed(lambda: inner(*args, **kwargs))
            self.seconds[key] += seconds
            if count_rows:
                self.rows += np.size(out)
            return out

        setattr(owner, attr, wrapped)
        return inner

    def __enter__(self):
        self.saved = [
            (adaops.AdaOPSRelease, "_mixture_columns",
             self.wrap(adaops.AdaOPSRelease, "_mixture_columns", "statistics")),
            (adaops, "ops_mixture_epsilon",
             self.wrap(adaops, "ops_mixture_epsilon", "mixture", count_rows=True)),
            (ops, "_search", self.wrap(ops, "_search", "search")),
        ]
        tails = divergence.mixture_tails

        def counted_tails(*args, **kwargs):
            def counted(tail):
                def evaluate(eps, idx):
                    self.evaluations += idx.size
                    return tail(eps, idx)
                return evaluate
            return [counted(tail) for tail in tails(*args, **kwargs)]

        self.saved.append((ops, "mixture_tails", tails))
        ops.mixture_tails = counted_tails
        return self

    def __exit__(self, *exc):
        for owner, attr, inner in self.saved:
            setattr(owner, attr, inner)

    def report(self, n):
        per_row = {key: f"{seconds / n * 1e6:.2f}" for key, seconds in self.seconds.items()}
        evaluations = self.evaluations / max(self.rows, 1)
        return (f"  statistics {per_row['statistics']}, mixture {per_row['mixture']} "
                f"(search {per_row['search']}) us/row; {evaluations:.2f} tail "
                "evaluations a row")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--d", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--estimators", nargs="+", default=list(ESTIMATORS))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    for d in args.d:
        X, y = data(args.n, d)
        for name in args.estimators:
            fit(name, X, y)
            fits, ridges = [], []
            for _ in range(args.repeats):
                ridges.append(timed(lambda: Ridge(solver="cholesky").fit(X, y))[0])
                fits.append(timed(lambda: fit(name, X, y))[0])
            best, ridge = min(fits), min(ridges)
            print(f"{name} d={d}: {best / args.n * 1e6:.2f} us/row, {best / ridge:.1f} x Ridge "
                  f"({ridge * 1e3:.1f} ms)", flush=True)
            if name != "objpert":
                with Split() as split:
                    fit(name, X, y)
                print(split.report(args.n), flush=True)


if __name__ == "__main__":
    main()
