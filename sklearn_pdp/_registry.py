"""The package's regressors by short name: the one list that the command
line, the tests and the benchmarks read.

Every regressor here takes a privacy budget (``epsilon``, ``delta``) and
meets it with no other parameter. Adding a mechanism is one entry.
"""

from ._adaops import AdaOPSRegressor
from ._objective_perturbation import ObjPertRegressor
from ._ops import OPSRegressor
from ._output_perturbation import OutputPerturbationRegressor
from ._random_projection import RandomProjectionRegressor
from ._ssp import AdaSSPRegressor

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
