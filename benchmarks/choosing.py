"""Utility and per-person loss of every estimator at one budget, for the page
"Choosing an estimator" (doc/choosing.rst).

Run from the repository root (a minute or two on two cores)::

    python benchmarks/choosing.py

For each data set and budget: test MSE over the mean predictor's and over
least squares' (mean over 3 random 80/20 splits), and the median and 90th
percentile of ``pdp_losses_`` (the per-instance epsilons of the training
rows, pooled over the splits). The data and the estimators are those of the
utility grid (``run.py``, ``registry.py``).
"""

import numpy as np
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import train_test_split

from run import DELTA, datasets, environment  # noqa: F401 (sets the path)
from registry import FACTORIES

SPLITS = 3
CELLS = [("centred n=1e4", 1.0), ("centred n=1e5", 1.0), ("diabetes", 1.0),
         ("diabetes", 3.0)]


def main():
    loaders = dict(datasets([10_000, 100_000], 10))
    print(environment(), "\n")
    print("| data | epsilon | estimator | MSE / mean | MSE / least squares "
          "| median pDP | 90% pDP |")
    print("|---|---|---|---|---|---|---|")
    for data_name, eps in CELLS:
        mse, losses = {}, {}
        for split in range(SPLITS):
            X, y, data_norm, y_bound = loaders[data_name](split)
            X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.2, random_state=split)
            mse.setdefault("mean", []).append(np.mean((y_tr.mean() - y_te) ** 2))
            mse.setdefault("ls", []).append(np.mean(
                (LinearRegression().fit(X_tr, y_tr).predict(X_te) - y_te) ** 2))
            for name, make in sorted(FACTORIES.items()):
                est = make(eps, DELTA, *X_tr.shape, data_norm=data_norm, y_bound=y_bound,
                           random_state=split).fit(X_tr, y_tr)
                assert est.dp_epsilon_ <= eps * (1 + 1e-9)
                mse.setdefault(name, []).append(np.mean((est.predict(X_te) - y_te) ** 2))
                losses.setdefault(name, []).append(est.pdp_losses_)
        mean, ls = np.mean(mse["mean"]), np.mean(mse["ls"])
        for name in sorted(FACTORIES):
            m, eps_i = np.mean(mse[name]), np.concatenate(losses[name])
            print(f"| {data_name} | {eps:g} | {name} | {m / mean:.3f} | {m / ls:.2f} "
                  f"| {np.median(eps_i):.3g} | {np.quantile(eps_i, 0.9):.3g} |", flush=True)


if __name__ == "__main__":
    main()
