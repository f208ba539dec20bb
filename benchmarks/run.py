"""Benchmarks of sklearn-pdp: utility grid, and fit speed and memory.

Run from the repository root::

    python benchmarks/run.py utility      # test MSE grid -> doc/benchmarks/utility.md
    python benchmarks/run.py utility --schema  # declared schemas -> doc/benchmarks/schema.md
    python benchmarks/run.py speed        # fit time and memory -> doc/benchmarks/speed.md
    python benchmarks/run.py all
    python benchmarks/run.py dask         # 1e7 rows on a 2-worker Dask cluster -> doc/benchmarks/dask.md
    python benchmarks/run.py oracle       # AdaOPS against an OPS told lambda_min -> doc/benchmarks/oracle.md
    python benchmarks/run.py all --quick  # smoke test of every estimator, seconds

``--help`` on each command lists its options (estimators, sizes, repeats).
Every estimator comes from :mod:`registry`, built for the privacy budget.
The Markdown tables written into ``doc/benchmarks/`` are included in the
documentation; the machine and library versions are printed and written with
them. Timings on a shared or busy machine are noisy.
"""

import argparse
import datetime
import multiprocessing
import os
import platform
import resource
import sys
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import scipy  # noqa: E402
import sklearn  # noqa: E402
from sklearn.datasets import load_diabetes  # noqa: E402
from sklearn.linear_model import LinearRegression, Ridge  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from threadpoolctl import threadpool_info  # noqa: E402

import sklearn_pdp  # noqa: E402
from sklearn_pdp.accounting import ops_gamma  # noqa: E402
import schema_tables  # noqa: E402
from registry import FACTORIES  # noqa: E402

DOC_DIR = Path(__file__).resolve().parents[1] / "doc" / "benchmarks"
EPSILONS = (0.1, 0.3, 1.0, 3.0)
DELTA = 1e-6


# ---------------------------------------------------------------------------
# Machine and library versions
# ---------------------------------------------------------------------------


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment():
    """Markdown bullet list of the machine and the library versions."""
    blas = [
        f"{info.get('internal_api')} {info.get('version')} "
        f"({info.get('num_threads')} threads)"
        for info in threadpool_info()
        if info.get("user_api") == "blas"
    ]
    lines = [
        f"date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"machine: {_cpu_model()}, {os.cpu_count()} logical cores, "
        f"{platform.system()} {platform.release()}",
        f"Python {platform.python_version()}, numpy {np.__version__}, "
        f"scipy {scipy.__version__}, scikit-learn {sklearn.__version__}, "
        f"sklearn-pdp {sklearn_pdp.__version__}",
        "BLAS: " + ("; ".join(sorted(set(blas))) or "unknown"),
    ]
    if hasattr(os, "getloadavg"):  # other jobs on the machine distort timings
        lines.append("load average (1, 5, 15 min): %.1f, %.1f, %.1f" % os.getloadavg())
    return "\n".join(f"- {line}" for line in lines)


def budget_notes(names):
    return "\n".join(
        f"- `{name}`: {FACTORIES[name].__doc__.strip().splitlines()[0]}"
        for name in names
    )


def markdown_table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def write_page(name, title, intro, names, table, command, write=True):
    text = "\n\n".join(
        [
            f"# {title}",
            intro,
            table,
            "How the estimators meet the privacy budget:\n\n" + budget_notes(names),
            "Environment:\n\n" + environment(),
            f"Produced by `{command}`.",
        ]
    )
    print(text)
    if not write:
        print("\n--quick: smoke run, nothing written")
        return
    DOC_DIR.mkdir(parents=True, exist_ok=True)
    path = DOC_DIR / f"{name}.md"
    path.write_text(text + "\n")
    print(f"\nwritten to {path}")


# ---------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------


def synthetic(n_samples, n_features, random_state, out=None):
    """Linear-Gaussian data in the unit domain, generated in chunks.

    Rows are N(0, I/(4 d)) (typical norm 1/2) scaled into the unit ball,
    y = x^T theta* + N(0, 0.1^2) with ||theta*|| = 1, clipped to [-1, 1].
    Chunked generation keeps the temporaries small, so that the memory
    benchmark's baseline after creating X is the memory of X itself.
    """
    rng = np.random.default_rng(random_state)
    theta = rng.standard_normal(n_features)
    theta /= np.linalg.norm(theta)
    X = np.empty((n_samples, n_features)) if out is None else out
    y = np.empty(n_samples)
    for start in range(0, n_samples, 10_000):
        rows = slice(start, min(start + 10_000, n_samples))
        X[rows], y[rows] = _synthetic_rows(rng, rows.stop - start, theta)
    return X, y


def _synthetic_rows(rng, n_rows, theta):
    block = rng.standard_normal((n_rows, theta.size))
    block /= 2.0 * np.sqrt(theta.size)
    norms = np.sqrt(np.einsum("ij,ij->i", block, block))
    block /= np.maximum(norms, 1.0)[:, None]
    noise = 0.1 * rng.standard_normal(n_rows)
    return block, np.clip(block @ theta + noise, -1.0, 1.0)


def dask_synthetic(n_samples, n_features, chunk, random_state):
    """The same kind of data as :func:`synthetic`, as lazy Dask arrays whose
    blocks are generated on the workers (block b from its own seed)."""
    import dask.array as da

    theta = np.random.default_rng(random_state).standard_normal(n_features)
    theta /= np.linalg.norm(theta)
    sizes = tuple(min(chunk, n_samples - s) for s in range(0, n_samples, chunk))

    def block(block_id=None, block_info=None):
        rng = np.random.default_rng([random_state, block_id[0]])
        X, y = _synthetic_rows(rng, block_info[None]["chunk-shape"][0], theta)
        return np.column_stack((X, y))

    Z = da.map_blocks(block, chunks=(sizes, (n_features + 1,)), dtype=np.float64,
                      meta=np.empty((0, 0)))
    return Z[:, :n_features], Z[:, n_features]


