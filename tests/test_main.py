"""The command-line report: the main job in a subprocess, as a user runs it;
error handling in-process (an uncaught exception fails the test as a
traceback would)."""

import subprocess
import sys

import numpy as np
import pytest
from sklearn.datasets import load_diabetes
from sklearn.model_selection import train_test_split

from sklearn_pdp import OPSRegressor, PrivacyLeakWarning
from sklearn_pdp.__main__ import main

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _run(*args):
    return subprocess.run(
        [sys.executable, "-m", "sklearn_pdp", *args],
        capture_output=True, text=True, timeout=120,
    )


def _number(out, label):
    line = next(line for line in out.splitlines() if line.strip().startswith(label))
    return float(line.split(":", 1)[1].split()[0].rstrip(",%x"))


def _assert_one_line_error(capsys, args, message):
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    assert exc.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("python -m sklearn_pdp: error:") and message in last


def test_bundled_data_report(tmp_path):
    plot = tmp_path / "report.png"
    res = _run("--plot", str(plot))
    assert res.returncode == 0, res.stderr
    for label in ("test R^2", "per-instance eps", "mean", "median", "90%", "99%",
                  "max", "<= 0.1", "<= 1", "DP epsilon", "DP / median pDP"):
        assert label in res.stdout
    # the same fit in-process: the table prints its numbers
    X, y = load_diabetes(return_X_y=True)
    X_train, _, y_train, _ = train_test_split(X, y, test_size=0.25, random_state=0)
    with pytest.warns(PrivacyLeakWarning):
        est = OPSRegressor(random_state=0).fit(X_train, y_train)
    eps = est.pdp_losses_
    assert _number(res.stdout, "median") == pytest.approx(np.median(eps), rel=1e-3)
    assert _number(res.stdout, "max") == pytest.approx(eps.max(), rel=1e-3)
    assert _number(res.stdout, "<= 1") == pytest.approx(100 * np.mean(eps <= 1), abs=0.05)
    assert _number(res.stdout, "DP epsilon") == pytest.approx(est.dp_epsilon_, rel=1e-3)
    assert _number(res.stdout, "DP / median pDP") == pytest.approx(
        est.dp_epsilon_ / np.median(eps), rel=1e-2)
    assert plot.read_bytes()[:8] == PNG_SIGNATURE and plot.stat().st_size > 5000


def test_csv_report(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = X @ [1.0, -1.0, 0.5] + 0.1 * rng.normal(size=200)
    path = tmp_path / "data.csv"
    np.savetxt(path, np.column_stack([X, y]), delimiter=",", header="a,b,c,label", comments="")
    plot = tmp_path / "out.png"
    res = _run(str(path), "--target", "label", "--data-norm", "5", "--y-bound", "5",
               "--delta", "1e-5", "--gamma", "50", "--thresholds", "0.5", "2",
               "--plot", str(plot))
    assert res.returncode == 0, res.stderr
    assert _number(res.stdout, "test R^2") > 0.5
    assert "read from the data" not in res.stdout
    assert "delta = 1e-05" in res.stdout and "gamma=50" in res.stdout
    assert "<= 0.5" in res.stdout and "<= 2" in res.stdout
    assert plot.read_bytes()[:8] == PNG_SIGNATURE


@pytest.mark.parametrize(
    "args, message",
    [(("--epsilon", "1"), "--epsilon does not apply to --estimator ops"),
     (("--delta", "2"), "'delta' parameter"),
     (("--alpha", "-1"), "'alpha' parameter"),
     (("--target", "y"), "--target needs a CSV file")],
)
def test_bad_options_are_one_clear_line(capsys, args, message):
    _assert_one_line_error(capsys, args, message)


def test_plot_without_matplotlib_is_one_clear_line(capsys, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    _assert_one_line_error(capsys, ["--plot", str(tmp_path / "x.png")], "sklearn-pdp[plot]")
    assert not (tmp_path / "x.png").exists()


@pytest.mark.filterwarnings("ignore::sklearn_pdp.PrivacyLeakWarning")
def test_unwritable_plot_file_is_one_clear_line(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    _assert_one_line_error(capsys, ["--plot", str(tmp_path / "missing" / "x.png")],
                           "cannot write")


@pytest.mark.parametrize(
    "content, message",
    [("a,b\n1,2\n3,4\n", "not in"), ("a,label\n1,x\n2,3\n", "non-numeric"),
     ("a,label\n1,\n2,3\n", "non-numeric"), ("a,label\n1,nan\n2,3\n", "missing"),
     ("a,label\n1,2\n3\n", "ragged"), ("label\n1\n2\n", "feature column"),
     ("a,label\n1,2\n", "two data rows"), ("", "empty")],
)
def test_bad_csv_is_one_clear_line(capsys, tmp_path, content, message):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    _assert_one_line_error(capsys, [str(path), "--target", "label"], message)


def test_help(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for option in ("--target", "--estimator", "--epsilon", "--delta", "--plot"):
        assert option in out
    for name in ("ops", "adaops", "output", "objpert", "projection"):
        assert name in out


@pytest.mark.filterwarnings("ignore::sklearn_pdp.PrivacyLeakWarning")
def test_report_without_matplotlib(capsys, monkeypatch):
    """README's first command needs no plot extra."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert main([]) == 0
    assert "DP epsilon" in capsys.readouterr().out


@pytest.mark.filterwarnings("ignore::sklearn_pdp.PrivacyLeakWarning")
def test_adaops_report_stays_within_its_budget(capsys):
    args = ["--estimator", "adaops", "--epsilon", "2", "--data-norm", "0.3", "--y-bound", "350"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert 0 < _number(out, "DP epsilon") <= 2
    assert _number(out, "max") <= 2
