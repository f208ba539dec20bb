"""Published per-instance privacy reports (PDPReport(publish_epsilon=...))."""

import copy
import functools
import pickle
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import stats as st
from scipy.special import ndtri

from sklearn_pdp import (
    AdaOPSRegressor,
    FallbackWarning,
    AdaSSPRegressor,
    ObjPertRegressor,
    OPSRegressor,
    OutputPerturbationRegressor,
    PDPReport,
    RandomProjectionRegressor,
)
from sklearn_pdp.accounting import (
    gaussian_epsilon, objpert_auto_alpha, objpert_dp_epsilon, objpert_epsilon, ops_auto_alpha,
    ops_dp_epsilon, ops_epsilon, ops_mixture_epsilon,
)
from sklearn_pdp.mechanisms.adaops._published import _PUBLISHED_WINDOW_SHARE
from sklearn_pdp.mechanisms.mean._released_means import means_bound
from sklearn_pdp.utils._ridge_system import penalty
from sklearn_pdp.mechanisms.output_perturbation._calibration import (
    _ball_constants, ball_ridge, output_perturbation_auto_alpha, output_perturbation_sensitivity,
)
from sklearn_pdp.report._publish import (
    _GRID_STEP, _QUANTILES, _private_quantile, gram_noise_bound, private_summary,
)
from sklearn_pdp.accounting import gram_noise
from sklearn_pdp.mechanisms.objective_perturbation._release import objpert_draw
from sklearn_pdp.mechanisms.objective_perturbation._law import PrivateObjPertLaw
from sklearn_pdp.utils._eigen import eigen_change, eigen_max_change, scatter_eigen
from sklearn_pdp._registry import REGRESSORS
from sklearn_pdp.model_selection import PrivateGridSearchCV

from ..conftest import audit_if_slow

# mechanisms whose loss is a function of the leverage and residual
RIDGE_LAWS = [OPSRegressor, OutputPerturbationRegressor, ObjPertRegressor]
# every registered regressor publishes
SUPPORTED = list(REGRESSORS.values())
# OPS's alpha="auto" releases AdaOPS's law, output perturbation's and (where
# the size allows) objective perturbation's their private ridges (laws of
# their own, the "-auto" cases): the ridge laws' have a fixed ridge, the
# former public rule's (ops_auto_alpha, output_perturbation_auto_alpha at
# the defaults)
# (objective perturbation's at 3000 rows, seconds of quadrature: computed by
# the first test that fits it, not at collection)
_FIXED_RIDGES = {OPSRegressor: 300.0, OutputPerturbationRegressor: 1e4}
_PUBLIC_RULES = {OPSRegressor: ops_auto_alpha,
                 OutputPerturbationRegressor: output_perturbation_auto_alpha,
                 ObjPertRegressor: objpert_auto_alpha}


def _ridge_params(cls, n, d=5):
    """A fixed ridge for OPS, output perturbation and objective perturbation
    (the former public rule at this size; the latter's alpha="auto" is its
    private ridge where the size allows, a law of its own)."""
    if cls not in _PUBLIC_RULES:
        return {}
    return {"alpha": _PUBLIC_RULES[cls](1.0, 1e-6, n, d, True)}


def _fixed_ridge(cls):
    """The parameters of a law's fixed-ridge case (none for the other laws)."""
    if cls is ObjPertRegressor:
        return _ridge_params(cls, 3000)
    return {"alpha": _FIXED_RIDGES[cls]} if cls in _FIXED_RIDGES else {}


def _law_params(cls, params):
    """A LAWS case's parameters (None: the class's :func:`_fixed_ridge`)."""
    return _fixed_ridge(cls) if params is None else params


# every published law, as (class, parameters): radius 1 leaves the test
# data's constraint inactive, radius 0.3 makes it bind
LAWS = [pytest.param(cls, None, id=cls.__name__) for cls in SUPPORTED] + [
    pytest.param(OPSRegressor, {}, id="OPSRegressor-auto"),
    pytest.param(OutputPerturbationRegressor, {}, id="OutputPerturbationRegressor-auto"),
    pytest.param(ObjPertRegressor, {}, id="ObjPertRegressor-auto"),
] + [
    pytest.param(OutputPerturbationRegressor, {"radius": r}, id=f"radius={r}")
    for r in (1.0, 0.3)
]


def _squeezable_data(n, d=5, seed=0, squeeze=1.0):
    """Data inside unit bounds, drawn by RandomState, whose first column
    ``squeeze`` scales."""
    rng = np.random.RandomState(seed)
    X = rng.uniform(-1, 1, size=(n, d)) / np.sqrt(d)
    X[:, 0] *= squeeze  # below 1: a smaller conditioning
    y = np.clip(0.2 + X @ (0.5 * rng.randn(d)) + 0.1 * rng.randn(n), -1, 1)
    return X, y


def _report(cls, X, y, seed=0, publish_epsilon=0.2, **params):
    # the published laws of fits on the declared bounds: a tightened fit
    # publishes its guarantee (tests/domain/test_tighten.py)
    est = cls(data_norm=1.0, y_bound=1.0, tighten_bounds=False, random_state=seed, **params)
    return PDPReport(est, publish_epsilon=publish_epsilon, random_state=seed).fit(X, y)


def _in_sample_stats(est, X, y):
    """Exact in-sample statistics of the training rows, scaled."""
    law = est.release_law()
    Xs, ys = law.scaler.scale(X, y)
    from sklearn_pdp.utils._ridge_system import RidgeSystem

    XtX = Xs.T @ Xs
    ridge = RidgeSystem(XtX, Xs.T @ ys, law.alpha, law.intercept)
    return Xs, ys, ridge.row_statistics(Xs, ys, inverse_norm=True, norm=True), ridge


@pytest.mark.parametrize("cls", RIDGE_LAWS)
def test_law_reproduces_the_estimators_losses(cls):
    # the release law's loss at the exact statistics is the estimator's own
    X, y = _squeezable_data(1500)
    est = cls(data_norm=1.0, y_bound=1.0, random_state=0, **_fixed_ridge(cls)).fit(X, y)
    _, _, stats, _ = _in_sample_stats(est, X, y)
    assert_allclose(est.release_law().epsilon(est.delta, stats), est.pdp_losses_, rtol=1e-6)


def test_random_projection_law_reproduces_the_estimators_losses():
    X, y = _squeezable_data(3000)  # above the fallback to the label mean
    est = RandomProjectionRegressor(data_norm=1.0, y_bound=1.0, random_state=0).fit(X, y)
    law = est.release_law()
    Xs, ys = law.scaler.scale(X, y)
    eps = law.epsilon(est.delta, est.law_statistics()(Xs, ys))
    assert_allclose(eps, est.pdp_losses_, rtol=1e-12)
    # added targets, with a label and with the worst one
    X_new, y_new = _squeezable_data(50, seed=1)
    Xn, yn = law.scaler.scale(X_new, y_new)
    for labels, given in ((yn, y_new), (None, None)):
        added = law.epsilon(est.delta, est.law_statistics()(Xn, labels, add=True))
        assert_allclose(added, est.pdp_epsilon(X_new, given), rtol=1e-9)


@pytest.mark.parametrize("radius", [1.0, 0.1])
def test_ball_law_reproduces_the_estimators_losses(radius):
    # the law at the exact statistics gives the estimator's losses, whether
    # the constraint is inactive (exact) or binds (the variational bound,
    # far below the strong-convexity one)
    X, y = _squeezable_data(1500)
    est = OutputPerturbationRegressor(radius=radius, data_norm=1.0, y_bound=1.0,
                                      random_state=0).fit(X, y)
    law = est.release_law()
    Xs, ys = law.scaler.scale(X, y)
    stats = est.law_statistics()(Xs, ys)
    eps = law.epsilon(est.delta, stats)
    # the fit's folded products and these scaled rows round differently
    assert_allclose(eps, est.pdp_losses_, rtol=1e-9)
    assert est.release_.inside == (radius == 1.0)
    if not est.release_.inside:
        norm = np.sqrt(stats["norm2"])
        _, convexity = _ball_constants(est.alpha_, len(y), radius, True)
        strong = norm * (radius * norm + stats["label"]) / convexity
        strong_eps = gaussian_epsilon(est.delta, strong / est.noise_scale_)
        assert np.median(est.pdp_losses_ / strong_eps) < 0.2


