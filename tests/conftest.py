"""Fixtures shared by the tests: the package's regressors and the data sets
that several modules fit.

The data makers are plain functions, exposed as factory fixtures
(``make_regression_data``, ``make_unbounded_data``,
``make_adversarial_data``); a module that needs the data at import time (a
parametrize list, a table of cases) imports the function itself. Data that only one test needs stays in that test's module,
under a name that says what is special about it.
"""

import numpy as np
import pytest
from hypothesis import settings
from sklearn.datasets import load_diabetes

from sklearn_pdp._registry import REGRESSORS

# Property tests draw the same examples on every machine and run: a default
# run cannot fail at random, and an example found elsewhere is added to its
# test (``@example``) rather than kept in a local database.
settings.register_profile("reproducible", derandomize=True, database=None)
settings.load_profile("reproducible")


def pytest_configure(config):
    # One BLAS thread per parallel test worker: the workers already fill
    # the cores, and each worker's BLAS threads spinning for the others'
    # cores cost more than they gave.
    if hasattr(config, "workerinput"):
        from threadpoolctl import threadpool_limits

        config._blas_limits = threadpool_limits(1)

# the bounds that hold regression_data's rows and labels
UNIT_BOUNDS = {"data_norm": 1.0, "y_bound": 1.0}
# the diabetes table's features lie within 0.2 of 0, its labels in [25, 346]
DIABETES_BOUNDS = {"bounds_X": (-0.2, 0.2), "y_bound": (0.0, 400.0)}


def regression_data(n, d=3, seed=0, *, offset=0.4, noise=0.2, coef=None):
    """Rows and labels inside :data:`UNIT_BOUNDS`.

    Rows uniform on [-1, 1]^d scaled by 1 / sqrt(d) (norm at most 1), labels
    ``offset + X coef + noise * N(0, 1)`` clipped to [-1, 1]; ``coef`` is
    drawn N(0, I) unless given. Drawn from ``np.random.default_rng(seed)``.
    """
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d)) / np.sqrt(d)
    coef = rng.normal(size=d) if coef is None else coef
    y = np.clip(offset + X @ coef + noise * rng.normal(size=n), -1, 1)
    return X, y


def unbounded_data(n, d=3, seed=0, *, features="normal", scale=1.0, coef_scale=1.0,
                   noise=0.3):
    """Rows and labels with no bounds of their own (a test declares them).

    Rows standard normal (``features="uniform"``: uniform on [-1, 1]) times
    ``scale``, labels ``X coef * coef_scale + noise * N(0, 1)`` with coef
    N(0, I). Drawn from ``np.random.default_rng(seed)``.
    """
    rng = np.random.default_rng(seed)
    if features == "uniform":
        X = rng.uniform(-1, 1, size=(n, d))
    else:
        X = rng.normal(size=(n, d))
    X = X * scale
    y = X @ rng.normal(size=d) * coef_scale + noise * rng.normal(size=n)
    return X, y


def adversarial_data(rng, n, d=2, squeeze=0.01):
    """Data built to be bad for a guarantee: rows at norm 1 and labels of
    random sign at the bound, the first row's label against its first
    feature, the other rows scaled by ``squeeze`` (below 1: the first row is
    nearly alone in its direction). Drawn from ``rng``, which the test goes
    on using."""
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.sign(rng.normal(size=n))
    y[0] = -np.sign(X[0, 0])
    X[1:] *= squeeze
    return X, y


@pytest.fixture(scope="session")
def make_adversarial_data():
    """:func:`adversarial_data`: ``make_adversarial_data(rng, n, d=2, squeeze=0.01)``."""
    return adversarial_data


@pytest.fixture(scope="session")
def make_regression_data():
    """:func:`regression_data`: ``make_regression_data(n, d=3, seed=0, ...)``."""
    return regression_data


@pytest.fixture(scope="session")
def make_unbounded_data():
    """:func:`unbounded_data`: ``make_unbounded_data(n, d=3, seed=0, ...)``."""
    return unbounded_data


@pytest.fixture
def diabetes():
    """scikit-learn's diabetes table (442 rows, 10 features) as ``(X, y)``;
    its declared bounds are :data:`DIABETES_BOUNDS` (the ``diabetes_bounds``
    fixture)."""
    return load_diabetes(return_X_y=True)


@pytest.fixture
def diabetes_bounds():
    """:data:`DIABETES_BOUNDS`, a fresh copy."""
    return dict(DIABETES_BOUNDS)


# objective perturbation fits for tens of seconds where a tightened fit, a
# search or a huge epsilon multiply its per-row searches: contracts checked on
# every regressor run there under the audit marker (``every_regressor``)
SLOW_IN_DEFAULT_RUN = {"objpert"}


def audit_if_slow(name):
    """The ``marks`` of a parametrize case of the registry's regressor
    ``name``: ``audit`` if it is in :data:`SLOW_IN_DEFAULT_RUN`."""
    return pytest.mark.audit if name in SLOW_IN_DEFAULT_RUN else ()


def every_regressor():
    """The registry's regressor classes as parametrize cases (id: the
    registry's name), the slow ones under the audit marker."""
    return [pytest.param(cls, id=name, marks=audit_if_slow(name))
            for name, cls in REGRESSORS.items()]


@pytest.fixture(params=list(REGRESSORS.values()), ids=list(REGRESSORS))
def regressor_class(request):
    """Every regressor class of the package (the registry's), one test each."""
    return request.param


@pytest.fixture
def agg():
    """matplotlib's pyplot on the Agg backend; every figure closed after the test."""
    mpl = pytest.importorskip("matplotlib")
    mpl.use("Agg")
    import matplotlib.pyplot as plt

    yield plt
    plt.close("all")
