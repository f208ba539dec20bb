"""Does tightening ever hurt? Test MSE of ``tighten_bounds="auto"`` over
``tighten_bounds=False`` (the declared bounds), same ``random_state``, on
tables whose labels are heavy-tailed and on light-tailed ones.

Run from the repository root (single-threaded, the numbers are MSEs)::

    OMP_NUM_THREADS=1 python benchmarks/tail_labels.py --out results.tsv
    python benchmarks/tail_labels.py --summary results.tsv

Each fit appends one line to the TSV (table, rows, estimator, epsilon,
seed, mode, test MSE), so that runs can be split and resumed; ``--summary``
prints, per table, estimator and epsilon, the mean MSE over the seeds with
tightening over the mean without, and the worst ratio per estimator.

Tables, every range declared from the columns' meaning (not from the data):

- ``lognormal``: a spending label, exp of a linear model plus N(0, 0.8^2)
  noise (median about 1100, declared [0, 1e6]) on age, education, hours and
  two categorical columns.
- ``pareto``: a linear label plus 5 times Pareto(2.5) noise (declared
  [0, 1e4]).
- ``count``: county-like homicide counts, Poisson with a mean proportional
  to a lognormal population (declared [0, 1e7], median 30,000) and rising
  with the poverty rate (declared [0, 1000] counts).
- ``meddol``: the RAND health insurance experiment's yearly medical spending
  (statsmodels' source table, 20,190 person-years; median 35 dollars, max
  39,182; declared [0, 1e5]) on its insurance plan, health, income, age and
  education columns.
- light tails: ``heavy`` (the ``utility --schema`` table: heavy-tailed
  features, a normal label), ``randhie`` visits and ``fair`` (the schema
  tables, with statsmodels), and ``centred`` / ``offset`` (the utility
  grid's synthetic tables, data_norm and y_bound 1).

Each table at ``--n`` rows (a random subsample per seed where the table is
larger; the synthetic ones drawn at that size); 80/20 train/test split.
"""

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
from sklearn.model_selection import train_test_split

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from registry import FACTORIES  # noqa: E402
from run import DELTA, _statsmodels_data, fair_schema, heavy_table  # noqa: E402
from run import offset_synthetic, randhie_schema, synthetic  # noqa: E402


def _one_hot(codes, levels):
    return np.eye(levels)[codes]


def lognormal_table(n, rng):
    age = np.clip(rng.normal(45, 12, n), 18, 90)
    educ = np.clip(rng.normal(13, 3, n), 0, 25)
    hours = np.clip(rng.normal(40, 10, n), 0, 100)
    a, b = rng.integers(0, 5, n), rng.integers(0, 4, n)
    log_y = (7 + 0.02 * (age - 45) + 0.08 * (educ - 13) + 0.01 * (hours - 40)
             + np.array([0, 0.2, -0.3, 0.5, 0.1])[a] + np.array([0, -0.2, 0.3, 0.1])[b]
             + rng.normal(0, 0.8, n))
    X = np.column_stack([age, educ, hours, _one_hot(a, 5), _one_hot(b, 4)])
    bounds = (np.zeros(12), np.r_[120.0, 25.0, 100.0, np.ones(9)])
    return X, np.exp(log_y), bounds, (0.0, 1e6)


def pareto_table(n, rng):
    X = np.column_stack([rng.normal(50, 10, (n, 4)), _one_hot(rng.integers(0, 3, n), 3)])
    y = 20 + X[:, :4] @ np.array([0.5, -0.3, 0.2, 0.4]) + 5 * rng.pareto(2.5, n)
    bounds = (np.zeros(7), np.r_[np.full(4, 100.0), np.ones(3)])
    return X, np.clip(y, 0, 1e4), bounds, (0.0, 1e4)


def count_table(n, rng):
    population = np.minimum(np.exp(rng.normal(10.3, 1.3, n)), 1e7)
    poverty = np.clip(rng.normal(15, 6, n), 0, 60)
    age = np.clip(rng.normal(40, 5, n), 20, 70)
    region = rng.integers(0, 4, n)
    rate = 6e-5 * np.exp(0.04 * (poverty - 15) - 0.02 * (age - 40))
    y = rng.poisson(population * rate * np.array([1.0, 1.5, 0.7, 1.2])[region])
    X = np.column_stack([population, poverty, age, _one_hot(region, 4)])
    bounds = (np.zeros(7), np.r_[1e7, 100.0, 100.0, np.ones(4)])
    return X, np.minimum(y, 1000).astype(float), bounds, (0.0, 1000.0)


_MEDDOL = ["logc", "idp", "lpi", "fmde", "physlm", "disea", "hlthg", "hlthf", "hlthp",
           "linc", "xage", "educdec", "female", "child"]


