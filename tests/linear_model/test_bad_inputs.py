"""Bad-input matrix over every public estimator of ``test_common.ESTIMATORS``.

Every case either gives a valid private result (finite predictions, per-instance
losses that are never NaN and never above the data-independent guarantee, the
same release as the equivalent clean input) or a clear error that names the
offending argument. Parameter cases are keyed by parameter name, so an
estimator gets exactly the cases of the parameters it has.

Regressors, searches and reports are checked through what they release: the
model (``_released``: the estimator itself, or the one a meta-estimator
selected or reports on), its predictions, the per-instance losses, the
guarantee, and a transformer's report of new rows.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose
from sklearn.base import clone
from sklearn.model_selection import ParameterGrid
from sklearn.pipeline import make_pipeline
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import has_fit_parameter

from sklearn_pdp._registry import REGRESSORS
from sklearn_pdp import (
    FallbackWarning,
    OutputPerturbationRegressor,
    PrivacyLeakWarning,
    config_context,
)

from ..conftest import audit_if_slow, unbounded_data
from .test_common import ESTIMATORS

DATA_NORM, Y_BOUND = 3.0, 2.0

pytestmark = pytest.mark.filterwarnings("ignore::sklearn_pdp.PrivacyLeakWarning")
# 40 rows (and the degenerate ones) are too few for slopes at most budgets:
# the label mean alone is released by design
MEAN_RELEASED = pytest.mark.filterwarnings("ignore::sklearn_pdp.FallbackWarning")
# the degenerate and far-out rows lie outside the declared bounds on purpose
ROWS_CLIPPED = pytest.mark.filterwarnings("ignore::sklearn_pdp.BoundsWarning")


def _name(est):
    return type(est).__name__


def _configured(est, seed=0, **params):
    """A clone with declared bounds and ``seed`` wherever it has them (nested too)."""
    est = clone(est)
    keys = est.get_params(deep=True)
    fixed = {"data_norm": DATA_NORM, "y_bound": Y_BOUND, "random_state": seed}
    est.set_params(**{k: fixed[k.split("__")[-1]] for k in keys if k.split("__")[-1] in fixed})
    return est.set_params(**params)


def _clean_data(n=40, d=3, seed=0):
    """The clean data that the cases below corrupt (needed at import time)."""
    return unbounded_data(n, d, seed, coef_scale=0.5, noise=0.2)


def _released(est):
    """The fitted regressor whose model ``est`` publishes: the one a search
    selected, the one a report describes, or ``est`` itself."""
    return getattr(est, "best_estimator_", getattr(est, "estimator_", est))


def _predictions(est, X):
    """Predictions of the released model, through ``est`` when it predicts."""
    if hasattr(est, "predict"):
        return est.predict(X)
    model = _released(est)  # fitted by ``est`` on the validated array
    return model.predict(X if hasattr(model, "feature_names_in_") else np.asarray(X))


def _check_valid(est, X, y):
    """The fitted estimator is a coherent private release for (X, y)."""
    n = len(y)
    model = _released(est)
    assert np.all(np.isfinite(_predictions(est, X)))
    if hasattr(model, "coef_"):
        assert np.all(np.isfinite(model.coef_)) and np.isfinite(model.intercept_)
    if hasattr(est, "transform"):  # a report on people who could be added
        report = est.transform(X)
        assert report.shape[0] == n
        assert not np.any(np.isnan(report)) and np.all(report >= 0)
    losses = getattr(est, "pdp_losses_", None)
    if losses is not None:
        assert losses.shape == (n,)
        assert not np.any(np.isnan(losses)) and np.all(losses >= 0)
    if hasattr(est, "dp_epsilon_"):
        assert not np.isnan(est.dp_epsilon_) and est.dp_epsilon_ >= 0
        assert 0 <= est.dp_delta_ < 1
        # the guarantee over the whole domain covers every row of this data set
        delta = getattr(est, "delta", None)
        if delta is None:  # a report at its estimator's own delta
            delta = getattr(model, "delta", None)
        if losses is not None and delta is not None and est.dp_delta_ <= delta:
            assert np.all(losses <= est.dp_epsilon_ * (1 + 1e-9) + 1e-12)


def _assert_same_release(a, b, X_a, X_b):
    """Two fits on equivalent inputs (same seed) released the same thing.

    Rounding-level differences of the data may move the epsilon search
    within its tolerance (1e-8 relative), hence rtol=1e-7 on the losses.
    """
    assert_allclose(_predictions(a, X_a), _predictions(b, X_b), rtol=1e-9, atol=1e-12)
    assert getattr(a, "best_params_", None) == getattr(b, "best_params_", None)
    for attr in ("pdp_losses_", "dp_epsilon_"):
        if hasattr(a, attr):
            assert_allclose(getattr(a, attr), getattr(b, attr), rtol=1e-7, atol=1e-12)
    if hasattr(a, "transform"):
        assert_allclose(a.transform(X_a), b.transform(X_b), rtol=1e-7, atol=1e-12)


def _unit_rows(X):
    return X / np.linalg.norm(X, axis=1, keepdims=True)


# ------------------------------------------------------------- errors ------
# (X, y) -> the scikit-learn error that must come out of fit, unchanged.


def _with(arr, value):
    arr = arr.copy()
    arr[(1,) * arr.ndim] = value
    return arr


X0, Y0 = _clean_data()
FIT_ERRORS = {
    "nan_in_X": (_with(X0, np.nan), Y0, ValueError, "Input X contains NaN"),
    "inf_in_X": (_with(X0, np.inf), Y0, ValueError, "Input X contains infinity"),
    "nan_in_y": (X0, _with(Y0, np.nan), ValueError, "Input y contains NaN"),
    "inf_in_y": (X0, _with(Y0, -np.inf), ValueError, "Input y contains infinity"),
    "pandas_missing": (
        pd.DataFrame({"a": pd.array([1, None] + [2] * 38, dtype="Int64"), "b": X0[:, 0]}),
        Y0, ValueError, "Input X contains NaN",
    ),
    "empty": (X0[:0], Y0[:0], ValueError, "0 sample"),
    "no_features": (X0[:, :0], Y0, ValueError, "0 feature"),
    "sparse_X": (sp.csr_matrix(X0), Y0, TypeError, "Sparse data was passed for X"),
    "1d_X": (X0[:, 0], Y0, ValueError, "Expected 2D array"),
    "2d_y": (X0, np.c_[Y0, Y0], ValueError, "y should be a 1d array"),
    "inconsistent_lengths": (X0, Y0[:-1], ValueError, "inconsistent numbers of samples"),
    "complex_X": (X0 + 1j, Y0, ValueError, "Complex data not supported"),
    "string_y": (X0, np.array(["a"] * len(Y0)), ValueError, "y must contain real numbers"),
    "complex_y": (X0, Y0 + 1j, ValueError, "Complex data not supported"),
    # scikit-learn's words first, then the way out
    "text_column": (
        pd.DataFrame({"a": X0[:, 0], "region": ["south"] * len(Y0)}), Y0, ValueError,
        "could not convert string to float: 'south'. A text column must be encoded "
        r"first: one-hot encode it with declared categories",
    ),
}


@pytest.mark.parametrize("case", list(FIT_ERRORS))
@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_name)
def test_invalid_data_gives_a_clear_error(estimator, case):
    X, y, error, message = FIT_ERRORS[case]
    with pytest.raises(error, match=message):
        _configured(estimator).fit(X, y)


@MEAN_RELEASED
@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_name)
def test_sample_weight_is_refused_with_why(estimator):
    """Weights would change every row's sensitivity: refused by name and
    reason, directly and through a Pipeline (which passes fit parameters
    on); sample_weight=None is unit weights. fit's signature has no
    sample_weight, so scikit-learn routes no weights to it and skips its
    weight checks."""
    X, y = _clean_data()
    est = _configured(estimator)
    with pytest.raises(TypeError, match=r"does not take sample_weight: per-row weights "
                                        r"change every row's sensitivity"):
        est.fit(X, y, sample_weight=np.ones(len(y)))
    with pytest.raises(TypeError, match="sample_weight"):
        make_pipeline(clone(est)).fit(X, y, **{
            f"{_name(est).lower()}__sample_weight": np.ones(len(y))})
    with pytest.raises(TypeError, match=r"takes X and y only, got copy_X"):
        est.fit(X, y, copy_X=True)
    assert not has_fit_parameter(est, "sample_weight")
    _assert_same_release(clone(est).fit(X, y, sample_weight=None), est.fit(X, y), X, X)


# ------------------------------------------------- degenerate data ------
# Valid but awkward data: the fit must succeed with a coherent release.


def _degenerate_cases():
    X, y = _clean_data()
    rng = np.random.default_rng(1)
    w = np.array([0.4, -0.3])
    collinear = np.c_[X[:, :1], 2 * X[:, :1], -X[:, :1]]
    span = rng.normal(size=(40, 2))
    return {
        "one_sample": (X[:1], y[:1]),
        "two_samples": (X[:2], y[:2]),
        "one_feature": (X[:, :1], y),
        "n_less_than_d": (rng.normal(size=(4, 9)), y[:4]),
        "constant_column": (np.c_[X, np.full(40, 1.5)], y),
        "duplicated_columns": (np.c_[X, X], y),
        "perfectly_collinear": (collinear, y),
        "nearly_collinear": (collinear + 1e-9 * rng.normal(size=collinear.shape), y),
        "y_in_span_of_X": (span, span @ w),
        "all_zero_X": (np.zeros_like(X), y),
        "constant_y": (X, np.full(40, 0.7)),
        "duplicated_rows": (np.repeat(X[:5], 8, axis=0), np.repeat(y[:5], 8)),
    }


DEGENERATE = _degenerate_cases()


def _assert_public_refusal(est, X, exc):
    """``exc`` reveals nothing beyond the public sample size: it is about the
    samples, and other data of that shape gets the same error."""
    assert "sample" in str(exc)
    for seed, scale in ((1, 1.0), (2, 100.0)):
        X_other, y_other = _clean_data(*X.shape, seed=seed)
        with pytest.raises(ValueError) as other:
            clone(est).fit(scale * X_other, scale * y_other)
        assert str(other.value) == str(exc)


@MEAN_RELEASED
@ROWS_CLIPPED
@pytest.mark.parametrize("case", list(DEGENERATE))
@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_name)
def test_degenerate_data_gives_a_valid_release(estimator, case):
    """A valid release; a report refuses a single sample (no other row to
    measure its leverage against), an error that depends on the public
    sample size only."""
    X, y = DEGENERATE[case]
    est = _configured(estimator)
    if case == "one_sample" and hasattr(est, "transform"):
        with pytest.raises(ValueError, match="needs at least 2 samples") as refusal:
            est.fit(X, y)
        _assert_public_refusal(est, X, refusal.value)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # numpy's: none reaches the user
        # a RuntimeWarning too: delta >= 1 / n on these few rows, as the module expects
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        est.fit(X, y)
    _check_valid(est, X, y)


@pytest.mark.parametrize("name", [pytest.param(name, marks=audit_if_slow(name))
                                  for name in REGRESSORS])
def test_identical_rows_at_a_size_that_fits_slopes(name):
    """Thousands of copies of one row (every statistic degenerate, every
    row's loss 0 or its cap): a valid release and no numpy warning."""
    X, y = np.full((4000, 3), 0.5), np.full(4000, 0.3)
    est = REGRESSORS[name](epsilon=2.0, bounds_X=([0.0] * 3, [1.0] * 3),
                           y_bound=(-1.0, 1.0), random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        warnings.simplefilter("error", RuntimeWarning)
        est.fit(X, y)
    _check_valid(est, X, y)


def _ridge_keys(est):
    return [k for k in est.get_params(deep=True) if k.split("__")[-1] == "alpha"]


@MEAN_RELEASED
@ROWS_CLIPPED
@pytest.mark.parametrize(
    "case", ["perfectly_collinear", "nearly_collinear", "n_less_than_d", "one_sample"]
)
@pytest.mark.parametrize(
    "estimator", [e for e in ESTIMATORS if _ridge_keys(e)], ids=_name
)
def test_singular_gram_without_ridge(estimator, case):
    """alpha = 0 (wherever it is set) on singular X^T X, with a raw noise
    level (no fallback to the mean): the mechanism is undefined there (OPS's
    posterior is improper, objective perturbation's objective not strongly
    convex), so the fit refuses with an error naming alpha: the parameter
    check's (output perturbation accepts no alpha = 0), or the singular
    Gram's, which asks for a larger alpha. A report refuses a single sample
    first, naming it. A search whose grid sets alpha > 0 on every candidate
    releases as usual."""
    X, y = DEGENERATE[case]
    est = _configured(estimator)
    est.set_params(**{k: 0.0 for k in _ridge_keys(est)})
    grid = list(ParameterGrid(getattr(est, "param_grid", {})))
    if grid and all(params.get("alpha", 0.0) > 0 for params in grid):
        est.fit(X, y)
        _check_valid(est, X, y)
        return
    if case == "one_sample" and hasattr(est, "transform"):
        message = "needs at least 2 samples, got n_samples=1"
    elif isinstance(est, OutputPerturbationRegressor):
        message = "The 'alpha' parameter of OutputPerturbationRegressor must be a float"
    else:
        message = "singular or too ill-conditioned .* needs a larger alpha"
    with pytest.raises(ValueError, match=message):
        est.fit(X, y)


@ROWS_CLIPPED
@pytest.mark.parametrize("case", ["perfectly_collinear", "n_less_than_d", "duplicated_columns"])
def test_singular_gram_with_alpha_zero_and_a_budget(case):
    """With an epsilon budget, alpha = 0 cannot meet it (a row alone in a
    direction of the domain has leverage 1): the fit degrades to what the
    budget buys, with a FallbackWarning naming alpha=0, the same message on
    other data of that shape (it depends on public quantities only), finite
    exact losses within the budget."""
    from sklearn_pdp import OPSRegressor

    X, y = DEGENERATE[case]
    # on the declared bounds: tightened (at epsilon 1e4), the message names
    # the model part's size, which other data of that shape splits otherwise
    est = _configured(OPSRegressor(alpha=0.0, tighten_bounds=False))
    for epsilon in (1.0, 1e4):
        # at epsilon 1 these few rows release the label mean in any case
        with pytest.warns(FallbackWarning, match="alpha=0" if epsilon > 1 else None) as caught:
            est.set_params(epsilon=epsilon).fit(X, y)
        assert est.dp_epsilon_ <= epsilon
        assert np.all(np.isfinite(est.pdp_losses_)) and np.all(est.pdp_losses_ <= epsilon)
        assert est.mean_only_ or est.alpha_ > 0
        with pytest.warns(FallbackWarning) as other:
            clone(est).fit(*_clean_data(*X.shape, seed=3))
        message = [str(w.message) for w in caught if w.category is FallbackWarning]
        assert message == [str(w.message) for w in other if w.category is FallbackWarning]


def _delta_keys(est):
    return [k for k in est.get_params(deep=True) if k.split("__")[-1] == "delta"]


@MEAN_RELEASED
@pytest.mark.parametrize("estimator", [e for e in ESTIMATORS if _delta_keys(e)], ids=_name)
def test_delta_of_at_least_one_over_n_warns(estimator):
    """delta >= 1/n permits publishing a whole record: a PrivacyLeakWarning
    naming 1 / n_samples; none just below."""
    X, y = _clean_data(n=40)
    est = _configured(estimator)
    est.set_params(**{k: 0.5 for k in _delta_keys(est)})
    with pytest.warns(PrivacyLeakWarning, match="1 / n_samples"):
        est.fit(X, y)
    X, y = _clean_data(n=400)
    est.set_params(**{k: 1e-3 for k in _delta_keys(est)})
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*1 / n_samples", category=PrivacyLeakWarning)
        est.fit(X, y)


# ------------------------------------------- equivalent representations ------
# Each case maps clean float64 data to another input that must give the same
# release with the same seed: conversions, containers, and clipping.


def _far_outside(X, y, factor):
    """Rows and labels far beyond the bounds, and the clipped data they mean."""
    X_far, y_far = X.copy(), y.copy()
    # every third row: some land in each part of a search's random split
    rows = np.arange(0, len(y), 3)
    X_far[rows] = _unit_rows(X[rows]) * DATA_NORM * factor
    y_far[rows] = np.sign(y[rows]) * Y_BOUND * factor
    X_clip, y_clip = X_far.copy(), y_far.copy()
    X_clip[rows] = _unit_rows(X[rows]) * DATA_NORM
    y_clip[rows] = np.sign(y[rows]) * Y_BOUND
    return (X_far, y_far), (X_clip, y_clip)


def _equivalent_cases():
    X, y = _clean_data()
    Xi, yi = np.round(X * 10), np.round(y * 10)
    names = [f"feature_{j}" for j in range(X.shape[1])]
    return {
        "integer": ((Xi.astype(np.int64), yi.astype(np.int32)), (Xi, yi)),
        "float32": (
            (X.astype(np.float32), y.astype(np.float32)),
            (X.astype(np.float32).astype(float), y.astype(np.float32).astype(float)),
        ),
        "pandas_named": ((pd.DataFrame(X, columns=names), pd.Series(y, name="y")), (X, y)),
        "pandas_unnamed": ((pd.DataFrame(X), pd.Series(y)), (X, y)),
        "list_of_lists": ((X.tolist(), y.tolist()), (X, y)),
        "fortran_order": ((np.asfortranarray(X), y), (X, y)),
        "far_outside_bounds": _far_outside(X, y, 1e6),
        "near_float_max": _far_outside(X, y, 1e300),
    }


EQUIVALENT = _equivalent_cases()


@MEAN_RELEASED
@ROWS_CLIPPED
@pytest.mark.parametrize("case", list(EQUIVALENT))
@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_name)
def test_equivalent_inputs_give_the_same_release(estimator, case):
    (X, y), (X_ref, y_ref) = EQUIVALENT[case]
    est = _configured(estimator).fit(X, y)
    ref = _configured(estimator).fit(X_ref, y_ref)
    X_ref = np.asarray(X_ref, dtype=float)
    _check_valid(ref, X_ref, y_ref)
    # predict in the fitted container (feature names); on the clipped rows
    X_pred = X if isinstance(X, pd.DataFrame) else X_ref
    _assert_same_release(est, ref, X_pred, X_ref)
    if case == "pandas_named":
        assert list(est.feature_names_in_) == list(X.columns)
    else:
        assert not hasattr(est, "feature_names_in_")


# ------------------------------------------------------ parameters ------
# Keyed by parameter name: an estimator gets the cases of the parameters it has.
# NaN must be rejected too (scikit-learn's Interval does, but only for Real
# constraints: these cases catch a constraint that lets it through).

BAD_PARAMETERS = {
    "epsilon": [0.0, -1.0, np.nan, "1"],
    "delta": [0.0, -1e-6, 1.0, 1.5, np.nan],
    "gamma": [0.0, -1.0, np.nan, np.inf],
    # (a kappa beyond the paper's constraint is not invalid: the fit falls back)
    "kappa": [0.0, -1.0, np.nan],
    "sigma": [0.0, -1.0, np.nan, np.inf],
    "alpha": [-1e-3, np.nan, np.inf],
    "data_norm": [0.0, -1.0, np.nan, np.inf, "3"],
    "y_bound": [0.0, -1.0, np.nan, np.inf],
    "radius": [-1.0, np.nan],
    "n_components": [0, -1, 1.5, np.nan],
    "noise": ["uniform", None],
    "variant": ["bogus", None],
    "fit_intercept": ["yes", None],
}


def _parameter_cases():
    for est in ESTIMATORS:
        params = est.get_params(deep=False)
        for name, values in BAD_PARAMETERS.items():
            if name in params:
                for value in values:
                    yield pytest.param(est, name, value, id=f"{_name(est)}-{name}={value!r}")


@pytest.mark.parametrize("estimator, name, value", list(_parameter_cases()))
def test_invalid_parameter_names_the_parameter(estimator, name, value):
    X, y = _clean_data()
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        _configured(estimator, **{name: value}).fit(X, y)


@pytest.mark.parametrize("bound", ["data_norm", "y_bound"])
@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_name)
def test_bound_ratio_must_be_representable(estimator, bound):
    """coef_ = theta * y_bound / data_norm: refused before any noise is drawn,
    wherever the bounds are declared (a meta-estimator's inner estimator)."""
    X, y = _clean_data()
    est = _configured(estimator)
    keys = [k for k in est.get_params(deep=True) if k.split("__")[-1] == bound]
    assert keys
    with pytest.raises(ValueError, match="y_bound / data_norm"):
        est.set_params(**{k: 1e-320 for k in keys}).fit(X, y)


