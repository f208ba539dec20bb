"""scikit-learn's estimator checks over every public estimator."""

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_pdp import ObjPertRegressor, OPSRegressor

ESTIMATORS = [OPSRegressor(), ObjPertRegressor()]


@pytest.mark.filterwarnings("ignore::sklearn_pdp.PrivacyLeakWarning")
@parametrize_with_checks(ESTIMATORS)
def test_sklearn_compatible(estimator, check):
    check(estimator)
