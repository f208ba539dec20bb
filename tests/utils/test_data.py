"""The row passes: scaling into the unit ball, chunked and threaded reductions."""

import warnings
from fractions import Fraction

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_pdp.domain._scaler import DomainScaler
from sklearn_pdp.utils._rows import ChunkScratch, ScaledData, ScaledRows, squared_norms
from sklearn_pdp.utils._ridge_system import RidgeSystem


@pytest.mark.parametrize("data_norm", [1e-200, 0.5, 3.0, 1e200])
def test_rows_are_scaled_into_the_unit_ball(data_norm):
    """Inside the ball x / data_norm, outside the direction with norm 1: on
    the boundary, far out (entries near the float maximum) and for tiny and
    huge bounds."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    radius = np.concatenate([
        rng.uniform(0, 1, 150), [1.0, 1 - 1e-16, 1 + 1e-15, 1 + 1e-9, 2.0],
        10.0 ** rng.uniform(0, 300, 45),
    ])
    with np.errstate(over="ignore"):  # rows past the float maximum: dropped below
        X *= radius[:, None] * data_norm
    X[-1] = [1.7e308, -1e308, 0.0, 1.0]
    finite = np.all(np.isfinite(X), axis=1)
    X, radius = X[finite], radius[finite]
    Xs = DomainScaler(data_norm, 1.0, fit_intercept=False).scale(X)
    norms = np.linalg.norm(Xs, axis=1)
    assert np.all(norms <= 1.0 + 1e-15)
    inside = radius < 1 - 1e-12
    assert_array_equal(Xs[inside], X[inside] / data_norm)
    outside = radius > 1 + 1e-12
    assert_allclose(norms[outside], 1.0, rtol=1e-14)
    direction = X[outside] / np.abs(X[outside]).max(axis=1, keepdims=True)
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    assert_allclose(Xs[outside], direction, rtol=1e-14, atol=1e-300)


def test_clipped_rows_are_reported():
    X = np.array([[0.3, 0.4], [3.0, 4.0], [1e300, 0.0]])
    scaler = DomainScaler(1.0, 1.0, fit_intercept=False)
    assert_allclose(scaler.clip(X), [[0.3, 0.4], [0.6, 0.8], [1.0, 0.0]])


@pytest.mark.parametrize("n_jobs", [None, 2])
def test_gram_matches_the_scaled_rows(n_jobs):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(5000, 3))
    y = rng.normal(size=5000)
    scaler = DomainScaler(2.0, 1.5, fit_intercept=True)
    XtX, Xty = ScaledData(X, y, scaler, n_jobs=n_jobs).gram()
    Xs, ys = scaler.scale(X, y)
    assert_allclose(XtX, Xs.T @ Xs, rtol=1e-12)
    assert_array_equal(XtX, XtX.T)
    assert_allclose(Xty, Xs.T @ ys, rtol=1e-12)


def _chunk_cases():
    """{name: (X, scaler)}: rows inside the ball, a few outside, far outside,
    per-feature bounds, extreme data_norm, and a Fortran-ordered X."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(3000, 6))
    X /= 1.1 * np.linalg.norm(X, axis=1, keepdims=True).max()
    few = X.copy()
    few[[5, 700, 2999]] *= [[1.5], [3.0], [1.0 + 1e-9]]
    far = X.copy()
    far[17] = [1.7e308, -1e308, 0.0, 1.0, 0.0, 0.0]
    bounds = (np.full(6, -0.3), np.full(6, 0.2))
    return {
        "inside": (X, DomainScaler(1.0, 1.0, True)),
        "few outside": (few, DomainScaler(1.0, 1.0, True)),
        "far outside": (far, DomainScaler(1.0, 1.0, True)),
        "no intercept": (few, DomainScaler(1.0, 1.0, False)),
        "bounds_X": (few, DomainScaler(None, 1.0, True, bounds)),
        "tiny data_norm": (X * 1e-250, DomainScaler(1e-250, 1.0, True)),
        "huge data_norm": (few * 1e250, DomainScaler(1e250, 1.0, True)),
        "Fortran order": (np.asfortranarray(few), DomainScaler(1.0, 1.0, True)),
    }