# ------------------------------------------------------- pdp_epsilon ------

PDP_EPSILON_ERRORS = {
    "nan_in_X": (lambda X, y: (_with(X, np.nan), y), "Input X contains NaN"),
    "wrong_n_features": (lambda X, y: (X[:, :2], y), "features"),
    "2d_y": (lambda X, y: (X, np.c_[y, y]), "1d array"),
    "nan_in_y": (lambda X, y: (X, _with(y, np.nan)), "Input y contains NaN"),
    "inconsistent_lengths": (lambda X, y: (X, y[:-1]), "inconsistent numbers"),
    "sparse_X": (lambda X, y: (sp.csr_matrix(X), y), "Sparse data"),
}


@MEAN_RELEASED
@pytest.mark.parametrize("case", list(PDP_EPSILON_ERRORS))
@pytest.mark.parametrize(
    "estimator", [e for e in ESTIMATORS if hasattr(e, "pdp_epsilon")], ids=_name
)
def test_pdp_epsilon_bad_targets(estimator, case):
    X, y = _clean_data()
    est = _configured(estimator).fit(X, y)
    make, message = PDP_EPSILON_ERRORS[case]
    with pytest.raises((ValueError, TypeError), match=message):
        est.pdp_epsilon(*make(X[:6], y[:6]))


