import warnings
from numbers import Real

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from scipy import stats
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import Ridge
from sklearn.model_selection import ParameterGrid
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder
from sklearn.utils._param_validation import Interval, InvalidParameterError

from sklearn_pdp import (
    AdaSSPRegressor,
    FallbackWarning,
    OPSRegressor,
    PrivacyLeakWarning,
    config_context,
)
from sklearn_pdp.linear_model._base import PrivateRegressorMixin
from sklearn_pdp.mechanisms._release import Release
from sklearn_pdp.utils._ridge_system import RidgeSystem as ScaledRidge
from sklearn_pdp.accounting import ops_dp_epsilon
from sklearn_pdp.model_selection import PrivateGridSearchCV
from sklearn_pdp.accounting._exponential import exponential_log_proba, select
from sklearn_pdp.model_selection._search import (
    SENSITIVITY,
    SIZE_SHARE,
    part_size_range,
    selection_epsilon,
    validation_losses,
)

GRID = {"gamma": [0.3, 3.0, 30.0], "alpha": [1.0, 10.0]}
BOUNDS = dict(data_norm=2.0, y_bound=3.0)


def _search(**kwargs):
    kwargs = {"param_grid": GRID, "epsilon": 1.0, "random_state": 0, **kwargs}
    return PrivateGridSearchCV(OPSRegressor(epsilon=None, alpha=1.0, **BOUNDS), **kwargs)


def test_selection_frequencies_match_probabilities():
    scores = np.array([10.0, 10.5, 11.0, 13.0, 20.0])
    epsilon = 1.5
    # P(k) ~ exp(-epsilon score_k / (2 B)^2) with B = 1, written out here
    weights = np.exp(-epsilon * (scores - scores.min()) / 4.0)
    expected = weights / weights.sum()
    draws = select(
        exponential_log_proba(scores, epsilon, SENSITIVITY),
        np.random.default_rng(0),
        size=50_000,
    )
    counts = np.bincount(draws, minlength=scores.size)
    # pool the last cell: its expected count is below 5
    observed = np.append(counts[:-2], counts[-2:].sum())
    pooled = np.append(expected[:-2], expected[-2:].sum())
    assert np.all(pooled * draws.size >= 5)
    p_value = stats.chisquare(observed, pooled * draws.size).pvalue
    assert p_value > 1e-6  # false-alarm rate 1e-6


def _selection_loss(scores, losses, epsilon):
    """max_k |log P(k) - log P_{-i}(k)| of each record i, by leaving it out."""
    log_p = exponential_log_proba(scores, epsilon, SENSITIVITY)
    without = exponential_log_proba(scores - losses, epsilon, SENSITIVITY)
    return np.max(np.abs(log_p - without), axis=-1)


@settings(max_examples=200, deadline=None)
@given(
    losses=st.lists(
        st.lists(st.floats(0, SENSITIVITY), min_size=3, max_size=3),
        min_size=1,
        max_size=6,
    ),
    extra=st.lists(st.floats(-200, 200), min_size=3, max_size=3),
    epsilon=st.floats(0.01, 20),
)
def test_selection_is_epsilon_dp(losses, extra, epsilon):
    # any scores of the other records, any losses of the record (in [0, 4])
    losses = np.array(losses)
    scores = losses.sum(axis=0) + np.abs(extra)
    pdp = _selection_loss(scores, losses, epsilon)
    assert np.all(pdp <= epsilon * (1 + 1e-9))


def test_selection_loss_approaches_epsilon():
    # the record hurts only an unlikely candidate: its loss tends to epsilon
    scores = np.array([0.0, 200.0])
    losses = np.array([[0.0, SENSITIVITY]])
    pdp = _selection_loss(scores, losses, 1.0)
    assert_allclose(pdp, 1.0, rtol=1e-9)


@pytest.fixture(scope="module")
def noisy_candidates(make_unbounded_data):
    X, y = make_unbounded_data(40, scale=0.6)
    return [
        OPSRegressor(epsilon=None, gamma=g, alpha=0.1, random_state=s, **BOUNDS).fit(X, y)
        for g, s in ((1e-3, 0), (1e-2, 1), (10.0, 2))
    ]


