import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import optimize, stats
from sklearn.linear_model import Ridge

from sklearn_pdp import OutputPerturbationRegressor
from sklearn_pdp.accounting import (
    PREDICTION_NOISE, gaussian_delta, gaussian_epsilon, gaussian_noise_scale,
)
from sklearn_pdp.domain._scaler import DomainScaler
from sklearn_pdp.utils._rows import ScaledData
from sklearn_pdp.mechanisms.output_perturbation._calibration import (
    norm_exponential_noise, output_perturbation_auto_alpha, output_perturbation_sensitivity,
    ridge_row_sensitivity,
)
from sklearn_pdp.utils._eigen import scatter_eigen
from sklearn_pdp.utils._ridge_system import RidgeSystem, leave_one_out
from tests._reference import ridge_penalty

from .._mc import assert_matches_mc
from ..conftest import unbounded_data

# False-alarm rate of each goodness-of-fit test: reject at p < P_FALSE_ALARM.
P_FALSE_ALARM = 1e-6


def _scaled(X, y, reg):
    return DomainScaler(reg.data_norm_, reg.y_bound_, reg.fit_intercept).scale(X, y)


def _ridge(Xs, ys, alpha, radius=None, intercept=False):
    """Reference solution: plain solve, or SLSQP on the ball constraint; with
    ``intercept`` the last column (the constant feature) is not penalised."""
    H = Xs.T @ Xs + alpha * ridge_penalty(Xs, intercept)
    theta = np.linalg.solve(H, Xs.T @ ys)
    if radius is None or np.linalg.norm(theta) <= radius:
        return theta
    res = optimize.minimize(
        lambda t: 0.5 * t @ H @ t - t @ (Xs.T @ ys),
        theta * radius / np.linalg.norm(theta),
        jac=lambda t: H @ t - Xs.T @ ys,
        constraints=[{"type": "ineq", "fun": lambda t: radius**2 - t @ t,
                      "jac": lambda t: -2 * t}],
        method="SLSQP", options={"ftol": 1e-15, "maxiter": 500},
    )
    return res.x


def _brute_sensitivities(Xs, ys, alpha, radius=None, intercept=False):
    """||theta(Z) - theta(Z without row i)|| by refitting for every row."""
    full = _ridge(Xs, ys, alpha, radius, intercept)
    keep = ~np.eye(len(ys), dtype=bool)
    return np.array(
        [np.linalg.norm(full - _ridge(Xs[k], ys[k], alpha, radius, intercept))
         for k in keep]
    )


def _params(**kwargs):
    return dict(data_norm=3.0, y_bound=4.0, random_state=0) | kwargs


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
def test_pdp_losses_equal_brute_force_refits(noise, fit_intercept, make_unbounded_data):
    X, y = make_unbounded_data(200)
    # epsilon 3: above the fallback to the label mean, n epsilon > 100 (d + 1);
    # the refits' differences resolve the losses to ~1e-15 only
    reg = OutputPerturbationRegressor(
        **_params(epsilon=3.0, alpha=0.5, noise=noise, fit_intercept=fit_intercept)
    ).fit(X, y)
    Xs, ys = _scaled(X, y, reg)
    sens = _brute_sensitivities(Xs, ys, 0.5, intercept=fit_intercept)
    if noise == "gaussian":
        expected = gaussian_epsilon(1e-6, sens / reg.noise_scale_)
    else:
        expected = sens / reg.noise_scale_
    assert_allclose(reg.pdp_losses_, expected, rtol=1e-7)
    assert np.all(reg.pdp_losses_ <= reg.dp_epsilon_)


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("radius", [None, 0.2, 1.0])
@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
def test_dp_epsilon_bounds_adversarial_data_sets(noise, radius, fit_intercept,
                                                  make_adversarial_data):
    """Rows at norm 1, labels at the bound against the fit, one row the only
    support of its direction: the global sensitivity still bounds them."""
    rng = np.random.default_rng(4)
    n, alpha = 40, 0.3
    for _ in range(5):
        X, y = make_adversarial_data(rng, n)
        # epsilon 10: above the fallback to the label mean, n epsilon > 100 (d + 1)
        reg = OutputPerturbationRegressor(
            epsilon=10.0, noise=noise, alpha=alpha, radius=radius, data_norm=1.0,
            y_bound=1.0, fit_intercept=fit_intercept, random_state=0,
        ).fit(X, y)
        assert reg.pdp_losses_.max() <= reg.dp_epsilon_
        Xs, ys = _scaled(X, y, reg)
        brute = _brute_sensitivities(Xs, ys, alpha, radius, fit_intercept)
        assert brute.max() <= reg.sensitivity_
        # and every row's reported sensitivity bounds its own
        assert np.all(reg.release_.row_sensitivity(Xs, ys, in_sample=True) >= brute - 1e-9)
    assert reg.dp_epsilon_ == 10.0


