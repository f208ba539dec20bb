import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import stats
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV

from tests._reference import ridge_penalty
from sklearn_pdp import FallbackWarning, OPSRegressor, PrivacyLeakWarning
from sklearn_pdp.accounting import (
    PREDICTION_NOISE, domain_bounds, ops_auto_alpha, ops_epsilon, ops_gamma,
)
from sklearn_pdp.domain._scaler import DomainScaler
from sklearn_pdp.utils._rows import ScaledData
from sklearn_pdp.mechanisms.ops._release import OPSRelease


def _scaled(X, y, reg):
    return DomainScaler(reg.data_norm_, reg.y_bound_, reg.fit_intercept).scale(X, y)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_pdp_losses_equal_brute_force_leave_one_out(fit_intercept, make_unbounded_data):
    X, y = make_unbounded_data(60)
    reg = OPSRegressor(
        epsilon=None, gamma=30.0, alpha=0.5, data_norm=3.0, y_bound=4.0,
        fit_intercept=fit_intercept, random_state=0,
    ).fit(X, y)
    Xs, ys = _scaled(X, y, reg)
    expected = []
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        H = Xs[keep].T @ Xs[keep] + 0.5 * ridge_penalty(Xs, fit_intercept)
        theta = np.linalg.solve(H, Xs[keep].T @ ys[keep])
        mu = Xs[i] @ np.linalg.solve(H, Xs[i])
        expected.append(ops_epsilon(1e-6, mu, ys[i] - Xs[i] @ theta, 30.0))
    assert_allclose(reg.pdp_losses_, expected, rtol=1e-7)
    assert np.all(reg.pdp_losses_ <= reg.dp_epsilon_)


def test_pdp_epsilon_of_new_targets(make_unbounded_data):
    X, y = make_unbounded_data(60)
    reg = OPSRegressor(epsilon=None, alpha=1.0, gamma=5.0, data_norm=3.0, y_bound=4.0, random_state=0).fit(X, y)
    X_new, y_new = make_unbounded_data(7, seed=1)
    Xs, ys = _scaled(X, y, reg)
    Xn, yn = _scaled(X_new, y_new, reg)
    H = Xs.T @ Xs + reg.alpha * ridge_penalty(Xs, reg.fit_intercept)
    theta = np.linalg.solve(H, Xs.T @ ys)
    mu = np.einsum("ij,ij->i", Xn, np.linalg.solve(H, Xn.T).T)
    assert_allclose(
        reg.pdp_epsilon(X_new, y_new), ops_epsilon(1e-6, mu, yn - Xn @ theta, 5.0), rtol=1e-7
    )
    # without labels: the worst label in the domain, so at least as large
    worst = reg.pdp_epsilon(X_new)
    for label in (-4.0, -1.0, 0.0, 2.5, 4.0):
        assert np.all(worst >= reg.pdp_epsilon(X_new, np.full(7, label)) - 1e-12)


# the adversarial rows lie outside the bounds on purpose
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.BoundsWarning")
def test_dp_epsilon_bounds_adversarial_data_sets(make_adversarial_data):
    """The data-independent guarantee holds on data built to be bad: every
    row at norm 1, labels at the bound and of opposite signs to the fit."""
    rng = np.random.default_rng(4)
    n, alpha = 40, 0.3
    for _ in range(5):
        X, y = make_adversarial_data(rng, n)
        reg = OPSRegressor(
            epsilon=None, gamma=10.0, alpha=alpha, data_norm=1.0, y_bound=1.0,
            fit_intercept=False, random_state=0,
        ).fit(X, y)
        assert reg.pdp_losses_.max() <= reg.dp_epsilon_
    assert np.isfinite(reg.dp_epsilon_)
    reg0 = OPSRegressor(epsilon=None, gamma=10.0, alpha=0.0, data_norm=1.0, y_bound=1.0,
                        fit_intercept=False)
    assert reg0.fit(X * 100 + rng.normal(size=X.shape), y).dp_epsilon_ == np.inf


def test_converges_to_ridge_as_gamma_grows(make_unbounded_data):
    X, y = make_unbounded_data(200)
    reg = OPSRegressor(epsilon=None, gamma=1e12, alpha=2.0, data_norm=4.0, y_bound=5.0, random_state=0)
    reg.fit(X, y)
    Xs, ys = _scaled(X, y, reg)
    # scikit-learn's Ridge does not penalise its intercept either
    ridge = Ridge(alpha=2.0).fit(Xs[:, :-1], ys)
    assert_allclose(reg.predict(X) / 5.0, ridge.predict(Xs[:, :-1]), atol=1e-5)


