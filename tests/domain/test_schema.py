"""The declared schema: its encoder, the structured domain (categorical
columns as one share of the row norm), the estimators and the command line."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from sklearn.pipeline import make_pipeline

from sklearn_pdp import AdaSSPRegressor, PublicLinearModel, Schema
from sklearn_pdp.__main__ import main
from sklearn_pdp.accounting import gaussian_epsilon
from sklearn_pdp.domain._scaler import DomainScaler
from sklearn_pdp._registry import REGRESSORS
from sklearn_pdp.exceptions import FallbackWarning

from ..mechanisms.test_ssp import _ratio

SCHEMA = Schema({"age": (18, 90), "hours": (0, 80)},
                {"sector": ["private", "public", "self"], "region": ["n", "s", "e", "w"]},
                label="wage", label_range=(0, 100))


def _table(n=800, seed=0):
    rng = np.random.default_rng(seed)
    table = pd.DataFrame({
        "age": rng.uniform(18, 90, n), "hours": rng.uniform(0, 80, n),
        "sector": rng.choice(["private", "public", "self"], n),
        "region": rng.choice(["n", "s", "e", "w"], n),
    })
    table["wage"] = np.clip(10 + 0.3 * table.age + 0.4 * table.hours
                            + 15 * (table.sector == "self") + rng.normal(0, 5, n), 0, 100)
    return table


def _scaled(schema, X, fit_intercept=True):
    """The structured map of SPEC 12 from its definition: numeric columns to
    [-1, 1] (without an intercept through the origin: over the larger end's
    magnitude), indicators as they are, the row over sqrt(columns)."""
    m = len(schema.numeric) + len(schema.categorical)
    out, j = [], 0
    for column in schema.columns:
        if column in schema.numeric:
            low, high = schema.numeric[column]
            out.append((2 * X[:, j] - low - high) / (high - low) if fit_intercept
                       else X[:, j] / max(abs(low), abs(high)))
            j += 1
        else:
            k = len(schema.categorical[column]) - 1
            out += [X[:, j + i] for i in range(k)]
            j += k
    return np.column_stack(out) / np.sqrt(m)


def test_encoder_declares_everything_and_learns_nothing():
    table = _table(20)
    encoder = SCHEMA.encoder().set_output(transform="pandas")
    encoded = encoder.fit(table.iloc[:2]).transform(table)
    assert list(encoded.columns) == ["age", "hours", "sector_public", "sector_self",
                                     "region_s", "region_e", "region_w"]
    assert_allclose(encoded["age"], table["age"])
    assert_allclose(encoded["sector_self"], table["sector"] == "self")
    # the reference level is the all-zero block
    assert np.all(encoded.loc[table.region == "n", ["region_s", "region_e", "region_w"]] == 0)
    # an array with the columns in the schema's order encodes the same
    array = table[list(SCHEMA.columns)].to_numpy(dtype=object)
    assert_allclose(SCHEMA.encoder().fit_transform(array), encoded.to_numpy())
    with pytest.raises(ValueError, match="'sector'.*outside its declared categories"):
        SCHEMA.encoder().fit_transform(table.assign(sector="farm"))
    with pytest.raises(ValueError, match="no column 'hours'"):
        SCHEMA.encoder().fit(table.drop(columns="hours"))


@pytest.mark.parametrize("schema, message", [
    (lambda: Schema({"age": (5, 1)}), "numeric column 'age'"),
    (lambda: Schema({"age": (0, np.inf)}), "numeric column 'age'"),
    (lambda: Schema({}, {"sex": ["f"]}), "categorical column 'sex'"),
    (lambda: Schema({}, {"sex": ["f", "f"]}), "categorical column 'sex'"),
    (lambda: Schema({"a": (0, 1)}, {"a": ["x", "y"]}), "column 'a'"),
    (lambda: Schema({"a": (0, 1)}, label="y", label_range=(1, 1)), "label 'y'"),
    (lambda: Schema({"a": (0, 1)}, label="a"), "column 'a'"),
    (lambda: Schema.from_json('{"numeric": {"a": [0, 1]}, "colour": 1}'), "colour"),
])
def test_validation_names_the_column(schema, message):
    with pytest.raises(ValueError, match=message):
        schema()


def test_json_round_trip(tmp_path):
    schema = Schema({"a": (0, 1)}, {"c": [1, 2, 3]}, "y", (-1, 2), "id", order=["c", "a"])
    assert Schema.from_json(schema.to_json()) == schema
    schema.to_json(tmp_path / "schema.json")
    loaded = Schema.from_json(tmp_path / "schema.json")
    assert loaded == schema and loaded.feature_names() == ["c_2", "c_3", "a"]
    with pytest.raises(AttributeError, match="immutable"):
        schema.label = "z"


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_every_row_of_the_structured_domain_is_in_the_unit_ball(data):
    n_numeric = data.draw(st.integers(0, 4))
    levels = data.draw(st.lists(st.integers(2, 6), min_size=int(n_numeric == 0), max_size=3))
    schema = Schema({f"x{i}": (-1.0 - i, 2.0 + 3 * i) for i in range(n_numeric)},
                    {f"c{j}": list(range(k)) for j, k in enumerate(levels)})
    layout = schema.feature_layout()
    values = st.floats(-1e6, 1e6, allow_nan=False)
    rows = np.array(data.draw(st.lists(
        st.lists(values, min_size=layout.lower.size, max_size=layout.lower.size),
        min_size=1, max_size=5)))
    intercept = data.draw(st.booleans())
    scaler = DomainScaler(None, 1.0, intercept, (layout.lower, layout.upper), layout=layout)
    Xs = scaler.scale(rows)[:, :layout.lower.size]
    assert np.all(np.einsum("ij,ij->i", Xs, Xs) <= 1.0 + 1e-12)
    # the rows of the domain itself: scaled as SPEC 12 defines it, the
    # corners (numeric ends, one indicator per block) exactly on the sphere;
    # through the origin, the end of the larger magnitude
    clipped = scaler.clip(rows)
    assert_allclose(scaler.scale(clipped)[:, :layout.lower.size], Xs, atol=1e-12)
    far = np.broadcast_to(np.abs(layout.upper) >= np.abs(layout.lower), rows.shape)
    corner = np.where(rows > 0 if intercept else far, layout.upper, layout.lower)
    for block in layout.blocks:
        corner[:, block] = np.eye(block.size)[data.draw(st.integers(0, block.size - 1))]
    corner_scaled = scaler.scale(corner)[:, :layout.lower.size]
    assert_allclose(corner_scaled, _scaled(schema, corner, intercept), atol=1e-12)
    assert_allclose(np.einsum("ij,ij->i", corner_scaled, corner_scaled), 1.0)


def test_clip_projects_a_block_and_coefficients_invert_the_map():
    layout = SCHEMA.feature_layout()
    scaler = DomainScaler(None, (0, 100), True, (layout.lower, layout.upper), layout=layout)
    row = np.array([[100.0, -5.0, 1.0, 1.0, 0.0, 2.0, 0.0]])
    assert_allclose(scaler.clip(row), [[90, 0, 2**-0.5, 2**-0.5, 0, 1, 0]])
    theta = np.random.default_rng(0).normal(size=8)
    coef, intercept = scaler.unscale_coef(theta)
    X = SCHEMA.encoder().fit_transform(_table(30))
    assert_allclose(X @ coef + intercept, scaler.y_mid + scaler.y_half * (scaler.scale(X) @ theta))
    # an indicator's coefficient is not shifted by a midpoint: the reference
    # row's prediction does not involve it
    assert_allclose(coef[2:], theta[2:7] * 50 / np.sqrt(4))


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_adassp_losses_are_exact_on_the_structured_domain(fit_intercept):
    table = _table(1500)  # above the fallback to the label mean at epsilon 0.5
    X = SCHEMA.encoder().fit_transform(table)
    y = table["wage"].to_numpy()
    # through the origin without an intercept: labels over 100
    Xs = _scaled(SCHEMA, X, fit_intercept)
    ys = (y - 50) / 50 if fit_intercept else y / 100
    reg = AdaSSPRegressor(schema=SCHEMA, epsilon=0.5, fit_intercept=fit_intercept,
                          tighten_bounds=False, random_state=0).fit(X, y)
    assert reg.dp_epsilon_ <= 0.5
    for i in (0, 3, 17):
        assert_allclose(reg.pdp_losses_[i], gaussian_epsilon(reg.delta, _ratio(reg, Xs, ys, i)),
                        rtol=1e-9)
    # adding row 0 to the other rows
    added = AdaSSPRegressor(schema=SCHEMA, epsilon=0.5, fit_intercept=fit_intercept,
                            tighten_bounds=False, random_state=1).fit(X[1:], y[1:])
    assert_allclose(added.pdp_epsilon(X[:1], y[:1]),
                    [gaussian_epsilon(added.delta, _ratio(added, Xs, ys, 0))], rtol=1e-9)
    refit = AdaSSPRegressor(schema=SCHEMA, epsilon=0.5, fit_intercept=fit_intercept,
                            tighten_bounds=False, random_state=5).fit(X, y)
    assert_allclose(refit.pdp_losses_, reg.pdp_losses_)


def test_categorical_shares_differ_from_the_per_dummy_box():
    table = _table(900)
    X, y = SCHEMA.encoder().fit_transform(table), table["wage"].to_numpy()
    layout = SCHEMA.feature_layout()
    shares = AdaSSPRegressor(schema=SCHEMA, epsilon=1, random_state=0).fit(X, y)
    box = AdaSSPRegressor(bounds_X=(layout.lower, layout.upper), y_bound=(0, 100),
                          epsilon=1, random_state=0).fit(X, y)
    # a row in the reference levels sits at the centre of the indicators' share
    assert_allclose(shares.domain_scaler().scale(X[:1])[0, 2:7], X[0, 2:7] / 2)
    assert not np.allclose(shares.pdp_losses_, box.pdp_losses_)


@pytest.mark.parametrize("name", sorted(REGRESSORS))
def test_every_estimator_fits_with_a_schema_in_a_pipeline(name):
    table = _table(3000)
    pipe = make_pipeline(SCHEMA.encoder(),
                         REGRESSORS[name](schema=SCHEMA, epsilon=2.0, tighten_bounds=False,
                                          random_state=0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)  # a small budget may release the mean
        pipe.fit(table, table["wage"])
    est = pipe[-1]
    assert est.dp_epsilon_ <= 2.0 and np.all(est.pdp_losses_ <= est.dp_epsilon_ + 1e-9)
    assert_allclose(est.bounds_X_[0], SCHEMA.feature_layout().lower)
    public = PublicLinearModel.from_json(est.public_model().to_json())
    assert public.params["schema"] == SCHEMA.to_dict()
    # the published model predicts from the raw columns
    assert_allclose(public.predict(table), pipe.predict(table))


def test_schema_parameters_are_checked():
    table = _table(300)
    X, y = SCHEMA.encoder().fit_transform(table), table["wage"]
    with pytest.raises(ValueError, match="schema or data_norm / bounds_X"):
        AdaSSPRegressor(schema=SCHEMA, bounds_X=(0, 1)).fit(X, y)
    with pytest.raises(ValueError, match="label_range or y_bound"):
        AdaSSPRegressor(schema=SCHEMA, y_bound=1.0).fit(X, y)
    with pytest.raises(ValueError, match="schema.encoder"):
        AdaSSPRegressor(schema=SCHEMA).fit(X[:, :4], y)
    with pytest.raises(ValueError, match="schema.encoder"):
        AdaSSPRegressor(schema=SCHEMA).fit(table[["age", "hours"]], y)


# the released bounds clip the tails, of the fit and of its refit at them
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.BoundsWarning")
def test_tightened_fit_keeps_the_indicators_and_the_structure():
    table = _table(20000)
    X, y = SCHEMA.encoder().fit_transform(table), table["wage"].to_numpy()
    reg = AdaSSPRegressor(schema=SCHEMA, epsilon=1.0, tighten_bounds=True,
                          random_state=0).fit(X, y)
    assert reg.dp_epsilon_ <= 1.0 and np.all(reg.pdp_losses_ <= reg.dp_epsilon_ + 1e-9)
    lower, upper = reg.bounds_X_
    assert np.all(lower[2:] == 0) and np.all(upper[2:] == 1)
    assert reg.domain_scaler().layout.n_shares == 4
    # each row's loss is its part's given the bounds released: a bounds-part
    # row's own, a model-part row's that of the model declared at them, on
    # the same structure, fitted on the model part
    release, rows = reg.bounds_release_, reg.model_rows_
    at_released = AdaSSPRegressor(
        schema=SCHEMA.with_bounds(reg.bounds_X_, reg.y_bound_), epsilon=reg.model_epsilon_,
        delta=reg.model_delta_, tighten_bounds=False, random_state=0)
    at_released.fit(X[rows], y[rows])
    assert np.allclose(reg.pdp_losses_[rows], at_released.pdp_losses_, rtol=1e-10)
    assert np.array_equal(reg.pdp_losses_[~rows], release.row_epsilon(X, y)[~rows])


def test_command_line_schema_and_flags_build_the_same_release(tmp_path, capsys):
    table = _table(1500)
    table[["wage", "age", "region", "hours", "sector"]].to_csv(tmp_path / "t.csv", index=False)
    SCHEMA.to_json(tmp_path / "schema.json")
    common = ["--json", "--random-state", "0", "--epsilon", "2", "--tighten-bounds", "no"]
    assert main([str(tmp_path / "t.csv"), "--schema", str(tmp_path / "schema.json"),
                 "--save-model", str(tmp_path / "m.json"), *common]) == 0
    from_file = json.loads(capsys.readouterr().out)
    assert main([str(tmp_path / "t.csv"), "--target", "wage", "--features",
                 "age,hours,sector,region", "--categories", "sector=private,public,self",
                 "--categories", "region=n,s,e,w", "--bounds-x", "18,0", "90,80",
                 "--y-bound", "0,100", *common]) == 0
    from_flags = json.loads(capsys.readouterr().out)
    assert from_file["publishable"]["model"] == from_flags["publishable"]["model"]
    saved = PublicLinearModel.from_json((tmp_path / "m.json").read_text())
    assert Schema.from_dict(saved.params["schema"]).feature_names() == SCHEMA.feature_names()
    assert_allclose(saved.predict(table), SCHEMA.encoder().fit_transform(table) @ saved.coef_
                    + saved.intercept_)
    with pytest.raises(SystemExit):
        main([str(tmp_path / "t.csv"), "--schema", str(tmp_path / "schema.json"),
              "--bounds-x", "0", "1", *common])
    assert "give it without --bounds-x" in capsys.readouterr().err
