"""The command-line report: the main job in a subprocess, as a user runs it;
error handling in-process (an uncaught exception fails the test as a
traceback would)."""

import json
import subprocess
import sys

import numpy as np
import pytest
from sklearn.datasets import load_diabetes
from sklearn.model_selection import train_test_split

import sklearn_pdp
from sklearn_pdp.__main__ import DEFAULT_ESTIMATOR, DIABETES_BOUNDS, ESTIMATORS, main

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _run(*args):
    return subprocess.run(
        [sys.executable, "-m", "sklearn_pdp", *args],
        capture_output=True, text=True, timeout=120,
    )


def _assert_one_line_error(capsys, args, message):
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    assert exc.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("python -m sklearn_pdp: error:") and message in last


def test_bundled_data_report_is_a_release_at_the_default_budget(tmp_path):
    plot = tmp_path / "report.png"
    res = _run("--plot", str(plot))
    assert res.returncode == 0, res.stderr
    for words in ("DP epsilon 1 at delta 1e-06", "per-instance epsilon", "median",
                  "90% of people", "less than a tenth", "least squares"):
        assert words in res.stdout
    assert "WARNING" not in res.stdout and "read from the data" not in res.stdout
    assert plot.read_bytes()[:8] == PNG_SIGNATURE and plot.stat().st_size > 5000
    # the JSON numbers are those of the same fit in-process
    report = json.loads(_run("--json").stdout)
    X, y = load_diabetes(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.25, random_state=0)
    est = getattr(sklearn_pdp, ESTIMATORS[DEFAULT_ESTIMATOR])(
        epsilon=1.0, delta=1e-6, random_state=0, **DIABETES_BOUNDS).fit(X_train, y_train)
    eps = est.pdp_losses_
    assert report["dp_epsilon"] == est.dp_epsilon_ <= 1.0
    assert report["dp_delta"] == est.dp_delta_ == 1e-6
    assert report["pdp_epsilon"]["median"] == pytest.approx(np.median(eps), rel=1e-9)
    assert report["pdp_epsilon"]["max"] == pytest.approx(eps.max(), rel=1e-9)
    assert report["fraction_below"]["1"] == pytest.approx(np.mean(eps <= 1.0))
    assert report["fraction_below_tenth_of_dp"] == pytest.approx(
        np.mean(eps <= est.dp_epsilon_ / 10))
    assert report["test_r2"] == pytest.approx(est.score(X_test, y_test))
    assert 0.3 < report["test_r2_least_squares"] < 0.6
    # 331 rows at epsilon 1: the fit falls back to the private label mean, and says so
    assert report["mean_only"] is est.mean_only_ is True
    assert "the private label mean alone" in res.stdout