@pytest.mark.parametrize("radius", [None, 1.0, 0.4])
def test_pdp_epsilon_of_new_targets(radius, make_unbounded_data):
    X, y = make_unbounded_data(100)
    # epsilon 5: above the fallback to the label mean, n epsilon > 100 (d + 1)
    reg = OutputPerturbationRegressor(**_params(epsilon=5.0, alpha=2.0, radius=radius)).fit(X, y)
    X_new, y_new = make_unbounded_data(7, seed=1)
    Xs, ys = _scaled(X, y, reg)
    Xn, yn = _scaled(X_new, y_new, reg)
    theta = _ridge(Xs, ys, 2.0, radius, intercept=True)
    sens = np.array([
        np.linalg.norm(
            _ridge(np.vstack([Xs, x]), np.append(ys, t), 2.0, radius, intercept=True) - theta
        )
        for x, t in zip(Xn, yn)
    ])
    reported = reg.pdp_epsilon(X_new, y_new)
    expected = gaussian_epsilon(1e-6, sens / reg.noise_scale_)
    # radius 1 is inactive here (also with any target added): exact; radius
    # 0.4 is active: an upper bound
    if radius == 0.4:
        assert np.linalg.norm(_ridge(Xs, ys, 2.0, intercept=True)) > radius
        assert np.all(reported > expected)
    else:
        assert_allclose(reported, expected, rtol=1e-7)
    # without labels: the worst label in the domain, so at least as large
    worst = reg.pdp_epsilon(X_new)
    for label in (-4.0, -1.0, 0.0, 2.5, 4.0):
        assert np.all(worst >= reg.pdp_epsilon(X_new, np.full(7, label)) - 1e-12)


def _small_data_with_outlier():
    X, y = unbounded_data(10, d=2, seed=2)
    X[0], y[0] = [2.5, 1.0], -3.0
    return X, y


def test_gaussian_losses_match_monte_carlo():
    """Release through the estimator on a data set and on its neighbour
    without the target row, evaluate L = log dP/dQ from the brute-force
    solutions, and compare delta at the reported epsilon (= the estimator's
    delta) with Monte Carlo. A radius makes the noise independent of n, so
    both neighbours use the same noise, as the analysis assumes."""
    rng = np.random.default_rng(1)
    X, y = _small_data_with_outlier()
    delta = 0.02
    params = _params(epsilon=3.0, delta=delta, alpha=0.05, radius=1.0, fit_intercept=False)
    reg = OutputPerturbationRegressor(**params).fit(X, y)
    target = int(np.argmax(reg.pdp_losses_))
    keep = np.arange(len(y)) != target
    small = OutputPerturbationRegressor(**params).fit(X[keep], y[keep])
    assert small.noise_scale_ == reg.noise_scale_
    Xs, ys = _scaled(X, y, reg)
    mean_q, mean_p = _ridge(Xs, ys, 0.05, 1.0), _ridge(Xs[keep], ys[keep], 0.05, 1.0)

    def loss(k):
        return (((k - mean_q) ** 2).sum(1) - ((k - mean_p) ** 2).sum(1)) / (
            2 * reg.noise_scale_**2
        )

    draws = 400_000
    loss_p = loss(small.release_.draw(rng, size=draws))
    loss_q = loss(reg.release_.draw(rng, size=draws))
    eps = reg.pdp_losses_[target]
    assert eps > 0.3  # a target whose loss the test can resolve
    exact = gaussian_delta(eps, np.linalg.norm(mean_q - mean_p) / reg.noise_scale_)
    assert exact == pytest.approx(delta, rel=1e-6)
    assert_matches_mc(exact, exact, loss_p, loss_q, eps)
    # and at a smaller epsilon, where delta is larger
    assert_matches_mc(
        *2 * [gaussian_delta(eps / 2, np.linalg.norm(mean_q - mean_p) / reg.noise_scale_)],
        loss_p, loss_q, eps / 2,
    )


def test_laplace_loss_is_bounded_by_and_reaches_the_pure_epsilon():
    rng = np.random.default_rng(2)
    X, y = _small_data_with_outlier()
    params = _params(
        epsilon=3.0, noise="laplace", alpha=0.05, radius=1.0, fit_intercept=False
    )
    reg = OutputPerturbationRegressor(**params).fit(X, y)
    target = int(np.argmax(reg.pdp_losses_))
    keep = np.arange(len(y)) != target
    small = OutputPerturbationRegressor(**params).fit(X[keep], y[keep])
    Xs, ys = _scaled(X, y, reg)
    mean_q, mean_p = _ridge(Xs, ys, 0.05, 1.0), _ridge(Xs[keep], ys[keep], 0.05, 1.0)
    c = 1 / reg.noise_scale_

    def loss(k):
        return c * (np.linalg.norm(k - mean_q, axis=1) - np.linalg.norm(k - mean_p, axis=1))

    eps = reg.pdp_losses_[target]
    for sample in (small.release_.draw(rng, size=200_000), reg.release_.draw(rng, size=200_000)):
        losses = np.abs(loss(sample))
        assert losses.max() <= eps * (1 + 1e-9)
        assert losses.max() >= 0.99 * eps  # the bound is attained: it is tight


