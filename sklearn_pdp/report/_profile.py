"""Per-row privacy-loss profiles of a release, and their composition per
person across releases (:doc:`/ledger`).

A :class:`PrivacyProfile` says, for every row of a release, what the release
costs that row in a form that composes:

- ``"gaussian"``: the row's loss is exactly that of the Gaussian mechanism
  with ratio ``s`` (l2 change over noise, in the noise's metric); releases
  that are Gaussian for a person compose to one Gaussian mechanism with
  ``sqrt(s_1^2 + ... + s_K^2)`` (the outputs' densities multiply; SPEC 11);
- ``"laplace"``: the loss of the Laplace mechanism at ratio ``t`` (change
  over scale), pure ``t``-DP and ``max(0, t + 2 log(1 - delta))`` at delta;
- ``"epsilon_delta"``: only an epsilon at the release's delta is known (0
  for pure DP); these compose by basic composition (epsilons and deltas
  add), a valid upper bound whatever the mechanisms.

:func:`compose` turns a person's charges into one epsilon at a delta: exact
where all of them are Gaussian, otherwise the smaller of two valid bounds,
basic composition of the per-release losses and a split that keeps the
Gaussian part exact, so never above basic composition.
"""

import numpy as np
from scipy.special import erfinv, ndtri

from ..accounting import gaussian_delta, gaussian_epsilon, laplace_epsilon

FAMILIES = ("gaussian", "laplace", "epsilon_delta")

# A recovered ratio is raised by this relative margin plus _CANCELLATION /
# delta, what the Gaussian delta loses to cancellation (:doc:`/ledger`).
_RATIO_MARGIN = 1e-12
_CANCELLATION = 32 * np.finfo(float).eps
# Bisection steps on log s: the bracket is at most a factor 2 wide, so 60
# steps leave a relative width of about 2^-60 = 9e-19 (below rounding).
_BISECTION_STEPS = 60
# Sums of deltas are compared with this relative slack (float rounding of
# a sum of a few deltas, never a real allowance).
_DELTA_SLACK = 1e-12


class PrivacyProfile:
    """What one release costs each of its rows, in a form that composes.

    Returned by the estimators' ``privacy_profile`` (see
    :meth:`~sklearn_pdp.AdaSSPRegressor.privacy_profile`) and read by
    :class:`~sklearn_pdp.PrivacyLedger`.

    Parameters
    ----------
    family : {"gaussian", "laplace", "epsilon_delta"}
        The family of every row's privacy loss (module docstring).
    values : ndarray of shape (n_rows,)
        Per row: the Gaussian ratio ``s``, the Laplace ratio ``t``, or the
        epsilon at ``delta`` (``inf`` where none is finite). An upper bound
        of the exact value: a larger parameter is a less private mechanism.
    delta : float
        The release's delta: that of the epsilons for ``"epsilon_delta"``
        (0 for pure DP), the one the release was calibrated at otherwise.
    guarantee : float
        The family's parameter of the release's data-independent guarantee
        for a training row (the worst ``s`` or ``t`` over the domain, or
        ``dp_epsilon_`` for ``"epsilon_delta"``, at ``guarantee_delta``).
    guarantee_delta : float
        The delta of ``guarantee`` for ``"epsilon_delta"`` (else ``delta``).
    n_samples : int
        The public size of the release's data set.
    mechanism : str
        Name of the estimator that made the release.
    own_record : bool, default=False
        Whether ``values`` are functions of each row's own record and public
        quantities alone (the label mean's Laplace ratio ``|y| / b``); where
        they are not (leverages, residuals), an individual filter must use
        ``guarantee`` instead.
    step : callable or None, default=None
        ``step(size)``: the family's parameter bounding the loss of adding
        one record to any data set in the domain that has ``size`` rows
        once the record is in, with this release's noise (an epsilon at
        ``guarantee_delta`` for ``"epsilon_delta"``). It charges people
        absent from the release (``size = n_samples + 1``) and the extra
        rows of a person with several rows (sizes below ``n_samples``);
        :meth:`step_bound` takes its largest value over a range of sizes.
        None: no such bound is known (those people are charged ``inf``).
    losses : ndarray of shape (n_rows,), default=None
        Each row's epsilon at ``delta`` as the release reported it (its
        ``pdp_losses_``); None computes it from ``values``.
    """

    def __init__(self, family, values, *, delta, guarantee, guarantee_delta=None,
                 n_samples, mechanism, own_record=False, step=None, losses=None):
        if family not in FAMILIES:
            raise ValueError(f"family must be one of {FAMILIES}; got {family!r}.")
        self.family = family
        self.values = np.asarray(values, dtype=np.float64).ravel()
        self.delta = float(delta)
        self.guarantee = float(guarantee)
        self.guarantee_delta = self.delta if guarantee_delta is None else float(guarantee_delta)
        self.n_samples = int(n_samples)
        self.mechanism = str(mechanism)
        self.own_record = bool(own_record)
        self.step = step
        self.losses = self.epsilon() if losses is None else np.asarray(losses, float).ravel()

    @classmethod
    def from_losses(cls, family, losses, delta, **kwargs):
        """The profile of per-row epsilons ``losses`` at ``delta`` of a
        release of ``family``: each Gaussian or Laplace ratio is the largest
        whose epsilon at ``delta`` is at most the loss (an upper bound of the
        row's exact ratio, since the losses are upper bounds of the exact
        epsilons and the epsilon grows with the ratio)."""
        losses = np.asarray(losses, dtype=np.float64).ravel()
        if family == "gaussian":
            values = gaussian_ratio(losses, delta)
        elif family == "laplace":
            values = laplace_ratio(losses, delta)
        else:
            values = losses
        return cls(family, values, delta=delta, losses=losses, **kwargs)

    def step_bound(self, low, high):
        """Largest :attr:`step` over the sizes ``low`` to ``high`` (``inf``
        without ``step``, 0 for an empty range)."""
        if high < low:
            return 0.0
        if self.step is None:
            return np.inf
        return float(max(self.step(size) for size in range(max(low, 1), high + 1)))

    def epsilon(self, delta=None):
        """Each row's epsilon at ``delta`` (default: the release's); for
        ``"epsilon_delta"`` ``inf`` below the release's delta."""
        delta = self.delta if delta is None else float(delta)
        return family_epsilon(self.family, self.values, delta, self.delta)


