"""The command line and the benchmarks take their estimators from the one
registry of the package's regressors."""

import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest

from sklearn_pdp.__main__ import main
from sklearn_pdp.cli._options import _parser
from sklearn_pdp._registry import DEFAULT_REGRESSOR, REGRESSORS

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


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


def _load_benchmarks(monkeypatch):
    """The benchmarks' command module, loaded from its file."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location("_benchmark_run", BENCHMARKS / "run.py")
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)
    return run


def test_benchmark_gain_share_of_the_reference(monkeypatch):
    """The share of AdaSSP's gain over the mean predictor: (mean - est) /
    (mean - adassp) where AdaSSP beats the mean by more than 10%, None
    (blank) elsewhere, 0 for a refused cell; the section's medians are over
    the shared cells only."""
    run = _load_benchmarks(monkeypatch)
    gain = {"mean": 1.0, "adassp": 0.6, "ops": 0.9, "output": 1.1, "objpert": np.nan}
    assert run.gain_share(gain, "ops") == pytest.approx(0.25)
    assert run.gain_share(gain, "output") == pytest.approx(-0.25)
    assert run.gain_share(gain, "objpert") == 0.0
    assert run.gain_share(gain, "adassp") == pytest.approx(1.0)
    for adassp in (0.9, 0.95, 1.2):  # no gain above 10% of the mean's error
        assert run.gain_share(dict(gain, adassp=adassp), "ops") is None
    cells = [("a", 1.0, 100.0, gain),
             ("b", 3.0, 300.0, dict(gain, adassp=0.2, ops=0.6)),
             ("c", 3.0, 300.0, dict(gain, adassp=0.95, ops=0.0))]
    section = run.gain_share_section(cells, ["adassp", "ops", "output"])
    assert "- `ops`: median share 38% over the 2 cells" in section  # (25% + 50%) / 2
    assert "- `output`: median share -19% over the 2 cells" in section  # (-25% - 12.5%) / 2
    table = [line for line in section.splitlines() if line.startswith("|")]
    assert table[0].split("|")[5:7] == [" ops ", " output "]
    assert table[2].split("|")[5:7] == [" 25% ", " -25% "]
    assert table[4].split("|")[5:7] == ["  ", "  "]  # blank: adassp within 10% of the mean
    # a share that rounds to 0 is "0%", never "-0%"
    tiny = [("d", 1.0, 100.0, dict(gain, ops=1.001))]
    assert "| 0% |" in run.gain_share_section(tiny, ["adassp", "ops"])


# the quick benchmark's small data: output perturbation's signal test gives zero slopes
@pytest.mark.filterwarnings("ignore:.*released zero slopes:sklearn_pdp.exceptions.FallbackWarning")
def test_benchmark_utility_quick_reports_gain_shares(monkeypatch, capsys):
    """``utility --quick`` on one small table fits the reference even when
    not asked for, prints the shares and writes nothing."""
    run = _load_benchmarks(monkeypatch)
    monkeypatch.setattr(run, "datasets", lambda sizes, d: [(
        "tiny", lambda split: (*run.synthetic(2000, 3, split), 1.0, 1.0))])
    written = []
    monkeypatch.setattr(run.Path, "write_text", lambda *a, **k: written.append(a))
    with warnings.catch_warnings():  # the script turns privacy leaks into errors
        run.main(["utility", "--quick", "--estimators", "output"])
    out = capsys.readouterr().out
    assert not written and "--quick: smoke run, nothing written" in out
    assert "| data | epsilon | n_train epsilon | adassp / mean | output |" in out
    assert "- `output`: median share" in out or "- `output`: no cell to share" in out
    # the main table has the asked estimator only
    assert "| data | epsilon | n_train epsilon | least squares | output |" in out


def test_benchmark_utility_schema_quick(monkeypatch, capsys):
    """``utility --schema --quick``: the four declarations side by side with
    their median per-instance epsilons, on the synthetic heavy table and the
    diabetes data, writing nothing."""
    run = _load_benchmarks(monkeypatch)
    written = []
    monkeypatch.setattr(run.Path, "write_text", lambda *a, **k: written.append(a))
    with warnings.catch_warnings():  # the script turns privacy leaks into errors
        run.main(["utility", "--schema", "--quick", "--estimators", "adassp"])
    out = capsys.readouterr().out
    assert not written and "--quick: smoke run, nothing written" in out
    header = ("| data | epsilon | n_train epsilon | least squares | estimator | box | schema "
              "| tightened | oracle | tightened / schema | median pdp eps, box ")
    assert header in out
    rows = [line.split("|")[1:-1] for line in out.splitlines()
            if line.startswith("| heavy") or line.startswith("| diabetes")]
    assert len(rows) == 2 * 2 * 2  # the table's rows, then the label ranges'
    cells = [row for row in rows if len(row) == 14]
    assert [row[0].strip() for row in cells] == ["heavy n=1e3"] * 2 + ["diabetes"] * 2
    # the schema's categorical shares change the map: another median epsilon
    assert any(row[10] != row[11] for row in cells)
    assert "- `adassp`: schema / box median" in out
