"""Certified loss of a Gaussian release whose covariance and mean both move
with the data: the generalised chi-square loss of a person with several
records (:doc:`/people`), for One Posterior Sample and the Gaussian sketch.

Two laws A and B of a release differ by a positive semi-definite change of
the precision (OPS: the person's rows in the posterior's) or of the
covariance (the sketch's rows). In the eigenbasis of the change, with
weights w_j > 0 (leverages on the smaller data set, or tau_j), degrees of
freedom nu_j and noncentralities lam_j under B, the log-ratio is

    L = log dA/dB = C - T / 2,
    C = sum nu_j log(1 + w_j) / 2 + sum lam_j w_j / (1 + w_j) / 2,

with T = sum_j w_j chi2_{nu_j}(lam_j) under B and
T = sum_j w_j / (1 + w_j) chi2_{nu_j}(lam_j / (1 + w_j)) under A: a
positive-weight (noncentral) generalised chi-square under both. Every
hockey-stick event is a tail of T.

The tails come from Ruben's (1962) series: with beta at most every weight,
P(T <= t) = sum_k c_k F_{n + 2k}(t / beta), n = sum nu_j, the c_k >= 0
summing to 1, the coefficients of

    Psi(z) = prod_j (beta / w_j)^(nu_j / 2) (1 - g_j z)^(-nu_j / 2)
             exp(lam_j (z - 1) / (2 (1 - g_j z))),   g_j = 1 - beta / w_j.

They are computed by the recursion (k + 1) c_{k+1} = sum_i c_i d_{k-i} of
Psi'/Psi = sum_k d_k z^k (Kotz, Johnson and Boyd 1967), summed through two
running sums per weight so that each step is O(m) and adds positive terms
only (no cancellation), on a scale carried in log space (c_0 underflows
where the noncentrality is large). F_{n+2k} falls with k, so the terms
left out give a bracket: the mass beyond the last term, bounded by
Markov's inequality on the series (Psi(z) / z^K for any z in
(1, 1 / max g)), times F of the last degrees of freedom for the CDF (times
1 for the survival function); the first terms, too light to count, are
bracketed by their computed mass. Rounding is covered by a relative margin
on every sum. The epsilon is searched on the upper end of delta(eps) (the
CDF's upper end for A, the lower for e^eps B, and so on): the epsilon
returned is an upper bound, certified up to that margin.

The number of terms grows like the mixing mean
sum (nu_j + lam_j) / (2 (1 - g_j)): large noncentralities (residuals many
posterior deviations away, the rule for OPS on thousands of rows) need
tens of thousands. There the characteristic function decays like a
normal's, and its discretised inversion (Davies 1973, :class:`GilPelaez`)
needs tens of nodes, with a certified error: the aliasing is a tail of T
(Chernoff's bound), the sum's cut a bound on |phi|, and the rounding a
margin; its brackets are absolute (~1e-13), so the epsilon is rounded up
by about e^eps 1e-13 / delta relative. Where neither converges within its
public cap (``_MAX_TERMS``, ``_MAX_NODES``: little noncentrality on large
weights together with weights orders of magnitude apart) the loss is not
certified (``nan``) and the caller falls back to a labelled bound.
"""

import numpy as np
from scipy.special import chdtr, chdtrc, gammaln

# Public cap on Ruben's terms per law and person.
_MAX_TERMS = 20000
# Steps of the recursion between checks of the mass left out.
_CHECK_EVERY = 32
# Mass left beyond the last term, relative to delta.
_TAIL_RTOL = 1e-12
# Rescale the running coefficients past this (they stay finite).
_RESCALE = 1e250
# Points z - 1 (log-spaced) at which Markov's bound on the tail mass is tried.
_MARKOV_GRID = np.geomspace(1e-8, 1e8, 97)
# Relative rounding allowed to scipy's chi-square distribution functions.
_CHI2_RTOL = 1e-13
# The first terms left out weigh at most e^-_LOW_EPS times the tail's mass.
_LOW_EPS = 60.0
# Public cap on the nodes of the inversion per law and person.
_MAX_NODES = 200000
# Entries of the arrays of nodes held at once.
_CHUNK = 2**21
# The inversion's sum is cut where the terms left out weigh at most this
# (or tol, if larger): about the rounding of the sum.
_CUT_TOL = 1e-15
# Points s (times 1 / (2 max w)) at which Chernoff's bound is tried.
_CHERNOFF_GRID = 1.0 - np.geomspace(1e-6, 1.0 - 1e-6, 200)
# Laws whose Ruben series needs more terms than this (about) use the inversion.
_RUBEN_TERMS = 3000.0
# Relative precision of the epsilon search (bisection; the upper end is kept).
_EPS_RTOL = 1e-12


