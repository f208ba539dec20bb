"""The private scikit-learn names the package relies on, imported in one place.

scikit-learn's own estimators and the scikit-learn-contrib projects use them
(parameter validation, the fit context, feature-name checks), but they are not
public API: if a scikit-learn release moves one, only this module changes. CI
tests both the newest scikit-learn and the lowest version pyproject.toml
declares.
"""

from sklearn.base import _fit_context
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import _check_feature_names_in

__all__ = ["HasMethods", "Interval", "StrOptions", "_check_feature_names_in", "_fit_context"]
