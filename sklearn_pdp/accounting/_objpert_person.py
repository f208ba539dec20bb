"""Certified loss of a person's rows for objective perturbation
(:doc:`/mechanisms/objective_perturbation`, "A person's loss"): an
indefinite generalised chi-square, by the discretised inversion of its
characteristic function with weights of either sign and a normal part.

On the smaller system H (without the person) and the larger H + G (G the
person's ``sum z z^T``), with M = I + G H^{-1}, c = X_p^T r / sigma (r the
person's residuals on the smaller system) and z ~ N(0, I) the noise b / sigma
of the release on the side drawn from, the loss L = log dP/dQ (P: without
the person) is

    under P:  L = -log det M + z^T S z / 2 + (M^T c)^T z + |c|^2 / 2,
              S = M^T M - I;
    under Q:  L = -log det M + z^T S' z / 2 + (M^-T M^-1 c)^T z - |M^-1 c|^2 / 2,
              S' = I - M^-T M^-1,

each of rank at most twice the person's rows: in the eigenbasis of S (S'),
Y = sum_j a_j chi2_1(lam_j) + tau N(0, 1) with a_j of either sign
(:class:`SignedInversion`). Eigenvalues below ``_NULL`` of the largest are
left out of the chi-squares (their linear parts stay, in the normal part),
and each event is moved by their largest effect, ``sum |a_j| q`` with
``P(chi2_1 > q)`` at most ``_DROP_RTOL`` delta together, that mass added to
the bracket. A law whose inversion would need more than ``_DIRECT_NODES``
nodes is inverted with a normal part added and its events moved by that
part's reach the same way (:func:`_law`): a looser certified bound.
"""

import numpy as np
from scipy.special import chdtri

from ._gchi import _CHERNOFF_GRID, GChiLoss, GilPelaez, _times_exp

# Each law's bracket (aliasing, cut), relative to delta: the inversion's
# sum converges like |phi|, a power of v once the noncentrality's factor is
# spent, so far below delta costs many nodes; the reported epsilon is that
# of a delta smaller by a few times this (an upper bound all the same).
_TAIL_RTOL = 1e-4
# Eigenvalues of S at most this times the largest: left out (bracketed).
_NULL = 1e-9
# The chance of each left-out chi-square beyond its bracket, relative to delta.
_DROP_RTOL = 1e-14
# Nodes of the inversion of a law as it is (beyond, it is smoothed: the
# sum's cost grows with the nodes of its slowest law in every search step).
_DIRECT_NODES = 20000
# Nodes of the inversion of a law smoothed by a normal part (its slack
# grows as 1 / _SMOOTH_NODES), and the margin on that normal part.
_SMOOTH_NODES = 5000
_SMOOTH_MARGIN = 1.1
# The Chernoff grid on a side without weights (the normal part or the other
# sign's chi-squares bound it): fractions of 1 / (2 max |a|) or of 1 / tau.
_OPEN_GRID = np.geomspace(1e-6, 1e6, 200)


