"""Differentially private linear regression with per-instance privacy reports."""

from ._ops import AdaOPSRegressor, OPSRegressor
from .exceptions import PrivacyLeakWarning

__version__ = "0.1.0.dev0"

__all__ = [
    "AdaOPSRegressor",
    "OPSRegressor",
    "PrivacyLeakWarning",
    "__version__",
]
