"""Calibrations that depend on public parameters only are cached: a refit of
the same configuration reuses them and reports the same numbers."""

import numpy as np
import pytest

from sklearn_pdp import OPSRegressor, RandomProjectionRegressor
from sklearn_pdp.accounting import chi2_noise_scale
from sklearn_pdp.mechanisms.ops._release import OPSRelease

from ..conftest import UNIT_BOUNDS, regression_data

# estimator, its parameters (budgets no other test uses: the first fit
# calibrates them), the cached calibration its fit asks for
CACHES = {
    "random_projection": (RandomProjectionRegressor, {"epsilon": 2.913}, chi2_noise_scale),
    "ops_fixed_ridge": (OPSRegressor, {"epsilon": 0.913, "alpha": 6000.0},
                        OPSRelease.budget_gamma),
}


@pytest.mark.parametrize("name", CACHES)
def test_refit_reuses_the_calibration(name):
    estimator, params, cached = CACHES[name]
    X, y = regression_data(2000, 5, seed=3)
    params = {**UNIT_BOUNDS, **params}
    first = estimator(random_state=0, **params).fit(X, y)
    before = cached.cache_info()
    second = estimator(random_state=1, **params).fit(X, y)
    after = cached.cache_info()
    assert after.hits > before.hits and after.misses == before.misses
    np.testing.assert_array_equal(second.pdp_losses_, first.pdp_losses_)
    assert (second.dp_epsilon_, second.noise_scale_) == (first.dp_epsilon_, first.noise_scale_)
    estimator(random_state=0, **{**params, "epsilon": params["epsilon"] + 0.004}).fit(X, y)
    assert cached.cache_info().misses > after.misses