@pytest.mark.parametrize("d", [1, 2, 7])
def test_norm_exponential_sampler_goodness_of_fit(d):
    """Kolmogorov-Smirnov tests at false-alarm rate P_FALSE_ALARM each.

    Radius ~ Gamma(d, scale); for a uniform direction u and a fixed unit
    vector e, (1 + e^T u)/2 ~ Beta((d-1)/2, (d-1)/2) (d >= 2), and for d = 1
    the sign is a fair coin."""
    rng = np.random.default_rng(d)
    scale, draws = 0.3, 20_000
    k = norm_exponential_noise(rng, d, scale, size=draws)
    radius = np.linalg.norm(k, axis=1)
    assert stats.kstest(radius, stats.gamma(d, scale=scale).cdf).pvalue > P_FALSE_ALARM
    # the test has power: the radius of a Gamma(d + 1) law is rejected
    wrong = rng.gamma(d + 1, scale, draws)
    assert stats.kstest(wrong, stats.gamma(d, scale=scale).cdf).pvalue < P_FALSE_ALARM
    e = np.ones(d) / np.sqrt(d)
    cosine = k @ e / radius
    if d == 1:
        assert stats.binomtest(int((cosine > 0).sum()), draws).pvalue > P_FALSE_ALARM
    else:
        law = stats.beta((d - 1) / 2, (d - 1) / 2)
        assert stats.kstest((1 + cosine) / 2, law.cdf).pvalue > P_FALSE_ALARM
        # radius and direction are independent: the cosine law holds for
        # the large draws alone as well
        big = radius > np.median(radius)
        assert stats.kstest((1 + cosine[big]) / 2, law.cdf).pvalue > P_FALSE_ALARM
    one = norm_exponential_noise(rng, d, scale)
    assert one.shape == (d,)


@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
def test_released_noise_has_the_calibrated_law(noise, make_unbounded_data):
    """KS tests (false-alarm rate P_FALSE_ALARM each) on releases of a fitted
    estimator: projections of Gaussian noise are N(0, noise_scale_^2), the
    norm of norm-exponential noise is Gamma(d, noise_scale_)."""
    X, y = make_unbounded_data(500, d=3)  # above the fallback to the label mean
    reg = OutputPerturbationRegressor(**_params(noise=noise, alpha=3.0)).fit(X, y)
    Xs, ys = _scaled(X, y, reg)
    noise_draws = reg.release_.draw(np.random.default_rng(5), size=20_000) - _ridge(
        Xs, ys, 3.0, intercept=True)
    d = Xs.shape[1]
    if noise == "gaussian":
        e = np.arange(1, d + 1) / np.linalg.norm(np.arange(1, d + 1))
        law = stats.norm(scale=reg.noise_scale_)
        assert stats.kstest(noise_draws @ e, law.cdf).pvalue > P_FALSE_ALARM
        # the calibration meets the budget exactly
        assert gaussian_delta(1.0, reg.sensitivity_ / reg.noise_scale_) == pytest.approx(
            1e-6, rel=1e-6
        )
    else:
        law = stats.gamma(d, scale=reg.noise_scale_)
        assert stats.kstest(np.linalg.norm(noise_draws, axis=1), law.cdf).pvalue > P_FALSE_ALARM
        assert reg.noise_scale_ == pytest.approx(reg.sensitivity_ / reg.epsilon)
        assert reg.dp_delta_ == 0.0


@pytest.mark.parametrize("radius", [None, 0.5])
def test_converges_to_ridge_as_epsilon_grows(radius, make_unbounded_data):
    X, y = make_unbounded_data(500)  # above the fallback to the label mean at epsilon 1
    # data_norm above every row: predict() sees the rows the mechanism saw
    params = _params(data_norm=10.0, alpha=2.0, radius=radius, tighten_bounds=False)
    reg = OutputPerturbationRegressor(epsilon=1e14, **params).fit(X, y)
    Xs, ys = _scaled(X, y, reg)
    if radius is None:  # scikit-learn's Ridge leaves its intercept unpenalised too
        expected = Ridge(alpha=2.0).fit(Xs[:, :-1], ys).predict(Xs[:, :-1])
    else:
        # the constraint binds
        assert np.linalg.norm(_ridge(Xs, ys, 2.0, intercept=True)) > 1.5 * radius
        expected = Xs @ _ridge(Xs, ys, 2.0, radius, intercept=True)
    assert_allclose(reg.predict(X) / 4.0, expected, atol=1e-5)
    errors = [
        np.abs(OutputPerturbationRegressor(epsilon=eps, **params).fit(X, y).predict(X) / 4.0
               - expected).mean()
        for eps in (1.0, 10.0, 1000.0)
    ]
    assert errors[0] > errors[1] > errors[2]


