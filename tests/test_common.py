"""scikit-learn's estimator checks over every public estimator."""

import multiprocessing
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn import clone, config_context
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_pdp import (
    AdaOPSRegressor,
    ObjPertRegressor,
    OPSRegressor,
    OutputPerturbationRegressor,
    PDPReport,
    RandomProjectionRegressor,
)
from sklearn_pdp.model_selection import PrivateGridSearchCV

ESTIMATORS = [
    OPSRegressor(),
    AdaOPSRegressor(),
    OutputPerturbationRegressor(),
    ObjPertRegressor(),
    RandomProjectionRegressor(),
    # the default estimator made explicit, so that the bad-input matrix can
    # declare its bounds and seed (PDPReport() itself: tests/test_report.py)
    PDPReport(OPSRegressor()),
    PrivateGridSearchCV(
        OPSRegressor(), {"gamma": [1.0, 10.0], "alpha": [1.0]}, random_state=0
    ),
]


@pytest.mark.filterwarnings("ignore::sklearn_pdp.PrivacyLeakWarning")
@parametrize_with_checks(ESTIMATORS)
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.mark.parametrize(
    "estimator", [e for e in ESTIMATORS if "n_jobs" in e.get_params(deep=False)
                  and not isinstance(e, PrivateGridSearchCV)],
    ids=lambda e: type(e).__name__,
)
def test_threads_give_the_same_fit(estimator):
    """n_jobs=2 processes chunks on two threads: same release and losses."""
    rng = np.random.RandomState(0)
    X = rng.normal(size=(3000, 4))
    y = X @ [1.0, -1.0, 0.5, 0.0] + rng.normal(size=3000)
    fits = []
    for n_jobs in (1, 2):
        est = clone(estimator).set_params(
            n_jobs=n_jobs, data_norm=4.0, y_bound=5.0, random_state=0
        )
        with config_context(working_memory=0.05):  # a few dozen chunks
            fits.append(est.fit(X, y))
    one, two = fits
    # BLAS runs single-threaded under n_jobs=2: sums may round differently
    assert_allclose(two.coef_, one.coef_, rtol=1e-10)
    assert_allclose(two.pdp_losses_, one.pdp_losses_, rtol=1e-9)
    assert_allclose(two.pdp_epsilon(X[:50]), one.pdp_epsilon(X[:50]), rtol=1e-9)


def test_threads_inside_a_daemon_process(monkeypatch):
    """n_jobs means threads also where joblib's process backend falls back
    to one job (a pool worker, a Dask worker): no warning, two threads."""
    monkeypatch.setattr(multiprocessing.current_process(), "daemon", True)
    import sklearn_pdp._data as data_module

    used = []

    class SpyParallel(data_module.Parallel):
        def __call__(self, iterable):
            used.append(self.n_jobs)
            return super().__call__(iterable)

    monkeypatch.setattr(data_module, "Parallel", SpyParallel)
    rng = np.random.RandomState(0)
    X, y = rng.normal(size=(2000, 3)), rng.normal(size=2000)
    with warnings.catch_warnings(), config_context(working_memory=0.05):
        warnings.simplefilter("error")
        OPSRegressor(data_norm=4.0, y_bound=4.0, n_jobs=2).fit(X, y)
    assert used and set(used) == {2}


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_privacy_numbers_do_not_depend_on_the_draw(estimator):
    """pdp_losses_ and dp_epsilon_ are functions of (mechanism, data set) and
    (mechanism, domain): refitting with other seeds changes the release only."""
    rng = np.random.RandomState(1)
    X = rng.uniform(-1, 1, size=(400, 3))
    y = 0.5 + X @ [0.6, -0.3, 0.0] + 0.2 * rng.normal(size=400)
    fits = [_seeded(estimator, seed).fit(X, y) for seed in (0, 1, 2)]
    for fit in fits[1:]:
        assert fit.dp_epsilon_ == fits[0].dp_epsilon_
        assert_allclose(fit.pdp_losses_, fits[0].pdp_losses_, rtol=1e-12)
    model = [getattr(fit, "estimator_", fit) for fit in fits[:2]]
    assert not np.allclose(model[0].predict(X), model[1].predict(X))


def _seeded(estimator, seed):
    """A clone with bounds 2 and ``random_state=seed`` where the fit draws
    its noise (the meta-estimator itself, or the estimator it wraps)."""
    params = clone(estimator).get_params()
    updates = {k: 2.0 for k in params if k.split("__")[-1] in ("data_norm", "y_bound")}
    if "random_state" in estimator.get_params(deep=False):
        updates["random_state"] = seed
    else:
        updates.update({k: seed for k in params if k.endswith("__random_state")})
    return clone(estimator).set_params(**updates)
