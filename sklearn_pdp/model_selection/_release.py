"""The private search's release: the selection, the part fits, the refit's
fits and the tightened bounds, as one :class:`~sklearn_pdp.mechanisms._release.Release`
that gives the guarantee, every record's loss both ways and, without refit,
the law of a published report (:doc:`/mechanisms/tuning`, :doc:`/publish`).
"""

from functools import reduce

import numpy as np

from ..domain._stage import charged_loss
from ..mechanisms._release import Release
from ._selection import (
    SIZE_SHARE,
    label_reach,
    person_selection_bounds,
    public_person_selection,
    selection_epsilon,
    training_guarantee,
)


class SearchRelease(Release):
    """What :class:`~sklearn_pdp.model_selection.PrivateGridSearchCV` releases,
    and what it costs each record.

    Its stages compose sequentially: the bounds' release (with tightening),
    the search (each record in one training part or in the validation part:
    the larger of the candidates' guarantee over the part sizes and the
    record's selection bound) and the fits on all the data (the refit, or
    every candidate when the choice was made without data; the largest of
    their losses, since only the selected index is released).

    Unlike a mechanism's release, its rows are in the search's own units
    (the candidates scale them, each with its own domain): :meth:`losses`
    takes the rows the search was given, and with ``add=False`` its
    training data itself, in order (the fits on all the data charge their
    own ``pdp_losses_``).

    Without refit and tightening, a record's loss at ``delta`` is
    ``max(G, selection * (1 + |y|)^2 / 4)`` with ``y`` its scaled label and
    ``G`` the candidates' guarantee over the part sizes: a public function
    of the label, so a published bound needs no high-probability step and
    no Gram matrix (``needs_gram``). The published bound takes the larger
    of ``G`` at ``n`` records (a training record's) and at ``n + 1`` (a
    person added): it holds for both. It needs no coefficients (``coef``
    is empty).

    Parameters
    ----------
    scaler : DomainScaler
        The selected model's domain (the scaled labels of the law).
    n_samples, n_features : int
        The size of the search's data.
    n_people : int or None
        Its number of people, where the parts split by person.
    selection : float
        The exponential mechanism's epsilon (0: chosen without data).
    size_failure : float
        The probability that a training part's size leaves the range that
        the candidates' guarantee covers.
    part_guarantee : tuple or None
        The candidates' ``(epsilon, delta)`` over the part sizes at
        ``n_samples`` (None: no part fits).
    part_fits, full_fits : list of estimators
        The candidates fitted on their parts, and on all the data.
    y_bound : float or tuple
        The label bound the selection scores with.
    bounds_release : BoundsRelease or None
        The tightened bounds' release.
    X : ndarray of shape (n_samples, n_features)
        The search's data (for the refits' bounds under tightening).
    person_codes : ndarray of shape (n_samples,) or None
        Each row's person where the selection scores people (their mean
        loss, with ``max_records``), else None.
    person_records : int or None
        ``max_records``: a person added brings up to that many records.
    """

    needs_gram = False
    _private = ("part_fits", "full_fits", "box_rows", "bounds_release", "person_codes")

    def __init__(self, *, scaler, n_samples, n_features, selection, size_failure,
                 part_guarantee, part_fits, full_fits, y_bound, bounds_release, X,
                 n_people=None, person_codes=None, person_records=None):
        self.selection = float(selection)
        self.part_fits, self.full_fits = list(part_fits), list(full_fits)
        self.bounds_release = bounds_release
        self.tightened = bounds_release is not None
        self.box_rows = ([est.domain_stage().box_rows(bounds_release, X) for est in full_fits]
                         if self.tightened and full_fits else None)
        self.n_features = int(n_features)
        self.n_people = n_people
        self.person_codes, self.person_records = person_codes, person_records
        self.part_size_failure = float(size_failure)
        self.y_bound = y_bound
        # the scaled label decides the selection bound unless its range was released
        self.label_released = self.tightened and "y" in bounds_release.source
        self.part_epsilon = None if part_guarantee is None else float(part_guarantee[0])
        self._added_part_epsilon = None
        super().__init__(scaler=scaler, n_samples=n_samples, coef=np.empty(0),
                         delta=0.0, guarantee=self._compose_guarantee(part_guarantee))
        self.delta = self.guarantee[1]

    @classmethod
    def from_budget(cls, epsilon, delta, data, *, scaler, **params):
        raise NotImplementedError(
            "A search's release is made by PrivateGridSearchCV.fit from its "
            "fits, with the budget split by SearchRelease.split_budget.")

    @staticmethod
    def split_budget(epsilon, delta, refit_share=None):
        """``(epsilon, delta)`` of the search (selection and candidates)
        and of the refit (None without one, ``refit_share`` None): the
        refit gets ``refit_share`` of the budget (the total less the bounds'
        release)."""
        if refit_share is None:
            return (epsilon, delta), None
        return ((1 - refit_share) * epsilon, (1 - refit_share) * delta), (
            refit_share * epsilon, refit_share * delta)

    @staticmethod
    def size_failure(search_delta):
        """The probability that a training part's size leaves the range
        the candidates' guarantee covers: ``SIZE_SHARE`` of the search's
        delta; the candidates get the rest."""
        return SIZE_SHARE * search_delta

    def draw(self, rng, size=None):
        raise NotImplementedError(
            "A new draw of a search is a new search (new parts, new candidate "
            "fits, a new selection and refit): fit PrivateGridSearchCV again "
            "with another random_state.")

    def _compose_guarantee(self, part_guarantee):
        """``(epsilon, delta)`` of the stages: the fits on all the data, the
        search, then the bounds' release."""
        epsilon = delta = None
        if self.full_fits:
            epsilon = max(est.dp_epsilon_ for est in self.full_fits)
            delta = max(est.dp_delta_ for est in self.full_fits)
        if part_guarantee is not None:
            # A record's part and the candidates' noise are not released: by
            # joint convexity over the part, its loss is at most the largest
            # of the candidates' guarantees and its selection bound.
            search = max(self.selection, part_guarantee[0]), part_guarantee[1]
            epsilon = search[0] if epsilon is None else epsilon + search[0]
            delta = search[1] if delta is None else delta + search[1]
        if self.tightened:
            epsilon += self.bounds_release.epsilon
            delta += self.bounds_release.event_
        return epsilon, delta

    def added_part_epsilon(self):
        """The candidates' guarantee over the part sizes of ``n + 1`` records
        (a person added, with people one more person), computed once."""
        if self._added_part_epsilon is None:
            # (a search pickled before people were kept has none)
            people = getattr(self, "n_people", None)
            people = None if people is None else people + 1
            records = getattr(self, "person_records", None) or 1
            self._added_part_epsilon = float(training_guarantee(
                self.part_fits, self.n_samples + records, self.n_features,
                self.part_size_failure, people)[0])
        return self._added_part_epsilon

    def _selection_bound(self, y, n_rows, add=False):
        """Each record's selection bound: :func:`selection_epsilon`, or for
        a training record where the selection scores people, that of
        :func:`person_selection_bounds` (a record added is a person added).
        With a released label range the scaled label depends on the draw:
        the worst label's, valid for every release."""
        codes = getattr(self, "person_codes", None)
        if codes is not None and not add:
            return person_selection_bounds(self.selection, self._reach(y, n_rows), codes,
                                           self.n_people)[0]
        if y is None or self.label_released:
            return np.full(n_rows, self.selection)
        return selection_epsilon(self.selection, y, self.y_bound)

    def _reach(self, y, n_rows):
        """Each record's largest validation loss (:func:`label_reach`)."""
        return label_reach(np.zeros(n_rows) if y is None else y, self.y_bound,
                           y is None or self.label_released)

    def person_selection(self, y, codes, n_people):
        """Each person's selection bound: their mean loss's reach where the
        selection scores people, else the sum of their records' bounds
        (each moves every score the same way)."""
        if getattr(self, "person_codes", None) is not None:
            return person_selection_bounds(self.selection, self._reach(y, codes.size), codes,
                                           n_people)[1]
        return np.bincount(codes, minlength=n_people,
                           weights=self._selection_bound(y, codes.size))

    def _search_losses(self, y, n_rows, add):
        epsilon = self.added_part_epsilon() if add else self.part_epsilon
        return np.maximum(epsilon, self._selection_bound(y, n_rows, add))

    def _full_fit_losses(self, X, y, add):
        """Per record, the largest of the fits on all the data: their exact
        losses, or with tightened bounds one valid for every released bound
        (:func:`~sklearn_pdp.domain._stage.charged_loss`)."""
        if not (add or self.tightened) and X.shape[0] != self.n_samples:
            raise ValueError(
                "The losses of training rows are those of the search's data "
                f"itself ({self.n_samples} rows), got {X.shape[0]}.")
        if not self.tightened:
            return reduce(np.maximum, (
                est.pdp_epsilon(X, y) if add else est.pdp_losses_ for est in self.full_fits))
        out = np.zeros(X.shape[0])
        for est, rows in zip(self.full_fits, self.box_rows):
            out = np.maximum(out, charged_loss(est, rows, X, y, add))
        return out

    def losses(self, Xs, ys, add=False):
        """Each record's loss at ``delta``: removed from the search's data
        (``Xs``, ``ys`` are that data, in order) or, with ``add``, added to
        it (``ys`` None: the worst label); rows in the search's units."""
        total = None
        if self.full_fits:
            total = self._full_fit_losses(Xs, ys, add)
        if self.part_fits:
            search = self._search_losses(ys, Xs.shape[0], add)
            total = search if total is None else total + search
        if self.tightened:
            total = self.bounds_release.row_epsilon(Xs, ys, add=add) + total
        return total

    def guarantee_cap(self):
        """The largest loss at ``delta`` of a record removed from the search's
        data or added to it, over every data set of the domain and every
        draw (the parts, the bounds, the fits): the stages' largest, each
        for a removal or an addition (the selection bound is at most its
        epsilon, each fit on all the data at most
        :meth:`~sklearn_pdp.domain._stage.DeclaredStage.cap`), composed. A function
        of public quantities only."""
        total = 0.0
        if self.full_fits:
            total = max(est.domain_stage().cap() for est in self.full_fits)
        if self.part_fits:
            total += max(self.selection, self.part_epsilon, self.added_part_epsilon())
        if self.tightened:
            total += self.bounds_release.epsilon
        return total

    def check_publishable(self):
        """Raise where a published report cannot bound the losses below the
        guarantee (a tightened search publishes :meth:`guarantee_cap`)."""
        if self.full_fits and not self.tightened:
            raise NotImplementedError(
                "PrivateGridSearchCV with refit=True (or a choice without data): "
                "every candidate's fit on all the data is part of each record's "
                "loss but only the selected one is released, so the others "
                "cannot be bounded from published quantities (refit=False with "
                "parts large enough for the grid can be published)."
            )

    def public(self):
        self.added_part_epsilon()  # from the part fits, dropped below
        return super().public()

    # -- the law of a published report (no refit, no tightening) ------------

    def statistics(self, Xs, ys, add=False):
        """The guarantee that applies and the selection bound (exact, or
        where the selection scores people, from the label alone:
        :func:`~._selection.public_person_selection`)."""
        # scaled labels lie in [-1, 1]: the selection bound of the label bound 1
        selection = selection_epsilon(self.selection, ys, 1.0) * np.ones(Xs.shape[0])
        if getattr(self, "person_records", None) is not None and not add:
            # scored by person: whoever else the record's person holds
            reach = label_reach(np.zeros(Xs.shape[0]) if ys is None else ys, 1.0, ys is None)
            selection = public_person_selection(self.selection, reach)
        return {"guarantee": self.added_part_epsilon() if add else self.part_epsilon,
                "selection": selection}

    def published_statistics(self, published, Xs, ys):
        stats = self.statistics(Xs, ys)
        stats["guarantee"] = max(self.part_epsilon, self.added_part_epsilon())
        return stats

    def epsilon(self, delta, stats, gaussian_ratio=None):
        """The loss at the search's delta; it composes with no Gaussian
        mechanism (``needs_gram`` false)."""
        return np.maximum(stats["guarantee"], stats["selection"])

    def dp_epsilon(self, delta, gaussian_ratio=None):
        return self.guarantee[0]
