"""AdaSSP's per-instance losses on real tables, with declared bounds and
tightened, for the README and "Choosing an estimator" (doc/choosing.rst).

Run from the repository root (statsmodels installed for its fair and randhie
tables; without it those rows are left out)::

    python benchmarks/medians.py

For each public table, with bounds declared from what its columns mean (a
data dictionary's ranges, never the rows), ``AdaSSPRegressor`` at epsilon 1,
delta 1e-6 is fitted on 3 random 75/25 splits (the command line's split)
with ``tighten_bounds=False`` and ``True`` (default share 0.1): the median
and 90th percentile of ``pdp_losses_`` pooled over the splits, and the
median test R^2 beside least squares'. The tables: the bundled weather table
(``sklearn_pdp.datasets.load_nyc_weather``, encoded as the command line
does), scikit-learn's diabetes data in its original units, and statsmodels'
fair and randhie surveys (see ``run.py``).
"""

import warnings

import numpy as np
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import train_test_split

from run import diabetes_schema, environment, fair_schema, randhie_schema
from sklearn_pdp import AdaSSPRegressor
from sklearn_pdp.cli._options import _parser
from sklearn_pdp.cli._table import _load

SPLITS = 3


def weather():
    X, y, _, bounds, _, _ = _load(_parser().parse_args([]))
    return X, y, tuple(np.asarray(b, dtype=float) for b in bounds["bounds_X"]), bounds["y_bound"]


def main():
    tables = {"nyc_weather (bundled)": weather, "diabetes (original units)": diabetes_schema,
              "fair (statsmodels)": fair_schema, "randhie (statsmodels)": randhie_schema}
    print(environment(), "\n")
    print("| data | n_train | bounds | median pDP | 90% pDP | test R^2 (median) "
          "| least squares |")
    print("|---|---|---|---|---|---|---|")
    for name, load in tables.items():
        table = load()
        if table is None:
            print(f"| {name} | (needs statsmodels) |||||")
            continue
        X, y, bounds_X, y_bound = table
        for tighten in (False, True):
            losses, r2, ls = [], [], []
            for split in range(SPLITS):
                X_tr, X_te, y_tr, y_te = train_test_split(
                    X, y, test_size=0.25, random_state=split)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # label-mean fallbacks, clipping
                    est = AdaSSPRegressor(epsilon=1.0, delta=1e-6, bounds_X=bounds_X,
                                          y_bound=y_bound, tighten_bounds=tighten,
                                          random_state=split).fit(X_tr, y_tr)
                losses.append(est.pdp_losses_)
                r2.append(est.score(X_te, y_te))
                ls.append(LinearRegression().fit(X_tr, y_tr).score(X_te, y_te))
            pooled = np.concatenate(losses)
            print(f"| {name} | {len(y_tr)} | {'tightened' if tighten else 'declared'} "
                  f"| {np.median(pooled):.3f} | {np.quantile(pooled, 0.9):.3f} "
                  f"| {np.median(r2):.3f} | {np.median(ls):.3f} |", flush=True)


if __name__ == "__main__":
    main()
