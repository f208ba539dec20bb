"""Output perturbation's per-person losses (a person's rows removed or added
together) against refits without (with) the person: the public ridge with
Gaussian or norm-exponential noise (exact), the private ridge
(``alpha="auto"``: exact composition of the eigenvalue, the cells' solutions
and the means) and the ball (a bound, never below the exact loss)."""

import numpy as np
import pytest

from sklearn_pdp import OutputPerturbationRegressor, PrivacyLedger
from sklearn_pdp.utils._eigen import eigen_max_change

from ..conftest import UNIT_BOUNDS, regression_data
from ..linear_model.test_people import adversarial_panel, gaussian_epsilon_brute, random_panel
from ..linear_model.test_people_audit import DELTA as AUDIT_DELTA, _check

DELTA = 1e-6


def _fit(X, y, groups, random_state=0, **params):
    params = {"epsilon": 4.0, "delta": DELTA, "alpha": 5.0, **UNIT_BOUNDS,
              "tighten_bounds": False, "random_state": random_state, **params}
    return OutputPerturbationRegressor(**params).fit(X, y, groups=groups)


def _solution(Z, ys, alpha, intercept, radius=None):
    """The ridge solution of the scaled rows, or with ``radius`` the ball's
    (its KKT multiplier by bisection): computed directly."""
    P = np.eye(Z.shape[1])
    if intercept:
        P[-1, -1] = 0.0
    H, b = Z.T @ Z + alpha * P, Z.T @ ys
    theta = np.linalg.solve(H, b)
    if radius is None or np.linalg.norm(theta) <= radius:
        return theta
    low, high = 0.0, np.linalg.norm(b) / radius
    for _ in range(200):
        nu = 0.5 * (low + high)
        inside = np.linalg.norm(np.linalg.solve(H + nu * np.eye(H.shape[0]), b)) <= radius
        low, high = (low, nu) if inside else (nu, high)
    return np.linalg.solve(H + high * np.eye(H.shape[0]), b)


def _loss(est, shift):
    """The noise's loss at a shift of the centre."""
    if est.noise == "laplace":
        return shift / est.noise_scale_
    return gaussian_epsilon_brute(shift / est.noise_scale_, est.delta)


def _scaled(est, X, y):
    return est.domain_scaler().scale(X, y)


def _assert_exact(got, exact):
    assert got >= exact * (1 - 1e-9) - 1e-12, (got, exact)
    assert got <= exact * (1 + 1e-6) + 1e-12, (got, exact)


@pytest.mark.parametrize("noise, fit_intercept", [
    ("gaussian", True), ("gaussian", False), ("laplace", True)])
def test_public_ridge_person_losses_equal_refits(noise, fit_intercept):
    X, y, groups = random_panel(n_people=60, seed=11)
    est = _fit(X, y, groups, noise=noise, fit_intercept=fit_intercept)
    assert est.person_pdp_kind_ == "exact"
    Z, ys = _scaled(est, X, y)
    theta = _solution(Z, ys, est.alpha_, fit_intercept)
    for k, key in enumerate(est.person_ids_):
        keep = groups != key
        shift = np.linalg.norm(theta - _solution(Z[keep], ys[keep], est.alpha_, fit_intercept))
        _assert_exact(est.person_losses_[k], _loss(est, shift))
    # a person added: the solution with their rows
    out = np.isin(groups, est.person_ids_[:6])
    small = _fit(X[~out], y[~out], groups[~out], noise=noise, fit_intercept=fit_intercept)
    added = small.pdp_epsilon(X[out], y[out], groups=groups[out])
    inner = _solution(Z[~out], ys[~out], small.alpha_, fit_intercept)
    for k, key in enumerate(np.unique(groups[out])):
        rows = ~out | (groups == key)
        shift = np.linalg.norm(_solution(Z[rows], ys[rows], small.alpha_, fit_intercept) - inner)
        _assert_exact(added[k], _loss(small, shift))


def _auto_panel():
    """People of 1 to 6 rows with a clear slope: the private ridge keeps it."""
    rng = np.random.default_rng(12)
    groups = rng.permutation(np.repeat(np.arange(300), rng.integers(1, 7, 300)))
    X, y = regression_data(groups.size, d=2, seed=12, coef=np.array([1.0, -0.8]), noise=0.1)
    return X, y, groups


def _auto_brute(est, Z, ys, rows, add):
    """The private ridge's loss of the rows ``rows`` removed from (added to,
    ``add``: to the other rows) the scaled data: the exact changes of the
    centred scatter's smallest eigenvalue, of the ridge solution at every
    cell the released value reaches under either data set, and of the
    means, composed as the release composes them."""
    adaptive = est.release_.adaptive
    big, small = (slice(None), ~rows)

    def statistics(mask):
        x, zy = Z[mask, :-1], np.column_stack([Z[mask, :-1], ys[mask]])
        centred = x - x.mean(axis=0)
        return np.linalg.eigvalsh(centred.T @ centred)[0], zy.mean(axis=0)

    (lam_big, mean_big), (lam_small, mean_small) = statistics(big), statistics(small)
    fitted = lam_small if add else lam_big  # the fitted data set's
    change = abs(lam_big - lam_small)
    reach = adaptive.reach + max(change - eigen_max_change(est.release_.n_samples + 1, True), 0)
    means = np.linalg.norm(mean_big - mean_small)
    second = 0.0
    for cell in range(adaptive.cell(fitted - reach), adaptive.cell(fitted + reach) + 1):
        alpha = adaptive.alpha(cell)
        shift = np.linalg.norm(_solution(Z, ys, alpha, True)
                               - _solution(Z[small], ys[small], alpha, True))
        second = max(second, float(adaptive.stage_ratio(cell, shift, means)))
    ratio = np.hypot(change / adaptive.eigen_noise, second)
    return gaussian_epsilon_brute(ratio, adaptive.delta_gauss)