@settings(max_examples=200, deadline=None)
@given(
    x=st.lists(st.floats(-1e3, 1e3), min_size=3, max_size=3),
    y=st.floats(-1e3, 1e3),
    seed=st.integers(0, 2**16),
)
def test_one_record_moves_summed_loss_by_at_most_sensitivity(
    noisy_candidates, x, y, seed, make_unbounded_data
):
    X_val, y_val = make_unbounded_data(15, seed=seed, scale=0.6)
    y_bound = BOUNDS["y_bound"]
    for est in noisy_candidates:
        before = validation_losses(est, X_val, y_val, y_bound).sum() * y_bound**2
        after = (
            validation_losses(
                est, np.vstack([X_val, x]), np.append(y_val, y), y_bound
            ).sum()
            * y_bound**2
        )
        # the stated sensitivity (2 B)^2, in the units of y squared
        assert -1e-9 <= after - before <= (2 * y_bound) ** 2 + 1e-9


def _guarantee(search, n_samples, delta, min_samples=None):
    """Largest OPS guarantee over the grid at n_samples rows (or any size
    from min_samples to n_samples), written out."""
    return max(
        ops_dp_epsilon(delta, p["alpha"], p["gamma"], n_samples,
                       search.estimator.fit_intercept, min_samples)
        for p in search.cv_results_["params"]
    )


def test_guarantee_bounds_the_part_sizes_no_refit(make_unbounded_data):
    X, y = make_unbounded_data(600, scale=0.6)
    search = _search(refit=False).fit(X, y)
    m, n = len(search.cv_results_["params"]), len(y)
    failure = SIZE_SHARE * search.delta
    low, high = part_size_range(n, m, failure)
    # the binomial tails beyond the range, summed over the parts, fit in failure
    sizes = stats.binom(n, 1 / (m + 1))
    assert m * (sizes.cdf(low - 1) + sizes.sf(high)) <= failure
    assert m * (sizes.cdf(low) + sizes.sf(high - 1)) > failure / 2  # not loose
    realised = np.bincount(search._parts, minlength=m + 1)[:m]
    assert low <= realised.min() and realised.max() <= high
    delta = (1 - SIZE_SHARE) * search.delta  # the candidates' share
    G = _guarantee(search, high, delta, low)
    # the bound is over the sizes
    assert G > _guarantee(search, realised.max(), delta, realised.min())
    assert search.dp_epsilon_ == pytest.approx(max(search.epsilon, G), rel=1e-12)
    assert search.dp_delta_ == pytest.approx(search.delta)
    # per record: the candidates' bound, or the selection's if larger
    selection = search.epsilon * (1 + np.minimum(np.abs(y) / BOUNDS["y_bound"], 1)) ** 2 / 4
    assert_allclose(search.pdp_losses_, np.maximum(G, selection))
    # without refit the released model is the selected candidate itself
    best = search.best_estimator_
    assert best.get_params()["gamma"] == search.best_params_["gamma"]
    assert best.pdp_losses_.shape == (np.sum(search._parts == search.best_index_),)


def test_refit_adds_the_worst_candidate(make_unbounded_data):
    X, y = make_unbounded_data(600, scale=0.6)
    search = _search(refit=True).fit(X, y)
    # refit_share=0.5: the search without refit at half the budget
    once = _search(refit=False, epsilon=0.5, delta=0.5e-6).fit(X, y)
    assert search.selection_epsilon_ == 0.5
    assert search.best_index_ == once.best_index_  # the refit seed is separate
    best = search.best_estimator_
    assert best.pdp_losses_.shape == (len(y),)
    full = [
        OPSRegressor(epsilon=None, **BOUNDS, delta=0.5e-6, **params).fit(X, y)
        for params in search.cv_results_["params"]
    ]
    worst = np.max([est.pdp_losses_ for est in full], axis=0)
    assert np.any(worst > best.pdp_losses_)  # not the selected candidate's
    assert_allclose(search.pdp_losses_, once.pdp_losses_ + worst, rtol=1e-12)
    refit_guarantee = _guarantee(search, len(y), 0.5e-6)
    assert search.dp_epsilon_ == pytest.approx(once.dp_epsilon_ + refit_guarantee)
    # delta is the total (raw noise levels bring their own epsilon)
    assert search.dp_delta_ == pytest.approx(1e-6)
    assert search.pdp_delta_ == search.dp_delta_
    assert np.all(search.pdp_losses_ <= search.dp_epsilon_)
    assert_allclose(search.predict(X), best.predict(X))
    assert search.score(X, y) == pytest.approx(best.score(X, y))


