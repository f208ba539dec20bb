"""AdaOPS's per-person losses (and OPS's at alpha="auto", the same release):
a bound by composition, never below the whole release's joint loss (a
stratified Monte Carlo over the pairs of cells, every density computed
directly from refits), well below group privacy, independent of the draw
and charged by the ledger."""

import numpy as np
import pytest
from scipy.special import log_ndtr
from scipy.stats import multivariate_normal

from sklearn_pdp import AdaOPSRegressor, OPSRegressor, PrivacyLedger
from sklearn_pdp.accounting._person_change import person_epsilon, whitened_change
from sklearn_pdp.mechanisms.adaops import _people

from ..conftest import UNIT_BOUNDS
from ..linear_model.test_people import random_panel
from .._mc import Z_TOL


def _fit(X, y, groups, random_state=0, estimator=AdaOPSRegressor, **params):
    params = {"epsilon": 2.0, **UNIT_BOUNDS, "tighten_bounds": False,
              "random_state": random_state, **params}
    return estimator(**params).fit(X, y, groups=groups)


def _log_mass(lower, upper, centre, sigma):
    """log P(lower <= N(centre, sigma^2) < upper), computed directly."""
    a, b = (lower - centre) / sigma, (upper - centre) / sigma
    if a > 0:  # the upper tail, without cancellation
        a, b = -b, -a
    return log_ndtr(b) + np.log1p(-np.exp(log_ndtr(a) - log_ndtr(b)))


class _Law:
    """The whole release (conditioning cell, bound cell, means, sample) on
    the scaled rows ``Z`` (constant last), ``ys``, under the fitted
    release's public calibration: every density from a direct refit."""

    def __init__(self, release, Z, ys):
        cal, self.cal = release.cal, release.cal
        X = Z[:, :-1]
        mean = X.mean(axis=0)
        lam = np.linalg.eigvalsh((X - mean).T @ (X - mean))[0]
        self.e = lam / (1.0 + np.linalg.norm(mean)) ** 2 - cal.margin
        self.means = np.append(mean, ys.mean())
        self.noise = release.means_noise
        self.fits = {}
        for k in range(cal.lowest, int(cal.index(self.e + 12 * cal.sigma)) + 1):
            penalty = np.eye(Z.shape[1])
            penalty[-1, -1] = 0.0
            H = Z.T @ Z + cal.ridge(k) * penalty
            theta = np.linalg.solve(H, Z.T @ ys)
            log_r = np.log(1.0 + abs(theta[-1]) + np.linalg.norm(theta[:-1]))
            self.fits[k] = H, theta, log_r

    def log_pair(self, k, j):
        cal = self.cal
        out = _log_mass(*cal.edges(k), self.e, cal.sigma)
        _, sigma, _, last = cal.bound_grid(k)
        if last:
            out += _log_mass(*cal.bound_edges(k, j), self.fits[k][2] + cal.z * sigma, sigma)
        return float(out)

    def pairs(self):
        return [(k, j) for k in self.fits
                for j in range(self.cal.bound_grid(k)[3] + 1)]

    def sample(self, k, j, size, rng):
        H, theta, _ = self.fits[k]
        cov = np.linalg.inv(self.cal.gamma(k, j) * H)
        return (rng.multivariate_normal(theta, cov, size),
                self.means + self.noise * rng.standard_normal((size, self.means.size)))

    def log_density(self, k, j, draws):
        H, theta, _ = self.fits[k]
        coef, means = draws
        cov = np.linalg.inv(self.cal.gamma(k, j) * H)
        z = (means - self.means) / self.noise
        return multivariate_normal(theta, cov).logpdf(coef) - 0.5 * np.sum(z * z, axis=1)


def _hockey_stick(P, Q, eps, size, rng):
    """Stratified estimate and standard error of delta_PQ(eps) for the
    whole release: every pair of cells of P-mass above 1e-12 (the rest
    counted as 1), ``size`` draws each."""
    estimate, variance, rest = 0.0, 0.0, 1.0
    for k, j in P.pairs():
        log_p = P.log_pair(k, j)
        if log_p < np.log(1e-12) or k not in Q.fits:
            continue
        draws = P.sample(k, j, size, rng)
        loss = (log_p - Q.log_pair(k, j) + P.log_density(k, j, draws)
                - Q.log_density(k, j, draws))
        terms = -np.expm1(np.minimum(eps - loss, 0.0))
        p = np.exp(log_p)
        estimate += p * terms.mean()
        variance += p**2 * terms.var(ddof=1) / size
        rest -= p
    return estimate + max(rest, 0.0), np.sqrt(variance)


@pytest.mark.parametrize("size, delta", [
    (2000, 1e-3), pytest.param(200_000, 1e-4, marks=pytest.mark.audit)])