def datasets(sizes, n_features):
    """(name, loader(split) -> X, y, data_norm, y_bound) for the utility grid.

    Per size: "centred" data of :func:`synthetic` (label mean 0, signal to
    noise 10), and "offset" data whose features are small and off-centre and
    whose labels have mean 0.5 and a low signal to noise ratio (where a model
    that shrinks its intercept loses to the mean predictor). A new data set
    per split. Then the diabetes data, label mean 0.44 of its bound, and
    the survey data of :func:`survey` when statsmodels is installed.
    """
    out = []
    for n in sizes:
        size = f"{n:.0e}".replace("e+0", "e")
        out.append((f"centred n={size}", lambda split, n=n: (
            *synthetic(n, n_features, split), 1.0, 1.0)))
        out.append((f"offset n={size}", lambda split, n=n: (
            *offset_synthetic(n, n_features, split), 1.0, 1.0)))
    X, y = load_diabetes(return_X_y=True)
    # The bounds of the diabetes data are taken from the whole data set and
    # treated as public knowledge of the domain.
    norm = float(np.sqrt(np.einsum("ij,ij->i", X, X)).max())
    out.append(("diabetes", lambda split: (X, y, norm, float(np.abs(y).max()))))
    for name in SURVEYS:
        data = survey(name)
        if data is not None:
            out.append((name, lambda split, data=data: (*data, 1.0, 1.0)))
    return out


# Survey data sets bundled with statsmodels (used when it is installed): the
# American National Election Study 1996, extramarital affairs (labels that
# vary little: most are 0) and the RAND health insurance experiment
# (outpatient spending, as skewed as incomes).
SURVEYS = ("anes96", "fair", "randhie")


def survey(name):
    """A statsmodels survey data set in the unit domain, or None without
    statsmodels: categorical columns one-hot encoded, every feature
    min-max scaled to [0, 1] and divided by sqrt(d) (rows in the unit ball),
    the label min-max scaled to [0, 1]; the ranges are treated as public."""
    try:
        from statsmodels import datasets as sm_datasets
    except ImportError:
        return None
    import pandas as pd

    loaded = getattr(sm_datasets, name).load_pandas()
    X = pd.get_dummies(loaded.exog, drop_first=True).to_numpy(dtype=float)
    y = np.asarray(loaded.endog, dtype=float)
    low, high = X.min(axis=0), X.max(axis=0)
    X = (X[:, high > low] - low[high > low]) / (high - low)[high > low]
    X /= np.sqrt(X.shape[1])
    return X, (y - y.min()) / (y.max() - y.min())


def offset_synthetic(n_samples, n_features, random_state):
    """Features 0.3 + N(0, 0.01 / d) in the unit ball, y = 0.5 +
    2 (x - 0.3)^T theta* + N(0, 0.15^2) clipped to [-1, 1], ||theta*|| = 1."""
    rng = np.random.default_rng([random_state, 1])
    theta = rng.standard_normal(n_features)
    theta /= np.linalg.norm(theta)
    X = 0.3 + 0.1 * rng.standard_normal((n_samples, n_features)) / np.sqrt(n_features)
    X /= np.maximum(np.linalg.norm(X, axis=1), 1.0)[:, None]
    y = 0.5 + 2.0 * (X - 0.3) @ theta + 0.15 * rng.standard_normal(n_samples)
    return X, np.clip(y, -1.0, 1.0)


# ---------------------------------------------------------------------------
# (a) Utility grid
# ---------------------------------------------------------------------------


def _fit_mse(name, eps, split, X_tr, y_tr, X_te, y_te, data_norm, y_bound, **params):
    est = FACTORIES[name](
        eps, DELTA, *X_tr.shape, data_norm=data_norm, y_bound=y_bound,
        random_state=split,
    ).set_params(**params)
    try:
        est.fit(X_tr, y_tr)
    except ValueError as exc:  # a budget the public size cannot meet: refused
        if "cannot meet" not in str(exc):
            raise
        return np.nan
    # the guarantee is checked, never assumed
    if not est.dp_epsilon_ <= eps * (1 + 1e-9):
        raise RuntimeError(f"{name}: dp_epsilon_={est.dp_epsilon_} exceeds the budget {eps}")
    return float(np.mean((est.predict(X_te) - y_te) ** 2))


def utility(args):
    if args.schema:
        return schema_utility(args)
    names = args.estimators
    # the reference of the gain shares is fitted even when not asked for
    fitted = names + [REFERENCE] * (REFERENCE not in names)
    alphas = 10.0 ** np.arange(0, 7)
    rows, sweep_rows, cells = [], [], []
    for data_name, load in datasets(args.n, args.d):
        for eps in args.epsilon:
            mse = {}
            for split in range(args.splits):
                X, y, data_norm, y_bound = load(split)
                parts = train_test_split(X, y, test_size=0.2, random_state=split)
                X_tr, X_te, y_tr, y_te = parts
                common = (split, X_tr, y_tr, X_te, y_te, data_norm, y_bound)
                mse.setdefault("ls", []).append(np.mean(
                    (LinearRegression().fit(X_tr, y_tr).predict(X_te) - y_te) ** 2))
                mse.setdefault("mean", []).append(np.mean((y_tr.mean() - y_te) ** 2))
                for name in fitted:
                    mse.setdefault(name, []).append(_fit_mse(name, eps, *common))
                    if not args.sweep or name not in names or "alpha" not in FACTORIES[name](
                        eps, DELTA, *X_tr.shape, data_norm=1.0, y_bound=1.0
                    ).get_params():
                        continue
                    for alpha in alphas:
                        mse.setdefault((name, alpha), []).append(
                            _fit_mse(name, eps, *common, alpha=alpha))
            m = {key: float(np.mean(v)) for key, v in mse.items()}
            n_eps = len(y_tr) * eps
            cells.append((data_name, eps, n_eps, m))
            rows.append([data_name, f"{eps:g}", f"{n_eps:.0f}", f"{m['ls'] / m['mean']:.3f}"]
                        + [_flag(m[name] / m["mean"], n_eps) for name in names])
            for name in names:
                fixed = {a: m[(name, a)] for a in alphas if (name, a) in m}
                if fixed:
                    best = min(fixed, key=fixed.get)
                    sweep_rows.append([data_name, f"{eps:g}", name,
                                       f"{m[name] / m['mean']:.3f}",
                                       f"{fixed[best] / m['mean']:.3f}", f"{best:.0e}"])
            print(" | ".join(rows[-1]), file=sys.stderr, flush=True)
    table = markdown_table(
        ["data", "epsilon", "n_train epsilon", "least squares", *names], rows
    )
    table += "\n\n" + gain_share_section(cells, names)
    summary = _utility_summary(cells, names)
    if sweep_rows:
        table += "\n\nThe automatic ridge against the best fixed alpha in hindsight " \
            "(test MSE / mean predictor's; the best fixed alpha is chosen on the " \
            "test data, which no private estimator could do):\n\n" + markdown_table(
                ["data", "epsilon", "estimator", "alpha='auto'", "best fixed alpha",
                 "that alpha"], sweep_rows)
    intro = (
        f"Test mean squared error divided by that of the (non-private) mean "
        f"predictor, the training mean of y: below 1 the private model beats "
        f"predicting the mean. Mean over {args.splits} random 80/20 splits; every "
        f"estimator is given only epsilon, delta = {DELTA:g} and the bounds "
        f"(everything else at its default), and its `dp_epsilon_` is checked to "
        f"be at most epsilon. A * marks a cell with n_train epsilon >= 100 where "
        f"the estimator is more than 10% worse than the mean predictor; "
        f"'refused' a cell whose budget the estimator declines for that sample "
        f"size (a ValueError from public quantities). Centred "
        f"synthetic data: rows in the unit ball, y = x^T theta* + N(0, 0.1^2); "
        f"offset: small off-centre features, label mean 0.5, low signal to "
        f"noise; anes96, fair, randhie: survey data bundled with statsmodels, "
        f"features and label min-max scaled (fair's and randhie's labels "
        f"vary little: variance 1.5e-3 and 3.4e-3 of the unit range) (see "
        f"benchmarks/run.py).\n\n" + summary
    )
    write_page("utility", "Utility against privacy", intro, names, table,
               "python benchmarks/run.py " + " ".join(sys.argv[1:]),
               write=not args.quick)