@pytest.mark.parametrize("refit", [False, True])
def test_privacy_numbers_do_not_depend_on_random_state(refit, make_unbounded_data):
    X, y = make_unbounded_data(300, scale=0.6)
    fits = [_search(refit=refit, random_state=seed).fit(X, y) for seed in range(4)]
    assert len({fit.best_index_ for fit in fits}) > 1  # the draws did differ
    for fit in fits[1:]:
        assert fit.dp_epsilon_ == fits[0].dp_epsilon_
        assert fit.dp_delta_ == fits[0].dp_delta_
        assert_array_equal(fit.pdp_losses_, fits[0].pdp_losses_)


def test_refit_guarantee_does_not_depend_on_the_winner(make_unbounded_data):
    """Issue case: OPS at alpha=200 with gamma 0.5 or 20 on 600 rows used to
    report 2.6 or 4.9 depending on which candidate won."""
    X, y = make_unbounded_data(600, scale=0.6)
    ops = OPSRegressor(epsilon=None, alpha=200.0, **BOUNDS)
    fits = [
        PrivateGridSearchCV(ops, {"gamma": [0.5, 20.0]}, random_state=seed).fit(X, y)
        for seed in range(12)
    ]
    assert {fit.best_index_ for fit in fits} == {0, 1}
    assert len({fit.dp_epsilon_ for fit in fits}) == 1
    # the refit is charged at the larger gamma's guarantee on all 600 rows
    refit = ops_dp_epsilon(1e-6, 200.0, 20.0, 600)
    assert fits[0].dp_epsilon_ > refit


def test_selection_bound_covers_the_validation_row(make_unbounded_data):
    """The reported loss of a validation row bounds its exact selection loss
    given the candidates (the search on the data without it)."""
    X, y = make_unbounded_data(300, scale=0.6)
    m = 6
    for seed in range(50):
        search = _search(random_state=seed, refit=False).fit(X, y)
        if search._parts[-1] == m:
            break
    else:  # pragma: no cover
        pytest.fail("no seed put the last row in the validation part")
    without = _search(random_state=seed, refit=False).fit(X[:-1], y[:-1])
    # the other rows keep their parts, so the candidates are the same
    assert_array_equal(without._parts, search._parts[:-1])
    exact = np.max(np.abs(search._log_proba - without._log_proba))
    bound = selection_epsilon(search.epsilon, y[-1], BOUNDS["y_bound"])
    assert 0 < exact <= bound <= search.pdp_losses_[-1]


def test_n_jobs_does_not_change_results(make_unbounded_data):
    X, y = make_unbounded_data(600, scale=0.6)
    one = _search(n_jobs=1).fit(X, y)
    two = _search(n_jobs=2).fit(X, y)
    assert one.best_index_ == two.best_index_
    assert_array_equal(one.best_estimator_.coef_, two.best_estimator_.coef_)
    assert_array_equal(one.pdp_losses_, two.pdp_losses_)
    assert one.dp_epsilon_ == two.dp_epsilon_


def test_cv_results_expose_no_scores(make_unbounded_data):
    X, y = make_unbounded_data(600, scale=0.6)
    search = _search().fit(X, y)
    assert set(search.cv_results_) == {"params", "param_alpha", "param_gamma"}
    assert search.best_params_ == search.cv_results_["params"][search.best_index_]
    assert_array_equal(
        search.cv_results_["param_gamma"],
        [p["gamma"] for p in search.cv_results_["params"]],
    )


