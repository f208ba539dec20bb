"""The public model: the release alone, safe to publish."""

import json
import pickle

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn import clone

import sklearn_pdp
from sklearn_pdp import (
    AdaSSPRegressor,
    PrivacyLeakWarning,
    PublicLinearModel,
    RandomProjectionRegressor,
)
from sklearn_pdp.model_selection import PrivateGridSearchCV
from tests.linear_model.test_common import ESTIMATORS, _seeded


def _frame_data(n=500):
    """A DataFrame with named columns (the public model keeps the names)."""
    rng = np.random.RandomState(0)
    X = pd.DataFrame(rng.uniform(-1, 1, size=(n, 3)), columns=["a", "b", "c"])
    y = 0.5 + X.to_numpy() @ [0.6, -0.3, 0.0] + 0.2 * rng.normal(size=n)
    return X, y


# 500 rows: the label mean (projection) or zero slopes (signal test)
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.FallbackWarning")
@pytest.mark.filterwarnings("ignore::sklearn_pdp.PrivacyLeakWarning")
@pytest.mark.parametrize(
    "estimator", [e for e in ESTIMATORS if hasattr(e, "predict")],
    ids=lambda e: type(e).__name__,
)
def test_public_model_predicts_like_the_release_and_holds_nothing_else(estimator):
    X, y = _frame_data()
    est = _seeded(estimator, 0).fit(X, y)
    public = est.public_model()
    assert isinstance(public, PublicLinearModel)
    assert_allclose(public.predict(X), est.predict(X), rtol=1e-12)
    assert (public.dp_epsilon_, public.dp_delta_) == (est.dp_epsilon_, est.dp_delta_)
    assert list(public.feature_names_in_) == ["a", "b", "c"]
    blob = pickle.dumps(public)
    assert len(blob) < 4096
    # no array with a row per training sample survives
    state = pickle.loads(blob).__dict__
    assert all(np.size(value) < len(y) for value in state.values())
    with pytest.raises(ValueError, match="feature names"):
        public.predict(X[["c", "b", "a"]])


def test_decimals_round_the_release():
    X, y = _frame_data()
    est = AdaSSPRegressor(data_norm=2.0, y_bound=2.0, random_state=0)
    est.fit(X, y)
    public = est.public_model(decimals=2)
    assert_allclose(public.coef_, np.round(est.coef_, 2))
    assert public.intercept_ == round(est.intercept_, 2)
    assert_allclose(public.predict(X), est.predict(X), atol=0.05)


# the search of the shared estimator list keeps its large delta (0.9)
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.PrivacyLeakWarning")
def test_search_public_model_carries_the_search_guarantee():
    X, y = _frame_data(n=2000)
    search = next(e for e in ESTIMATORS if isinstance(e, PrivateGridSearchCV))
    search = _seeded(search, 0).fit(X, y)
    public = search.public_model()
    assert public.dp_epsilon_ == search.dp_epsilon_
    assert public.dp_epsilon_ > search.best_estimator_.dp_epsilon_
    assert_allclose(public.predict(X), search.predict(X))
    assert "PrivateGridSearchCV" in repr(public)


# 500 rows: the label mean (projection) or zero slopes (signal test)
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.FallbackWarning")
@pytest.mark.filterwarnings("ignore::sklearn_pdp.PrivacyLeakWarning")
@pytest.mark.parametrize(
    "estimator", [e for e in ESTIMATORS if hasattr(e, "public_model")],
    ids=lambda e: type(e).__name__,
)
def test_json_round_trip_predicts_bit_for_bit(estimator, tmp_path):
    X, y = _frame_data()
    est = _seeded(estimator, 0).fit(X, y)
    public = est.public_model()
    path = tmp_path / "model.json"
    assert public.to_json(path) is None
    for source in (path, str(path), public.to_json()):
        loaded = PublicLinearModel.from_json(source)
        assert_array_equal(loaded.predict(X), est.predict(X))
        assert loaded.coef_.tolist() == public.coef_.tolist()
        assert (loaded.dp_epsilon_, loaded.dp_delta_) == (public.dp_epsilon_, public.dp_delta_)
        assert loaded.mechanism_ == public.mechanism_
        assert list(loaded.feature_names_in_) == ["a", "b", "c"]
        assert loaded.version == sklearn_pdp.__version__
        assert loaded.to_json() == public.to_json()
    document = json.loads(path.read_text())
    # a seed would let anyone recompute the noise: never written
    assert "random_state" not in json.dumps(document["params"])
    assert "n_jobs" not in document["params"]


