"""Certified per-person losses of One Posterior Sample and the Gaussian
sketch (a person's rows removed or added together) against refits
without (with) the person and an independent integration of the loss."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import linalg

from sklearn_pdp import OPSRegressor, PrivacyLeakWarning, RandomProjectionRegressor
from sklearn_pdp.accounting import _gchi, _person_change
from sklearn_pdp.domain._scaler import DomainScaler
from sklearn_pdp.utils._people import group_epsilon
from tests._reference import ridge_penalty
from tests.accounting.test_gchi import quad_delta

DELTA = 1e-5


def _panel(n_people, rows, d, seed, singles=0):
    """``n_people`` persons of ``rows`` records, then ``singles`` of one."""
    rng = np.random.default_rng(seed)
    groups = np.append(np.repeat(np.arange(n_people), rows), n_people + np.arange(singles))
    X = rng.uniform(-1, 1, (groups.size, d))
    y = X @ rng.uniform(-0.5, 0.5, d) + 0.3 * rng.standard_normal(groups.size)
    return X, np.clip(y, -1, 1), groups


def _ops(random_state=0, fit_intercept=True):
    return OPSRegressor(epsilon=None, gamma=20.0, alpha=5.0, data_norm=np.sqrt(2), y_bound=1.0,
                        fit_intercept=fit_intercept, tighten_bounds=False,
                        random_state=random_state)


def _scaled(reg, X, y):
    return DomainScaler(reg.data_norm_, reg.y_bound_, reg.fit_intercept).scale(X, y)


def _ridge(Xs, ys, alpha, intercept):
    H = Xs.T @ Xs + alpha * ridge_penalty(Xs, intercept)
    return H, np.linalg.solve(H, Xs.T @ ys)


def _gaussian_pair(H_big, theta_big, H_small, theta_small, gamma):
    """(w, lam) of the two posteriors N(theta, (gamma H)^-1) directly: the
    generalised eigenproblem H_big v = (1 + w) H_small v, and the mean
    shift's coordinates H_big (theta_big - theta_small) on it."""
    ev, V = linalg.eigh(H_big, H_small)
    w = ev - 1.0
    b = V.T @ H_big @ (theta_big - theta_small)
    keep = w > 1e-10
    return w[keep], gamma * b[keep] ** 2 / w[keep] ** 2


def _check_certified(eps, w, lam, nu=1.0):
    """The integrated delta at ``eps`` is within DELTA and above it 1e-6 lower."""
    assert quad_delta(eps, w, lam, nu) <= DELTA * (1 + 1e-7)
    assert quad_delta(eps * (1 - 1e-6), w, lam, nu) > DELTA


# without an intercept under the audit marker: the same refits, the default's
# intercept (its own centring) checked in the default run
@pytest.mark.parametrize("fit_intercept", [True, pytest.param(False, marks=pytest.mark.audit)])
def test_ops_person_losses_equal_refits(fit_intercept):
    X, y, groups = _panel(40, 2, 1 if fit_intercept else 2, seed=1)
    reg = _ops(fit_intercept=fit_intercept).set_params(delta=DELTA).fit(X, y, groups=groups)
    assert reg.person_pdp_kind_ == "exact"
    Xs, ys = _scaled(reg, X, y)
    H, theta = _ridge(Xs, ys, 5.0, fit_intercept)
    for p in (0, 7, 23):
        keep = groups != p
        H_out, theta_out = _ridge(Xs[keep], ys[keep], 5.0, fit_intercept)
        w, lam = _gaussian_pair(H, theta, H_out, theta_out, reg.gamma_)
        assert w.size == 2
        _check_certified(reg.person_losses_[p], w, lam)