def test_global_sensitivity_formulas(make_unbounded_data):
    n = 500  # above the fallback to the label mean, n epsilon > 100 (d + 1)
    X, y = make_unbounded_data(n)
    fit = OutputPerturbationRegressor(**_params(alpha=4.0, fit_intercept=False)).fit(X, y)
    assert fit.sensitivity_ == pytest.approx((1 + np.sqrt(n) / 4.0) / 4.0)
    # constrained: (R + 1)/alpha, or the ball's diameter when smaller
    fit.set_params(radius=1.0).fit(X, y)
    assert fit.sensitivity_ == pytest.approx(0.5)
    fit.set_params(alpha=0.5).fit(X, y)
    assert fit.sensitivity_ == pytest.approx(2.0)
    # unpenalised intercept: largest |residual| 2 + sqrt(n / alpha) times the
    # largest ||H^{-1} x||, sqrt(4 / alpha^2 + (1/(n - 1) + 2 / alpha)^2)
    fit.set_params(alpha=4.0, radius=None, fit_intercept=True).fit(X, y)
    assert fit.sensitivity_ == pytest.approx(
        (2 + np.sqrt(n / 4.0)) * np.hypot(2 / 4.0, 1 / (n - 1) + 2 / 4.0))
    # constrained: gradient bound sqrt(2) (sqrt(2) R + 1) over convexity
    # min(alpha, n - 1) / 5, or the diameter 2 R
    fit.set_params(radius=1.0).fit(X, y)
    assert fit.sensitivity_ == pytest.approx(
        min(np.sqrt(2) * (np.sqrt(2) + 1) / (4.0 / 5), 2.0))


def test_random_state_makes_fit_reproducible(make_unbounded_data):
    X, y = make_unbounded_data(200)
    a = OutputPerturbationRegressor(**_params(random_state=3, noise="laplace")).fit(X, y)
    b = OutputPerturbationRegressor(**_params(random_state=3, noise="laplace")).fit(X, y)
    c = OutputPerturbationRegressor(**_params(random_state=4, noise="laplace")).fit(X, y)
    assert_allclose(a.coef_, b.coef_)
    assert not np.allclose(a.coef_, c.coef_)


@pytest.mark.parametrize(
    "param, value",
    [("epsilon", 0.0), ("epsilon", -1.0), ("delta", 1.0), ("delta", 0.0),
     ("noise", "cauchy"), ("alpha", 0.0), ("radius", 0.0), ("radius", -1.0),
     ("data_norm", 0.0), ("y_bound", -1.0)],
)
def test_invalid_parameters_name_the_parameter(param, value, make_unbounded_data):
    X, y = make_unbounded_data(200)
    with pytest.raises(ValueError, match=param):
        OutputPerturbationRegressor(**{param: value}).fit(X, y)


@pytest.mark.parametrize("radius", [None, 0.3, 3.0])
def test_chunked_passes_do_not_depend_on_chunk_size(radius, make_unbounded_data):
    import sklearn

    X, y = make_unbounded_data(3000, d=5)
    params = _params(data_norm=4.0, y_bound=5.0, radius=radius, alpha=10.0)
    whole = OutputPerturbationRegressor(**params).fit(X, y)
    with sklearn.config_context(working_memory=0.01):  # chunks of a few dozen rows
        small = OutputPerturbationRegressor(**params).fit(X, y)
    assert_allclose(small.coef_, whole.coef_, rtol=1e-10)
    assert_allclose(small.pdp_losses_, whole.pdp_losses_, rtol=1e-8, atol=1e-12)


# the shifted rows leave bounds_X=(-1, 1) on purpose
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.BoundsWarning")
def test_auto_alpha_is_a_public_rule_and_falls_back_to_the_mean():
    """alpha="auto" with pure (norm-exponential) noise depends on (n, d,
    epsilon, delta) only (Gaussian noise releases its ridge privately:
    test_private_ridge_*); a ridge shrinks the slopes, never the intercept."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(2000, 3))
    y = 30 + X @ [1.0, -1.0, 0.5] + rng.normal(size=2000)
    fits = [
        OutputPerturbationRegressor(epsilon=1.0, noise="laplace", bounds_X=(-1, 1),
                                    y_bound=(0, 40), random_state=s).fit(X + shift, y)
        for s, shift in ((0, 0.0), (1, 0.1))
    ]
    assert fits[0].alpha_ == fits[1].alpha_ == output_perturbation_auto_alpha(
        1.0, 1e-6, 2000, 3, True)
    # a ridge strong enough to silence the slopes leaves the intercept at the
    # label mean, not at the midpoint 20 of the label range
    strong = OutputPerturbationRegressor(epsilon=1.0, alpha=1e6, bounds_X=(-1, 1),
                                         y_bound=(0, 40), random_state=0).fit(X, y)
    assert abs(strong.predict(X).mean() - y.mean()) < 0.5
    assert np.all(np.abs(strong.coef_) < 0.5)


@pytest.mark.parametrize("n, epsilon", [(800, 1.0), (8000, 0.1), (80_000, 1.0), (40, 1.0)])
def test_auto_alpha_keeps_the_prediction_noise_below_its_target(n, epsilon):
    """The larger of the n^(1/3) rule and the smallest alpha whose noise
    variance at a unit row with the intercept, 2 sigma^2, is at most
    PREDICTION_NOISE;
    at most 100 times the rule where the intercept's own noise stays above."""
    d, delta = 10, 1e-6
    alpha = output_perturbation_auto_alpha(epsilon, delta, n, d)
    rule = 10 * (d + 1) * n ** (1 / 3) / epsilon ** (2 / 3)

    def noise(a):
        return 2 * gaussian_noise_scale(
            epsilon, delta, output_perturbation_sensitivity(a, n, intercept=True)) ** 2

    assert rule <= alpha <= 100 * rule * (1 + 1e-12)
    if alpha == pytest.approx(100 * rule):
        assert noise(alpha) > PREDICTION_NOISE
    elif alpha > rule:
        assert noise(alpha) <= PREDICTION_NOISE < noise(alpha * 0.999)
    else:
        assert noise(rule) <= PREDICTION_NOISE


