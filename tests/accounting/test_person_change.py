"""A person's change of a factorised Gaussian release
(:mod:`sklearn_pdp.accounting._person_change`): the weights and coordinates
against a direct computation on the two systems, and the one-direction
losses against the one-row closed forms."""

import numpy as np
import pytest
from scipy import linalg

from sklearn_pdp.accounting._chi2 import chi2_epsilon
from sklearn_pdp.accounting._ops import ops_epsilon
from sklearn_pdp.accounting._person_change import (
    person_epsilon, sketch_person_epsilon, whitened_change)


def _system(d=4, n=60, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    S = X.T @ X + 0.5 * np.eye(d)
    whitener = linalg.inv(linalg.cholesky(S, lower=True)).T  # L^-T, S = L L^T
    return X, S, whitener


@pytest.mark.parametrize("add", [False, True])
def test_weights_are_the_generalised_eigenvalues_of_the_change(add):
    """Removal: the eigenvalues of G against the smaller system S - G;
    addition: against S itself; the coordinates' norm is that of the
    cross term in the metric of the system they are read on."""
    X, S, whitener = _system()
    people = [X[:3], X[3:5], X[5:6]]
    gram = np.stack([p.T @ p for p in people])
    cross = np.stack([p.T @ np.arange(1.0, len(p) + 1) for p in people])
    w, b = whitened_change(whitener, gram, cross, add=add)
    for k, G in enumerate(gram):
        base = S if add else S - G
        expected = np.clip(linalg.eigh(G, base, eigvals_only=True), 0.0, None)
        np.testing.assert_allclose(np.sort(w[k]), np.sort(expected), atol=1e-12)
        if add:
            np.testing.assert_allclose(b[k] @ b[k], cross[k] @ linalg.solve(S, cross[k]),
                                       rtol=1e-10)


def test_one_direction_is_the_one_row_loss():
    """A person with one row: OPS's one-row loss at the out-of-sample
    leverage x^T (S - x x^T)^-1 x and residual e / (1 - a), a the in-sample
    leverage; the sketch's one-row chi-square loss at its tau."""
    X, S, whitener = _system(seed=1)
    x, e, gamma, delta = X[7], 0.8, 50.0, 1e-6
    w, b = whitened_change(whitener, np.outer(x, x)[None], (x * e)[None])
    a = x @ linalg.solve(S, x)
    mu = x @ linalg.solve(S - np.outer(x, x), x)
    assert w.max() == pytest.approx(mu, rel=1e-10)
    expected = ops_epsilon(delta, np.array([mu]), np.array([e / (1 - a)]), gamma)
    np.testing.assert_allclose(person_epsilon(delta, w, b, gamma), expected, rtol=1e-9)
    tau, _ = whitened_change(whitener, np.outer(x, x)[None])
    np.testing.assert_allclose(sketch_person_epsilon(delta, tau, 30),
                               chi2_epsilon(delta, np.array([mu]), 30), rtol=1e-9)


def test_rows_that_span_the_whole_change_are_an_infinite_loss():
    """A person holding every row along a direction the ridge-free system
    has nowhere else: in-sample eigenvalue 1, infinite weight and loss."""
    x = np.array([1.0, 0.0])
    S = np.diag([1.0, 2.0])  # the first direction is x's alone
    whitener = linalg.inv(linalg.cholesky(S, lower=True)).T
    w, b = whitened_change(whitener, np.outer(x, x)[None], x[None])
    assert np.isinf(w).any()
    assert np.isinf(person_epsilon(1e-6, w, b, 10.0)[0])


def test_an_uncertified_person_alone_is_nan():
    """Weights orders apart with little noncentrality are beyond both
    methods' caps: that person's loss is nan, the others' the same as
    computed without them."""
    w = np.array([[1e-6, 1e-2], [1e-3, 2e-3]])
    b = np.array([[1e-9, 1e-3], [1e-4, 1e-4]])
    got = person_epsilon(1e-5, w, b, 20.0)
    assert np.isnan(got[0])
    assert got[1] == pytest.approx(person_epsilon(1e-5, w[1:], b[1:], 20.0)[0], rel=1e-12)
    assert got[1] > 0
    tau = np.array([[1e-7, 1e-1], [1e-3, 2e-3]])
    got = sketch_person_epsilon(1e-5, tau, 5)
    assert np.isnan(got[0])
    assert got[1] == pytest.approx(sketch_person_epsilon(1e-5, tau[1:], 5)[0], rel=1e-12)
    assert got[1] > 0
