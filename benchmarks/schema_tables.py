"""Public tables with categorical columns, each with a declared schema.

Each loader returns ``(frame, schema)``: a pandas DataFrame holding the
feature columns and the label, and a :class:`~sklearn_pdp.Schema` declared
from what the columns mean (their data dictionaries), never from the rows.
``None`` where the table needs statsmodels and it is not installed. Used by
``run.py utility --schema`` and ``categorical_shares.py``.

Written as a CSV file and its schema's JSON, a table feeds the command
line::

    python benchmarks/schema_tables.py randhie_age DIR   # DIR/randhie_age.csv, .json
    python -m sklearn_pdp DIR/randhie_age.csv --schema DIR/randhie_age.json
"""

import sys
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.datasets import load_diabetes

from sklearn_pdp import Schema


def statsmodels_data(name):
    """statsmodels' bundled data set ``name`` (endog and exog as pandas), or
    None without statsmodels."""
    try:
        from statsmodels import datasets as sm_datasets
    except ImportError:
        return None
    return getattr(sm_datasets, name).load_pandas()


def heavy(n_samples, random_state):
    """A synthetic table shaped like the public ones whose declared ranges
    are loose: 3 measurements 2 lognormal(0, 0.8) capped at 59 (99.5% of
    rows below 16; declared [0, 60]), 5 columns N(50, 10) (declared
    [0, 100]), 3 categorical columns of 6 levels, the label linear in all
    (one model for every split) plus N(0, 9), declared +-210 (about 4.5
    times the largest |y|)."""
    rng = np.random.default_rng([random_state, 33])
    beta = np.random.default_rng(33).standard_normal(26)
    levels = list("abcdef")
    codes = rng.integers(0, 6, (n_samples, 3))
    numeric = np.column_stack([np.minimum(2 * rng.lognormal(0, 0.8, (n_samples, 3)), 59),
                               rng.normal(50, 10, (n_samples, 5))])
    full = np.column_stack([numeric, *(np.eye(6)[codes[:, j]] for j in range(3))])
    frame = pd.DataFrame(numeric, columns=[f"m{j}" for j in range(3)]
                         + [f"x{j}" for j in range(5)])
    for j in range(3):
        frame[f"c{j}"] = np.array(levels)[codes[:, j]]
    frame["y"] = 0.5 * full @ beta + 3 * rng.standard_normal(n_samples)
    ranges = {f"m{j}": (0, 60) for j in range(3)} | {f"x{j}": (0, 100) for j in range(5)}
    return frame, Schema(ranges, {f"c{j}": levels for j in range(3)}, "y", (-210, 210))