def test_wide_rows_finish_losses_after_all_products():
    # from 31 features on, the sensitivities of all rows come first and the
    # accounting after them, in larger chunks: the values of chunk by chunk
    # up to the search's tolerance
    rng = np.random.RandomState(0)
    X = rng.uniform(-1, 1, size=(20000, 40)) / np.sqrt(40)
    y = np.clip(X @ rng.randn(40) + 0.1 * rng.randn(20000), -1, 1)
    reg = OutputPerturbationRegressor(
        epsilon=1.0, data_norm=1.0, y_bound=1.0, tighten_bounds=False, random_state=0).fit(X, y)
    assert not reg.mean_only_
    data = ScaledData(X, y, reg.domain_scaler())
    per_chunk = data.map_rows(lambda Xs, ys: reg.release_.losses(Xs, ys))
    assert_allclose(reg.pdp_losses_, per_chunk, rtol=1e-10)


# --- alpha="auto" with Gaussian noise: the private ridge (AdaptiveRidge) ---


def _scatter_lowest(Xs, intercept):
    """lambda_min of the slopes' matrix, from scratch: X^T X, or the centred
    scatter with an intercept (the constant column dropped)."""
    X = Xs[:, :-1] if intercept else Xs
    if intercept:
        X = X - X.mean(axis=0)
    return np.linalg.eigvalsh(X.T @ X)[0]


def _means(Xs, ys, intercept):
    """The rows' (without the constant) and the label's means, from scratch."""
    return np.append(Xs[:, :-1].mean(axis=0), ys.mean()) if intercept else np.zeros(0)


def _brute_adaptive_ratios(reg, Xs, ys, X_new=None, y_new=None):
    """Each row's ratio sqrt(s_1^2 + max_k s_2k^2) by refits: removed
    (``X_new`` None) or added (the rows of ``X_new``); s_2k of the ridge
    solution at cell k and of the means (their noise in cell k: none in the
    floor cell or without an intercept)."""
    release, intercept = reg.release_.adaptive, reg.fit_intercept
    lowest = _scatter_lowest(Xs, intercept)
    # each cell's public parameters once (the release recomputes them per call)
    cells = [(release.alpha(k), release.noise(k), release.means_noise(k))
             for k in release.reachable(lowest)]
    full = [_ridge(Xs, ys, alpha, intercept=intercept) for alpha, _, _ in cells]
    if X_new is None:
        keep = ~np.eye(len(ys), dtype=bool)
        others = [(Xs[k], ys[k]) for k in keep]
    else:
        others = [(np.vstack([Xs, x]), np.append(ys, t)) for x, t in zip(X_new, y_new)]
    ratios = []
    for Xo, yo in others:
        first = abs(_scatter_lowest(Xo, intercept) - lowest) / release.eigen_noise
        means = np.linalg.norm(_means(Xs, ys, intercept) - _means(Xo, yo, intercept))
        second = max(np.hypot(np.linalg.norm(center - _ridge(Xo, yo, alpha,
                                                             intercept=intercept))
                              / noise, means / means_noise)
                     for center, (alpha, noise, means_noise) in zip(full, cells))
        ratios.append(np.hypot(first, second))
    return np.array(ratios)


