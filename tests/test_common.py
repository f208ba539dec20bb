"""scikit-learn's estimator checks over every public estimator."""

import pytest
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
