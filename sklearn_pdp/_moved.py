"""Old private module paths, importable after the package moved into folders.

Pickles (``pickle``, ``joblib``) name each object's class by its module, so a
model pickled by a release before the move names, for instance,
``sklearn_pdp._ssp.AdaSSPRegressor``. This module, imported by
``sklearn_pdp/__init__.py``, adds a finder to :data:`sys.meta_path` that
answers such an old path with a module reading its names from the new places,
lazily (nothing is imported before a name is asked for). Only the private
module paths of that layout are aliased; new code imports from the public
names. The table is the move's mapping and is final: a module added after the
move never needs an entry.
"""

import importlib
import importlib.abc
import importlib.util
import sys
import types

# old module -> the modules its names now live in
MOVED = {
    "sklearn_pdp._accounting": [
        "sklearn_pdp.accounting",
    ],
    "sklearn_pdp._accounting._adaops": [
        "sklearn_pdp.accounting._adaops",
    ],
    "sklearn_pdp._accounting._chi2": [
        "sklearn_pdp.accounting._chi2",
    ],
    "sklearn_pdp._accounting._divergence": [
        "sklearn_pdp.accounting._divergence",
    ],
    "sklearn_pdp._accounting._domain": [
        "sklearn_pdp.accounting._domain",
    ],
    "sklearn_pdp._accounting._engine": [
        "sklearn_pdp.accounting._engine",
    ],
    "sklearn_pdp._accounting._exponential": [
        "sklearn_pdp.accounting._exponential",
    ],
    "sklearn_pdp._accounting._gaussian": [
        "sklearn_pdp.accounting._gaussian",
    ],
    "sklearn_pdp._accounting._gram": [
        "sklearn_pdp.accounting._gram",
    ],
    "sklearn_pdp._accounting._laplace": [
        "sklearn_pdp.accounting._laplace",
    ],
    "sklearn_pdp._accounting._objpert": [
        "sklearn_pdp.accounting._objpert",
    ],
    "sklearn_pdp._accounting._ops": [
        "sklearn_pdp.accounting._ops",
    ],
    "sklearn_pdp._accounting._search": [
        "sklearn_pdp.accounting._search",
    ],
    "sklearn_pdp._accounting._table": [
        "sklearn_pdp.accounting._table",
    ],
    "sklearn_pdp._adaops": [
        "sklearn_pdp.linear_model._adaops",
    ],
    "sklearn_pdp._adaops_published": [
        "sklearn_pdp.mechanisms.adaops._published",
    ],
    "sklearn_pdp._adaops_release": [
        "sklearn_pdp.mechanisms.adaops._release",
    ],
    "sklearn_pdp._adaptive_ridge": [
        "sklearn_pdp.mechanisms.private_ridge._adaptive",
    ],
    "sklearn_pdp._arrays": [
        "sklearn_pdp.utils._arrays",
    ],
    "sklearn_pdp._base": [
        "sklearn_pdp.linear_model._base",
    ],
    "sklearn_pdp._charges": [
        "sklearn_pdp.ledger._charges",
    ],
    "sklearn_pdp._cli": [
        "sklearn_pdp.cli",
    ],
    "sklearn_pdp._cli._ledger_command": [
        "sklearn_pdp.cli._ledger_command",
    ],
    "sklearn_pdp._cli._options": [
        "sklearn_pdp.cli._options",
    ],
    "sklearn_pdp._cli._release": [
        "sklearn_pdp.cli._release",
    ],
    "sklearn_pdp._cli._schema": [
        "sklearn_pdp.cli._schema",
    ],
    "sklearn_pdp._cli._spread": [
        "sklearn_pdp.cli._spread",
    ],
    "sklearn_pdp._cli._table": [
        "sklearn_pdp.cli._table",
    ],
    "sklearn_pdp._cli._text": [
        "sklearn_pdp.cli._text",
    ],
    "sklearn_pdp._dask": [
        "sklearn_pdp.utils._dask",
    ],
    "sklearn_pdp._docstrings": [
        "sklearn_pdp.utils._docstrings",
    ],
    "sklearn_pdp._domain": [
        "sklearn_pdp.domain._scaler",
    ],
    "sklearn_pdp._eigen": [
        "sklearn_pdp.utils._eigen",
    ],
    "sklearn_pdp._fallback": [
        "sklearn_pdp.mechanisms.mean._fallback",
    ],
    "sklearn_pdp._guarantee_law": [
        "sklearn_pdp.mechanisms._guarantee_law",
    ],
    "sklearn_pdp._ledger": [
        "sklearn_pdp.ledger._ledger",
        "sklearn_pdp.ledger._sqlite",
    ],
    "sklearn_pdp._objective_perturbation": [
        "sklearn_pdp.linear_model._objective_perturbation",
        "sklearn_pdp.mechanisms.objective_perturbation._release",
    ],
    "sklearn_pdp._objective_perturbation_adaptive": [
        "sklearn_pdp.mechanisms.objective_perturbation._adaptive",
    ],
    "sklearn_pdp._objective_perturbation_law": [
        "sklearn_pdp.mechanisms.objective_perturbation._law",
    ],
    "sklearn_pdp._ops": [
        "sklearn_pdp.linear_model._ops",
        "sklearn_pdp.mechanisms.ops._release",
    ],
    "sklearn_pdp._output_perturbation": [
        "sklearn_pdp.linear_model._output_perturbation",
    ],
    "sklearn_pdp._output_perturbation_calibration": [
        "sklearn_pdp.mechanisms.output_perturbation._calibration",
    ],
    "sklearn_pdp._output_perturbation_release": [
        "sklearn_pdp.mechanisms.output_perturbation._release",
        "sklearn_pdp.mechanisms.output_perturbation._private_ridge",
    ],
    "sklearn_pdp._plot": [
        "sklearn_pdp.report._plot",
    ],
    "sklearn_pdp._private_ridge_law": [
        "sklearn_pdp.mechanisms.private_ridge._law",
    ],
    "sklearn_pdp._profile": [
        "sklearn_pdp.report._profile",
    ],
    "sklearn_pdp._public": [
        "sklearn_pdp.report._public",
    ],
    "sklearn_pdp._publish": [
        "sklearn_pdp.report._publish",
    ],
    "sklearn_pdp._random_projection": [
        "sklearn_pdp.linear_model._random_projection",
    ],
    "sklearn_pdp._random_projection_release": [
        "sklearn_pdp.mechanisms.random_projection._release",
        "sklearn_pdp.mechanisms.random_projection._sketch",
    ],
    "sklearn_pdp._release": [
        "sklearn_pdp.mechanisms._release",
    ],
    "sklearn_pdp._released_means": [
        "sklearn_pdp.mechanisms.mean._released_means",
    ],
    "sklearn_pdp._report": [
        "sklearn_pdp.report._report",
    ],
    "sklearn_pdp._ridge_system": [
        "sklearn_pdp.utils._ridge_system",
    ],
    "sklearn_pdp._rows": [
        "sklearn_pdp.utils._rows",
    ],
    "sklearn_pdp._schema": [
        "sklearn_pdp.domain._schema",
    ],
    "sklearn_pdp._signal": [
        "sklearn_pdp.mechanisms._signal",
    ],
    "sklearn_pdp._sklearn": [
        "sklearn_pdp.utils._sklearn",
    ],
    "sklearn_pdp._ssp": [
        "sklearn_pdp.linear_model._adassp",
    ],
    "sklearn_pdp._ssp_release": [
        "sklearn_pdp.mechanisms.adassp._release",
    ],
    "sklearn_pdp._stage": [
        "sklearn_pdp.domain._stage",
    ],
    "sklearn_pdp._tighten": [
        "sklearn_pdp.domain._tighten",
    ],
    "sklearn_pdp._validation": [
        "sklearn_pdp.utils._validation",
    ],
}


class _OldModule(types.ModuleType):
    def __getattr__(self, name):
        for target in MOVED[self.__name__]:
            module = importlib.import_module(target)
            if hasattr(module, name):
                return getattr(module, name)
        raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")


class _OldPaths(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self, is_package=True)

    def create_module(self, spec):
        return _OldModule(spec.name)

    def exec_module(self, module):
        module.__path__ = []


# first: an old path is never a file of the package (a stale one from an
# earlier install must not shadow the new modules)
if not any(isinstance(finder, _OldPaths) for finder in sys.meta_path):
    sys.meta_path.insert(0, _OldPaths())