# ---------------------------------------------------------------------------
# (a') Declared schema bounds: declared, privately tightened, oracle quantiles
# ---------------------------------------------------------------------------


def diabetes_schema():
    """The diabetes data in its original units with schema ranges a data
    dictionary would give (age [0, 120], sex {1, 2}, BMI [10, 70], blood
    pressure [40, 200], serum measurements at their clinical limits; the
    disease progression [0, 400]); taken as public."""
    X, y = load_diabetes(return_X_y=True, scaled=False)
    bounds = (np.array([0, 1, 10, 40, 50, 20, 10, 0, 2, 40.0]),
              np.array([120, 2, 70, 200, 400, 300, 150, 20, 8, 400.0]))
    return X, y, bounds, (0.0, 400.0)


def fair_schema():
    """statsmodels' extramarital affairs survey (6366 rows) in its original
    units with the ranges a data dictionary gives: the codes' ranges for
    the ordinal answers (rate_marriage 1-5, religious 1-4, occupation and
    the husband's 1-6), age [0, 120], years married [0, 60], children
    [0, 20], years of education [0, 25]; the label (time spent in affairs,
    most rows 0, a few up to 58) [0, 100]. None without statsmodels."""
    loaded = schema_tables.statsmodels_data("fair")
    if loaded is None:
        return None
    bounds = (np.array([1, 0, 0, 0, 1, 0, 1, 1.0]), np.array([5, 120, 60, 20, 4, 25, 6, 6.0]))
    return (loaded.exog.to_numpy(dtype=float), loaded.endog.to_numpy(dtype=float),
            bounds, (0.0, 100.0))


def randhie_schema(n_samples=None, random_state=0):
    """statsmodels' RAND health insurance experiment (20190 rows; a random
    subsample of ``n_samples`` rows per split if given) in its original
    units with the ranges its definitions give: log(coinsurance + 1) for a
    coinsurance of 0-100% [0, log 101], log participation incentive [0, 8],
    log of the maximum expenditure over the coinsurance [0, 12], the
    chronic disease count [0, 100], the indicators (and the physical
    limitation share) [0, 1]; the label (outpatient visits in a year, median
    1, up to 77) [0, 365]. None without statsmodels."""
    loaded = schema_tables.statsmodels_data("randhie")
    if loaded is None:
        return None
    X, y = loaded.exog.to_numpy(dtype=float), loaded.endog.to_numpy(dtype=float)
    if n_samples is not None:
        rows = np.random.default_rng([random_state, 7]).choice(y.size, n_samples, replace=False)
        X, y = X[rows], y[rows]
    bounds = (np.zeros(9), np.array([np.log(101.0), 1, 8, 12, 1, 100, 1, 1, 1]))
    return X, y, bounds, (0.0, 365.0)


# The four declarations of ``utility --schema``: the per-dummy box (every
# one-hot column its own range and share), the schema (each categorical
# column one share), the schema tightened privately, and the schema at the
# training rows' quantiles (an oracle, not private).
SCHEMA_MODES = ("box", "schema", "tightened", "oracle")


def schema_benchmark_tables(sizes, quick=False):
    """(name, loader(split) -> (frame, schema)) for ``utility --schema``:
    the synthetic heavy table at each size and the diabetes data, then
    (unless ``quick``, and with statsmodels installed) the affairs survey
    and the RAND health insurance experiment with three labels."""
    out = [(f"heavy n={n:.0e}".replace("e+0", "e"),
            lambda split, n=n: schema_tables.heavy(n, split)) for n in sizes]
    fixed = {"diabetes": schema_tables.diabetes}
    if not quick and schema_tables.statsmodels_data("fair") is not None:
        fixed |= {"fair (affairs)": schema_tables.fair,
                  "randhie (age)": lambda: schema_tables.randhie("xage"),
                  "randhie (visits)": lambda: schema_tables.randhie("mdvis"),
                  "randhie (spending)": lambda: schema_tables.randhie("meddol")}
    for name, load in fixed.items():
        data = load()
        out.append((name, lambda split, data=data: data))
    return out


def _oracle_schema(schema, X_tr, y_tr, level=0.005):
    """The schema at the training rows' ``level`` and ``1 - level``
    quantiles (numeric columns and label; indicators as declared): the
    non-private oracle."""
    layout = schema.feature_layout()
    lower, upper = np.quantile(X_tr, [level, 1 - level], axis=0)
    upper = np.maximum(upper, lower + 1e-9 * (layout.upper - layout.lower))
    low, high = np.quantile(y_tr, [level, 1 - level])
    width = schema.label_range[1] - schema.label_range[0]
    return schema.with_bounds((lower, upper), (float(low), float(max(high, low + 1e-9 * width))))


