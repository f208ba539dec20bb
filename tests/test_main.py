"""The command-line report, run as a user would run it."""

import subprocess
import sys

import numpy as np
import pytest


def _run(*args):
    return subprocess.run(
        [sys.executable, "-m", "sklearn_pdp", *args],
        capture_output=True, text=True, timeout=120,
    )


def _number(out, label):
    line = next(line for line in out.splitlines() if line.startswith(label))
    return float(line.split(":", 1)[1].split()[0].rstrip(","))


def test_bundled_data_report():
    res = _run()
    assert res.returncode == 0, res.stderr
    for label in ("test R^2", "DP epsilon", "per-instance eps"):
        assert label in res.stdout
    assert "median" in res.stdout and "90%" in res.stdout and "max" in res.stdout
    assert _number(res.stdout, "DP epsilon") > 0


def test_csv_report(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = X @ [1.0, -1.0, 0.5] + 0.1 * rng.normal(size=200)
    path = tmp_path / "data.csv"
    np.savetxt(path, np.column_stack([X, y]), delimiter=",", header="a,b,c,label", comments="")
    res = _run(str(path), "--target", "label", "--data-norm", "5", "--y-bound", "5")
    assert res.returncode == 0, res.stderr
    assert _number(res.stdout, "test R^2") > 0.5
    assert "read from the data" not in res.stdout


@pytest.mark.parametrize(
    "content, message",
    [("a,b\n1,2\n3,4\n", "not in"), ("a,label\n1,x\n2,3\n", "non-numeric"),
     ("a,label\n1,\n2,3\n", "non-numeric"), ("a,label\n1,nan\n2,3\n", "missing")],
)
def test_bad_csv_is_one_clear_line(tmp_path, content, message):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    res = _run(str(path), "--target", "label")
    assert res.returncode != 0
    assert message in res.stderr
    assert "Traceback" not in res.stderr


def test_help():
    res = _run("--help")
    assert res.returncode == 0 and "--target" in res.stdout


def test_adaops_report_stays_within_its_budget():
    res = _run("--estimator", "adaops", "--epsilon", "2", "--data-norm", "0.3",
               "--y-bound", "350")
    assert res.returncode == 0, res.stderr
    assert 0 < _number(res.stdout, "DP epsilon") <= 2
    eps = res.stdout.split("per-instance eps:")[1]
    assert float(eps.split("max")[1].split()[0]) <= 2
