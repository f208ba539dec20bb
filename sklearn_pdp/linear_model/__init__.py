"""The private linear regressors (each also importable from :mod:`sklearn_pdp`)."""

from ._adassp import AdaSSPRegressor
from ._ops import OPSRegressor
from ._adaops import AdaOPSRegressor
from ._objective_perturbation import ObjPertRegressor
from ._output_perturbation import OutputPerturbationRegressor
from ._random_projection import RandomProjectionRegressor

__all__ = [
    "AdaOPSRegressor",
    "AdaSSPRegressor",
    "OPSRegressor",
    "ObjPertRegressor",
    "OutputPerturbationRegressor",
    "RandomProjectionRegressor",
]