@pytest.mark.parametrize("radius, alpha", [(0.3, 5.0), (0.5, 1.0), (10.0, 1.0)])
def test_ball_bound_covers_the_constrained_solutions(radius, alpha):
    # ||theta_c - theta_c'|| of the ball-constrained ridge, solved with and
    # without each row (and with targets added), never exceeds the law's bound
    X, y = _squeezable_data(500, d=3)  # above the fallback to the label mean
    y = np.clip(3 * y, -1, 1)  # large coefficients: the constraint binds
    est = OutputPerturbationRegressor(alpha=alpha, radius=radius, data_norm=1.0,
                                      y_bound=1.0, random_state=0).fit(X, y)
    law = est.release_law()
    Xs, ys = law.scaler.scale(X, y)
    H = Xs.T @ Xs + alpha * penalty(Xs.shape[1], True)
    full = ball_ridge(H, Xs.T @ ys, radius)

    def moved(x, label, sign):
        other = ball_ridge(H + sign * np.outer(x, x), Xs.T @ ys + sign * label * x, radius)
        return np.linalg.norm(full - other)

    removed = np.array([moved(x, t, -1) for x, t in zip(Xs, ys)])
    bound = law._ball_bound(est.law_statistics()(Xs, ys))
    assert np.all(bound >= removed * (1 - 1e-9))
    X_new, y_new = _squeezable_data(40, d=3, seed=1)
    Xn, yn = law.scaler.scale(X_new, np.clip(3 * y_new, -1, 1))
    added = np.array([moved(x, t, 1) for x, t in zip(Xn, yn)])
    assert np.all(law._ball_bound(est.law_statistics()(Xn, yn, add=True)) >= added * (1 - 1e-9))
    worst = np.array([max(moved(x, t, 1) for t in (-1.0, 1.0)) for x in Xn])
    assert np.all(law._ball_bound(est.law_statistics()(Xn, None, add=True)) >= worst * (1 - 1e-9))
    # tight where the constraint is inactive, within a few times where it binds
    assert np.median(bound / removed) < (1.2 if est.release_.inside else 8.0)


def test_sketch_bound_coverage():
    # tau' <= s^2 z^T (R^T R)^{-1} z for all rows at once, on at least
    # 1 - beta of the sketches; with 1500 sketch rows s^2 / n' = 1.26 and the
    # bound is within 35% of tau' at the median
    X, y = _squeezable_data(2000, d=3)
    est = RandomProjectionRegressor(n_components=1500, data_norm=1.0, y_bound=1.0,
                                    random_state=0).fit(X, y)
    law = est.release_law()
    Xs, ys = law.scaler.scale(X, y)
    exact = est.law_statistics()(Xs, ys)
    tau = exact["tau"]
    runs, beta = 1000, 0.05

    class Published:  # what published_statistics reads
        pass

    published = Published()
    published.beta = beta
    sketches = est.release_.draw(np.random.RandomState(1), size=runs)
    covered, ratios = [], []
    for R in sketches:
        law.sketch_gram = R.T @ R
        bounds = law.published_statistics(published, Xs, ys)
        upper = bounds["tau"]
        # the released label sum's part is the row's own |y|: exact
        assert_array_equal(bounds["ysum"], exact["ysum"])
        covered.append(np.all(upper >= tau))
        ratios.append(np.median(upper / tau))
    assert np.mean(covered) >= 1 - beta - 3 * np.sqrt(beta * (1 - beta) / runs)
    assert np.median(ratios) < 1.35


def test_laplace_law_reproduces_the_estimators_losses():
    X, y = _squeezable_data(1500)
    est = OutputPerturbationRegressor(noise="laplace", data_norm=1.0, y_bound=1.0,
                                      random_state=0).fit(X, y)
    _, _, stats, _ = _in_sample_stats(est, X, y)
    assert_allclose(est.release_law().epsilon(est.delta, stats), est.pdp_losses_, rtol=1e-9)


@pytest.mark.parametrize("cls", RIDGE_LAWS)
def test_residual_margin_has_its_coverage(cls):
    # |x^T (coef - theta_hat)| exceeds the margin with probability beta for
    # the Gaussian laws (exactly: a two-sided normal quantile)
    X, y = _squeezable_data(800, d=3)
    est = cls(data_norm=1.0, y_bound=1.0, random_state=0, **_fixed_ridge(cls)).fit(X, y)
    law = est.release_law()
    Xs, _, stats, ridge = _in_sample_stats(est, X, y)
    runs, beta = 20000, 0.1
    draws = est.release_.draw(np.random.RandomState(1), size=runs)
    rows = [0, 1, 2]
    shift = (draws - ridge.coef) @ Xs[rows].T
    margin = law.residual_margin(beta, {k: v[rows] for k, v in stats.items()})
    miss = np.mean(np.abs(shift) > margin, axis=0)
    se = np.sqrt(beta * (1 - beta) / runs)
    assert np.all(np.abs(miss - beta) < 4 * se), miss


def test_laplace_residual_margin_is_valid():
    X, y = _squeezable_data(800, d=3)
    est = OutputPerturbationRegressor(noise="laplace", data_norm=1.0, y_bound=1.0,
                                      random_state=0).fit(X, y)
    Xs, _, stats, ridge = _in_sample_stats(est, X, y)
    runs, beta = 20000, 0.1
    shift = (est.release_.draw(np.random.RandomState(1), size=runs) - ridge.coef) @ Xs[:3].T
    margin = est.release_law().residual_margin(beta, {k: v[:3] for k, v in stats.items()})
    assert np.all(np.mean(np.abs(shift) > margin, axis=0) <= beta)


@pytest.mark.parametrize("intercept", [True, False])
def test_gram_noise_bound_coverage(intercept):
    # P(||E|| > t(beta)) <= beta for the symmetric noise of the Gram release
    rng = np.random.RandomState(0)
    runs, beta, p = 20000, 0.05, 6
    norms = np.linalg.norm(gram_noise(rng, p, intercept, size=runs), ord=2, axis=(1, 2))
    t = gram_noise_bound(p, beta)
    assert np.mean(norms > t) <= beta
    # a proven bound (Sudakov-Fernique and Gaussian concentration) is looser
    # than the simulated quantile, by less than 1.8x at this size
    assert t < 1.8 * np.quantile(norms, 1 - beta)


# objective perturbation's per-row quadratures over 20000 rows take a minute:
# under the audit marker (its laws at a smaller n: the tests below), with
# OPS's alpha="auto", which releases AdaOPS's law (the AdaOPS case)
@pytest.mark.parametrize("cls, params", [
    pytest.param(*law.values, id=law.id, marks=pytest.mark.audit)
    if law.values[0] is ObjPertRegressor or law.id == "OPSRegressor-auto" else law
    for law in LAWS])
def test_targets_at_n_20000(cls, params):
    X, y = _squeezable_data(20000)
    report = _report(cls, X, y, **_law_params(cls, params))
    published = report.published_
    exact = report.pdp_losses_
    bound = published.epsilon(X, y)
    assert np.mean(bound >= exact) >= 0.95
    assert np.median(bound / exact) <= 3.0
    assert 0.5 <= published.summary["median"] / np.median(exact) <= 2.0
    model = report.estimator_.dp_epsilon_
    assert model < report.dp_epsilon_ <= model + 0.2 + 1e-9
    assert report.summary_["dp_epsilon"] == report.dp_epsilon_
    assert len(pickle.dumps(published)) < 10_000


