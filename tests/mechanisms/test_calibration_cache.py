"""Calibrations that depend on public parameters only are cached: a refit of
the same configuration reuses them and reports the same numbers."""

import numpy as np
import pytest

from sklearn_pdp import ObjPertRegressor, OPSRegressor, RandomProjectionRegressor
from sklearn_pdp.accounting import chi2_noise_scale
from sklearn_pdp.mechanisms.objective_perturbation._release import _sigma_dp_epsilon
from sklearn_pdp.mechanisms.ops._release import OPSRelease

from ..conftest import UNIT_BOUNDS, regression_data

# estimator, its parameters (values no other test uses: the first fit
# calibrates them), a change of one of them, the cached calibration
CACHES = {
    "random_projection": (RandomProjectionRegressor, {"epsilon": 2.913}, {"epsilon": 2.917},
                          chi2_noise_scale),
    "ops_fixed_ridge": (OPSRegressor, {"epsilon": 0.913, "alpha": 6000.0}, {"epsilon": 0.917},
                        OPSRelease.budget_gamma),
    "objpert_given_sigma": (ObjPertRegressor, {"epsilon": None, "sigma": 30.13, "alpha": 50.0},
                            {"sigma": 30.17}, _sigma_dp_epsilon),
}


@pytest.mark.parametrize("name", CACHES)
def test_refit_reuses_the_calibration(name):
    estimator, params, changed, cached = CACHES[name]
    X, y = regression_data(2000, 5, seed=3)
    params = {**UNIT_BOUNDS, **params}
    first = estimator(random_state=0, **params).fit(X, y)
    before = cached.cache_info()
    second = estimator(random_state=1, **params).fit(X, y)
    after = cached.cache_info()
    assert after.hits > before.hits and after.misses == before.misses
    np.testing.assert_array_equal(second.pdp_losses_, first.pdp_losses_)
    assert (second.dp_epsilon_, second.noise_scale_) == (first.dp_epsilon_, first.noise_scale_)
    estimator(random_state=0, **{**params, **changed}).fit(X, y)
    assert cached.cache_info().misses > after.misses
