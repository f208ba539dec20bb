"""A fit with person keys (``groups``): each person's loss for the whole
release, and person-level privacy with a public cap on a person's records
(``max_records``; :doc:`/people`).

Each person's loss is that of removing all their rows together (adding
them, for :meth:`~._base.PrivateRegressorMixin.pdp_epsilon`): exact in
closed form where the stage's release has one (AdaSSP's noisy sufficient
statistics, the label mean: the change of the released sums is the sum of
the rows' changes, the eigenvalue's that of the scatter without the
rows; with tightened bounds, the joint loss of the part their key puts them
in, :class:`~sklearn_pdp.domain._split.SplitStage`), else group privacy at
the estimator's ``delta`` over the stage's guarantee
(:func:`~sklearn_pdp.utils._people.group_epsilon`), a bound.

With ``max_records=k``, rows beyond a person's first k (in the order given)
are dropped, and the budget covers a whole person: AdaSSP scales its noise
to k rows' change (every released sum moves by at most k rows' worth, and
the centred eigenvalue by at most k times a row's bound, a path of single
removals), with tightened bounds too (the rows split by person key, the
bounds' quantiles at rank sensitivity k with the whole epsilon,
:func:`~sklearn_pdp.domain._split.person_records`); every other fit is
calibrated per record at ``(epsilon / k, delta / (k e^((k - 1) epsilon /
k)))``, which group privacy turns into ``(epsilon, delta)`` per person.
"""

import numpy as np
from sklearn.base import clone

from ..utils._arrays import compute
from ..utils._people import (
    first_records, group_epsilon, person_codes, person_kinds, weakest_kind,
)


def resolve_units(estimator, groups, n_samples):
    """The fit's units of privacy: :class:`Records` without ``groups``,
    else their :class:`People`; ``max_records`` without ``groups`` is a
    parameter error."""
    cap = getattr(estimator, "max_records", None)
    if groups is None:
        if cap is not None:
            raise ValueError(
                f"max_records={cap} caps each person's records, so it needs to know "
                f"whose records they are: pass the person keys, "
                f"{type(estimator).__name__}(max_records={cap}).fit(X, y, groups=keys), "
                "or set max_records=None (a guarantee per record).")
        return Records()
    return People(estimator, groups, n_samples)


class Records:
    """Every row its own unit: the fit's rows, budget and losses unchanged.

    The interface a fit asks its units through (:class:`People` answers
    the same): ``keys``, the person key of each row kept (None here: a
    tightened fit splits rows by their own hash); ``rows(X, y)``, the rows
    kept; ``calibrated(estimator)``, the
    estimator whose budget the release is calibrated with;
    ``model_rows(stage)``, the mask over the rows given of those the model
    sees; ``guarantee(stage)``, ``(dp_epsilon_, dp_delta_)``; and
    ``attributes(stage, X, y, data, delta, guarantee)``, the fitted loss
    attributes (``pdp_losses_``, ``pdp_kind_`` and the person ones:
    ``person_pdp_kinds_`` each person's kind, ``person_pdp_kind_`` the
    weakest).
    """

    keys = None

    def rows(self, X, y):
        return X, y

    def calibrated(self, estimator):
        return estimator

    def model_rows(self, stage):
        return stage.model_rows

    def guarantee(self, stage):
        return stage.guarantee()

    def attributes(self, stage, X, y, data, delta, guarantee):
        return {"pdp_losses_": stage.row_losses(X, y, data=data), "pdp_kind_": stage.kind}


