"""A person added to the n rows (the release as calibrated for n rows, run
on the n + 1 rows): every reported value, exact or capped, is at least
the exact loss of the whole release, at the domain's worst rows."""

import copy
import itertools

import numpy as np
import pytest
from numpy.testing import assert_allclose

from sklearn_pdp import AdaOPSRegressor, OPSRegressor, OutputPerturbationRegressor, PDPReport
from sklearn_pdp.accounting import compose_with_gaussian, ops_epsilon, ops_mixture_epsilon
from sklearn_pdp.accounting._adaops import conditioning
from sklearn_pdp.mechanisms.adaops._release import AdaOPSRelease
from sklearn_pdp.utils._eigen import scatter_eigen
from sklearn_pdp._registry import REGRESSORS
from sklearn_pdp.domain._split import bounds_part

from ..conftest import adversarial_data, audit_if_slow, regression_data
from ..domain.test_tighten import _assemble


def _corner_rows(d, n_random=20, seed=0):
    """Rows of unit norm (the domain's corner): each axis both ways and
    random directions."""
    rng = np.random.default_rng(seed)
    axes = np.vstack([np.eye(d), -np.eye(d)])
    rows = rng.normal(size=(n_random, d))
    return np.vstack([axes, rows / np.linalg.norm(rows, axis=1, keepdims=True)])


def _run_on(release, Zs, ys):
    """AdaOPS's release as calibrated (its ``cal``, its n), run on the
    scaled rows ``Zs`` (constant feature included): their Gram, scatter,
    conditioning and means, no fit yet."""
    other = copy.copy(release)
    other.n_samples = Zs.shape[0]
    other.XtX, other.Xty = Zs.T @ Zs, Zs.T @ ys
    other.eig, other.mean = scatter_eigen(other.XtX, other.n_samples, other.intercept)
    other.G = conditioning(other.eig[0], other.mean, other.intercept)
    if other.intercept:
        other.means = np.append(Zs[:, :-1].mean(axis=0), ys.mean())
    other.fits = {}
    return other


def _removal_epsilon(release, z, t, delta):
    """The row's loss removed from the data of ``release``: the mixture, with
    the released means composed with it (their exact change over their noise)."""
    def mixture(d):
        return ops_mixture_epsilon(d, **release._mixture_columns(z, t, add=False))[0]
    if release.means_noise is None:
        return mixture(delta)
    gap = np.append(z[0, :-1], t) - release.means
    ratio = np.linalg.norm(gap / release.means_noise) / (release.n_samples - 1)
    return compose_with_gaussian(mixture, delta, ratio)


@pytest.mark.parametrize("n, d, fit_intercept", [(2000, 3, True), (3000, 2, False)])
def test_adaops_added_row_at_the_corner(n, d, fit_intercept):
    """Each worst row (unit norm, label +-1) added to the n rows: its exact
    loss, the removal mixture of the release run on the n + 1 rows, is what
    ``pdp_epsilon`` reports (computed from the n rows), within the cap, and
    the published bound covers it."""
    X, y = regression_data(n, d)
    report = PDPReport(AdaOPSRegressor(data_norm=1.0, y_bound=1.0, fit_intercept=fit_intercept,
                                       tighten_bounds=False,
                                       random_state=0),
                       publish_epsilon=0.2, random_state=0).fit(X, y)
    est, published = report.estimator_, report.published_
    assert not est.mean_only_
    release, law = est.release_, est.release_law()
    Zs, ys = law.scaler.scale(X, y)
    targets = _corner_rows(d)
    cap = law.cap_epsilon(est.delta)
    for label in (-1.0, 1.0):
        labels = np.full(targets.shape[0], label)
        Zt, yt = law.scaler.scale(targets, labels)
        exact = np.array([_removal_epsilon(_run_on(release, np.vstack([Zs, z]), np.append(ys, t)),
                                           z[None, :], np.array([t]), est.delta)
                          for z, t in zip(Zt, yt)])
        reported = est.pdp_epsilon(targets, labels)
        assert_allclose(reported, exact, rtol=1e-6)
        assert np.all(reported <= cap * (1 + 1e-12))
        # the model's part alone, plus the summary (the Gram's adds more)
        assert np.all(published.epsilon(targets, labels) >= exact * (1 - 1e-9)
                      + published.summary_epsilon)
    assert np.all(est.pdp_epsilon(targets) >= reported - 1e-12)  # the worst label
    # the published cap: the publication's guarantee plus the same excess
    assert published.cap_epsilon == pytest.approx(
        published.dp_epsilon + cap - est.dp_epsilon_, rel=1e-12)