def test_private_ridge_person_losses_equal_refits():
    X, y, groups = _auto_panel()
    est = _fit(X, y, groups, alpha="auto")
    assert est.person_pdp_kind_ == "exact" and np.isfinite(est.signal_ridge_)
    Z, ys = _scaled(est, X, y)
    sizes = np.bincount(np.searchsorted(est.person_ids_, groups))
    for k in np.flatnonzero(sizes > 1)[:25]:
        _assert_exact(est.person_losses_[k],
                      _auto_brute(est, Z, ys, groups == est.person_ids_[k], add=False))
    out = np.isin(groups, est.person_ids_[:4])
    small = _fit(X[~out], y[~out], groups[~out], alpha="auto")
    added = small.pdp_epsilon(X[out], y[out], groups=groups[out])
    for k, key in enumerate(np.unique(groups[out])):
        rows = ~out | (groups == key)
        _assert_exact(added[k], _auto_brute(small, Z[rows], ys[rows], groups[rows] == key,
                                            add=True))


@pytest.mark.parametrize("params", [{}, {"alpha": "auto"}, {"noise": "laplace"}],
                         ids=["public", "auto", "laplace"])
def test_one_row_people_equal_row_losses(params):
    """A person of one row, through the person path, loses that row's loss,
    removed or added."""
    X, y, groups = _auto_panel()
    est = _fit(X[50:], y[50:], groups[50:], **params)
    for rows, add, expected in ((slice(50, 90), False, est.pdp_losses_[:40]),
                                (slice(0, 50), True, est.pdp_epsilon(X[:50], y[:50]))):
        Z, ys = _scaled(est, X[rows], y[rows])
        got = est.release_.person_losses(Z[:, :, None] * Z[:, None, :], Z * ys[:, None],
                                         np.ones(Z.shape[0], dtype=int), add=add).losses
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)


def test_ball_person_losses_are_bounds():
    """With an active ball constraint a person's loss is a bound, never below
    the loss at the exact shift of the constrained solutions; with a ball
    that no solution reaches, exact."""
    X, y, groups = random_panel(n_people=50, seed=13)
    for radius, active in ((0.25, True), (50.0, False)):
        est = _fit(X, y, groups, alpha=2.0, radius=radius)
        assert est.person_pdp_kind_ == "bound" and est.release_.inside != active
        Z, ys = _scaled(est, X, y)
        theta = _solution(Z, ys, est.alpha_, True, radius)
        for k, key in enumerate(est.person_ids_):
            keep = groups != key
            exact = _loss(est, np.linalg.norm(
                theta - _solution(Z[keep], ys[keep], est.alpha_, True, radius)))
            if active:
                assert est.person_losses_[k] >= exact * (1 - 1e-9) - 1e-12
            else:
                _assert_exact(est.person_losses_[k], exact)
    assert np.all(np.isfinite(est.person_losses_))


@pytest.mark.parametrize("params", [{}, {"alpha": "auto"}], ids=["public", "auto"])
def test_person_losses_draw_independent_and_charged(params):
    X, y, groups = _auto_panel()
    first = _fit(X, y, groups, **params)
    second = _fit(X, y, groups, random_state=1, **params)
    np.testing.assert_array_equal(first.person_losses_, second.person_losses_)
    with PrivacyLedger() as ledger:
        charged = ledger.charges(ledger.record(first, groups), first.person_ids_)
    np.testing.assert_array_equal(charged[0], first.person_losses_)
    np.testing.assert_array_equal(charged[1], DELTA)


@pytest.mark.parametrize("params", [{}, {"alpha": "auto"}], ids=["public", "auto"])
def test_removing_every_row_is_infinite(params):
    """With an intercept, a person holding every row leaves no data: an
    infinite loss, not an error."""
    X, y, groups = _auto_panel()
    est = _fit(X, y, groups, **params)
    Z, ys = _scaled(est, X, y)
    got = est.release_.person_losses((Z.T @ Z)[None], (Z.T @ ys)[None], np.array([len(y)]))
    assert got.losses.tolist() == [np.inf] and got.kinds.tolist() == [est.release_.kind]


@pytest.mark.audit
def test_audit_output_perturbation_person_loss():
    """The release (the ridge solution plus Gaussian noise) on the panel and
    without the person with the largest exact joint loss among those with
    several records (four identical extreme ones against the rest): the
    hockey-stick divergence at their loss is the delta."""
    X, y, groups = adversarial_panel()
    est = _fit(X, y, groups, delta=AUDIT_DELTA, alpha=1.0)
    sizes = np.bincount(np.searchsorted(est.person_ids_, groups))
    k = np.flatnonzero(sizes > 2)[np.argmax(est.person_losses_[sizes > 2])]
    person = groups == est.person_ids_[k]
    Z, ys = _scaled(est, X, y)
    full = _solution(Z, ys, est.alpha_, True)
    without = _solution(Z[~person], ys[~person], est.alpha_, True)
    sigma = est.noise_scale_
    rng = np.random.default_rng(7)

    def losses():
        def loss(noisy):  # log dP/dQ, P: without the person, Q: with them
            return (np.sum((noisy - full) ** 2, axis=1)
                    - np.sum((noisy - without) ** 2, axis=1)) / (2 * sigma**2)

        def draws(center):
            return center + sigma * rng.standard_normal((1_000_000, center.size))

        return loss(draws(without)), loss(draws(full))

    assert est.person_losses_[k] > 0
    _check(est.person_losses_[k], losses)
