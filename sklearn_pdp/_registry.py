"""The package's regressors by short name: the one list that the command
line, the tests and the benchmarks read.

Every regressor here takes a privacy budget (``epsilon``, ``delta``) and
meets it with no other parameter. Adding a mechanism is one entry.
"""

from .linear_model._adaops import AdaOPSRegressor
from .linear_model._objective_perturbation import ObjPertRegressor
from .linear_model._ops import OPSRegressor
from .linear_model._output_perturbation import OutputPerturbationRegressor
from .linear_model._random_projection import RandomProjectionRegressor
from .linear_model._adassp import AdaSSPRegressor

# short name (the command line's ``--estimator``) -> class
REGRESSORS = {
    "adassp": AdaSSPRegressor,
    "adaops": AdaOPSRegressor,
    "ops": OPSRegressor,
    "objpert": ObjPertRegressor,
    "output": OutputPerturbationRegressor,
    "projection": RandomProjectionRegressor,
}
DEFAULT_REGRESSOR = "adassp"
