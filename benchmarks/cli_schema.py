"""The command line at its defaults with only a declared schema, measured.

Each table of :mod:`schema_tables` is written as a CSV file and its
schema's JSON into a temporary folder, and ``python -m sklearn_pdp
TABLE.csv --schema TABLE.json --epsilon E --random-state S --json`` is run
for every budget and seed (the seed sets the held-out split, a quarter of
the rows, and the noise). The test MSE over the mean predictor's is
``(1 - test_r2) / (1 - test_r2_mean)`` from the report's ``curator_only``
part. Run from the repository root (the tables other than diabetes need
statsmodels)::

    python benchmarks/cli_schema.py                 # -> doc/benchmarks/schema_cli.md
    python benchmarks/cli_schema.py --quick         # diabetes at epsilon 1, one seed

Options after ``--`` are passed to the command line (for example
``-- --tighten-bounds yes``).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from run import markdown_table, write_page
from schema_tables import write

from sklearn_pdp._registry import REGRESSORS

ROOT = Path(__file__).resolve().parents[1]
# the 20,000-row table with three categorical columns at three budgets, and
# five small public tables at epsilon 1
GRID = [("randhie_age", (0.3, 1.0, 3.0))] + [
    (name, (1.0,)) for name in ("diabetes", "fair", "anes96", "grunfeld", "ccard")]


def run_cli(csv, schema, epsilon, seed, extra):
    """The ``--json`` report of one run of the command line."""
    command = [sys.executable, "-m", "sklearn_pdp", str(csv), "--schema", str(schema),
               "--epsilon", str(epsilon), "--random-state", str(seed), "--json", *extra]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--quick", action="store_true",
                        help="diabetes at epsilon 1 with one seed; writes nothing")
    parser.add_argument("extra", nargs="*", help="options passed to the command line")
    args = parser.parse_args(argv)
    grid = [("diabetes", (1.0,))] if args.quick else GRID
    seeds = range(1 if args.quick else args.seeds)
    rows, used = [], set()
    with tempfile.TemporaryDirectory() as folder:
        for name, epsilons in grid:
            write(name, folder)
            csv, schema = Path(folder, f"{name}.csv"), Path(folder, f"{name}.json")
            for eps in epsilons:
                reports = [run_cli(csv, schema, eps, seed, args.extra) for seed in seeds]
                cur = [r["curator_only"] for r in reports]
                ratio = [(1 - c["test_r2"]) / (1 - c["test_r2_mean"]) for c in cur]
                ls = [(1 - c["test_r2_least_squares"]) / (1 - c["test_r2_mean"]) for c in cur]
                pub = reports[0]["publishable"]
                used |= {k for k, cls in REGRESSORS.items() if cls.__name__ == pub["estimator"]}
                rows.append([name, pub["n_train"], pub["estimator"], f"{eps:g}",
                             ", ".join(f"{r:.3f}" for r in ratio), f"{np.median(ratio):.3f}",
                             f"{max(ratio):.3f}", f"{np.median(ls):.3f}",
                             f"{np.median([c['pdp_epsilon']['median'] for c in cur]):.3g}",
                             cur[0]["pdp_kind"],
                             sum(r["publishable"]["mean_only"] for r in reports)])
                print(" | ".join(map(str, rows[-1])), file=sys.stderr, flush=True)
    table = markdown_table(
        ["table", "n_train", "estimator", "epsilon", "test MSE / mean predictor's, per seed",
         "median", "largest", "least squares (median)", "median pdp epsilon (median)",
         "pdp_kind", "seeds released the mean only"], rows)
    command = "python -m sklearn_pdp TABLE.csv --schema TABLE.json --epsilon E " \
        "--random-state S --json " + " ".join(args.extra)
    intro = (
        "The command line at its defaults with nothing but the declared schema "
        f"(`{command.strip()}`, seeds S = 0 .. {len(seeds) - 1}: each seed "
        "draws the held-out quarter of the rows and the noise). The tables are "
        "those of benchmarks/schema_tables.py, written as a CSV file and the "
        "schema's JSON (`python benchmarks/schema_tables.py TABLE DIR`): "
        "randhie_age is statsmodels' RAND health insurance experiment "
        "(20186 person-years, several per person, each row a record: the "
        "guarantee is per row; site, coinsurance plan and self-rated health as "
        "categories; the label the age), then five small public tables at "
        "epsilon 1. Test MSE over the mean predictor's is "
        "(1 - test_r2) / (1 - test_r2_mean) from the report's curator_only part; "
        "least squares' (non-private, same split) is the floor no private model "
        "is expected to beat."
    )
    write_page("schema_cli", "The command line with a declared schema", intro, sorted(used),
               table,
               " ".join(["python benchmarks/cli_schema.py", *sys.argv[1:]]),
               write=not args.quick)


if __name__ == "__main__":
    main()