class RubenSeries:
    """Ruben's series of T = sum_j w_j chi2_{nu_j}(lam_j) for many laws at
    once (rows), each a sum of up to m terms (columns; weights <= 0 are
    absent), with certified brackets of its CDF and survival function.

    ``tol``: the mass each law may leave out (beyond its last term and
    before its first). Laws whose series does not reach ``tol`` within
    ``max_terms`` are flagged in ``ok`` (their brackets are [0, 1]).
    """

    def __init__(self, w, lam, nu, tol, max_terms=None):
        max_terms = _MAX_TERMS if max_terms is None else max_terms
        w, lam, nu = np.broadcast_arrays(*(np.atleast_2d(np.asarray(a, dtype=float))
                                           for a in (w, lam, nu)))
        mask = w > 0
        P = w.shape[0]
        self.beta = np.where(mask, w, np.inf).min(axis=1)
        beta = np.where(np.isfinite(self.beta), self.beta, 1.0)[:, None]
        self.g = np.where(mask, 1.0 - beta / np.where(mask, w, 1.0), 0.0)
        self.nu, self.lam = np.where(mask, nu, 0.0), np.where(mask, lam, 0.0)
        ratio = np.where(mask, w, 1.0) / beta
        self.log_c0 = np.sum(np.where(mask, -0.5 * self.nu * np.log(ratio), 0.0)
                             - 0.5 * self.lam, axis=1)
        self.n = self.nu.sum(axis=1)
        self.tol = np.broadcast_to(np.asarray(tol, dtype=float), (P,))
        one_minus_g = 1.0 - self.g
        mean = 0.5 * np.sum((self.nu * self.g + self.lam) / one_minus_g, axis=1)
        feasible = np.isfinite(self.beta) & (mean < max_terms) & (self.n > 0)
        self.ok = np.zeros(P, dtype=bool)
        self.terms = np.zeros(P, dtype=int)
        log_c = np.full((P, 1), -np.inf)
        rows = np.flatnonzero(feasible)
        if rows.size:
            sub_log_c, terms, ok = self._recursion(rows, max_terms)
            log_c = np.full((P, sub_log_c.shape[1]), -np.inf)
            log_c[rows] = sub_log_c
            self.terms[rows], self.ok[rows] = terms, ok
        self._window(log_c)

    def log_tail_bound(self, rows, K):
        """log of Markov's bound Psi(z) / z^K on the mass of the terms k >= K."""
        g, nu, lam = self.g[rows], self.nu[rows], self.lam[rows]
        z = 1.0 + _MARKOV_GRID[None, :, None]
        inside = g[:, None, :] * z < 1.0
        gz = np.where(inside, g[:, None, :] * z, 0.0)
        # Psi(z) = c_0 prod (1 - g z)^(-nu/2) exp(lam (1 - g) z / (2 (1 - g z)))
        log_psi = self.log_c0[rows][:, None] + np.sum(
            -0.5 * nu[:, None, :] * np.log1p(-gz)
            + 0.5 * (lam * (1.0 - g))[:, None, :] * z / (1.0 - gz), axis=2)
        log_psi = np.where(inside.all(axis=2), log_psi, np.inf)
        return np.min(log_psi - np.asarray(K)[..., None] * np.log(z[:, :, 0]), axis=1)

    def _recursion(self, rows, max_terms):
        """The coefficients' logs for the laws ``rows``, their numbers of
        terms and whether the mass left beyond them is within ``tol``."""
        g, nu, lam = self.g[rows], self.nu[rows], self.lam[rows]
        nug, lamg = nu * g, lam * (1.0 - g)
        P = rows.size
        A, B = np.zeros(g.shape), np.zeros(g.shape)
        c, scale = np.ones(P), self.log_c0[rows].copy()
        out = []  # log c_k of every law, -inf once done
        terms, ok = np.full(P, max_terms), np.zeros(P, dtype=bool)
        log_tol = np.log(self.tol[rows])
        live = np.arange(P)
        for k in range(max_terms):
            column = np.full(P, -np.inf)
            with np.errstate(divide="ignore"):
                column[live] = np.log(c) + scale
            out.append(column)
            A *= g
            A += c[:, None]
            B *= g
            B += A
            c = np.sum(nug * A + lamg * B, axis=1) / (2.0 * (k + 1))
            big = np.flatnonzero(c > _RESCALE)
            if big.size:
                factor = c[big]
                c[big] = 1.0
                A[big] /= factor[:, None]
                B[big] /= factor[:, None]
                scale[big] += np.log(factor)
            if (k + 1) % _CHECK_EVERY == 0:
                done = self.log_tail_bound(rows[live], k + 1) <= log_tol[live]
                if done.any():
                    terms[live[done]], ok[live[done]] = k + 1, True
                    keep = ~done
                    live, A, B, c, scale = live[keep], A[keep], B[keep], c[keep], scale[keep]
                    g, nug, lamg = g[keep], nug[keep], lamg[keep]
                    if not live.size:
                        break
        return np.column_stack(out), terms, ok

    def _window(self, log_c):
        """The terms kept (from ``lo`` to ``terms``), their cumulative sums
        and the mass before and beyond them."""
        P = log_c.shape[0]
        K = np.maximum(self.terms, 1)
        with np.errstate(under="ignore"):
            c = np.exp(log_c)
        cum = np.cumsum(c, axis=1)
        # the first terms, bracketed by their mass: so light that e^eps times
        # it stays negligible up to eps = _LOW_EPS
        light = cum <= np.exp(-_LOW_EPS) * self.tol[:, None]
        self.lo = np.minimum(np.sum(light, axis=1), K - 1)
        idx = np.arange(P)
        self.low_mass = np.where(self.lo > 0, cum[idx, np.maximum(self.lo - 1, 0)], 0.0)
        self.low_mass += 1e-300 * K  # terms that underflowed
        W = int(np.max(K - self.lo)) if P else 1
        k = self.lo[:, None] + np.arange(W)[None, :]
        self.inside = inside = k < K[:, None]
        self.c = np.where(inside, c[idx[:, None], np.minimum(k, c.shape[1] - 1)], 0.0)
        self.half = 0.5 * self.n[:, None] + k  # (n + 2k) / 2
        self.log_gamma = gammaln(self.half + 1.0)
        self.cum = np.cumsum(self.c, axis=1)
        self.total = self.cum[:, -1]
        self.after = np.cumsum(self.c[:, ::-1], axis=1)[:, ::-1] - self.c
        self.K = K
        self.rest = np.exp(np.minimum(self.log_tail_bound(np.arange(P), K), 0.0))
        self.rest = np.where(self.ok, self.rest, 1.0)
        # rounding of the recursion (positive terms: ~ k ulp each) and of the sums
        self.margin = _CHI2_RTOL + 8e-16 * (self.g.shape[1] + 4) * K

    def brackets(self, t):
        """``(cdf_lo, cdf_hi, sf_lo, sf_hi)`` of P(T <= t) and P(T > t)."""
        t = np.asarray(t, dtype=float)
        beta = np.where(np.isfinite(self.beta), self.beta, 1.0)
        y = np.where(t > 0, t / beta, 0.0)
        half_y = 0.5 * y
        with np.errstate(divide="ignore", invalid="ignore"):
            log_f = (-half_y[:, None] + self.half * np.log(half_y)[:, None] - self.log_gamma)
        log_f = np.where(np.isnan(log_f), -np.inf, log_f)
        # F_{2h}(y) - F_{2h+2}(y) = e^{-y/2} (y/2)^h / Gamma(h + 1), through logs
        # whose terms are about |log| ulp each
        magnitude = half_y + np.max(self.half, axis=1) * np.abs(np.log(np.maximum(half_y, 1e-300))) \
            + np.max(self.log_gamma, axis=1)
        margin = self.margin + 8e-16 * magnitude
        f = np.where(self.inside, np.exp(log_f), 0.0)
        dof_top = self.n + 2.0 * self.K
        dof_lo = self.n + 2.0 * self.lo
        F_top = chdtr(dof_top, y)
        Q_lo = chdtrc(dof_lo, y)
        sum_f = f.sum(axis=1)
        cdf = F_top * self.total + np.sum(f * self.cum, axis=1)
        sf = Q_lo * self.total + np.sum(f * self.after, axis=1)
        low = self.low_mass
        cdf_lo = (cdf + low * (F_top + sum_f)) * (1.0 - margin)
        cdf_hi = (cdf + low) * (1.0 + margin) + self.rest * F_top * (1.0 + _CHI2_RTOL)
        sf_lo = sf * (1.0 - margin)
        sf_hi = (sf + low * Q_lo) * (1.0 + margin) + self.rest
        empty = t <= 0  # T > 0 almost surely
        cdf_lo, cdf_hi = np.where(empty, 0.0, cdf_lo), np.where(empty, 0.0, cdf_hi)
        sf_lo, sf_hi = np.where(empty, 1.0, sf_lo), np.where(empty, 1.0, sf_hi)
        bad = ~self.ok
        cdf_lo, sf_lo = np.where(bad, 0.0, cdf_lo), np.where(bad, 0.0, sf_lo)
        cdf_hi, sf_hi = np.where(bad, 1.0, cdf_hi), np.where(bad, 1.0, sf_hi)
        clip = (lambda a: np.clip(a, 0.0, 1.0))
        return clip(cdf_lo), clip(cdf_hi), clip(sf_lo), clip(sf_hi)