# (the 20000-row cases take 6 s each: under audit)
@pytest.mark.parametrize("n, d, fit_intercept, split", [
    (2000, 3, True, None),
    pytest.param(20000, 5, True, None, marks=pytest.mark.audit),
    pytest.param(20000, 5, False, None, marks=pytest.mark.audit),
    (500, 1, True, (0.2, 0.0, 0.8)),
])
def test_adaops_added_sample_epsilon_covers_every_pair_of_cells(n, d, fit_intercept, split):
    """The sample's cap for a person added bounds the OPS loss at every pair
    of cells of the cells a margin event allows, at the
    corner of the smaller data set's n rows: the leverage 1/n + 1/(h - s_1)
    and the residual bound of the pair with the crude bound at n rows. It
    is above the sample's share where the crude bound rises enough (n =
    2000), and the release's cap is the guarantee plus the excess."""
    cal, _ = AdaOPSRelease.calibrate(1.0, 1e-6, n, d, fit_intercept, budget_split=split)
    cap = cal.added_sample_epsilon()
    top = int(cal.index((n + 1) / d))
    worst = 0.0
    for k in range(cal.lowest, max(top, 0) + 1):
        spare = cal.floor(k) - cal.change
        mu = (1.0 / n if fit_intercept else 0.0) + 1.0 / spare
        crude = (2.0 if fit_intercept else 1.0) + np.sqrt(n / spare)
        _, _, omega, last = cal.bound_grid(k)
        for j in range(last + 1):
            residual = crude if j == last else min(np.exp((j + 1) * omega) / (1 - mu), crude)
            worst = max(worst, float(ops_epsilon(cal.delta_share, mu, residual, cal.gamma(k, j))))
    assert worst <= cap * (1 + 1e-9)
    assert cap >= cal.eps_sample
    if (n, d, split) == (2000, 3, None):
        assert worst > cal.eps_sample * (1 + 1e-5)  # the removal share under-reports


# every registered regressor at its defaults, and OPS and output perturbation
# at a numeric ridge (their fixed-ridge releases); whether the model's cap
# for a person added exceeds its removal guarantee here (random projection's
# guarantee covers additions; output perturbation's sensitivity at alpha 1e4
# does not grow from n to n + 1 rows: the intercept's 1/(n - 1) falls)
_GROWS = {"adaops": True, "ops": True, "objpert": True, "output": True, "projection": False}
TIGHTENED = [pytest.param(cls, {}, _GROWS.get(name), id=name,
                          marks=audit_if_slow(name))
             for name, cls in REGRESSORS.items()] + [
    pytest.param(OPSRegressor, {"alpha": 300.0}, True, id="ops-alpha"),
    pytest.param(OutputPerturbationRegressor, {"alpha": 1e4}, False, id="output-alpha"),
]