CHUNK_CASES = _chunk_cases()


@pytest.mark.parametrize("name", CHUNK_CASES)
def test_chunk_products_equal_those_of_the_scaled_rows(name):
    """ScaledRows: products, Gram matrix and norms as on scaler.scale(X),
    to rounding; NumPy functions see exactly the scaled copy."""
    X, scaler = CHUNK_CASES[name]
    rng = np.random.default_rng(3)
    y = rng.uniform(-1, 1, X.shape[0])
    Xs = scaler.scale(X)
    rows = ScaledRows(X, scaler)
    A = rng.normal(size=(Xs.shape[1], 4))
    assert rows.shape == Xs.shape
    # rows in the unit ball and |A| ~ 1: absolute rounding ~ 1e-16 p
    assert_allclose(rows @ A, Xs @ A, rtol=0, atol=1e-14)
    assert_allclose(rows @ A[:, 0], Xs @ A[:, 0], rtol=0, atol=1e-14)
    XtX, Xty = rows.gram(y)
    assert_array_equal(XtX, XtX.T)
    # sums of n = 3000 terms of size <= 1: rounding ~ 1e-16 n (relative, or
    # absolute where the terms cancel)
    assert_allclose(XtX, Xs.T @ Xs, rtol=1e-12, atol=1e-12)
    assert_allclose(Xty, Xs.T @ y, rtol=1e-12, atol=1e-12)
    assert_allclose(squared_norms(rows), np.einsum("ij,ij->i", Xs, Xs), rtol=0, atol=1e-15)
    assert_array_equal(np.asarray(rows), Xs)
    assert_array_equal(rows[:, :2], Xs[:, :2])


@pytest.mark.parametrize("name", ["inside", "few outside", "Fortran order"])
def test_chunks_inside_or_slightly_outside_are_not_copied(name):
    """With data_norm, products, the Gram matrix and norms use X itself when
    its rows are within data_norm or a few are corrected: no scratch buffer
    is written (the copy that passes used to make of every chunk), except
    the C-ordered copy of a Fortran-ordered X."""
    X, scaler = CHUNK_CASES[name]
    scratch = ChunkScratch(X.shape[0])
    rows = ScaledRows(X, scaler, scratch)
    rows @ np.ones(rows.shape[1]), rows.gram(np.zeros(X.shape[0])), squared_norms(rows)
    assert list(scratch.buffers) == (["features"] if name == "Fortran order" else [])


def test_passes_give_the_same_results_on_every_thread_count():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(20_000, 5)) / 2.5
    y = rng.normal(size=20_000)
    scaler = DomainScaler(1.0, 1.5, fit_intercept=True)
    A = rng.normal(size=6)
    results = [
        ScaledData(X, y, scaler, n_jobs=n_jobs).map_rows(lambda Xs, ys: Xs @ A - ys)
        for n_jobs in (None, 2)
    ]
    Xs, ys = scaler.scale(X, y)
    assert_allclose(results[0], Xs @ A - ys, rtol=0, atol=1e-14)
    assert_array_equal(results[0], results[1])


def _exact_solve(H, b):
    """H^{-1} b in exact rational arithmetic (Gaussian elimination)."""
    n = len(b)
    A = [[Fraction(v) for v in row] + [Fraction(v)] for row, v in zip(H.tolist(), b.tolist())]
    for i in range(n):
        pivot = max(range(i, n), key=lambda r: abs(A[r][i]))
        A[i], A[pivot] = A[pivot], A[i]
        for r in range(i + 1, n):
            f = A[r][i] / A[i][i]
            A[r] = [a - f * c for a, c in zip(A[r], A[i])]
    z = [Fraction(0)] * n
    for i in reversed(range(n)):
        z[i] = (A[i][n] - sum(A[i][j] * z[j] for j in range(i + 1, n))) / A[i][i]
    return z