def test_selection_prefers_the_better_candidate(make_unbounded_data):
    # alpha = 1e4 shrinks the model to zero: far worse than alpha = 1
    X, y = make_unbounded_data(3000, scale=0.6)
    grid = {"gamma": [100.0], "alpha": [1.0, 1e4]}
    picks = [
        _search(param_grid=grid, epsilon=2.0, random_state=s, refit=False)
        .fit(X, y)
        .best_index_
        for s in range(5)
    ]
    assert picks == [0] * 5


def test_bounds_read_once_from_data(make_unbounded_data):
    X, y = make_unbounded_data(600, scale=0.6)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        search = PrivateGridSearchCV(OPSRegressor(epsilon=None, alpha=1.0), GRID, random_state=0).fit(X, y)
    leaks = [w for w in caught if issubclass(w.category, PrivacyLeakWarning)]
    assert len(leaks) == 2  # data_norm and y_bound, not once per candidate
    assert search.y_bound_ == pytest.approx(np.abs(y).max())
    assert search.best_estimator_.y_bound == search.y_bound_


class _BudgetRegressor(PrivateRegressorMixin):
    """Plumbing stub with an (epsilon, delta) budget: ridge plus declared losses."""

    _parameter_constraints: dict = {
        **PrivateRegressorMixin._parameter_constraints,
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "alpha": [Interval(Real, 0, None, closed="neither")],
    }

    def __init__(self, *, epsilon=1.0, delta=1e-5, alpha=1.0, data_norm=None,
                 bounds_X=None, y_bound=None, fit_intercept=True, random_state=None,
                 n_jobs=None):
        self.epsilon = epsilon
        self.delta = delta
        self.alpha = alpha
        self.data_norm = data_norm
        self.bounds_X = bounds_X
        self.y_bound = y_bound
        self.fit_intercept = fit_intercept
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _mechanism_guarantee(self, n_samples, n_features, min_samples=None):
        return self.epsilon, self.delta

    def _make_release(self, data, scaler):
        return _BudgetRelease.from_budget(self.epsilon, self.delta, data,
                                          scaler=scaler, alpha=self.alpha)


class _BudgetRelease(Release):
    """The stub's release: the ridge solution, each row charged half the budget."""

    @classmethod
    def from_budget(cls, epsilon, delta, data, *, scaler, alpha):
        release = cls(scaler=scaler, n_samples=data.n_samples, delta=delta,
                      guarantee=(epsilon, delta), alpha=alpha)
        release.ridge = ScaledRidge(*data.gram(), alpha)
        return release

    def draw(self, rng, size=None):
        return self.ridge.coef if size is None else np.tile(self.ridge.coef, (size, 1))

    def losses(self, Xs, ys, add=False):
        return np.full(Xs.shape[0], self.guarantee[0] / 2)


def test_budget_is_passed_to_estimators_with_epsilon(make_unbounded_data):
    X, y = make_unbounded_data(600, scale=0.6)
    # without intercept: no fallback to the label mean at these small budgets
    est = _BudgetRegressor(epsilon=5.0, delta=0.1, fit_intercept=False, **BOUNDS)
    search = PrivateGridSearchCV(
        est, {"alpha": [0.1, 1.0, 10.0]}, epsilon=0.7, delta=1e-5, random_state=0
    ).fit(X, y)
    # (0.7, 1e-5) is the total: half for the refit (refit_share), half for
    # the search, of whose delta half bounds the part sizes
    assert search.best_estimator_.epsilon == pytest.approx(0.35)
    assert search.best_estimator_.delta == pytest.approx(5e-6)
    assert search._part_fits[0].epsilon == pytest.approx(0.35)
    assert search._part_fits[0].delta == pytest.approx(2.5e-6)
    assert search.dp_epsilon_ == pytest.approx(0.7)
    assert search.dp_delta_ == pytest.approx(1e-5)
    # the search's guarantee, then the refit's per-instance 0.35 / 2
    assert_allclose(search.pdp_losses_, 0.35 + 0.175)
    # another share
    search = PrivateGridSearchCV(
        est, {"alpha": [0.1, 1.0, 10.0]}, epsilon=0.7, delta=1e-5, refit_share=0.8,
        random_state=0,
    ).fit(X, y)
    assert search.best_estimator_.epsilon == pytest.approx(0.56)
    assert search.selection_epsilon_ == pytest.approx(0.14)
    assert search.dp_epsilon_ == pytest.approx(0.7)
    assert search.dp_delta_ == pytest.approx(1e-5)
    # a budget in the grid wins, and the report follows it
    search = PrivateGridSearchCV(
        est, {"epsilon": [2.0, 3.0]}, epsilon=0.7, refit=False, random_state=0
    ).fit(X, y)
    assert search.dp_epsilon_ == 3.0


