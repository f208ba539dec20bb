"""The command-line report: the main job and a ledger release in a
subprocess, as a user runs them; the other reports and the error handling
in-process (an uncaught exception fails the test as a traceback would)."""

import copy
import csv
import json
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_diabetes
from sklearn.model_selection import GroupShuffleSplit, train_test_split
from sklearn.preprocessing import OneHotEncoder

import sklearn_pdp
from sklearn_pdp import PrivacyLedger
from sklearn_pdp.__main__ import main
from sklearn_pdp.accounting import gaussian_epsilon
from sklearn_pdp.cli import _release
from sklearn_pdp.cli._options import _parser
from sklearn_pdp.cli._ledger_command import record_from_cli, summarise_record
from sklearn_pdp.cli._table import DIABETES_BOUNDS
from sklearn_pdp.cli._text import TEXT_WIDTH, _layout, _text
from sklearn_pdp.report._profile import gaussian_ratio
from sklearn_pdp._registry import DEFAULT_REGRESSOR, REGRESSORS
from sklearn_pdp.datasets import load_nyc_weather

from ..conftest import audit_if_slow

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# the bundled table of the tests that need a small one (442 rows)
DIABETES = ("--dataset", "diabetes")


def _run(*args):
    return subprocess.run(
        [sys.executable, "-m", "sklearn_pdp", *args],
        capture_output=True, text=True, timeout=120,
    )


def _report_of(capsys, *args):
    """The ``--json`` report of the command run in-process on ``args``."""
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _report_of_text(capsys, *args):
    """The ``--json`` report's text of the command run in-process on ``args``."""
    assert main([*args, "--json"]) == 0
    return capsys.readouterr().out


def _text_of(capsys, *args):
    """The text report of the command run in-process on ``args``, lines joined."""
    assert main(list(args)) == 0
    return _flat(capsys.readouterr().out)


def _flat(text):
    """The text report with its lines joined: long values wrap."""
    return " ".join(text.split())


def _assert_one_line_error(capsys, args, message):
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    assert exc.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("python -m sklearn_pdp: error:") and message in last


def _weather_fit(seed):
    """The default release of the bundled weather table, fitted in-process
    as the command does: the split, the estimator and the held-out rows."""
    weather = load_nyc_weather()
    categorical = np.isin(weather.feature_names, list(weather.categories))
    encoder = OneHotEncoder(categories=list(weather.categories.values()), drop="first",
                            sparse_output=False)
    X = np.hstack([encoder.fit_transform(weather.data[:, categorical]),
                   weather.data[:, ~categorical].astype(float)])
    n_one_hot = X.shape[1] - (~categorical).sum()
    lower, upper = weather.bounds_X
    bounds_X = (np.r_[np.zeros(n_one_hot), lower], np.r_[np.ones(n_one_hot), upper])
    X_train, X_test, y_train, y_test = train_test_split(
        X, weather.target, test_size=0.25, random_state=seed)
    est = REGRESSORS[DEFAULT_REGRESSOR](
        epsilon=1.0, delta=1e-6, random_state=seed, bounds_X=bounds_X,
        y_bound=weather.y_bound, tighten_bounds="auto").fit(X_train, y_train)
    return est, X_train, X_test, y_train, y_test


def test_bundled_data_report_is_a_release_at_the_default_budget(tmp_path, capsys):
    plot = tmp_path / "report.png"
    res = _run("--plot", str(plot))
    assert res.returncode == 0, res.stderr
    for words in ("MAY BE PUBLISHED", "intercept", "DP epsilon 1 at delta 1e-06",
                  "noise", "secure", "FOR THE CURATOR ONLY", "per-instance epsilon",
                  "median", "90% of people", "at most a tenth of the DP epsilon",
                  "least squares", "origin_JFK", "season_summer", "nyc_weather"):
        assert words in _flat(res.stdout)
    # the released numbers come before the curator's
    assert res.stdout.index("intercept") < res.stdout.index("FOR THE CURATOR ONLY")
    assert res.stdout.index("FOR THE CURATOR ONLY") < res.stdout.index("per person")
    # every bound and category declared: nothing read from the data
    assert "WARNING" not in res.stdout and "read from the data" not in _flat(res.stdout)
    assert plot.read_bytes()[:8] == PNG_SIGNATURE and plot.stat().st_size > 5000
    # the JSON numbers are those of the same fit in-process
    report = _report_of(capsys, "--random-state", "0")
    public, curator = report["publishable"], report["curator_only"]
    est, X_train, X_test, y_train, y_test = _weather_fit(0)
    eps = est.pdp_losses_
    assert public["model"]["coef"] == est.coef_.tolist()
    assert public["model"]["intercept"] == est.intercept_
    assert public["model"]["feature_names"][:2] == ["origin_JFK", "origin_LGA"]
    assert public["model"]["feature_names"][-1] == "visib"
    assert public["dp_epsilon"] == est.dp_epsilon_ <= 1.0
    assert public["dp_delta"] == est.dp_delta_ == 1e-6
    assert curator["pdp_epsilon"]["median"] == pytest.approx(np.median(eps), rel=1e-9)
    assert curator["pdp_epsilon"]["max"] == pytest.approx(eps.max(), rel=1e-9)
    assert curator["fraction_below"]["1"] == pytest.approx(np.mean(eps <= 1.0))
    assert curator["fraction_below_tenth_of_dp"] == pytest.approx(
        np.mean(eps <= est.dp_epsilon_ / 10))
    assert curator["test_r2"] == pytest.approx(est.score(X_test, y_test))
    assert curator["n_test"] == len(y_test) == 6528
    assert curator["test_r2_mean"] == pytest.approx(
        1.0 - np.mean((y_test - y_train.mean()) ** 2) / np.var(y_test), rel=1e-9)
    assert "--random-state 0" in report["noise"] and "not for a release" in report["noise"]
    # enough rows for slopes at epsilon 1, and most of least squares' fit
    assert public["mean_only"] is False and public["zero_slopes"] is False
    assert curator["test_r2"] > 0.5 * curator["test_r2_least_squares"] > 0.45


# the reference fit: diabetes at epsilon 1 releases the label mean
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.FallbackWarning")
def test_diabetes_option_releases_the_label_mean_and_says_why(diabetes, capsys):
    report = _report_of(capsys, *DIABETES, "--random-state", "0")
    public, curator = report["publishable"], report["curator_only"]
    X, y = diabetes
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.25, random_state=0)
    est = REGRESSORS[DEFAULT_REGRESSOR](
        epsilon=1.0, delta=1e-6, random_state=0, **DIABETES_BOUNDS).fit(X_train, y_train)
    assert public["model"]["coef"] == est.coef_.tolist()
    assert public["model"]["feature_names"] == load_diabetes().feature_names
    assert curator["pdp_epsilon"]["median"] == pytest.approx(
        np.median(est.pdp_losses_), rel=1e-9)
    assert curator["test_r2"] == pytest.approx(est.score(X_test, y_test))
    assert 0.3 < curator["test_r2_least_squares"] < 0.6
    # 331 rows at epsilon 1: the fit falls back to the private label mean, and says so
    assert public["mean_only"] is est.mean_only_ is True
    assert "the private label mean alone" in _text_of(capsys, *DIABETES, "--random-state", "0")