def test_report_says_when_slopes_are_fitted(capsys):
    assert main(["--epsilon", "3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["mean_only"] is False
    assert main(["--epsilon", "3"]) == 0
    assert "label mean alone" not in capsys.readouterr().out


@pytest.mark.parametrize("estimator", sorted(ESTIMATORS))
def test_every_estimator_meets_the_budget(capsys, estimator):
    assert main(["--estimator", estimator, "--epsilon", "1", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["dp_epsilon"] <= 1.0 and report["dp_delta"] <= 1e-6
    assert report["pdp_epsilon"]["max"] <= report["dp_epsilon"]
    assert report["estimator"] == ESTIMATORS[estimator]


def test_publish_epsilon_composes_and_publishes(capsys):
    args = ["--estimator", "ops", "--epsilon", "1", "--json"]
    assert main(args) == 0
    plain = json.loads(capsys.readouterr().out)
    assert plain["published"] is None
    assert main([*args, "--publish-epsilon", "0.2"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert plain["dp_epsilon"] < report["dp_epsilon"] <= plain["dp_epsilon"] + 0.2 + 1e-9
    # every person pays for the publication
    assert report["pdp_epsilon"]["median"] > plain["pdp_epsilon"]["median"]
    published = report["published"]
    assert published["beta"] == 0.05
    q = published["pdp_epsilon"]
    assert 0 < q["median"] <= q["q90"] <= q["q99"] <= report["dp_epsilon"]
    assert set(published["fraction_below"]) == set(report["fraction_below"])
    assert main(args[:-1] + ["--publish-epsilon", "0.2"]) == 0
    assert "published" in capsys.readouterr().out


@pytest.mark.parametrize("estimator, epsilon", [
    ("projection", 3), ("output", 3), ("objpert", 3), ("adassp", 3), ("adaops", 5),
])
def test_publish_epsilon_for_every_published_estimator(capsys, estimator, epsilon):
    # above the fallback to the label mean (epsilon 3, AdaOPS's 5 for its
    # larger threshold), so the mechanism's own law
    assert main(["--estimator", estimator, "--epsilon", str(epsilon), "--json",
                 "--publish-epsilon", "0.2"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert epsilon < report["dp_epsilon"] <= epsilon + 0.2 + 1e-9
    q = report["published"]["pdp_epsilon"]
    assert 0.1 <= q["median"] <= q["q90"] <= q["q99"] <= report["dp_epsilon"]


def test_publish_epsilon_error_is_one_clear_line(capsys):
    _assert_one_line_error(capsys, ["--estimator", "adaops", "--publish-epsilon", "-0.2"],
                           "publish_epsilon")


def test_large_epsilon_is_flagged(capsys):
    assert main(["--epsilon", "20"]) == 0
    assert "WARNING" in capsys.readouterr().out


def test_csv_report(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 10, size=(3000, 3))
    y = 20 + X @ [1.0, -1.0, 0.5] + 0.1 * rng.normal(size=3000)
    path = tmp_path / "data.csv"
    rows = ["a,b,c,city,label"] + [
        ",".join(f"{v:.6g}" for v in x) + f",Paris,{t:.6g}" for x, t in zip(X, y)
    ]
    path.write_text("\n".join(rows) + "\n")
    plot = tmp_path / "out.png"
    res = _run(str(path), "--target", "label", "--features", "a,b,c",
               "--bounds-x", "0", "10", "--y-bound", "0,40", "--epsilon", "3",
               "--delta", "1e-5", "--thresholds", "0.5", "2", "--plot", str(plot), "--json")
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    assert report["test_r2"] > 0.5 and report["bounds_read_from_data"] == []
    assert report["dp_epsilon"] <= 3 and report["dp_delta"] <= 1e-5
    assert set(report["fraction_below"]) == {"0.5", "2"}
    assert plot.read_bytes()[:8] == PNG_SIGNATURE
    # without --features the text column is named, with the way out
    res = _run(str(path), "--target", "label")
    assert res.returncode == 2
    assert "column 'city'" in res.stderr and "--features" in res.stderr


def test_bounds_read_from_the_data_are_reported(tmp_path):
    path = tmp_path / "data.csv"
    rng = np.random.default_rng(1)
    np.savetxt(path, rng.normal(size=(100, 3)), delimiter=",", header="a,b,label",
               comments="")
    report = json.loads(_run(str(path), "--target", "label", "--json").stdout)
    assert report["bounds_read_from_data"] == ["data_norm", "y_bound"]


@pytest.mark.parametrize(
    "args, message",
    [(("--gamma", "1"), "--gamma does not apply to --estimator adassp"),
     (("--delta", "2"), "'delta' parameter"),
     (("--estimator", "ops", "--alpha", "-1"), "'alpha' parameter"),
     (("--bounds-x", "0", "x"), "not a number"),
     (("--target", "y"), "need a CSV file")],
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
    [("a,b\n1,2\n3,4\n", "not in"), ("a,label\n1,x\n2,3\n", "column 'label'"),
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
    for name in ("ops", "adaops", "adassp", "output", "objpert", "projection"):
        assert name in out


@pytest.mark.filterwarnings("ignore::sklearn_pdp.PrivacyLeakWarning")
def test_report_without_matplotlib(capsys, monkeypatch):
    """README's first command needs no plot extra."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert main([]) == 0
    assert "DP epsilon" in capsys.readouterr().out


@pytest.mark.parametrize("estimator", ["ops", "adassp"])
def test_zero_delta_is_the_estimators_error(capsys, estimator):
    """--delta 0 is refused by the estimator that would use it, by name."""
    name = ESTIMATORS[estimator]
    _assert_one_line_error(capsys, ["--estimator", estimator, "--delta", "0"],
                           f"The 'delta' parameter of {name} must be")