class GilPelaez:
    """Certified CDF of T = sum_j w_j chi2_{nu_j}(lam_j) by the discretised
    inversion of its characteristic function phi (Davies 1973), for many
    laws at once (rows; weights <= 0 absent), where the noncentrality is
    large (phi then decays like a normal's).

    At step Delta = 2 pi / p the sum
    I(t) = 1/2 - sum_{k >= 0} Im[phi(v_k) e^{-i v_k t}] / (pi (k + 1/2)),
    v_k = (k + 1/2) Delta, is E[s(T - t)] for the square wave s, 1 on
    ((2j - 1) p, 2j p) and 0 on (2j p, (2j + 1) p): for 0 < t < p (T > 0)
    it brackets P(T < t) in [I - P(T > t + p), I]. The period p is fixed
    per law just beyond x_tol, where Chernoff's bound exp(-s x) E[e^{s T}]
    on P(T > x) falls to ``tol`` (so the nodes and phi at them are computed
    once); beyond x_tol, P(T <= t) is within that bound of 1. The sum is cut
    where (1/pi) int_V^inf |phi(v)| / v dv (|phi| / v falls with v, so
    this bounds the terms left out) is at most ``tol`` (:meth:`_log_cut`); rounding of the phases and of the
    sum is a further absolute margin. ``ok`` is False where the cut needs
    more than ``max_nodes`` nodes.
    """

    def __init__(self, w, lam, nu, tol, max_nodes=None):
        mask = w > 0
        self.w = np.where(mask, w, 0.0)
        self.lam, self.nu = np.where(mask, lam, 0.0), np.where(mask, nu, 0.0)
        self.n = self.nu.sum(axis=1)
        self.tol = np.asarray(tol, dtype=float)
        self._place(max_nodes)

    def _period(self):
        """The period p: T > 0, and P(T > t + p) <= tol for t < x_tol."""
        self.x_tol = np.min((self._log_mgf() - np.log(self.tol)[:, None]) / self._s, axis=1)
        return 1.001 * self.x_tol

    def _place(self, max_nodes):
        """The cut, the period and the nodes of every law, in chunks."""
        max_nodes = _MAX_NODES if max_nodes is None else max_nodes
        # the cut V: bisection on log V of the bound above (it falls with V);
        # its error need not be far below the rounding of the sum
        self.cut = np.maximum(self.tol, _CUT_TOL)
        lo, hi = np.full(self.w.shape[0], -40.0), np.full(self.w.shape[0], 40.0)
        for _ in range(80):
            mid = 0.5 * (lo + hi)
            fine = self._log_cut(np.exp(mid)) <= np.log(self.cut)
            hi, lo = np.where(fine, mid, hi), np.where(fine, lo, mid)
        self.period = self._period()
        step = 2.0 * np.pi / self.period
        nodes = np.ceil(np.exp(hi) / step + 0.5)
        self.ok = nodes <= max_nodes
        nodes = np.where(self.ok, np.maximum(nodes, 1), 1).astype(np.int64)
        # laws with similar numbers of nodes together (at most twice the
        # first's: the array is padded to the largest), a bounded array each
        order = np.argsort(nodes, kind="stable")
        self.chunks, start = [], 0
        while start < order.size:
            stop = start + 1
            while (stop < order.size and (stop + 1 - start) * nodes[order[stop]] <= _CHUNK
                   and nodes[order[stop]] <= 2 * nodes[order[start]] + 64):
                stop += 1
            rows = order[start:stop]
            self.chunks.append((rows, self._nodes(rows, nodes[rows], step[rows])))
            start = stop

    def _nodes(self, rows, nodes, step):
        """phi at the nodes of the laws ``rows``: ``(v, modulus / (pi (k + 1/2)),
        phase without -v t, rounding per unit t, rounding)``."""
        k = np.arange(int(nodes.max()))[None, :] + 0.5
        v = np.where(self.ok[rows, None], k * step[:, None], 0.0)
        w, nu, lam = self.w[rows], self.nu[rows], self.lam[rows]
        wv = 2.0 * w[:, None, :] * v[:, :, None]
        one_plus = 1.0 + wv**2
        real = np.sum(-0.25 * nu[:, None, :] * np.log(one_plus)
                      - 0.5 * lam[:, None, :] * wv**2 / one_plus, axis=2)
        modulus = np.where(k < nodes[:, None], np.exp(real) / (np.pi * k), 0.0)
        phase = np.sum(0.5 * nu[:, None, :] * np.arctan(wv)
                       + 0.5 * lam[:, None, :] * wv / one_plus, axis=2)
        # rounding: each term's phase errs by a few ulps of its largest part
        # (and its modulus by a few ulps), the sum by N ulps of its terms
        round_t = 8e-16 * np.sum(modulus * v, axis=1)
        rounding = 8e-16 * np.sum(modulus * (phase + 8.0 + nodes[:, None]), axis=1) + 1e-16
        return v, modulus, phase, round_t, rounding

    @property
    def _s(self):
        """The grid of s in (0, 1 / (2 max w)) of Chernoff's bound."""
        return _CHERNOFF_GRID[None, :] / (2.0 * self.w.max(axis=1)[:, None])

    def _log_mgf(self):
        ws = 2.0 * self.w[:, None, :] * self._s[:, :, None]
        return np.sum(-0.5 * self.nu[:, None, :] * np.log1p(-ws)
                      + 0.5 * self.lam[:, None, :] * ws / (1.0 - ws), axis=2)

    def _log_cut(self, V):
        """log of (1/pi) |phi(V)| / kappa, a bound on (1/pi) int_V^inf |phi(v)| / v dv:
        1 + 4 w^2 v^2 >= (1 + 4 w^2 V^2) (v / V)^(2 c), c = 4 w^2 V^2 / (1 + 4 w^2 V^2)
        for v >= V, so |phi(v)| <= |phi(V)| (v / V)^-kappa, kappa = sum nu c / 2."""
        log_phi, kappa = self._decay(V)
        return log_phi - np.log(np.pi * kappa)

    def _decay(self, V):
        """(log |phi(V)|, kappa) of :meth:`_log_cut`."""
        wv2 = 4.0 * (self.w * V[:, None]) ** 2
        one_plus = 1.0 + wv2
        log_phi = np.sum(-0.25 * self.nu * np.log(one_plus) - 0.5 * self.lam * wv2 / one_plus,
                         axis=1)
        return log_phi, 0.5 * np.sum(self.nu * wv2 / one_plus, axis=1)

    def brackets(self, t):
        """``(cdf_lo, cdf_hi, sf_lo, sf_hi)`` of P(T <= t) and P(T > t)."""
        t = np.asarray(t, dtype=float)
        inner = t < self.x_tol
        I, margin = self._sum(t)
        # alias P(T > t + p) <= tol, and the sum's cut
        cdf_lo, cdf_hi = I - self.tol - self.cut - margin, I + self.cut + margin
        far = np.flatnonzero(~inner & (t > 0))
        if far.size:  # P(T > t) within Chernoff's bound
            tail = np.exp(np.min(self._log_mgf()[far] - self._s[far] * t[far, None], axis=1))
            cdf_lo[far], cdf_hi[far] = 1.0 - tail, 1.0
        empty = t <= 0
        cdf_lo, cdf_hi = np.where(empty, 0.0, cdf_lo), np.where(empty, 0.0, cdf_hi)
        cdf_lo = np.where(self.ok, np.clip(cdf_lo, 0.0, 1.0), 0.0)
        cdf_hi = np.where(self.ok, np.clip(cdf_hi, 0.0, 1.0), 1.0)
        return cdf_lo, cdf_hi, 1.0 - cdf_hi, 1.0 - cdf_lo

    def _sum(self, t):
        """The cut sum I(t) of every law and its rounding margin."""
        I, margin = np.empty(t.shape), np.empty(t.shape)
        for rows, (v, modulus, phase, round_t, rounding) in self.chunks:
            I[rows] = 0.5 - np.sum(modulus * np.sin(phase - v * t[rows, None]), axis=1)
            margin[rows] = rounding + round_t * np.abs(t[rows])
        return I, margin


