import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn import config_context
from sklearn.exceptions import DataDimensionalityWarning
from sklearn.utils._param_validation import InvalidParameterError

from sklearn_pdp import PrivacyLeakWarning, RandomProjectionRegressor
from sklearn_pdp.mechanisms.random_projection import _release as _random_projection_release
from sklearn_pdp.mechanisms.random_projection import _sketch
from sklearn_pdp.accounting import chi2_delta, chi2_epsilon, chi2_noise_scale
from sklearn_pdp.domain._scaler import DomainScaler
from sklearn_pdp.mechanisms.random_projection._sketch import solve_sketch

from .._mc import Z_TOL, assert_matches_mc


# noisy slopes from a small sketch often fail the signal test: zero slopes by design
ZERO_SLOPES = pytest.mark.filterwarnings(
    "ignore:.*released zero slopes:sklearn_pdp.exceptions.FallbackWarning"
)


def _scaled_z(X, y, reg):
    Xs, ys = DomainScaler(reg.data_norm_, reg.y_bound_, reg.fit_intercept).scale(X, y)
    return np.column_stack((Xs, ys))


def _noise_variances(reg, n_columns):
    """diag of the noise covariance: on X and y ("dp") or X only ("paper")."""
    var = np.full(n_columns, reg.noise_scale_**2)
    if reg.variant == "paper":
        var[-1] = 0.0
    return var


def _fit(X, y, **params):
    params = {"data_norm": np.sqrt(X.shape[1]), "y_bound": 3.0, "random_state": 0, **params}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return RandomProjectionRegressor(**params).fit(X, y)


# ------------------------------------------------------ chi-square loss ----


@pytest.mark.parametrize(
    "n_components, noise_x, noise_y",
    [(3, 0.5, 0.5), (1, 0.2, 0.2), (6, 1.0, 1.0), (3, 0.3, 0.0)],
)
def test_chi2_loss_matches_simulated_mechanism(n_components, noise_x, noise_y):
    """Simulate S [X y] + noise explicitly on both neighbours and compare the
    Monte Carlo hockey-stick divergences with the chi-square formulas."""
    rng = np.random.default_rng(3)
    n, runs = 6, 200_000
    Z = np.column_stack((rng.uniform(-0.5, 0.5, size=(n, 2)), rng.uniform(-1, 1, n)))
    Z[0] = [0.6, -0.3, 0.9]  # the target, far from the others
    noise = np.array([noise_x, noise_x, noise_y])
    Z_small = Z[1:]
    sig_p = Z_small.T @ Z_small + np.diag(noise**2)
    sig_q = Z.T @ Z + np.diag(noise**2)
    prec_p, prec_q = np.linalg.inv(sig_p), np.linalg.inv(sig_q)
    half_logdet = 0.5 * (np.linalg.slogdet(sig_q)[1] - np.linalg.slogdet(sig_p)[1])

    def loss(R):  # log dP/dQ of the whole sketch, from the Gaussian densities
        quad = np.einsum("rki,ij,rkj->r", R, prec_p - prec_q, R)
        return n_components * half_logdet - 0.5 * quad

    def sketches(Z_data):
        S = rng.standard_normal((runs, n_components, len(Z_data)))
        return S @ Z_data + rng.standard_normal((runs, n_components, 3)) * noise

    loss_p, loss_q = loss(sketches(Z_small)), loss(sketches(Z))
    tau = Z[0] @ prec_p @ Z[0]
    for eps in (0.0, 0.3, 1.0, 2.0):
        assert_matches_mc(
            chi2_delta(eps, tau, n_components, direction="remove"),
            chi2_delta(eps, tau, n_components, direction="add"),
            loss_p, loss_q, eps,
        )
    # the two directions differ: both are needed
    assert chi2_delta(0.3, tau, n_components, "remove") != pytest.approx(
        chi2_delta(0.3, tau, n_components, "add"), rel=1e-3
    )


def test_chi2_epsilon_inverts_delta_and_handles_edges():
    tau = np.array([1e-4, 0.05, 0.7, 3.0, 50.0])
    for df in (1, 10, 300):
        eps = chi2_epsilon(1e-5, tau, df)
        assert np.all(chi2_delta(eps, tau, df) <= 1e-5 * (1 + 1e-9))
        assert np.all(chi2_delta(eps * (1 - 1e-6) - 1e-12, tau, df) > 1e-5)
    assert chi2_epsilon(1e-6, 0.0, 5) == 0.0
    assert chi2_epsilon(1e-6, np.inf, 5) == np.inf
    assert chi2_delta(3.0, np.inf, 5) == 1.0


