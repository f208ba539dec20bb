"""scikit-learn's estimator checks over every public estimator."""

import multiprocessing
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn import clone, config_context
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_pdp import AdaSSPRegressor, OPSRegressor, PDPReport
from sklearn_pdp.accounting import gaussian_epsilon
from sklearn_pdp._registry import REGRESSORS
from sklearn_pdp.model_selection import PrivateGridSearchCV

from ..conftest import audit_if_slow

# what a user gets: the default-constructed estimators (scikit-learn's
# checks fit 10 to 200 rows, where budgets are met by falling back to the
# label mean, a larger ridge or a choice without data, with a FallbackWarning)
DEFAULTS = [cls() for cls in REGRESSORS.values()] + [
    PDPReport(),
    PrivateGridSearchCV(AdaSSPRegressor(), {"fit_intercept": [True, False]}),
]

# expert configurations, on top of the defaults: every registered regressor,
# with these parameters where its defaults do not suit the checks
EXPERT_PARAMS = {
    # scikit-learn's checks fit 10 rows, where no budget of 1 can be met with
    # an intercept: the raw noise level of the expert API (the budget path is
    # covered by tests/mechanisms/test_ops.py and the tests below)
    "ops": dict(epsilon=None, gamma=10.0, alpha=1.0),
    # 10 rows: the intercept's leverage 1/9 needs a budget above 3 (tests/mechanisms/test_adaops.py)
    "adaops": dict(epsilon=5.0),
    # the expert parameters: scikit-learn's checks fit 10 rows (where the
    # unpenalised intercept's leverage alone costs objective perturbation
    # about 2.9 at delta=1e-6) and set alpha=0.01 (where no noise reaches a
    # budget); the default, epsilon-first path is in GUARANTEED and
    # tests/mechanisms/test_objective_perturbation.py
    "objpert": dict(epsilon=None, sigma=1.0, alpha=50.0),
}
ESTIMATORS = [cls(**EXPERT_PARAMS.get(name, {})) for name, cls in REGRESSORS.items()] + [
    # the default estimator made explicit, so that the bad-input matrix can
    # declare its bounds and seed (PDPReport() itself: tests/report/test_report.py)
    PDPReport(OPSRegressor(epsilon=None, gamma=10.0, alpha=1.0)),
    # scikit-learn's checks fit as few as 10 rows: a large delta lets the
    # part-size event admit parts of 2 rows there (refit=False keeps the
    # total delta below 1)
    PrivateGridSearchCV(
        OPSRegressor(epsilon=None), {"gamma": [1.0, 10.0], "alpha": [1.0]}, delta=0.9,
        refit=False,
        random_state=0,
    ),
]


def test_registry_holds_every_public_regressor():
    """The tests parametrised over the registry reach every regressor."""
    import sklearn_pdp

    public = {getattr(sklearn_pdp, name) for name in sklearn_pdp.__all__
              if name.endswith("Regressor")}
    assert set(REGRESSORS.values()) == public and len(REGRESSORS) == len(public)


@pytest.mark.filterwarnings("ignore::sklearn_pdp.PrivacyLeakWarning")
@pytest.mark.filterwarnings("ignore::sklearn_pdp.FallbackWarning")
@parametrize_with_checks(DEFAULTS)
def test_sklearn_compatible(estimator, check):
    check(estimator)


# the expert configurations differ from the defaults by their parameters
# only: the audit runs every check on them too
@pytest.mark.audit
@pytest.mark.filterwarnings("ignore::sklearn_pdp.PrivacyLeakWarning")
@pytest.mark.filterwarnings("ignore::sklearn_pdp.FallbackWarning")
@parametrize_with_checks([e for e in ESTIMATORS if repr(e) not in {repr(d) for d in DEFAULTS}])
def test_sklearn_compatible_expert_configurations(estimator, check):
    check(estimator)


@pytest.mark.parametrize(
    "estimator", [e for e in ESTIMATORS if "n_jobs" in e.get_params(deep=False)
                  and not isinstance(e, PrivateGridSearchCV)],
    ids=lambda e: type(e).__name__,
)
def test_threads_give_the_same_fit(estimator):
    """n_jobs=2 processes chunks on two threads: same release and losses."""
    rng = np.random.RandomState(0)
    X = rng.normal(size=(3000, 4))
    y = X @ [1.0, -1.0, 0.5, 0.0] + rng.normal(size=3000)
    fits = []
    for n_jobs in (1, 2):
        est = clone(estimator).set_params(
            n_jobs=n_jobs, data_norm=4.0, y_bound=5.0, random_state=0
        )
        with config_context(working_memory=0.05):  # a few dozen chunks
            fits.append(est.fit(X, y))
    one, two = fits
    # BLAS runs single-threaded under n_jobs=2: sums may round differently
    assert_allclose(two.coef_, one.coef_, rtol=1e-10)
    assert_allclose(two.pdp_losses_, one.pdp_losses_, rtol=1e-9)
    assert_allclose(two.pdp_epsilon(X[:50]), one.pdp_epsilon(X[:50]), rtol=1e-9)