def _schema_fit(name, mode, eps, split, schema, X_tr, y_tr, X_te, y_te):
    """One fit of ``utility --schema`` in declaration ``mode``: its test MSE,
    median per-instance epsilon, ``pdp_kind_`` and released label range
    (``dp_epsilon_`` checked against the budget)."""
    if mode == "box":
        layout = schema.feature_layout()
        declared = {"bounds_X": (layout.lower, layout.upper), "y_bound": schema.label_range}
    elif mode == "oracle":
        declared = {"schema": _oracle_schema(schema, X_tr, y_tr)}
    else:
        declared = {"schema": schema}
    est = FACTORIES[name](eps, DELTA, *X_tr.shape, data_norm=None, y_bound=None,
                          random_state=split)
    # "tightened" is the estimators' default rule ("auto"); the others declare only
    est.set_params(tighten_bounds="auto" if mode == "tightened" else False, **declared)
    with warnings.catch_warnings():
        # rows beyond the oracle's quantiles are clipped; a cell may fall
        # back to the label mean: both are part of what is measured
        warnings.simplefilter("ignore", sklearn_pdp.exceptions.BoundsWarning)
        warnings.simplefilter("ignore", sklearn_pdp.exceptions.FallbackWarning)
        est.fit(X_tr, y_tr)
    if not est.dp_epsilon_ <= eps * (1 + 1e-9):
        raise RuntimeError(f"{name}: dp_epsilon_={est.dp_epsilon_} exceeds the budget {eps}")
    # what the page reads, not the estimator: the fits run in worker processes
    return (float(np.mean((est.predict(X_te) - y_te) ** 2)), float(np.median(est.pdp_losses_)),
            est.pdp_kind_, est.y_bound_)


def _median_cell(values, kind):
    """A median per-instance epsilon, with its kind where not exact."""
    text = f"{np.median(values):.3g}"
    return text if kind == "exact" else f"{text} ({kind})"


def schema_utility(args):
    """``utility --schema``: each estimator on public tables with
    categorical columns, declared four ways (:data:`SCHEMA_MODES`)."""
    names, rows, label_rows, ratios = args.estimators, [], [], {}
    for data_name, load in schema_benchmark_tables(args.n, args.quick):
        for eps in args.epsilon:
            mse, medians, kinds, ends = {}, {}, {}, {"tightened": [], "oracle": []}
            jobs = []
            for split in range(args.splits):
                frame, schema = load(split)
                X = schema.encoder().fit_transform(frame)
                y = frame[schema.label].to_numpy(dtype=float)
                X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.2,
                                                          random_state=split)
                mse.setdefault("mean", []).append(np.mean((y_tr.mean() - y_te) ** 2))
                mse.setdefault("ls", []).append(np.mean(
                    (LinearRegression().fit(X_tr, y_tr).predict(X_te) - y_te) ** 2))
                jobs += [(name, mode, split, schema, X_tr, y_tr, X_te, y_te)
                         for name in names for mode in SCHEMA_MODES]
            fits = Parallel(n_jobs=args.n_jobs)(
                delayed(_schema_fit)(name, mode, eps, *rest) for name, mode, *rest in jobs)
            for (name, mode, *_), (err, median, kind, y_bound) in zip(jobs, fits):
                mse.setdefault((name, mode), []).append(err)
                medians.setdefault((name, mode), []).append(median)
                kinds[name, mode] = kind
                if name == names[0] and mode in ends:
                    ends[mode].append(y_bound)
            m = {key: float(np.mean(v)) / np.mean(mse["mean"]) for key, v in mse.items()}
            n_eps = len(y_tr) * eps
            for name in names:
                ratios[data_name, eps, name] = {mode: m[name, mode] for mode in SCHEMA_MODES}
                rows.append([data_name, f"{eps:g}", f"{n_eps:.0f}", f"{m['ls']:.3f}", name]
                            + [f"{m[name, mode]:.3f}" for mode in SCHEMA_MODES]
                            + [f"{m[name, 'tightened'] / m[name, 'schema']:.2f}"]
                            + [_median_cell(medians[name, mode], kinds[name, mode])
                               for mode in SCHEMA_MODES])
                print(" | ".join(rows[-1]), file=sys.stderr, flush=True)
            tight, quantiles = (np.mean(ends[k], axis=0) for k in ("tightened", "oracle"))
            label_rows.append([data_name, f"{eps:g}", "[{:g}, {:g}]".format(*schema.label_range),
                               f"[{tight[0]:.4g}, {tight[1]:.4g}]",
                               f"[{quantiles[0]:.4g}, {quantiles[1]:.4g}]"])
    table = markdown_table(
        ["data", "epsilon", "n_train epsilon", "least squares", "estimator",
         *SCHEMA_MODES, "tightened / schema", *(f"median pdp eps, {m}" for m in SCHEMA_MODES)],
        rows)
    table += (
        f"\n\nThe label's range: declared, privately tightened ({names[0]}, mean "
        "over the splits) and the oracle's quantiles:\n\n" + markdown_table(
            ["data", "epsilon", "declared", "tightened", "oracle quantiles"], label_rows))
    intro = (
        "Test mean squared error over the mean predictor's (mean over "
        f"{args.splits} random 80/20 splits; least squares for reference) on "
        "public tables with categorical columns whose ranges are declared from "
        "the columns' meaning, four ways: **box**, the per-dummy box (`bounds_X` "
        "over the one-hot columns: each indicator its own range and share of "
        "the row norm); **schema**, a `Schema` (each categorical column one "
        "share, indicators not centred); **tightened**, the schema at the "
        "estimators' default `tighten_bounds=\"auto\"` (the label-first rule: "
        "the label's quantiles first, at the epsilon their level needs, the "
        "numeric ranges with what is left, on a public share of the rows; where "
        "the budget cannot afford the label's, nothing is tightened); **oracle**, the schema at the training rows' "
        "0.5% and 99.5% quantiles (not private). Then each mode's median "
        "per-instance epsilon (median of `pdp_losses_` over the training rows, "
        "median over the splits), marked with `pdp_kind_` where it is not "
        "exact: *conditional* on the released bounds, or a *bound*. Every "
        "estimator is given epsilon, delta = 1e-6 and the declaration, all else "
        "at its default; `dp_epsilon_` is checked to be at most epsilon (the "
        "tightened fits' include the bounds). heavy: a synthetic table (3 "
        "heavy-tailed measurements declared [0, 60], 99.5% of rows below 16; 5 "
        "N(50, 10) in [0, 100]; 3 categorical columns of 6 levels; the label "
        "declared 4.5 times wider than its largest value); diabetes: "
        "scikit-learn's, original units, sex a category; fair: statsmodels' "
        "affairs survey (6366 rows, label the time in affairs, mostly 0, two "
        "occupations as categories); randhie: statsmodels' RAND health "
        "insurance experiment (20186 person-years; site, coinsurance plan and "
        "self-rated health as categories, 10 numeric columns: 22 encoded "
        "columns, 13 shares) with three labels: the age (predictable), the "
        "outpatient visits (a count) and the medical spending in dollars "
        "(heavy-tailed: median 35, largest 39,182). See "
        "benchmarks/schema_tables.py for every declared range.\n\n"
        + _schema_summary(ratios, names))
    write_page("schema", "Declared schema: per-dummy box, categorical shares, tightened",
               intro, names, table,
               "python benchmarks/run.py " + " ".join(sys.argv[1:]), write=not args.quick)