class People:
    """The person keys of one fit and how its budget covers people.

    Parameters
    ----------
    estimator : PrivateRegressorMixin
        The estimator being fitted (its parameters only).
    groups : array-like of shape (n_samples,)
        One person key per row.
    n_samples : int
        Number of rows given.
    """

    def __init__(self, estimator, groups, n_samples):
        self.ids, codes, counts = person_codes(groups, n_samples)
        self.given = counts  # each person's rows given, before the cap
        self.cap = getattr(estimator, "max_records", None)
        self.truncated = counts > self.cap if self.cap is not None else np.zeros_like(
            counts, dtype=bool)
        self.kept = first_records(codes, self.cap) if self.truncated.any() else None
        self.codes = codes if self.kept is None else codes[self.kept]
        self.keys = self.ids[self.codes]
        self.sizes = np.minimum(counts, self.cap) if self.cap is not None else counts
        self.n_samples = n_samples
        # the whole person's sensitivity in the release's own calibration
        # (with tightened bounds too: their release is sized for it,
        # :func:`~sklearn_pdp.domain._split.person_records`)
        self.exact_cap = self.cap is not None and self.cap > 1 and getattr(
            estimator, "_person_sensitivity", False)

    def model_rows(self, stage):
        """Boolean mask over the rows given of those the model sees: the
        kept rows in the ``stage``'s model part."""
        if self.kept is None:
            return stage.model_rows
        rows = self.kept.copy()
        rows[rows] = compute(stage.model_rows)[0]
        return rows

    def attributes(self, stage, X, y, data, delta, guarantee):
        """The fit's loss attributes: ``pdp_losses_`` for every row given
        and ``pdp_kind_``, and the person ones, from the kept rows ``X``,
        ``y`` (the model's scaled, ``data``), the estimator's ``delta`` and
        the fit's ``guarantee`` (``dp_epsilon_``)."""
        row_losses = stage.row_losses(X, y, data=data)
        losses, deltas, kinds = person_losses(
            stage, (X, y, self.keys, data), self.codes, self.sizes, row_losses, delta,
            guarantee=None if self.cap is None else guarantee)
        row_kind = stage.kind
        if self.cap is not None and self.cap > 1 and not self.exact_cap:
            # calibrated per record at a smaller delta: the losses hold at it,
            # upper bounds at the estimator's delta
            row_kind = "bound"
            kinds[:] = row_kind
        return {"pdp_losses_": self.record_losses(row_losses, stage, delta, guarantee),
                "pdp_kind_": row_kind, "person_ids_": self.ids, "person_losses_": losses,
                "person_deltas_": deltas, "person_pdp_kinds_": kinds,
                "person_pdp_kind_": weakest_kind(kinds), "_person_rows": self.given}

    def rows(self, X, y):
        """The rows the model sees (a person's first ``max_records``)."""
        if self.kept is None:
            return X, y
        return X[self.kept], y[self.kept]

    def calibrated(self, estimator):
        """The estimator whose budget the fit is calibrated with: itself,
        or with ``max_records`` by group privacy, at the per-record budget
        that ``max_records`` records turn into the estimator's."""
        k = self.cap
        if k is None or k == 1 or self.exact_cap:
            return estimator
        epsilon = getattr(estimator, "epsilon", None)
        if epsilon is None:
            raise ValueError(
                f"max_records needs an epsilon budget to calibrate a person's "
                f"{k} records to; this {type(estimator).__name__} has epsilon=None "
                "(a raw noise level).")
        if np.isposinf(epsilon):
            return estimator
        per_record = epsilon / k
        return clone(estimator).set_params(
            epsilon=per_record, delta=estimator.delta / (k * np.exp((k - 1) * per_record)),
            max_records=None)

    def guarantee(self, stage):
        """``(dp_epsilon_, dp_delta_)``: per person with ``max_records``."""
        epsilon, delta = stage.guarantee()
        k = self.cap
        if k is None or k == 1 or self.exact_cap:
            return epsilon, delta
        return k * epsilon, min(k * np.exp((k - 1) * epsilon) * delta, 1.0)

    def record_losses(self, losses, stage, delta, guarantee):
        """``pdp_losses_`` for every row given: 0 for a dropped row (removing
        it changes no row the model sees); for a kept row of a person with
        dropped rows, at least the loss of removing it, which lets their next
        row in (two rows' change: within the person guarantee from two
        records, else group privacy over two)."""
        if self.kept is None:
            return losses
        kept = np.asarray(compute(losses)[0], dtype=np.float64)
        swap = guarantee
        if self.cap == 1:
            swap, at = group_epsilon(lambda d: stage_epsilon(stage, d), 2, delta)
            swap = swap if at <= delta else np.inf
        out = np.zeros(self.n_samples)
        out[self.kept] = np.where(self.truncated[self.codes], np.maximum(kept, swap), kept)
        return out


