"""Output perturbation with a radius: the ball-constrained solution, the
error bound of its computed value, and the rows' bounds against refits."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from sklearn_pdp import OutputPerturbationRegressor
from sklearn_pdp.mechanisms.output_perturbation._calibration import ball_ridge, ball_ridge_error

from .test_output_perturbation import _brute_sensitivities, _params, _ridge, _scaled

def test_ball_ridge_satisfies_the_kkt_conditions(make_unbounded_data):
    X, y = make_unbounded_data(30, d=4)
    XtX, Xty = X.T @ X, X.T @ y
    alpha, unconstrained = 0.7, np.linalg.solve(X.T @ X + 0.7 * np.eye(4), X.T @ y)
    radius = 0.4 * np.linalg.norm(unconstrained)
    theta = ball_ridge(XtX + alpha * np.eye(4), Xty, radius)
    # active constraint: on the sphere, with the objective's gradient equal to
    # -nu theta for some nu > 0
    assert np.linalg.norm(theta) == pytest.approx(radius, rel=1e-12)
    grad = XtX @ theta + alpha * theta - Xty
    nu = -(grad @ theta) / (theta @ theta)
    assert nu > 0
    assert_allclose(grad, -nu * theta, atol=1e-9 * np.linalg.norm(Xty))
    assert_allclose(theta, _ridge(X, y, alpha, radius), atol=1e-6)
    # inactive constraint: the ridge solution itself
    assert_allclose(ball_ridge(XtX + alpha * np.eye(4), Xty, 2 * radius / 0.4), unconstrained)


@pytest.mark.parametrize("alpha", [1e-3, 0.7])
def test_ball_ridge_error_bounds_the_distance_to_the_solution(alpha, make_unbounded_data):
    X, y = make_unbounded_data(30, d=4)
    H, Xty = X.T @ X + alpha * np.eye(4), X.T @ y
    lowest = np.linalg.eigvalsh(H)[0]
    rng = np.random.default_rng(1)
    for share in (0.4, 2.0):  # the constraint active, then inactive
        radius = share * np.linalg.norm(np.linalg.solve(H, Xty))
        best = ball_ridge(H, Xty, radius)
        own = ball_ridge_error(H, Xty, best, radius, lowest)
        assert own < 1e-12 * radius
        for size in (1e-9, 1e-6, 1e-3):
            step = size * radius * rng.standard_normal(4)
            moved = best + step
            if share < 1:  # a point on the sphere, as the root search returns
                moved *= radius / np.linalg.norm(moved)
            distance = np.linalg.norm(moved - best)
            error = ball_ridge_error(H, Xty, moved, radius, lowest)
            assert distance - own <= error <= 2 * radius
            # and not vacuous: the KKT residual is at most (||H|| + nu) times
            # the distance, nu <= ||H|| + ||X^T y|| / radius, over lambda_min
            scale = 2 * np.linalg.norm(H, 2) + np.linalg.norm(Xty) / radius
            assert error <= scale / lowest * (distance + own)


def _ball_bound(Xs, ys, alpha, radius, center_error=0.0):
    """The sensitivity bound of the constrained solution, from its
    definition (doc/publish.rst), by dense linear algebra: the smallest of
    |r| (||H^{-1} x|| + sqrt(mu / lambda_min(H))) / (2 (1 - mu)) (in-sample,
    r against the constrained solution), ||x|| (R ||x|| + |y|) / alpha and 2R.

    Also how far the package's value may lie from it: the reference centre
    (SLSQP, accurate to about the square root of its objective's tolerance)
    and the package's ``center_error`` move ``|r|`` by ``||x||`` times their
    distances to the exact centre (:func:`ball_ridge_error` bounds the
    reference's), and the dense algebra is accurate to ``d cond(H) eps``.
    """
    H = Xs.T @ Xs + alpha * np.eye(Xs.shape[1])
    inv = np.linalg.inv(H)
    mu = np.einsum("ij,jk,ik->i", Xs, inv, Xs)
    theta = _ridge(Xs, ys, alpha, radius)
    lowest = np.linalg.eigvalsh(H)[0]
    r = ys - Xs @ theta
    spread = np.linalg.norm(Xs @ inv, axis=1) + np.sqrt(mu / lowest)
    norms = np.linalg.norm(Xs, axis=1)
    strong = norms * (radius * norms + np.abs(ys)) / alpha
    bound = np.minimum.reduce([np.abs(r) * spread / (2 * (1 - mu)), strong,
                               np.full(len(ys), 2 * radius)])
    error = ball_ridge_error(H, Xs.T @ ys, theta, radius, lowest) + center_error
    rounding = Xs.shape[1] * np.linalg.cond(H) * np.finfo(float).eps
    return bound, norms * error * spread / (2 * (1 - mu)) + rounding * bound


def _brute_error(Xs, ys, alpha, radius):
    """Bound on the error of each of :func:`_brute_sensitivities`' values
    (no intercept): the two refits' distances to their exact solutions
    (:func:`ball_ridge_error`)."""
    def error(keep):
        H = Xs[keep].T @ Xs[keep] + alpha * np.eye(Xs.shape[1])
        return ball_ridge_error(H, Xs[keep].T @ ys[keep], _ridge(Xs[keep], ys[keep], alpha,
                                                                 radius),
                                radius, np.linalg.eigvalsh(H)[0])
    full = error(np.ones(len(ys), dtype=bool))
    return full + np.array([error(keep) for keep in ~np.eye(len(ys), dtype=bool)])


def test_constrained_losses_exact_where_inside_and_bounds_elsewhere(make_unbounded_data):
    X, y = make_unbounded_data(40)
    X[0], y[0] = [2.9, 0.3, 0.2], -4.0  # an outlier that pulls the fit towards 0
    params = _params(alpha=0.5, noise="laplace", fit_intercept=False)
    Xs, ys = _scaled(X, y, OutputPerturbationRegressor(**params).fit(X, y))
    norm = np.linalg.norm(_ridge(Xs, ys, 0.5))
    # inside the ball for the data set, outside for the neighbour without row 0
    radius = norm * 1.05
    assert np.linalg.norm(_ridge(Xs[1:], ys[1:], 0.5)) > radius
    reg = OutputPerturbationRegressor(**params, radius=radius).fit(X, y)
    reported = reg.pdp_losses_ * reg.noise_scale_
    sens = _brute_sensitivities(Xs, ys, 0.5, radius)
    bound, _ = _ball_bound(Xs, ys, 0.5, radius)
    exact = ~np.isclose(reported, bound, rtol=1e-7)
    assert 0 < exact.sum() < len(y)  # both cases occur
    assert not exact[0]
    assert_allclose(reported[exact], sens[exact], rtol=1e-7)
    assert np.all(reported[~exact] >= (sens - _brute_error(Xs, ys, 0.5, radius))[~exact])
    # constraint active on the data set itself: every row gets the bound,
    # which holds against refits without each row
    small = OutputPerturbationRegressor(**params, radius=0.5 * norm).fit(X, y)
    reported = small.pdp_losses_ * small.noise_scale_
    sens = _brute_sensitivities(Xs, ys, 0.5, 0.5 * norm)
    bound, slack = _ball_bound(Xs, ys, 0.5, 0.5 * norm, small.release_.center_error)
    assert np.all(np.abs(reported - bound) <= slack)
    # valid: never below the refits' sensitivities, to their own accuracy
    assert np.all(reported >= sens - _brute_error(Xs, ys, 0.5, 0.5 * norm))
    # the variational bound is the smallest for most rows here
    strong = np.linalg.norm(Xs, axis=1) * (0.5 * norm * np.linalg.norm(Xs, axis=1)
                                            + np.abs(ys)) / 0.5
    assert np.mean(bound < np.minimum(strong, norm)) > 0.5