@pytest.mark.parametrize("df", [2, 6298])
def test_chi2_epsilon_of_many_rows_is_tight(df):
    """Many rows at one (delta, df) start from a spline (a guess only): the
    answer is valid, tight and equal (1e-9) to that for a few rows; the tails
    equal the log of scipy.stats' smaller chi-square tail, or log1p of minus
    the other."""
    from scipy import stats

    from sklearn_pdp.accounting._chi2 import _chi2_log_cdf, _chi2_log_sf

    tau = np.geomspace(1e-7, 1e2, 5000) / df
    eps = chi2_epsilon(1e-6, tau, df)
    assert np.all(chi2_delta(eps, tau, df) <= 1e-6 * (1 + 1e-9))
    positive = eps > 0  # the rest have delta(0) <= 1e-6
    assert 0 < positive.sum() < tau.size
    assert np.all(chi2_delta(eps[positive] * (1 - 1e-6) - 1e-12, tau[positive], df) > 1e-6)
    assert np.all(chi2_delta(0.0, tau[~positive], df) <= 1e-6)
    few = np.concatenate([chi2_epsilon(1e-6, t, df) for t in np.array_split(tau, 5)[::2]])
    assert_allclose(np.concatenate(np.array_split(eps, 5)[::2]), few, rtol=1e-9, atol=1e-14)
    w = df * np.geomspace(1e-3, 1e2, 1000)
    cdf, sf = stats.chi2.cdf(w, df), stats.chi2.sf(w, df)
    with np.errstate(divide="ignore"):  # the branch not taken may be log(0)
        expected_cdf = np.where(cdf < 0.5, np.log(cdf), np.log1p(-sf))
        expected_sf = np.where(sf < 0.5, np.log(sf), np.log1p(-cdf))
    assert_allclose(_chi2_log_cdf(w, df), expected_cdf, rtol=1e-13)
    assert_allclose(_chi2_log_sf(w, df), expected_sf, rtol=1e-13)


def test_chi2_log_tails_evaluate_the_other_tail_only_where_needed():
    """The log tails equal the branch formula that evaluates both
    distribution functions on every row: varied orders, 0 and both sides
    of the median."""
    from scipy.special import chdtr, chdtrc

    from sklearn_pdp.accounting._chi2 import _chi2_log_cdf, _chi2_log_sf

    rng = np.random.default_rng(7)
    k = rng.choice([1.0, 2.0, 7.0, 200.0, 7908.0], 4000)
    x = np.concatenate([[0.0], k[1:] * np.exp(rng.normal(0, 0.5, 3999))])
    with np.errstate(divide="ignore"):
        cdf, sf = chdtr(k, x), chdtrc(k, x)
        both_cdf = np.where(cdf < 0.5, np.log(cdf), np.log1p(-sf))
        both_sf = np.where(sf < 0.5, np.log(sf), np.log1p(-cdf))
    assert_array_equal(_chi2_log_cdf(x, k), both_cdf)
    assert_array_equal(_chi2_log_sf(x, k), both_sf)


def test_chi2_loss_is_monotone_in_tau_and_n_components():
    """The calibration of the dp variant relies on it (worst case = corner)."""
    tau = np.geomspace(1e-5, 1e3, 200)
    for delta in (1e-3, 1e-8):
        previous = None
        for df in (1, 3, 30, 1000):
            eps = chi2_epsilon(delta, tau, df)
            assert np.all(np.diff(eps) >= 0)
            if previous is not None:
                assert np.all(eps >= previous)
            previous = eps


def test_chi2_noise_scale_is_tight():
    for epsilon, delta, df in ((1.0, 1e-6, 100), (0.1, 1e-5, 3), (8.0, 1e-9, 2000)):
        s = chi2_noise_scale(epsilon, delta, df)
        assert chi2_delta(epsilon, 2 / s**2, df) <= delta
        assert chi2_delta(epsilon, 2 / (s * (1 - 1e-7)) ** 2, df) > delta


# ------------------------------------------------------------ estimator ----