def added_people(estimator, X, y, groups, row_losses):
    """:meth:`~._base.PrivateRegressorMixin.pdp_epsilon` with ``groups``:
    each person's loss for adding their rows ``X``, ``y`` (validated; with
    ``max_records``, their first ones) to the fitted ``estimator``'s data,
    given each row's own."""
    if y is None:
        raise ValueError("pdp_epsilon with groups needs the people's labels y.")
    _, codes, sizes = person_codes(groups, X.shape[0])
    kept = np.ones(codes.size, dtype=bool)
    if estimator.max_records is not None:  # the public rule applies to them too
        kept = first_records(codes, estimator.max_records)
        X, y, codes = X[kept], y[kept], codes[kept]
        row_losses = np.asarray(compute(row_losses)[0])[kept]
        sizes = np.minimum(sizes, estimator.max_records)
    return person_losses(estimator.domain_stage(), (X, y, np.asarray(groups)[kept], None),
                         codes, sizes, row_losses, estimator.delta, add=True)[0]


def stage_epsilon(stage, delta):
    """The stage's data-independent epsilon at ``delta`` (``inf`` without one)."""
    if not np.isfinite(stage.guarantee()[0]):
        return np.inf
    return stage.dp_epsilon(delta)


def person_losses(stage, rows, codes, sizes, row_losses, delta, add=False, guarantee=None):
    """Each person's loss for the ``rows`` ``(X, y, keys, data)`` (``keys``
    each row's person key, ``data`` the model's rows scaled or None;
    ``codes``: each row's person, ``sizes`` their numbers of rows), the delta it holds at
    (``delta`` but for group privacy over a guarantee that holds at its own
    delta alone) and its kind: a row's for one row; for several, the
    stage's where it has a closed form or a certified value for the person
    (``group_losses``: a :class:`~sklearn_pdp.utils._people.PersonLosses`),
    else a "bound", group privacy over the stage's guarantee for a removal
    and ``inf`` for an addition (the stage's cap holds for a record added
    to the ``n`` rows, not to ``n`` plus others)."""
    row_losses = np.asarray(compute(row_losses)[0], dtype=np.float64)
    out, deltas = np.empty(sizes.size), np.full(sizes.size, float(delta))
    kinds = person_kinds(sizes.size, stage.kind)
    single = sizes == 1
    out[codes[single[codes]]] = row_losses[single[codes]]
    multi = np.flatnonzero(~single)
    if multi.size:
        index = np.full(sizes.size, -1)
        index[multi] = np.arange(multi.size)
        X, y, keys, data = rows
        joint = stage.group_losses(X, y, index[codes], sizes[multi], add=add, data=data,
                                   keys=keys)
        out[multi] = np.nan if joint is None else joint.losses
        if joint is not None:
            kinds[multi] = joint.kinds
        missing = multi[np.isnan(out[multi])]
        if missing.size:  # not certified for them: group privacy, a bound
            kinds[missing] = "bound"
            for m in np.unique(sizes[missing]):
                these = missing[sizes[missing] == m]
                out[these], deltas[these] = np.inf, delta
                if not add:
                    try:
                        out[these], deltas[these] = group_epsilon(
                            lambda d: stage_epsilon(stage, d), int(m), delta)
                    except ValueError:  # a guarantee calibrated at another delta alone
                        pass
    if guarantee is not None and not add:
        out = np.minimum(out, guarantee)
    return out, deltas, kinds