def meddol_table():
    """statsmodels' RAND source table (None without statsmodels)."""
    if _statsmodels_data("randhie") is None:
        return None
    import pandas as pd
    from statsmodels.datasets import randhie

    frame = pd.read_csv(Path(randhie.__file__).parent / "src" / "randhie.csv")
    frame = frame[_MEDDOL + ["meddol"]].dropna()
    bounds = (np.zeros(14), np.array([np.log(101.0), 1, 8, 12, 1, 100, 1, 1, 1, 14, 120,
                                      25, 1, 1]))
    return frame[_MEDDOL].to_numpy(float), frame["meddol"].to_numpy(float), bounds, (0.0, 1e5)


def _subsample(table, n, rng):
    X, y, bounds, y_bound = table
    rows = rng.choice(y.size, min(n, y.size), replace=False)
    return X[rows], y[rows], bounds, y_bound


def tables():
    """name -> loader(n, seed) returning X, y, bounds_X (None: data_norm),
    y_bound, data_norm (None: bounds_X)."""
    def drawn(make):
        return lambda n, seed: (*make(n, np.random.default_rng([seed, 45])), None)

    out = {"lognormal": drawn(lognormal_table), "pareto": drawn(pareto_table),
           "count": drawn(count_table),
           "heavy": lambda n, seed: (*heavy_table(n, seed), None)}
    meddol = meddol_table()
    if meddol is not None:
        out["meddol"] = lambda n, seed: (
            *_subsample(meddol, n, np.random.default_rng([seed, 7])), None)
        out["randhie"] = lambda n, seed: (*_subsample(
            randhie_schema(), n, np.random.default_rng([seed, 7])), None)
        out["fair"] = lambda n, seed: (*_subsample(
            fair_schema(), n, np.random.default_rng([seed, 7])), None)
    for name, make in (("centred", synthetic), ("offset", offset_synthetic)):
        out[name] = lambda n, seed, make=make: (*make(n, 10, seed), None, 1.0, 1.0)
    return out


def fit_mse(name, eps, seed, X_tr, y_tr, X_te, y_te, bounds_X, y_bound, data_norm, mode):
    est = FACTORIES[name](eps, DELTA, *X_tr.shape, data_norm=data_norm, y_bound=y_bound,
                          random_state=seed).set_params(bounds_X=bounds_X,
                                                        tighten_bounds=mode)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fallbacks and clipping shares: measured, not read
        est.fit(X_tr, y_tr)
    if not est.dp_epsilon_ <= eps * (1 + 1e-9):
        raise RuntimeError(f"{name}: dp_epsilon_={est.dp_epsilon_} exceeds {eps}")
    return float(np.mean((est.predict(X_te) - y_te) ** 2)), hasattr(est, "bounds_release_")


def run(args):
    loaders = tables()
    with open(args.out, "a") as out:
        for table in args.tables:
            for n in args.n:
                for eps in args.epsilon:
                    for seed in range(args.seeds):
                        X, y, bounds_X, y_bound, data_norm = loaders[table](n, seed)
                        X_tr, X_te, y_tr, y_te = train_test_split(
                            X, y, test_size=0.2, random_state=seed)
                        for name in args.estimators:
                            for mode in (False, "auto"):
                                mse, tight = fit_mse(name, eps, seed, X_tr, y_tr, X_te, y_te,
                                                     bounds_X, y_bound, data_norm, mode)
                                line = [table, X.shape[0], name, eps, seed, mode, mse, tight]
                                print("\t".join(map(str, line)), file=out, flush=True)


def summary(path):
    import pandas as pd

    frame = pd.read_csv(path, sep="\t", header=None, names=[
        "table", "n", "estimator", "epsilon", "seed", "mode", "mse", "tightened"])
    frame["mode"] = frame["mode"].astype(str)
    keys = ["table", "n", "estimator", "epsilon"]
    mean = frame.pivot_table(index=keys, columns="mode", values="mse", aggfunc="mean")
    share = frame[frame["mode"] == "auto"].groupby(keys)["tightened"].mean()
    cells = pd.DataFrame({"ratio": mean["auto"] / mean["False"], "tightened": share})
    print(cells.round(3).to_string())
    worst = cells.groupby(["estimator", "table"])["ratio"].max().unstack()
    print("\nworst ratio (auto / declared) per estimator and table:")
    print(worst.round(3).to_string())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="tail_labels.tsv")
    parser.add_argument("--summary", metavar="TSV")
    parser.add_argument("--tables", nargs="+", default=["lognormal", "pareto", "count",
                                                        "meddol"])
    parser.add_argument("--n", type=int, nargs="+", default=[20_000, 15_000])
    parser.add_argument("--epsilon", type=float, nargs="+", default=[0.3, 1.0, 3.0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--estimators", nargs="+", default=["adassp", "projection"],
                        choices=sorted(FACTORIES))
    args = parser.parse_args(argv)
    if args.summary:
        summary(args.summary)
    else:
        run(args)


if __name__ == "__main__":
    main()