def test_random_projection_publishes_no_gram():
    # the sketch bounds the statistic: the whole budget goes to the summary,
    # and a training row's loss is the model's plus the summary's
    X, y = _squeezable_data(3000, d=3)
    report = _report(RandomProjectionRegressor, X, y)
    published = report.published_
    assert published.noisy_gram is None and published.summary_epsilon == 0.2
    assert_allclose(report.pdp_losses_, report.estimator_.pdp_losses_ + 0.2, rtol=1e-12)
    assert report.dp_epsilon_ == report.estimator_.dp_epsilon_ + 0.2
    bound = published.epsilon(X, y)
    assert np.all(bound >= report.pdp_losses_)
    model = report.estimator_.pdp_losses_
    assert np.median((bound - 0.2) / model) < 1.5


# objective perturbation's fixed-ridge law over 20000 rows: under the audit marker
@pytest.mark.parametrize("cls", [
    pytest.param(cls, id=cls.__name__,
                 marks=pytest.mark.audit if cls is ObjPertRegressor else ())
    for cls in RIDGE_LAWS])
def test_model_part_of_the_bound_is_tight(cls):
    # without the publication's own (exact, shared) cost the bound stays
    # within a small factor of the model's exact loss for a typical row
    X, y = _squeezable_data(20000)
    report = _report(cls, X, y, **_ridge_params(cls, 20000))
    law = report.published_.law
    Xs, ys, stats, _ = _in_sample_stats(report.estimator_, X, y)
    upper = report.published_.upper_statistics(Xs)
    upper["residual"] = np.abs(ys - Xs @ law.coef) + law.residual_margin(0.025, upper)
    with np.errstate(divide="ignore"):  # a row of zero loss: an infinite ratio
        ratio = law.epsilon(report.estimator_.delta, upper) / report.estimator_.pdp_losses_
    assert np.median(ratio) <= 3.0


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_adassp_report_composes_exactly(fit_intercept):
    """AdaSSP and the published Gram are one Gaussian mechanism: a training
    row's loss is the Gaussian epsilon at the two ratios added in squares,
    and its published bound differs only by the eigenvalue's change, bounded
    by the rank-one update through the noisy feature mean."""
    X, y = _squeezable_data(3000, d=3)
    report = _report(AdaSSPRegressor, X, y, fit_intercept=fit_intercept)
    est, published = report.estimator_, report.published_
    law = published.law
    Xs, ys = law.scaler.scale(X, y)
    changes = est.release_.statistics(Xs, ys)
    model = np.sqrt(sum(changes[k] / s**2 for k, s in law.noise_scale.items()))
    total = np.hypot(model, published.gaussian_ratio(Xs))
    expected = gaussian_epsilon(est.delta, total) + published.summary_epsilon
    assert_allclose(report.pdp_losses_, expected, rtol=1e-9)
    upper = law.published_statistics(published, Xs, ys)
    for key in ("gram", "xy", "ysum"):
        assert_allclose(upper[key], changes[key], rtol=1e-12)
    assert np.mean(upper["eigen"] >= changes["eigen"]) == 1.0
    bound = published.scaled_epsilon(Xs, ys)
    assert np.all(bound >= report.pdp_losses_ * (1 - 1e-9))
    assert np.median(bound / report.pdp_losses_) <= 1.5


def test_pickle_holds_no_rows():
    sizes = []
    for n in (2000, 8000):
        X, y = _squeezable_data(n)
        published = _report(OPSRegressor, X, y, alpha=300.0).published_
        sizes.append(len(pickle.dumps(published)))
        arrays = [v for v in vars(published).values() if isinstance(v, np.ndarray)]
        arrays += [v for v in vars(published.law).values() if isinstance(v, np.ndarray)]
        assert all(a.size <= 36 for a in arrays)
    assert sizes[0] == sizes[1]


# 1000 rows are too few for the projection's slopes: the label mean
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.FallbackWarning")
# objective perturbation's private ridge (its calibration takes seconds):
# under the audit marker (in the default run: its contract,
# tests/mechanisms/test_release_contract.py)
@pytest.mark.parametrize("cls, params", [
    pytest.param(*law.values, id=law.id, marks=pytest.mark.audit)
    if law.id == "ObjPertRegressor-auto" else law for law in LAWS])
def test_losses_do_not_depend_on_the_draw(cls, params):
    X, y = _squeezable_data(1000, d=3)
    params = _law_params(cls, params)
    a, b = _report(cls, X, y, seed=0, **params), _report(cls, X, y, seed=1, **params)
    assert_allclose(a.pdp_losses_, b.pdp_losses_, rtol=1e-12)
    assert a.dp_epsilon_ == b.dp_epsilon_
    # the publication's cost is in every row's loss
    assert np.all(a.pdp_losses_ > a.estimator_.pdp_losses_)


def test_transform_includes_the_publication():
    X, y = _squeezable_data(1000, d=3)
    report = _report(OPSRegressor, X, y)
    plain = PDPReport(report.estimator).fit(X, y)
    eps = report.transform(X[:20])[:, 0]
    assert np.all(eps > plain.transform(X[:20])[:, 0])
    assert np.all(eps <= report.dp_epsilon_)
    # the published bound with the worst label covers it too (beta = 0.05)
    assert np.mean(report.published_.epsilon(X[:20]) >= eps) >= 0.9


@pytest.mark.parametrize("est", [
    RandomProjectionRegressor(variant="paper", data_norm=1.0, y_bound=1.0),
    PrivateGridSearchCV(OPSRegressor(alpha=300.0, data_norm=1.0, y_bound=1.0),
                        {"epsilon": [0.5, 1.0]}),
], ids=["paper", "refit"])
@pytest.mark.filterwarnings("ignore:variant='paper'")
def test_unsupported_estimators_are_named(est):
    X, y = _squeezable_data(3000, d=3)
    name = type(est).__name__
    with pytest.raises(NotImplementedError, match=f"not supported for {name}"):
        PDPReport(est, publish_epsilon=0.2).fit(X, y)


def test_adaops_law_reproduces_the_estimators_losses():
    # the mixture over pairs of cells, for training rows and added ones
    X, y = _squeezable_data(3000, d=3)
    est = AdaOPSRegressor(data_norm=1.0, y_bound=1.0, random_state=0).fit(X, y)
    assert not est.mean_only_
    law = est.release_law()
    assert (law.cal.floor(law.cell), law.cal.ridge(law.cell)) == (est.floor_, est.alpha_)
    Xs, ys = law.scaler.scale(X, y)
    eps = law.epsilon(est.delta, est.law_statistics()(Xs, ys))
    assert_allclose(eps, est.pdp_losses_, rtol=1e-12)
    X_new, y_new = _squeezable_data(50, d=3, seed=1)
    Xn, yn = law.scaler.scale(X_new, y_new)
    for labels, given in ((yn, y_new), (None, None)):
        added = law.epsilon(est.delta, est.law_statistics()(Xn, labels, add=True))
        assert_allclose(added, est.pdp_epsilon(X_new, given), rtol=1e-12)