def _schema_summary(ratios, names):
    """Per estimator, the medians over the cells of the modes' ratios and
    the cells where tightening costs more than 5%."""
    lines = []
    for name in names:
        cells = {key[:2]: r for key, r in ratios.items() if key[2] == name}
        share = np.median([r["schema"] / r["box"] for r in cells.values()])
        tight = np.median([r["tightened"] / r["schema"] for r in cells.values()])
        worse = [f"{data} at {eps:g} ({r['tightened'] / r['schema']:.2f})"
                 for (data, eps), r in cells.items() if r["tightened"] > 1.05 * r["schema"]]
        lines.append(f"- `{name}`: schema / box median {share:.2f}, tightened / schema "
                     f"median {tight:.2f}; tightened more than 5% worse than the schema in "
                     + (", ".join(worse) if worse else "no cell"))
    return "Summary over the cells:\n\n" + "\n".join(lines)


# Ridges of the oracle OPS, the best chosen in hindsight per cell.
ORACLE_ALPHAS = (0, 1, 3, 10, 20, 30, 50, 100, 200, 300, 500, 1000, 3000)


def _oracle_ops(X_tr, y_tr, X_te, y_te, eps, alphas, draws, rng):
    """Test MSE of OPS calibrated with the data's own conditioning (not private).

    On rows scaled into the unit ball, OPS at ridge alpha (intercept not
    penalised) with gamma for (eps, DELTA) at the data's exact leverage bound
    1/(n - 1) + (1 + ||x_bar||)^2 / (lambda_min(S) + alpha) and residual bound
    1 + |b| + ||beta||: what AdaOPS's private floor and bound approximate,
    with nothing spent on them and no margin. Returns the mean over ``draws``
    draws per alpha (inf where no gamma meets eps) and the conditioning
    G = lambda_min(S) / (1 + ||x_bar||)^2.
    """
    n, d = X_tr.shape
    x_bar, y_bar = X_tr.mean(axis=0), y_tr.mean()
    centred = X_tr - x_bar
    S = centred.T @ centred
    lam = np.linalg.eigvalsh(S)[0]
    w2 = (1.0 + np.linalg.norm(x_bar)) ** 2
    design = np.column_stack([X_tr, np.ones(n)])
    gram = design.T @ design
    out = {}
    for alpha in alphas:
        beta = np.linalg.solve(S + alpha * np.eye(d), centred.T @ (y_tr - y_bar))
        b = y_bar - x_bar @ beta
        try:
            gamma = ops_gamma(eps, DELTA, 1.0 / (n - 1) + w2 / (lam + alpha),
                              1.0 + abs(b) + np.linalg.norm(beta), xtol=1e-6)
        except ValueError:
            out[alpha] = np.inf
            continue
        H = gram.copy()
        H[:d, :d] += alpha * np.eye(d)
        chol = np.linalg.cholesky(gamma * H)
        noise = np.linalg.solve(chol.T, rng.standard_normal((d + 1, draws)))
        theta = np.r_[beta, b][:, None] + noise
        out[alpha] = float(np.mean((X_te @ theta[:d] + theta[d] - y_te[:, None]) ** 2))
    return out, lam / w2


def oracle(args):
    """AdaOPS and AdaSSP against OPS calibrated with the data's own
    conditioning, the whole budget (or a share) on the sample and the best
    ridge in hindsight: how much of AdaOPS's gap is its private calibration."""
    rows = []
    for data_name, load in datasets(args.n, args.d):
        for eps in args.epsilon:
            mse, conditioning, floors = {}, [], []
            for split in range(args.splits):
                X, y, data_norm, y_bound = load(split)
                # the estimators' own scaling: rows into the unit ball, labels into [-1, 1]
                norms = np.maximum(np.linalg.norm(X, axis=1) / data_norm, 1.0)
                Xs, ys = X / data_norm / norms[:, None], np.clip(y / y_bound, -1.0, 1.0)
                parts = train_test_split(Xs, ys, test_size=0.2, random_state=split)
                X_tr, X_te, y_tr, y_te = parts
                mse.setdefault("mean", []).append(np.mean((y_tr.mean() - y_te) ** 2))
                for name in ("adassp", "adaops"):
                    est = FACTORIES[name](eps, DELTA, *X_tr.shape, data_norm=1.0, y_bound=1.0,
                                          random_state=split).fit(X_tr, y_tr)
                    # the guarantee is checked, never assumed
                    if not est.dp_epsilon_ <= eps * (1 + 1e-9):
                        raise RuntimeError(f"{name}: dp_epsilon_={est.dp_epsilon_} exceeds {eps}")
                    mse.setdefault(name, []).append(np.mean((est.predict(X_te) - y_te) ** 2))
                    if name == "adaops":
                        floors.append(np.nan if est.mean_only_ else est.floor_)
                rng = np.random.default_rng(split)
                for share in args.shares:
                    found, G = _oracle_ops(X_tr, y_tr, X_te, y_te, share * eps, ORACLE_ALPHAS,
                                           args.draws, rng)
                    for alpha, value in found.items():
                        mse.setdefault((share, alpha), []).append(value)
                conditioning.append(G)
            m = {key: float(np.mean(v)) for key, v in mse.items()}
            n_eps = len(y_tr) * eps
            row = [data_name, f"{eps:g}", f"{n_eps:.0f}", f"{m['adassp'] / m['mean']:.3f}",
                   f"{m['adaops'] / m['mean']:.3f}", f"{np.median(conditioning):.3g}",
                   "mean only" if np.isnan(floors).all() else f"{np.nanmedian(floors):.3g}"]
            for share in args.shares:
                best = min(ORACLE_ALPHAS, key=lambda a: m[(share, a)])
                row.append(f"{m[(share, best)] / m['mean']:.3f} ({best:g})")
            rows.append(row)
            print(" | ".join(row), file=sys.stderr, flush=True)
    table = markdown_table(
        ["data", "epsilon", "n_train epsilon", "adassp", "adaops", "G of the data",
         "adaops floor_"] + [f"oracle OPS, {share:g} epsilon (best alpha)"
                             for share in args.shares], rows)
    intro = (
        "Test mean squared error divided by that of the mean predictor (as on "
        "the utility page; the same data and splits, features scaled into the unit "
        f"ball and labels into [-1, 1]), mean over {args.splits} splits. The oracle "
        "OPS is not private: it calibrates gamma at the data's own conditioning "
        "G = lambda_min(S) / (1 + ||x_bar||)^2 (S the centred scatter of the "
        "training rows) and residual bound 1 + |b| + ||beta||, with the given "
        "share of epsilon (delta = 1e-6) and nothing spent on releasing them, "
        "and it is scored at the ridge that was best on the test data, over "
        f"alpha in {{{', '.join(f'{a:g}' for a in ORACLE_ALPHAS)}}} "
        f"({args.draws} posterior draws per split). AdaOPS instead releases a "
        "lower bound on G that must hold except with probability about delta "
        "(its floor: the released value less about five noise deviations, "
        "rounded down to a cell) and, where that floor is low, adds a ridge. "
        "'adaops floor_' is the median floor of its fits (on the G scale)."
    )
    write_page("oracle", "AdaOPS against an oracle OPS", intro, ["adassp", "adaops"], table,
               "python benchmarks/run.py " + " ".join(sys.argv[1:]),
               write=not args.quick)