def test_delegation_before_fit():
    search = _search()
    assert hasattr(search, "predict")
    assert hasattr(search, "score")
    assert not hasattr(search, "predict_proba")


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"param_grid": {"gamma": [1.0], "y_bound": [1.0]}}, ValueError, "y_bound"),
        ({"param_grid": {"random_state": [0]}}, ValueError, "random_state"),
        ({"param_grid": {"not_a_param": [1]}}, ValueError, "not_a_param"),
        ({"epsilon": -1.0}, InvalidParameterError, "epsilon"),
        ({"delta": 1.0}, InvalidParameterError, "delta"),
    ],
)
def test_invalid_parameters(kwargs, error, match, make_unbounded_data):
    X, y = make_unbounded_data(50, scale=0.6)
    with pytest.raises(error, match=match):
        _search(**kwargs).fit(X, y)


def test_non_private_estimator_is_refused(make_unbounded_data):
    X, y = make_unbounded_data(50, scale=0.6)
    with pytest.raises(ValueError, match="estimator"):
        PrivateGridSearchCV(Ridge(), {"alpha": [1.0]}).fit(X, y)


# y_bound=1 clips the label tails of the encoded table
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.BoundsWarning")
@pytest.mark.filterwarnings("ignore::sklearn_pdp.FallbackWarning")
def test_a_pipeline_is_refused_with_the_way_out(make_unbounded_data):
    """A pipeline around a private regressor (the encoding recipe) is
    refused before its text columns are read, saying how to search it."""
    pd = pytest.importorskip("pandas")
    X, y = make_unbounded_data(60, scale=0.6)
    table = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])]).assign(
        colour=np.where(y > 0, "red", "blue"))
    encoder = ColumnTransformer(
        [("text", OneHotEncoder(categories=[["blue", "red"]], drop="first"), ["colour"])],
        remainder="passthrough")
    pipe = make_pipeline(encoder, OPSRegressor(data_norm=4.0, y_bound=1.0))
    search = PrivateGridSearchCV(pipe, {"opsregressor__alpha": [1.0, 10.0]})
    with pytest.raises(ValueError, match=r"got Pipeline\. Encode the table first.*"
                                         r"pipeline\[:-1\]\.fit_transform\(X\)"):
        search.fit(table, y)
    # the way out works: the same search on the encoded table
    encoded = pipe[:-1].fit_transform(table)
    grid = {"alpha": [1.0, 10.0]}
    assert PrivateGridSearchCV(pipe[-1], grid).fit(encoded, y).best_params_ in ParameterGrid(grid)


