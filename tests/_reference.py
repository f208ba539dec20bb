"""Reference computations written independently of the package, shared by the tests."""

import numpy as np


def ridge_penalty(Xs, fit_intercept):
    """The ridge penalty matrix of scaled rows ``Xs``: the identity, except
    that the constant feature (the last column, with an intercept) is not
    penalised."""
    weights = np.ones(Xs.shape[1])
    if fit_intercept:
        weights[-1] = 0.0
    return np.diag(weights)
