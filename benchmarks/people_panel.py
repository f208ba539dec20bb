"""People with several records on a public wage panel, for doc/people.rst.

Run from the repository root, with the panel's CSV (Vella and Verbeek's
545 men x 8 years, 1980-1987, as the ``linearmodels`` package ships it in
``linearmodels/datasets/wage_panel/wage_panel.csv.bz2``)::

    python benchmarks/people_panel.py PATH/wage_panel.csv.bz2

For 3 random splits of the people (75% train, every record of a person on
one side), ``AdaSSPRegressor`` at epsilon 1, delta 1e-6, on bounds declared
from what the columns mean: each training record's loss
(``pdp_losses_``), each person's charge by the ledger's group path (a fit
without person keys) and their exact joint loss (``person_losses_``, a fit
with them); then the person-level release (``max_records=8``), whose
guarantee covers a whole person, with its test R^2 beside the per-record
release's and least squares'.
"""

import sys
import warnings

import numpy as np
import pandas as pd
from sklearn.linear_model import LinearRegression
from sklearn.metrics import r2_score
from sklearn.model_selection import GroupShuffleSplit

from sklearn_pdp import AdaSSPRegressor, PrivacyLedger

FEATURES = ["exper", "educ", "hours", "married", "union", "black", "hisp"]
# declared from the columns' meaning, never read from the rows: years of
# experience and of schooling, yearly hours, indicators; log hourly wage
BOUNDS_X = ([0, 0, 0, 0, 0, 0, 0], [25, 20, 5000, 1, 1, 1, 1])
Y_BOUND = (-2.0, 5.0)
SPLITS = 3


def load(path):
    panel = pd.read_csv(path)
    return panel[FEATURES].to_numpy(float), panel["lwage"].to_numpy(float), panel["nr"].to_numpy()


def fit(X, y, groups=None, **params):
    est = AdaSSPRegressor(epsilon=1.0, delta=1e-6, bounds_X=BOUNDS_X, y_bound=Y_BOUND,
                          **params)
    with warnings.catch_warnings():
        # four to eight times the noise can leave no slope: reported in the table
        warnings.simplefilter("ignore")
        return est.fit(X, y, groups=groups)


def main(path):
    X, y, ids = load(path)
    rows = {key: [] for key in ("record", "group", "joint", "r2", "r2_person", "r2_ls",
                                "r2_mean", "person_max", "person_dp")}
    splits = GroupShuffleSplit(SPLITS, test_size=0.25, random_state=0).split(X, y, ids)
    for seed, (train, test) in enumerate(splits):
        Xt, yt, it = X[train], y[train], ids[train]
        plain = fit(Xt, yt, random_state=seed)
        people = fit(Xt, yt, it, random_state=seed)
        capped = fit(Xt, yt, it, max_records=8, random_state=seed)
        with PrivacyLedger() as ledger:
            group = ledger.charges(ledger.record(plain, it), people.person_ids_)[0]
        rows["record"].append(plain.pdp_losses_)
        rows["group"].append(group)
        rows["joint"].append(people.person_losses_)
        rows["person_max"].append(capped.person_losses_.max())
        rows["person_dp"].append(capped.dp_epsilon_)
        rows["r2"].append(plain.score(X[test], y[test]))
        rows["r2_person"].append(capped.score(X[test], y[test]))
        rows["r2_ls"].append(LinearRegression().fit(Xt, yt).score(X[test], y[test]))
        rows["r2_mean"].append(r2_score(y[test], np.full(len(test), yt.mean())))
    print(f"{X.shape[0]} records of {np.unique(ids).size} people; {SPLITS} splits, "
          f"{len(train)} training records\n")
    print("| number | median | 90% |")
    print("|---|---|---|")
    for key, label in (("record", "per record (pdp_losses_)"),
                       ("group", "per person, group path (ledger without keys)"),
                       ("joint", "per person, exact joint (person_losses_)")):
        values = np.concatenate(rows[key])
        print(f"| {label} | {np.median(values):.3g} | {np.quantile(values, 0.9):.3g} |")
    print(f"\nmax_records=8: dp_epsilon_ {max(rows['person_dp']):.3g} per person, largest "
          f"person loss {max(rows['person_max']):.3g}")
    print(f"test R^2 (median): per record {np.median(rows['r2']):.3f}, per person "
          f"{np.median(rows['r2_person']):.3f}, least squares {np.median(rows['r2_ls']):.3f}, "
          f"the training mean {np.median(rows['r2_mean']):.3f}")


if __name__ == "__main__":
    main(sys.argv[1])