def test_ops_added_person_equals_refit():
    X, y, groups = _panel(41, 2, 1, seed=2)
    fitted = groups < 40
    reg = _ops().set_params(delta=DELTA).fit(X[fitted], y[fitted], groups=groups[fitted])
    added = reg.pdp_epsilon(X[~fitted], y[~fitted], groups=groups[~fitted])
    Xs, ys = _scaled(reg, X, y)
    H_in, theta_in = _ridge(Xs[fitted], ys[fitted], 5.0, True)
    H_all, theta_all = _ridge(Xs, ys, 5.0, True)
    w, lam = _gaussian_pair(H_all, theta_all, H_in, theta_in, reg.gamma_)
    _check_certified(added[0], w, lam)


def test_sketch_person_losses_equal_refit():
    X, y, groups = _panel(100, 2, 2, seed=3, singles=1800)
    reg = RandomProjectionRegressor(epsilon=8.0, delta=DELTA, data_norm=np.sqrt(2), y_bound=1.0,
                                    tighten_bounds=False, random_state=0).fit(X, y, groups=groups)
    release = reg.release_
    assert reg.person_pdp_kind_ == "exact" and not reg.mean_only_
    Xs, ys = _scaled(reg, X, y)
    Z = np.column_stack([Xs, ys])
    noise = release.noise_scale**2 * np.eye(Z.shape[1])
    for p in (0, 50):
        keep = groups != p
        tau = linalg.eigvalsh(Z.T @ Z + noise, Z[keep].T @ Z[keep] + noise) - 1.0
        tau = tau[tau > 1e-10]
        label = release.label_epsilon * abs(ys[~keep].sum())
        sketch = reg.person_losses_[p] - label
        _check_certified(sketch, tau, np.zeros(2), float(release.n_components))


@pytest.mark.parametrize("make", [
    lambda rs: _ops(rs).set_params(delta=DELTA),
    lambda rs: RandomProjectionRegressor(epsilon=8.0, delta=DELTA, data_norm=np.sqrt(2),
                                         y_bound=1.0, tighten_bounds=False, random_state=rs),
], ids=["ops", "random_projection"])
def test_person_losses_exact_and_draw_independent(make):
    X, y, groups = _panel(100, 3, 2, seed=4, singles=1700)
    first = make(0).fit(X, y, groups=groups)
    second = make(1).fit(X, y, groups=groups)
    assert first.person_pdp_kind_ == "exact" and not first.mean_only_
    assert np.all(np.isfinite(first.person_losses_))
    assert_allclose(first.person_losses_, second.person_losses_, rtol=1e-12)


def test_uncertified_series_falls_back_to_the_labelled_bound(monkeypatch):
    monkeypatch.setattr(_gchi, "_MAX_NODES", 1)
    monkeypatch.setattr(_gchi, "_MAX_TERMS", 1)
    X, y, groups = _panel(40, 2, 1, seed=5)
    reg = _ops().set_params(delta=DELTA).fit(X, y, groups=groups)
    assert reg.person_pdp_kind_ == "bound" and np.all(reg.person_pdp_kinds_ == "bound")
    assert np.all(np.isfinite(reg.person_losses_))


def _assert_group_privacy(reg, person, size):
    """The person's loss and delta are group privacy over their ``size``
    records at the fit's delta, a labelled bound."""
    assert reg.person_pdp_kinds_[person] == "bound" and reg.person_pdp_kind_ == "bound"
    bound = group_epsilon(reg.domain_stage().dp_epsilon, size, DELTA)
    assert (reg.person_losses_[person], reg.person_deltas_[person]) == bound
    assert reg.person_losses_[person] >= size * reg.dp_epsilon_


def test_near_identical_records_alone_fall_back():
    """A real adversarial person: two records 1e-4 apart give weights eight
    orders apart with little noncentrality, beyond both methods' caps. That
    person alone is charged group privacy; every other keeps their
    certified loss, checked against the refits."""
    X, y, groups = _panel(40, 2, 1, seed=5)
    X[1] = X[0] + 1e-4  # person 0's two records
    reg = _ops().set_params(delta=DELTA).fit(X, y, groups=groups)
    _assert_group_privacy(reg, 0, 2)
    assert np.all(reg.person_pdp_kinds_[1:] == "exact")
    Xs, ys = _scaled(reg, X, y)
    H, theta = _ridge(Xs, ys, 5.0, True)
    for p in (1, 23):
        keep = groups != p
        w, lam = _gaussian_pair(H, theta, *_ridge(Xs[keep], ys[keep], 5.0, True), reg.gamma_)
        _check_certified(reg.person_losses_[p], w, lam)