@pytest.mark.parametrize("collinearity", [1e-1, 1e-4])
def test_row_statistics_are_as_accurate_as_triangular_solves(collinearity):
    """Leverages and ||H^{-1} x||^2 from products with L^{-T} and H^{-1}
    (one GEMM per chunk, scaling folded) against exact rational solves: the
    relative error of a backward-stable solve, about cond(H) ulp (triangular
    solves measured the same on these data: up to 4e-9 at cond(H) = 2.4e8)."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(500, 4)) + 3.0
    X[:, 1] = X[:, 0] + collinearity * X[:, 1]
    X *= 2.0 / np.linalg.norm(X, axis=1).max()
    scaler = DomainScaler(2.0, 1.0, fit_intercept=True)
    XtX, Xty = ScaledData(X, np.zeros(500), scaler).gram()
    ridge = RidgeSystem(XtX, Xty, 1e-6, intercept=True)
    rows = ScaledRows(X[:6], scaler)
    stats = ridge.row_statistics(rows, inverse_norm=True)
    H = XtX + 1e-6 * np.diag([1.0] * 4 + [0.0])
    leverage, inverse_norm2 = [], []
    for x in scaler.scale(X[:6]):
        z = _exact_solve(H, x)
        leverage.append(float(sum(Fraction(a) * b for a, b in zip(x.tolist(), z))))
        inverse_norm2.append(float(sum(b * b for b in z)))
    tol = 1e-15 * np.linalg.cond(H)
    assert_allclose(stats["leverage"], leverage, rtol=tol)
    assert_allclose(stats["inverse_norm2"], inverse_norm2, rtol=tol)


def _clip_data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)) * [1.0, 1.0, 3.0, 0.2]
    y = 2.0 * rng.normal(size=n)
    X[:5] *= 1e250  # far out: the careful scaling path
    return X, y


@pytest.mark.parametrize("bounds", [
    {"data_norm": 2.5}, {"data_norm": 1e101}, {"bounds_X": (np.full(4, -2.0), np.full(4, 2.0))},
])
@pytest.mark.parametrize("working_memory", [None, 0.01])  # one chunk or many
def test_clip_shares_are_counted_in_the_scaling_pass(bounds, working_memory):
    """``gram`` (and ``scan``) count the rows and the labels that the bounds
    move, chunk by chunk: the shares by brute force."""
    from sklearn import config_context

    X, y = _clip_data()
    bounds_X = bounds.get("bounds_X")
    scaler = DomainScaler(bounds.get("data_norm"), (-1.0, 3.0), True, bounds_X)
    data = ScaledData(X, y, scaler)
    with config_context(working_memory=working_memory or 1024):
        data.gram()
    if bounds_X is None:
        # (each row divided by its largest entry: the far rows' squares overflow)
        peak = np.abs(X).max(axis=1)
        rows = peak * np.linalg.norm(X / peak[:, None], axis=1) > bounds["data_norm"]
    else:
        rows = np.any((X < -2.0) | (X > 2.0), axis=1)
    labels = (y < -1.0) | (y > 3.0)
    assert data.clipped == {"rows": rows.mean(), "labels": labels.mean()}
    assert 0 < rows.mean() < 1 and 0 < labels.mean() < 1
    # labels only: the features are not read
    data.scan(lambda start, Xs, ys: ys.sum(), rows=False)
    assert np.isnan(data.clipped["rows"]) and data.clipped["labels"] == labels.mean()


@pytest.mark.filterwarnings("ignore::sklearn_pdp.FallbackWarning")
def test_bounds_that_clip_most_labels_warn_with_the_shares(diabetes):
    """The README's snippet on the diabetes data: y_bound=1.0 clips every
    label (25 to 346) and data_norm=1.0 none of the rows; bounds_X=(0, 1)
    clips the rows of features in the hundreds (at epsilon 2: at 1 the fit
    releases the label mean alone, which reads no feature). Declared bounds
    that fit the data do not warn."""
    from sklearn_pdp import AdaSSPRegressor, BoundsWarning

    X, y = diabetes
    with pytest.warns(BoundsWarning, match=r"clip 100\.0% of the labels \(outside y_bound\):"):
        AdaSSPRegressor(data_norm=1.0, y_bound=1.0, random_state=0).fit(X, y)
    big = 100 * X + 300
    both = r"clip 100\.0% of the labels .* and 100\.0% of the rows"
    with pytest.warns(BoundsWarning, match=both):
        AdaSSPRegressor(epsilon=2.0, bounds_X=(0, 1), y_bound=1.0, random_state=0).fit(big, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", BoundsWarning)
        AdaSSPRegressor(epsilon=2.0, bounds_X=(-0.2, 0.2), y_bound=(0, 400),
                        random_state=0).fit(X, y)
        # the label mean alone: only the labels are read
        AdaSSPRegressor(epsilon=0.1, bounds_X=(0, 1), y_bound=(0, 400)).fit(big[:100], y[:100])
    with pytest.warns(BoundsWarning, match=r"clip 100\.0% of the labels \(outside y_bound\):"):
        AdaSSPRegressor(epsilon=0.1, bounds_X=(0, 1), y_bound=1.0).fit(big[:100], y[:100])


def test_rows_on_the_bounds_are_not_counted_as_clipped():
    """Rows normalised to data_norm (some a rounding error beyond it),
    binary features at the ends of bounds_X and labels on y_bound are not
    clipped: shares 0; a row 1e-6 beyond is."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 5))
    X /= np.linalg.norm(X, axis=1, keepdims=True) / 3.0
    assert np.any(np.linalg.norm(X, axis=1) > 3.0)  # rounding puts some beyond
    y = rng.choice([-2.0, 2.0], 500)
    data = ScaledData(X, y, DomainScaler(3.0, 2.0, True))
    data.gram()
    assert data.clipped == {"rows": 0.0, "labels": 0.0}
    B = rng.integers(0, 2, size=(500, 5)).astype(float)
    data = ScaledData(B, y, DomainScaler(None, 2.0, True, (np.zeros(5), np.ones(5))))
    data.gram()
    assert data.clipped == {"rows": 0.0, "labels": 0.0}
    X[:10] *= 1 + 1e-6
    data = ScaledData(X, y, DomainScaler(3.0, 2.0, True))
    data.gram()
    assert data.clipped["rows"] == 10 / 500


