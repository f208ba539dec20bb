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
    for words in ("MAY BE PUBLISHED", "intercept", "DP epsilon 1 at delta 1e-06",
                  "noise", "secure", "FOR THE CURATOR ONLY", "per-instance epsilon",
                  "median", "90% of people", "less than a tenth", "least squares"):
        assert words in res.stdout
    # the released numbers come before the curator's
    assert res.stdout.index("intercept") < res.stdout.index("FOR THE CURATOR ONLY")
    assert res.stdout.index("FOR THE CURATOR ONLY") < res.stdout.index("per person")
    assert "WARNING" not in res.stdout and "read from the data" not in res.stdout
    assert plot.read_bytes()[:8] == PNG_SIGNATURE and plot.stat().st_size > 5000
    # the JSON numbers are those of the same fit in-process
    report = json.loads(_run("--json", "--random-state", "0").stdout)
    public, curator = report["publishable"], report["curator_only"]
    X, y = load_diabetes(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.25, random_state=0)
    est = getattr(sklearn_pdp, ESTIMATORS[DEFAULT_ESTIMATOR])(
        epsilon=1.0, delta=1e-6, random_state=0, **DIABETES_BOUNDS).fit(X_train, y_train)
    eps = est.pdp_losses_
    assert public["model"]["coef"] == est.coef_.tolist()
    assert public["model"]["intercept"] == est.intercept_
    assert public["model"]["feature_names"] == load_diabetes().feature_names
    assert public["dp_epsilon"] == est.dp_epsilon_ <= 1.0
    assert public["dp_delta"] == est.dp_delta_ == 1e-6
    assert curator["pdp_epsilon"]["median"] == pytest.approx(np.median(eps), rel=1e-9)
    assert curator["pdp_epsilon"]["max"] == pytest.approx(eps.max(), rel=1e-9)
    assert curator["fraction_below"]["1"] == pytest.approx(np.mean(eps <= 1.0))
    assert curator["fraction_below_tenth_of_dp"] == pytest.approx(
        np.mean(eps <= est.dp_epsilon_ / 10))
    assert curator["test_r2"] == pytest.approx(est.score(X_test, y_test))
    assert curator["n_test"] == len(y_test)
    assert 0.3 < curator["test_r2_least_squares"] < 0.6
    assert "--random-state 0" in report["noise"] and "not for a release" in report["noise"]
    # 331 rows at epsilon 1: the fit falls back to the private label mean, and says so
    assert public["mean_only"] is est.mean_only_ is True
    assert "the private label mean alone" in res.stdout


def test_report_says_when_slopes_are_fitted(capsys):
    assert main(["--epsilon", "3", "--json", "--random-state", "0"]) == 0
    public = json.loads(capsys.readouterr().out)["publishable"]
    assert public["mean_only"] is False and np.any(public["model"]["coef"])
    assert public["zero_slopes"] is False
    assert main(["--epsilon", "3", "--random-state", "0"]) == 0
    out = capsys.readouterr().out
    assert "label mean alone" not in out and "every slope is 0" not in out


def test_report_says_when_the_signal_test_released_no_slope(capsys):
    # on this split AdaSSP's private signal test finds no signal at epsilon 3
    assert main(["--epsilon", "3", "--json", "--random-state", "3"]) == 0
    public = json.loads(capsys.readouterr().out)["publishable"]
    assert public["mean_only"] is False and public["zero_slopes"] is True
    assert not np.any(public["model"]["coef"])
    assert main(["--epsilon", "3", "--random-state", "3"]) == 0
    assert "every slope is 0" in capsys.readouterr().out


def test_release_without_seed_draws_fresh_noise_and_a_seed_repeats_it(capsys, tmp_path):
    def release(*seed):
        path = tmp_path / "model.json"
        assert main(["--epsilon", "3", "--test-size", "0", "--json", "--save-model",
                     str(path), *seed]) == 0
        report = json.loads(capsys.readouterr().out)
        assert report["publishable"]["model"]["coef"] == json.loads(path.read_text())["coef"]
        return report

    first, second = release(), release()
    assert first["noise"].startswith("secure")
    assert first["publishable"]["model"] != second["publishable"]["model"]
    # on the same rows, the per-instance losses do not depend on the draw
    assert first["curator_only"]["pdp_epsilon"] == second["curator_only"]["pdp_epsilon"]
    np.random.seed(0)
    one = release("--random-state", "7")
    np.random.seed(1)
    assert release("--random-state", "7") == one
    assert "for experiments only" in one["noise"]
    assert release("--random-state", "none")["noise"] == first["noise"]


