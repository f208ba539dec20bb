"""Certified per-person losses of objective perturbation (a person's rows
removed or added together) against refits without (with) the person: the
two Gaussian laws of the release, N(theta, sigma^2 H^-2), and their
hockey-stick divergence integrated independently (one variable by
quadrature, the other in closed form)."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import integrate
from scipy.special import ndtr
from scipy.stats import multivariate_normal

from sklearn_pdp import ObjPertRegressor
from sklearn_pdp.accounting import _gchi, gaussian_epsilon
from sklearn_pdp.accounting._objpert_person import objpert_person_epsilon
from tests._reference import ridge_penalty

from .._mc import Z_TOL, hockey_stick_mc, sampled_losses

DELTA = 1e-5
# the reported epsilon is that of a delta a few 1e-4 below (the inversion's
# bracket): within this relative margin of the integrated one
EPS_RTOL = 1e-3


def _panel(n_people, rows, d, seed, singles=0):
    """``n_people`` persons of ``rows`` records, then ``singles`` of one."""
    rng = np.random.default_rng(seed)
    groups = np.append(np.repeat(np.arange(n_people), rows), n_people + np.arange(singles))
    X = rng.uniform(-1, 1, (groups.size, d)) / np.sqrt(d)
    y = X @ rng.uniform(-0.5, 0.5, d) + 0.3 * rng.standard_normal(groups.size)
    return X, np.clip(y, -1, 1), groups


def _objpert(fit_intercept=True, random_state=0, delta=DELTA):
    return ObjPertRegressor(epsilon=None, sigma=2.0, alpha=4.0, delta=delta, data_norm=1.0,
                            y_bound=1.0, fit_intercept=fit_intercept, tighten_bounds=False,
                            random_state=random_state)


def _law(reg, Xs, ys, keep):
    """The release's law on the rows ``keep``: mean and covariance."""
    H = Xs[keep].T @ Xs[keep] + reg.alpha_ * ridge_penalty(Xs, reg.fit_intercept)
    inverse = np.linalg.inv(H)
    return inverse @ Xs[keep].T @ ys[keep], reg.noise_scale_**2 * inverse @ inverse


def _log_ratio(P, Q):
    """(A, b, c) of log dP/dQ = t^T A t + b^T t + c for two Gaussians."""
    (mp, Sp), (mq, Sq) = P, Q
    Ip, Iq = np.linalg.inv(Sp), np.linalg.inv(Sq)
    c = (-0.5 * (mp @ Ip @ mp - mq @ Iq @ mq)
         - 0.5 * (np.linalg.slogdet(Sp)[1] - np.linalg.slogdet(Sq)[1]))
    return -0.5 * (Ip - Iq), Ip @ mp - Iq @ mq, c


def _probability(law, form, t, above):
    """P(L > t) (``above``) or P(L < t) for the release's ``law`` and the
    log-ratio ``form``: in the eigenbasis of the quadratic part (two
    variables), closed form in the one with the larger weight, quadrature
    over the other."""
    (m, S), (A, b, c) = law, form
    R = np.linalg.cholesky(S)
    k, V = np.linalg.eigh(R.T @ A @ R)
    beta = V.T @ (2 * R.T @ A @ m + R.T @ b)
    gamma = m @ A @ m + b @ m + c - t
    j = int(np.argmax(np.abs(k)))
    o = 1 - j

    def inner(u):  # P(k_j v^2 + beta_j v + C > 0), v ~ N(0, 1)
        C = k[o] * u * u + beta[o] * u + gamma
        if not above:
            qa, qb, qc = -k[j], -beta[j], -C
        else:
            qa, qb, qc = k[j], beta[j], C
        disc = qb * qb - 4 * qa * qc
        if disc <= 0:
            return 1.0 if qa > 0 else 0.0
        lo, hi = sorted([(-qb - np.sqrt(disc)) / (2 * qa), (-qb + np.sqrt(disc)) / (2 * qa)])
        if qa > 0:
            return ndtr(lo) + ndtr(-hi)
        return ndtr(hi) - ndtr(lo) if lo < 0 else ndtr(-lo) - ndtr(-hi)

    # kinks where the discriminant vanishes: a quadratic in u
    coeffs = (beta[j] ** 2 - 4 * k[j] * np.array([k[o], beta[o], gamma]))
    kinks = [r.real for r in np.roots(coeffs) if abs(r.imag) < 1e-12 and abs(r.real) < 40]
    points = sorted(set([-40.0, 40.0] + kinks))
    total = 0.0
    for a, z in zip(points[:-1], points[1:]):
        total += integrate.quad(lambda u: inner(u) * np.exp(-0.5 * u * u) / np.sqrt(2 * np.pi),
                                a, z, epsabs=1e-16, epsrel=1e-11, limit=400)[0]
    return total