def test_json_holds_the_declared_bounds_and_the_parameters():
    X, y = _frame_data()
    est = AdaSSPRegressor(epsilon=2.0, delta=1e-5, bounds_X=(-1, [1, 1, 2]), y_bound=(-2, 3),
                          random_state=0).fit(X, y)
    document = json.loads(est.public_model().to_json())
    assert document["format"] == "sklearn-pdp public linear model 1"
    assert document["estimator"] == "AdaSSPRegressor"
    assert document["bounds"] == {"data_norm": None, "bounds_X": [[-1.0] * 3, [1.0, 1.0, 2.0]],
                                  "y_bound": [-2.0, 3.0]}
    assert document["params"]["epsilon"] == 2.0 and document["params"]["delta"] == 1e-5
    assert (document["dp_epsilon"], document["dp_delta"]) == (est.dp_epsilon_, est.dp_delta_)
    assert document["coef"] == est.coef_.tolist() and document["intercept"] == est.intercept_


def test_bounds_read_from_the_data_are_not_written():
    X, y = _frame_data()
    with pytest.warns(PrivacyLeakWarning):
        est = AdaSSPRegressor(random_state=0).fit(X.to_numpy(), y)
    bounds = json.loads(est.public_model().to_json())["bounds"]
    assert bounds == {"data_norm": None, "bounds_X": None, "y_bound": None}


def test_tightened_public_model_without_declared_row_bounds_predicts():
    """Tightening the declared label range only, with data_norm read from the
    data: the public model clips with what it holds (no bound on the rows,
    the read norm is private) and predicts, through JSON too; on rows within
    the data's norm as the estimator does (its clip crashed on None before)."""
    X, y = _frame_data(3000)
    X = X.to_numpy()
    with pytest.warns(PrivacyLeakWarning):
        # epsilon 3: the label's four quantiles on 300 rows at their uncapped level
        est = AdaSSPRegressor(epsilon=3.0, y_bound=5.0, tighten_bounds=True,
                              random_state=0).fit(X, y)
    public = est.public_model()
    assert public.clip and public.bounds["data_norm"] is None
    # the share of the rows the bounds were released from, not the default's None
    assert public.params["tighten_share"] == pytest.approx(0.1)
    assert public.to_json().count(f'"tighten_share": {public.params["tighten_share"]!r}') == 1
    assert_allclose(public.predict(X[:10]), est.predict(X[:10]), rtol=1e-12)
    far = 10.0 * X[:10]  # beyond the private norm: not clipped to it
    assert_allclose(public.predict(far), far @ est.coef_ + est.intercept_, rtol=1e-12)
    loaded = PublicLinearModel.from_json(public.to_json())
    assert_array_equal(loaded.predict(far), public.predict(far))


def test_no_guarantee_is_written_as_a_string_and_read_back():
    X, y = _frame_data()
    with pytest.warns(PrivacyLeakWarning, match="no differential privacy"):
        est = RandomProjectionRegressor(variant="paper", data_norm=2.0, y_bound=2.0,
                                        random_state=0).fit(X, y)
    assert est.dp_epsilon_ == np.inf
    text = est.public_model().to_json()
    assert json.loads(text)["dp_epsilon"] == "inf"  # strict JSON: no Infinity
    assert PublicLinearModel.from_json(text).dp_epsilon_ == np.inf


def test_from_json_refuses_other_documents(tmp_path):
    with pytest.raises(ValueError, match="not a sklearn-pdp public model"):
        PublicLinearModel.from_json('{"coef": [1.0]}')
    path = tmp_path / "other.json"
    path.write_text("[1, 2]")
    with pytest.raises(ValueError, match="not a sklearn-pdp public model"):
        PublicLinearModel.from_json(path)