def family_epsilon(family, values, delta, own_delta=0.0):
    """Epsilon at ``delta`` of one release of ``family`` with parameters
    ``values`` (``own_delta``: the delta of an ``"epsilon_delta"`` value)."""
    values = np.asarray(values, dtype=np.float64)
    if family == "gaussian":
        if delta <= 0:
            return np.where(values > 0, np.inf, 0.0)
        return np.asarray(gaussian_epsilon(delta, values))
    if family == "laplace":
        return np.asarray(laplace_epsilon(min(delta, 1.0), values))
    return np.where(np.asarray(own_delta) <= delta * (1 + _DELTA_SLACK), values, np.inf)


def gaussian_ratio(epsilon, delta):
    """Largest Gaussian ratio ``s`` whose epsilon at ``delta`` is at most
    ``epsilon`` (element-wise): delta(epsilon; s) = delta, solved on log s.

    ``inf`` for an infinite epsilon; for 0 the ratio below which the
    epsilon is 0, ``sqrt(8) erfinv(delta)``. Raised by a relative margin
    above the rounding of delta(eps; s) (about 7e-9 at delta = 1e-6), so
    that it is never below the root.
    """
    eps = np.asarray(epsilon, dtype=np.float64)
    shape, eps = eps.shape, eps.ravel()
    s0 = np.sqrt(8.0) * erfinv(delta)
    out = np.full(eps.shape, np.inf)
    todo = np.isfinite(eps)
    out[todo & (eps <= 0)] = s0
    todo &= eps > 0
    e = eps[todo]
    if e.size:
        # delta(eps; s) grows with s. At the ratio where eps = z s + s^2/2
        # (z the normal quantile of 1 - delta), which overstates the
        # epsilon of s, delta(eps; s) <= delta: a lower end of the bracket
        z = -ndtri(delta)
        lo = np.maximum(-z + np.sqrt(z * z + 2.0 * e), s0)
        hi = 2.0 * lo
        grow = gaussian_delta(e, hi) <= delta
        while np.any(grow):
            lo[grow], hi[grow] = hi[grow], 2.0 * hi[grow]
            grow[grow] = gaussian_delta(e[grow], hi[grow]) <= delta
        # invariant: delta(lo) <= delta < delta(hi)
        for _ in range(_BISECTION_STEPS):
            mid = np.sqrt(lo * hi)
            above = gaussian_delta(e, mid) > delta
            hi = np.where(above, mid, hi)
            lo = np.where(above, lo, mid)
        out[todo] = hi * (1.0 + _RATIO_MARGIN + _CANCELLATION / delta)
    return out.reshape(shape)


