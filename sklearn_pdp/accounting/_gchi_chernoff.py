"""A valid epsilon of the generalised chi-square loss of :mod:`._gchi` in
closed form: Chernoff's bound on the hockey-stick divergence, no series.

With the loss L = log dA/dB = C - T / 2 of :mod:`._gchi` (T a positive-
weight generalised chi-square under both laws) and the moment-generating
function of a noncentral chi-square,
E[e^(u chi2_nu(lam))] = (1 - 2u)^(-nu/2) e^(lam u / (1 - 2u)) (u < 1/2):

    log E_A[e^(s L)] = s C + K_A(s),   s > 0,
    K_A(s) = -sum nu_j log(1 + s a_j) / 2 - sum lam'_j s a_j / (2 (1 + s a_j)),

(a_j = w_j / (1 + w_j), lam'_j = lam_j / (1 + w_j): T's law under A), and

    log E_B[e^(-s L)] = -s C + K_B(s),   0 < s < 1 / max w,
    K_B(s) = -sum nu_j log(1 - s w_j) / 2 + sum lam_j s w_j / (2 (1 - s w_j)).

The hockey-stick divergence is delta_AB(eps) = E_A[(1 - e^(eps - L))_+],
and (1 - e^-x)_+ <= h(s) e^(s x) for every x and s > 0, with
h(s) = max_x (1 - e^-x) e^(-s x) = s^s / (1 + s)^(1 + s) (at e^-x =
s / (1 + s)). So log delta_AB(eps) <= s (C - eps) + K_A(s) + log h(s), and
likewise log delta_BA(eps) <= -s (C + eps) + K_B(s) + log h(s): for every
s on a grid,

    eps = C + (K_A(s) + log h(s) + log(1 / delta)) / s,
    eps = -C + (K_B(s) + log h(s) + log(1 / delta)) / s

bound the two directions at delta, and the larger of their minima over the
grids (at least 0) is a valid epsilon. Against the certified epsilon of
:func:`~._gchi.gchi_epsilon` it is 8 to 30% larger on the persons of
One Posterior Sample fits (the loss is then nearly Gaussian, where
Chernoff's bound is off by about that much at delta = 1e-5).
"""

import numpy as np

# Each minimum over s: a grid of this many points on a log scale, then as
# many again between the best point's neighbours (any s is valid: a coarse
# minimum is only a slightly larger epsilon).
_GRID = 32
# The log10 ranges of s max a (law A) and of 1 - s max w (law B, below its pole).
_RANGE_A = (-3.0, 7.0)
_RANGE_B = (-6.0, -1e-6)


def chernoff_epsilon(delta, w, lam, nu):
    """Valid epsilon at ``delta`` of the losses of :class:`~._gchi.GChiLoss`
    (weights ``w`` (n, m), <= 0 absent, an infinite one an infinite loss;
    noncentralities ``lam`` and degrees of freedom ``nu`` under B) by
    Chernoff's bound (module docstring)."""
    w, lam, nu = np.broadcast_arrays(*(np.atleast_2d(np.asarray(x, dtype=float))
                                       for x in (w, lam, nu)))
    infinite = ~np.isfinite(w).all(axis=1)
    present = (w > 0) & ~infinite[:, None]
    none = ~present.any(axis=1)  # no change: no loss
    w = np.where(present, w, 0.0)
    lam, nu = np.where(present, lam, 0.0), np.where(present, nu, 0.0)
    const = 0.5 * np.sum(nu * np.log1p(w) + lam * w / (1.0 + w), axis=1)
    log_inv = -np.log(delta)
    a = w / (1.0 + w)
    lam_a = lam / (1.0 + w)

    def bound_a(t):  # s = 10^t / max a
        s = 10.0**t / np.where(none, 1.0, a.max(axis=1))[:, None]
        sa = s[:, :, None] * a[:, None, :]
        k = np.sum(-0.5 * nu[:, None] * np.log1p(sa) - 0.5 * lam_a[:, None] * sa / (1.0 + sa),
                   axis=2)
        return (k + _log_hinge(s) + log_inv) / s

    def bound_b(t):  # s = (1 - 10^t) / max w
        s = -np.expm1(t * np.log(10.0)) / np.where(none, 1.0, w.max(axis=1))[:, None]
        sw = s[:, :, None] * w[:, None, :]
        k = np.sum(-0.5 * nu[:, None] * np.log1p(-sw) + 0.5 * lam[:, None] * sw / (1.0 - sw),
                   axis=2)
        return (k + _log_hinge(s) + log_inv) / s

    eps_a = const + _grid_min(bound_a, _RANGE_A, w.shape[0])
    eps_b = -const + _grid_min(bound_b, _RANGE_B, w.shape[0])
    out = np.maximum(np.maximum(eps_a, eps_b), 0.0)
    return np.where(infinite, np.inf, np.where(none, 0.0, out))


def _grid_min(f, bounds, rows):
    """min over t in ``bounds`` of ``f(t)`` (t of shape (rows, points)) on
    a grid, refined between the best point's neighbours."""
    t = np.broadcast_to(np.linspace(*bounds, _GRID), (rows, _GRID))
    values = f(t)
    best = np.argmin(values, axis=1)
    step = (bounds[1] - bounds[0]) / (_GRID - 1)
    centre = t[np.arange(rows), best][:, None]
    fine = np.clip(centre + np.linspace(-step, step, _GRID), *bounds)
    return np.minimum(values.min(axis=1), f(fine).min(axis=1))


def _log_hinge(s):
    """log h(s) = log(s^s / (1 + s)^(1 + s)) of the module docstring."""
    return s * np.log(s) - (1.0 + s) * np.log1p(s)