class SignedInversion(GilPelaez):
    """Certified CDF of Y = sum_j a_j chi2_1(lam_j) + tau N(0, 1), the a_j of
    either sign (0: absent), for many laws (rows), by the inversion of
    :class:`~._gchi.GilPelaez`.

    The square wave of period 2p gives I(t) = P(t - p < Y < t) plus aliases
    beyond t + p and below t - 2p, so P(Y < t) lies in
    [I - P(Y > t + p), I + P(Y < t - p)]. With Chernoff's quantiles x_lo and
    x_hi (P(Y < x_lo), P(Y > x_hi) at most ``tol``, s of either sign) and
    p = 1.001 (x_hi - x_lo), both aliases are within ``tol`` for t between
    them; beyond them the CDF is within Chernoff's bound of 0 or 1. |phi| is
    that of the weights' magnitudes times exp(-tau^2 v^2 / 2), and
    exp(-tau^2 v^2 / 2) <= exp(-tau^2 V^2 / 2) (v / V)^(-tau^2 V^2) for
    v >= V: the cut's bound holds with kappa + tau^2 V^2.
    """

    def __init__(self, a, lam, tau, tol, max_nodes=None):
        mask = a != 0
        self.w = np.where(mask, a, 0.0)
        self.lam, self.nu = np.where(mask, lam, 0.0), mask.astype(float)
        self.n = self.nu.sum(axis=1)
        self.tau = np.asarray(tau, dtype=float)
        self.tol = np.broadcast_to(np.asarray(tol, dtype=float), self.tau.shape)
        self.smoothed = np.zeros(self.tau.shape, dtype=bool)  # :func:`_law`
        self._place(max_nodes)

    def _grid(self, sign):
        """Chernoff's s on one side (``sign``), inside the MGF's domain."""
        side = np.where(sign * self.w > 0, np.abs(self.w), 0.0).max(axis=1)
        scale = np.abs(self.w).max(axis=1)
        scale = np.where(scale > 0, 2.0 * scale, 1.0 / np.maximum(self.tau, 1e-300))
        grid = np.where((side > 0)[:, None], _CHERNOFF_GRID[None, :] / (2.0 * np.where(
            side > 0, side, 1.0))[:, None], _OPEN_GRID[None, :] / scale[:, None])
        return sign * grid

    def _log_mgf_at(self, s):
        ws = 2.0 * self.w[:, None, :] * s[:, :, None]
        return (np.sum(-0.5 * self.nu[:, None, :] * np.log1p(-ws)
                       + 0.5 * self.lam[:, None, :] * ws / (1.0 - ws), axis=2)
                + 0.5 * (self.tau[:, None] * s) ** 2)

    def _tail(self, t, sign, rows):
        """Chernoff's bound on P(Y > t) (``sign`` 1) or P(Y < t) (-1) of the
        laws ``rows``."""
        s, log_mgf = self._chernoff[sign]
        log_tail = np.min(log_mgf[rows] - s[rows] * t[rows, None], axis=1)
        return np.exp(np.minimum(log_tail, 0.0))

    def _period(self):
        log_tol = np.log(self.tol)[:, None]
        # the grids and the MGF on them, for every bound on a tail
        self._chernoff = {sign: (s, self._log_mgf_at(s))
                          for sign, s in ((1.0, self._grid(1.0)), (-1.0, self._grid(-1.0)))}
        (up, mgf_up), (down, mgf_down) = self._chernoff[1.0], self._chernoff[-1.0]
        self.x_hi = np.min((mgf_up - log_tol) / up, axis=1)
        self.x_lo = np.max((mgf_down - log_tol) / down, axis=1)
        return 1.001 * (self.x_hi - self.x_lo)

    def _decay(self, V):
        log_phi, kappa = super()._decay(V)
        normal = (self.tau * V) ** 2
        return log_phi - 0.5 * normal, kappa + normal

    def _nodes(self, rows, nodes, step):
        v, modulus, phase, round_t, rounding = super()._nodes(rows, nodes, step)
        # a smaller modulus: the rounding bounds still hold
        return (v, modulus * np.exp(-0.5 * (self.tau[rows, None] * v) ** 2), phase, round_t,
                rounding)

    def brackets(self, t):
        """``(cdf_lo, cdf_hi)`` of P(Y <= t)."""
        t = np.asarray(t, dtype=float)
        I, margin = self._sum(t)
        spread = self.tol + self.cut + margin
        cdf_lo, cdf_hi = I - spread, I + spread
        high, low = np.flatnonzero(t >= self.x_hi), np.flatnonzero(t <= self.x_lo)
        cdf_lo[high], cdf_hi[high] = 1.0 - self._tail(t, 1.0, high), 1.0
        cdf_lo[low], cdf_hi[low] = 0.0, self._tail(t, -1.0, low)
        cdf_lo = np.where(self.ok, np.clip(cdf_lo, 0.0, 1.0), 0.0)
        cdf_hi = np.where(self.ok, np.clip(cdf_hi, 0.0, 1.0), 1.0)
        return cdf_lo, cdf_hi