def diabetes():
    """scikit-learn's diabetes data (442 rows) in its original units with
    the ranges a data dictionary gives (age [0, 120], BMI [10, 70], blood
    pressure [40, 200], the serum measurements at their clinical limits;
    the disease progression [0, 400]); sex {1, 2} as a category."""
    frame = load_diabetes(as_frame=True, scaled=False).frame
    ranges = dict(zip(["age", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6"],
                      [(0, 120), (10, 70), (40, 200), (50, 400), (20, 300), (10, 150),
                       (0, 20), (2, 8), (40, 400)]))
    return frame, Schema(ranges, {"sex": [1.0, 2.0]}, "target", (0, 400))


def fair(label="affairs"):
    """statsmodels' extramarital affairs survey (6366 rows): the
    respondent's and the husband's occupation (codes 1-6, nominal) as
    categories, the other answers numeric at their codes' or their
    meaning's ranges; the label the time spent in affairs (most rows 0, a
    few up to 58), declared [0, 100], or the years married [0, 60]."""
    loaded = statsmodels_data("fair")
    if loaded is None:
        return None
    frame = loaded.data
    ranges = {"rate_marriage": (1, 5), "age": (0, 120), "yrs_married": (0, 60),
              "children": (0, 20), "religious": (1, 4), "educ": (0, 25),
              "affairs": (0, 100)}
    categorical = {"occupation": [1, 2, 3, 4, 5, 6], "occupation_husb": [1, 2, 3, 4, 5, 6]}
    frame[list(categorical)] = frame[list(categorical)].astype(int)
    label_range = ranges.pop(label)
    return frame, Schema(ranges, categorical, label, label_range)


# The RAND health insurance experiment's person-years, from statsmodels'
# source file (all its columns), with the ranges their definitions give.
RANDHIE_RANGES = {
    "xage": (0, 120), "female": (0, 1), "child": (0, 1), "fchild": (0, 1),
    "educdec": (0, 25),      # years of schooling
    "linc": (0, 12),         # log family income in dollars
    "lfam": (0, 3),          # log family size (up to 20)
    "mhi": (0, 100), "xghindx": (0, 100),  # mental and general health indices
    "disea": (0, 100),       # chronic diseases
    "physlm": (0, 1),        # physical limitation
}
RANDHIE_LABELS = {"xage": (0, 120), "mdvis": (0, 365),  # visits in a year
                  "meddol": (0, 50_000)}                # medical spending, dollars
RANDHIE_CATEGORIES = {
    "site": [f"site{k}" for k in range(1, 7)],
    "plan": ["free", "25%", "50%", "95%", "100%"],  # the coinsurance rate
    "health": ["excellent", "good", "fair", "poor"],  # self-rated
}


def randhie(label="xage", n_samples=None, random_state=0):
    """statsmodels' RAND health insurance experiment (20186 person-years
    with the years of schooling given; a random subsample of
    ``n_samples`` rows per split if given): the site, the coinsurance plan
    and the self-rated health as categories (6, 5 and 4 levels), the
    numeric columns of :data:`RANDHIE_RANGES`; the label the age (the
    other columns' child indicators predict it), the outpatient visits (a
    count, median 1, up to 77) or the medical spending (dollars: median 35,
    mean 172, up to 39,182)."""
    loaded = statsmodels_data("randhie")
    if loaded is None:
        return None
    import statsmodels.datasets.randhie as source

    frame = pd.read_csv(Path(source.__file__).parent / "src" / "randhie.csv")
    frame = frame.dropna(subset=["educdec"]).reset_index(drop=True)
    if n_samples is not None:
        frame = frame.iloc[np.random.default_rng([random_state, 7]).choice(
            len(frame), n_samples, replace=False)].reset_index(drop=True)
    frame["site"] = "site" + frame.site.astype(int).astype(str)
    frame["plan"] = frame.coins.map(dict(zip([0, 25, 50, 95, 100],
                                             RANDHIE_CATEGORIES["plan"])))
    frame["health"] = np.select([frame.hlthg == 1, frame.hlthf == 1, frame.hlthp == 1],
                                ["good", "fair", "poor"], "excellent")
    ranges = {k: v for k, v in RANDHIE_RANGES.items() if k != label}
    columns = [*ranges, *RANDHIE_CATEGORIES, label]
    return frame[columns], Schema(ranges, RANDHIE_CATEGORIES, label, RANDHIE_LABELS[label])


def anes96():
    """statsmodels' American National Election Study 1996 (944 rows): the
    respondent's left-right self-placement (1-7) from the party
    identification (7 levels) and education (7 levels) as categories, the
    placements of the candidates (1-7), age, income bracket (1-24), days a
    week of television news, the log population of the place and the
    vote."""
    loaded = statsmodels_data("anes96")
    if loaded is None:
        return None
    frame = loaded.data
    categorical = {"PID": list(range(7)), "educ": list(range(1, 8))}
    frame[list(categorical)] = frame[list(categorical)].astype(int)
    ranges = {"TVnews": (0, 7), "ClinLR": (1, 7), "DoleLR": (1, 7), "age": (0, 120),
              "income": (1, 24), "vote": (0, 1), "logpopul": (np.log(0.1), np.log(1e5))}
    return frame, Schema(ranges, categorical, "selfLR", (1, 7))


def grunfeld():
    """statsmodels' Grunfeld investment data (220 firm-years, 11 firms as a
    category): the gross investment from the firm's value and capital
    stock (millions of dollars) and the year."""
    loaded = statsmodels_data("grunfeld")
    if loaded is None:
        return None
    frame = loaded.data
    firms = sorted(frame.firm.unique())  # the public list of the study's firms
    ranges = {"value": (0, 10_000), "capital": (0, 5_000), "year": (1935, 1954)}
    return frame, Schema(ranges, {"firm": firms}, "invest", (0, 2_000))


def ccard():
    """statsmodels' credit card data (72 rows): the average monthly
    spending from age, income (tens of thousands of dollars) and its square,
    and home ownership as a category."""
    loaded = statsmodels_data("ccard")
    if loaded is None:
        return None
    frame = loaded.data
    frame["OWNRENT"] = frame.OWNRENT.astype(int)
    ranges = {"AGE": (18, 100), "INCOME": (0, 20), "INCOMESQ": (0, 400)}
    return frame, Schema(ranges, {"OWNRENT": [0, 1]}, "AVGEXP", (0, 5_000))


TABLES = {"diabetes": diabetes, "fair": fair, "anes96": anes96, "grunfeld": grunfeld,
          "ccard": ccard, "randhie_age": lambda: randhie("xage"),
          "randhie_mdvis": lambda: randhie("mdvis"),
          "randhie_meddol": lambda: randhie("meddol")}


def write(name, directory):
    """Write table ``name`` as ``directory/name.csv`` and its schema as
    ``directory/name.json``."""
    frame, schema = TABLES[name]()
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    frame.to_csv(directory / f"{name}.csv", index=False)
    schema.to_json(directory / f"{name}.json")


if __name__ == "__main__":
    write(*sys.argv[1:3])