def test_person_losses_bound_the_joint_loss(size, delta):
    """Removing a person with several rows, or adding them to the data
    without them: the whole release's hockey-stick divergence at their
    bound, in both directions, is at most delta."""
    X, y, groups = random_panel(n_people=150, seed=3)
    est = _fit(X, y, groups, delta=delta)
    assert est.person_pdp_kind_ == "bound"
    Z, ys = est.domain_scaler().scale(X, y)
    sizes = np.bincount(np.searchsorted(est.person_ids_, groups))
    rng = np.random.default_rng(0)
    for k in np.flatnonzero(sizes >= 4)[:2]:
        keep = groups != est.person_ids_[k]
        # removed from the fit, and added to a fit without them (its own calibration)
        out = _fit(X[keep], y[keep], groups[keep], delta=delta)
        added = out.pdp_epsilon(X[~keep], y[~keep], groups=groups[~keep])
        assert added.shape == (1,) and np.isfinite(added[0])
        for release, eps in ((est.release_, est.person_losses_[k]), (out.release_, added[0])):
            full, without = _Law(release, Z, ys), _Law(release, Z[keep], ys[keep])
            for P, Q in ((full, without), (without, full)):
                estimate, se = _hockey_stick(P, Q, eps, size, rng)
                assert estimate <= delta + Z_TOL * se, (k, estimate, se)


def _certified(delta, w, lam, nu):
    """The certified generalised chi-square loss, in place of Chernoff's."""
    b = np.sqrt(lam) * np.where(w > 0, w, 0.0)  # person_epsilon's lam = b^2 / w^2
    return person_epsilon(delta, w, b, 1.0)


def test_bound_against_certified_pairs(monkeypatch):
    """Against every pair of cells of each person's window evaluated by the
    certified generalised chi-square (the largest, as the reverted brute
    force took it): within a ridge the certified loss grows with gamma, so
    the bound with certified candidates is that maximum, and Chernoff's
    bound is above it by at most a third."""
    X, y, groups = random_panel(n_people=80, seed=5)
    est = _fit(X, y, groups)
    release = est.release_
    Z, ys = est.domain_scaler().scale(X, y)
    codes = np.searchsorted(est.person_ids_, groups)
    gram = np.zeros((est.person_ids_.size,) + (Z.shape[1],) * 2)
    np.add.at(gram, codes, Z[:, :, None] * Z[:, None, :])
    cross = np.zeros((est.person_ids_.size, Z.shape[1]))
    np.add.at(cross, codes, Z * ys[:, None])
    sizes = np.bincount(codes)
    several = np.flatnonzero(sizes > 1)[:6]
    gram, cross, sizes = gram[several], cross[several], sizes[several]
    bound = release.person_losses(gram, cross, sizes).losses
    monkeypatch.setattr(_people, "chernoff_epsilon", _certified)
    certified = release.person_losses(gram, cross, sizes).losses
    assert np.all(bound >= certified) and np.all(bound <= 4.0 / 3.0 * certified)
    # every gamma of a cell's bound grid, on the cells k >= 0 (one ridge)
    ridge = release._cell_fit(max(release.cell, 0))[0]
    w, b = whitened_change(ridge._whitener, gram, cross - gram @ ridge.coef)
    k = max(release.cell, 0)
    gammas = np.unique([release.cal.gamma(k, j) for j in range(release.cal.bound_grid(k)[3] + 1)])
    gammas = gammas[np.linspace(0, gammas.size - 1, 5).astype(int)]
    losses = np.array([person_epsilon(release.delta / 2, w, b, g) for g in gammas])
    assert np.all(np.diff(losses, axis=0) >= -1e-9 * losses[1:])


def test_one_row_people_equal_row_losses():
    """A person of one row loses that row's loss (the person path takes
    the row's exact mixture loss)."""
    X, y, groups = random_panel(n_people=150, seed=4)
    est = _fit(X, y, groups)
    codes = np.searchsorted(est.person_ids_, groups)
    sizes = np.bincount(codes)
    single = sizes[codes] == 1
    assert single.sum() > 10
    np.testing.assert_array_equal(est.person_losses_[codes[single]], est.pdp_losses_[single])


def test_far_below_group_privacy():
    """People with several rows: bounds far below group privacy's m times
    the guarantee (its delta aside), finite for everyone."""
    X, y, groups = random_panel(n_people=150, seed=6)
    est = _fit(X, y, groups)
    sizes = np.bincount(np.searchsorted(est.person_ids_, groups))
    several = sizes > 1
    assert np.all(np.isfinite(est.person_losses_))
    assert np.all(est.person_losses_[several] < 0.5 * sizes[several] * est.dp_epsilon_)
    assert np.median(est.person_losses_[sizes >= 4]) < est.dp_epsilon_


@pytest.mark.parametrize("estimator", [AdaOPSRegressor, OPSRegressor])
def test_draw_independent_and_charged(estimator):
    """Another random_state gives the same losses; the ledger charges each
    person their loss; OPS at its default alpha="auto" releases through
    AdaOPS's cells and has the same bounds."""
    X, y, groups = random_panel(n_people=100, seed=7)
    first = _fit(X, y, groups, estimator=estimator)
    second = _fit(X, y, groups, random_state=1, estimator=estimator)
    assert first.person_pdp_kind_ == "bound"
    np.testing.assert_array_equal(first.person_losses_, second.person_losses_)
    with PrivacyLedger() as ledger:
        charged = ledger.charges(ledger.record(first, groups), first.person_ids_)
    np.testing.assert_array_equal(charged[0], first.person_losses_)
    if estimator is OPSRegressor:
        ada = _fit(X, y, groups)
        np.testing.assert_allclose(first.person_losses_, ada.person_losses_, rtol=1e-12)