class ObjPertPersonLoss(GChiLoss):
    """The loss of each person (rows) from the quadratic forms of the module
    docstring under both laws, with a certified upper bound on delta(eps)
    in both directions (the search of :class:`~._gchi.GChiLoss`)."""

    # the brackets are ~1e-4 delta wide: no finer search
    eps_rtol = 1e-5

    def __init__(self, forms, delta, max_nodes=None):
        tol = _TAIL_RTOL * np.asarray(delta, dtype=float)
        laws = [_law(*form, tol, max_nodes) for form in forms]
        (self.A, self.shift_a, self.slack_a), (self.B, self.shift_b, self.slack_b) = laws
        self.const = self.shift_a  # its size is the number of persons

    def delta_upper(self, eps):
        """Upper bound on max(delta_PQ(eps), delta_QP(eps)) per person, each
        event moved by the left-out chi-squares' effect (``slack``, its mass
        ``_DROP_RTOL`` delta each side)."""
        eps = np.asarray(eps, dtype=float)
        drop = 2.0 * _DROP_RTOL * (self.A.tol / _TAIL_RTOL)

        def cdf(law, shift, slack, t, upper):
            lo, hi = law.brackets(t - shift + (slack if upper else -slack))
            return np.minimum(hi + drop, 1.0) if upper else np.maximum(lo - drop, 0.0)

        # L > eps: 1 - P(Y <= eps - const)
        a_above = 1.0 - cdf(self.A, self.shift_a, self.slack_a, eps, False)
        b_above = 1.0 - cdf(self.B, self.shift_b, self.slack_b, eps, True)
        b_below = cdf(self.B, self.shift_b, self.slack_b, -eps, True)
        a_below = cdf(self.A, self.shift_a, self.slack_a, -eps, False)
        return np.maximum(a_above - _times_exp(eps, b_above),
                          b_below - _times_exp(eps, a_below))


def _law(S, l, const, tol, max_nodes):
    """The law of L - shift under one side from its quadratic form
    ``z^T S z / 2 + l^T z + const``: ``(SignedInversion, shift, slack)``."""
    s, U = np.linalg.eigh(S)
    coord = np.einsum("pji,pj->pi", U, l)
    big = np.abs(s).max(axis=1, keepdims=True)
    kept = np.abs(s) > _NULL * big
    safe = np.where(kept, s, 1.0)
    a = np.where(kept, 0.5 * s, 0.0)
    lam = np.where(kept, (coord / safe) ** 2, 0.0)
    tau = np.sqrt(np.sum(np.where(kept, 0.0, coord**2), axis=1))
    shift = const - 0.5 * np.sum(np.where(kept, coord**2 / safe, 0.0), axis=1)
    # the left-out a_j chi2_1 lie in [0, a_j q] but with probability
    # _DROP_RTOL delta together (central: their linear parts are in tau)
    drop = _DROP_RTOL * tol / _TAIL_RTOL
    q = chdtri(1.0, drop / s.shape[1])
    slack = 0.5 * q * np.sum(np.where(kept, 0.0, np.abs(s)), axis=1)
    law = SignedInversion(a, lam, tau, tol, _DIRECT_NODES if max_nodes is None else max_nodes)
    slow = np.flatnonzero(~law.ok)
    if slow.size:
        # little noncentrality on few weights: |phi| falls like a power of v.
        # Y + tau_0 N(0, 1) instead, tau_0 the smallest that cuts the sum
        # within _SMOOTH_NODES nodes: P(|tau_0 N(0, 1)| > tau_0 sqrt(q'))
        # is the other _DROP_RTOL delta, and the events move by that much.
        cut = np.ones(tau.shape)
        cut[slow] = 2.0 * np.pi * _SMOOTH_NODES / law.period[slow]
        excess = np.maximum(law._log_cut(cut) - np.log(law.cut), 0.0)
        extra = np.zeros(tau.shape)
        extra[slow] = _SMOOTH_MARGIN * np.sqrt(2.0 * excess[slow]) / cut[slow]
        law = SignedInversion(a, lam, np.hypot(tau, extra), tol, max_nodes)
        slack = slack + np.sqrt(chdtri(1.0, drop)) * extra
        law.smoothed = extra > 0
    return law, shift, slack