def test_bundled_weather_table_loads_offline_with_public_bounds():
    """The bundled table: its rows, declared categories holding every text
    value, and declared bounds that are public constants (the rows lie
    within them but for the source's one wind-speed recording error)."""
    from sklearn_pdp.datasets import load_nyc_weather

    weather = load_nyc_weather()
    X, y = weather.data, weather.target
    assert X.shape == (26110, 7) and y.shape == (26110,) and X.dtype == object
    assert weather.feature_names[:2] == ["origin", "season"]
    for j, column in enumerate(weather.feature_names):
        if column in weather.categories:
            assert set(X[:, j]) == set(weather.categories[column])
    lower, upper = weather.bounds_X
    numeric = X[:, 2:].astype(float)
    assert weather.numeric_features == weather.feature_names[2:]
    outside = (numeric < lower) | (numeric > upper)
    assert outside.sum() == 1 and numeric[outside][0] > 1000  # 1048 mph
    assert weather.y_bound[0] < y.min() and y.max() < weather.y_bound[1]
    frame = load_nyc_weather(as_frame=True)
    assert list(frame.frame.columns) == [*weather.feature_names, "temp"]
    assert list(frame.data["season"].cat.categories) == weather.categories["season"]
    assert_array_equal(frame.target.to_numpy(), y)
    assert_array_equal(frame.data[weather.numeric_features].to_numpy(), numeric)
    X_, y_ = load_nyc_weather(return_X_y=True)
    assert_array_equal(X_, X) and y_ is not y and np.array_equal(y_, y)