def test_test_size_zero_fits_every_row_and_skips_the_evaluation(capsys):
    assert main(["--test-size", "0", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["publishable"]["n_train"] == 442
    curator = report["curator_only"]
    assert curator["test_r2"] is None and curator["n_test"] == 0
    assert main(["--test-size", "0"]) == 0
    assert "not evaluated" in capsys.readouterr().out


@pytest.mark.parametrize("estimator", sorted(ESTIMATORS))
def test_every_estimator_meets_the_budget(capsys, estimator):
    assert main(["--estimator", estimator, "--epsilon", "1", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    public = report["publishable"]
    assert public["dp_epsilon"] <= 1.0 and public["dp_delta"] <= 1e-6
    assert report["curator_only"]["pdp_epsilon"]["max"] <= public["dp_epsilon"]
    assert public["estimator"] == ESTIMATORS[estimator]


def test_publish_epsilon_composes_and_publishes(capsys):
    args = ["--estimator", "ops", "--epsilon", "1", "--json"]
    assert main(args) == 0
    plain = json.loads(capsys.readouterr().out)
    assert plain["publishable"]["published"] is None
    assert main([*args, "--publish-epsilon", "0.2"]) == 0
    report = json.loads(capsys.readouterr().out)
    before, after = plain["publishable"]["dp_epsilon"], report["publishable"]["dp_epsilon"]
    assert before < after <= before + 0.2 + 1e-9
    # every person pays for the publication
    assert (report["curator_only"]["pdp_epsilon"]["median"]
            > plain["curator_only"]["pdp_epsilon"]["median"])
    published = report["publishable"]["published"]
    assert published["beta"] == 0.05
    q = published["pdp_epsilon"]
    assert 0 < q["median"] <= q["q90"] <= q["q99"] <= after
    assert set(published["fraction_below"]) == set(report["curator_only"]["fraction_below"])
    assert main(args[:-1] + ["--publish-epsilon", "0.2"]) == 0
    out = capsys.readouterr().out
    # the published report is in the publishable block
    assert out.index("published report") < out.index("FOR THE CURATOR ONLY")


@pytest.mark.parametrize("estimator, epsilon", [
    ("projection", 3), ("output", 3), ("objpert", 3), ("adassp", 3), ("adaops", 5),
])
def test_publish_epsilon_for_every_published_estimator(capsys, estimator, epsilon):
    # above the fallback to the label mean (epsilon 3, AdaOPS's 5 for its
    # larger threshold), so the mechanism's own law
    assert main(["--estimator", estimator, "--epsilon", str(epsilon), "--json",
                 "--publish-epsilon", "0.2"]) == 0
    public = json.loads(capsys.readouterr().out)["publishable"]
    assert epsilon < public["dp_epsilon"] <= epsilon + 0.2 + 1e-9
    q = public["published"]["pdp_epsilon"]
    assert 0.1 <= q["median"] <= q["q90"] <= q["q99"] <= public["dp_epsilon"]


def test_publish_epsilon_error_is_one_clear_line(capsys):
    _assert_one_line_error(capsys, ["--estimator", "adaops", "--publish-epsilon", "-0.2"],
                           "publish_epsilon")


def test_large_epsilon_is_flagged(capsys):
    assert main(["--epsilon", "20"]) == 0
    assert "WARNING" in capsys.readouterr().out


def _table(path, n=2000, seed=0):
    """A CSV with numeric and text columns; the encoded features and labels."""
    rng = np.random.default_rng(seed)
    a, b = rng.uniform(0, 10, size=n), rng.uniform(-5, 5, size=n)
    colour = rng.choice(["red", "green", "blue"], size=n)
    effect = {"red": 0.0, "green": 3.0, "blue": -3.0}
    y = 10 + a - b + np.array([effect[c] for c in colour]) + rng.normal(size=n)
    lines = ["a,colour,b,label"] + [
        f"{u!r},{c},{v!r},{t!r}"
        for u, c, v, t in zip(a.tolist(), colour, b.tolist(), y.tolist())]
    path.write_text("\n".join(lines) + "\n")
    # one-hot with the first declared category (red) dropped, in column order
    X = np.column_stack([a, colour == "green", colour == "blue", b]).astype(float)
    return X, y


TABLE_ARGS = ("--target", "label", "--bounds-x", "0,-5", "10,5", "--y-bound", "-20,40",
              "--categories", "colour=red,green,blue")


def test_csv_release_with_text_columns_is_loaded_and_predicts_bit_for_bit(tmp_path):
    path, model = tmp_path / "table.csv", tmp_path / "model.json"
    X, y = _table(path)
    res = _run(str(path), *TABLE_ARGS, "--epsilon", "1", "--save-model", str(model), "--json")
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    public = report["publishable"]
    names = ["a", "colour_green", "colour_blue", "b"]
    assert public["model"]["feature_names"] == names
    assert public["n_features"] == 4 and public["dp_epsilon"] <= 1.0
    assert report["curator_only"]["read_from_data"] == []
    assert report["curator_only"]["test_r2"] > 0.5
    loaded = sklearn_pdp.PublicLinearModel.from_json(str(model))
    assert loaded.coef_.tolist() == public["model"]["coef"]
    assert loaded.intercept_ == public["model"]["intercept"]
    assert list(loaded.feature_names_in_) == names
    assert loaded.bounds["bounds_X"] == [[0.0, 0.0, 0.0, -5.0], [10.0, 1.0, 1.0, 5.0]]
    assert loaded.bounds["y_bound"] == [-20.0, 40.0]
    assert loaded.params["epsilon"] == 1.0 and "random_state" not in loaded.params
    assert loaded.mechanism_ == "AdaSSPRegressor"
    # the green and blue effects are found with the right signs
    coef = dict(zip(names, loaded.coef_))
    assert coef["colour_green"] > 0 > coef["colour_blue"]


@pytest.mark.filterwarnings("ignore:X does not have valid feature names")
def test_saved_model_predicts_exactly_as_the_fitted_estimator(tmp_path):
    path, model = tmp_path / "table.csv", tmp_path / "model.json"
    X, y = _table(path, n=800)
    assert main([str(path), *TABLE_ARGS, "--epsilon", "2", "--test-size", "0",
                 "--random-state", "3", "--save-model", str(model), "--json"]) == 0
    est = sklearn_pdp.AdaSSPRegressor(
        epsilon=2.0, delta=1e-6, bounds_X=([0, 0, 0, -5], [10, 1, 1, 5]),
        y_bound=(-20, 40), random_state=3).fit(X, y)
    loaded = sklearn_pdp.PublicLinearModel.from_json(model)
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
    assert not est.mean_only_ and np.any(est.coef_)


def test_undeclared_categories_are_read_with_a_leak_warning(tmp_path, capsys):
    path = tmp_path / "table.csv"
    _table(path, n=400)
    args = [str(path), "--target", "label", "--bounds-x", "0,-5", "10,5",
            "--y-bound", "-20,40"]
    with pytest.warns(sklearn_pdp.PrivacyLeakWarning, match="--categories colour="):
        assert main([*args, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["curator_only"]["read_from_data"] == ["categories of 'colour'"]
    # sorted: blue is the reference
    assert report["publishable"]["model"]["feature_names"] == [
        "a", "colour_green", "colour_red", "b"]
    with pytest.warns(sklearn_pdp.PrivacyLeakWarning):
        assert main(args) == 0
    assert "categories of 'colour' read from the data" in capsys.readouterr().out


def test_bounds_read_from_the_data_are_reported(tmp_path):
    path = tmp_path / "data.csv"
    rng = np.random.default_rng(1)
    np.savetxt(path, rng.normal(size=(100, 3)), delimiter=",", header="a,b,label",
               comments="")
    report = json.loads(_run(str(path), "--target", "label", "--json").stdout)
    assert report["curator_only"]["read_from_data"] == ["data_norm", "y_bound"]


@pytest.mark.parametrize(
    "args, message",
    [(("--gamma", "1"), "--gamma does not apply to --estimator adassp"),
     (("--estimator", "ops", "--gamma", "1"), "--gamma needs --alpha"),
     (("--delta", "2"), "'delta' parameter"),
     (("--estimator", "ops", "--alpha", "-1"), "'alpha' parameter"),
     (("--bounds-x", "0", "x"), "not a number"),
     (("--random-state", "x"), "not an integer seed"),
     (("--test-size", "1"), "--test-size must be in [0, 1)"),
     (("--test-size", "-0.5"), "--test-size must be in [0, 1)"),
     (("--target", "y"), "need a CSV file")],
)
def test_bad_options_are_one_clear_line(capsys, args, message):
    _assert_one_line_error(capsys, args, message)


def test_data_errors_do_not_repeat_the_usage(capsys):
    with pytest.raises(SystemExit):
        main(["--target", "y"])
    assert "usage" not in capsys.readouterr().err


def test_plot_without_matplotlib_is_one_clear_line(capsys, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    _assert_one_line_error(capsys, ["--plot", str(tmp_path / "x.png")], "pip install matplotlib")
    assert not (tmp_path / "x.png").exists()


@pytest.mark.filterwarnings("ignore::sklearn_pdp.PrivacyLeakWarning")
def test_unwritable_plot_file_is_one_clear_line(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    _assert_one_line_error(capsys, ["--plot", str(tmp_path / "missing" / "x.png")],
                           "cannot write")


@pytest.mark.filterwarnings("ignore::sklearn_pdp.PrivacyLeakWarning")
@pytest.mark.parametrize(
    "content, message",
    [("a,b\n1,2\n3,4\n", "not in"), ("a,label\n1,x\n2,3\n", "column 'label'"),
     ("a,label\n1,\n2,3\n", "non-numeric"), ("a,label\n1,nan\n2,3\n", "missing"),
     ("a,label\n1,2\n3\n", "ragged"), ("label\n1\n2\n", "feature column"),
     ("a,label\n1,2\n", "two data rows"), ("", "empty"),
     ("a,label\nx,2\nx,3\n", "two distinct categories"),
     ("a,label\nx,2\n,3\n", "empty values")],
)
def test_bad_csv_is_one_clear_line(capsys, tmp_path, content, message):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    _assert_one_line_error(capsys, [str(path), "--target", "label"], message)


@pytest.mark.parametrize(
    "categories, message",
    [("a=x", "not in its declared categories: 'y'"),
     ("label=1,2", "must be numeric"), ("b=x,y", "column 'b' not in"),
     ("a", "COLUMN=a,b,c")],
)
def test_bad_categories_are_one_clear_line(capsys, tmp_path, categories, message):
    path = tmp_path / "bad.csv"
    path.write_text("a,label\nx,2\ny,3\nx,4\n")
    _assert_one_line_error(capsys, [str(path), "--target", "label", "--categories",
                                    categories], message)


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


@pytest.mark.filterwarnings("ignore::sklearn_pdp.PrivacyLeakWarning")
def test_one_feature_is_singular(capsys, tmp_path):
    path = tmp_path / "one.csv"
    rng = np.random.default_rng(2)
    np.savetxt(path, rng.uniform(size=(200, 2)), delimiter=",", header="a,label",
               comments="")
    assert main([str(path), "--target", "label"]) == 0
    out = capsys.readouterr().out
    assert "1 feature\n" in out and "1 features" not in out


def test_bounds_per_encoded_column_or_per_numeric_feature(capsys, tmp_path):
    path = tmp_path / "table.csv"
    _table(path, n=400)
    common = [str(path), "--target", "label", "--y-bound", "-20,40", "--categories",
              "colour=red,green,blue", "--test-size", "0", "--json"]
    models = []
    for bounds in (["0,-5", "10,5"], ["0,0,0,-5", "10,1,1,5"]):
        model = tmp_path / "model.json"
        assert main([*common, "--bounds-x", *bounds, "--save-model", str(model)]) == 0
        capsys.readouterr()
        models.append(sklearn_pdp.PublicLinearModel.from_json(model).bounds)
    assert models[0] == models[1]
    assert models[0]["bounds_X"] == [[0.0, 0.0, 0.0, -5.0], [10.0, 1.0, 1.0, 5.0]]
    _assert_one_line_error(capsys, [*common, "--bounds-x", "0,0,0", "1,1,1"],
                           "one value per numeric feature (2) or per encoded column (4)")


@pytest.mark.filterwarnings("ignore::sklearn_pdp.PrivacyLeakWarning")
def test_other_warnings_of_the_fit_are_shown(capsys, monkeypatch):
    assert main(["--estimator", "projection", "--json", "--random-state", "0"]) == 0
    assert json.loads(capsys.readouterr().out)["curator_only"]["warnings"] == []
    # the paper's variant of random projection has no guarantee, and says so
    import sklearn_pdp.__main__ as cli

    original = cli._estimator
    monkeypatch.setattr(cli, "_estimator",
                        lambda *args: original(*args).set_params(variant="paper"))
    assert main(["--estimator", "projection", "--random-state", "0"]) == 0
    out = capsys.readouterr().out
    assert "warning" in out and "no differential privacy guarantee" in out