# ------------------------------------------------ noise source ------------


def test_secure_noise_is_the_default_and_ignores_the_global_seed():
    X, y = _frame_data()
    assert sklearn_pdp.get_config()["secure_noise"] is True
    est = AdaSSPRegressor(epsilon=5.0, bounds_X=(-1, 1), y_bound=(-2, 3))
    fits = []
    for _ in range(2):
        np.random.seed(0)
        fits.append(clone(est).fit(X, y))
    assert not np.array_equal(fits[0].coef_, fits[1].coef_)
    # the losses are the data's, not the draw's
    assert_array_equal(fits[0].pdp_losses_, fits[1].pdp_losses_)
    # an int seed stays reproducible, whatever the global seed
    np.random.seed(1)
    a = clone(est).set_params(random_state=7).fit(X, y)
    np.random.seed(2)
    b = clone(est).set_params(random_state=7).fit(X, y)
    assert_array_equal(a.coef_, b.coef_)
    # the old behaviour, opted into: numpy's global generator
    with sklearn_pdp.config_context(secure_noise=False):
        legacy = []
        for _ in range(2):
            np.random.seed(0)
            legacy.append(clone(est).fit(X, y).coef_)
    assert_array_equal(*legacy)
    assert sklearn_pdp.get_config()["secure_noise"] is True


def test_encoding_predicts_on_raw_columns_and_survives_json():
    """With an encoding, the model encodes a table's raw columns (declared
    categories, the first dropped; numeric columns as they are) and reads the
    same from its JSON; numbers given as text categories compare as text."""
    encoding = {"columns": ["grade", "x"], "categories": {"grade": ["1", "2", "3"]},
                "drop": "first", "read_from_data": []}
    model = PublicLinearModel([2.0, -1.0, 0.5], 1.0, 1.0, 1e-6, "AdaSSPRegressor",
                              feature_names=["grade_2", "grade_3", "x"], encoding=encoding)
    table = pd.DataFrame({"x": [0.0, 2.0, 4.0], "grade": [1, 2, 3], "y": [0, 0, 0]})
    expected = np.array([1.0, 1.0 + 2.0 + 1.0, 1.0 - 1.0 + 2.0])
    assert_array_equal(model.predict(table), expected)
    loaded = PublicLinearModel.from_json(model.to_json())
    assert loaded.encoding == encoding
    assert_array_equal(loaded.predict(table), expected)
    # the encoded columns still work; an encoding that does not give the
    # released features is an error
    encoded = pd.DataFrame([[0, 0, 0.0], [1, 0, 2.0], [0, 1, 4.0]],
                           columns=["grade_2", "grade_3", "x"], dtype=float)
    assert_allclose(loaded.predict(encoded), expected)
    wrong = model.set_params(feature_names=["grade_2", "grade_4", "x"])
    with pytest.raises(ValueError, match="not the released"):
        wrong.predict(table)


def test_a_raw_table_without_an_input_column_names_it():
    """A table that lacks one of the encoding's raw columns is told which,
    not scikit-learn's feature-name mismatch (which called the label unseen
    and the one-hot names missing); unnamed rows are still checked by
    count."""
    encoding = {"columns": ["grade", "x", "z"], "categories": {"grade": ["1", "2", "3"]},
                "drop": "first", "read_from_data": []}
    model = PublicLinearModel([2.0, -1.0, 0.5, 1.0], 1.0, 1.0, 1e-6, "AdaSSPRegressor",
                              feature_names=["grade_2", "grade_3", "x", "z"],
                              encoding=encoding)
    table = pd.DataFrame({"grade": [1, 2], "y": [0.0, 1.0], "z": [1.0, 2.0]})
    with pytest.raises(ValueError, match=r"^X has no column 'x': the released model takes "
                                         r"the raw columns grade, x, z"):
        model.predict(table)
    with pytest.raises(ValueError, match=r"^X has no column 'grade', 'x'"):
        model.predict(table.drop(columns="grade"))
    with pytest.raises(ValueError, match="expecting 4 features"), \
            pytest.warns(UserWarning, match="does not have valid feature names"):
        model.predict(np.zeros((2, 3)))
