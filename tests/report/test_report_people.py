"""PDPReport with person keys (``groups``): per person where the fit has
person losses, per record otherwise (:doc:`/people`)."""

import numpy as np
import pytest
import sklearn
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from sklearn_pdp import AdaSSPRegressor, OPSRegressor, PDPReport, PrivacyLossDisplay
from sklearn_pdp.exceptions import FallbackWarning
from sklearn_pdp.model_selection import PrivateGridSearchCV

from ..conftest import UNIT_BOUNDS
from ..linear_model.test_people import random_panel


def _adassp(**params):
    return AdaSSPRegressor(epsilon=3.0, **UNIT_BOUNDS, tighten_bounds=False, random_state=0,
                           **params)


def test_report_is_per_person_with_groups():
    """The summary is over people (each counted once, their joint losses
    and kind); the rows' numbers and transform stay per record."""
    X, y, groups = random_panel(n_people=150, seed=3)
    est = _adassp().fit(X, y, groups=groups)
    report = PDPReport(_adassp(), thresholds=[1.0]).fit(X, y, groups=groups)
    assert_array_equal(report.person_ids_, est.person_ids_)
    assert_array_equal(report.person_losses_, est.person_losses_)
    assert_array_equal(report.person_pdp_kinds_, est.person_pdp_kinds_)
    assert_array_equal(report.pdp_losses_, est.pdp_losses_)
    s = report.summary_
    assert (s["unit"], s["n_people"], s["n_samples"]) == ("person", 150, X.shape[0])
    assert s["pdp_kind"] == est.person_pdp_kind_ == "exact"
    assert s["median"] == np.median(est.person_losses_)
    assert s["max"] == est.person_losses_.max()
    assert s["below"][1.0] == np.mean(est.person_losses_ <= 1.0)
    # several records of one person cost more than the median record
    assert s["median"] > np.median(est.pdp_losses_)
    # no cap: the guarantee stays per record
    assert s["dp_unit"] == "record"
    assert_array_equal(report.transform(X[:5]), PDPReport(_adassp()).fit(X, y).transform(X[:5]))
    # a refit without keys is per record again
    report.fit(X, y)
    assert not hasattr(report, "person_losses_")
    assert (report.summary_["unit"], report.summary_["n_people"]) == ("record", None)
    assert report.summary_["median"] == np.median(est.pdp_losses_)


def test_person_level_guarantee_only_with_max_records():
    X, y, groups = random_panel(n_people=400, seed=4)
    report = PDPReport(_adassp(max_records=6)).fit(X, y, groups=groups)
    s = report.summary_
    assert (s["unit"], s["dp_unit"]) == ("person", "person")
    assert s["max"] <= s["dp_epsilon"] == report.dp_epsilon_ == 3.0


def test_bound_kind_is_reported_per_person():
    """A fit whose person losses are bounds (AdaOPS's, at OPS's
    alpha="auto") labels them "bound", whatever its records' kind."""
    X, y, groups = random_panel(n_people=60, seed=5)
    ops = OPSRegressor(epsilon=2.0, **UNIT_BOUNDS, tighten_bounds=False, random_state=0)
    report = PDPReport(ops).fit(X, y, groups=groups)
    fitted = report.estimator_
    assert report.summary_["pdp_kind"] == fitted.person_pdp_kind_
    assert report.summary_["unit"] == "person"
    assert_array_equal(report.person_losses_, fitted.person_losses_)


def test_groups_are_routed_by_a_pipeline():
    X, y, groups = random_panel(n_people=150, seed=3)
    with sklearn.config_context(enable_metadata_routing=True):
        pipe = make_pipeline(FunctionTransformer(),
                             PDPReport(_adassp()).set_fit_request(groups=True))
        pipe.fit(X, y, groups=groups)
    expected = _adassp().fit(X, y, groups=groups).person_losses_
    assert_array_equal(pipe[-1].person_losses_, expected)
    assert pipe[-1].summary_["unit"] == "person"


def test_publication_with_groups_is_refused():
    """A published bound is per record: with person keys the report refuses
    rather than label a record's bound a person's."""
    X, y, groups = random_panel(n_people=40, seed=6)
    report = PDPReport(_adassp(), publish_epsilon=0.2, random_state=0)
    with pytest.raises(ValueError, match=r"publish_epsilon=0.2 with groups.*not derived"):
        report.fit(X, y, groups=groups)
    assert report.fit(X, y).summary_["unit"] == "record"


def test_private_search_per_person():
    """A wrapped private search reports its people (its own person losses
    and kind)."""
    X, y, groups = random_panel(n_people=300, seed=1)
    search = PrivateGridSearchCV(_adassp(), {"fit_intercept": [True, False]}, random_state=0)
    with pytest.warns(FallbackWarning, match="label mean alone"):  # a part's small budget
        report = PDPReport(search).fit(X, y, groups=groups)
    assert_array_equal(report.person_losses_, report.estimator_.person_losses_)
    assert (report.summary_["unit"], report.summary_["dp_unit"]) == ("person", "record")
    assert report.summary_["pdp_kind"] == report.estimator_.person_pdp_kind_


def test_dask_input_per_person():
    """Dask input gives the same per-person summary as NumPy."""
    da = pytest.importorskip("dask.array")  # the lowest supported stack runs without Dask
    X, y, groups = random_panel(n_people=300, seed=1)
    numpy = PDPReport(_adassp()).fit(X, y, groups=groups).summary_
    lazy = PDPReport(_adassp()).fit(da.from_array(X, chunks=200), da.from_array(y, chunks=200),
                                    groups=groups).summary_
    assert lazy["unit"] == "person" and lazy["n_people"] == numpy["n_people"] == 300
    assert_allclose(lazy["median"], numpy["median"], rtol=1e-12)


def test_plot_of_a_per_person_report_is_of_its_records(agg):
    """The plot shows the rows' losses, labelled with the records' kind and
    median, never the people's."""
    X, y, groups = random_panel(n_people=150, seed=3)
    report = PDPReport(_adassp()).fit(X, y, groups=groups)
    display = PrivacyLossDisplay.from_estimator(report)
    assert_array_equal(display.pdp_losses, report.pdp_losses_)
    assert display.pdp_kind == report.estimator_.pdp_kind_
    assert display.dp_over_median == report.dp_epsilon_ / np.median(report.pdp_losses_)
    assert display.dp_over_median != report.summary_["dp_over_median"]