@ZERO_SLOPES
@pytest.mark.parametrize("variant", ["dp", "paper"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_pdp_losses_equal_brute_force_leave_one_out(variant, fit_intercept, make_unbounded_data):
    X, y = make_unbounded_data(40, features="uniform")
    # epsilon 15: above the fallback to the label mean, n epsilon > 100 (d + 1)
    reg = _fit(X, y, epsilon=15.0, n_components=7, variant=variant, fit_intercept=fit_intercept)
    Z = _scaled_z(X, y, reg)
    noise = np.diag(_noise_variances(reg, Z.shape[1]))
    expected = []
    for i in range(len(y)):
        others = np.delete(Z, i, axis=0)
        tau = Z[i] @ np.linalg.solve(others.T @ others + noise, Z[i])
        expected.append(chi2_epsilon(1e-6, tau, 7))
    if variant == "dp" and fit_intercept:
        # the sketch at its share of the budget, composed with the Laplace
        # label sum (the rest of it): each row adds |y| over the noise's scale
        share = _random_projection_release._LABEL_SHARE
        assert reg.noise_scale_ == chi2_noise_scale((1 - share) * 15.0, 1e-6, 7, 3.0)
        assert reg.label_noise_scale_ == pytest.approx(1.0 / (share * 15.0), rel=1e-12)
        expected = np.add(expected, np.abs(Z[:, -1]) / reg.label_noise_scale_)
    else:
        assert reg.label_noise_scale_ is None and reg.released_label_mean_ is None
    assert_allclose(reg.pdp_losses_, expected, rtol=1e-7)
    if variant == "dp":
        assert np.all(reg.pdp_losses_ <= reg.dp_epsilon_)
    else:
        assert reg.dp_epsilon_ == np.inf


@ZERO_SLOPES
def test_dp_calibration_is_tight_at_the_worst_row():
    """A row of norm 1 with |y| = 1 orthogonal to everything else reaches
    tau = 2 / s^2: its loss is the data-independent epsilon, which meets the
    budget."""
    n = 30
    X = np.zeros((n, 2))
    y = np.zeros(n)
    X[0], y[0] = [1.0, 0.0], 1.0
    X[1:, 1] = np.linspace(-1, 1, n - 1)
    reg = RandomProjectionRegressor(
        epsilon=0.7, n_components=12, delta=1e-5, data_norm=1.0, y_bound=1.0,
        fit_intercept=False, random_state=0,
    ).fit(X, y)
    assert reg.dp_epsilon_ == pytest.approx(0.7, rel=1e-7)
    assert reg.pdp_losses_[0] == pytest.approx(reg.dp_epsilon_, rel=1e-7)
    # row 0 sits exactly at the bound tau = 2/s^2, reached up to rounding
    assert reg.pdp_losses_.max() <= reg.dp_epsilon_ * (1 + 1e-12)
    assert reg.noise_scale_ == chi2_noise_scale(0.7, 1e-5, 12)


def test_pdp_epsilon_of_new_targets(make_unbounded_data):
    X, y = make_unbounded_data(50, features="uniform")
    reg = _fit(X, y, epsilon=10.0, n_components=5)  # above the fallback to the mean
    X_new, y_new = make_unbounded_data(8, seed=1, features="uniform")
    Z, Z_new = _scaled_z(X, y, reg), _scaled_z(X_new, y_new, reg)
    sigma = Z.T @ Z + np.diag(_noise_variances(reg, Z.shape[1]))
    tau = np.einsum("ij,ij->i", Z_new, np.linalg.solve(sigma, Z_new.T).T)
    # with the Laplace label sum: each added row's |y| over its scale
    label = np.abs(Z_new[:, -1]) / reg.label_noise_scale_
    assert_allclose(reg.pdp_epsilon(X_new, y_new), chi2_epsilon(1e-6, tau, 5) + label,
                    rtol=1e-7)
    worst = reg.pdp_epsilon(X_new)
    for label in (-3.0, -1.0, 0.0, 2.0, 3.0):
        assert np.all(worst >= reg.pdp_epsilon(X_new, np.full(8, label)) - 1e-12)


def test_sketch_rows_have_the_analysed_distribution(make_unbounded_data):
    """The explicitly drawn sketch, whitened by Sigma, has identity covariance
    (catches a wrong noise column, reused or correlated blocks of S)."""
    X, y = make_unbounded_data(700, d=2, features="uniform")  # one full and one partial block of S
    for variant in ("dp", "paper"):
        with warnings.catch_warnings():  # n_components > n_samples on purpose
            warnings.simplefilter("ignore", DataDimensionalityWarning)
            reg = _fit(X, y, epsilon=2.0, n_components=10_000, variant=variant)
        Z = _scaled_z(X, y, reg)
        chol = np.linalg.cholesky(Z.T @ Z + np.diag(_noise_variances(reg, Z.shape[1])))
        W = np.linalg.solve(chol, reg.sketch_.T)
        cov = W @ W.T / W.shape[1]
        eye = np.eye(Z.shape[1])
        se = np.sqrt((1 + eye) / W.shape[1])  # sd of a sample covariance entry
        assert np.all(np.abs(cov - eye) <= Z_TOL * se), cov


@pytest.mark.parametrize("variant", ["dp", "paper"])
def test_result_does_not_depend_on_chunk_size(variant, make_unbounded_data):
    X, y = make_unbounded_data(1500, d=3, features="uniform")
    fits = []
    for working_memory in (0.01, 0.07, 1024):  # chunks of 81, 573 and all rows
        with config_context(working_memory=working_memory):
            fits.append(_fit(X, y, n_components=40, variant=variant, random_state=5))
    for other in fits[1:]:
        assert_allclose(other.sketch_, fits[0].sketch_, rtol=1e-13, atol=1e-12)
        assert_allclose(other.coef_, fits[0].coef_, rtol=1e-10)
        # equal up to the epsilon search's relative tolerance (1e-8)
        assert_allclose(other.pdp_losses_, fits[0].pdp_losses_, rtol=2e-8)
    again = _fit(X, y, n_components=40, variant=variant, random_state=5)
    assert_array_equal(again.coef_, fits[-1].coef_)
    other_seed = _fit(X, y, n_components=40, variant=variant, random_state=6)
    assert not np.allclose(other_seed.sketch_, fits[-1].sketch_)


@ZERO_SLOPES
def test_n_components_rules(make_unbounded_data):
    # without an intercept: no fallback to the label mean at any size
    X, y = make_unbounded_data(2000, d=2, features="uniform")
    fit = dict(fit_intercept=False)
    assert _fit(X, y, n_components="log", **fit).n_components_ == round(1000 * (1 + np.log(2)))
    assert _fit(X, y, n_components="linear", **fit).n_components_ == 1500
    X, y = make_unbounded_data(300, d=2, features="uniform")
    for rule in ("log", "linear", "full"):
        assert _fit(X, y, n_components=rule, **fit).n_components_ == 300
    with pytest.warns(DataDimensionalityWarning, match="n_components=400"):
        reg = _fit(X, y, n_components=400, **fit)
    assert reg.n_components_ == reg.sketch_.shape[0] == 400


@pytest.mark.parametrize(
    "params, name",
    [
        ({"n_components": "sqrt"}, "n_components"),
        ({"n_components": 0}, "n_components"),
        ({"variant": "mi"}, "variant"),
        ({"epsilon": 0.0}, "epsilon"),
        ({"delta": 1.0}, "delta"),
    ],
)
def test_invalid_parameters_name_the_parameter(params, name, make_unbounded_data):
    X, y = make_unbounded_data(60, features="uniform")
    with pytest.raises(InvalidParameterError, match=name):
        RandomProjectionRegressor(**params).fit(X, y)


def test_dp_variant_is_accurate_with_enough_data():
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, size=(20_000, 2)) / np.sqrt(2)
    y = X @ [0.8, -0.4] + 0.05 * rng.normal(size=20_000)
    reg = RandomProjectionRegressor(
        epsilon=2.0, n_components=200, data_norm=1.0, y_bound=1.0, random_state=0
    ).fit(X, y)
    assert reg.score(X, y) > 0.9


# -------------------------------------------------- the paper's variant ----


def test_paper_noise_formula_against_hand_computed_values():
    # f(X)^2 = min over columns of (sum of squares - largest square):
    # column 0: 0.64 + 0.25 + 0.04 - 0.64 = 0.29, column 1: 0.34 -> 0.29.
    # (Over rows, as the paper prints it, it would be 0.04.)
    X = np.array([[0.8, 0.5], [0.5, -0.8], [0.2, 0.3]])
    y = np.array([0.1, -0.2, 0.3])
    params = dict(n_components=2, variant="paper", data_norm=1.0, y_bound=1.0,
                  fit_intercept=False)
    with pytest.warns(PrivacyLeakWarning, match="paper"):
        reg = RandomProjectionRegressor(epsilon=0.5, **params).fit(X, y)
    # 2 / (2^(2 * 0.5) - 1) - 0.29 = 1.71
    assert reg.noise_scale_**2 == pytest.approx(1.71, rel=1e-12)
    # 2 / (2^(2 * 0.25) - 1) - 0.29 = 2 / (sqrt(2) - 1) - 0.29
    with pytest.warns(PrivacyLeakWarning):
        reg = RandomProjectionRegressor(epsilon=0.25, **params).fit(X, y)
    assert reg.noise_scale_**2 == pytest.approx(2 / (np.sqrt(2) - 1) - 0.29, rel=1e-12)
    # 2 / (2^4 - 1) = 0.133 < 0.29: no noise at all
    with pytest.warns(PrivacyLeakWarning):
        reg = RandomProjectionRegressor(epsilon=2.0, **params).fit(X, y)
    assert reg.noise_scale_ == 0.0
    assert reg.dp_epsilon_ == np.inf


@ZERO_SLOPES
def test_erratum_e10_the_paper_sketch_reveals_the_secret_entry():
    """Two columns equal except for the secret entry X[0, 0] in {0, 1}. The
    paper's rule claims 0.1-bit MI-DP with sigma_RP = 0, yet the difference
    of the two sketch columns is exactly zero iff the secret is 0, so the
    sketch determines the secret (1 bit of mutual information)."""
    rng = np.random.default_rng(0)
    n = 400
    column = rng.choice([-1.0, 1.0], size=n)
    y = rng.uniform(-1, 1, n)
    params = dict(epsilon=0.1, n_components=10, variant="paper", data_norm=np.sqrt(2),
                  y_bound=1.0, fit_intercept=False)
    for seed in range(5):
        for secret in (0.0, 1.0):
            X = np.column_stack((column, column))
            X[0] = [secret, 0.0]
            with pytest.warns(PrivacyLeakWarning) as record:
                reg = RandomProjectionRegressor(random_state=seed, **params).fit(X, y)
            assert any("training row" in str(w.message) for w in record) == bool(secret)
            assert reg.noise_scale_ == 0.0
            gap = np.linalg.norm(reg.sketch_[:, 0] - reg.sketch_[:, 1])
            assert (gap > 1e-6) == bool(secret), gap
    # without the secret's row the two columns are equal, so that row alone
    # spans a direction of Sigma: its exact row-level loss is infinite
    assert reg.pdp_losses_[0] == np.inf
    assert np.all(np.isfinite(reg.pdp_losses_[1:]))


def test_paper_variant_without_noise_and_y_in_span_of_x():
    """sigma_RP = 0 and y = X b: the sketch covariance is singular. Training
    rows lie in its range (finite losses); a new target off the relation y = x b
    has infinite loss."""
    rng = np.random.default_rng(2)
    X = rng.uniform(-1, 1, size=(500, 2)) / np.sqrt(2)
    y = X @ [0.5, -0.3]
    params = dict(epsilon=1.0, n_components=20, variant="paper", data_norm=1.0,
                  y_bound=1.0, fit_intercept=False, random_state=0)
    with pytest.warns(PrivacyLeakWarning) as record:
        reg = RandomProjectionRegressor(**params).fit(X, y)
    assert any("singular" in str(w.message) for w in record)
    assert reg.noise_scale_ == 0.0
    assert np.all(np.isfinite(reg.pdp_losses_))
    assert_allclose(reg.coef_, [0.5, -0.3], rtol=1e-8)  # the sketch is exact
    X_new = X[:3]
    assert np.all(np.isfinite(reg.pdp_epsilon(X_new, X_new @ [0.5, -0.3])))
    assert np.all(reg.pdp_epsilon(X_new, X_new @ [0.5, -0.3] + 0.1) == np.inf)
    assert np.all(reg.pdp_epsilon(X_new) == np.inf)
    # the release still has the analysed distribution: draws stay in the range
    draws = reg.release_.draw(np.random.default_rng(0), size=3)
    assert_allclose(draws[..., :2] @ [0.5, -0.3], draws[..., 2], atol=1e-12)


def test_paper_variant_with_an_almost_exact_relation_is_never_optimistic():
    """sigma_RP = 0 and y = X b + tiny noise: Sigma is singular to working
    precision, yet the rows break the relation by far more than rounding, so
    their share of the tiny direction (up to all of it) is unknown: infinite
    loss, never the finite loss of the rows' projection onto the range. A
    relation a little less exact makes Sigma too ill-conditioned to report
    anything: a clear error naming the variant, not a parameter it lacks."""
    rng = np.random.default_rng(2)
    X = rng.uniform(-1, 1, size=(500, 2)) / np.sqrt(2)
    noise = rng.standard_normal(500)
    params = dict(epsilon=1.0, n_components=20, variant="paper", data_norm=1.0,
                  y_bound=1.0, fit_intercept=False, random_state=0)
    y = X @ [0.5, -0.3] + 1e-9 * noise
    with pytest.warns(PrivacyLeakWarning) as record:
        reg = RandomProjectionRegressor(**params).fit(X, y)
    assert any("singular" in str(w.message) for w in record)
    # a row's component along the null direction (0.5, -0.3, -1) / ||.||,
    # relative to its norm; rows beyond rounding (1e-12) must be infinite
    null = np.array([0.5, -0.3, -1.0])
    Z = np.column_stack((X, y))
    violation = np.abs(Z @ null) / np.linalg.norm(null) / np.linalg.norm(Z, axis=1)
    assert np.all(reg.pdp_losses_[violation > 1e-12 * (1 + 1e-6)] == np.inf)
    assert np.mean(violation > 1e-12) > 0.9
    with pytest.raises(ValueError, match="variant='paper'"), pytest.warns(PrivacyLeakWarning):
        RandomProjectionRegressor(**params).fit(X, X @ [0.5, -0.3] + 1e-6 * noise)


def test_intercept_is_not_shrunk_by_the_noise():
    # labels far from 0: least squares on the sketch treats the noise as a
    # ridge s^2 on the intercept too; the fit removes it (post-processing)
    rng = np.random.default_rng(3)
    X = 0.2 * rng.uniform(-1, 1, size=(20_000, 3))
    y = 0.6 + X @ [0.5, -0.5, 0.2] + 0.05 * rng.standard_normal(20_000)
    reg = RandomProjectionRegressor(epsilon=1.0, n_components=2000, data_norm=1.0,
                                    y_bound=1.0, random_state=0).fit(X, y)
    sketch = reg.sketch_
    shrunk = np.linalg.lstsq(sketch[:, :-1], sketch[:, -1], rcond=None)[0][-1]
    assert abs(reg.intercept_ - 0.6) < 0.02
    assert abs(reg.intercept_ - 0.6) < 0.5 * abs(shrunk - 0.6)


# ------------------------------------------------------ the signal ridge ----


def _no_signal_ridge(monkeypatch, ridge):
    """Replace the James-Stein ridge of the sketch's solve by ``ridge``
    (0: the noise's own ridge alone; inf: the label mean alone), without
    the risk bound's further shrinking (``risk_ridge``)."""
    monkeypatch.setattr(_sketch, "signal_ridge", lambda *a: ridge)
    monkeypatch.setattr(_sketch, "risk_ridge", lambda *a: a[3])


def _skewed_noise_ratios():
    """Test MSE over the mean predictor's on labels that vary little and do
    not depend on X (skewed, near one end of the range, as survey counts),
    with a scatter of the features well above the noise's ridge."""
    ratios = []
    for seed in range(5):
        rng = np.random.default_rng(seed)
        X = rng.choice([-1.0, 1.0], (11_000, 20)) / np.sqrt(20)
        y = np.clip(0.03 + 0.01 * rng.standard_normal(11_000) ** 2, 0, 1)
        reg = RandomProjectionRegressor(epsilon=3.0, data_norm=1.0, y_bound=1.0,
                                        tighten_bounds=False,
                                        random_state=seed).fit(X[:10_000], y[:10_000])
        mse = np.mean((reg.predict(X[10_000:]) - y[10_000:]) ** 2)
        ratios.append(mse / np.mean((y[:10_000].mean() - y[10_000:]) ** 2))
    return np.mean(ratios)


@ZERO_SLOPES
def test_labels_without_signal_that_vary_little_give_the_mean(monkeypatch):
    """The signal test of the sketch's cross term releases (nearly) the
    label mean where the slopes fitted at the noise's ridge alone cost far
    more than the mean."""
    assert _skewed_noise_ratios() < 1.05
    _no_signal_ridge(monkeypatch, 0.0)
    assert _skewed_noise_ratios() > 1.3


def _sketches(reg, size, seed=1):
    """``size`` fresh draws of the release."""
    return reg.release_.draw(np.random.default_rng(seed), size)


def test_strong_signal_is_hardly_shrunk(monkeypatch, make_unbounded_data):
    """Where the cross term is far above its noise, the slopes are least
    squares on the de-biased sketch (the noise's s^2 taken off the scatter):
    on average over sketches within 1% of the data's least squares, where
    the noise's ridge alone took 30% off them; the signal ridge takes less
    than 0.2% off the slopes of the same sketches."""
    X, y = make_unbounded_data(20_000, d=5, seed=2, features="uniform")
    reg = RandomProjectionRegressor(epsilon=1.0, data_norm=np.sqrt(5), y_bound=3.0,
                                    random_state=0).fit(X, y)
    Z = _scaled_z(X, y, reg)
    least_squares = np.linalg.lstsq(Z[:, :-1], Z[:, -1], rcond=None)[0][:5]
    sketches = _sketches(reg, 200)
    shrunk = np.array([reg.release_.solve(s)[0] for s in sketches])
    assert np.isfinite(reg.signal_ridge_)
    error = np.linalg.norm(shrunk[:, :5].mean(axis=0) - least_squares)
    assert error <= 0.01 * np.linalg.norm(least_squares)
    s2, n = reg.noise_scale_**2, X.shape[0]
    biased = np.array([solve_sketch(s, s2, n, True, debias=False)[0] for s in sketches])
    assert np.linalg.norm(biased[:, :5].mean(axis=0)) < 0.8 * np.linalg.norm(least_squares)
    _no_signal_ridge(monkeypatch, 0.0)
    plain = np.array([reg.release_.solve(s)[0] for s in sketches])
    ratio = np.linalg.norm(shrunk[:, :5], axis=1) / np.linalg.norm(plain[:, :5], axis=1)
    assert np.all((ratio > 0.998) & (ratio <= 1.0)), ratio


def test_noise_floor_steadies_nearly_collinear_features(monkeypatch):
    """Two pairs of nearly equal features: along their differences the
    data's scatter is below the sketch's fluctuation, where the de-biased
    scatter alone (no floor) fits noise. Over the same sketches the floor's
    ridge has the least in-sample error: below the de-biased solve without
    it and below the noise's ridge alone (the model before de-biasing)."""
    rng = np.random.default_rng(0)
    n = 20_000
    base = rng.standard_normal((n, 2))
    X = np.column_stack([base, base + 0.05 * rng.standard_normal((n, 2))]) / 6
    y = np.clip(X @ [1.0, -0.5, 0.5, 0.2] + 0.3 * rng.standard_normal(n), -1, 1)
    reg = RandomProjectionRegressor(epsilon=0.3, data_norm=1.0, y_bound=1.0,
                                    random_state=0).fit(X, y)
    assert reg.signal_ridge_ > 0
    Z = _scaled_z(X, y, reg)
    sketches = _sketches(reg, 200)

    def error(solve):
        theta = np.array([solve(s)[0] for s in sketches])
        return np.mean((Z[:, :-1] @ theta.T - Z[:, -1:]) ** 2)

    floored = error(reg.release_.solve)
    s2 = reg.noise_scale_**2
    assert floored < 0.9 * error(lambda s: solve_sketch(s, s2, n, True, debias=False))
    # the de-biased scatter alone: neither the floor nor the risk bound
    monkeypatch.setattr(_sketch, "_noise_ridge", lambda *a: 0.0)
    monkeypatch.setattr(_sketch, "risk_ridge", lambda *a: a[3])
    assert floored < 0.9 * error(reg.release_.solve)


@ZERO_SLOPES
def test_no_signal_is_not_worse_than_the_mean():
    """Labels independent of the features (and varying little): the slopes
    are de-biased only where the cross term clearly shows a signal, so the
    test error stays within 2% of the mean predictor's (de-biased wherever
    slopes are fitted it was 6% worse; with the noise's ridge alone, the
    model before de-biasing, 2.5%)."""
    ratios = []
    for seed in range(5):
        rng = np.random.default_rng(seed)
        X = rng.uniform(-1, 1, (20_000, 8)) / np.sqrt(8)
        y = np.clip(0.5 + 0.05 * rng.standard_normal(20_000), -1, 1)
        train, test = slice(15_000), slice(15_000, None)
        reg = RandomProjectionRegressor(epsilon=0.3, data_norm=1.0, y_bound=1.0,
                                        random_state=seed).fit(X[train], y[train])
        mse = np.mean((reg.predict(X[test]) - y[test]) ** 2)
        ratios.append(mse / np.mean((y[train].mean() - y[test]) ** 2))
    assert np.mean(ratios) < 1.02, ratios


@ZERO_SLOPES
def test_quiet_off_centre_label_is_not_worse_than_the_mean():
    """Labels independent of off-centre features, varying little around an
    off-centre mean: the sketch's centred cross term holds the noise's share
    of the means (``m s^2`` times the feature and label means), no signal,
    so the signal test reads the de-biased cross term. The median test error
    over seeds stays within what slopes at the noise's ridge cost on
    average, ``(d + 1) s^2 / (k n)`` over the label variance, above the
    mean predictor's (1.013, the margin 0.034; the spurious signal passed
    every test: 1.072)."""
    n, d = 4000, 6
    ratios, margins = [], []
    for seed in range(9):
        rng = np.random.default_rng(seed)
        X = rng.uniform(0, 1, (2 * n, d)) / np.sqrt(d)
        y = 0.6 + 0.06 * rng.standard_normal(2 * n)
        train, test = slice(n), slice(n, None)
        reg = RandomProjectionRegressor(epsilon=3.0, data_norm=1.0, y_bound=1.0,
                                        random_state=seed).fit(X[train], y[train])
        base = np.mean((y[train].mean() - y[test]) ** 2)
        ratios.append(np.mean((reg.predict(X[test]) - y[test]) ** 2) / base)
        margins.append((d + 1) * reg.noise_scale_**2 / (reg.n_components_ * n) / base)
    assert np.median(ratios) <= 1 + np.median(margins), (ratios, margins)


@ZERO_SLOPES
def test_noisy_slopes_of_a_quiet_skewed_label_cost_little():
    """Labels independent of the features, skewed and heavy-tailed with a
    small variance (as medical expenditures scaled to their range), and
    binary features of uneven frequencies: a sketch whose cross term
    passes the signal test by chance fits slopes whose noise costs a large
    share of the label variance (``tr(C) / k`` against it). The risk
    bound keeps only slopes that surely predict better than none: over
    sketches, their in-sample prediction variance stays below 5% of the
    label variance (with the signal test alone 12% at epsilon 1)."""
    costs = []
    for seed in range(3):
        rng = np.random.default_rng(seed)
        n = 4500
        rare = rng.random((n, 12)) < np.linspace(0.03, 0.5, 12)
        X = np.column_stack([rare, rng.random((n, 4))]) / 4.0
        y = np.clip(0.0054 * np.exp(1.2 * rng.standard_normal(n)), 0, 1)
        reg = RandomProjectionRegressor(epsilon=1.0, data_norm=1.0, y_bound=1.0,
                                        random_state=seed).fit(X, y)
        theta = np.array([reg.release_.solve(s)[0] for s in _sketches(reg, 100)])
        fitted = (X - X.mean(axis=0)) @ theta[:, :12 + 4].T
        costs.append(np.mean(fitted**2) / y.var())
    assert np.mean(costs) < 0.05, costs


@ZERO_SLOPES
def test_mean_alone_is_the_unbiased_label_mean(monkeypatch):
    """With the slopes at 0 the intercept is the label mean's estimate from
    the sketch, never pulled towards 0: the regression of y on the constant
    column rescaled by the public (n + s^2) / n. Given that column (squared
    norm (n + s^2) chi2_k), it is unbiased with variance sigma_e^2 / ||a||^2
    times the factor squared, so over draws its variance is
    sigma_e^2 (n + s^2) / (n^2 (k - 2)) with
    sigma_e^2 = Sigma_yy - Sigma_cy^2 / Sigma_cc."""
    rng = np.random.default_rng(4)
    n = 3000
    X = rng.uniform(0, 1, (n, 3)) / np.sqrt(3)
    y = np.clip(0.6 + 0.1 * rng.standard_normal(n), -1, 1)
    reg = RandomProjectionRegressor(epsilon=1.0, n_components=200, data_norm=1.0,
                                    y_bound=1.0, random_state=0).fit(X, y)
    sketches = _sketches(reg, 4000)
    _no_signal_ridge(monkeypatch, np.inf)
    theta = np.array([reg.release_.solve(s)[0] for s in sketches])
    assert np.all(theta[:, :3] == 0.0)
    s2, k = reg.noise_scale_**2, reg.n_components_
    var = (y @ y + s2 - y.sum() ** 2 / (n + s2)) * (n + s2) / (n**2 * (k - 2))
    error = theta[:, 3] - y.mean()
    assert abs(error.mean()) <= Z_TOL * np.sqrt(var / error.size)
    # sample variance: relative standard error sqrt(2 / size) (nearly normal)
    assert abs(error.var(ddof=1) / var - 1) <= Z_TOL * np.sqrt(2 / error.size)


@ZERO_SLOPES
def test_signal_ridge_changes_no_privacy_number(monkeypatch, make_unbounded_data):
    """The ridge is post-processing of the sketch: the losses and the
    guarantee do not depend on it."""
    X, y = make_unbounded_data(3000, d=4, seed=3, features="uniform")
    fits = []
    for ridge in (None, 0.0, np.inf):
        if ridge is not None:
            _no_signal_ridge(monkeypatch, ridge)
        fits.append(_fit(X, y, epsilon=1.0, n_components=300))
    assert not np.allclose(fits[1].coef_, fits[2].coef_)
    for other in fits[1:]:
        assert_array_equal(other.pdp_losses_, fits[0].pdp_losses_)
        assert other.dp_epsilon_ == fits[0].dp_epsilon_


@ZERO_SLOPES
def test_cross_term_noise_is_estimated_without_bias(monkeypatch):
    """The solve's noise variance of the sketch's centred cross term:
    with centred features and labels orthogonal to them, the cross term is
    pure noise, of covariance sigma_e^2 times the sketch's centred scatter
    given its features, and the residual variance estimates sigma_e^2
    independently (chi-square, k - p degrees of freedom). So
    ||cross||^2 / noise has mean d (k - p) / (k - p - 2) exactly."""
    rng = np.random.default_rng(5)
    n, d, k = 4000, 4, 60
    X = rng.uniform(-1, 1, (n, d)) / (2 * np.sqrt(d))
    X -= X.mean(axis=0)
    r = rng.standard_normal(n)
    basis = np.column_stack((np.ones(n), X))
    r -= basis @ np.linalg.lstsq(basis, r, rcond=None)[0]
    y = 0.2 + 0.1 * r / r.std()
    reg = RandomProjectionRegressor(epsilon=1.0, n_components=k, data_norm=1.0,
                                    y_bound=1.0, random_state=0).fit(X, y)
    ratios = []
    orig = _sketch.signal_ridge

    def spy(cross, noise, *rest):
        ratios.append(cross @ cross / noise)
        return orig(cross, noise, *rest)

    monkeypatch.setattr(_sketch, "signal_ridge", spy)
    sketches = _sketches(reg, 4000)
    for sketch in sketches:
        reg.release_.solve(sketch)
    ratios = np.array(ratios)
    assert ratios.size == 4000
    dof = k - d - 1
    expected = d * dof / (dof - 2)
    assert abs(ratios.mean() - expected) <= Z_TOL * ratios.std(ddof=1) / np.sqrt(ratios.size)


# ------------------------------------------------- the released label mean ----


@ZERO_SLOPES
def test_quiet_label_takes_the_released_label_mean():
    """Labels independent of the features that vary little (variance 4e-4
    of the scaled range, as medical expenditures) on 4500 rows at epsilon
    1: the slopes are dropped, and the sketch's own label mean has noise
    variance about ``s^2 (n + s^2) / (n^2 (k - 2))``, 12-14% of the label
    variance (the test error over the mean predictor's less 1); the
    released label mean's ``2 b^2 / n^2`` is 2.5% of it, and over fresh
    releases the intercept takes it."""
    rng = np.random.default_rng(0)
    n = 4500
    X = rng.uniform(0, 1, (n, 4)) / 2
    y = 0.05 + 0.02 * rng.standard_normal(n)
    reg = RandomProjectionRegressor(epsilon=1.0, data_norm=1.0, y_bound=1.0,
                                    random_state=0).fit(X, y)
    assert reg.centred_intercept_ and np.all(reg.coef_ == 0)
    assert reg.intercept_ == reg.released_label_mean_
    (own, _, rule), picks = _intercept_errors(reg, X, y, 200)
    assert picks > 0.9
    assert rule < 0.04 * y.var()
    assert own > 0.1 * y.var()


def _intercept_errors(reg, X, y, draws):
    """Mean square errors, over fresh releases, of the sketch's own
    intercept, of the one at the released label mean and of the rule's,
    against the data's intercept at the drawn slopes; and how often the
    rule took the released mean."""
    release, n = reg.release_, len(y)
    rng = np.random.default_rng(1)
    errors, picks = np.zeros(3), 0
    for _ in range(draws):
        coef = release.release(rng)
        own = release.solve(release.sketch)[0]
        truth = y.mean() - X.mean(axis=0) @ own[:-1]
        mixed = _sketch.label_mean_intercept(
            release.sketch, own, n, release.noise_scale**2, release.released_label_mean, -1.0)[0]
        errors += np.square([own[-1] - truth, mixed[-1] - truth, coef[-1] - truth])
        picks += release.centred
    return errors / draws, picks / draws


@pytest.mark.parametrize("n, epsilon, noise, centred", [(4500, 1.0, 0.01, True),
                                                        (20_000, 3.0, 0.01, False)])
def test_intercept_rule_takes_the_less_noisy_intercept(n, epsilon, noise, centred):
    """The public rule compares the two intercepts' noise variances
    estimated from the sketch: with few rows the released label mean's is
    the smaller (0.4 of the sketch's), with many rows at a large epsilon
    the sketch's (0.8 of the released one's, whose feature means are the
    sketch's). Over fresh releases the rule's error is the smaller one."""
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (n, 4)) / 2
    y = np.clip(0.1 + X @ [0.8, -0.6, 0.5, 0.4] + noise * rng.standard_normal(n), -1, 1)
    reg = RandomProjectionRegressor(epsilon=epsilon, data_norm=1.0, y_bound=1.0,
                                    tighten_bounds=False, random_state=0).fit(X, y)
    (own, mixed, rule), picks = _intercept_errors(reg, X, y, 100)
    assert picks == (1.0 if centred else 0.0)
    assert rule == (mixed if centred else own)
    assert rule < 0.9 * max(own, mixed)