@pytest.mark.parametrize(
    "estimator", [e for e in ESTIMATORS if "n_jobs" in e.get_params(deep=False)
                  and not isinstance(e, PrivateGridSearchCV)],
    ids=lambda e: type(e).__name__,
)
def test_memory_layout_does_not_change_the_fit(estimator):
    """A Fortran-ordered X (a DataFrame's) gives the fit of the C-ordered one
    bit for bit, with rows inside data_norm and beyond it."""
    rng = np.random.RandomState(0)
    X = rng.normal(size=(3000, 4))
    y = X @ [1.0, -1.0, 0.5, 0.0] + rng.normal(size=3000)
    fits = [
        clone(estimator).set_params(data_norm=4.0, y_bound=5.0, random_state=0).fit(Xo, y)
        for Xo in (X, np.asfortranarray(X))
    ]
    assert_array_equal(fits[1].coef_, fits[0].coef_)
    assert_array_equal(fits[1].pdp_losses_, fits[0].pdp_losses_)


def test_threads_inside_a_daemon_process(monkeypatch):
    """n_jobs means threads also where joblib's process backend falls back
    to one job (a pool worker, a Dask worker): no warning, two threads."""
    monkeypatch.setattr(multiprocessing.current_process(), "daemon", True)
    import sklearn_pdp.utils._rows as rows_module

    used = []

    class SpyParallel(rows_module.Parallel):
        def __call__(self, iterable):
            used.append(self.n_jobs)
            return super().__call__(iterable)

    monkeypatch.setattr(rows_module, "Parallel", SpyParallel)
    rng = np.random.RandomState(0)
    X, y = rng.normal(size=(2000, 3)), rng.normal(size=2000)
    with warnings.catch_warnings(), config_context(working_memory=0.05):
        warnings.simplefilter("error")
        OPSRegressor(data_norm=4.0, y_bound=4.0, n_jobs=2).fit(X, y)
    assert used and set(used) == {2}


# 400 rows at epsilon 1 are too few for some mechanisms' slopes (the label
# mean, or zero slopes); the search keeps its large delta for scikit-learn's checks
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.FallbackWarning")
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.PrivacyLeakWarning")
@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_privacy_numbers_do_not_depend_on_the_draw(estimator):
    """pdp_losses_ and dp_epsilon_ are functions of (mechanism, data set) and
    (mechanism, domain): refitting with other seeds changes the release only."""
    rng = np.random.RandomState(1)
    X = rng.uniform(-1, 1, size=(400, 3))
    y = 0.5 + X @ [0.6, -0.3, 0.0] + 0.2 * rng.normal(size=400)
    fits = [_seeded(estimator, seed).fit(X, y) for seed in (0, 1, 2)]
    for fit in fits[1:]:
        assert fit.dp_epsilon_ == fits[0].dp_epsilon_
        assert_allclose(fit.pdp_losses_, fits[0].pdp_losses_, rtol=1e-12)
    model = [getattr(fit, "estimator_", fit) for fit in fits[:2]]
    assert not np.allclose(model[0].predict(X), model[1].predict(X))


def _seeded(estimator, seed):
    """A clone with bounds 2 and ``random_state=seed`` where the fit draws
    its noise (the meta-estimator itself, or the estimator it wraps)."""
    params = clone(estimator).get_params()
    updates = {k: 2.0 for k in params if k.split("__")[-1] in ("data_norm", "y_bound")}
    if "random_state" in estimator.get_params(deep=False):
        updates["random_state"] = seed
    else:
        updates.update({k: seed for k in params if k.endswith("__random_state")})
    return clone(estimator).set_params(**updates)


# two configurations of every registered regressor (a KeyError here means a
# new one needs its two)
GUARANTEE_PARAMS = {
    "ops": [dict(epsilon=None, gamma=5.0, alpha=2.0), dict(epsilon=None, gamma=1.0, alpha=0.0)],
    "adaops": [{}, dict(epsilon=4.0, kappa=2.0)],
    "adassp": [{}, dict(epsilon=0.3, fit_intercept=False)],
    "output": [{}, dict(noise="laplace", radius=2.0)],
    "objpert": [{}, dict(epsilon=None, sigma=2.0, alpha=50.0)],
    "projection": [dict(n_components=5), dict(variant="paper")],
}
# the second configuration of a slow regressor (objective perturbation's
# raw noise level: 12 s) under the audit marker
GUARANTEED = [pytest.param(est, id=repr(est), marks=audit_if_slow(name) if second else ())
              for name, cls in REGRESSORS.items()
              for second, est in enumerate(cls(**params) for params in GUARANTEE_PARAMS[name])]