class GChiLaw:
    """Certified brackets of the tails of T = sum_j w_j chi2_{nu_j}(lam_j)
    for many laws (rows): Ruben's series where it needs at most about
    ``_RUBEN_TERMS`` terms (small noncentralities: the inversion's sum
    converges slowly there), the inversion elsewhere, and Ruben's series
    again (up to its cap) where the inversion's sum is beyond its cap.
    ``ok``: certified."""

    def __init__(self, w, lam, nu, tol, max_terms=None):
        w, lam, nu = np.broadcast_arrays(*(np.atleast_2d(np.asarray(a, dtype=float))
                                           for a in (w, lam, nu)))
        P = w.shape[0]
        tol = np.broadcast_to(np.asarray(tol, dtype=float), (P,))
        mask = w > 0
        beta = np.where(mask, w, np.inf).min(axis=1, keepdims=True)
        g = np.where(mask, 1.0 - beta / np.where(mask, w, 1.0), 0.0)
        # Ruben's terms: about the mixing mean, then a geometric tail at rate max g
        mean = 0.5 * np.sum(np.where(mask, (nu * g + lam) / (1.0 - g), 0.0), axis=1)
        terms = mean - np.log(tol) / (1.0 - g.max(axis=1))
        self.parts = []
        self.ok = np.zeros(P, dtype=bool)
        short = terms <= _RUBEN_TERMS
        groups = [np.flatnonzero(short)]
        rows = np.flatnonzero(~short)
        if rows.size:
            part = GilPelaez(w[rows], lam[rows], nu[rows], tol[rows])
            self.parts.append((rows, part, part.ok))
            # where the inversion's sum converges too slowly (little
            # noncentrality on the large weights), Ruben's series may not
            # (apart: its window is long)
            groups.append(rows[~part.ok & (terms[rows] <= (max_terms or _MAX_TERMS))])
        for rows in groups:
            if rows.size:
                part = RubenSeries(w[rows], lam[rows], nu[rows], tol[rows], max_terms)
                self.parts.append((rows, part, np.ones(rows.size, dtype=bool)))
        for rows, part, used in self.parts:
            self.ok[rows[used]] = part.ok[used]

    def brackets(self, t):
        """``(cdf_lo, cdf_hi, sf_lo, sf_hi)`` of P(T <= t) and P(T > t)."""
        P = t.shape[0]  # [0, 1] where not certified
        out = [np.zeros(P), np.ones(P), np.zeros(P), np.ones(P)]
        for rows, part, used in self.parts:
            for full, piece in zip(out, part.brackets(t[rows])):
                full[rows[used]] = piece[used]
        return tuple(out)


