"""The fit template's domain stage: tightening inside scikit-learn's
meta-estimators, feature names through a tightened fit, the kind of each
per-instance number and the stage's fitted attributes."""

import json
import warnings

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from sklearn_pdp import OutputPerturbationRegressor, PDPReport
from sklearn_pdp._registry import REGRESSORS
from sklearn_pdp.model_selection import PrivateGridSearchCV

from ..conftest import audit_if_slow, every_regressor

# Small data keep these tests fast: some mechanisms release the label mean
# there (random projection always), which is what their fallback says. The
# stage is the same whatever the release.
pytestmark = pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.FallbackWarning")


# the stage is the same whatever the release: where a test multiplies the
# fits, AdaOPS's (OPS's default release too) run under the audit marker
STAGE_CASES = [pytest.param(cls, id=name, marks=pytest.mark.audit if name in ("ops", "adaops")
                            else audit_if_slow(name))
               for name, cls in REGRESSORS.items()]


def _data(n=4000, seed=0):
    """Rows well inside a declared data_norm and label range: five
    quantiles (the norm's, the label's four), enough rows at epsilon 2 for
    tightening=True to apply."""
    rng = np.random.RandomState(seed)
    X = rng.uniform(-1, 1, size=(n, 2))
    y = X @ [1.0, -2.0] + 0.1 * rng.randn(n)
    return X, y


def _tightened(cls, **params):
    return cls(epsilon=2.0, data_norm=2.0, y_bound=5.0, tighten_bounds=True,
               random_state=0, **params)


@pytest.mark.parametrize("cls", STAGE_CASES)
# cross_val_score's halves are too few rows for the label's quantiles: those
# fits keep the declared bounds, with tighten_bounds=True's warning
@pytest.mark.filterwarnings("ignore:tighten_bounds=True:sklearn_pdp.exceptions.BoundsWarning")
def test_tightening_fits_inside_meta_estimators(cls):
    """A tightened estimator fits inside a Pipeline, scikit-learn's
    GridSearchCV and cross_val_score (which set private attributes around
    fit), as it fits alone; private attributes it did not set survive."""
    X, y = _data()
    alone = _tightened(cls).fit(X, y)
    assert hasattr(alone, "bounds_release_")
    pipe = make_pipeline(FunctionTransformer(), _tightened(cls)).fit(X, y)
    assert np.array_equal(pipe[-1].coef_, alone.coef_)
    assert np.array_equal(pipe[-1].pdp_losses_, alone.pdp_losses_)
    search = GridSearchCV(_tightened(cls), {"tighten_share": [0.2]}, cv=2,
                          error_score="raise").fit(X, y)
    assert search.best_estimator_.bounds_epsilon_ > 0
    scores = cross_val_score(_tightened(cls), X, y, cv=2, error_score="raise")
    assert np.all(np.isfinite(scores))
    marked = _tightened(cls)
    marked._set_by_a_caller = "kept"
    assert marked.fit(X, y)._set_by_a_caller == "kept"


# the candidates are fitted on the released bounds, which clip the tails
# by design (a share of the rows up to the quantiles' level)
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.BoundsWarning")
@pytest.mark.parametrize("cls", STAGE_CASES)
def test_private_search_tightens_every_estimator(cls):
    X, y = _data(7200)  # the search's bounds: a tenth of epsilon on every row
    search = PrivateGridSearchCV(_tightened(cls), {"fit_intercept": [True, False]},
                                 epsilon=2.0, random_state=0).fit(X, y)
    assert search.bounds_epsilon_ > 0 and search.dp_epsilon_ <= 2.0
    assert search.pdp_kind_ == "bound"
    assert np.all(search.pdp_losses_ <= search.dp_epsilon_ + 1e-12)