def _reference_delta(eps, P, Q):
    """max(delta_PQ, delta_QP) at ``eps``, P the law without the person."""
    form = _log_ratio(P, Q)
    pq = _probability(P, form, eps, True) - np.exp(eps) * _probability(Q, form, eps, True)
    qp = _probability(Q, form, -eps, False) - np.exp(eps) * _probability(P, form, -eps, False)
    return max(pq, qp)


def _check(eps, P, Q, tight, delta=DELTA):
    """The reported loss holds (the integrated delta at most delta) and,
    where ``tight``, is tight to the bracket (EPS_RTOL lower, delta is
    exceeded)."""
    assert _reference_delta(eps, P, Q) <= delta * (1 + 1e-6)
    if tight:
        assert _reference_delta(eps * (1 - EPS_RTOL), P, Q) > delta


def _scaled(reg, X, y):
    return reg.domain_scaler().scale(X, y)


def _person_epsilon(reg, Xs, ys, codes, add=False):
    """Each person's certified loss and whether their law was smoothed."""
    release = reg.release_
    gram = np.zeros((codes.max() + 1,) + 2 * Xs.shape[1:])
    cross = np.zeros((codes.max() + 1, Xs.shape[1]))
    np.add.at(gram, codes, Xs[:, :, None] * Xs[:, None, :])
    np.add.at(cross, codes, Xs * ys[:, None])
    return objpert_person_epsilon(reg.delta, release.ridge, gram, cross, release.noise_scale,
                                  add)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_person_losses_equal_refits(fit_intercept):
    X, y, groups = _panel(150, 3, 1 if fit_intercept else 2, seed=1)
    reg = _objpert(fit_intercept).fit(X, y, groups=groups)
    Xs, ys = _scaled(reg, X, y)
    eps, smoothed = _person_epsilon(reg, Xs, ys, groups)
    assert_allclose(reg.person_losses_, eps, rtol=1e-12)
    # a two-dimensional release: little noncentrality on two weights needs
    # the normal part (a looser bound, labelled)
    assert reg.person_pdp_kind_ == ("bound" if smoothed.any() else "exact")
    everyone = np.ones(groups.size, dtype=bool)
    people = [*np.flatnonzero(~smoothed)[[0, -1]], *np.flatnonzero(smoothed)[:1]]
    for p in people:
        keep = groups != p
        _check(eps[p], _law(reg, Xs, ys, keep), _law(reg, Xs, ys, everyone), not smoothed[p])


def test_added_person_equals_refit():
    X, y, groups = _panel(151, 2, 1, seed=2)
    fitted = groups < 150
    reg = _objpert().fit(X[fitted], y[fitted], groups=groups[fitted])
    added = reg.pdp_epsilon(X[~fitted], y[~fitted], groups=groups[~fitted])
    Xs, ys = _scaled(reg, X, y)
    smoothed = _person_epsilon(reg, Xs[~fitted], ys[~fitted], np.zeros(2, int), add=True)[1]
    _check(added[0], _law(reg, Xs, ys, fitted), _law(reg, Xs, ys, np.ones(y.size, bool)),
           not smoothed[0])


@pytest.mark.parametrize("add", [False, True])
def test_one_row_persons_equal_the_row_losses(add):
    """m = 1 through the person path: the rows' own exact losses (their
    quadrature's search aims below delta, the inversion's bracket is wider:
    above them by less than EPS_RTOL), both directions; a law smoothed by a
    normal part gives a looser upper bound."""
    X, y, _ = _panel(0, 1, 2, seed=3, singles=100)
    reg = _objpert().fit(X, y)
    Xs, ys = _scaled(reg, X, y)
    got, smoothed = _person_epsilon(reg, Xs, ys, np.arange(y.size), add)
    rows = reg.pdp_epsilon(X, y) if add else reg.pdp_losses_
    assert np.all(np.isfinite(got)) and 0 < smoothed.sum() < y.size
    assert np.all(got >= rows * (1 - 1e-6))
    assert_allclose(got[~smoothed], rows[~smoothed], rtol=EPS_RTOL)


def test_default_person_losses_exact_and_draw_independent():
    """The default estimator (a budget, alpha="auto") on a panel: every
    person certified, far below group privacy, the same for another draw."""
    X, y, groups = _panel(150, 3, 3, seed=4)
    make = lambda rs: ObjPertRegressor(data_norm=1.0, y_bound=1.0, tighten_bounds=False,  # noqa: E731
                                       random_state=rs)
    first, second = make(0).fit(X, y, groups=groups), make(1).fit(X, y, groups=groups)
    assert first.person_pdp_kind_ == "exact" and not first.mean_only_
    assert np.all(np.isfinite(first.person_losses_))
    assert np.all(first.person_losses_ <= first.dp_epsilon_)
    assert_allclose(first.person_losses_, second.person_losses_, rtol=1e-12)


