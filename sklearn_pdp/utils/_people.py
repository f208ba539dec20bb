"""People with several records: their keys, the public cap on their
records, the sums of their scaled rows, each person's loss with its kind
(:class:`PersonLosses`), and group privacy at a given delta
(:doc:`/people`)."""

from typing import NamedTuple

import numpy as np
from sklearn.utils.validation import column_or_1d

from ._arrays import compute

# the kinds of a loss (``pdp_kind_``'s vocabulary), strongest first
KINDS = ("exact", "conditional", "bound")
# entries of the outer products formed at once when summing people's rows
_OUTER_ENTRIES = 2**20
# group privacy: the search for the per-record delta (halvings of log delta)
_GROUP_STEPS = 60


class PersonLosses(NamedTuple):
    """Each person's loss for removing (adding) all their rows together,
    with its kind: what a release's ``person_losses`` and a stage's
    ``group_losses`` return (:doc:`/people`).

    Attributes
    ----------
    losses : ndarray of shape (n_people,)
        Each person's epsilon at the release's delta; ``nan`` where the
        release cannot give it (a law not certified within its public cap):
        the fit then charges that person group privacy, a "bound".
    kinds : ndarray of str, shape (n_people,)
        Each loss's kind: "exact", "conditional" (exact given released
        quantities the person cannot influence) or "bound" (a valid upper
        bound).
    """

    losses: np.ndarray
    kinds: np.ndarray

    @classmethod
    def of(cls, losses, kind, bound=None):
        """``losses``, each of ``kind`` but "bound" where the mask ``bound`` is."""
        losses = np.asarray(losses, dtype=np.float64)
        kinds = person_kinds(losses.shape[0], kind)
        if bound is not None:
            kinds[np.asarray(bound, dtype=bool)] = "bound"
        return cls(losses, kinds)


def person_kinds(n_people, kind):
    """An array of ``n_people`` kinds, each ``kind`` (room for any of :data:`KINDS`)."""
    return np.full(n_people, kind, dtype=f"<U{max(map(len, KINDS))}")


def weakest_kind(kinds):
    """The weakest of ``kinds`` (of :data:`KINDS`): a whole fit's kind."""
    return KINDS[max(KINDS.index(kind) for kind in np.unique(kinds).tolist())]


def person_codes(groups, n_samples):
    """The distinct keys of ``groups`` (sorted as ``np.unique`` sorts them),
    each row's index into them and each person's number of rows."""
    groups = column_or_1d(compute(groups)[0], warn=True)
    if groups.shape[0] != n_samples:
        raise ValueError(
            f"groups must have one key per row of X: got {groups.shape[0]} keys for "
            f"{n_samples} rows.")
    ids, codes, counts = np.unique(groups, return_inverse=True, return_counts=True)
    return ids, codes.ravel(), counts


def first_records(codes, k):
    """Boolean mask of each person's first ``k`` rows in the order given:
    the public rule by which ``max_records`` drops the others."""
    order = np.argsort(codes, kind="stable")
    counts = np.bincount(codes)
    rank = np.empty(codes.size, dtype=np.intp)
    rank[order] = np.arange(codes.size) - np.repeat(np.cumsum(counts) - counts, counts)
    return rank < k


def person_sums(data, codes, n_people):
    """Each person's ``sum z z^T`` and ``sum y z`` over their scaled rows z
    (the constant feature last with an intercept; ``data`` a ``ScaledData``
    or ``DaskScaledData``), rows with a negative code left out. Memory:
    ``n_people`` d x d matrices and bounded blocks of outer products."""
    width = data.n_features
    step = max(1, _OUTER_ENTRIES // width**2)

    def part(start, Xs, ys):
        Z = np.asarray(Xs)
        own = codes[start:start + Z.shape[0]]
        gram, cross = np.zeros((n_people, width, width)), np.zeros((n_people, width))
        for lo in range(0, Z.shape[0], step):
            c = own[lo:lo + step]
            rows = np.flatnonzero(c >= 0)
            rows = rows[np.argsort(c[rows], kind="stable")]
            if not rows.size:
                continue
            z, c = Z[lo:lo + step][rows], c[rows]
            heads = np.flatnonzero(np.r_[True, c[1:] != c[:-1]])
            gram[c[heads]] += np.add.reduceat(z[:, :, None] * z[:, None, :], heads)
            if ys is not None:
                cross[c[heads]] += np.add.reduceat(z * ys[lo:lo + step][rows, None], heads)
        return gram, cross

    return data.reduce(part, combine=lambda a, b: (a[0] + b[0], a[1] + b[1]))


def group_epsilon(epsilon_at, size, delta):
    """Group privacy for a group of ``size`` records: ``(epsilon, delta)``.

    ``size`` times the per-record epsilon ``epsilon_at(d)`` at the largest
    ``d`` whose group delta ``size e^((size - 1) epsilon_at(d)) d`` is at
    most ``delta`` (bisection on log d, every candidate checked, so the
    result is valid whatever the shape of ``epsilon_at``). Where no smaller
    delta has a finite guarantee (``epsilon_at`` raises ``ValueError`` below
    ``delta``, or spends most of it elsewhere), ``size`` times the epsilon
    at ``delta`` with the group delta, stated.
    """
    at_delta = float(epsilon_at(delta))
    if size == 1:
        return at_delta, delta
    stated = (size * at_delta, min(size * np.exp((size - 1) * at_delta) * delta, 1.0))
    try:
        epsilon_at(0.5 * delta)
    except ValueError:
        return stated

    def fits(log_d):
        eps = float(epsilon_at(np.exp(log_d)))
        # a guarantee at a smaller delta is never smaller: anything else is
        # outside where epsilon_at holds
        ok = at_delta <= eps < np.inf and (
            np.log(size) + (size - 1) * eps + log_d <= np.log(delta))
        return ok, eps

    high = np.log(delta) - np.log(size)
    ok, eps = fits(high)
    if ok:
        return size * eps, delta
    low = high - 80.0
    ok, best = fits(low)
    if not ok:
        return stated
    for _ in range(_GROUP_STEPS):
        middle = 0.5 * (low + high)
        ok, eps = fits(middle)
        low, high, best = (middle, high, eps) if ok else (low, middle, best)
    return size * best, delta