def test_dataset_option_needs_no_csv(capsys, tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,y\n1,2\n3,4\n5,7\n")
    _assert_one_line_error(capsys, [str(path), "--target", "y", *DIABETES],
                           "--dataset chooses a bundled table")


def test_report_says_when_slopes_are_fitted(capsys):
    assert main([*DIABETES, "--epsilon", "3", "--json", "--random-state", "0"]) == 0
    public = json.loads(capsys.readouterr().out)["publishable"]
    assert public["mean_only"] is False and np.any(public["model"]["coef"])
    assert public["zero_slopes"] is False
    assert main([*DIABETES, "--epsilon", "3", "--random-state", "0"]) == 0
    out = _flat(capsys.readouterr().out)
    assert "label mean alone" not in out and "every slope is 0" not in out


def test_report_says_when_the_signal_test_released_no_slope(capsys):
    # on this split AdaSSP's private signal test finds no signal at epsilon 3
    assert main([*DIABETES, "--epsilon", "3", "--json", "--random-state", "3"]) == 0
    public = json.loads(capsys.readouterr().out)["publishable"]
    assert public["mean_only"] is False and public["zero_slopes"] is True
    assert not np.any(public["model"]["coef"])
    assert main([*DIABETES, "--epsilon", "3", "--random-state", "3"]) == 0
    assert "every slope is 0" in _flat(capsys.readouterr().out)


def test_release_without_seed_draws_fresh_noise_and_a_seed_repeats_it(capsys, tmp_path):
    def release(*seed):
        path = tmp_path / "model.json"
        assert main([*DIABETES, "--epsilon", "3", "--test-size", "0", "--json", "--save-model",
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
    assert main([*DIABETES, "--test-size", "0", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["publishable"]["n_train"] == 442
    curator = report["curator_only"]
    assert curator["test_r2"] is None and curator["n_test"] == 0
    assert main([*DIABETES, "--test-size", "0"]) == 0
    assert "not evaluated" in _flat(capsys.readouterr().out)


# objective perturbation's fit (seconds) under the audit marker, as in the
# other contracts over every regressor
@pytest.mark.parametrize("estimator", [pytest.param(name, marks=audit_if_slow(name))
                                       for name in sorted(REGRESSORS)])
def test_every_estimator_meets_the_budget(capsys, estimator):
    assert main([*DIABETES, "--estimator", estimator, "--epsilon", "1", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    public = report["publishable"]
    assert public["dp_epsilon"] <= 1.0 and public["dp_delta"] <= 1e-6
    assert report["curator_only"]["pdp_epsilon"]["max"] <= public["dp_epsilon"]
    assert public["estimator"] == REGRESSORS[estimator].__name__


def test_publish_epsilon_composes_and_publishes(capsys):
    args = [*DIABETES, "--estimator", "ops", "--epsilon", "1", "--json"]
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
    ("projection", 3), ("output", 3), pytest.param("objpert", 3, marks=audit_if_slow("objpert")),
    ("adassp", 3), ("adaops", 5),
])
def test_publish_epsilon_for_every_published_estimator(capsys, estimator, epsilon):
    # above the fallback to the label mean (epsilon 3, AdaOPS's 5 for its
    # larger threshold), so the mechanism's own law
    assert main([*DIABETES, "--estimator", estimator, "--epsilon", str(epsilon), "--json",
                 "--publish-epsilon", "0.2"]) == 0
    public = json.loads(capsys.readouterr().out)["publishable"]
    assert epsilon < public["dp_epsilon"] <= epsilon + 0.2 + 1e-9
    q = public["published"]["pdp_epsilon"]
    assert 0.1 <= q["median"] <= q["q90"] <= q["q99"] <= public["dp_epsilon"]


def test_publish_epsilon_error_is_one_clear_line(capsys):
    _assert_one_line_error(
        capsys, [*DIABETES, "--estimator", "adaops", "--publish-epsilon", "-0.2"],
        "publish_epsilon")


def test_large_epsilon_is_flagged(capsys):
    assert main([*DIABETES, "--epsilon", "20"]) == 0
    assert "WARNING" in capsys.readouterr().out


def _table(path, n=2000, seed=0, ids=None):
    """A CSV with numeric and text columns (and a first column ``person`` of
    ``ids``, when given); the encoded features and labels."""
    rng = np.random.default_rng(seed)
    a, b = rng.uniform(0, 10, size=n), rng.uniform(-5, 5, size=n)
    colour = rng.choice(["red", "green", "blue"], size=n)
    effect = {"red": 0.0, "green": 3.0, "blue": -3.0}
    y = 10 + a - b + np.array([effect[c] for c in colour]) + rng.normal(size=n)
    lines = ["a,colour,b,label"] + [
        f"{u!r},{c},{v!r},{t!r}"
        for u, c, v, t in zip(a.tolist(), colour, b.tolist(), y.tolist())]
    if ids is not None:
        lines = [f"{key},{line}" for key, line in zip(["person", *ids], lines)]
    path.write_text("\n".join(lines) + "\n")
    # one-hot with the first declared category (red) dropped, in column order
    X = np.column_stack([a, colour == "green", colour == "blue", b]).astype(float)
    return X, y


def test_an_identifier_column_is_not_one_hot_encoded(capsys, tmp_path):
    """A text column with a different value on most rows (a person key) left
    among the features would become one column per person."""
    csv = tmp_path / "table.csv"
    _table(csv, n=100, ids=[f"p{i}" for i in range(100)])
    _assert_one_line_error(capsys, [str(csv), *TABLE_ARGS[:-2]],
                           "an identifier, not a category; leave it out with --features")
    # a numeric column with a code for missing values is not a category either
    na = tmp_path / "na.csv"
    _table(na, n=100, ids=[*range(4), "NA", *range(5, 100)])
    _assert_one_line_error(capsys, [str(na), *TABLE_ARGS], "is mostly numbers, but not 'NA'")
    # a numeric key: consecutive row numbers, or distinct whole numbers under
    # a key's name; listed with --features the column is the user's choice
    rows = tmp_path / "rows.csv"
    _table(rows, n=100, ids=np.random.default_rng(0).permutation(100) + 1)
    _assert_one_line_error(capsys, [str(rows), *TABLE_ARGS],
                           "looks like a row number or person key")
    keyed = tmp_path / "keyed.csv"
    codes = np.random.default_rng(1).choice(10**6, size=100, replace=False)
    _table(keyed, n=100, ids=codes)
    keyed.write_text(keyed.read_text().replace("person,", "patient_id,", 1))
    _assert_one_line_error(capsys, [str(keyed), *TABLE_ARGS], "--id-column patient_id")
    # the same distinct codes under another name are a measurement
    coded = tmp_path / "coded.csv"
    _table(coded, n=100, ids=codes)
    assert main([str(coded), "--target", "label", "--bounds-x", "0,0,-5", "1e6,10,5",
                 *TABLE_ARGS[5:], "--json"]) == 0
    assert _strict(capsys.readouterr().out)["publishable"]["n_features"] == 5
    # a text column with few values is still encoded (its categories read from
    # the data, and said)
    assert main([str(csv), *TABLE_ARGS[:-2], "--features", "a,colour,b", "--json"]) == 0
    report = _strict(capsys.readouterr().out)
    assert report["publishable"]["n_features"] == 4
    assert report["curator_only"]["read_from_data"] == ["categories of 'colour'"]


TABLE_ARGS = ("--target", "label", "--bounds-x", "0,-5", "10,5", "--y-bound", "-20,40",
              "--categories", "colour=red,green,blue")
# what TABLE_ARGS declare: a schema, the text column one share of the row norm
TABLE_DOMAIN = dict(y_bound=(-20, 40), schema=sklearn_pdp.Schema(
    {"a": (0, 10), "b": (-5, 5)}, {"colour": ["red", "green", "blue"]}, "label",
    order=["a", "colour", "b"]))


def test_csv_release_with_text_columns_is_loaded_and_predicts_bit_for_bit(tmp_path, capsys):
    path, model = tmp_path / "table.csv", tmp_path / "model.json"
    X, y = _table(path)
    report = _report_of(capsys, str(path), *TABLE_ARGS, "--epsilon", "1",
                        "--random-state", "0", "--tighten-bounds", "no",
                        "--save-model", str(model))
    public = report["publishable"]
    names = ["a", "colour_green", "colour_blue", "b"]
    assert public["model"]["feature_names"] == names
    assert public["n_features"] == 4 and public["dp_epsilon"] <= 1.0
    assert report["curator_only"]["read_from_data"] == []
    assert report["curator_only"]["test_r2"] > 0.5
    assert report["curator_only"]["ledger"] is None
    loaded = sklearn_pdp.PublicLinearModel.from_json(str(model))
    assert loaded.coef_.tolist() == public["model"]["coef"]
    assert loaded.intercept_ == public["model"]["intercept"]
    assert list(loaded.feature_names_in_) == names
    assert loaded.bounds["bounds_X"] == [[0.0, 0.0, 0.0, -5.0], [10.0, 1.0, 1.0, 5.0]]
    assert loaded.bounds["y_bound"] == [-20.0, 40.0]
    assert loaded.params["epsilon"] == 1.0 and "random_state" not in loaded.params
    assert loaded.mechanism_ == "AdaSSPRegressor"
    # the green and blue effects are found with the right signs (on one
    # seeded draw: an unseeded one flips them now and then)
    coef = dict(zip(names, loaded.coef_))
    assert coef["colour_green"] > 0 > coef["colour_blue"]


@pytest.mark.filterwarnings("ignore:X does not have valid feature names")
def test_saved_model_predicts_exactly_as_the_fitted_estimator(tmp_path):
    path, model = tmp_path / "table.csv", tmp_path / "model.json"
    X, y = _table(path, n=800)
    assert main([str(path), *TABLE_ARGS, "--epsilon", "2", "--test-size", "0",
                 "--random-state", "3", "--save-model", str(model), "--json"]) == 0
    est = sklearn_pdp.AdaSSPRegressor(
        epsilon=2.0, delta=1e-6, random_state=3, **TABLE_DOMAIN).fit(X, y)
    loaded = sklearn_pdp.PublicLinearModel.from_json(model)
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
    assert not est.mean_only_ and np.any(est.coef_)


def test_saved_model_predicts_on_the_raw_table(tmp_path, capsys):
    """The saved model holds the declared encoding: it predicts on the table
    as read (text as text, the label among the columns) exactly as the
    release does on the encoded rows, and still on the encoded columns."""
    pd = pytest.importorskip("pandas")
    path, model = tmp_path / "table.csv", tmp_path / "model.json"
    X, y = _table(path, n=800)
    assert main([str(path), *TABLE_ARGS, "--epsilon", "2", "--test-size", "0",
                 "--tighten-bounds", "no", "--save-model", str(model), "--json"]) == 0
    released = json.loads(capsys.readouterr().out)["publishable"]["model"]
    loaded = sklearn_pdp.PublicLinearModel.from_json(model)
    document = json.loads(model.read_text())
    assert document["encoding"] == {
        "columns": ["a", "colour", "b"], "categories": {"colour": ["red", "green", "blue"]},
        "drop": "first", "read_from_data": []}
    table = pd.read_csv(path)
    expected = X @ np.array(released["coef"]) + released["intercept"]
    np.testing.assert_allclose(loaded.predict(table), expected, rtol=1e-12, atol=1e-12)
    assert np.any(released["coef"])
    encoded = pd.DataFrame(X, columns=released["feature_names"])
    # (a DataFrame's columns are Fortran-ordered: the sums may round apart)
    np.testing.assert_allclose(loaded.predict(encoded), loaded.predict(table), rtol=1e-14)
    # the columns in another order, without the label: the same
    np.testing.assert_array_equal(loaded.predict(table[["b", "colour", "a"]]),
                                  loaded.predict(table))
    with pytest.raises(ValueError, match="column 'colour'.*declared categories: red, green"):
        loaded.predict(table.assign(colour="purple"))
    with pytest.raises(ValueError, match="column 'a' must be numeric"):
        loaded.predict(table.assign(a="ten"))
    # a raw column missing: named (not scikit-learn's feature-name mismatch)
    with pytest.raises(ValueError, match="^X has no column 'b': the released model takes "
                                         "the raw columns a, colour, b"):
        loaded.predict(table.drop(columns="b"))


def test_undeclared_categories_are_read_and_said_once(tmp_path, capsys):
    """Categories read from the data leak: the report says so once, in its
    own words (no Python warning line beside it)."""
    path = tmp_path / "table.csv"
    _table(path, n=400)
    args = [str(path), "--target", "label", "--bounds-x", "0,-5", "10,5",
            "--y-bound", "-20,40"]
    assert main([*args, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["curator_only"]["read_from_data"] == ["categories of 'colour'"]
    assert report["curator_only"]["warnings"] == []
    # sorted: blue is the reference
    assert report["publishable"]["model"]["feature_names"] == [
        "a", "colour_green", "colour_red", "b"]
    assert main(args) == 0
    printed = capsys.readouterr()
    out = _flat(printed.out)
    assert out.count("categories of 'colour' read from the data") == 1
    assert "a rare category shows that someone has it" in out and printed.err == ""
    # a saved model holds them (it predicts on the raw table), marked and said
    model = tmp_path / "model.json"
    assert main([*args, "--save-model", str(model)]) == 0
    out = _flat(capsys.readouterr().out)
    assert "it holds the categories of 'colour', read from the data" in out
    encoding = json.loads(model.read_text())["encoding"]
    assert encoding["categories"] == {"colour": ["blue", "green", "red"]}
    assert encoding["read_from_data"] == ["colour"]


def test_bounds_read_from_the_data_are_reported(tmp_path, capsys):
    path = tmp_path / "data.csv"
    rng = np.random.default_rng(1)
    np.savetxt(path, rng.normal(size=(100, 3)), delimiter=",", header="a,b,label",
               comments="")
    report = _report_of(capsys, str(path), "--target", "label")
    assert report["curator_only"]["read_from_data"] == ["data_norm", "y_bound"]
    # said once, in read_from_data, not again among the fit's warnings
    assert not any("was not given" in w for w in report["curator_only"]["warnings"])
    # once each, also with tightening that finds nothing declared to tighten
    text = _text_of(capsys, str(path), "--target", "label", "--tighten-bounds")
    assert "note : data_norm, y_bound read from the data:" in text
    # the undeclared bound alone; another leak (a large delta) is still a warning
    report = _report_of(capsys, str(path), "--target", "label", "--bounds-x", "-5,-5", "5,5",
                        "--delta", "0.1")
    assert report["curator_only"]["read_from_data"] == ["y_bound"]
    assert [w for w in report["curator_only"]["warnings"] if w.startswith("delta=0.1")]


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
     ("a,label\nx,2\n,3\n", "empty values: fill or drop them"),
     ("a,label\nnan,2\n1,3\n", "missing or infinite values: fill them with a public value")],
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


def test_categories_of_a_column_left_out_of_the_features_are_refused(capsys, tmp_path):
    """Declared categories of a column that is not a feature would be
    silently unused: one line says so."""
    path = tmp_path / "table.csv"
    path.write_text("a,colour,label\n1,x,2\n2,y,3\n3,x,4\n")
    _assert_one_line_error(
        capsys, [str(path), "--target", "label", "--features", "a", "--categories",
                 "colour=x,y"],
        "--categories colour=...: 'colour' is not among the features (a); add it to "
        "--features or drop its --categories")


def test_names_holding_commas_are_quoted_as_in_the_csv(tmp_path, capsys):
    """Categories and feature names holding a comma are declared in double
    quotes, as the CSV file writes them."""
    path = tmp_path / "table.csv"
    rng = np.random.default_rng(0)
    jobs = np.array(["Sales, retail", "Clerical", "Crafts, other"])[rng.integers(3, size=400)]
    size = rng.uniform(0, 10, 400)
    label = size + 3.0 * (jobs == "Clerical")
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["size, m2", "job", "label"])
        writer.writerows(zip(size, jobs, label))
    assert main([str(path), "--target", "label", "--features", '"size, m2",job',
                 "--categories", 'job="Sales, retail",Clerical,"Crafts, other"',
                 "--bounds-x", "0", "10", "--y-bound", "-5,20", "--json"]) == 0
    names = _strict(capsys.readouterr().out)["publishable"]["model"]["feature_names"]
    assert names == ["size, m2", "job_Clerical", "job_Crafts, other"]
    # unquoted, the comma splits the category: one clear line
    _assert_one_line_error(capsys, [str(path), "--target", "label", "--categories",
                                    "job=Sales, retail,Clerical,Crafts, other"],
                           "not in its declared categories: 'Crafts, other'")


def test_help(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for option in ("--target", "--estimator", "--epsilon", "--delta", "--plot", "--ledger",
                   "--id-column"):
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
    # without text columns too: the option's name, not the estimator's parameter
    plain = [c for c in common if c not in ("--categories", "colour=red,green,blue")]
    _assert_one_line_error(capsys, [*plain, "--features", "a,b", "--bounds-x", "0,0,0",
                                    "1,1,1"], "--bounds-x needs one value per numeric "
                                              "feature (2), got 3")


@pytest.mark.parametrize("values, expected", [
    (["-3,0", "3,10"], ([-3.0, 0.0], [3.0, 10.0])),  # a negative end first in a list
    (["-1e3", "1e3"], (-1000.0, 1000.0)),
    (["-.5", ".5"], (-0.5, 0.5))])
def test_negative_ends_are_values_not_options(values, expected):
    """argparse before Python 3.13 read "-3,0" and "-1e3" as unknown options."""
    args = _parser().parse_args(["--bounds-x", *values, "--y-bound", "-5,10"])
    assert tuple(args.bounds_x) == expected
    assert args.y_bound is not None


def test_paths_that_cannot_be_written_fail_before_the_fit(capsys, tmp_path):
    """Not after a release is recorded in the ledger."""
    csv = tmp_path / "table.csv"
    _table(csv, n=100, ids=range(100))
    ledger = tmp_path / "ledger.sqlite"
    for option in ("--save-model", "--plot"):
        _assert_one_line_error(
            capsys, [str(csv), *TABLE_ARGS, "--ledger", str(ledger), "--id-column", "person",
                     option, str(tmp_path / "missing" / "out")],
            f"({option}): no folder")
        assert not ledger.exists()


@pytest.mark.filterwarnings("ignore::sklearn_pdp.PrivacyLeakWarning")
def test_other_warnings_of_the_fit_are_shown(capsys, monkeypatch):
    assert main([*DIABETES, "--estimator", "projection", "--json", "--random-state", "0"]) == 0
    assert json.loads(capsys.readouterr().out)["curator_only"]["warnings"] == []
    # the paper's variant of random projection has no guarantee, and says so
    original = _release._estimator
    monkeypatch.setattr(_release, "_estimator",
                        lambda *args: original(*args).set_params(variant="paper"))
    assert main([*DIABETES, "--estimator", "projection", "--random-state", "0"]) == 0
    out = _flat(capsys.readouterr().out)
    assert "warning" in out and "no differential privacy guarantee" in out


def test_every_per_instance_epsilon_says_what_kind_of_number_it_is(tmp_path, capsys):
    """curator_only.pdp_kind: "exact" for AdaSSP with declared bounds, a
    bound for a tightened OPS (every row's loss composes the bounds' stage
    with the model's guarantee), which the text words "at most" (and its
    shares "at least") instead of "computed from their own record"; a
    conditional number says "given the released bounds"."""
    path = tmp_path / "table.csv"
    _table(path, n=3000)  # at epsilon 4: the label's four ends and the features' four
    args = [str(path), *TABLE_ARGS, "--random-state", "0"]
    assert main([*args, "--tighten-bounds", "no", "--json"]) == 0
    exact = _strict(capsys.readouterr().out)
    assert exact["curator_only"]["pdp_kind"] == "exact"
    assert main([*args, "--tighten-bounds", "no"]) == 0
    assert "computed from their own record" in _flat(capsys.readouterr().out)
    tightened = [*args, "--estimator", "ops", "--epsilon", "4", "--tighten-bounds"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the fit's warnings are the report's
        assert main([*tightened, "--json"]) == 0
        report = _strict(capsys.readouterr().out)
        assert main(tightened) == 0
        out = _flat(capsys.readouterr().out)
    assert report["publishable"]["released_bounds"] is not None
    assert report["curator_only"]["pdp_kind"] == "conditional"
    q = report["curator_only"]["pdp_epsilon"]
    assert "computed from their own record" not in out
    assert f"median : {q['median']:.3g} given the released bounds" in out
    bound = copy.deepcopy(report)
    bound["curator_only"]["pdp_kind"] = "bound"
    out = _flat(_layout(_text(bound)))
    assert "at most these numbers: an upper bound on each person's per-instance" in out
    assert f"median : at most {q['median']:.3g}" in out
    assert f"most exposed : at most {q['max']:.3g}" in out
    assert "a tenth or less : at least " in out
    exact["curator_only"]["pdp_kind"] = "conditional"
    out = _flat(_layout(_text(exact)))
    assert "per-instance epsilon given the released bounds" in out
    median = exact["curator_only"]["pdp_epsilon"]["median"]
    assert f"median : {median:.3g} given the released bounds" in out


def test_curator_is_told_one_draw_and_when_fewer_columns_would_help(tmp_path, capsys):
    """The model is one noisy draw (not at epsilon=inf); where rows times
    epsilon per coefficient is under ten times the fallback's rate, the
    advice names fewer columns (one-hot ones counted), not only epsilon or
    rows."""
    from sklearn_pdp.mechanisms.mean._fallback import MEAN_ONLY_RATE

    path = tmp_path / "table.csv"
    _table(path, n=1000)
    args = [str(path), *TABLE_ARGS, "--random-state", "0"]
    assert main([*args, "--json"]) == 0
    curator = _strict(capsys.readouterr().out)["curator_only"]
    assert curator["one_draw"] is True
    # 750 training rows, 4 columns (2 one-hot) and an intercept
    assert curator["fewer_columns"] == {"per_coefficient": 150.0,
                                        "below": 10 * MEAN_ONLY_RATE, "one_hot": 2}
    assert main(args) == 0
    out = _flat(capsys.readouterr().out)
    # the generic sentence, or the spread measured on public data where a cell matches
    assert re.search(r"one draw : this (model|release) is one draw of a noisy mechanism", out)
    assert ("advice : 4 columns for 750 rows: rows times epsilon per coefficient (slopes "
            "and intercept) is 150, under 1000") in out
    assert "fewer columns would help (2 of them one-hot" in out
    # 750 rows at epsilon 7: 1050 per coefficient, no advice
    assert main([*args, "--epsilon", "7", "--json"]) == 0
    assert _strict(capsys.readouterr().out)["curator_only"]["fewer_columns"] is None
    # epsilon=inf is least squares, without noise (and says so among the warnings)
    assert main([*args, "--epsilon", "inf"]) == 0
    out = _flat(capsys.readouterr().out)
    assert "one draw" not in out and "epsilon=inf protects nothing" in out


def test_warnings_outside_the_fit_are_said_once_in_the_reports_words(capsys, monkeypatch):
    """A warning of any step (here the split, before the fit) reaches the
    report once, as the report's own line: never Python's file:line lines,
    never dropped; before an error, on the error's stream."""
    original = _release._split

    def split(*args):
        for _ in range(2):
            warnings.warn("a leak outside the fit", sklearn_pdp.PrivacyLeakWarning)
        return original(*args)

    monkeypatch.setattr(_release, "_split", split)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # none escapes main
        assert main(["--json", "--random-state", "0"]) == 0
        report = json.loads(capsys.readouterr().out)
        assert report["curator_only"]["warnings"] == ["a leak outside the fit"]
        assert main(["--random-state", "0"]) == 0
        printed = capsys.readouterr()
        assert _flat(printed.out).count("warning : a leak outside the fit") == 1
        assert printed.err == ""
        with pytest.raises(SystemExit):
            main(["--test-size", "2"])
    assert capsys.readouterr().err.splitlines() == [
        "python -m sklearn_pdp: warning: a leak outside the fit",
        "python -m sklearn_pdp: error: --test-size must be in [0, 1), got 2"]


def _strict(text):
    """JSON text parsed strictly: ``Infinity`` and ``NaN`` are refused."""
    def refuse(constant):
        raise AssertionError(f"not strict JSON: {constant}")
    return json.loads(text, parse_constant=refuse)


@pytest.mark.filterwarnings("ignore::sklearn_pdp.PrivacyLeakWarning")
def test_json_report_is_strict_json(capsys, monkeypatch):
    """A release without a guarantee (the paper's random projection) has an
    infinite DP epsilon: the string "inf", as in a saved model."""
    original = _release._estimator
    monkeypatch.setattr(_release, "_estimator",
                        lambda *args: original(*args).set_params(variant="paper"))
    assert main([*DIABETES, "--estimator", "projection", "--random-state", "0", "--json"]) == 0
    public = _strict(capsys.readouterr().out)["publishable"]
    assert public["dp_epsilon"] == "inf" and float(public["dp_epsilon"]) == np.inf


def test_a_reader_that_stops_early_gets_no_traceback():
    """``python -m sklearn_pdp | head`` closes the pipe before the report is
    written: the command stops quietly, as Unix tools do."""
    proc = subprocess.Popen([sys.executable, "-m", "sklearn_pdp", "--random-state", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()  # before the command has imported anything
    err = proc.stderr.read()
    proc.stderr.close()
    assert proc.wait(timeout=120) == 1
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


def test_text_report_fits_the_width_and_says_each_share_once(capsys):
    assert main([*DIABETES, "--random-state", "0"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(map(len, lines)) <= TEXT_WIDTH
    # at DP epsilon 1 the threshold 0.1 is the tenth of the DP epsilon: one line
    assert sum("at most a tenth of the DP epsilon" in line for line in lines) == 1
    assert not any(line.strip().startswith("at most 0.1 ") for line in lines)
    assert any(line.strip().startswith("at most 1 ") for line in lines)
    assert main([*DIABETES, "--random-state", "0", "--epsilon", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.strip().startswith("at most 0.1 ") for line in lines)


# -- the privacy ledger ----------------------------------------------------------



def _quantiles(values):
    """The ledger summary's quantiles."""
    return {k: float(np.quantile(values, q))
            for k, q in {"median": 0.5, "q90": 0.9, "q99": 0.99, "max": 1.0}.items()}


def _approx(summary, values):
    assert summary == pytest.approx(_quantiles(values), rel=1e-9)


@pytest.mark.filterwarnings("ignore:X does not have valid feature names")
# the reference fit of the small table releases zero slopes, as the CLI's does
@pytest.mark.filterwarnings("ignore:AdaSSPRegressor released zero slopes")
def test_two_csv_releases_into_one_ledger(tmp_path, capsys):
    """Two quarters over overlapping people (an id column, a text column):
    each release charges its training rows' people their losses and the
    held-out people the loss of adding their record; totals grow, and are
    what the ledger reads back in Python."""
    keys = np.array([f"P{i:04d}" for i in range(1200)])
    path = tmp_path / "people.sqlite"
    quarters = [(tmp_path / "q1.csv", keys[:800]), (tmp_path / "q2.csv", keys[400:])]
    data = [_table(table, n=800, seed=seed, ids=ids)
            for seed, (table, ids) in enumerate(quarters)]
    args = [*TABLE_ARGS, "--ledger", str(path), "--id-column", "person",
            "--random-state", "0", "--json"]
    befores, ratios = [], []
    for k, ((table, ids), (X, y)) in enumerate(zip(quarters, data)):
        with sklearn_pdp.PrivacyLedger(path) as ledger:
            befores.append(ledger.epsilon(keys, 1e-6))
        if k == 0:  # through the interpreter, as a user runs it
            res = _run(str(table), *args)
            assert res.returncode == 0, res.stderr
            report = json.loads(res.stdout)
        else:
            assert main([str(table), *args]) == 0
            report = json.loads(capsys.readouterr().out)
        public, summary = report["publishable"], report["curator_only"]["ledger"]
        # the release (the ids are not a feature), and the split the CLI made
        assert public["model"]["feature_names"] == ["a", "colour_green", "colour_blue", "b"]
        X_train, X_test, y_train, y_test, train, test = train_test_split(
            X, y, ids, test_size=0.25, random_state=0)
        est = sklearn_pdp.AdaSSPRegressor(epsilon=1.0, random_state=0,
                                          **TABLE_DOMAIN).fit(X_train, y_train)
        assert public["model"]["coef"] == est.coef_.tolist()
        assert summary["release_id"] == k + 1 == summary["releases"]
        assert summary["people"] == [800, 1200][k]
        assert summary["delta"] == 1e-6 and summary["total_delta"] == (k + 1) * 1e-6
        # exactly the training rows' people, with their own losses; the
        # held-out ones with the loss of adding their record
        _approx(summary["release"], est.pdp_losses_)
        added = est.pdp_epsilon(X_test, y_test)
        _approx(summary["absent"]["release"], added)
        assert summary["absent"]["people"] == 200
        with sklearn_pdp.PrivacyLedger(path) as ledger:
            _approx(summary["total"], ledger.epsilon(train, summary["total_delta"]))
            _approx(summary["absent"]["total"], ledger.epsilon(test, summary["total_delta"]))
            releases = ledger.releases()
            assert releases["n_rows"][k] == 600 and releases["n_people"][k] == 800
            if k == 0:  # each person charged their own row's loss
                np.testing.assert_allclose(ledger.epsilon(train, 1e-6), est.pdp_losses_,
                                           rtol=1e-9)
                np.testing.assert_allclose(ledger.epsilon(test, 1e-6), added, rtol=1e-9)
        ratio = dict(zip(train, gaussian_ratio(est.pdp_losses_, 1e-6)))
        ratio.update(zip(test, gaussian_ratio(added, 1e-6)))
        ratios.append(ratio)
    before = befores[1]
    with sklearn_pdp.PrivacyLedger(path) as ledger:
        after = ledger.epsilon(keys, 1e-6)
    # totals grow for the people of the second release, no one else's moves
    second = np.isin(keys, quarters[1][1])
    assert np.all(after[second] > before[second])
    np.testing.assert_array_equal(after[~second], before[~second])
    # in both: one Gaussian mechanism at the combined ratio
    both = keys[400:800]
    combined = np.hypot([ratios[0][key] for key in both], [ratios[1][key] for key in both])
    np.testing.assert_allclose(after[400:800], gaussian_epsilon(1e-6, combined), rtol=1e-6)
    # the command's summary of the ledger reads the same file
    summary = _report_of(capsys, "ledger", str(path))
    assert summary["people"] == 1200 and len(summary["releases"]) == 2
    assert summary["delta"] == 2e-6
    with sklearn_pdp.PrivacyLedger(path) as ledger:
        totals = ledger.epsilon(keys, 2e-6)
    assert summary["totals"]["median"] == pytest.approx(np.median(totals), rel=1e-9)
    assert summary["totals"]["max"] == pytest.approx(totals.max(), rel=1e-9)
    # the text report shows the ledger in the curator's block
    assert main([str(quarters[1][0]), *args[:-1], "--random-state", "1"]) == 0
    out = _flat(capsys.readouterr().out)
    ledger_part = out[out.index("FOR THE CURATOR ONLY"):]
    for words in ("privacy ledger", "1200 people, 3 releases so far",
                  "this release's loss (delta = 1e-06)",
                  "each person's total over the ledger : at delta = 3e-06",
                  "held out (200 people)"):
        assert words in ledger_part


@pytest.mark.filterwarnings("ignore:X does not have valid feature names")
def test_people_with_several_records_are_reported_as_groups(tmp_path, capsys):
    """A person key on several rows (a panel): the published guarantee is
    per record and says a person is protected as a group; the curator sees
    each person's loss for all their records together, which the ledger
    charges and after one release is their total, and one record's."""
    keys = [f"P{i:03d}" for i in range(200)] * 4  # four records each
    table, path = tmp_path / "panel.csv", tmp_path / "people.sqlite"
    _table(table, n=800, ids=keys)
    # declared bounds: a tightened release charges a group of records its
    # bound, infinite here (the bounds' quantiles move with every record)
    args = [str(table), *TABLE_ARGS, "--ledger", str(path), "--id-column", "person",
            "--test-size", "0", "--tighten-bounds", "no", "--random-state", "0"]
    assert main([*args, "--json"]) == 0
    report = _strict(capsys.readouterr().out)
    public, ledger = report["publishable"], report["curator_only"]["ledger"]
    assert public["person_key"] == "person"
    assert ledger["training_people"] == 200 and ledger["most_records"] == 4
    # each person's charge is their group's, and the total over one release
    assert ledger["release_people"] == ledger["total"]
    assert ledger["release_people"]["median"] > 2 * ledger["release"]["median"]
    curator = report["curator_only"]
    assert (curator["pdp_unit"], public["dp_unit"]) == ("person", "record")
    assert curator["people"] == {"n": 200, "most_records": 4}
    # the curator's numbers per person are the ledger's charges, one record's beside them
    assert curator["pdp_epsilon"]["median"] == ledger["release_people"]["median"]
    assert curator["pdp_epsilon_per_record"] == ledger["release"]
    with sklearn_pdp.PrivacyLedger(path) as book:
        totals = book.epsilon(np.unique(keys), ledger["total_delta"])
    _approx(ledger["total"], totals)
    assert main([*args[:-2], "--random-state", "1"]) == 0
    out = _flat(capsys.readouterr().out)
    published = out[:out.index("FOR THE CURATOR ONLY")]
    assert "800 records in the training data" in published
    assert "DP epsilon 1 at delta 1e-06 per record: for every record," in published
    assert "protected as a group" in published and "per person" not in published
    for words in ("per person : each person's per-instance epsilon, for all their records "
                  "together", "can lose more than the DP epsilon, which is per record",
                  "200 people hold the 800 training records, up to 4 each",
                  "90% of people", "per record : median", "this release's loss per record",
                  "each person's charge in it : for all their records together"):
        assert words in out
    # the ledger's own summary says its guarantees are per record
    assert main(["ledger", str(path)]) == 0
    assert "per record (a person with several records in a release is charged as a group" \
        in _flat(capsys.readouterr().out)
    # one row per person: the wording of people
    single = tmp_path / "single.csv"
    _table(single, n=800, ids=[f"Q{i:03d}" for i in range(800)])
    assert main([str(single), *TABLE_ARGS, "--ledger", str(tmp_path / "other.sqlite"),
                 "--id-column", "person", "--test-size", "0", "--tighten-bounds", "no",
                 "--random-state", "1"]) == 0
    out = _flat(capsys.readouterr().out)
    assert "per person : each person's per-instance epsilon" in out
    assert "each person's charge in it" not in out
    assert main(["ledger", str(tmp_path / "other.sqlite")]) == 0
    assert "per record" not in capsys.readouterr().out


# diabetes at epsilon 1 releases the label mean
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.FallbackWarning")
def test_ledger_text_rounds_epsilons_up_and_json_keeps_them(tmp_path, capsys, diabetes):
    """The ledger's text shows 3 significant digits, never below a value
    (beyond float noise); --json the numbers as computed."""
    import re

    from sklearn_pdp.cli._ledger_command import shown, summary

    path = tmp_path / "ledger.sqlite"
    assert main([*DIABETES, "--ledger", str(path), "--test-size", "0", "--random-state", "0",
                 "--json"]) == 0
    capsys.readouterr()
    X, y = diabetes
    est = sklearn_pdp.AdaSSPRegressor(random_state=0, **DIABETES_BOUNDS).fit(X, y)
    assert main(["ledger", str(path), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    with sklearn_pdp.PrivacyLedger(path) as ledger:  # the ledger's own float, unrounded
        assert document["releases"][0]["dp_epsilon"] == summary(ledger)["releases"][0][
            "dp_epsilon"] == pytest.approx(est.dp_epsilon_, rel=1e-12)
    assert document["totals"]["max"] == pytest.approx(est.pdp_losses_.max(), rel=1e-9)
    assert main(["ledger", str(path)]) == 0
    text = capsys.readouterr().out
    assert not re.search(r"\d\.\d{4,}", text), text  # no long decimals
    assert f"({shown(est.dp_epsilon_)}, 1e-06)-DP" in text
    assert f"max {shown(document['totals']['max'])}" in text
    for value in (est.dp_epsilon_, *est.pdp_losses_[:50]):
        assert float(shown(value)) >= value * (1 - 1e-9)
        assert float(shown(value)) <= value * (1 + 1e-2)
    assert shown(1.0000000000000016) == shown(0.9999999999999103) == "1"
    assert shown(1.0049) == "1.01"


def test_bundled_data_ledger_keys_are_row_numbers(tmp_path, capsys, diabetes):
    path = tmp_path / "ledger.sqlite"
    assert main([*DIABETES, "--ledger", str(path), "--test-size", "0", "--epsilon", "3",
                 "--random-state", "0", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)["curator_only"]["ledger"]
    assert summary["absent"] is None and summary["people"] == 442
    X, y = diabetes
    est = sklearn_pdp.AdaSSPRegressor(epsilon=3.0, random_state=0,
                                      **DIABETES_BOUNDS).fit(X, y)
    with sklearn_pdp.PrivacyLedger(path) as ledger:
        np.testing.assert_allclose(ledger.epsilon(np.arange(442), 1e-6), est.pdp_losses_,
                                   rtol=1e-9)
    # the same seeded release again is not charged twice, and the report says so
    assert main([*DIABETES, "--ledger", str(path), "--test-size", "0", "--epsilon", "3",
                 "--random-state", "0", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)["curator_only"]
    assert report["ledger"]["releases"] == 1 and report["ledger"]["release_id"] == 1
    assert any("already recorded" in w for w in report["warnings"])
    # the summary names each release once, its mechanism when the name lacks it
    X_ = X[:300]
    est = sklearn_pdp.AdaSSPRegressor(epsilon=3.0, random_state=1,
                                      **DIABETES_BOUNDS).fit(X_, y[:300])
    record_from_cli(path, est, np.arange(300), name="q2")
    assert main(["ledger", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    releases = [line for line in lines if line.startswith("     ")]
    assert len(releases) == 2
    assert releases[0].count("AdaSSPRegressor") == 1 and " UTC  " in releases[0]
    assert "q2 (AdaSSPRegressor): 300 rows, 300 people, (3, 1e-06)-DP" in releases[1]


def test_ledger_charges_a_person_with_several_rows_once(tmp_path, capsys):
    """One person, two rows: a group (doc/ledger.rst)."""
    csv, path = tmp_path / "pairs.csv", tmp_path / "ledger.sqlite"
    _table(csv, n=400, ids=[f"P{i // 2}" for i in range(400)])
    assert main([str(csv), *TABLE_ARGS, "--ledger", str(path), "--id-column", "person",
                 "--test-size", "0", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)["curator_only"]["ledger"]
    assert summary["people"] == 200 and summary["absent"] is None


@pytest.mark.filterwarnings("ignore:X does not have valid feature names")
# the reference fit of the small table releases zero slopes, as the CLI's does
@pytest.mark.filterwarnings("ignore:AdaSSPRegressor released zero slopes")
def test_test_size_holds_out_whole_people_charged_for_all_their_records(tmp_path, capsys):
    """With --id-column, --test-size holds out a share of the people with
    all their records (GroupShuffleSplit's rule over the people in the
    order of their first record), seeded by --random-state; the ledger
    charges each held-out person the release's loss of adding their three
    records together; the people block is about the training people."""
    csv, path = tmp_path / "panel.csv", tmp_path / "ledger.sqlite"
    ids = np.array([f"P{i % 200:03d}" for i in range(600)])  # rows i, i+200, i+400
    X, y = _table(csv, n=600, ids=ids)
    args = [str(csv), *TABLE_ARGS, "--id-column", "person", "--test-size", "0.25",
            "--tighten-bounds", "no", "--random-state", "0"]
    report = _strict(_report_of_text(capsys, *args, "--ledger", str(path)))
    public, curator = report["publishable"], report["curator_only"]
    people = np.arange(600) % 200  # each row's person, numbered by first record
    train, test = next(GroupShuffleSplit(1, test_size=0.25, random_state=0).split(
        X, y, people))
    held = np.unique(ids[test])
    assert np.intersect1d(held, ids[train]).size == 0 and held.size == 50
    assert (public["n_train"], curator["n_test"], curator["n_test_people"]) == (450, 150, 50)
    assert curator["people"] == {"n": 150, "most_records": 3}
    ledger = curator["ledger"]
    assert (ledger["training_people"], ledger["absent"]["people"], ledger["people"]) == (
        150, 50, 200)
    assert ledger["absent"]["most_records"] == 3 and ledger["absent"]["infinite"] == 0
    # the release of the training people, and each held-out person's charge:
    # its own loss of adding their three records together, exact for AdaSSP
    est = sklearn_pdp.AdaSSPRegressor(epsilon=1.0, random_state=0, tighten_bounds=False,
                                      **TABLE_DOMAIN).fit(X[train], y[train], groups=ids[train])
    assert public["model"]["coef"] == pytest.approx(est.coef_.tolist(), rel=1e-9)
    joint = est.pdp_epsilon(X[test], y[test], groups=ids[test])
    with PrivacyLedger(str(path)) as book:
        charged, deltas = book.charges(1, held)
        np.testing.assert_array_equal(book.people(), np.unique(ids))
    np.testing.assert_allclose(charged, joint, rtol=1e-9)
    assert est.person_pdp_kind_ == "exact" and np.all(deltas == public["dp_delta"])
    _approx(ledger["absent"]["release"], joint)
    # the stable names are there, and the split and the noise are reproducible
    for key in ("dp_epsilon", "mean_only", "zero_slopes"):
        assert key in public
    for key in ("test_r2", "test_r2_least_squares", "test_r2_mean"):
        assert key in curator
    again = _strict(_report_of_text(capsys, *args))
    assert again["publishable"] == public
    assert again["curator_only"]["test_r2"] == curator["test_r2"]
    other = _strict(_report_of_text(capsys, *args[:-1], "1"))
    assert other["curator_only"]["test_r2_least_squares"] != curator["test_r2_least_squares"]
    # the text says how the held-out people were charged
    text = _text_of(capsys, *args, "--ledger", str(tmp_path / "other.sqlite"))
    for words in ("150 people hold the 450 training records, up to 3 each",
                  "held out (50 people) : not in the training rows, up to 3 records each: "
                  "each charged the loss of adding all their records together",
                  "(150 held-out rows of 50 people, split by person: none of them trains)"):
        assert words in text


def test_people_are_split_as_rows_when_each_has_one_record():
    """The split by person draws people as train_test_split draws rows: a
    table of one record per person is split (and ordered) as without keys."""
    keys = np.array([f"k{i}" for i in np.random.default_rng(0).permutation(50)])
    train, test = _release.split_people(keys, 0.3, 4)
    rows_train, rows_test = train_test_split(np.arange(50), test_size=0.3, random_state=4)
    np.testing.assert_array_equal(train, rows_train)
    np.testing.assert_array_equal(test, rows_test)
    other = _release.split_people(keys, 0.3, 5)[1]
    assert not np.array_equal(np.sort(other), np.sort(test))


@pytest.mark.parametrize(
    "args, message",
    [(("--ledger", "{ledger}"), "--ledger needs --id-column with a CSV file"),
     (("--ledger", "{ledger}", "--id-column", "person", "--features", "person,a"),
      "the id column 'person' cannot also be the target, a feature or a category"),
     (("--ledger", "{ledger}", "--id-column", "nobody"), "column 'nobody' not in"),
     (("--ledger", "{ledger}", "--id-column", "person", "--publish-epsilon", "0.5"),
      "--ledger with --publish-epsilon needs --test-size 0"),
     (("--ledger", "{csv}", "--id-column", "person"), "is not a SQLite database"),
     (("--ledger", "{tmp}/missing/ledger.sqlite", "--id-column", "person"),
      "cannot create the ledger")],
)
def test_ledger_errors_are_one_clear_line(capsys, tmp_path, args, message):
    csv = tmp_path / "table.csv"
    _table(csv, n=100, ids=range(100))
    places = dict(ledger=tmp_path / "ledger.sqlite", csv=csv, tmp=tmp_path)
    _assert_one_line_error(capsys, [str(csv), *TABLE_ARGS,
                                    *(a.format(**places) for a in args)], message)
    assert not (tmp_path / "ledger.sqlite").exists()


def test_ledger_empty_ids_and_options_without_a_csv(capsys, tmp_path):
    csv = tmp_path / "table.csv"
    _table(csv, n=100, ids=[*range(99), " "])
    _assert_one_line_error(capsys, [str(csv), *TABLE_ARGS, "--ledger",
                                    str(tmp_path / "l.sqlite"), "--id-column", "person"],
                           "the id column 'person' of")
    _assert_one_line_error(capsys, ["--ledger", str(tmp_path / "l.sqlite"),
                                    "--id-column", "person"], "need a CSV file")


def test_ledger_summaries_keep_inf_totals(tmp_path, capsys, diabetes):
    """People charged inf (absent from a published report, whose cost of
    adding a record is not known) make the upper quantiles inf, not NaN."""
    X, y = diabetes
    report = sklearn_pdp.PDPReport(
        sklearn_pdp.AdaSSPRegressor(epsilon=3.0, random_state=0, **DIABETES_BOUNDS),
        publish_epsilon=0.5, random_state=0).fit(X[:300], y[:300])
    path = tmp_path / "ledger.sqlite"
    with pytest.warns(UserWarning, match="charged inf"):
        result = record_from_cli(path, report, np.arange(300), absent=np.arange(300, 442))
    absent = summarise_record(result)["absent"]
    assert absent["people"] == 142
    assert all(v == np.inf for v in absent["total"].values())
    assert main(["ledger", str(path), "--json"]) == 0
    totals = _strict(capsys.readouterr().out)["totals"]  # strict JSON: "inf"
    assert totals["max"] == "inf" and np.isfinite(totals["median"])


@pytest.mark.parametrize("estimator", ["ops", "adassp"])
def test_zero_delta_is_the_estimators_error(capsys, estimator):
    """--delta 0 is refused by the estimator that would use it, by name."""
    name = REGRESSORS[estimator].__name__
    _assert_one_line_error(capsys, ["--estimator", estimator, "--delta", "0"],
                           f"The 'delta' parameter of {name} must be")


def test_curator_block_gives_the_spread_of_one_draw_from_public_data(capsys, tmp_path):
    """The spread of another draw is looked up in the table measured on public
    data, at the release's public n, d, epsilon and whether it released the
    label mean alone: any private rows of that shape get the same."""
    from sklearn_pdp.cli._spread import spread

    assert main([*DIABETES, "--json", "--random-state", "0"]) == 0
    cell = json.loads(capsys.readouterr().out)["curator_only"]["spread"]
    assert cell == spread("adassp", 331, 10, 1.0, True) and cell["mean_only"] is True
    path = tmp_path / "other.csv"
    rng = np.random.default_rng(0)
    np.savetxt(path, np.c_[rng.uniform(size=(442, 10)), rng.normal(size=442)],
               delimiter=",", header=",".join([f"x{j}" for j in range(10)] + ["y"]),
               comments="")
    assert main([str(path), "--target", "y", "--bounds-x", "0", "1", "--y-bound", "-9,9",
                 "--json", "--random-state", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["curator_only"]["spread"] == cell
    assert main([*DIABETES, "--random-state", "0"]) == 0
    out = _flat(capsys.readouterr().out)
    assert "one draw of a noisy mechanism" in out and "Publish this draw" in out
    slopes = spread("adassp", 19582, 10, 1.0, False)
    assert (slopes["n"], slopes["d"], slopes["epsilon"]) == (19582, 10, 1.0)
    assert slopes["mean_only"] is False
    assert slopes["r2_min"] <= slopes["r2_median"] <= slopes["r2_max"] < 1
    assert spread("adassp", 19582, 10, None, False) is None


def test_id_column_charges_joint_losses_and_max_records(tmp_path, capsys):
    """With --id-column the fit knows each person's records: the ledger
    charges their joint loss (below the group path); --max-records makes the
    guarantee per person (doc/people.rst)."""
    csv, path = tmp_path / "panel.csv", tmp_path / "ledger.sqlite"
    _table(csv, n=400, ids=[f"P{i // 4}" for i in range(400)])
    assert main([str(csv), *TABLE_ARGS, "--ledger", str(path), "--id-column", "person",
                 "--test-size", "0", "--random-state", "0", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    with PrivacyLedger(str(path)) as ledger:
        charged, deltas = ledger.charges(1, [f"P{i}" for i in range(100)])
    # the release's guarantee is per record: four records cost less than four times it
    assert out["publishable"]["max_records"] is None
    assert np.all(charged < 4 * out["publishable"]["dp_epsilon"])
    assert np.all(deltas == out["publishable"]["dp_delta"])
    assert main([str(csv), *TABLE_ARGS, "--ledger", str(tmp_path / "capped.sqlite"),
                 "--id-column", "person", "--max-records", "4", "--test-size", "0",
                 "--random-state", "0"]) == 0
    text = _flat(capsys.readouterr().out)
    assert "for every person" in text and "beyond their first 4 were left out" in text
    _assert_one_line_error(capsys, [str(csv), *TABLE_ARGS, "--max-records", "4"],
                           "--max-records needs --id-column")


def test_id_column_alone_reports_per_person_and_the_guarantee_per_record(tmp_path, capsys):
    """--id-column without --ledger: the curator's numbers are each person's
    joint loss ("per person"), the guarantee "per record" unless
    --max-records; a published report's numbers stay "per record"."""
    csv = tmp_path / "panel.csv"
    _table(csv, n=400, ids=[f"P{i // 4}" for i in range(400)])
    args = [str(csv), *TABLE_ARGS, "--id-column", "person", "--test-size", "0",
            "--tighten-bounds", "no", "--random-state", "0"]
    assert main([*args, "--json"]) == 0
    report = _strict(capsys.readouterr().out)
    public, curator = report["publishable"], report["curator_only"]
    assert (curator["pdp_unit"], public["dp_unit"]) == ("person", "record")
    assert curator["people"] == {"n": 100, "most_records": 4}
    assert curator["pdp_epsilon"]["median"] > curator["pdp_epsilon_per_record"]["median"]
    assert main([*args, "--max-records", "4", "--json"]) == 0
    capped = _strict(capsys.readouterr().out)
    assert (capped["curator_only"]["pdp_unit"], capped["publishable"]["dp_unit"]) == (
        "person", "person")
    assert capped["curator_only"]["pdp_epsilon"]["max"] <= capped["publishable"]["dp_epsilon"]
    assert main([*args, "--max-records", "4"]) == 0
    out = _flat(capsys.readouterr().out)
    assert "at delta 1e-06 per person: for every person" in out
    assert "for all their records together: the guarantee above for the training data " \
           "as it is (at most the DP epsilon)" in out
    # a published report: per record, a person with several covered as a group
    assert main([*args, "--publish-epsilon", "0.5", "--json"]) == 0
    published = _strict(capsys.readouterr().out)
    assert (published["curator_only"]["pdp_unit"], published["publishable"]["dp_unit"]) == (
        "record", "record")
    assert published["curator_only"]["pdp_epsilon_per_record"] is None
    assert main([*args, "--publish-epsilon", "0.5"]) == 0
    out = _flat(capsys.readouterr().out)
    assert "per record : at most these numbers: an upper bound on each record's" in out
    assert "a person with several is covered as a group" in out and "per person" not in out
    _assert_one_line_error(capsys, [*args, "--max-records", "4", "--publish-epsilon", "0.5"],
                           "--max-records with --publish-epsilon")
