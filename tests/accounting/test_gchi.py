"""The certified generalised chi-square loss: Ruben's series and the
characteristic-function inversion against independent references."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import integrate, stats

from sklearn_pdp.accounting import chi2_epsilon, ops_epsilon
from sklearn_pdp.accounting import _gchi
from sklearn_pdp.accounting._gchi import GChiLaw, GilPelaez, RubenSeries, gchi_epsilon


def quad_cdf(t, w, lam, nu=1.0):
    """P(w1 X1 + w2 X2 <= t), X_j ~ chi2_nu(lam_j), by one adaptive
    integral over X2's density (a route independent of both methods)."""
    law = [stats.ncx2(nu, lam_j) if lam_j > 0 else stats.chi2(nu) for lam_j in lam]
    top = np.sqrt(t / w[1])
    # x = u^2 (the density's singularity at 0 for one degree of freedom),
    # with the density's bulk marked so that quad sees it
    points = [u for u in np.sqrt(law[1].ppf([1e-6, 0.5, 1 - 1e-6])) if 0 < u < top]
    value, _ = integrate.quad(
        lambda u: 2 * u * law[1].pdf(u * u) * law[0].cdf((t - w[1] * u * u) / w[0]),
        0.0, top, points=points or None, limit=500, epsabs=1e-15, epsrel=1e-12)
    return value


def quad_delta(eps, w, lam, nu=1.0):
    """delta(eps) of L = C - T/2 (both directions) through :func:`quad_cdf`."""
    w, lam = np.asarray(w, float), np.asarray(lam, float)
    C = 0.5 * np.sum(nu * np.log1p(w) + lam * w / (1 + w))
    wa, la = w / (1 + w), lam / (1 + w)
    t, s = 2 * (C - eps), 2 * (C + eps)
    ab = (quad_cdf(t, wa, la, nu) - np.exp(eps) * quad_cdf(t, w, lam, nu)) if t > 0 else 0.0
    ba = (1 - quad_cdf(s, w, lam, nu)) - np.exp(eps) * (1 - quad_cdf(s, wa, la, nu))
    return max(ab, ba)


@pytest.mark.parametrize("ruben_mean", [0.0, np.inf], ids=["inversion", "ruben"])
def test_one_direction_equals_the_row_loss(ruben_mean, monkeypatch):
    # m = 1: the OPS loss of a row at leverage mu, residual r (closed form)
    monkeypatch.setattr(_gchi, "_RUBEN_TERMS", ruben_mean)
    mu = np.array([0.02, 0.3, 1e-3, 0.05, 2.0])
    r = np.array([0.5, -0.2, 0.05, 0.9, 0.3])
    gamma = np.array([400.0, 30.0, 100.0, 2000.0, 5.0])
    lam = gamma * r**2 / mu
    if ruben_mean == 0.0:  # the inversion needs noncentrality to converge
        keep = lam > 20
        mu, r, gamma, lam = mu[keep], r[keep], gamma[keep], lam[keep]
    got = gchi_epsilon(1e-5, mu[:, None], lam[:, None], 1.0)
    expected = ops_epsilon(1e-5, mu, r, gamma)
    assert np.all(np.isfinite(got))
    assert np.all(got >= expected * (1 - 1e-10))
    if ruben_mean:
        # (up to the two searches' own tolerances; and beyond eps = 60, the
        # first terms' mass bracketed, rounded up a little more)
        small = expected < 60
        assert_allclose(got[small], expected[small], rtol=1e-9, atol=1e-10)
        assert_allclose(got, expected, rtol=0.01)
    else:
        # absolute brackets (~1e-13): the rounding up grows like e^eps / delta
        small = expected < 3
        assert small.any()
        assert_allclose(got[small], expected[small], rtol=1e-7)
        assert_allclose(got, expected, rtol=0.02)


def test_central_one_direction_equals_the_sketch_row_loss():
    tau = np.array([1e-3, 0.02, 0.2])
    got = gchi_epsilon(1e-6, tau[:, None], 0.0, 50.0)
    assert_allclose(got, chi2_epsilon(1e-6, tau, 50), rtol=1e-9)


@pytest.mark.parametrize("method", [RubenSeries, GilPelaez])
def test_brackets_contain_equal_weight_reference(method):
    # equal weights: w times a noncentral chi-square of 2 degrees of freedom
    w = np.array([[0.3, 0.3], [0.01, 0.01]])
    lam = np.array([[30.0, 60.0], [200.0, 500.0]])
    law = method(w, lam, np.ones_like(w), np.full(2, 1e-17))
    assert law.ok.all()
    for q in (1e-9, 1e-4, 0.3, 0.9, 1 - 1e-7):
        t = w[:, 0] * stats.ncx2.ppf(q, 2, lam.sum(axis=1))
        ref = stats.ncx2.cdf(t / w[:, 0], 2, lam.sum(axis=1))
        lo, hi, slo, shi = law.brackets(t)
        assert np.all(lo <= ref) and np.all(ref <= hi)
        sf = stats.ncx2.sf(t / w[:, 0], 2, lam.sum(axis=1))
        assert np.all(slo <= sf * (1 + 1e-12)) and np.all(sf * (1 - 1e-12) <= shi)
        width = hi - lo
        assert np.all(width <= (1e-9 * ref if method is RubenSeries else 1e-12))


@pytest.mark.parametrize("lam, nu", [([40.0, 900.0], 1.0), ([3.0, 0.5], 1.0), ([0.0, 0.0], 7.0)])
def test_brackets_contain_integrated_reference(lam, nu):
    w = np.array([0.05, 0.4])
    law = GChiLaw(w[None, :], np.array(lam)[None, :], nu, np.array([1e-17]))
    assert law.ok.all()
    mean = np.sum(w * (nu + np.array(lam)))
    for t in mean * np.array([0.05, 0.3, 1.0, 2.0, 4.0]):
        ref = quad_cdf(t, w, lam, nu)
        lo, hi, _, _ = law.brackets(np.array([t]))
        # the reference's own error (quad: 1e-12 relative)
        assert lo[0] <= ref * (1 + 1e-11) + 1e-15 and ref * (1 - 1e-11) - 1e-15 <= hi[0]
        assert hi[0] - lo[0] <= 1e-12 + 1e-9 * ref


@pytest.mark.parametrize("w, lam, nu", [
    ([0.002, 0.015], [300.0, 2000.0], 1.0),  # the inversion
    ([0.1, 0.25], [2.0, 5.0], 1.0),  # Ruben's series
    ([0.01, 0.03], [0.0, 0.0], 40.0),  # central (a sketch)
])
def test_epsilon_equals_integrated_reference_never_below(w, lam, nu):
    got = gchi_epsilon(1e-5, np.array([w]), np.array([lam]), nu)[0]
    # the reference delta at it is within the budget (up to quad's own
    # error, times e^eps: moderate eps only), and exceeds it 1e-6 below
    assert quad_delta(got, w, lam, nu) <= 1e-5 * (1 + 1e-7)
    assert quad_delta(got * (1 - 1e-6), w, lam, nu) > 1e-5


def test_not_certified_beyond_the_caps():
    # weights four orders apart, small noncentrality: neither method converges
    w = np.array([[1e-6, 1e-2]])
    lam = np.array([[1.0, 1.0]])
    assert np.isnan(gchi_epsilon(1e-5, w, lam, 1.0, max_terms=500)[0])
