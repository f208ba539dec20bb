"""Differentially private linear regression with per-instance privacy reports."""

from ._config import config_context, get_config, set_config
from ._objective_perturbation import ObjPertRegressor
from ._adaops import AdaOPSRegressor
from ._ops import OPSRegressor
from ._output_perturbation import OutputPerturbationRegressor
from ._random_projection import RandomProjectionRegressor
from ._ssp import AdaSSPRegressor
from ._public import PublicLinearModel
from ._schema import Schema
from ._ledger import PrivacyLedger
from ._report import PDPReport
from ._plot import PrivacyLossDisplay
from .exceptions import BoundsWarning, FallbackWarning, PrivacyLeakWarning

__version__ = "0.1.0.dev0"

__all__ = [
    "AdaOPSRegressor",
    "AdaSSPRegressor",
    "BoundsWarning",
    "FallbackWarning",
    "OPSRegressor",
    "ObjPertRegressor",
    "OutputPerturbationRegressor",
    "PDPReport",
    "PrivacyLeakWarning",
    "PrivacyLossDisplay",
    "PrivacyLedger",
    "PublicLinearModel",
    "RandomProjectionRegressor",
    "Schema",
    "config_context",
    "get_config",
    "set_config",
    "__version__",
]