# delta=0.99 >= 1 / n on purpose: it admits parts of 2 rows out of 10
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.PrivacyLeakWarning")
def test_empty_validation_part_gives_uniform_choice(make_unbounded_data):
    X, y = make_unbounded_data(10, scale=0.6)
    grid = {"gamma": [1.0, 10.0]}
    # a large delta admits parts of 2 rows out of 10; a seed whose split
    # fills both training parts and leaves the validation part empty
    for seed in range(1000):
        search = _search(param_grid=grid, refit=False, random_state=seed, delta=0.99)
        try:
            search.fit(X, y)
        except ValueError as exc:  # a training part left empty
            assert "left a training part empty" in str(exc)
            continue
        if not np.any(search._parts == 2):
            break
    else:  # pragma: no cover
        pytest.fail("no seed left only the validation part empty")
    assert_allclose(np.exp(search._log_proba), [0.5, 0.5])
    assert np.all(np.isfinite(search.pdp_losses_))


def test_validation_rows_are_clipped_like_training_rows(make_unbounded_data):
    """Validation rows far beyond data_norm (and labels beyond y_bound) are
    scored as the clipped rows they stand for: the same selection
    probabilities and per-instance losses as the clipped data."""
    X, y = make_unbounded_data(300, scale=0.6)
    m = len(GRID["gamma"]) * len(GRID["alpha"])
    val = _search(refit=False).fit(X, y)._parts == m
    assert val.sum() >= 10
    direction = X[val] / np.linalg.norm(X[val], axis=1, keepdims=True)
    X_far, y_far, X_clip, y_clip = X.copy(), y.copy(), X.copy(), y.copy()
    X_far[val] = direction * BOUNDS["data_norm"] * 1e200
    y_far[val] = np.sign(y[val]) * BOUNDS["y_bound"] * 1e200
    X_clip[val] = direction * BOUNDS["data_norm"]
    y_clip[val] = np.sign(y[val]) * BOUNDS["y_bound"]
    far = _search(refit=False).fit(X_far, y_far)
    clip = _search(refit=False).fit(X_clip, y_clip)
    assert_array_equal(far._parts, clip._parts)
    assert_allclose(far._log_proba, clip._log_proba, rtol=1e-9, atol=1e-12)
    assert_allclose(far.pdp_losses_, clip.pdp_losses_, rtol=1e-9, atol=1e-12)
    # the test is not vacuous: on the raw rows the losses would differ
    est, bound = far.best_estimator_, BOUNDS["y_bound"]
    pred = np.clip(est.predict(X_far[val]), -bound, bound)
    raw = ((pred - np.clip(y_far[val], -bound, bound)) / bound) ** 2
    assert not np.allclose(raw, validation_losses(est, X_far[val], y_far[val], bound))


def test_too_small_parts_choose_without_data(monkeypatch, make_unbounded_data):
    """5 candidates on 40 rows: parts too small, decided from n, the grid and
    delta alone; the candidate is drawn uniformly (the same whatever the
    labels), every candidate is fitted on all the data at the whole budget
    and the worst is charged, with a FallbackWarning."""
    sizes = []
    fit = OPSRegressor.fit

    def spy(self, X, y):
        sizes.append(len(y))
        return fit(self, X, y)

    monkeypatch.setattr(OPSRegressor, "fit", spy)
    X, y = make_unbounded_data(40, scale=0.6)
    grid = {"gamma": [0.1, 1.0, 10.0, 100.0, 1000.0]}
    chosen = []
    for labels in (y, -y, np.zeros_like(y)):
        with pytest.warns(FallbackWarning, match=r"too small for the grid: 40 samples"):
            search = _search(param_grid=grid, random_state=0).fit(X, labels)
        chosen.append(search.best_index_)
        assert search.selection_epsilon_ == 0.0
        full = [
            OPSRegressor(epsilon=None, alpha=1.0, **BOUNDS, delta=search.delta, **p).fit(X, labels)
            for p in search.cv_results_["params"]
        ]
        assert search.dp_epsilon_ == max(est.dp_epsilon_ for est in full)
        assert search.dp_delta_ == search.delta
        assert_allclose(search.pdp_losses_,
                        np.max([est.pdp_losses_ for est in full], axis=0), rtol=1e-12)
        assert_allclose(search.pdp_epsilon(X[:3], labels[:3]), np.max(
            [est.pdp_epsilon(X[:3], labels[:3]) for est in full], axis=0), rtol=1e-12)
    assert set(sizes) == {40}  # no part was fitted
    assert len(set(chosen)) == 1
    # the draw is uniform: other seeds pick other candidates
    with pytest.warns(FallbackWarning):
        picks = {_search(param_grid=grid, random_state=seed).fit(X, y).best_index_
                 for seed in range(1, 12)}
    assert len(picks) > 1