# squeeze 0.55 (cells with and without ridge) in the default run, 1.0 under
# the audit marker
@pytest.mark.parametrize("squeeze", [pytest.param(1.0, marks=pytest.mark.audit), 0.55])
@pytest.mark.parametrize("add", [False, True])
def test_adaops_composition_bounds_the_exact_mixture(squeeze, add):
    """The published bound's inequality itself, at the exact statistics: the
    two cell releases as one Gaussian mechanism (ratio: the row's changes of
    G and of log R over their noise) composed with the largest OPS loss over
    the pairs of cells within the window, the mass outside spent from delta,
    is at least the exact mixture, for every row (squeeze 0.55: cells with
    and without ridge in the window)."""
    X, y = _squeezable_data(20000, squeeze=squeeze)
    est = AdaOPSRegressor(data_norm=1.0, y_bound=1.0, tighten_bounds=False,
                          random_state=0).fit(X, y)
    Xs, ys = est.release_law().scaler.scale(X, y)
    cal = est.release_.cal
    delta = 0.9 * est.delta  # the model's share next to a publication
    half = 0.5 * (delta - _PUBLISHED_WINDOW_SHARE * est.delta)
    z = -ndtri(_PUBLISHED_WINDOW_SHARE * est.delta / 4)
    shift = np.abs(np.sum(est.release_._conditioning_shifts(Xs, add=add), axis=0))
    reach = z * cal.sigma + shift.max()
    first, last = cal.index([est.release_.G - cal.margin - reach, est.release_.G - cal.margin + reach])
    ratio2, sample = np.zeros(len(ys)), np.zeros(len(ys))
    ridges = set()
    for k in range(first, last + 1):
        ridges.add(cal.ridge(k))
        mu, r, shifts = est.release_._cell_rows(k, Xs, ys, add)
        step = np.abs(np.sum(shifts, axis=0))
        centre = est.release_._cell_fit(k)[1] + cal.z * cal.bound_grid(k)[1]
        sigma = cal.bound_grid(k)[1]
        ratio2 = np.maximum(ratio2, step / sigma)
        low = cal.bound_index(k, centre - z * sigma - step)
        high = cal.bound_index(k, centre + z * sigma + step)
        js = np.arange(low.min(), high.max() + 1)
        gammas = np.array([cal.gamma(k, int(j)) for j in js])
        gamma = np.where((js >= low[:, None]) & (js <= high[:, None]), gammas, 0).max(axis=1)
        sample = np.maximum(sample, ops_epsilon(half, mu, r, gamma))
    assert len(ridges) == (2 if squeeze < 1 else 1)
    bound = gaussian_epsilon(half, np.hypot(shift / cal.sigma, ratio2)) + sample
    exact = ops_mixture_epsilon(delta, **est.release_._mixture_columns(Xs, ys, add))
    assert np.all(bound >= exact)
    assert np.median(bound / exact) < 3.0


def _redraw(report, rng):
    """The published object of another draw of the whole release: the
    estimator's cells, coefficients and released means, and the
    publication's Gram noise."""
    est, published = report.estimator_, report.published_
    cells, bounds = est.release_._draw_cells(rng, 1)
    k, j = int(cells[0]), int(bounds[0])
    ridge, gamma = est.release_._cell_fit(k)[0], est.release_.cal.gamma(k, j)
    law = copy.copy(published.law)
    law.cell, law.gamma, law.alpha = k, gamma, est.release_.cal.ridge(k)
    law.coef = ridge.coef + ridge.sample(rng, 1.0 / np.sqrt(gamma))
    if law.released_means is not None:
        law.released_means = est.release_.means + law.means_noise * rng.standard_normal(
            law.released_means.shape[0])
    other = copy.copy(published)
    other.law = law
    other.noisy_gram = est.release_.XtX + published.noise_scale * gram_noise(
        rng, est.release_.XtX.shape[0], est.fit_intercept)
    return other


# the floor below is derived from the runs: 50 in the default run, 200 and
# 2000 under the audit marker
@pytest.mark.parametrize("runs", [50, pytest.param(200, marks=pytest.mark.audit),
                                  pytest.param(2000, marks=pytest.mark.audit)])
def test_adaops_published_bound_coverage(runs):
    """The whole release redrawn (the two cells, the coefficients and the
    Gram noise): each fixed row's published bound covers its exact loss, and
    each high-probability step holds, with frequency >= 1 - beta; the rows
    are those whose bound is closest to their loss, and a few others (at
    n = 20000 with cells with and without ridge in the window: at the audit's
    n = 1000 the bound is the guarantee)."""
    X, y = _squeezable_data(20000, squeeze=0.55)
    report = _report(AdaOPSRegressor, X, y)
    est, law = report.estimator_, report.published_.law
    Xs, ys = law.scaler.scale(X, y)
    ratio = report.published_.scaled_epsilon(Xs, ys) / report.pdp_losses_
    rows = np.concatenate([np.argsort(ratio)[:10], np.arange(5)])
    Xr, yr, exact = Xs[rows], ys[rows], report.pdp_losses_[rows]
    cal = est.release_.cal
    shift = np.abs(est.release_._conditioning_shifts(Xr, add=False)[0])
    cells = {int(cal.index(est.release_.G - cal.margin + e * cal.sigma)) for e in (-3, 0, 3)}
    truth = {k: (est.release_._cell_rows(k, Xr, yr, add=False), est.release_._cell_fit(k)[1]) for k in cells}
    means = est.release_._means_ratio(Xr, yr, add=False)
    assert means is not None and np.all(means > 0)
    rng = np.random.RandomState(1)
    beta = report.published_.beta
    covered, held = np.zeros(rows.size), np.zeros(rows.size)
    for _ in range(runs):
        published = _redraw(report, rng)
        law = published.law
        covered += published.scaled_epsilon(Xr, yr) >= exact
        low, high = law.conditioning_interval(published, beta / 8)
        ok = (low <= est.release_.G <= high) & (law.conditioning_change(published, Xr, high) >= shift)
        ok &= means_bound(law.released_means, law.means_noise, law.n_samples, Xr, yr,
                          beta / 16) >= means
        released = law._released_bounds(published, Xr, yr)
        for k, ((mu, r, (step, _)), log_R) in truth.items():
            b = law.ridge_bounds(published, Xr, cal.ridge(k), released, law.cell_floor(k, low))
            ok &= (b["mu"] >= mu) & (b["r"] >= np.abs(r)) & (b["log_step"] >= np.abs(step))
            ok &= (np.log(b["R_low"]) <= log_R) & (log_R <= np.log(b["R_high"]))
        held += ok
    floor = 1 - beta - 3 * np.sqrt(beta * (1 - beta) / runs)
    assert np.all(covered / runs >= floor) and np.all(held / runs >= floor)


@pytest.mark.parametrize("epsilon", [None, 1.0])
def test_search_without_refit_publishes_its_exact_losses(epsilon):
    # max(G, selection bound of the label): a public function of the label,
    # so the published bound of a training row is its loss; G at n + 1
    # records for anyone added
    X, y = _squeezable_data(6000, d=3)
    grid = {"gamma": [10.0, 100.0]} if epsilon is None else {"alpha": [300.0, 3000.0]}
    ops = OPSRegressor(epsilon=epsilon, alpha=1000.0, data_norm=1.0, y_bound=1.0)
    search = PrivateGridSearchCV(ops, grid, epsilon=1.0, refit=False, random_state=0)
    report = PDPReport(search, publish_epsilon=0.2, random_state=0).fit(X, y)
    published = report.published_
    assert published.noisy_gram is None
    assert_allclose(report.pdp_losses_, search.fit(X, y).pdp_losses_ + 0.2, rtol=1e-12)
    assert report.dp_epsilon_ == report.estimator_.dp_epsilon_ + 0.2
    bound = published.epsilon(X, y)
    assert np.all(bound >= report.pdp_losses_) and np.median(bound / report.pdp_losses_) < 1.01
    added = report.transform(X[:20])[:, 0]
    assert np.all(published.epsilon(X[:20]) >= added)
    assert_allclose(added, report.estimator_.pdp_epsilon(X[:20]) + 0.2, rtol=1e-12)
    # all losses tie: the private median is theirs (rounded up to the grid)
    exact = np.median(report.pdp_losses_)
    assert exact <= published.summary["median"] <= exact * (1 + 2 * _GRID_STEP)


def test_publish_epsilon_validated():
    X, y = _squeezable_data(100, d=2)
    with pytest.raises(ValueError, match="publish_epsilon"):
        PDPReport(publish_epsilon=-1.0).fit(X, y)
    with pytest.raises(ValueError, match="publish_beta"):
        PDPReport(publish_beta=1.5).fit(X, y)


def test_epsilon_checks_its_input():
    X, y = _squeezable_data(1000, d=3)
    published = _report(OPSRegressor, X, y).published_
    with pytest.raises(ValueError, match="features"):
        published.epsilon(X[:, :2])
    with pytest.raises(ValueError, match="shape"):
        published.epsilon(X, y[:5])