def test_random_state_makes_fit_reproducible(make_unbounded_data):
    X, y = make_unbounded_data(500)  # above the fallback to the label mean, n epsilon > 100 (d + 1)
    a = OPSRegressor(data_norm=3.0, y_bound=4.0, random_state=3).fit(X, y)
    b = OPSRegressor(data_norm=3.0, y_bound=4.0, random_state=3).fit(X, y)
    c = OPSRegressor(data_norm=3.0, y_bound=4.0, random_state=4).fit(X, y)
    assert_allclose(a.coef_, b.coef_)
    assert not np.allclose(a.coef_, c.coef_)


# a fit per draw: 400 draws under the audit marker
@pytest.mark.parametrize("draws", [100, pytest.param(400, marks=pytest.mark.audit)])
def test_posterior_draw_has_the_stated_distribution(draws, make_unbounded_data):
    """Whitened draws sqrt(gamma) L^T (theta - theta_hat) must be N(0, I):
    their squared norms sum to a chi-square with (draws x d) degrees of freedom."""
    X, y = make_unbounded_data(30, d=2)
    gamma = 4.0
    reg = OPSRegressor(epsilon=None, alpha=1.0, gamma=gamma, data_norm=3.0, y_bound=4.0, fit_intercept=False)
    thetas = np.array(
        [reg.set_params(random_state=s).fit(X, y).coef_ for s in range(draws)]
    ) * (3.0 / 4.0)  # back to the scaled coordinates of the mechanism
    Xs, ys = _scaled(X, y, reg)
    H = Xs.T @ Xs + np.eye(2)
    L = np.linalg.cholesky(H)
    z = np.sqrt(gamma) * (thetas - np.linalg.solve(H, Xs.T @ ys)) @ L
    p = stats.chi2.sf((z**2).sum(), df=z.size)
    assert 1e-6 < p < 1 - 1e-6
    # the mean is zero: each coordinate's average is N(0, 1/draws)
    assert np.all(np.abs(z.mean(axis=0)) * np.sqrt(draws) < 4.9)


# 60 rows release the label mean; the unit bounds then clip them
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.FallbackWarning")
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.BoundsWarning")
def test_missing_bounds_warn_and_are_stored_not_written_back(make_unbounded_data):
    X, y = make_unbounded_data(60)
    reg = OPSRegressor(random_state=0)
    with pytest.warns(PrivacyLeakWarning) as record:
        reg.fit(X, y)
    messages = " ".join(str(w.message) for w in record)
    assert "data_norm" in messages and "y_bound" in messages
    assert reg.data_norm is None and reg.y_bound is None
    assert reg.data_norm_ == pytest.approx(np.linalg.norm(X, axis=1).max())
    assert reg.y_bound_ == pytest.approx(np.abs(y).max())
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        OPSRegressor(data_norm=1.0, y_bound=1.0).fit(X, y)


# 60 rows release the label mean; clipping is the subject
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.FallbackWarning")
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.BoundsWarning")
def test_out_of_bound_rows_are_clipped_on_a_copy(make_unbounded_data):
    X, y = make_unbounded_data(60)
    X_orig, y_orig = X.copy(), y.copy()
    reg = OPSRegressor(data_norm=0.5, y_bound=0.5, random_state=0).fit(X, y)
    assert_allclose(X, X_orig) and assert_allclose(y, y_orig)
    Xs, ys = _scaled(X, y, reg)
    # features in the unit ball, then the constant feature
    assert np.linalg.norm(Xs[:, :-1], axis=1).max() <= 1 + 1e-12
    assert_allclose(Xs[:, -1], 1.0)
    assert np.abs(ys).max() <= 1
    # clipping is the same as handing the estimator the clipped data
    X_clip = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True) / 0.5, 1.0)
    reg2 = OPSRegressor(data_norm=0.5, y_bound=0.5, random_state=0)
    reg2.fit(X_clip, np.clip(y, -0.5, 0.5))
    assert_allclose(reg.coef_, reg2.coef_)
    assert_allclose(reg.pdp_losses_, reg2.pdp_losses_)


def test_singular_without_ridge_is_a_clear_error():
    X = np.ones((10, 2))
    with pytest.raises(ValueError, match="alpha"):
        OPSRegressor(epsilon=None, gamma=10.0, alpha=0.0, data_norm=2.0, y_bound=1.0,
                     fit_intercept=False).fit(X, np.ones(10))


@pytest.mark.parametrize(
    "param, value",
    [("gamma", 0.0), ("gamma", -1.0), ("alpha", -0.1), ("delta", 1.0), ("delta", 0.0),
     ("data_norm", 0.0), ("y_bound", -1.0), ("gamma", "big"), ("epsilon", 0.0),
     ("alpha", "manual")],
)
def test_invalid_parameters_name_the_parameter(param, value, make_unbounded_data):
    X, y = make_unbounded_data(60)
    with pytest.raises(ValueError, match=param):
        OPSRegressor(**{param: value}).fit(X, y)