def objpert_person_forms(H, coef, gram, cross, sigma, add=False):
    """The quadratic forms ``(S, l, const)`` of each person's loss under P
    (without the person) and under Q (with), from the fitted system ``H``
    and solution ``coef``, the persons' ``gram`` (``sum z z^T``) and
    ``cross`` (``sum y z``) and the noise ``sigma``; ``add``: the fitted
    data lack the persons. Also the persons whose smaller system is
    singular (their rows alone hold a direction: an infinite loss)."""
    d = H.shape[0]
    fitted = cross - gram @ coef  # X_p^T e on the fitted system
    small = H[None] - (np.zeros_like(gram) if add else gram)
    singular = np.linalg.eigvalsh(small)[:, 0] <= 1e-12 * np.abs(H).max()
    small = np.where(singular[:, None, None], np.eye(d), small)
    A1 = np.swapaxes(np.linalg.solve(small, gram), 1, 2)  # G H^-1 (both symmetric)
    M = np.eye(d) + A1
    # on the smaller system: c = X_p^T r = M X_p^T e (removal), X_p^T e (addition)
    c = (fitted if add else np.einsum("pij,pj->pi", M, fitted)) / sigma
    log_det = np.linalg.slogdet(M)[1]
    A1t = np.swapaxes(A1, 1, 2)
    S_p = A1 + A1t + A1t @ A1
    l_p = c + np.einsum("pji,pj->pi", A1, c)
    C = np.linalg.solve(M, A1)  # I - M^-1
    Ct = np.swapaxes(C, 1, 2)
    beta = np.linalg.solve(M, c[:, :, None])[:, :, 0]
    S_q = C + Ct - Ct @ C
    l_q = beta - np.einsum("pji,pj->pi", C, beta)
    forms = ((S_p, l_p, 0.5 * np.sum(c**2, axis=1) - log_det),
             (S_q, l_q, -0.5 * np.sum(beta**2, axis=1) - log_det))
    return forms, singular


def objpert_person_epsilon(delta, ridge, gram, cross, sigma, add=False, max_nodes=None):
    """Certified epsilon at ``delta`` of removing (adding, ``add``) each
    person's rows together (:func:`objpert_person_forms`, on the fitted
    :class:`~sklearn_pdp.utils._ridge_system.RidgeSystem` ``ridge``): ``inf`` for a
    person whose rows alone hold a direction of the smaller system, 0 for
    one whose rows are all 0, ``nan`` where the inversion is not certified
    within its cap of nodes; and the persons whose law needed a normal part
    (:func:`_law`: their loss is a looser certified bound)."""
    out = np.zeros(gram.shape[0])
    smoothed = np.zeros(gram.shape[0], dtype=bool)
    forms, singular = objpert_person_forms(ridge.chol @ ridge.chol.T, ridge.coef, gram, cross,
                                           sigma, add)
    out[singular] = np.inf
    rows = np.flatnonzero(~singular & (np.abs(gram).max(axis=(1, 2)) > 0))
    if rows.size:
        forms = tuple(tuple(part[rows] for part in form) for form in forms)
        loss = ObjPertPersonLoss(forms, delta, max_nodes)
        out[rows] = loss.epsilon(delta)
        smoothed[rows] = loss.A.smoothed | loss.B.smoothed
    return out, smoothed