@pytest.mark.parametrize("make, panel", [
    (lambda: _ops().set_params(delta=DELTA), _panel(40, 2, 1, seed=5)),
    (lambda: RandomProjectionRegressor(epsilon=8.0, delta=DELTA, data_norm=np.sqrt(2),
                                       y_bound=1.0, tighten_bounds=False, random_state=0),
     _panel(100, 2, 2, seed=3, singles=1800)),
], ids=["ops", "random_projection"])
def test_one_uncertified_person_leaves_the_others_exact(monkeypatch, make, panel):
    """The certified method failing for the first person of several records
    (forced here): they are charged group privacy, the others keep exactly
    the losses of the fit where every person is certified."""
    X, y, groups = panel
    certified = make().fit(X, y, groups=groups)
    certify = _person_change.gchi_epsilon

    def first_fails(*args, **kwargs):
        eps = certify(*args, **kwargs)
        eps[0] = np.nan
        return eps

    monkeypatch.setattr(_person_change, "gchi_epsilon", first_fails)
    reg = make().fit(X, y, groups=groups)
    assert np.all(certified.person_pdp_kinds_ == "exact")
    _assert_group_privacy(reg, 0, 2)
    assert reg.person_losses_[0] > certified.person_losses_[0]
    assert np.all(reg.person_pdp_kinds_[1:] == "exact")
    np.testing.assert_array_equal(reg.person_losses_[1:], certified.person_losses_[1:])


@pytest.mark.audit
def test_ops_person_loss_monte_carlo():
    """The whole release for one person: the privacy-loss variable sampled
    from both posteriors (refits), its hockey-stick divergence at the
    certified epsilon (at a delta large enough to estimate) matches delta."""
    delta = 0.05
    X, y, groups = _panel(30, 3, 1, seed=6)
    with pytest.warns(PrivacyLeakWarning, match="delta="):
        reg = _ops().set_params(delta=delta).fit(X, y, groups=groups)
    Xs, ys = _scaled(reg, X, y)
    H, theta = _ridge(Xs, ys, 5.0, True)
    person = np.argmax(reg.person_losses_)  # a loss above 0: delta(eps) = delta
    keep = groups != person
    H_out, theta_out = _ridge(Xs[keep], ys[keep], 5.0, True)
    gamma, eps = reg.gamma_, reg.person_losses_[person]
    assert eps > 0
    rng = np.random.default_rng(0)

    def log_ratio(t):  # log N(theta, (gamma H)^-1) - log N(theta_out, (gamma H_out)^-1)
        def log_pdf(H_, mean):
            d = t - mean
            return 0.5 * np.linalg.slogdet(H_)[1] - 0.5 * gamma * np.einsum(
                "ij,jk,ik->i", d, H_, d)
        return log_pdf(H, theta) - log_pdf(H_out, theta_out)

    draws = 2_000_000
    with_ = theta + linalg.solve_triangular(
        np.linalg.cholesky(gamma * H), rng.standard_normal((2, draws)), lower=True, trans="T").T
    without = theta_out + linalg.solve_triangular(
        np.linalg.cholesky(gamma * H_out), rng.standard_normal((2, draws)), lower=True,
        trans="T").T
    L_with, L_without = log_ratio(with_), log_ratio(without)
    remove = np.mean(np.maximum(1 - np.exp(eps - L_with), 0))
    add = np.mean(np.maximum(1 - np.exp(eps + L_without), 0))
    estimate = max(remove, add)
    assert abs(estimate - delta) < 5 * np.sqrt(delta / draws) + 1e-3 * delta