def test_objpert_loss_grows_with_the_leverage_at_fixed_inverse_norm():
    # ObjPertRelease's law takes the upper corner of the box: the loss must not fall
    # as mu rises towards sqrt(||x||^2 x^T H^{-2} x)
    for sigma in (1.0, 30.0, 300.0):
        for norm2, w, r in [(0.5, 1e-6, 0.1), (2.0, 1e-4, 1.0), (1.0, 1e-2, 0.0),
                            (2.0, 1e-5, 3.0)]:
            mu = np.linspace(0.0, np.sqrt(norm2 * w), 25)
            eps = objpert_epsilon(1e-6, np.full(25, norm2), mu, np.full(25, w),
                                  np.full(25, r), sigma)
            assert np.all(np.diff(eps) >= -1e-9 * eps[-1])


# a call per draw: 20000 draws under the audit marker
@pytest.mark.parametrize("runs", [5000, pytest.param(20000, marks=pytest.mark.audit)])
def test_private_quantile_is_the_exponential_mechanism(runs):
    # on a tiny data set with ties the output's law is exp(eps u / 2) over
    # the grid: check the mass at each rounded value and on each stretch
    # between them (where the utility is constant) against the draws
    values = np.array([0.6, 0.6, 0.7, 0.9])
    eps, lower, upper, q = 2.0, 0.5, 1.0, 0.5
    rng = np.random.RandomState(0)
    draws = np.log([_private_quantile(values, q, eps, lower, upper, rng)
                    for _ in range(runs)])
    grid = np.linspace(np.log(lower), np.log(upper), int(np.ceil(np.log(2) / _GRID_STEP)) + 1)
    cells = np.searchsorted(grid, np.log(values))
    index = np.arange(grid.size)
    below = np.array([np.sum(cells < j) for j in index])
    at_most = np.array([np.sum(cells <= j) for j in index])
    weight = np.exp(-0.5 * eps * np.maximum(np.maximum(below - q * 4, q * 4 - at_most), 0))
    # segment of each grid point: 2 j + 1 on the j-th rounded value, 2 j on
    # the stretch before it
    ends = np.unique(cells)
    segment = 2 * np.searchsorted(ends, index) + np.isin(index, ends)
    expected = np.bincount(segment, weights=weight) / weight.sum()
    drawn = np.rint((draws - grid[0]) / (grid[1] - grid[0])).astype(int)
    counts = np.bincount(segment[drawn], minlength=expected.size)
    assert st.chisquare(counts, expected * draws.size).pvalue > 1e-3


@pytest.mark.audit
@pytest.mark.parametrize("cls, params", LAWS)
def test_published_bound_coverage_over_releases(cls, params):
    # the whole release (model and publication) redrawn: each fixed row's
    # bound covers its exact loss with frequency >= 1 - beta
    X, y = _squeezable_data(1000, d=3)
    runs, beta, rows = 300, 0.05, np.arange(5)
    hits = np.zeros(rows.size)
    for seed in range(runs):
        report = _report(cls, X, y, seed=seed, **_law_params(cls, params))
        hits += report.published_.epsilon(X[rows], y[rows]) >= report.pdp_losses_[rows]
    assert np.all(hits / runs >= 1 - beta - 3 * np.sqrt(beta * (1 - beta) / runs))


@pytest.mark.parametrize("n", [30, 442, 5000])
def test_private_summary_is_consistent(n):
    """Whatever the noise: quantiles non-decreasing, fractions non-decreasing
    in the threshold and in [0, 1] (0 below the public floor, 1 from the
    public ceiling), the mean inside the range the quantiles leave it."""
    rng = np.random.default_rng(0)
    lower, upper = 0.05, 3.0
    thresholds = np.array([1.0, 0.1, 0.5, 0.01, 3.0])  # unsorted on purpose
    for seed in range(40):
        values = np.clip(lower + rng.gamma(0.5, 0.4, size=n), lower, upper)
        s = private_summary(values, thresholds, 0.05, lower, upper,
                            np.random.default_rng(seed))
        q = [s[key] for key in _QUANTILES]
        assert lower <= q[0] and np.all(np.diff(q) >= 0) and q[-1] <= upper
        below = [s["below"][t] for t in np.sort(thresholds)]
        assert np.all(np.diff(below) >= 0) and 0 <= below[0] and below[-1] <= 1
        assert s["below"][0.01] == 0.0 and s["below"][3.0] == 1.0
        assert list(s["below"]) == list(thresholds)  # the order given
        levels = _QUANTILES.values()
        low = max(p * lower + (1 - p) * v for p, v in zip(levels, q))
        high = min(p * v + (1 - p) * upper for p, v in zip(levels, q))
        assert low - 1e-12 <= s["mean"] <= high + 1e-12
        # the standard errors are those of the Laplace noise (public)
        part = 0.05 / 5
        assert s["stderr"]["mean"] == pytest.approx(np.sqrt(2) * upper / part / n)
        assert s["stderr"]["below"] == pytest.approx(np.sqrt(2) * 5 / part / n)


def test_private_quantile_levels_cover():
    """The published quantile is a quantile of a level inside its stated
    interval in at least the stated share of draws."""
    rng = np.random.default_rng(1)
    values = np.sort(0.1 + rng.exponential(0.3, size=300))
    hits = {key: 0 for key in _QUANTILES}
    runs = 200
    for seed in range(runs):
        s = private_summary(values, [], 0.5, 0.1, 5.0, np.random.default_rng(seed))
        rounded = values * (1 + _GRID_STEP)  # values are rounded up to the grid
        for key in _QUANTILES:
            lo, hi = s["quantile_levels"][key]
            o = s[key]
            # o is a q-quantile for some q in [lo, hi] of the rounded values
            hits[key] += (np.mean(values < o) <= hi + 1e-12
                          and np.mean(rounded <= o) >= lo - 1e-12)
    assert min(hits.values()) / runs >= 0.9


def test_adaops_publication_without_numpy_warnings():
    """Ill-conditioned features at a small publish_epsilon: a cell of the
    window has no bounded leverage (gamma inf there), which costs an
    infinite ratio, not numpy warnings (they reached the user before)."""
    rng = np.random.RandomState(0)
    X = rng.normal(size=(2000, 5)) * [1, 1, .5, .3, .1]
    y = X @ [1, -1, .5, .2, .1] + 0.5 * rng.normal(size=2000)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = PDPReport(AdaOPSRegressor(data_norm=4.5, y_bound=4.0, random_state=0),
                           publish_epsilon=0.2, random_state=0).fit(X, y)
        bound = report.published_.epsilon(X[:100], y[:100])
    assert np.all(bound >= report.pdp_losses_[:100] * (1 - 1e-9))


def test_published_bound_covers_a_person_added_at_the_worst_row():
    """AdaSSP's noise is sized for removals from n rows; a person added to 41
    identical rows moves the eigenvalue by 4 n / (n + 1) and loses more than
    the guarantee: the published bound, capped at the worst of both
    directions, still covers their exact total loss."""
    X, y = -np.ones((41, 1)), -np.ones(41)
    report = PDPReport(AdaSSPRegressor(epsilon=3.0, data_norm=1.0, y_bound=1.0,
                                       random_state=0),
                       publish_epsilon=0.5, random_state=0).fit(X, y)
    est, published = report.estimator_, report.published_
    target, label = np.array([[1.0]]), np.array([1.0])
    scaler = est.domain_scaler()
    Xs, ys = scaler.scale(target), scaler.scale_labels(label)
    model = est.release_.row_ratio(Xs, ys, add=True)
    exact = gaussian_epsilon(published.delta, np.hypot(model, published.gaussian_ratio(Xs)))
    exact = exact + published.summary_epsilon
    assert exact[0] > published.dp_epsilon  # the removal guarantee under-reports
    assert published.epsilon(target, label)[0] >= exact[0] * (1 - 1e-9)
    assert published.cap_epsilon >= exact[0] * (1 - 1e-9)