def test_privacy_leak_warning_points_at_the_callers_line(make_unbounded_data):
    X, y = make_unbounded_data(600, scale=0.6)
    with pytest.warns(PrivacyLeakWarning) as record:
        PrivateGridSearchCV(OPSRegressor(epsilon=None, alpha=1.0), GRID, random_state=0).fit(X, y)
    leaks = [w for w in record if issubclass(w.category, PrivacyLeakWarning)]
    assert len(leaks) == 2
    assert {w.filename for w in leaks} == {__file__}


@pytest.mark.parametrize("refit", [False, True])
@pytest.mark.parametrize("own", [None, 7])
def test_best_estimator_shows_the_estimators_random_state(refit, own, make_unbounded_data):
    X, y = make_unbounded_data(300, scale=0.6)
    ops = OPSRegressor(epsilon=None, alpha=1.0, random_state=own, **BOUNDS)
    search = PrivateGridSearchCV(ops, GRID, refit=refit, random_state=0).fit(X, y)
    assert search.best_estimator_.random_state == own
    assert "RandomState" not in repr(search.best_estimator_)
    # the fits were still seeded by the search: its seed decides the release
    other = PrivateGridSearchCV(ops, GRID, refit=refit, random_state=1).fit(X, y)
    assert not np.array_equal(other.best_estimator_.coef_, search.best_estimator_.coef_)


# unbounded data against the search's declared bounds: clipping by design
@pytest.mark.filterwarnings("ignore::sklearn_pdp.BoundsWarning")
def test_secure_noise_covers_the_split_and_the_selection(make_unbounded_data):
    X, y = make_unbounded_data(200, scale=0.6)
    runs = []
    for secure in (False, True):
        with config_context(secure_noise=secure):
            for _ in range(2):
                np.random.seed(0)
                runs.append(_search(random_state=None, refit=False).fit(X, y))
    assert_array_equal(runs[0]._parts, runs[1]._parts)
    assert not np.array_equal(runs[2]._parts, runs[3]._parts)


def test_pdp_epsilon_of_new_targets(make_unbounded_data):
    X, y = make_unbounded_data(400, scale=0.6)
    X_new, y_new = make_unbounded_data(20, seed=5, scale=0.6)
    search = _search().fit(X, y)
    m, n = len(search.cv_results_["params"]), len(y)
    # the search's bound on the data set with the target (n + 1 rows)
    # refit_share=0.5: the search and the refit at half the budget each
    half = search.delta / 2
    low, high = part_size_range(n + 1, m, SIZE_SHARE * half)
    G = _guarantee(search, high, (1 - SIZE_SHARE) * half, low)
    full = [
        OPSRegressor(epsilon=None, **BOUNDS, delta=half, **params).fit(X, y)
        for params in search.cv_results_["params"]
    ]
    for labels, selection in ((y_new, selection_epsilon(0.5, y_new, 3.0)), (None, 0.5)):
        refit = np.max([est.pdp_epsilon(X_new, labels) for est in full], axis=0)
        assert_allclose(
            search.pdp_epsilon(X_new, labels), np.maximum(G, selection) + refit
        )


@pytest.mark.parametrize("refit", [False, True])
def test_budget_is_the_total(refit, make_unbounded_data):
    """epsilon and delta bound the whole release, selection and refit
    together, for estimators with a budget (which the search sets)."""
    X, y = make_unbounded_data(2000, scale=0.6)
    search = PrivateGridSearchCV(
        AdaSSPRegressor(**BOUNDS), {"fit_intercept": [True, False]}, epsilon=1.0,
        delta=1e-6, refit=refit, random_state=0,
    ).fit(X, y)
    assert search.dp_epsilon_ <= 1.0 and search.dp_delta_ <= 1e-6
    assert np.all(search.pdp_losses_ <= search.dp_epsilon_)
    # the candidates (and the selection) get the search's share, the refit the rest
    spent = search._part_fits[0].epsilon + (search.best_estimator_.epsilon if refit else 0)
    assert spent == pytest.approx(1.0)
    assert search.selection_epsilon_ == search._part_fits[0].epsilon