@pytest.mark.filterwarnings("ignore::sklearn_pdp.PrivacyLeakWarning")
# 300 rows at epsilon 1 are too few for most mechanisms' slopes: the label mean
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.FallbackWarning")
@pytest.mark.parametrize("estimator", GUARANTEED)
def test_dp_guarantee_contract(estimator):
    """dp_guarantee is what fit reports, non-decreasing in n_samples with a
    constant delta, and the sizes it refuses (with fit's error) lie below
    the accepted ones."""
    rng = np.random.RandomState(0)
    X = rng.normal(size=(300, 3))
    y = X @ [1.0, -1.0, 0.5] + rng.normal(size=300)
    est = clone(estimator).set_params(data_norm=4.0, y_bound=5.0, random_state=0)
    est.fit(X, y)
    assert (est.dp_epsilon_, est.dp_delta_) == est.dp_guarantee(300, 3)
    accepted, refused = [], []
    for n in (2, 5, 30, 299, 300, 301, 10_000, 10**6):
        try:
            est.dp_guarantee(n, 3)
        except ValueError as exc:
            assert not accepted, "a size above an accepted one was refused"
            refused.append(n)
            with pytest.raises(ValueError, match=str(exc)[:30]):
                clone(est).fit(X[:n], y[:n])
        else:
            accepted.append(n)
    # wider ranges of sizes: non-decreasing in the largest size, non-increasing
    # in the smallest, the delta constant
    low, high = accepted[0], accepted[-1]
    by_largest = np.array([est.dp_guarantee(n, 3, low) for n in accepted])
    by_smallest = np.array([est.dp_guarantee(high, 3, n) for n in accepted])
    with np.errstate(invalid="ignore"):  # inf - inf where there is no guarantee
        assert np.all((np.diff(by_largest[:, 0]) >= 0) | np.isinf(by_largest[1:, 0]))
        assert np.all((np.diff(by_smallest[:, 0]) <= 0) | np.isinf(by_smallest[:-1, 0]))
    assert by_smallest[-1, 0] == est.dp_guarantee(high, 3)[0]
    assert np.all(np.concatenate([by_largest[:, 1], by_smallest[:, 1]]) == est.dp_delta_)
    if estimator.get_params().get("kappa"):
        # the constraint on kappa refuses small data sets (which fit
        # answers with the label mean alone, below the fallback size)
        with pytest.raises(ValueError, match="kappa"):
            est._mechanism_guarantee(30, 3)


def test_added_row_is_not_capped_at_the_budget():
    """AdaSSP's noise is sized for removals from n rows; a row added to them
    can move the eigenvalue by 4 n / (n + 1) > 4 (n - 1) / n, so its exact
    loss exceeds the budget: pdp_epsilon reports it, as brute force over the
    domain's rows finds it (the neighbour with the row, its removal loss at
    the noise of the fit)."""
    X, y = -np.ones((41, 1)), -np.ones(41)
    params = dict(epsilon=3.0, data_norm=1.0, y_bound=1.0, random_state=0)
    est = AdaSSPRegressor(**params).fit(X, y)
    rows = [(x, label) for x in np.linspace(-1, 1, 9) for label in (-1.0, 1.0)]
    brute = []
    for x, label in rows:
        with_row = AdaSSPRegressor(**params).fit(np.vstack([X, [[x]]]), np.append(y, label))
        with_row.release_.noise_scale = est.release_.noise_scale
        scaler = with_row.domain_scaler()
        ratio = with_row.release_.row_ratio(scaler.scale(np.array([[x]])),
                                            scaler.scale_labels(np.array([label])), add=False)
        brute.append(gaussian_epsilon(est.delta, ratio)[0])
    reported = est.pdp_epsilon(np.array([[x] for x, _ in rows]), np.array([l for _, l in rows]))
    assert_allclose(reported, brute, rtol=1e-9)
    # the worst row (x = 1 against 41 rows at -1): 3.000198 > 3
    assert reported.max() == pytest.approx(3.000198, abs=1e-6)
    assert reported.max() > est.dp_epsilon_
    # the worst label is the larger of the two
    assert_allclose(est.pdp_epsilon(np.array([[1.0]])), reported.max(), rtol=1e-12)