@pytest.mark.parametrize("make", [
    lambda: OPSRegressor(epsilon=None, gamma=2.0, alpha=3.0, data_norm=1.5, y_bound=1.0),
    lambda: ObjPertRegressor(epsilon=None, sigma=2.0, alpha=3.0, data_norm=1.5, y_bound=1.0),
])
def test_law_cap_covers_added_rows(make):
    """OPS's and objective perturbation's published cap is the domain's worst
    at n and at n + 1 rows: never below a person added, even where that
    exceeds the removal guarantee."""
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, size=(12, 2))
    y = rng.uniform(-1, 1, size=12)
    est = make().fit(X, y)
    law = est.release_law()
    n = est.pdp_losses_.size
    assert law.cap_epsilon(est.delta) >= law.dp_epsilon(est.delta)
    corner = (ops_dp_epsilon(est.delta, 3.0, 2.0, n + 1, True)
              if isinstance(est, OPSRegressor)
              else objpert_dp_epsilon(est.delta, 3.0, 2.0, n + 1, True))
    assert law.cap_epsilon(est.delta) >= corner
    # extreme persons, added: their exact (uncapped) loss is within the cap
    targets = rng.uniform(-1, 1, size=(400, 2))
    targets *= 1.5 / np.linalg.norm(targets, axis=1, keepdims=True)
    added = est.pdp_epsilon(targets)
    assert np.all(added <= law.cap_epsilon(est.delta) * (1 + 1e-9))


def test_output_perturbation_cap_covers_a_person_added_at_the_worst_row():
    """Without a radius the global sensitivity grows with n (the residual's
    sqrt(n / alpha)): the published cap and each row's clip are the
    sensitivity at n + 1 rows, above the removal guarantee. At the domain's
    worst row, added to the n rows that make ||theta_hat|| largest, the
    published bound covers the exact loss of the release (refitted with the
    row)."""
    n, alpha = 200, 0.5  # sqrt(n) / (2 sqrt(alpha)) = 10 dominates the 1
    X, y = np.full((n, 1), np.sqrt(alpha / n)), np.ones(n)  # ||theta_hat|| at its bound
    report = PDPReport(OutputPerturbationRegressor(alpha=alpha, fit_intercept=False,
                                                   data_norm=1.0, y_bound=1.0,
                                                   random_state=0),
                       publish_epsilon=0.5, random_state=0).fit(X, y)
    est, published = report.estimator_, report.published_
    law = est.release_law()
    worst = output_perturbation_sensitivity(alpha, n + 1) / est.noise_scale_
    assert law.cap_epsilon(est.delta) == pytest.approx(gaussian_epsilon(est.delta, worst))
    assert law.cap_epsilon(est.delta) > law.dp_epsilon(est.delta) * (1 + 1e-3)
    assert published.cap_epsilon > published.dp_epsilon * (1 + 1e-3)
    # the worst row: |residual| 1 + ||theta_hat||, ||H^{-1} x|| largest along theta_hat
    target, label = np.array([[-1.0]]), np.array([1.0])
    scaler = est.domain_scaler()
    Xs, ys = scaler.scale(X), scaler.scale_labels(y)
    Xt, yt = scaler.scale(target), scaler.scale_labels(label)

    def ridge(A, b):
        return np.linalg.solve(A.T @ A + alpha * np.eye(A.shape[1]), A.T @ b)

    shift = np.linalg.norm(ridge(np.vstack([Xs, Xt]), np.append(ys, yt)) - ridge(Xs, ys))
    ratio = shift / est.noise_scale_
    assert_allclose(est.pdp_epsilon(target, label), gaussian_epsilon(est.delta, ratio),
                    rtol=1e-9)
    exact = gaussian_epsilon(published.delta, np.hypot(ratio, published.gaussian_ratio(Xt)))
    exact = exact + published.summary_epsilon
    assert published.epsilon(target, label)[0] >= exact[0] * (1 - 1e-9)
    # the published bound at this row is the cap at n + 1 rows, no longer
    # the removal guarantee
    assert published.epsilon(target, label)[0] > published.dp_epsilon * (1 + 1e-3)


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_output_perturbation_ball_cap_is_the_removal_guarantee(fit_intercept):
    """With a radius the global sensitivity min(L / c, 2R) does not grow with
    n (the intercept's convexity min(alpha, n - 1) / 5 only rises): the cap
    at n + 1 rows is the removal guarantee."""
    n, alpha = 1500, 5.0
    assert (output_perturbation_sensitivity(alpha, n + 1, 1.0, fit_intercept)
            <= output_perturbation_sensitivity(alpha, n, 1.0, fit_intercept))
    X, y = _squeezable_data(n)
    est = OutputPerturbationRegressor(alpha=alpha, radius=1.0, fit_intercept=fit_intercept,
                                      data_norm=1.0, y_bound=1.0, random_state=0).fit(X, y)
    law = est.release_law()
    assert law.cap_epsilon(est.delta) == law.dp_epsilon(est.delta) == est.dp_epsilon_


def _skewed(n=20000, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, 5)) * [1, 1, .5, .3, .1]
    return X, X @ rng.normal(size=5) + 0.5 * rng.normal(size=n)


@functools.cache
def _skewed_report(bounds="data_norm", publish_epsilon=0.2, fit_intercept=True):
    """AdaOPS's report on :func:`_skewed` data, its bounds the data's own
    (``bounds``: declared as "data_norm" or "bounds_X"), fitted once for the
    tests that read it."""
    X, y = _skewed()
    kw = (dict(data_norm=np.linalg.norm(X, axis=1).max(), y_bound=np.abs(y).max())
          if bounds == "data_norm" else dict(bounds_X=(X.min(0), X.max(0)),
                                             y_bound=(y.min(), y.max())))
    est = AdaOPSRegressor(**kw, fit_intercept=fit_intercept, tighten_bounds=False,
                          random_state=0)
    return PDPReport(est, publish_epsilon=publish_epsilon, random_state=0).fit(X, y), X, y


# a smaller publication budget under the audit marker
@pytest.mark.parametrize("bounds, publish_epsilon", [
    ("data_norm", 0.2), ("bounds_X", 0.2),
    pytest.param("bounds_X", 0.1, marks=pytest.mark.audit)])
def test_adaops_published_bound_at_its_defaults(bounds, publish_epsilon):
    """Features of unequal scales, bounds the data's own: the released cell
    has a large ridge, but the window reaches cells without ridge, where the
    noisy Gram alone certifies no leverage (its noise, 248, above their
    lambda_min): each cell's statistics use the floor on G its presence in
    the window implies. Every bound covers its exact loss, and the median
    ratio is at most 3 (it was 8.4 and 8.6 at 0.2, each bound the DP epsilon)."""
    report, X, y = _skewed_report(bounds, publish_epsilon)
    law = report.published_.law
    assert law.cal.ridge(law.cell) > 100  # a cell with ridge was released
    bound = report.published_.epsilon(X, y)
    assert np.all(bound >= report.pdp_losses_)
    assert np.median(bound / report.pdp_losses_) <= 3.0


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_floor_bound_is_below_the_regularised_gram(fit_intercept):
    """With the scatter's true lambda_min as floor (the largest one a caller
    can certify) and the Gram noise on its event, B <= Z^T Z + alpha P, and
    the mixed bounds cover the exact leverage and ||H^{-1} x||^2 where the
    noisy Gram alone bounds nothing (its noise above the weak direction)."""
    report, X, y = _skewed_report(fit_intercept=fit_intercept)
    est, published = report.estimator_, report.published_
    Z = published.law.scaler.scale(X)  # the constant feature included
    Xs = Z[:, :5]
    assert np.linalg.norm(published.noisy_gram - est.release_.XtX, 2) <= (
        published.noise_scale * published.noise_bound())  # the Gram noise's event
    centred = Xs - Xs.mean(axis=0) if fit_intercept else Xs
    floor = np.linalg.eigvalsh(centred.T @ centred)[0]
    alpha = 1e-3
    H = est.release_.XtX + alpha * penalty(Z.shape[1], fit_intercept)
    B = published.floor_bound(floor + alpha)
    assert np.linalg.eigvalsh(H - B)[0] >= -1e-9 * len(X)
    without = published.upper_statistics(Z, alpha)
    assert np.all(np.isinf(without["leverage"]))
    upper = published.upper_statistics(Z, alpha, floor)
    exact = np.linalg.solve(H, Z.T)
    assert np.all(upper["leverage"] >= np.einsum("ij,ji->i", Z, exact))
    assert np.all(upper["inverse_norm2"] >= np.einsum("ij,ij->j", exact, exact))
    # up to eigvalsh's own rounding (backward error of order eps ||H||)
    assert 0 < upper["lowest"] <= (np.linalg.eigvalsh(H)[0]
                                   + 10 * np.finfo(float).eps * np.linalg.norm(H, 2))
    assert np.isfinite(upper["leverage"]).mean() > 0.99