def test_invalid_candidate_is_an_error_not_a_fallback(make_unbounded_data):
    """A bad grid value is refused before any fit, even on data too small
    for the grid (where the search would otherwise choose without data)."""
    X, y = make_unbounded_data(30, scale=0.6)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FallbackWarning)
        with pytest.raises(ValueError, match="'gamma' parameter of OPSRegressor"):
            _search(param_grid={"gamma": [-1.0, 2.0]}).fit(X, y)


def test_candidates_warnings_are_emitted_once_per_kind(monkeypatch, make_unbounded_data):
    """Every candidate fit (parts and refit) falls back: one FallbackWarning
    per kind of message (the parts' sizes differ in their numbers) for the
    whole search, with the number of fits that raised it, at the caller's
    line; a warning of another category from the fits is kept, once."""
    fit = OPSRegressor.fit

    def noisy(self, X, y):
        warnings.warn("a library's own warning", DeprecationWarning)
        return fit(self, X, y)

    monkeypatch.setattr(OPSRegressor, "fit", noisy)
    X, y = make_unbounded_data(300, scale=0.6)
    grid = {"fit_intercept": [True, False]}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        PrivateGridSearchCV(OPSRegressor(alpha=0.01, **BOUNDS), grid, epsilon=1.0,
                            random_state=0).fit(X, y)
    fallbacks = [str(w.message) for w in caught if w.category is FallbackWarning]
    assert len(fallbacks) == 2  # the mean-only release and the ridge raised to ops_auto_alpha
    assert sum("released the private label mean alone" in m for m in fallbacks) == 1
    assert sum("cannot meet epsilon" in m for m in fallbacks) == 1
    assert all(m.endswith("(2 of 4 candidate fits of the search; 2 variants with other "
                          "numbers, the first shown)") for m in fallbacks)
    assert {w.filename for w in caught if w.category is FallbackWarning} == {__file__}
    others = [str(w.message) for w in caught if w.category is DeprecationWarning]
    assert others == ["a library's own warning (4 of 4 candidate fits of the search)"]
    # the user's filters apply to the emitted warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("error", FallbackWarning)
        with pytest.raises(FallbackWarning, match="candidate fits of the search"):
            PrivateGridSearchCV(OPSRegressor(alpha=0.01, **BOUNDS), grid, epsilon=1.0,
                                random_state=0).fit(X, y)


@pytest.mark.parametrize("refit", [False, True])
def test_search_release_is_the_whole_release(refit, make_unbounded_data):
    """The search's numbers are read from ``release_``; its public law keeps
    none of the fits; a new draw of a search is a new search."""
    X, y = make_unbounded_data(600, scale=0.6)
    search = _search(refit=refit).fit(X, y)
    release = search.release_
    assert release.guarantee == (search.dp_epsilon_, search.dp_delta_)
    assert release.delta == search.pdp_delta_
    assert_allclose(release.losses(X[:7], y[:7], add=True), search.pdp_epsilon(X[:7], y[:7]))
    with pytest.raises(NotImplementedError, match="new search"):
        release.draw(np.random.default_rng(0))
    if refit:
        with pytest.raises(NotImplementedError, match="refit=True"):
            search.release_law()
        return
    law = search.release_law()
    assert law is not release and not {"part_fits", "full_fits", "bounds_release"} & set(vars(law))
    assert law.dp_epsilon(search.pdp_delta_) == search.dp_epsilon_
    assert 0 < law.part_epsilon <= search.dp_epsilon_
    assert np.isfinite(law.added_part_epsilon())  # kept for anyone added