# the plausible bounds tried are tighter than the data: their refits clip rows;
# output perturbation's signal test may keep zero slopes of a draw (its
# losses are the release's either way)
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.BoundsWarning")
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.FallbackWarning")
@pytest.mark.parametrize("cls, params, grows", TIGHTENED)
def test_tightened_added_row_at_the_corner(cls, params, grows):
    """A tightened fit's value for a person added at the declared domain's
    corners (every feature at an end, the label at an end): in the part
    its row's hash gives, the bounds' exact loss of adding them or the
    model's exact added loss at the released bounds (a fit declared there
    on the model rows). The stage's cap covers both, and the model's exact
    added loss at any plausible released bound: it is the model's cap for a
    person added (not its removal guarantee), the same for every bound."""
    rng = np.random.default_rng(0)
    n, d = 4000, 3
    X = rng.uniform(-1, 1, size=(n, d))
    y = np.clip(0.3 + X @ [0.5, -0.3, 0.2] + 0.2 * rng.normal(size=n), -1.5, 1.5)
    declared = {"bounds_X": (-2.0 * np.ones(d), 2.0 * np.ones(d)), "y_bound": 2.0}
    est = cls(epsilon=2.0, tighten_bounds=True, random_state=0, **declared, **params).fit(X, y)
    rel, rows = est.bounds_release_, est.model_rows_
    corners = 2.0 * np.array(list(itertools.product((-1.0, 1.0), repeat=d)))
    targets = np.repeat(corners, 2, axis=0)
    labels = np.tile([-2.0, 2.0], corners.shape[0])
    reported = est.pdp_epsilon(targets, labels)
    assert np.all(est.pdp_epsilon(targets) >= reported - 1e-12)  # the worst label
    into_bounds = bounds_part(targets, labels, 0.1)
    assert_allclose(reported[into_bounds],
                    rel.row_epsilon(targets, labels, add=True)[into_bounds], rtol=1e-12)
    cap = est.domain_stage().cap()
    model_cap = est.release_.cap_epsilon(est.release_.delta)
    assert cap == max(rel.epsilon, est.model_epsilon_, model_cap)
    if grows is not None:
        assert model_cap > est.model_epsilon_ if grows else model_cap == est.model_epsilon_
    ranges = rel.plausible(1e-7)
    ends = rel.origin[:, None] + rel.sign[:, None] * rel.grid
    trials = [{"bounds_X": est.bounds_X_, "y_bound": est.y_bound_}]
    for side in (0, 1):  # the tightest and the widest plausible bounds
        pick = []
        for k in range(rel.n_quantiles):
            inside = np.flatnonzero((ends[k] >= ranges[k, 0]) & (ends[k] <= ranges[k, 1]))
            tight = (side + (rel.sign[k] < 0)) % 2 == 0
            pick.append(ends[k, inside[0 if tight else -1]])
        _, bounds_X, y_bound = _assemble(rel, np.array(pick), est.resolve_bounds(X, y))
        trials.append({"bounds_X": bounds_X, "y_bound": y_bound})
    for trial, bounds in enumerate(trials):
        model = cls(epsilon=est.model_epsilon_, delta=est.model_delta_, random_state=0,
                    tighten_bounds=False, **bounds, **params).fit(X[rows], y[rows])
        assert not model.mean_only_
        exact = model.pdp_epsilon(targets, labels)
        assert np.all(cap >= exact * (1 - 1e-9))
        if trial == 0:  # at the released bounds: the model part's own loss
            assert_allclose(reported[~into_bounds], exact[~into_bounds], rtol=1e-10)
        if grows is not None:  # the cap is the same whatever the bounds
            assert_allclose(model.release_.cap_epsilon(model.release_.delta), model_cap,
                            rtol=1e-12)


# data without a slope to find: the signal test releases zero slopes by design
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.FallbackWarning")
@pytest.mark.parametrize("n, fit_intercept, epsilon", [(400, False, 3.0), (4000, True, 1.0)])
@pytest.mark.parametrize("kind", ["adversarial", "constant"])
def test_private_ridge_cap_covers_added_rows(n, fit_intercept, epsilon, kind):
    """Output perturbation's private ridge (its default): the cap for a
    person added (the model part of a tightened fit's added rows) is above
    the guarantee (the eigenvalue's change and the residual grow at n + 1
    rows) and covers the release's own loss of every worst row added, on
    data built against it (a row nearly alone in its direction; identical
    rows with the largest labels)."""
    if kind == "adversarial":
        X, y = adversarial_data(np.random.default_rng(0), n)
    else:
        X, y = np.full((n, 2), 0.3), np.ones(n)
    est = OutputPerturbationRegressor(epsilon=epsilon, data_norm=1.0, y_bound=1.0,
                                      fit_intercept=fit_intercept, random_state=0).fit(X, y)
    release = est.release_
    assert type(release).__name__ == "PrivateRidgeRelease"
    cap = release.cap_epsilon(release.delta)
    assert cap > est.dp_epsilon_
    targets = _corner_rows(2)
    for labels in (None, np.ones(len(targets)), -np.ones(len(targets))):
        assert np.all(est.pdp_epsilon(targets, labels) <= cap)
    assert np.all(est.pdp_losses_ <= cap)