# -- output perturbation's private ridge (alpha="auto", the default) ----------


def test_private_ridge_law_reproduces_the_estimators_losses():
    """The law at the exact statistics is the estimator's loss, for training
    rows and added ones (with and without their label); its cap covers
    extreme persons added."""
    X, y = _squeezable_data(3000, d=3)
    est = OutputPerturbationRegressor(data_norm=1.0, y_bound=1.0, random_state=0).fit(X, y)
    law = est.release_law()
    assert not hasattr(law, "XtX") and law.alpha == est.alpha_
    Xs, ys = law.scaler.scale(X), law.scaler.scale_labels(y)
    statistics = est.law_statistics()
    assert_allclose(law.epsilon(est.delta, statistics(Xs, ys)), est.pdp_losses_, rtol=1e-12)
    X_new, y_new = _squeezable_data(50, d=3, seed=1)
    Xn, yn = law.scaler.scale(X_new), law.scaler.scale_labels(y_new)
    for labels, given in ((yn, y_new), (None, None)):
        added = law.epsilon(est.delta, statistics(Xn, labels, add=True))
        assert_allclose(added, est.pdp_epsilon(X_new, given), rtol=1e-12)
    assert law.dp_epsilon(est.delta) == est.dp_epsilon_
    targets = np.random.default_rng(0).normal(size=(400, 3))
    targets /= np.linalg.norm(targets, axis=1, keepdims=True)
    assert np.all(est.pdp_epsilon(targets) <= law.cap_epsilon(est.delta) * (1 + 1e-9))


def _gaussian_draw(ridge, noise, rng):
    """Output perturbation's coefficients at a cell's ridge system."""
    return ridge.coef + noise * rng.standard_normal(ridge.coef.size)


def _redraw_private_ridge(report, rng, draw=_gaussian_draw):
    """The published object of another draw of the whole release of a
    private ridge: the eigenvalue (hence the cell, its ridge and noise), the
    coefficients (``draw(ridge, noise, rng)``), output perturbation's
    released means and the publication's Gram noise."""
    release, published = report.estimator_.release_, report.published_
    ad = release.adaptive
    law = copy.copy(published.law)
    law.lowest_eigenvalue = release.eig[0][0] + ad.eigen_noise * rng.standard_normal()
    cell = ad.cell(law.lowest_eigenvalue)
    law.cell, law.alpha, law.noise_scale = cell, ad.alpha(cell), ad.noise(cell)
    law.coef = draw(release.cell_ridge(cell), law.noise_scale, rng)
    if hasattr(law, "released_means"):  # output perturbation's means, above the floor
        law.released_means = None
        if np.isfinite(ad.means_noise(cell)):
            law.released_means = release.means + ad.means_noise(cell) * rng.standard_normal(
                release.means.size)
    other = copy.copy(published)
    other.law = law
    other.noisy_gram = release.XtX + published.noise_scale * gram_noise(
        rng, release.XtX.shape[0], release.intercept)
    return other


# 40 runs in the default run (the floor below is derived from the runs);
# 100 runs, and squeeze 0.55 at 100 and 1000 runs, under the audit marker
@pytest.mark.parametrize("squeeze, runs", [
    (1.0, 40), pytest.param(1.0, 100, marks=pytest.mark.audit),
    pytest.param(0.55, 100, marks=pytest.mark.audit),
    pytest.param(0.55, 1000, marks=pytest.mark.audit)])
def test_private_ridge_published_bound_coverage(squeeze, runs):
    """The whole release redrawn (the eigenvalue, so the cell, the
    coefficients and the Gram noise): each fixed row's published bound
    covers its exact loss with frequency >= 1 - beta, and the eigenvalue's
    interval holds lambda_min. Rows: those whose bound is closest to their
    loss, and a few others (squeeze 0.55: a window of over 100 cells, the
    floor cell's included)."""
    X, y = _squeezable_data(20000, squeeze=squeeze)
    report = _report(OutputPerturbationRegressor, X, y)
    release, published = report.estimator_.release_, report.published_
    Xs, ys = published.law.scaler.scale(X), published.law.scaler.scale_labels(y)
    ratio = published.scaled_epsilon(Xs, ys) / report.pdp_losses_
    assert np.all(ratio >= 1.0) and np.median(ratio) < 1.1
    rows = np.concatenate([np.argsort(ratio)[:10], np.arange(5)])
    Xr, yr, exact = Xs[rows], ys[rows], report.pdp_losses_[rows]
    lowest = release.eig[0][0]
    rng = np.random.RandomState(1)
    beta = published.beta
    covered, inside, cells = np.zeros(rows.size), 0, set()
    for _ in range(runs):
        other = _redraw_private_ridge(report, rng)
        cells.add(other.law.cell)
        covered += other.scaled_epsilon(Xr, yr) >= exact
        low, high = other.law.eigen_interval(other, beta / 8)
        inside += low <= lowest <= high
    assert len(cells) > 1  # the redraws reach other cells
    assert inside / runs >= 1 - beta / 8 - 3 * np.sqrt(beta / 8 / runs)
    assert np.all(covered / runs >= 1 - beta - 3 * np.sqrt(beta * (1 - beta) / runs))


# zero slopes from the signal test, by design on this data
@pytest.mark.filterwarnings("ignore:.*released zero slopes:sklearn_pdp.exceptions.FallbackWarning")
def test_private_ridge_eigen_change_bound_covers_the_exact_change():
    """The published bound on a row's change of lambda_min (removed or
    added) is at least the exact change on the Gram noise's event."""
    X, y = _squeezable_data(5000, d=3, squeeze=0.5)
    report = _report(OutputPerturbationRegressor, X, y)
    release, published = report.estimator_.release_, report.published_
    assert np.linalg.norm(published.noisy_gram - release.XtX, 2) <= (
        published.noise_scale * published.noise_bound())
    Xs = published.law.scaler.scale(X)
    X_new = published.law.scaler.scale(_squeezable_data(200, d=3, seed=1)[0])
    for rows, add in ((Xs, False), (X_new, True)):
        exact = eigen_change(release.eig, release.mean, release.n_samples, rows[:, :3],
                             intercept=True, add=add)
        assert np.all(published.eigen_change_bound(rows) >= exact)
    low, high = published.scatter_interval()
    assert low <= scatter_eigen(release.XtX, release.n_samples, True)[0][0][0] <= high


def _registry_data(n=20000, d=5, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-1, 1, size=(n, d))
    y = np.clip(X @ np.linspace(0.8, -0.2, d) + 0.3 * rng.randn(n), -3, 3)
    return X, y


@pytest.mark.parametrize("name", [pytest.param(name, marks=audit_if_slow(name))
                                  for name in REGRESSORS])
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.PrivacyLeakWarning")
def test_every_default_regressor_publishes(name):
    """``PDPReport(Est(), publish_epsilon=0.2)`` for every registered
    regressor at its defaults (bounds read from the data), on data that fits
    slopes: the report's guarantee is the model's plus the publication's,
    and each row's published bound covers its exact total loss."""
    X, y = _registry_data()
    report = PDPReport(REGRESSORS[name](random_state=0), publish_epsilon=0.2,
                       random_state=0).fit(X, y)
    est = report.estimator_
    assert not est.mean_only_
    assert est.dp_epsilon_ < report.dp_epsilon_ <= est.dp_epsilon_ + 0.2 + 1e-9
    assert report.dp_epsilon_ == report.published_.dp_epsilon == report.summary_["dp_epsilon"]
    bound = report.published_.epsilon(X, y)
    assert np.mean(bound >= report.pdp_losses_) >= 1 - report.published_.beta
    assert np.median(bound / report.pdp_losses_) <= 3.0