# small data sets without much signal: zero slopes by design
@pytest.mark.filterwarnings("ignore:.*released zero slopes:sklearn_pdp.exceptions.FallbackWarning")
# without an intercept under the audit marker: the same refits, the default's
# intercept (its own centring) checked in the default run
@pytest.mark.parametrize("fit_intercept", [True, pytest.param(False, marks=pytest.mark.audit)])
def test_private_ridge_losses_equal_brute_force_refits(fit_intercept):
    """Every row's loss is the Gaussian epsilon at delta - delta_bound of its
    exact ratios (refits without the row, over the cells reachable from this
    data set), capped at the budget; the same for every draw; an added row's
    likewise (refits with it)."""
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, size=(400, 3))
    y = X @ [0.5, -0.3, 0.2] + 0.1 * rng.normal(size=400)
    params = dict(epsilon=2.0, data_norm=np.sqrt(3), y_bound=2.0, fit_intercept=fit_intercept)
    reg = OutputPerturbationRegressor(random_state=0, **params).fit(X, y)
    release = reg.release_.adaptive
    assert release is not None and len(release.reachable(reg.release_.eig[0][0])) >= 2
    Xs, ys = _scaled(X, y, reg)
    expected = np.minimum(gaussian_epsilon(release.delta_gauss,
                                           _brute_adaptive_ratios(reg, Xs, ys)), 2.0)
    assert_allclose(reg.pdp_losses_, expected, rtol=1e-7)
    assert reg.dp_epsilon_ == 2.0 and reg.dp_delta_ == 1e-6
    assert 0 < reg.pdp_losses_.max() <= 2.0
    X_new = rng.uniform(-1, 1, size=(5, 3))
    y_new = rng.uniform(-2, 2, size=5)
    Xn, yn = _scaled(X_new, y_new, reg)
    added = gaussian_epsilon(release.delta_gauss, _brute_adaptive_ratios(reg, Xs, ys, Xn, yn))
    assert_allclose(reg.pdp_epsilon(X_new, y_new), added, rtol=1e-7)
    # the worst label is an end of the label range
    worst = np.maximum(reg.pdp_epsilon(X_new, np.full(5, -2.0)),
                       reg.pdp_epsilon(X_new, np.full(5, 2.0)))
    assert_allclose(reg.pdp_epsilon(X_new), worst, rtol=1e-12)
    for seed in (1, 2):
        other = OutputPerturbationRegressor(random_state=seed, **params).fit(X, y)
        assert_allclose(other.pdp_losses_, reg.pdp_losses_, rtol=0, atol=0)
        assert_allclose(other.pdp_epsilon(X_new, y_new), reg.pdp_epsilon(X_new, y_new),
                        rtol=0, atol=0)
    # only (epsilon, delta) pairs: the lower bound's failure is not Gaussian
    profile = reg.privacy_profile()
    assert profile.family == "epsilon_delta"
    assert_allclose(profile.values, reg.pdp_losses_)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_row_sensitivity_in_the_eigenbasis_matches_the_ridge_systems(fit_intercept):
    """The rows' sensitivities at several ridges from one projection on the
    scatter's eigenbasis equal those of each ridge's own system,
    |r| ||H^{-1} x|| / (1 - mu) for a row removed, / (1 + mu) for a row
    added, off-centre rows with a near-degenerate direction included."""
    rng = np.random.default_rng(3)
    n, d = 900, 8
    X = 0.3 + 0.1 * rng.uniform(-1, 1, size=(n, d)) / np.sqrt(d)
    X[:, -1] = X[:, 0] + 1e-4 * rng.normal(size=n)
    y = np.clip(X @ rng.normal(size=d) + 0.1 * rng.normal(size=n), -1, 1)
    Xs = np.column_stack([X, np.ones(n)]) if fit_intercept else X
    XtX, Xty = Xs.T @ Xs, Xs.T @ y
    eig, mean = scatter_eigen(XtX, n, fit_intercept)
    ridges = [RidgeSystem(XtX, Xty, alpha, fit_intercept) for alpha in (1e-3, 0.5, 40.0)]
    X_new = Xs[:6].copy()
    X_new[:, :d] *= 1.7
    for rows, labels, in_sample in ((Xs, y, True), (X_new, -y[:6], False)):
        got = ridge_row_sensitivity(eig, mean, n, ridges, rows, labels, in_sample)
        for k, ridge in enumerate(ridges):
            stats = ridge.row_statistics(rows, labels, inverse_norm=True)
            if in_sample:
                _, shift = leave_one_out(stats["leverage"], stats["residual"])
            else:
                shift = stats["residual"] / (1.0 + stats["leverage"])
            assert_allclose(got[:, k], np.abs(shift) * np.sqrt(stats["inverse_norm2"]),
                            rtol=1e-8)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_private_ridge_is_calibrated_to_the_budget(fit_intercept):
    """The pair's guarantee: the Gaussian ratios s_1, s_2 compose to the
    ratio whose delta at epsilon is delta - delta_bound, and the lower bound
    fails with probability delta_bound; the released value's cell is the
    largest grid point under the bound, and at lower bound 0 the noise is the
    global one's."""
    from sklearn_pdp.mechanisms.output_perturbation._calibration import (
        _FLOOR_NOISE, AdaptiveRidge, conditional_sensitivity,
    )

    n, d = 3000, 4
    release = AdaptiveRidge(1.5, 1e-6, n, d + fit_intercept, fit_intercept)
    mu = np.hypot(release.ratio_eigen, release.ratio_output)
    # above the floor, with an intercept, the means take a share of the
    # floor cell's ratio, at their global change
    assert release.ratio_centred**2 + release.ratio_means**2 == pytest.approx(
        release.ratio_output**2, rel=1e-12)
    assert (release.ratio_means > 0) == fit_intercept
    assert release.means_noise(-1) == np.inf
    if fit_intercept:
        assert release.means_noise(3) * release.ratio_means == pytest.approx(
            2 * np.sqrt(2) / n, rel=1e-12)
    assert gaussian_delta(1.5, mu) + release.delta_bound == pytest.approx(1e-6, rel=1e-6)
    assert stats.norm.sf(release.margin / release.eigen_noise - release.change
                         / release.eigen_noise) == pytest.approx(release.delta_bound)
    for released in (-5.0, 10.0, 350.0, 1e4):
        cell = release.cell(released)
        raw = released - release.margin
        assert release.floor(cell) <= max(raw, 0.0)
        assert cell < 0 or release.floor(cell + 1) > raw
    for alpha in (0.1, 3.0, 700.0):
        assert conditional_sensitivity(0.0, alpha, n, fit_intercept) == pytest.approx(
            output_perturbation_sensitivity(alpha, n, intercept=fit_intercept), rel=1e-12)
    # a better conditioned data set gets less noise and a smaller ridge, at
    # most the public rule's; the floor cell (nothing known) has the public
    # rule at the floor's noise target, the largest
    low, high = release.cell(500.0), release.cell(5000.0)
    assert release.noise(high) < release.noise(low)
    assert release.alpha(high) <= release.alpha(low) <= release.public <= release.alpha(-1)
    assert release.public == output_perturbation_auto_alpha(1.5, 1e-6, n, d, fit_intercept)
    assert release.alpha(-1) == output_perturbation_auto_alpha(
        1.5, 1e-6, n, d, fit_intercept, target=_FLOOR_NOISE)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_conditional_sensitivity_bounds_refits(fit_intercept):
    """Over adversarial small data sets (rows on the unit sphere, labels at
    the ends of [-1, 1]), no row moves the ridge solution by more than the
    bound at the smaller data set's lambda_min."""
    from sklearn_pdp.mechanisms.output_perturbation._calibration import conditional_sensitivity

    rng = np.random.default_rng(2)
    worst = 0.0
    for _ in range(300):
        n, d = rng.integers(4, 12), rng.integers(1, 3)
        X = rng.normal(size=(n, d)) * rng.uniform(0.2, 1.0, size=d)
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        y = rng.choice([-1.0, 1.0], size=n)
        Xs = np.column_stack([X, np.ones(n)]) if fit_intercept else X
        alpha = 10.0 ** rng.uniform(-2, 1)
        full = _ridge(Xs, y, alpha, intercept=fit_intercept)
        for i in range(n):
            keep = np.arange(n) != i
            moved = np.linalg.norm(full - _ridge(Xs[keep], y[keep], alpha,
                                                 intercept=fit_intercept))
            bound = conditional_sensitivity(_scatter_lowest(Xs[keep], fit_intercept),
                                            alpha, n, fit_intercept)
            assert moved <= bound * (1 + 1e-9)
            worst = max(worst, moved / bound)
    assert worst > 0.1  # the data sets reach a fair share of the bound