def laplace_ratio(epsilon, delta):
    """Largest Laplace ratio ``t`` whose epsilon at ``delta`` is at most
    ``epsilon``: ``epsilon - 2 log(1 - delta)`` (closed form, rounded up)."""
    eps = np.asarray(epsilon, dtype=np.float64)
    return (eps - 2.0 * np.log1p(-delta)) * (1.0 + 16 * np.finfo(float).eps)


def chain(first, steps):
    """(epsilon, delta) of a pair of data sets joined by a path of neighbours:
    ``first`` then each of ``steps`` (group privacy). Both directions: P(A)
    <= e^e1 (e^e2 R(A) + d2) + d1 and the reverse."""
    eps, delta = first
    for e2, d2 in steps:
        delta = max(delta + np.exp(eps) * d2, d2 + np.exp(e2) * delta)
        eps = eps + e2
        if not np.isfinite(eps):
            return np.inf, min(delta, 1.0)
    return eps, min(delta, 1.0)


def compose(delta, person, family, value, epsilon, own_delta, n_people):
    """Each person's total epsilon at ``delta`` over their charges.

    One charge per (release, person): ``person`` (index into the result),
    the release's ``family``, the charge's ``value`` (ratio or epsilon), its
    ``epsilon`` at its release's delta ``own_delta``. Returns the smaller
    of two valid bounds (``inf`` when neither holds at ``delta``):

    - basic composition of the charges' epsilons, valid when ``delta`` is at
      least the sum of their deltas;
    - the Gaussian charges composed exactly (``sqrt(sum s^2)``) at what is
      left of ``delta`` once the ``"epsilon_delta"`` charges' deltas are
      taken, plus the Laplace charges' pure ``t`` (at the whole remaining
      delta where a single Laplace charge is alone) and the epsilons.
    """
    person = np.asarray(person, dtype=np.intp)
    family = np.asarray(family)
    value = np.asarray(value, dtype=np.float64)

    def total(weights):
        return np.bincount(person, weights=weights, minlength=n_people)

    def count(mask):
        return np.bincount(person[mask], minlength=n_people)

    gauss, lap, fixed = (family == name for name in FAMILIES)
    basic = total(np.asarray(epsilon, float))
    basic_delta = total(np.asarray(own_delta, float))
    with np.errstate(invalid="ignore"):
        basic = np.where(basic_delta <= delta * (1 + _DELTA_SLACK), basic, np.inf)

    fixed_eps = total(np.where(fixed, value, 0.0))
    left = delta - total(np.where(fixed, own_delta, 0.0))
    left = np.where(np.abs(left) <= _DELTA_SLACK * delta, 0.0, left)
    ratio2 = total(np.where(gauss, value, 0.0) ** 2)
    lap_sum, n_lap, n_gauss = total(np.where(lap, value, 0.0)), count(lap), count(gauss)
    split = fixed_eps + lap_sum
    has_gauss = n_gauss > 0
    ok = left >= 0
    # the Gaussian part takes all the delta left (the Laplace ones their pure t)
    g = ok & has_gauss
    if np.any(g):
        split[g] += _gaussian_at(left[g], np.sqrt(ratio2[g]))
    # a single Laplace charge without Gaussian ones: its exact epsilon at the rest
    one = ok & ~has_gauss & (n_lap == 1)
    if np.any(one):
        split[one] += laplace_epsilon(np.minimum(left[one], 1.0), lap_sum[one]) - lap_sum[one]
    split = np.where(ok, split, np.inf)
    return np.minimum(basic, split)


def _gaussian_at(delta, ratio):
    """Gaussian epsilon at per-person deltas (``inf`` at delta 0 for s > 0)."""
    out = np.where(ratio > 0, np.inf, 0.0)
    pos = delta > 0
    if np.any(pos):
        out[pos] = gaussian_epsilon(np.minimum(delta[pos], 1.0), ratio[pos])
    return out