@pytest.mark.audit  # the private ridge's calibrations: half a minute
@pytest.mark.filterwarnings("ignore:ObjPertRegressor released zero slopes:UserWarning")
def test_private_ridge_person_losses_hold_and_are_draw_independent():
    """The default at this size is the private ridge: a person's loss is
    the Gaussian stage's exact loss (their change of the centred scatter's
    eigenvalue and of the means, computed here from the rows) plus objective
    perturbation's over the cells; at the released cell the rest holds
    for the refits' laws at delta / 2. Another draw, the same losses."""
    X, y, groups = _panel(12, 3, 1, seed=8, singles=1200)
    make = lambda rs: ObjPertRegressor(delta=DELTA, data_norm=1.0, y_bound=1.0,  # noqa: E731
                                       tighten_bounds=False, random_state=rs)
    reg, other = make(0).fit(X, y, groups=groups), make(1).fit(X, y, groups=groups)
    assert type(reg.release_).__name__ == "PrivateObjPertRelease"
    # not group privacy (three records: several times the guarantee)
    assert np.all(reg.person_losses_ < reg.dp_epsilon_)
    assert_allclose(reg.person_losses_, other.person_losses_, rtol=1e-12)
    Xs, ys = _scaled(reg, X, y)
    everyone = np.ones(y.size, dtype=bool)

    def stats(keep):
        x, z = Xs[keep, 0], np.column_stack([Xs[keep, 0], ys[keep]])
        return np.sum((x - x.mean()) ** 2), z.mean(axis=0)

    full = stats(everyone)
    for p in range(0, 12, 5):
        keep = groups != p
        without = stats(keep)
        ratio = np.hypot((full[0] - without[0]) / reg.eigen_noise_,
                         np.linalg.norm(full[1] - without[1]) / reg.means_noise_)
        rest = reg.person_losses_[p] - gaussian_epsilon(DELTA / 4, ratio)
        assert rest > 0
        assert _reference_delta(rest, _law(reg, Xs, ys, keep),
                                _law(reg, Xs, ys, everyone)) <= DELTA / 2 * (1 + 1e-6)


def test_uncertified_inversion_falls_back_to_the_labelled_bound(monkeypatch):
    X, y, groups = _panel(100, 3, 3, seed=5)
    exact = _objpert().fit(X, y, groups=groups)
    monkeypatch.setattr(_gchi, "_MAX_NODES", 1)
    reg = _objpert().fit(X, y, groups=groups)
    assert reg.person_pdp_kind_ == "bound"
    assert np.all(np.isfinite(reg.person_losses_))
    assert np.all(reg.person_losses_ > exact.person_losses_)


@pytest.mark.audit
def test_audit_person_loss_monte_carlo():
    """The whole release for one person: the privacy-loss variable sampled
    from both laws (refits with and without their records), its
    hockey-stick divergence at the certified epsilon (at a delta the sample
    resolves) equals delta within Z_TOL standard errors, and a tenth more
    or less loss is seen."""
    delta = 1e-3
    X, y, groups = _panel(150, 3, 1, seed=6)
    reg = _objpert(delta=delta).fit(X, y, groups=groups)
    Xs, ys = _scaled(reg, X, y)
    eps, smoothed = _person_epsilon(reg, Xs, ys, groups)
    p = np.flatnonzero(~smoothed)[np.argmax(eps[~smoothed])]
    assert_allclose(reg.person_losses_[p], eps[p], rtol=1e-12)
    P = multivariate_normal(*_law(reg, Xs, ys, groups != p))
    Q = multivariate_normal(*_law(reg, Xs, ys, np.ones(y.size, bool)))
    rng = np.random.default_rng(7)
    chunks = [sampled_losses(P, Q, 200_000, rng) for _ in range(10)]
    loss_p, loss_q = (np.concatenate(c) for c in zip(*chunks))
    estimate, se = max(hockey_stick_mc(loss_p, loss_q, eps[p]))
    assert abs(estimate - delta) <= Z_TOL * se, (estimate, se)
    for wrong in (0.9 * eps[p], 1.1 * eps[p]):
        estimate, se = max(hockey_stick_mc(loss_p, loss_q, wrong))
        assert abs(estimate - delta) > Z_TOL * se, (wrong, estimate, se)