# The gain shares: of the reference's gain over the mean predictor, in the
# cells where the reference beats the mean by more than GAIN_MARGIN of its error.
REFERENCE = "adassp"
GAIN_MARGIN = 0.10


def gain_share(m, name, reference=REFERENCE, margin=GAIN_MARGIN):
    """Share of the reference's gain over the mean predictor that ``name``
    captures in a cell of mean test MSEs ``m``:
    ``(MSE_mean - MSE_name) / (MSE_mean - MSE_reference)`` where
    ``MSE_reference < (1 - margin) MSE_mean``, None elsewhere (no gain to
    share). A refused cell (NaN) captures nothing: 0."""
    gain = m["mean"] - m[reference]
    if not gain > margin * m["mean"]:
        return None
    if np.isnan(m[name]):
        return 0.0
    return (m["mean"] - m[name]) / gain


def _percent(share):
    text = f"{100 * share:.0f}"
    return ("0" if text == "-0" else text) + "%"


def gain_share_section(cells, names, reference=REFERENCE, margin=GAIN_MARGIN):
    """The shares of every estimator but the reference, per cell (blank
    where the reference does not beat the mean by more than ``margin``),
    and per estimator their median over those cells."""
    others = [name for name in names if name != reference]
    if not others:
        return ""
    rows, shares = [], {name: [] for name in others}
    for data_name, eps, n_eps, m in cells:
        row = [data_name, f"{eps:g}", f"{n_eps:.0f}", f"{m[reference] / m['mean']:.3f}"]
        for name in others:
            share = gain_share(m, name, reference, margin)
            if share is not None:
                shares[name].append(share)
            row.append("" if share is None else _percent(share))
        rows.append(row)
    counted = len(shares[others[0]])
    lines = [
        f"- `{name}`: median share {_percent(np.median(shares[name]))} over the "
        f"{counted} cells" if counted else f"- `{name}`: no cell to share"
        for name in others
    ]
    intro = (
        f"Share of {reference}'s gain over the mean predictor that each estimator "
        f"captures, (MSE_mean - MSE_estimator) / (MSE_mean - MSE_{reference}): 100% "
        f"matches {reference}, 0% is no better than the mean, negative is worse; "
        f"only in the cells where {reference} beats the mean predictor by more than "
        f"{100 * margin:g}% of its error (elsewhere blank; a refused cell counts "
        f"0%). Median per estimator over those cells:"
    )
    return "\n\n".join([intro, "\n".join(lines), markdown_table(
        ["data", "epsilon", "n_train epsilon", f"{reference} / mean", *others], rows)])


def _flag(ratio, n_eps):
    if np.isnan(ratio):
        return "refused" + (" *" if n_eps >= 100 else "")
    return f"{ratio:.3f}" + (" *" if n_eps >= 100 and ratio > 1.10 else "")


def _utility_summary(cells, names):
    """Per estimator: cells within 10% of the mean predictor (n epsilon >= 100),
    and cells at least as good as AdaSSP (when it is in the grid); a refused
    cell (NaN) counts as a miss."""
    lines = []
    for name in names:
        big = [m for _, _, n_eps, m in cells if n_eps >= 100]
        ok = sum(m[name] <= 1.10 * m["mean"] for m in big)
        line = f"- `{name}`: within 10% of the mean predictor in {ok} of {len(big)} " \
            "cells with n_train epsilon >= 100"
        if "adassp" in names and name != "adassp":
            good = sum(m[name] <= 1.10 * min(m["adassp"], m["mean"]) for *_, m in cells)
            line += f"; within 10% of the better of AdaSSP and the mean in {good} of {len(cells)}"
        lines.append(line)
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# (b) Speed and memory
# ---------------------------------------------------------------------------


def _reference():
    return Ridge(solver="cholesky")


def _build(name, n, d, n_jobs=None):
    if name == "ridge":
        return _reference()
    est = FACTORIES[name](1.0, _speed_delta(n), n, d, data_norm=1.0, y_bound=1.0,
                          random_state=0)
    return est.set_params(n_jobs=n_jobs)


def _speed_delta(n):
    """delta well below 1 / n (the estimators warn from 1 / n on)."""
    return min(DELTA, 0.1 / n)