# small data sets without much signal: zero slopes by design
@pytest.mark.filterwarnings("ignore:.*released zero slopes:sklearn_pdp.exceptions.FallbackWarning")
def test_private_ridge_release_law():
    """Given the released cell, the coefficients are the ridge solution at
    alpha_ plus N(0, noise_scale_^2 I); the released eigenvalue is
    lambda_min plus N(0, eigen_noise_^2) (over seeds)."""
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, size=(2000, 2))
    y = X @ [0.6, -0.4] + 0.1 * rng.normal(size=2000)
    params = dict(epsilon=1.0, data_norm=np.sqrt(2), y_bound=1.0)
    reg = OutputPerturbationRegressor(random_state=0, **params).fit(X, y)
    Xs, ys = _scaled(X, y, reg)
    center = _ridge(Xs, ys, reg.alpha_, intercept=True)
    draws = reg.release_.draw(np.random.default_rng(4), size=20000)
    z = (draws - center) / reg.noise_scale_
    for j in range(z.shape[1]):
        assert stats.kstest(z[:, j], "norm").pvalue > P_FALSE_ALARM
    lowest = _scatter_lowest(Xs, True)
    released = [OutputPerturbationRegressor(random_state=s, **params).fit(X, y)
                .lowest_eigenvalue_ for s in range(60)]
    z = (np.array(released) - lowest) / reg.eigen_noise_
    assert stats.kstest(z, "norm").pvalue > P_FALSE_ALARM