@ZERO_SLOPES
def test_released_label_mean_has_the_calibrated_law():
    """KS test of the released label means against Laplace(mean, b / n),
    b = ``label_noise_scale_``: the noise is the one the losses assume."""
    from scipy import stats

    rng = np.random.default_rng(2)
    n = 2000
    X = rng.uniform(-1, 1, (n, 3)) / np.sqrt(3)
    y = np.clip(0.3 + 0.2 * rng.standard_normal(n), -1, 1)
    reg = RandomProjectionRegressor(epsilon=2.0, n_components=20, data_norm=1.0,
                                    y_bound=1.0, random_state=0).fit(X, y)
    draws = np.random.default_rng(3)
    means = []
    for _ in range(2000):
        reg.release_.release(draws)
        means.append(reg.release_.released_label_mean)
    scale = reg.label_noise_scale_ / n
    assert stats.kstest(means, stats.laplace(loc=y.mean(), scale=scale).cdf).pvalue > 1e-3


def test_released_label_mean_changes_no_privacy_number(monkeypatch, make_unbounded_data):
    """The losses and the guarantee are those of the sketch and the label
    sum, whatever is drawn and whichever intercept the rule takes."""
    X, y = make_unbounded_data(3000, d=4, seed=3, features="uniform")
    fits = [_fit(X, y, epsilon=1.0, n_components=300, random_state=seed) for seed in (0, 1)]
    assert fits[0].released_label_mean_ != fits[1].released_label_mean_
    for centred in (True, False):
        monkeypatch.setattr(_sketch, "label_mean_intercept",
                            lambda sketch, coef, *a, c=centred: (coef, c))
        fits.append(_fit(X, y, epsilon=1.0, n_components=300))
    for other in fits[1:]:
        assert_array_equal(other.pdp_losses_, fits[0].pdp_losses_)
        assert other.dp_epsilon_ == fits[0].dp_epsilon_ == 1.0


def test_label_sum_and_sketch_compose_within_the_budget():
    """The guarantee at the fit's delta is the budget: the sketch's loss at
    its corner (its share) plus the label sum's worst, ``label_epsilon``,
    and at another delta the law's dp_epsilon is that sum."""
    rng = np.random.default_rng(4)
    X = rng.uniform(-1, 1, (3000, 3)) / np.sqrt(3)
    y = np.clip(X @ [0.5, -0.3, 0.2] + 0.1 * rng.standard_normal(3000), -1, 1)
    reg = RandomProjectionRegressor(epsilon=1.0, n_components=300, data_norm=1.0,
                                    y_bound=1.0, random_state=0).fit(X, y)
    release = reg.release_
    corner = chi2_epsilon(1e-6, release.max_tau, 300)
    assert corner + 1.0 / reg.label_noise_scale_ <= 1.0 * (1 + 1e-8)
    assert reg.dp_epsilon_ == 1.0 and np.all(reg.pdp_losses_ <= 1.0)
    assert release.dp_epsilon(1e-5) == pytest.approx(
        chi2_epsilon(1e-5, release.max_tau, 300) + 1.0 / reg.label_noise_scale_, rel=1e-12)
