"""The row passes: scaling into the unit ball, chunked and threaded reductions."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_pdp._data import DomainScaler, ScaledData


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