TRANSFORM_ERRORS = {
    case: PDP_EPSILON_ERRORS[case]
    for case in ("nan_in_X", "wrong_n_features", "sparse_X")
}


@MEAN_RELEASED
@pytest.mark.parametrize("case", list(TRANSFORM_ERRORS))
@pytest.mark.parametrize(
    "estimator", [e for e in ESTIMATORS if hasattr(e, "transform")], ids=_name
)
def test_transform_bad_rows(estimator, case):
    X, y = _clean_data()
    est = _configured(estimator).fit(X, y)
    make, message = TRANSFORM_ERRORS[case]
    with pytest.raises((ValueError, TypeError), match=message):
        est.transform(make(X[:6], y[:6])[0])


@MEAN_RELEASED
@pytest.mark.parametrize(
    "estimator", [e for e in ESTIMATORS if hasattr(e, "transform")], ids=_name
)
def test_transform_of_far_out_rows_is_that_of_the_clipped_ones(estimator):
    X, y = _clean_data()
    est = _configured(estimator).fit(X, y)
    (X_far, _), (X_clip, _) = _far_outside(X[:20], y[:20], 1e300)
    far = est.transform(X_far)
    assert not np.any(np.isnan(far))
    assert_allclose(far, est.transform(X_clip), rtol=1e-7)