class GChiLoss:
    """The loss L = C - T / 2 of the module docstring for many persons
    (rows; weights <= 0 are absent columns), with a certified upper bound on
    delta(eps) in both directions."""

    # the search's relative precision (the upper end is kept)
    eps_rtol = _EPS_RTOL

    def __init__(self, w, lam, nu, delta, max_terms=None):
        w, lam, nu = np.broadcast_arrays(*(np.atleast_2d(np.asarray(a, dtype=float))
                                           for a in (w, lam, nu)))
        present = w > 0
        self.const = 0.5 * np.sum(np.where(present, nu * np.log1p(np.where(present, w, 0.0))
                                           + lam * w / (1.0 + w), 0.0), axis=1)
        tol = _TAIL_RTOL * np.asarray(delta, dtype=float)
        self.B = GChiLaw(w, lam, nu, tol, max_terms)
        self.A = GChiLaw(w / (1.0 + w), lam / (1.0 + w), nu, tol, max_terms)

    def delta_upper(self, eps):
        """Upper bound on max(delta_AB(eps), delta_BA(eps)) per person."""
        eps = np.asarray(eps, dtype=float)
        t = 2.0 * (self.const - eps)  # L > eps: T < t
        a_cdf_hi = self.A.brackets(t)[1]
        b_cdf_lo = self.B.brackets(t)[0]
        s = 2.0 * (self.const + eps)  # L < -eps: T > s
        a_sf_lo = self.A.brackets(s)[2]
        b_sf_hi = self.B.brackets(s)[3]
        return np.maximum(a_cdf_hi - _times_exp(eps, b_cdf_lo),
                          b_sf_hi - _times_exp(eps, a_sf_lo))

    def epsilon(self, delta):
        """The smallest eps (rounded up) whose certified delta is at most
        ``delta``: ``nan`` where the series was not certified, ``inf``
        where no eps up to 2^20 meets it."""
        P = self.const.size
        lo, hi = np.zeros(P), np.ones(P)
        zero = self.delta_upper(lo) <= delta
        hi[zero] = 0.0
        search = ~zero
        for _ in range(21):
            over = search & ~(self.delta_upper(hi) <= delta)
            if not over.any():
                break
            lo[over], hi[over] = hi[over], 2.0 * hi[over]
        unreached = search & ~(self.delta_upper(hi) <= delta)
        search &= ~unreached
        while True:
            open_ = search & (hi - lo > self.eps_rtol * hi)
            if not open_.any():
                break
            mid = 0.5 * (lo + hi)
            below = self.delta_upper(mid) <= delta
            hi = np.where(open_ & below, mid, hi)
            lo = np.where(open_ & ~below, mid, lo)
        return np.where(self.A.ok & self.B.ok, np.where(unreached, np.inf, hi), np.nan)


def _times_exp(eps, p):
    """e^eps p, 0 where p = 0, at most e^700 (a smaller subtrahend: delta
    only grows)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(p > 0, np.exp(np.minimum(eps + np.log(p), 700.0)), 0.0)


def gchi_epsilon(delta, w, lam, nu, max_terms=None):
    """Certified epsilon at ``delta`` of the losses of :class:`GChiLoss`
    (module docstring): weights ``w`` (n_persons, m) of the change (<= 0:
    absent), noncentralities ``lam`` and degrees of freedom ``nu`` under the
    law B; ``nan`` for a person where neither method converges within its
    cap (the others certified all the same)."""
    return GChiLoss(w, lam, nu, delta, max_terms).epsilon(delta)

