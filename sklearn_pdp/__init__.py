"""Differentially private linear regression with per-instance privacy reports."""

from . import _moved  # noqa: F401  (old module paths import: pickles)

from ._config import config_context, get_config, set_config
from .linear_model._objective_perturbation import ObjPertRegressor
from .linear_model._adaops import AdaOPSRegressor
from .linear_model._ops import OPSRegressor
from .linear_model._output_perturbation import OutputPerturbationRegressor
from .linear_model._random_projection import RandomProjectionRegressor
from .linear_model._adassp import AdaSSPRegressor
from .report._public import PublicLinearModel
from .domain._schema import Schema
from .ledger._ledger import PrivacyLedger
from .report._report import PDPReport
from .report._plot import PrivacyLossDisplay
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