def _touch(n_bytes):
    """Allocate and write ``n_bytes`` of fresh memory, then free it.

    On some virtual machines memory that the process has not used for a
    while is handed back to the host, and the first write to it is slow
    (about 1.5 s per GiB measured here): a fit that allocates a copy of X
    right after another fit can pay that for its copy. Touching as much
    memory as X just before every timed fit makes each run start alike.
    """
    np.ones(n_bytes // 8)


def _timed_fit(name, n, d, n_jobs, X, y):
    est = _build(name, n, d, n_jobs)
    _touch(X.nbytes)
    start = time.perf_counter()
    est.fit(X, y)
    elapsed = time.perf_counter() - start
    if name != "ridge" and est.pdp_losses_.shape != (n,):
        raise RuntimeError(f"{name} did not report pdp_losses_ for every row")
    return elapsed


def _time_worker(names, n, d, repeat, n_jobs_values):
    """Minimum fit times over ``repeat`` runs, one process.

    Ridge's runs come in two groups of its own, one before and one after
    ours (a busy spell of the shared machine rarely covers both), then each
    estimator at each n_jobs. Also Ridge timed once right after an OPS fit
    without touching memory first (the artifact :func:`_touch` avoids), to
    show its size.
    """
    X, y = synthetic(n, d, 0)
    ridge = [_timed_fit("ridge", n, d, None, X, y) for _ in range(repeat)]
    times = {}
    for name in names:
        for n_jobs in n_jobs_values:
            times[name, n_jobs] = min(
                _timed_fit(name, n, d, n_jobs, X, y) for _ in range(repeat)
            )
    ridge += [_timed_fit("ridge", n, d, None, X, y) for _ in range(repeat)]
    times["ridge"] = min(ridge)
    _build("ops", n, d).fit(X, y)
    start = time.perf_counter()
    _reference().fit(X, y)
    times["ridge after a fit"] = time.perf_counter() - start
    return times


def _memory_worker(name, n, d, n_jobs):
    """Peak memory of one fit beyond X and y, in a fresh process.

    Two measures: the tracemalloc peak (numpy reports its buffers to it) and
    the growth of the resident-set high-water mark over its value after the
    data was created (includes everything: BLAS buffers, interpreter).
    """
    X, y = synthetic(n, d, 0)
    est = _build(name, n, d, n_jobs)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    est.fit(X, y)
    traced = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # ru_maxrss is in KiB on Linux, bytes on macOS.
    unit = 1 if sys.platform == "darwin" else 1024
    return traced, (rss_after - rss_before) * unit


def _in_fresh_process(func, *args):
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(func, args)


def speed(args):
    names = args.estimators
    n_jobs_values = [None, -1]
    rows, artifacts = [], []
    for d in args.d:
        for n in args.n:
            x_bytes = 8 * n * d
            times = _in_fresh_process(_time_worker, names, n, d, args.repeat, n_jobs_values)
            memory = {name: _in_fresh_process(_memory_worker, name, n, d, None)
                      for name in ["ridge", *names]}
            size = f"{n:.0e}".replace("e+0", "e")
            ridge = times["ridge"]
            artifacts.append(
                f"n = {size}, d = {d}: {ridge:.3g} s in its own runs, "
                f"{times['ridge after a fit']:.3g} s right after an OPS fit"
            )
            for name in names:
                traced, rss = memory[name]
                default, threads = (times[name, n_jobs] for n_jobs in n_jobs_values)
                rows.append([
                    name, size, d, f"{ridge:.3g}",
                    f"{default:.3g}", f"{default / ridge:.2f}",
                    f"{threads:.3g}", f"{threads / ridge:.2f}",
                    f"{traced / 2**20:.0f} ({100 * traced / x_bytes:.0f}%)",
                    f"{rss / 2**20:.0f} ({100 * rss / x_bytes:.0f}%)",
                    f"{100 * memory['ridge'][0] / x_bytes:.0f}%",
                ])
                print(" | ".join(map(str, rows[-1])), file=sys.stderr, flush=True)
    table = markdown_table(
        ["estimator", "n", "d", "Ridge (s)", "fit, default n_jobs (s)", "ratio",
         "fit, n_jobs=-1 (s)", "ratio",
         "extra memory, traced (MiB, % of X)", "extra memory, RSS (MiB, % of X)",
         "Ridge extra memory, traced"],
        rows,
    )
    intro = (
        "Wall-clock time of `fit` (which computes `pdp_losses_` for every row) "
        "against scikit-learn's `Ridge(solver=\"cholesky\").fit` on the same "
        "data in the same process, minimum of "
        f"{args.repeat} runs each; both fit an intercept (their default). Ridge "
        "runs with its default threading (BLAS on "
        f"{effective_n_jobs(-1)} cores here), in two groups of runs of its own, "
        "before and after ours (minimum of both); our estimators run at their default n_jobs (None: one thread "
        "of Python, BLAS threaded) and with n_jobs=-1 (chunks on "
        f"{effective_n_jobs(-1)} threads, BLAS on one thread each). The "
        "machine is shared: other processes may be running, which is why the "
        "minimum is reported. Every timed fit starts after writing as much "
        "fresh memory as X: on this virtual machine memory unused for a few "
        "seconds is returned to the host and the first write to it is slow, "
        "which without that step lands on whichever fit allocates a copy of X "
        "first (Ridge: " + "; ".join(artifacts) + "). "
        "Extra memory is the peak beyond X and y during one fit at the "
        "default n_jobs, measured in a fresh process: the tracemalloc peak of "
        "the allocations (numpy buffers) and the growth of the resident-set "
        "high-water mark. Ridge's traced peak includes the centred copy of X "
        "that it makes to fit the intercept. Data: synthetic, float64, rows "
        "in the unit ball; budget epsilon = 1, delta = min(1e-6, 0.1 / n)."
    )
    write_page("speed", "Fit speed and memory", intro, names, table,
               "python benchmarks/run.py " + " ".join(sys.argv[1:]),
               write=not args.quick)


# ---------------------------------------------------------------------------
# (c) Dask: rows generated on the workers of a local cluster
# ---------------------------------------------------------------------------


def _peak_rss():
    # ru_maxrss is in KiB on Linux, bytes on macOS.
    unit = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * unit


def _in_memory_worker(n, d):
    """Time of the in-memory fit with pdp_losses_, and the process's peak RSS."""
    X, y = synthetic(n, d, 0)
    est = _build("ops", n, d, n_jobs=-1)  # both cores, as the two workers
    start = time.perf_counter()
    est.fit(X, y)
    elapsed = time.perf_counter() - start
    return elapsed, float(np.median(est.pdp_losses_)), _peak_rss()


def _dask_run(args, persist):
    """Fit on a LocalCluster of ``args.workers`` single-threaded processes.

    The rows are generated on the workers, in each pass or (``persist``)
    once, before the timing, and kept there. Returns the times of the fit and
    of the second pass (pdp_losses_ with its exact median), of generating the
    rows alone, the median, and each worker's peak resident memory.
    """
    import dask
    from distributed import Client, LocalCluster, wait

    # the exact quantile that PDPReport.summary_ uses, without refitting
    from sklearn_pdp.utils._dask import quantiles

    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        X, y = dask_synthetic(args.n, args.d, args.chunk, 0)
        start = time.perf_counter()
        if persist:
            X, y = dask.persist(X, y)
            wait([X, y])
        else:
            dask.compute(X.sum(), y.sum())  # what generating the rows alone costs
        generate = time.perf_counter() - start
        est = _build("ops", args.n, args.d)
        start = time.perf_counter()
        est.fit(X, y)  # sufficient statistics: one pass, noise drawn here
        fitted = time.perf_counter()
        median = float(quantiles(est.pdp_losses_.persist(), [0.5])[0])
        done = time.perf_counter()
        peaks = client.run(_peak_rss)
    return fitted - start, done - fitted, generate, median, list(peaks.values())


def dask_scaling(args):
    n, d, rows = args.n, args.d, []
    mem_time, mem_median, mem_rss = _in_fresh_process(_in_memory_worker, args.n_memory, d)
    rows.append(["in memory (numpy), one process, n_jobs=-1", f"{args.n_memory:.0e}".replace("e+0", "e"),
                 f"{mem_time:.1f}", "", f"{mem_time:.1f}", f"{mem_rss / 2**20:.0f} (process)",
                 f"{mem_median:.3g}"])
    print(" | ".join(map(str, rows[-1])), file=sys.stderr, flush=True)
    generated = {}
    for label, persist in (("rows generated in each pass", False),
                           ("rows persisted on the workers", True)):
        fit, second, generate, median, peaks = _dask_run(args, persist)
        generated[persist] = generate
        rows.append([f"Dask, {args.workers} worker processes, {label}",
                     f"{n:.0e}".replace("e+0", "e"), f"{fit:.1f}", f"{second:.1f}",
                     f"{fit + second:.1f}",
                     ", ".join(f"{p / 2**20:.0f}" for p in peaks) + " (per worker)",
                     f"{median:.3g}"])
        print(" | ".join(map(str, rows[-1])), file=sys.stderr, flush=True)
    table = markdown_table(
        ["run", "rows", "fit (s)", "pdp_losses_ (s)", "total (s)",
         "peak resident memory (MiB)", "median pdp epsilon"],
        rows,
    )
    x_mib = 8 * n * d / 2**20
    intro = (
        f"`OPSRegressor` (budget epsilon = 1, delta = min(1e-6, 0.1 / n) for n rows) "
        f"on synthetic data with "
        f"d = {d} features. In memory: X and y generated in the process, then "
        "`fit` with n_jobs=-1, which computes `pdp_losses_` of every row. Dask: a "
        f"`distributed.LocalCluster` of {args.workers} single-threaded worker "
        f"processes on this machine; X ({x_mib:.0f} MiB in all) is generated "
        f"on the workers in blocks of {args.chunk} rows and never gathered. "
        "`fit` is the pass for the sufficient statistics (the noise is drawn on "
        "the driver); the `pdp_losses_` column is the second pass, which "
        "computes the lazy per-instance losses, keeps them on the workers "
        "(`persist`) and takes their exact median. Peak memory is the "
        "resident-set high-water mark of each process (workers: since they "
        "started; in memory: including X itself). In the first Dask run the "
        "rows are generated again in each of the two passes and the times "
        f"include it (one pass of generation alone took {generated[False]:.1f} s); "
        "in the second they are generated once and persisted in the "
        f"workers' memory before the timing ({generated[True]:.1f} s). The "
        "in-memory time does not include generating X."
    )
    write_page("dask", "Scaling out with Dask", intro, ["ops"], table,
               "python benchmarks/run.py " + " ".join(sys.argv[1:]),
               write=not args.quick)


# ---------------------------------------------------------------------------


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    util = commands.add_parser("utility", help="utility grid")
    util.add_argument("--n", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    util.add_argument("--d", type=int, default=10)
    util.add_argument("--epsilon", type=float, nargs="+", default=list(EPSILONS))
    util.add_argument("--splits", type=int, default=5)
    util.add_argument("--n-jobs", type=int, default=1,
                      help="worker processes for the fits of --schema (joblib)")
    util.add_argument("--sweep", action="store_true",
                      help="also fit every estimator that has alpha at fixed alphas 1 .. 1e6")
    util.add_argument("--schema", action="store_true",
                      help="public tables with categorical columns: the per-dummy box, "
                      "the schema's categorical shares, the schema tightened and the "
                      "oracle quantiles side by side, with the median per-instance "
                      "epsilons (-> doc/benchmarks/schema.md; --n: sizes of the synthetic "
                      "heavy table, default 5e4; --quick: that table and diabetes only)")
    spd = commands.add_parser("speed", help="fit speed and memory against Ridge")
    spd.add_argument("--n", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    spd.add_argument("--d", type=int, nargs="+", default=[10, 100])
    spd.add_argument("--repeat", type=int, default=3)
    dsk = commands.add_parser("dask", help="OPS on a local Dask cluster against in memory")
    dsk.add_argument("--n", type=int, default=10_000_000)
    dsk.add_argument("--n-memory", type=int, default=1_000_000)
    dsk.add_argument("--d", type=int, default=50)
    dsk.add_argument("--chunk", type=int, default=250_000)
    dsk.add_argument("--workers", type=int, default=2)
    dsk.add_argument("--quick", action="store_true",
                     help="smoke test: small sizes, writes nothing into doc/")
    orc = commands.add_parser("oracle", help="AdaOPS against OPS told the data's conditioning")
    orc.add_argument("--n", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    orc.add_argument("--d", type=int, default=10)
    orc.add_argument("--epsilon", type=float, nargs="+", default=list(EPSILONS))
    orc.add_argument("--splits", type=int, default=5)
    orc.add_argument("--draws", type=int, default=10)
    orc.add_argument("--shares", type=float, nargs="+", default=[1.0, 0.8],
                     help="shares of epsilon the oracle spends on the sample")
    orc.add_argument("--quick", action="store_true",
                     help="smoke test: one size, two splits, writes nothing into doc/")
    everything = commands.add_parser("all", help="utility grid, then speed (defaults)")
    for sub in (util, spd, everything):
        sub.add_argument(
            "--estimators", nargs="+", choices=sorted(FACTORIES),
            default=sorted(FACTORIES),
        )
        sub.add_argument(
            "--quick", action="store_true",
            help="smoke test: tiny sizes, one or two repeats, writes nothing into doc/",
        )
    args = parser.parse_args(argv)
    if args.command == "utility" and args.schema and args.n == util.get_default("n"):
        args.n = [50_000]
    if args.quick and args.command == "utility":
        args.n, args.epsilon, args.splits = [1_000], [0.3, 3.0], 2
    elif args.quick and args.command == "speed":
        args.n, args.d, args.repeat = [2_000], [10], 1
    elif args.quick and args.command == "oracle":
        args.n, args.epsilon, args.splits, args.draws = [1_000], [3.0], 2, 2
    elif args.quick and args.command == "dask":
        args.n, args.n_memory, args.chunk = 200_000, 20_000, 30_000
    print(environment(), "\n", flush=True)
    warnings.simplefilter("error", sklearn_pdp.PrivacyLeakWarning)
    if args.command == "all":
        options = ["--estimators", *args.estimators] + ["--quick"] * args.quick
        main(["utility", *options])
        main(["speed", *options])
    else:
        commands = {"utility": utility, "speed": speed, "dask": dask_scaling, "oracle": oracle}
        commands[args.command](args)


if __name__ == "__main__":
    main()
