"""Dask input: the same release and per-instance losses as in memory.

The graphs run on Dask's synchronous scheduler, in the test's process; the
fits checked on a ``distributed.LocalCluster`` of a worker process (one
in the default run, every one under the audit marker) also check that every
function that goes to the workers survives pickling.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

da = pytest.importorskip("dask.array")

import dask  # noqa: E402

from sklearn_pdp import (  # noqa: E402
    AdaOPSRegressor,
    AdaSSPRegressor,
    ObjPertRegressor,
    OPSRegressor,
    OutputPerturbationRegressor,
    PDPReport,
    PrivacyLeakWarning,
    RandomProjectionRegressor,
)
from sklearn_pdp.utils._dask import quantiles  # noqa: E402

from ..conftest import audit_if_slow  # noqa: E402
from ..domain.test_schema import SCHEMA, _table  # noqa: E402
from sklearn_pdp._registry import REGRESSORS  # noqa: E402
from sklearn_pdp.model_selection import PrivateGridSearchCV  # noqa: E402

D = 5
# irregular row chunks (and columns split in two) exercise the block offsets:
# 6000 rows in 6 chunks in the default run, 24000 in 24 under the audit marker
ROW_CHUNKS = {size: (500, 1_300, 1, 2_199) + (1_000,) * (size - 4) for size in (6, 24)}
BOUNDS = {"data_norm": 4.0, "y_bound": 5.0}
# coef_ depends on the data only through d x d statistics: equal to rounding
COEF_RTOL = 1e-10
# A per-instance epsilon is the root of A(eps) - e^eps B(eps) = delta, with the
# probabilities A and B evaluated to a few ulp (~1e-16). Rounding in the
# statistics therefore moves the root by about 1e-16 / (e^eps B) in absolute
# terms, which dominates near eps = 0 (measured: up to 3.4e-14 for the random
# projection at eps = 8e-5, 6e-16 for OPS at eps = 1.6e-6, both ~4e-10
# relative); elsewhere the relative agreement is ~1e-11 (measured).
LOSS_TOL = {"rtol": 1e-10, "atol": 1e-13}
# Objective perturbation's losses come from a quadrature whose stopping rule
# may take one more rule on one side of a rounding difference (measured:
# 1.9e-10 relative at eps = 1.3e-3): the exactness bar of the package, 1e-9.
OBJPERT_LOSS_TOL = {"rtol": 1e-9, "atol": 1e-13}

# every registered regressor (the random projection at 40 rows), and output
# perturbation's constrained variant
ESTIMATORS = [
    cls(**BOUNDS, **({"n_components": 40} if cls is RandomProjectionRegressor else {}))
    for cls in REGRESSORS.values()
] + [OutputPerturbationRegressor(radius=0.5, noise="laplace", **BOUNDS)]
# dask targets: four of the mechanisms, to keep the cluster's run short
TARGET_CHECKED = [OPSRegressor, AdaOPSRegressor, AdaSSPRegressor, ObjPertRegressor]


# one cluster for the module (one worker process: what goes to it is
# pickled), on one test process of a parallel run (the xdist_group mark of the
# tests on it, with --dist loadgroup): a cluster per process would start more
# worker processes on a small machine; BOUNDS' y_bound clips the label tails
# (about 7%) of every fit here, which Dask must match too
pytestmark = pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.BoundsWarning")
ON_CLUSTER = pytest.mark.xdist_group("dask")


@pytest.fixture(scope="module")
def client():
    # imported here: a second or two at every collection otherwise
    distributed = pytest.importorskip("distributed")
    # dashboard on a free port: None still binds 8787 and warns when it is
    # taken; not the default scheduler: a test asks for it by name
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0"
    ) as cluster, distributed.Client(cluster, set_as_default=False) as client:
        yield client


@pytest.fixture(scope="module", autouse=True)
def synchronous():
    # the graphs of a fit are the same on every scheduler; the cluster's
    # pickling is checked by the tests that ask for it
    with dask.config.set(scheduler="synchronous"):
        yield


@pytest.fixture(scope="module", params=[6, pytest.param(24, marks=pytest.mark.audit)],
                ids=lambda size: f"{size}-chunks")
def data(request):
    # generated chunk by chunk, as a large data set would be
    row_chunks = ROW_CHUNKS[request.param]
    n = sum(row_chunks)
    rng = da.random.RandomState(0)
    Xd = rng.normal(size=(n, D), chunks=(row_chunks, 3))
    yd = Xd @ np.linspace(-1.0, 2.0, D) + rng.normal(size=n, chunks=(row_chunks,))
    X, y = dask.compute(Xd, yd)
    return X, y, Xd, yd


def _ids(est):
    return type(est).__name__ + ("-ball" if getattr(est, "radius", None) else "")


# objective perturbation's per-row quadratures take minutes on all 24000 rows:
# there under the audit marker, and on the first three (irregular) row chunks,
# 1801 rows, in the default run; OPS at its defaults releases AdaOPS's
# mechanism (the AdaOPS case), its own fit under the audit marker too
FIT_CASES = [pytest.param(est, None, id=_ids(est),
                          marks=pytest.mark.audit if name == "ops" else audit_if_slow(name))
             for name, est in zip(REGRESSORS, ESTIMATORS)] + [
    pytest.param(est, None, id=_ids(est)) for est in ESTIMATORS[len(REGRESSORS):]] + [
    pytest.param(ObjPertRegressor(**BOUNDS), 3, id="ObjPertRegressor-3-chunks")]


@pytest.mark.parametrize("est, chunks", FIT_CASES)
def test_fit_matches_in_memory(data, est, chunks):
    _check_fit_matches_in_memory(data, est, chunks)


# every case on the cluster under the audit marker; AdaSSP's, the quickest,
# in the default run
@ON_CLUSTER
@pytest.mark.parametrize("est, chunks", [
    pytest.param(*case.values, id=case.id,
                 marks=() if case.id == "AdaSSPRegressor" else pytest.mark.audit)
    for case in FIT_CASES])
def test_fit_on_a_cluster_matches_in_memory(client, data, est, chunks):
    with dask.config.set(scheduler=client):
        _check_fit_matches_in_memory(data, est, chunks)


def _check_fit_matches_in_memory(data, est, chunks):
    """``est`` fit on the first ``chunks`` row chunks (all: None) of the Dask
    data gives the release, losses and predictions of the in-memory fit."""
    X, y, Xd, yd = data
    row_chunks = Xd.chunks[0][:chunks]
    if chunks is not None:
        rows = sum(row_chunks)
        X, y, Xd, yd = X[:rows], y[:rows], Xd[:rows], yd[:rows]
    ref = est.__class__(**est.get_params()).set_params(random_state=7).fit(X, y)
    fit = est.__class__(**est.get_params()).set_params(random_state=7).fit(Xd, yd)
    assert_allclose(fit.coef_, ref.coef_, rtol=COEF_RTOL)
    assert fit.intercept_ == pytest.approx(ref.intercept_, rel=COEF_RTOL)
    assert fit.dp_epsilon_ == pytest.approx(ref.dp_epsilon_, rel=COEF_RTOL)
    assert fit.noise_scale_ == pytest.approx(ref.noise_scale_, rel=COEF_RTOL)
    assert fit.n_features_in_ == D
    # lazy, with the row chunks of X
    assert isinstance(fit.pdp_losses_, da.Array)
    assert fit.pdp_losses_.chunks == (row_chunks,)
    tol = OBJPERT_LOSS_TOL if isinstance(est, ObjPertRegressor) else LOSS_TOL
    assert_allclose(fit.pdp_losses_.compute(), ref.pdp_losses_, **tol)
    pred = fit.predict(Xd)
    assert isinstance(pred, da.Array)
    assert_allclose(pred.compute(), ref.predict(X), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("est", [e for e in ESTIMATORS if type(e) in TARGET_CHECKED], ids=_ids)
def test_pdp_epsilon_of_dask_targets(data, est):
    X, y, Xd, yd = data
    # fit on the rows of objective perturbation's Dask fit above (its
    # calibration, a function of the size, computed once)
    n = sum(Xd.chunks[0][:3])
    fit = est.__class__(**est.get_params()).set_params(random_state=1).fit(X[:n], y[:n])
    # the first row chunk and a row of the next: chunks of 500 rows and of one
    rows = Xd.chunks[0][0] + 1
    for labels, dask_labels in ((None, None), (y[:rows], yd[:rows])):
        lazy = fit.pdp_epsilon(Xd[:rows], dask_labels)
        assert isinstance(lazy, da.Array)
        # equal up to BLAS blocking, which depends on the chunk boundaries
        assert_allclose(lazy.compute(), fit.pdp_epsilon(X[:rows], labels), **LOSS_TOL)


def test_random_projection_sketch_does_not_depend_on_chunking(data):
    """The sketch is drawn from the Cholesky factor of Sigma, a function of
    [X y]^T [X y] summed over the blocks: equal up to summation order."""
    _, _, Xd, yd = data
    est = RandomProjectionRegressor(n_components=40, random_state=3, **BOUNDS)
    sketches = [est.fit(Xd, yd).sketch_]
    for chunks in (5_000, 409):
        sketches.append(est.fit(Xd.rechunk((chunks, D)), yd.rechunk(chunks)).sketch_)
    for other in sketches[1:]:
        assert_allclose(other, sketches[0], rtol=1e-12, atol=1e-12)


def test_report_summary_matches_in_memory(data):
    X, y, Xd, yd = data
    est = OPSRegressor(random_state=0, **BOUNDS)
    ref = PDPReport(est, thresholds=(1e-3, 0.01)).fit(X, y)
    report = PDPReport(est, thresholds=(1e-3, 0.01)).fit(Xd, yd)
    assert isinstance(report.pdp_losses_, da.Array)
    assert report.summary_.keys() == ref.summary_.keys()
    for key, value in ref.summary_.items():
        if key == "below":
            for t, fraction in value.items():
                # a loss within rounding of a threshold may fall either side
                assert abs(report.summary_[key][t] - fraction) <= 5 / len(y)
        elif isinstance(value, str) or value is None:  # the kind, the units; no people
            assert report.summary_[key] == value, key
        else:
            expected = pytest.approx(value, rel=LOSS_TOL["rtol"], abs=LOSS_TOL["atol"])
            assert report.summary_[key] == expected, key
    out = report.transform(Xd[:500])
    assert isinstance(out, da.Array)
    assert_allclose(out.compute(), ref.transform(X[:500]), **LOSS_TOL)


def test_bounds_read_from_dask_data_warn(data):
    X, _, Xd, yd = data
    with pytest.warns(PrivacyLeakWarning, match="data_norm"):
        fit = OPSRegressor(y_bound=5.0, random_state=0).fit(Xd, yd)
    assert fit.data_norm_ == pytest.approx(np.linalg.norm(X, axis=1).max(), rel=1e-12)


# the refit's delta=1e-2 above 1 / n only has to differ from the first fit's
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.PrivacyLeakWarning")
def test_lazy_losses_belong_to_their_fit(data):
    X, y, Xd, yd = data
    est = OPSRegressor(random_state=0, **BOUNDS)
    lazy = est.fit(Xd[:2_000], yd[:2_000]).pdp_losses_
    est.set_params(delta=1e-2, epsilon=None, gamma=1e3, alpha=1.0).fit(Xd[:3_000], yd[:3_000])
    ref = OPSRegressor(random_state=0, **BOUNDS).fit(X[:2_000], y[:2_000])
    assert_allclose(lazy.compute(), ref.pdp_losses_, **LOSS_TOL)


def test_bad_dask_input_is_a_clear_error(data):
    X, _, Xd, yd = data
    est = OPSRegressor(**BOUNDS)
    bad = X[:5_000].copy()
    bad[4_123, 2] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity"):
        est.fit(da.from_array(bad, chunks=500), yd[:5_000])
    with pytest.raises(ValueError, match="unknown chunk sizes"):
        est.fit(Xd[Xd[:, 0] > 0], yd[Xd[:, 0] > 0])
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        est.fit(Xd, yd[:-1])
    with pytest.raises(ValueError, match="requires y"):
        est.fit(Xd, None)
    fit = est.fit(Xd[:1000], yd[:1000])
    with pytest.raises(ValueError, match="features"):
        fit.predict(Xd[:10, :3])
    search = PrivateGridSearchCV(est, {"alpha": [1.0, 10.0]})
    with pytest.raises(TypeError, match="in-memory data"):
        search.fit(Xd, yd)


@pytest.mark.parametrize("n", [1, 2, 3, 1000, 4097])
def test_quantiles_are_exact_on_dask(n):
    rng = np.random.RandomState(n)
    values = np.concatenate([
        rng.lognormal(-5, 3, size=n),
        np.zeros(n // 3),                      # zero losses
        np.full(n // 5, np.inf),               # unbounded losses
        np.repeat(rng.lognormal(size=3), n // 7 + 1),  # ties
    ])
    rng.shuffle(values)
    q = [0.0, 0.01, 0.5, 0.9, 0.99, 1.0]
    lazy = da.from_array(values, chunks=max(len(values) // 7, 1))
    with dask.config.set(scheduler="threads"):
        got = quantiles(lazy, q)
    with np.errstate(invalid="ignore"):  # numpy's inf - inf in interpolation
        expected = np.quantile(values, q)
    assert_array_equal(got, expected)


def test_clip_shares_are_counted_on_dask(data):
    """The BoundsWarning's shares come from the scaling pass on the workers:
    the same as in memory, and those of the labels and rows the bounds move."""
    from sklearn_pdp import BoundsWarning

    X, y, Xd, yd = data
    messages = []
    for args in ((X, y), (Xd, yd)):
        with pytest.warns(BoundsWarning) as record:
            # the declared bounds' shares (tightened, the released ones clip)
            OPSRegressor(random_state=0, tighten_bounds=False, **BOUNDS).fit(*args)
        messages.append([str(w.message) for w in record if w.category is BoundsWarning])
    assert messages[0] == messages[1] and len(messages[0]) == 1
    assert f"{np.mean(np.abs(y) > 5.0):.1%} of the labels" in messages[0][0]
    # under 5% of the rows are longer than data_norm: not named
    assert 0 < np.mean(np.linalg.norm(X, axis=1) > 4.0) <= 0.05
    assert "rows" not in messages[0][0]


# a schema's structured scaling block by block, as in memory
def test_dask_rows_scale_as_numpy_rows():
    table = _table(3000)
    X, y = SCHEMA.encoder().fit_transform(table), table["wage"].to_numpy()
    local = AdaSSPRegressor(schema=SCHEMA, epsilon=1.0, random_state=0).fit(X, y)
    lazy = AdaSSPRegressor(schema=SCHEMA, epsilon=1.0, random_state=0).fit(
        da.from_array(X, chunks=700), da.from_array(y, chunks=700))
    assert_allclose(lazy.coef_, local.coef_, atol=1e-12)
    assert_allclose(lazy.pdp_losses_.compute(), local.pdp_losses_, rtol=1e-9)
    assert_allclose(lazy.pdp_epsilon(da.from_array(X[:40], chunks=20)).compute(),
                    local.pdp_epsilon(X[:40]), rtol=1e-9)
