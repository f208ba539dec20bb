"""Monte Carlo estimates of hockey-stick divergences, shared by the tests.

delta_PQ(eps) = E_P[(1 - e^{eps - L})_+] and delta_QP(eps) = E_Q[(1 - e^{eps + L})_+]
with L = log dP/dQ: unbiased averages of variables in [0, 1], whose standard
error is estimated from the same sample. The tolerance of every comparison is
Z_TOL standard errors: a two-sided false-alarm rate of about 1e-6 per check.
"""

import numpy as np

Z_TOL = 4.9


def hockey_stick_mc(loss_p, loss_q, eps):
    """Estimates and standard errors of (delta_PQ, delta_QP) at ``eps``.

    ``loss_p`` are samples of L = log dP/dQ under P, ``loss_q`` under Q.
    """
    out = []
    for terms in (
        -np.expm1(np.minimum(eps - loss_p, 0.0)) * (loss_p > eps),
        -np.expm1(np.minimum(eps + loss_q, 0.0)) * (loss_q < -eps),
    ):
        out.append((terms.mean(), terms.std(ddof=1) / np.sqrt(terms.size)))
    return out


def sampled_losses(P, Q, size, rng):
    """Samples of L = log dP/dQ under P and under Q, two frozen scipy
    distributions (the releases on the smaller and the larger data set)."""
    tp, tq = P.rvs(size, random_state=rng), Q.rvs(size, random_state=rng)
    return P.logpdf(tp) - Q.logpdf(tp), P.logpdf(tq) - Q.logpdf(tq)


def assert_matches_mc(exact_pq, exact_qp, loss_p, loss_q, eps):
    """Exact divergences agree with Monte Carlo within Z_TOL standard errors."""
    for exact, (est, se) in zip((exact_pq, exact_qp), hockey_stick_mc(loss_p, loss_q, eps)):
        # a zero-variance estimate (all terms 0) still allows float rounding
        assert abs(exact - est) <= Z_TOL * se + 1e-12, (exact, est, se)


def assert_exact_loss(loss_p, loss_q, eps, delta, symmetric=True):
    """``eps`` is the exact loss at ``delta`` of the sampled pair: the
    divergence there is ``delta`` within Z_TOL standard errors, in both
    directions (``symmetric``) or in the larger one with the other at most
    it, and a tenth more or less loss is seen (the sample resolves it)."""
    estimates = hockey_stick_mc(loss_p, loss_q, eps)
    for estimate, se in estimates:
        assert estimate <= delta + Z_TOL * se, (eps, estimate, se)
    for estimate, se in estimates if symmetric else [max(estimates)]:
        assert abs(estimate - delta) <= Z_TOL * se, (eps, estimate, se)
    for wrong in (0.9 * eps, 1.1 * eps):
        estimate, se = max(hockey_stick_mc(loss_p, loss_q, wrong))
        assert abs(estimate - delta) > Z_TOL * se, (wrong, estimate, se)
