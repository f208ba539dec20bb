"""What the private search computes besides fitting: the part sizes it is
charged for, the selection's scores and per-record bound, and the helpers
that run and record the candidates' fits.

The derivations are in :doc:`/mechanisms/tuning`.
"""

import re
import warnings

import numpy as np
from scipy import stats

from ..domain._scaler import label_range

# One validation record adds at most (2 B)^2 to a candidate's summed squared
# error when predictions and labels are clipped to [-B, B]; in units of B^2: 4.
SENSITIVITY = 4.0
# Share of ``delta`` for the event that every training part's size lies in the
# range over which the candidates' guarantees are bounded; the candidates get
# the rest.
SIZE_SHARE = 0.5
# Smallest training part the guarantee admits: a part and the same part
# without one record must both be non-empty.
MIN_PART = 2


def part_size_range(n_samples, n_candidates, failure, n_people=None):
    """Range ``[low, high]`` holding the size of every training part, except
    with probability at most ``failure``.

    Each of the m training parts gets Binomial(n, 1 / (m + 1)) records; the
    bound is a union over the m parts and the two tails (``failure / (2 m)``
    each), from the exact binomial quantiles. Split by person (``n_people``
    of them), the part's people are Binomial(P, 1 / (m + 1)): it holds at
    least one record per person, at most ``n - P`` records more.
    """
    units = n_samples if n_people is None else n_people
    sizes = stats.binom(units, 1.0 / (n_candidates + 1))
    tail = failure / (2 * n_candidates)
    low, high = int(sizes.ppf(tail)), int(sizes.isf(tail))
    return (low, high) if n_people is None else (low, n_samples - n_people + high)


def training_guarantee(estimators, n_samples, n_features, failure, n_people=None):
    """(epsilon, delta) bounding every candidate over its possible part sizes.

    The guarantee of candidate k holds for the size of its part;
    ``dp_guarantee`` over the sizes of :func:`part_size_range` bounds every
    size in the range, and the range's failure probability ``failure`` is
    added to delta (``n_people``: the parts split by person). It raises,
    before any private fit, the error of an estimator that refuses such
    small parts.
    """
    m = len(estimators)
    low, high = part_size_range(n_samples, m, failure, n_people)
    if low < MIN_PART:
        raise ValueError(
            f"The parts are too small for the grid: {n_samples} samples "
            f"split into {m + 1} parts ({m} candidates and a validation "
            f"part) give {n_samples / (m + 1):.3g} samples per part on "
            f"average, and the guarantee needs every training part to hold "
            f"at least {MIN_PART} except with probability {failure:.3g} "
            "(a share of delta); use more samples or fewer candidates."
        )
    bounds = [est.dp_guarantee(high, n_features, low) for est in estimators]
    return (
        max(eps for eps, _ in bounds),
        max(delta for _, delta in bounds) + failure,
    )


def selection_epsilon(epsilon, y, y_bound):
    """Per-record bound on the selection's pure loss, whatever the candidates.

    With the label range [low, high] of ``y_bound`` (midpoint m, half-width
    h), a record adds at most ``(1 + |y - m| / h)^2`` (clipped predictions,
    in units of ``h**2``) to each score, so its loss is at most ``epsilon``
    times that over :data:`SENSITIVITY`; ``y`` None is the worst label.
    """
    if y is None:
        return float(epsilon)
    low, high = label_range(y_bound)
    magnitude = np.minimum(np.abs(y - (low + high) / 2) / ((high - low) / 2), 1.0)
    return epsilon * (1.0 + magnitude) ** 2 / SENSITIVITY


def label_reach(y, y_bound, released=False):
    """Each record's largest validation loss ``(1 + |y - m| / h)^2`` in units
    of ``h**2`` (:func:`selection_epsilon` times :data:`SENSITIVITY` over
    epsilon); :data:`SENSITIVITY` for every record where the label range
    was released (the scaled label depends on the draw)."""
    if released:
        return np.full(np.shape(y), SENSITIVITY)
    return selection_epsilon(SENSITIVITY, y, y_bound)