def test_fixed_alpha_is_output_perturbation_at_that_ridge(make_unbounded_data):
    """A numeric alpha (and pure noise or a radius with "auto") releases no
    eigenvalue: the noise is the global sensitivity's."""
    X, y = make_unbounded_data(2000)
    for params in ({"alpha": 50.0}, {"noise": "laplace"}, {"radius": 1.0}):
        reg = OutputPerturbationRegressor(**_params(**params)).fit(X, y)
        assert not hasattr(reg.release_, "adaptive") and not hasattr(reg, "lowest_eigenvalue_")
        assert reg.sensitivity_ == output_perturbation_sensitivity(
            reg.alpha_, 2000, reg.radius, True)


def _joint_delta(reg, Xs, ys, Xo, yo, epsilon, flip=False):
    """Exact delta(epsilon) of the joint release (lambda~, theta) on the data
    set (Xs, ys) against the neighbour (Xo, yo) (reversed with ``flip``): for
    each lambda~ the two coefficient laws are Gaussians with one covariance,
    whose hockey-stick divergence with weights a, b is closed-form; the
    integral over lambda~ is a fine quadrature."""
    release, intercept = reg.release_.adaptive, reg.fit_intercept
    lam, other = _scatter_lowest(Xs, intercept), _scatter_lowest(Xo, intercept)
    sigma = release.eigen_noise
    grid = np.linspace(min(lam, other) - 14 * sigma, max(lam, other) + 14 * sigma, 400_001)
    cells = np.array([release.cell(t) for t in grid[::1000]])
    # the cell is monotone in lambda~: locate each change on the fine grid
    k_of = np.searchsorted(np.array([release.floor(k) for k in range(-1, cells.max() + 1)]),
                           np.maximum(grid - release.margin, 0.0), side="right") - 2
    k_of = np.where(grid - release.margin >= 1e-2, np.maximum(k_of, 0), -1)
    ratio = np.empty_like(grid)
    means = np.linalg.norm(_means(Xs, ys, intercept) - _means(Xo, yo, intercept))
    for k in np.unique(k_of):
        assert k == release.cell(grid[k_of == k][0])
        alpha = release.alpha(k)
        move = np.linalg.norm(_ridge(Xs, ys, alpha, intercept=intercept)
                              - _ridge(Xo, yo, alpha, intercept=intercept))
        # with the released means (above the floor), a Gaussian of their own noise
        ratio[k_of == k] = np.hypot(move / release.noise(k), means / release.means_noise(k))
    p = stats.norm.pdf(grid, lam, sigma)
    q = stats.norm.pdf(grid, other, sigma)
    if flip:
        p, q = q, p
    b = np.exp(epsilon) * q
    with np.errstate(divide="ignore", invalid="ignore"):
        shift = np.log(b / p) / ratio
        inner = (p * stats.norm.cdf(ratio / 2 - shift)
                 - b * stats.norm.cdf(-ratio / 2 - shift))
    inner = np.where(ratio > 0, inner, np.maximum(p - b, 0.0))
    trapezoid = getattr(np, "trapezoid", None) or np.trapz  # numpy < 2: trapz only
    return trapezoid(np.maximum(inner, 0.0), grid)


# small data sets without much signal: zero slopes by design
@pytest.mark.filterwarnings("ignore:.*released zero slopes:sklearn_pdp.exceptions.FallbackWarning")
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_private_ridge_losses_bound_the_exact_joint_delta(fit_intercept):
    """At each reported loss, the exact delta of the joint release against
    the refit without the row (both directions, integrated over lambda~ and
    its cells) is at most delta: the losses are valid; at 0.8 of the loss it
    exceeds delta/2 for the row of largest loss (not far above the truth)."""
    rng = np.random.default_rng(5)
    n = 1000  # above the fallback to the label mean
    X = rng.uniform(-1, 1, size=(n, 1 + fit_intercept))
    y = np.clip(X @ [0.9, -0.3][: X.shape[1]] + 0.05 * rng.normal(size=n), -1, 1)
    y[0] = -1.0  # an outlier: the largest loss
    reg = OutputPerturbationRegressor(epsilon=1.0, data_norm=np.sqrt(X.shape[1]), y_bound=1.0,
                                      fit_intercept=fit_intercept, random_state=0).fit(X, y)
    Xs, ys = _scaled(X, y, reg)
    worst = int(np.argmax(reg.pdp_losses_))
    for i in {worst, 1, 2}:
        keep = np.arange(n) != i
        eps = reg.pdp_losses_[i]
        for flip in (False, True):
            assert _joint_delta(reg, Xs, ys, Xs[keep], ys[keep], eps, flip) <= 1e-6 * (1 + 1e-6)
    keep = np.arange(n) != worst
    lower = max(_joint_delta(reg, Xs, ys, Xs[keep], ys[keep], 0.8 * reg.pdp_losses_[worst], f)
                for f in (False, True))
    assert lower > 0.5e-6

