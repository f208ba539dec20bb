import numpy as np
import pytest

from sklearn_pdp.mechanisms._signal import risk_change, risk_ridge, signal_ridge


def test_signal_ridge_against_hand_computed_values():
    # d = 2, ||cross||^2 = 25, noise 1 per coordinate: the signal is
    # 25 - (2 + margin * 2); ridge = mean_eigen * v d / signal
    cross = np.array([[3.0, 4.0], [0.6, 0.8], [3.0, 4.0]])
    alpha = signal_ridge(cross, 1.0, np.array([1.0, 1.0, 2.0]), 10.0, margin=1.0)
    assert alpha[0] == pytest.approx(10.0 * 1.0 * 2 / 21.0, rel=1e-15)
    assert alpha[1] == np.inf  # 1 < 4: no signal above the noise
    assert alpha[2] == pytest.approx(10.0 * 2.0 * 2 / 21.0, rel=1e-15)
    # a negative margin accepts a cross term below its noise's mean d v
    assert signal_ridge(np.array([1.0, 0.5]), 1.0, 1.0, 10.0, margin=0.0) == np.inf
    assert signal_ridge(np.array([1.0, 0.5]), 1.0, 1.0, 10.0, margin=-0.5) == pytest.approx(
        10.0 * 2 / (1.25 - 1.0), rel=1e-14)


def test_signal_ridge_of_no_scatter_is_zero():
    assert signal_ridge(np.array([3.0, 4.0]), 1.0, 1.0, 0.0, margin=1.0) == 0.0


def _risk_problem(d=4, seed=0):
    """A scatter, slopes, the cross term's mean and noise covariance."""
    rng = np.random.default_rng(seed)
    root = rng.standard_normal((d, d))
    scatter = root @ root.T + 0.1 * np.eye(d)
    beta = 0.3 * rng.standard_normal(d)
    half = rng.standard_normal((d, d))
    return scatter, beta, scatter @ beta, half @ half.T + np.eye(d)


def test_risk_change_is_unbiased_with_the_stated_deviation():
    """Over noisy cross terms, the estimate's mean is the risk change of
    the ridge slopes, ``E (b - beta)^T A (b - beta) - beta^T A beta``
    computed exactly. Its stated deviation squared has the estimate's
    variance as its mean where the signal's part is never clipped (a
    strong signal), and is never below it on average otherwise."""
    from tests._mc import Z_TOL

    scatter, beta, mean, cov = _risk_problem()
    alphas = np.array([0.0, 0.5, 5.0, 500.0])
    draws = 10_000
    rng = np.random.default_rng(1)
    noise = rng.standard_normal((draws, 4)) @ np.linalg.cholesky(cov).T
    for scale in (1.0, 30.0):
        cross = scale * mean + noise
        estimates = np.array([risk_change(scatter, c, cov, alphas) for c in cross])
        change, deviation = estimates[:, 0], estimates[:, 1]
        for j, alpha in enumerate(alphas):
            M = np.linalg.inv(scatter + alpha * np.eye(4))
            K = M @ scatter @ M - 2 * M
            mu = scale * mean
            second = np.outer(mu, mu) + cov
            exact = np.trace(M @ scatter @ M @ second) - 2 * scale * beta @ scatter @ M @ mu
            variance = 2 * np.trace(K @ cov @ K @ cov) + 4 * mu @ K @ cov @ K @ mu
            se = np.sqrt(variance / draws)
            assert abs(change[:, j].mean() - exact) <= Z_TOL * se
            # the sample variance's relative error ~ sqrt(2 / draws) (for
            # a nearly normal estimate; generous for a chi-square-like one)
            sample = change[:, j].var(ddof=1)
            assert abs(sample / variance - 1) <= 2 * Z_TOL * np.sqrt(2 / draws)
            ratio = np.mean(deviation[:, j] ** 2) / variance
            if scale > 1:
                assert abs(ratio - 1) <= 2 * Z_TOL * np.sqrt(2 / draws), ratio
            else:
                assert ratio >= 1 - 2 * Z_TOL * np.sqrt(2 / draws), ratio


def test_risk_ridge_keeps_a_clear_signal_and_drops_noise():
    scatter, _, mean, cov = _risk_problem()
    # a cross term far above its noise: the least ridge is the one given
    assert risk_ridge(scatter, 100 * mean, cov, 0.5, margin=1.5) == 0.5
    # no signal at all (cross term 0): no ridge helps
    assert risk_ridge(scatter, np.zeros(4), cov, 0.5, margin=1.5) == np.inf
    # a weak signal: shrunk further than the ridge given, or dropped, and
    # at the ridge returned the estimate is below 0 by the margin
    alpha = risk_ridge(scatter, 2.5 * mean, cov, 0.5, margin=1.5)
    assert alpha > 0.5
    if np.isfinite(alpha):
        change, deviation = risk_change(scatter, 2.5 * mean, cov, np.array([alpha]))
        assert change[0] + 1.5 * deviation[0] < 0
