"""Categorical columns as one share of the row norm, measured.

AdaSSP on public tables with categorical columns (statsmodels' affairs
survey and RAND health insurance experiment, in their original units with
the ranges of their data dictionaries: :mod:`schema_tables`), declared two
ways (as ``run.py utility --schema`` does for every estimator): the per-dummy
box (``bounds_X`` over the one-hot columns: every indicator a share of its
own, centred at 1/2) and a :class:`~sklearn_pdp.Schema` (each categorical
column one share, indicators not centred); and, to see whether the shares
should be equal, the schema with the categorical columns' shares weighted
0.5 or 2 times a numeric column's (the weights are applied by changing the
fitted map's column scales here, a measurement only). Run from the
repository root with statsmodels installed::

    python benchmarks/categorical_shares.py [--splits 5]

prints a Markdown table: test MSE over the mean predictor's (mean over the
splits) and the median per-instance epsilon at each epsilon.
"""

import argparse
import warnings

import numpy as np
from sklearn.model_selection import train_test_split

import schema_tables
from sklearn_pdp import AdaSSPRegressor
from sklearn_pdp.domain import _scaler as _domain
from sklearn_pdp.exceptions import BoundsWarning, FallbackWarning

DELTA = 1e-6


def weighted(categorical_weight):
    """A DomainScaler whose categorical blocks take ``categorical_weight``
    times a numeric column's share of the squared row norm."""
    base = _domain.DomainScaler

    class Weighted(base):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            layout = self.layout
            if layout is None:
                return
            total = layout.numeric.size + categorical_weight * len(layout.blocks)
            half = self.x_scale / np.sqrt(layout.n_shares)
            self.x_scale = half * np.sqrt(total)
            self.x_scale[layout.indicators] = np.sqrt(total / categorical_weight)

    return Weighted


def fit(table, schema, mode, eps, split):
    encoded = schema.encoder().fit_transform(table)
    y = table[schema.label].to_numpy(dtype=float)
    X_tr, X_te, y_tr, y_te = train_test_split(encoded, y, test_size=0.2, random_state=split)
    layout = schema.feature_layout()
    if mode == "per-dummy box":
        est = AdaSSPRegressor(bounds_X=(layout.lower, layout.upper), y_bound=schema.label_range)
    else:
        est = AdaSSPRegressor(schema=schema)
    est.set_params(epsilon=eps, delta=DELTA, random_state=split)
    weight = {"shares x0.5": 0.5, "shares x2": 2.0}.get(mode)
    original = _domain.DomainScaler
    try:
        if weight is not None:
            _domain.DomainScaler = weighted(weight)  # what fitted_scaler builds
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BoundsWarning)
            warnings.simplefilter("ignore", FallbackWarning)
            est.fit(X_tr, y_tr)
    finally:
        _domain.DomainScaler = original
    assert est.dp_epsilon_ <= eps * (1 + 1e-9)
    mse = np.mean((est.predict(X_te) - y_te) ** 2) / np.mean((y_tr.mean() - y_te) ** 2)
    return mse, float(np.median(est.pdp_losses_))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--splits", type=int, default=5)
    args = parser.parse_args()
    tables = [("fair, label affairs", *schema_tables.fair("affairs")),
              ("fair, label yrs_married", *schema_tables.fair("yrs_married")),
              ("randhie, label age", *schema_tables.randhie("xage")),
              ("randhie, label mdvis", *schema_tables.randhie("mdvis"))]
    modes = ("per-dummy box", "shares", "shares x0.5", "shares x2")
    print("| table (encoded columns / shares) | epsilon | "
          + " | ".join(f"{m}: MSE / mean, median pdp eps" for m in modes) + " |")
    print("|---|---|" + "---|" * len(modes))
    for name, table, schema in tables:
        layout = schema.feature_layout()
        for eps in (0.3, 1.0, 3.0):
            cells = []
            for mode in modes:
                runs = np.array([fit(table, schema, mode, eps, s) for s in range(args.splits)])
                cells.append(f"{runs[:, 0].mean():.3f}, {np.median(runs[:, 1]):.3f}")
            print(f"| {name} ({layout.lower.size} / {layout.n_shares}) | {eps:g} | "
                  + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