def person_selection_bounds(epsilon, reach, codes, n_people):
    """The selection's bounds when it scores people (their records' mean
    loss): each record's and each person's.

    A person's mean lies in ``[0, max reach]``, and adding them adds it to
    every score: ``epsilon * max reach / SENSITIVITY``. Removing one record
    ``j`` of a person with ``m`` records moves every score by
    ``(mean of the others - loss_j) / m``, in ``[-reach_j / m, A_j / m]``
    with ``A_j`` the largest reach of the others (0 alone): the exponential
    mechanism's loss is at most ``epsilon (A_j + reach_j) / (m SENSITIVITY)``,
    at most ``epsilon``.
    """
    sizes = np.bincount(codes, minlength=n_people)
    order = np.lexsort((-reach, codes))  # each person's records, largest reach first
    first = np.ones(codes.size, dtype=bool)
    first[1:] = codes[order[1:]] != codes[order[:-1]]
    top = np.zeros(n_people)
    top[codes[order[first]]] = reach[order[first]]
    second = np.zeros(n_people)
    after = np.flatnonzero(first[:-1] & ~first[1:]) + 1  # second of a person
    second[codes[order[after]]] = reach[order[after]]
    is_top = np.zeros(codes.size, dtype=bool)
    is_top[order[first]] = True
    others = np.where(is_top, second[codes], top[codes])
    records = epsilon * (others + reach) / (sizes[codes] * SENSITIVITY)
    return records, epsilon * top / SENSITIVITY


def public_person_selection(epsilon, reach):
    """A record's selection bound from its label alone, whoever it shares a
    person with: :func:`person_selection_bounds` at its largest,
    ``epsilon (SENSITIVITY + reach) / (2 SENSITIVITY)`` (two records), which
    covers a person's only record's ``epsilon reach / SENSITIVITY``."""
    return epsilon * (SENSITIVITY + reach) / (2 * SENSITIVITY)


def validation_losses(estimator, X, y, y_bound):
    """Each record's squared error of clipped predictions, in units of h**2.

    Rows are first moved into the estimator's declared bounds, as its
    training rows were (a record far outside the domain is scored as the
    record the model would have been trained on). Predictions and labels are
    both clipped to the label range [low, high] of ``y_bound`` (half-width
    h), so every value lies in [0, :data:`SENSITIVITY`] whatever the model
    (noisy coefficients leave any bounded set, erratum E7 in :doc:`/errata`).
    """
    low, high = label_range(y_bound)
    pred = np.clip(estimator.predict(estimator.domain_scaler().clip(X)), low, high)
    return ((pred - np.clip(y, low, high)) / ((high - low) / 2)) ** 2


# A number in a warning: the candidates' warnings differ by them only
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?")


def fit_recording_warnings(estimator, X, y, groups=None):
    """Fit ``estimator`` (with the rows' person keys ``groups``, if any);
    return it with the warnings its fit raised, as (category, message)
    pairs: the search emits each distinct one once (:func:`emit_warnings`)
    instead of once per candidate."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        estimator.fit(X, y, **({} if groups is None else {"groups": groups}))
    return estimator, [(w.category, str(w.message)) for w in caught]


def emit_warnings(records, n_fits, stacklevel):
    """Emit the candidates' warnings once per kind, in the order first
    raised: a kind is a category and a message up to its numbers (the parts'
    sizes differ), shown by its first message with the number of fits that
    raised it. The user's filters apply to the emitted warnings as usual."""
    kinds = {}
    for category, message in records:
        kind = kinds.setdefault((category, _NUMBER.sub("#", message)), [message, 0, set()])
        kind[1] += 1
        kind[2].add(message)
    for (category, _), (message, count, variants) in kinds.items():
        note = (f"; {len(variants)} variants with other numbers, the first shown"
                if len(variants) > 1 else "")
        warnings.warn(f"{message} ({count} of {n_fits} candidate fits of the search{note})",
                      category, stacklevel=stacklevel + 1)


def seeded_random_state(seed_sequence):
    """A ``random_state`` for an estimator from a 256-bit seed (ints hold 32)."""
    return np.random.RandomState(np.random.MT19937(seed_sequence))


def params_table(grid):
    """``cv_results_`` without any score: the parameter columns only."""
    results = {"params": grid}
    for name in sorted({key for params in grid for key in params}):
        column = np.ma.MaskedArray(np.empty(len(grid), dtype=object), mask=True)
        for k, params in enumerate(grid):
            if name in params:
                column[k] = params[name]
        results[f"param_{name}"] = column
    return results
