"""Output perturbation's signal test on public tables: as it is and relaxed.

The test (``AdaptiveRidge.shrink``) is post-processing of the released
coefficients: every rule below is applied to the same draws (a refit with the
same ``random_state``), so the rules are compared fit by fit. Each table is
given the ranges of its data dictionary (``benchmarks/run.py``), not of its
rows. Prints, per table and epsilon, the share of fits that release zero
slopes and the test mean squared error over the mean predictor's (mean over
the splits and seeds) of: the test as it is (1.5 standard deviations of the
noise's chi-square), relaxed margins, no test at all, each fit's better of
the first and the last in hindsight (the best a test that only chooses
between those two releases could do; not private), the former public rule (a numeric ``alpha``, no test) and
AdaSSP.

    python benchmarks/signal_test.py --splits 5 --seeds 4

statsmodels must be installed (its bundled tables are read offline).
"""

import argparse
import sys
import warnings

import numpy as np
from sklearn.model_selection import train_test_split

from run import diabetes_schema, fair_schema, markdown_table, randhie_schema
from schema_tables import statsmodels_data
from sklearn_pdp import AdaSSPRegressor, OutputPerturbationRegressor
from sklearn_pdp.mechanisms.private_ridge import _adaptive as _adaptive_ridge
from sklearn_pdp.mechanisms.output_perturbation._calibration import output_perturbation_auto_alpha

DELTA = 1e-6
# margins of the test (standard deviations of the noise's chi-square); -inf
# keeps every slope
MARGINS = {"as is (1.5)": 1.5, "margin 0": 0.0, "margin -1": -1.0, "no test": -np.inf}


def anes96_schema():
    """statsmodels' 1996 American National Election Study (944 rows): party
    identification (0-6) on log population (thousands, 0.1 to 10^4), the
    7-point self-placement and education codes, age [0, 120] and the 24
    income codes."""
    loaded = statsmodels_data("anes96")
    bounds = (np.array([np.log(0.1), 1, 0, 1, 1.0]), np.array([np.log(1e4), 7, 120, 7, 24.0]))
    return loaded.exog.to_numpy(dtype=float), loaded.endog.to_numpy(dtype=float), bounds, (0, 6)


TABLES = {
    "diabetes": lambda split: diabetes_schema(),
    "fair": lambda split: fair_schema(),
    "anes96": lambda split: anes96_schema(),
    "randhie n=2e3": lambda split: randhie_schema(2000, split),
    "randhie n=5e3": lambda split: randhie_schema(5000, split),
    "randhie": lambda split: randhie_schema(),
}


def _relative_mse(est, X_te, y_te, mean_mse):
    return float(np.mean((est.predict(X_te) - y_te) ** 2) / mean_mse)


def measure(load, eps, splits, seeds):
    """Per rule, the errors over the mean predictor's of every fit; and
    whether the test as it is released zero slopes."""
    out = {name: [] for name in (*MARGINS, "former public rule", "AdaSSP", "zero")}
    original = _adaptive_ridge._SIGNAL_MARGIN
    for split in range(splits):
        X, y, bounds_X, y_bound = load(split)
        X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.2, random_state=split)
        mean_mse = np.mean((y_tr.mean() - y_te) ** 2)
        common = dict(delta=DELTA, bounds_X=bounds_X, y_bound=y_bound)
        for seed in range(seeds):
            state = 1000 * split + seed
            try:
                for name, margin in MARGINS.items():
                    _adaptive_ridge._SIGNAL_MARGIN = margin
                    est = OutputPerturbationRegressor(eps, random_state=state, **common).fit(
                        X_tr, y_tr)
                    out[name].append(_relative_mse(est, X_te, y_te, mean_mse))
                    if margin == original:
                        out["zero"].append(float(not np.any(est.coef_)))
            finally:
                _adaptive_ridge._SIGNAL_MARGIN = original
            alpha = output_perturbation_auto_alpha(eps, DELTA, *X_tr.shape)
            for name, est in (
                ("former public rule", OutputPerturbationRegressor(
                    eps, alpha=alpha, random_state=state, **common)),
                ("AdaSSP", AdaSSPRegressor(eps, random_state=state, **common)),
            ):
                out[name].append(_relative_mse(est.fit(X_tr, y_tr), X_te, y_te, mean_mse))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--epsilon", type=float, nargs="+", default=[0.3, 1.0, 3.0])
    args = parser.parse_args(argv)
    if fair_schema() is None:
        sys.exit("statsmodels is needed for its bundled tables")
    warnings.simplefilter("ignore")  # the fallbacks' warnings, one per fit
    rows = []
    for table, load in TABLES.items():
        for eps in args.epsilon:
            out = measure(load, eps, args.splits, args.seeds)
            # each fit's better of the test as it is and no test, in hindsight
            hindsight = np.minimum(out["as is (1.5)"], out["no test"])
            rows.append([table, f"{eps:g}", f"{np.mean(out['zero']):.2f}"]
                        + [f"{np.mean(out[name]):.3f}" for name in MARGINS]
                        + [f"{np.mean(hindsight):.3f}", f"{max(out['no test']):.3f}"]
                        + [f"{np.mean(out[name]):.3f}" for name in (
                            "former public rule", "AdaSSP")])
            print(" | ".join(rows[-1]), file=sys.stderr, flush=True)
    print(markdown_table(["data", "epsilon", "zero slopes", *MARGINS, "better in hindsight",
                          "no test, worst fit", "former public rule", "AdaSSP"], rows))


if __name__ == "__main__":
    main()