@pytest.mark.parametrize("cls", every_regressor())
def test_tightened_fit_keeps_feature_names(cls):
    pd = pytest.importorskip("pandas")
    X, y = _data()
    df = pd.DataFrame(X, columns=["age", "income"])
    est = _tightened(cls).fit(df, y)
    assert list(est.feature_names_in_) == ["age", "income"]
    assert json.loads(est.public_model().to_json())["feature_names"] == ["age", "income"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "fitted without feature names"
        pred = est.predict(df)
    # rows clipped to the released bounds, as the training rows were
    assert np.allclose(pred, est.domain_stage().clip(X) @ est.coef_ + est.intercept_,
                       rtol=1e-12, atol=0)


@pytest.mark.parametrize("cls", every_regressor())
def test_pdp_kind_and_the_stage_attributes(cls):
    """Declared bounds: the mechanisms' losses are exact, the model has the
    whole budget and no row pays for bounds. Tightened: the rows split
    between the bounds and the model, each row's loss its part's given the
    released bounds (conditional)."""
    X, y = _data()
    declared = cls(epsilon=2.0, data_norm=2.0, y_bound=5.0, tighten_bounds=False,
                   random_state=0).fit(X, y)
    assert declared.pdp_kind_ == "exact"
    assert (declared.model_epsilon_, declared.model_delta_) == (
        declared.dp_epsilon_, declared.dp_delta_)
    assert np.array_equal(declared.bounds_losses_, np.zeros(X.shape[0]))
    assert declared.model_rows_.dtype == bool and declared.model_rows_.all()
    assert not hasattr(declared, "bounds_release_")

    est = _tightened(cls).fit(X, y)
    assert est.pdp_kind_ == "conditional"
    rel, rows = est.bounds_release_, est.model_rows_
    assert est.dp_epsilon_ == max(rel.epsilon, est.model_epsilon_) <= 2.0
    assert est.dp_delta_ == est.model_delta_ and rel.event_ == 0.0
    assert rows.shape == (X.shape[0],) and rows.dtype == bool and 0 < rows.sum() < X.shape[0]
    assert np.array_equal(est.bounds_losses_[~rows], rel.row_epsilon(X, y)[~rows])
    assert np.array_equal(est.bounds_losses_[rows], np.zeros(rows.sum()))
    assert np.array_equal(est.pdp_losses_[~rows], est.bounds_losses_[~rows])
    # the released ranges are those the model used
    # (the label's only where its level is the tail guard's, uncapped)
    assert est.data_norm_ < 2.0 and (est.y_bound_ != 5.0) == ("y" in rel.source)
    assert est.domain_scaler().data_norm == est.data_norm_
    # a refit on the declared bounds keeps nothing of the tightened fit
    est.set_params(tighten_bounds=False).fit(X, y)
    assert not hasattr(est, "bounds_release_") and est.pdp_kind_ == "exact"
    assert np.array_equal(est.pdp_losses_, declared.pdp_losses_)


@pytest.mark.parametrize("tighten", ["auto", False])
def test_output_perturbation_with_a_radius_reports_bounds(tighten):
    """The ball's losses are bounds, tightened or not (the weaker kind)."""
    X, y = _data()
    est = OutputPerturbationRegressor(epsilon=2.0, alpha=1.0, radius=0.5, data_norm=20.0,
                                      y_bound=40.0, tighten_bounds=tighten,
                                      random_state=0).fit(X, y)
    assert est.model_rows_.all() == (tighten is False)
    assert est.pdp_kind_ == "bound"


def test_report_summary_and_plot_say_the_kind():
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    X, y = _data()
    cls = REGRESSORS["ops"]
    exact = PDPReport(cls(epsilon=2.0, data_norm=2.0, y_bound=5.0, tighten_bounds=False,
                              random_state=0)).fit(X, y)
    given = PDPReport(_tightened(cls)).fit(X, y)
    assert exact.summary_["pdp_kind"] == "exact"
    assert given.summary_["pdp_kind"] == "conditional"
    ax = given.plot()
    assert "given the released bounds" in ax.get_ylabel()
    plt.close(ax.figure)
    bound = PDPReport(OutputPerturbationRegressor(
        epsilon=2.0, alpha=1.0, radius=0.5, data_norm=20.0, y_bound=40.0,
        tighten_bounds=False, random_state=0)).fit(X, y)
    ax = bound.plot()
    assert "at most" in ax.get_ylabel()
    plt.close(ax.figure)
    ax = exact.plot()
    assert "at most" not in ax.get_ylabel()
    plt.close(ax.figure)
