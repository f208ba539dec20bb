"""How far another draw of the noise could have landed: a table measured on
public data (``benchmarks/spread.py``), looked up by the release's public
n, d and epsilon. Never measured on the private rows: a curator shown
several draws of their own data could publish the best, which breaks the
guarantee."""

import csv
from pathlib import Path

import numpy as np

TABLE = Path(__file__).with_name("spread.csv")
COLUMNS = ["estimator", "n", "d", "epsilon", "draws", "r2_min", "r2_median", "r2_max",
           "r2_least_squares", "mean_only"]


def _cells():
    with open(TABLE, newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def spread(estimator, n, d, epsilon, mean_only):
    """The measured cell nearest the release's public ``n``, ``d`` and
    ``epsilon`` (on log scales) for the estimator's short name, among those
    whose draws released the label mean alone if this release did
    (``mean_only``, public) and slopes if it did not, as a dict
    (the public table's sizes and budget, the lowest, median and highest
    test R^2 over the noise draws, least squares' test R^2), or None
    without a budget."""
    if epsilon is None:
        return None
    rows = [r for r in _cells() if r["estimator"] == estimator]
    # the label mean alone spreads far less than slopes: compare like with like
    rows = [r for r in rows if r["mean_only"] == str(int(mean_only))] or rows
    target = np.log([n, d, epsilon])
    nearest = min(rows, key=lambda r: float(np.sum(
        (np.log([float(r["n"]), float(r["d"]), float(r["epsilon"])]) - target) ** 2)))
    cell = {key: float(value) for key, value in nearest.items() if key != "estimator"}
    for key in ("n", "d", "draws"):
        cell[key] = int(cell[key])
    cell["mean_only"] = bool(cell["mean_only"])
    return {"data": "nyc_weather (public)", **cell}


def spread_text(cell):
    """The curator's sentence on the spread of one draw."""
    return (
        "this release is one draw of a noisy mechanism; another draw would give "
        "another model. On public data of a similar size (the bundled weather table: "
        f"{cell['n']} training rows, {cell['d']} features, epsilon {cell['epsilon']:g}) "
        f"the test R^2 of {cell['draws']} draws ranged from {cell['r2_min']:.2f} to "
        f"{cell['r2_max']:.2f} (median {cell['r2_median']:.2f}, "
        f"least squares {cell['r2_least_squares']:.2f}). Publish this draw: refitting to "
        "pick a better one spends the budget again and the guarantee no longer holds")
