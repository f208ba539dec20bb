"""Differentially private linear regression with per-instance privacy reports."""

from ._objective_perturbation import ObjPertRegressor
from ._ops import OPSRegressor
from .exceptions import PrivacyLeakWarning

__version__ = "0.1.0.dev0"

__all__ = [
    "ObjPertRegressor",
    "OPSRegressor",
    "PrivacyLeakWarning",
    "__version__",
]
