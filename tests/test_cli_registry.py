"""The command line and the benchmarks take their estimators from the one
registry of the package's regressors."""

import importlib.util
from pathlib import Path

import pytest

from sklearn_pdp.__main__ import main
from sklearn_pdp._cli._options import _parser
from sklearn_pdp._registry import DEFAULT_REGRESSOR, REGRESSORS

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _estimator_option():
    return next(a for a in _parser()._actions if a.dest == "estimator")


def test_cli_estimator_choices_are_the_registry_names():
    option = _estimator_option()
    assert sorted(option.choices) == sorted(REGRESSORS)
    assert option.default == DEFAULT_REGRESSOR


def test_cli_help_lists_the_registry_names(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "{" + ",".join(sorted(REGRESSORS)) + "}" in out


def test_benchmark_factories_cover_the_registry(monkeypatch):
    """Every registry name has a factory of that class at the budget (the
    benchmarks' module is loaded from its file: it is not a package)."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location("_benchmark_registry",
                                                  BENCHMARKS / "registry.py")
    registry = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(registry)
    assert set(registry.FACTORIES) == set(REGRESSORS)
    for name, cls in REGRESSORS.items():
        est = registry.FACTORIES[name](0.5, 1e-6, 1000, 3, data_norm=1.0, y_bound=1.0,
                                       random_state=0)
        assert type(est) is cls
        assert est.get_params()["epsilon"] == 0.5 and est.get_params()["delta"] == 1e-6