@MEAN_RELEASED
@pytest.mark.parametrize(
    "estimator", [e for e in ESTIMATORS if hasattr(e, "pdp_epsilon")], ids=_name
)
def test_pdp_epsilon_of_far_out_targets_is_that_of_the_clipped_ones(estimator):
    X, y = _clean_data()
    est = _configured(estimator).fit(X, y)
    (X_far, y_far), (X_clip, y_clip) = _far_outside(X[:20], y[:20], 1e300)
    far = est.pdp_epsilon(X_far, y_far)
    assert not np.any(np.isnan(far))
    assert_allclose(far, est.pdp_epsilon(X_clip, y_clip), rtol=1e-7)
    assert_allclose(est.pdp_epsilon(X_far), est.pdp_epsilon(X_clip), rtol=1e-7)


# ------------------------------------------------------- noise source ------


@MEAN_RELEASED
@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_name)
def test_secure_noise_ignores_the_global_seed(estimator):
    """secure_noise: random_state=None draws from a fresh secret seed, so that
    np.random.seed no longer fixes the noise; an explicit seed still does."""
    X, y = _clean_data()
    est = _configured(estimator, seed=None)
    fits = []
    for secure in (False, True):
        with config_context(secure_noise=secure):
            for _ in range(2):
                np.random.seed(0)
                fits.append(_predictions(clone(est).fit(X, y), X))
    assert_allclose(fits[0], fits[1])  # the global seed controls the default
    assert not np.allclose(fits[2], fits[3])
    with config_context(secure_noise=True):
        a, b = (_predictions(_configured(estimator, seed=7).fit(X, y), X) for _ in "ab")
    assert_allclose(a, b)


def _interval_parameters():
    """Every parameter whose constraints include a numeric Interval."""
    for est in ESTIMATORS:
        for name, constraints in type(est)._parameter_constraints.items():
            if any(isinstance(c, Interval) for c in constraints):
                yield pytest.param(est, name, id=f"{_name(est)}-{name}")


@pytest.mark.parametrize("estimator, name", list(_interval_parameters()))
def test_nan_is_rejected_for_every_numeric_parameter(estimator, name):
    """scikit-learn's Interval rejects NaN (it compares with the ends): make
    sure no numeric parameter, including ones added later, lets NaN through."""
    X, y = _clean_data()
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        _configured(estimator, **{name: np.nan}).fit(X, y)
