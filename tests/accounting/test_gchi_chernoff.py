"""Chernoff's closed-form bound on the generalised chi-square loss: valid
(at least the certified loss, and its delta by an independent integration
at most the target), within a modest factor of it."""

import numpy as np
import pytest

from sklearn_pdp.accounting._gchi import gchi_epsilon
from sklearn_pdp.accounting._gchi_chernoff import chernoff_epsilon

from .test_gchi import quad_delta


def _laws(seed, n=4, m=3):
    rng = np.random.default_rng(seed)
    w = rng.uniform(0.01, 0.5, (n, m))
    lam = rng.exponential(1.0, (n, m)) * rng.choice([1.0, 30.0, 300.0], (n, 1))
    return w, lam


@pytest.mark.parametrize("seed, nu", [(0, 1.0), (1, 4.0)])
def test_above_the_certified_loss(seed, nu):
    w, lam = _laws(seed)
    delta = 1e-5
    bound = chernoff_epsilon(delta, w, lam, nu)
    certified = gchi_epsilon(delta, w, lam, nu)
    assert np.all(bound >= certified) and np.all(bound <= 2.0 * certified)
    # the integrated delta at the bound is within the target (where e^eps
    # leaves the quadrature's error far below it)
    moderate = np.flatnonzero(bound < 8.0)
    assert moderate.size
    for row in moderate[:2]:
        assert quad_delta(bound[row], w[row], lam[row], nu) <= delta


def test_absent_and_infinite_weights():
    w = np.array([[0.0, 0.0], [np.inf, 0.1], [0.2, 0.0]])
    lam = np.array([[0.0, 0.0], [1.0, 1.0], [5.0, 0.0]])
    got = chernoff_epsilon(1e-5, w, lam, 1.0)
    assert got[0] == 0.0 and np.isinf(got[1])
    # a weight absent is a law of one weight
    assert got[2] == chernoff_epsilon(1e-5, w[2:, :1], lam[2:, :1], 1.0)[0]