def test_private_ridge_published_bound_reads_the_released_draw():
    """Labels without signal: the estimator's slopes are the signal test's
    post-processing (0), but the published law measures residuals against
    the released draw, so every row stays covered."""
    rng = np.random.default_rng(12)
    X = rng.uniform(-1, 1, size=(20000, 5))
    y = rng.uniform(-0.05, 0.05, size=20000)
    dropped = 0
    for seed in range(4):
        report = PDPReport(OutputPerturbationRegressor(bounds_X=(-1.0, 1.0), y_bound=(-1.0, 1.0),
                                                       random_state=seed),
                           publish_epsilon=0.2, random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FallbackWarning)
            report.fit(X, y)
        est = report.estimator_
        if np.isinf(est.signal_ridge_):  # slopes dropped, the draw published
            dropped += 1
            assert np.all(est.coef_ == 0) and np.all(report.published_.law.coef[:5] != 0)
        bound = report.published_.epsilon(X, y)
        assert np.mean(bound >= report.pdp_losses_) >= 1 - report.published_.beta
    assert dropped >= 2


def test_command_line_publishes_the_default_output_perturbation(tmp_path, capsys):
    """``python -m sklearn_pdp data.csv --estimator output --publish-epsilon
    0.2``: the private ridge fits slopes and its report is published."""
    import json

    from sklearn_pdp.__main__ import main

    X, y = _registry_data(n=8000)
    path = tmp_path / "data.csv"
    rows = [",".join(f"{v:.6g}" for v in (*x, t)) for x, t in zip(X, y)]
    path.write_text("\n".join(["x0,x1,x2,x3,x4,y", *rows]) + "\n")
    assert main([str(path), "--target", "y", "--estimator", "output", "--bounds-x", "-1", "1",
                 "--y-bound=-3,3", "--publish-epsilon", "0.2", "--json"]) == 0
    public = json.loads(capsys.readouterr().out)["publishable"]
    assert public["estimator"] == "OutputPerturbationRegressor" and not public["mean_only"]
    assert 1.0 < public["dp_epsilon"] <= 1.2 + 1e-9
    q = public["published"]["pdp_epsilon"]
    assert 0.1 <= q["median"] <= q["q90"] <= q["q99"] <= public["dp_epsilon"]


# -- objective perturbation's private ridge (alpha="auto", the default) -------


def _private_objpert(n=5000, d=3, **params):
    X, y = _squeezable_data(n, d=d)
    est = ObjPertRegressor(data_norm=1.0, y_bound=1.0, tighten_bounds=False, random_state=0,
                           **params).fit(X, y)
    assert type(est.release_).__name__ == "PrivateObjPertRelease"
    return est, X, y


# the private ridge's calibration takes seconds: under the audit marker; the
# default run checks the same law against the estimator's losses
# (tests/mechanisms/test_release_contract.py, "objpert-private") and these
# checks on output perturbation's private ridge
# (test_private_ridge_law_reproduces_the_estimators_losses)
@pytest.mark.audit
def test_private_objpert_law_reproduces_the_estimators_losses():
    """The law at the exact statistics is the estimator's loss, for training
    rows and added ones (with and without their label); composed with a
    Gram release, the eigenvalue's ratio and the Gram's add in squares and
    objective perturbation's part is unchanged; its cap covers extreme
    persons added and is the domain's worst of both stages at n + 1 rows."""
    est, X, y = _private_objpert()
    law, release = est.release_law(), est.release_
    assert isinstance(law, PrivateObjPertLaw)  # the public copy keeps the law's methods
    assert not hasattr(law, "XtX") and not hasattr(law, "cells") and law.alpha == est.alpha_
    Xs, ys = law.scaler.scale(X), law.scaler.scale_labels(y)
    statistics = est.law_statistics()
    stats = statistics(Xs, ys)
    assert_allclose(law.epsilon(est.delta, stats), est.pdp_losses_, rtol=1e-9)
    assert law.dp_epsilon(est.delta) == est.dp_epsilon_ == 1.0
    ad = release.adaptive
    X_new, y_new = _squeezable_data(50, d=3, seed=1)
    Xn, yn = law.scaler.scale(X_new), law.scaler.scale_labels(y_new)
    for labels, given in ((yn, y_new), (None, None)):
        added = statistics(Xn, labels, add=True)
        assert_allclose(law.epsilon(est.delta, added), est.pdp_epsilon(X_new, given),
                        rtol=1e-9)
        # a Gram release of ratio g composes with the eigenvalue's stage only
        g = np.linspace(0.1, 2.0, Xn.shape[0])
        first = gaussian_epsilon(ad.delta_eigen, added["eigen"])
        composed = gaussian_epsilon(ad.delta_eigen, np.hypot(added["eigen"], g))
        assert_allclose(law.epsilon(est.delta, added, g),
                        est.pdp_epsilon(X_new, given) - first + composed, rtol=1e-9)
    # training rows: never above the guarantee composed with the Gram release
    g = np.full(Xs.shape[0], 0.5)
    assert np.all(law.epsilon(est.delta, stats, g) <= law.dp_epsilon(est.delta, g) + 1e-12)
    n = est.pdp_losses_.size
    cap = law.cap_epsilon(est.delta)
    assert cap >= law.dp_epsilon(est.delta)
    assert cap >= (gaussian_epsilon(ad.delta_eigen, eigen_max_change(n + 1, True) / ad.eigen_noise)
                   + objpert_dp_epsilon(ad.delta_objpert, ad.alpha(-1), ad.noise(-1),
                                        n + 1, True))
    targets = np.random.default_rng(0).normal(size=(400, 3))
    targets /= np.linalg.norm(targets, axis=1, keepdims=True)
    assert np.all(est.pdp_epsilon(targets) <= cap * (1 + 1e-9))


# objective perturbation's report over 20000 rows takes minutes: every case
# under the audit marker (squeeze 0.7: the floor cell reached; 600 runs); the
# default run redraws the same private ridge's release for output
# perturbation (test_private_ridge_published_bound_coverage); this release's
# bound at its draw is checked under the audit marker too
# (tests/mechanisms/test_release_contract.py, "objpert-private")
@pytest.mark.parametrize("squeeze, runs", [
    pytest.param(1.0, 40, marks=pytest.mark.audit),
    pytest.param(0.7, 40, marks=pytest.mark.audit),
    pytest.param(0.7, 600, marks=pytest.mark.audit)])
def test_private_objpert_published_bound_coverage(squeeze, runs):
    """The whole release redrawn (the eigenvalue, so the cell; the
    coefficients; the Gram noise): each fixed row's published bound covers
    its exact total loss with frequency >= 1 - beta. Rows: those whose bound
    is closest to their loss, and a few others; squeeze 0.7 puts lambda_min
    one noise scale above the floor cell's edge (the redraws reach the floor
    cell, its public ridge, and the cells above)."""
    X, y = _squeezable_data(20000, squeeze=squeeze)
    report = _report(ObjPertRegressor, X, y)
    release, published = report.estimator_.release_, report.published_
    assert type(release).__name__ == "PrivateObjPertRelease"
    Xs, ys = published.law.scaler.scale(X), published.law.scaler.scale_labels(y)
    ratio = published.scaled_epsilon(Xs, ys) / report.pdp_losses_
    assert np.all(ratio >= 1.0) and np.median(ratio) < 1.2
    rows = np.concatenate([np.argsort(ratio)[:10], np.arange(5)])
    Xr, yr, exact = Xs[rows], ys[rows], report.pdp_losses_[rows]
    rng = np.random.RandomState(1)
    beta = published.beta
    covered, cells = np.zeros(rows.size), set()
    for _ in range(runs):
        other = _redraw_private_ridge(report, rng, objpert_draw)
        cells.add(other.law.cell)
        covered += other.scaled_epsilon(Xr, yr) >= exact
    assert len(cells) > 1  # the redraws reach other cells
    assert np.all(covered / runs >= 1 - beta - 3 * np.sqrt(beta * (1 - beta) / runs))
