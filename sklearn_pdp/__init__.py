"""Differentially private linear regression with per-instance privacy reports."""

from ._ops import OPSRegressor
from ._report import PDPReport
from .exceptions import PrivacyLeakWarning

__version__ = "0.1.0.dev0"

__all__ = [
    "OPSRegressor",
    "PDPReport",
    "PrivacyLeakWarning",
    "__version__",
]
