"""The private search with person keys (``groups``): parts by person, and
each person's loss for the whole search (:doc:`/people`,
:doc:`/mechanisms/tuning`).

Every person goes to one of the m + 1 parts with all their records, drawn
independently and uniformly (as records are without keys), so by parallel
composition the search costs a person either their candidate's loss or the
selection's. The part sizes are counted in people: the people of a part are
Binomial(P, 1 / (m + 1)), and the part holds at least one record per person
and at most ``n - P`` more records than people (every person elsewhere
holds one at least).

A person's loss conditions on no draw (neither their part nor the
candidates' noise is released): the larger of

- the candidates' guarantee for the whole person over the part sizes:
  itself with ``max_records`` (the candidates' guarantee is then per
  person, :doc:`/people`), else group privacy over it with the group's
  delta stated (``m`` records: ``m G`` at ``m e^((m - 1) G) delta``);
- their selection bound: the sum of their records' (each record moves
  every score in the same direction by at most its own bound); with
  ``max_records`` the selection scores people, each by the mean loss of
  their records (:func:`~._selection.person_selection_bounds`), and their
  bound is that of their record with the largest label reach, at most the
  selection's epsilon;

plus, with ``refit``, the largest of the refits' person losses (with
tightened bounds, a bound valid for every released bound: group privacy
over the refits' guarantee as above), plus with tightened bounds their
exact joint loss for the bounds' release.

With ``max_records`` every term holds per person, and so does the search's
``dp_epsilon_`` (the person-level neighbours: a person added brings up to
``max_records`` records, and the candidates' guarantee for it is taken at
that many more). The search then releases no bounds itself (its quantiles
are sized for one record): ``tighten_bounds=True`` is refused, and "auto"
(the default) fits on the declared bounds.
"""

from functools import reduce

import numpy as np

from ..domain._split import bounds_group_epsilon
from ..domain._tighten import tightening_on
from ..utils._people import person_codes, person_kinds


def search_people(estimator, groups, n_samples):
    """The search's :class:`SearchPeople` (None: records), checked before
    any private release: ``max_records`` needs their keys, and with it the
    search covers whole people, whose bounds' release is not sized for them."""
    cap = estimator.get_params(deep=False).get("max_records")
    if cap is not None and groups is None:
        raise ValueError(
            f"max_records={cap} caps each person's records, so the search needs to "
            "know whose records they are: pass the person keys, "
            "search.fit(X, y, groups=keys), or set max_records=None.")
    if cap is not None and tightening_on(estimator, per_person=True):
        raise ValueError(
            "A search with max_records guarantees epsilon per person, but the bounds "
            "it would release first (tighten_bounds) are sized for one record; declare "
            "the bounds and set tighten_bounds=False (or \"auto\", which does not "
            "tighten a search per person).")
    if cap == 1:
        # removing a person's kept record lets their next one in: two records'
        # change, which a candidate sized for one record covers only by group
        # privacy, and the search's per-record terms do not charge that yet
        raise ValueError(
            "A search with max_records=1 is not supported: removing a person's kept "
            "record lets their next one in, a change of two records. Keep one record "
            "per person before the search, or set max_records to 2 or more.")
    return None if groups is None else SearchPeople(groups, n_samples, cap)


class SearchPeople:
    """The person keys of one search.

    Parameters
    ----------
    groups : array-like of shape (n_samples,)
        One person key per row.
    n_samples : int
        Number of rows.
    """

    def __init__(self, groups, n_samples, max_records=None):
        self.groups = np.asarray(groups)
        self.ids, self.codes, self.sizes = person_codes(groups, n_samples)
        self.n_people = self.ids.size
        self.max_records = max_records
        # with a cap the guarantee is per person, and so is the selection
        self.scores_people = max_records is not None

    def record_weights(self, rows):
        """The weight of each of ``rows`` (a mask) in its person's mean loss."""
        return 1.0 / self.sizes[self.codes[rows]]

    def partition(self, rng, n_parts):
        """Each row's part: its person's, drawn uniformly per person."""
        return rng.integers(n_parts, size=self.n_people)[self.codes]

    def of(self, rows):
        """The person keys of the rows ``rows`` (a mask or indices)."""
        return self.groups[rows]

    def attributes(self, search, release, X, y, guarantee):
        """The search's person attributes: ``person_ids_``,
        ``person_losses_``, ``person_deltas_``, ``person_pdp_kinds_`` and
        ``person_pdp_kind_`` (every one ``"bound"``), from the fitted
        ``search``, its ``release`` and the candidates' ``guarantee`` over
        the part sizes (None: no parts)."""
        epsilon, delta = np.zeros(self.n_people), np.zeros(self.n_people)
        per_person = self.max_records is not None
        if release.full_fits:
            terms = [self._group(est.dp_epsilon_, est.dp_delta_, per_person)
                     if release.tightened else (est.person_losses_, est.person_deltas_)
                     for est in release.full_fits]
            epsilon += reduce(np.maximum, [t[0] for t in terms])
            delta += reduce(np.maximum, [t[1] for t in terms])
        if release.part_fits:
            part = self._group(*guarantee, per_person)
            selection = release.person_selection(y, self.codes, self.n_people)
            epsilon += np.maximum(part[0], selection)
            delta += part[1]
        if release.tightened:
            epsilon += bounds_group_epsilon(release.bounds_release, X, y, self.codes,
                                            self.n_people)
            delta += release.bounds_release.event_
        return {"person_ids_": self.ids, "person_losses_": epsilon,
                "person_deltas_": np.minimum(delta, 1.0),
                "person_pdp_kinds_": person_kinds(self.n_people, "bound"),
                "person_pdp_kind_": "bound"}

    def _group(self, epsilon, delta, per_person):
        """Each person's ``(epsilon, delta)`` from a guarantee: itself where
        it holds per person, else group privacy over their records."""
        if per_person:
            return np.full(self.n_people, float(epsilon)), np.full(self.n_people, float(delta))
        m = self.sizes
        return m * epsilon, np.minimum(m * np.exp((m - 1) * epsilon) * delta, 1.0)