def test_chunked_passes_do_not_depend_on_chunk_size(make_unbounded_data):
    import sklearn

    X, y = make_unbounded_data(3000, d=5)
    reg = OPSRegressor(data_norm=4.0, y_bound=5.0, random_state=0)
    whole = reg.fit(X, y)
    coef, losses = whole.coef_.copy(), whole.pdp_losses_.copy()
    with sklearn.config_context(working_memory=0.01):  # chunks of a few dozen rows
        small = OPSRegressor(data_norm=4.0, y_bound=5.0, random_state=0).fit(X, y)
    assert_allclose(small.coef_, coef, rtol=1e-10)
    assert_allclose(small.pdp_losses_, losses, rtol=1e-8)


def test_domain_clip_gives_the_rows_the_mechanism_sees(make_unbounded_data):
    """DomainScaler.clip: rows inside the ball of radius data_norm unchanged,
    longer rows scaled down to it (even near the float64 maximum), so that
    scaling the clipped rows gives the scaled rows."""
    X, _ = make_unbounded_data(30)
    X[::4] *= np.array([1e6, 1e300, 1e6, 1e300, 1e6, 1e300, 1e6, 1e300])[:, None]
    scaler = DomainScaler(2.0, 1.0, True)
    clipped = scaler.clip(X)
    norms = np.linalg.norm(X / np.abs(X).max(axis=1, keepdims=True), axis=1)
    norms *= np.abs(X).max(axis=1)
    inside = norms <= 2.0
    assert 0 < inside.sum() < len(X)
    np.testing.assert_array_equal(clipped[inside], X[inside])
    assert_allclose(np.linalg.norm(clipped[~inside], axis=1), 2.0, rtol=1e-14)
    direction = X[~inside] / norms[~inside, None]
    assert_allclose(clipped[~inside] / 2.0, direction, rtol=1e-14)
    assert_allclose(scaler.scale(clipped), scaler.scale(X), rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("n, epsilon", [(800, 1.0), (8000, 0.3), (80_000, 3.0)])
def test_auto_alpha_rule(n, epsilon):
    """ops_auto_alpha: 100 (d + 1) / epsilon (raised only where the budget's floor needs it:
    not at these sizes), doubled until the posterior noise along a unit
    slope direction, 1 / (alpha gamma), is at most PREDICTION_NOISE."""
    d, delta = 10, 1e-6
    alpha = ops_auto_alpha(epsilon, delta, n, d, True)
    doublings = np.log2(alpha / (100 * (d + 1) / epsilon))
    assert doublings == pytest.approx(round(doublings), abs=1e-9) and doublings >= 0

    def noise(a):
        corner = domain_bounds(n, a, True)
        return 1 / (a * ops_gamma(epsilon, delta, corner["leverage"], corner["residual"]))

    assert noise(alpha) <= PREDICTION_NOISE
    assert doublings < 0.5 or noise(alpha / 2) > PREDICTION_NOISE
    # the rule is public, for experts: OPSRegressor's "auto" is AdaOPS's
    # private ridge (tests/linear_model/test_consistency.py), a number is used as given
    reg = OPSRegressor(epsilon=epsilon, alpha=alpha, data_norm=1.0, y_bound=1.0)
    assert OPSRelease.calibrate(reg.epsilon, reg.delta, reg.alpha, reg.gamma, n, d,
                                reg.fit_intercept)[0] == alpha


def test_wide_rows_finish_losses_after_all_products():
    # from 31 features on, the leverages and residuals of all rows come
    # first and the accounting after them, in larger chunks: the values of
    # chunk by chunk up to the search's tolerance
    rng = np.random.RandomState(0)
    X = rng.uniform(-1, 1, size=(20000, 40)) / np.sqrt(40)
    y = np.clip(X @ rng.randn(40) + 0.1 * rng.randn(20000), -1, 1)
    reg = OPSRegressor(epsilon=1.0, data_norm=1.0, y_bound=1.0, tighten_bounds=False,
                       random_state=0).fit(X, y)
    assert not reg.mean_only_
    data = ScaledData(X, y, reg.domain_scaler())
    per_chunk = data.map_rows(lambda Xs, ys: reg.release_.losses(Xs, ys))
    assert_allclose(reg.pdp_losses_, per_chunk, rtol=1e-10)


def _rank_deficient(case, n=400, seed=0):
    """Ordinary tables whose columns are linearly dependent (with the
    intercept's constant): duplicated, constant, every category one-hot
    encoded, or a column that the bounds clip to a constant."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 3))
    y = X @ [1.0, -0.5, 0.2] + 0.3 * rng.normal(size=n)
    extra = {
        "duplicated": X[:, :1],
        "constant": np.full((n, 1), 0.5),
        "one_hot": np.eye(3)[rng.integers(3, size=n)],
        "clipped_to_a_constant": rng.uniform(2, 3, size=(n, 1)),  # above its bound 1
    }[case]
    return np.column_stack([X, extra]), y


@pytest.mark.filterwarnings("ignore::sklearn_pdp.BoundsWarning")  # the clipped column
@pytest.mark.parametrize("case", ["duplicated", "constant", "one_hot", "clipped_to_a_constant"])
def test_exact_losses_on_rank_deficient_data_both_directions(case):
    """Brute force with the fitted (alpha_, gamma_): a ridge keeps H
    nonsingular, so every loss is exact, for removing a training row and
    for adding a target."""
    X, y = _rank_deficient(case)
    # a public fixed ridge: the automatic one is AdaOPS's (tests/mechanisms/test_adaops.py)
    alpha = ops_auto_alpha(3.0, 1e-6, len(y), X.shape[1], True)
    params = dict(epsilon=3.0, alpha=alpha, bounds_X=(-1, 1), y_bound=(-3, 3),
                  random_state=0)
    reg = OPSRegressor(**params).fit(X, y)
    assert not reg.mean_only_
    Xs, ys = reg.domain_scaler().scale(X, y)
    assert np.linalg.matrix_rank(Xs) < Xs.shape[1]
    P = ridge_penalty(Xs, True)

    def loss(train, i):
        H = Xs[train].T @ Xs[train] + reg.alpha_ * P
        theta = np.linalg.solve(H, Xs[train].T @ ys[train])
        mu = Xs[i] @ np.linalg.solve(H, Xs[i])
        return ops_epsilon(reg.delta, mu, ys[i] - Xs[i] @ theta, reg.gamma_)

    rows = [0, 1, 17, 250]
    expected = [loss(np.arange(len(y)) != i, i) for i in rows]
    assert_allclose(reg.pdp_losses_[rows], expected, rtol=1e-7)
    smaller = OPSRegressor(**params).fit(X[1:], y[1:])
    H_alpha, H_gamma = smaller.alpha_, smaller.gamma_
    Hs = Xs[1:].T @ Xs[1:] + H_alpha * P
    theta = np.linalg.solve(Hs, Xs[1:].T @ ys[1:])
    mu = Xs[0] @ np.linalg.solve(Hs, Xs[0])
    assert_allclose(smaller.pdp_epsilon(X[:1], y[:1]),
                    [ops_epsilon(reg.delta, mu, ys[0] - Xs[0] @ theta, H_gamma)], rtol=1e-7)


def test_a_given_alpha_that_cannot_meet_the_budget_falls_back():
    """alpha=0.01 cannot meet epsilon=1 at any noise: the ridge of the public
    rule ops_auto_alpha (a function of n, d and the budget) is released,
    with a warning naming both alphas; the guarantee is the budget, and a
    plain GridSearchCV over alpha runs."""
    rng = np.random.RandomState(0)
    X = rng.uniform(-1, 1, size=(3000, 2))
    y = X @ [0.5, -0.5] + 0.1 * rng.normal(size=3000)
    params = dict(data_norm=1.5, y_bound=1.5, random_state=0)
    with pytest.warns(FallbackWarning, match=r"at alpha=0.01 .* alpha=\S+ \(the public "
                      r"rule ops_auto_alpha\) meets it"):
        reg = OPSRegressor(alpha=0.01, **params).fit(X, y)
    public = ops_auto_alpha(1.0, 1e-6, 3000, 2, True)
    assert reg.alpha_ == pytest.approx(public) and reg.alpha_ > 0.01
    ruled = OPSRegressor(alpha=reg.alpha_, **params).fit(X, y)
    assert reg.gamma_ == ruled.gamma_
    assert_allclose(reg.pdp_losses_, ruled.pdp_losses_, rtol=0)
    assert not reg.mean_only_
    assert reg.dp_epsilon_ == 1.0 and reg.dp_guarantee(3000, 2) == (1.0, 1e-6)
    assert np.all(reg.pdp_losses_ <= 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        search = GridSearchCV(OPSRegressor(**params), {"alpha": [0.1, 1.0, 10.0]}).fit(X, y)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))


def test_infinite_gamma_reveals_the_row():
    """No noise (gamma = inf, a published window without a bound): an
    infinite loss for every row that moves the posterior, 0 for one that
    does not, without numpy warnings."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        eps = ops_epsilon(1e-6, np.array([0.5, 0.1, np.inf, 0.0]),
                          np.array([1.0, 0.0, 1.0, 1.0]), np.full(4, np.inf))
    assert_array_equal(eps, [np.inf, np.inf, np.inf, 0.0])
