"""The steps of the private search's fit (:doc:`/mechanisms/tuning`): the
partition, the candidates' fits and scores, the refit and the records."""

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import clone

from ..accounting._exponential import exponential_log_proba, select
from ._release import SearchRelease
from ._selection import (
    SENSITIVITY,
    emit_warnings,
    fit_recording_warnings,
    params_table,
    seeded_random_state,
    validation_losses,
)


class SearchStepsMixin:
    """The steps of :class:`PrivateGridSearchCV`'s fit, in the order it runs them."""

    def _search(self, X, y, estimators, seeds, split_seed, select_seed):
        """Train candidate k on part k, score on the last part, select:
        sets ``selection_epsilon_``, ``best_index_``, ``_part_fits`` and
        ``_parts``; returns the selection's log-probabilities."""
        self.selection_epsilon_ = self._budgets()[0][0]
        parts = self._partition(X.shape[0], len(estimators), split_seed, self._people)
        fitted, scores = self._evaluate_candidates(X, y, estimators, seeds, parts)
        log_proba = exponential_log_proba(scores, self.selection_epsilon_, SENSITIVITY)
        self.best_index_ = int(select(log_proba, np.random.default_rng(select_seed)))
        self._part_fits, self._parts = fitted, parts
        return log_proba

    @staticmethod
    def _partition(n_samples, n_candidates, split_seed, people=None):
        """Each record's part, 0 to m (m: validation), drawn independently of
        the data (with ``people``, per person: all their records in one)."""
        # its own generator, drawn row by row: removing the last row leaves
        # every other row in its part
        rng = np.random.default_rng(split_seed)
        parts = (rng.integers(n_candidates + 1, size=n_samples) if people is None
                 else people.partition(rng, n_candidates + 1))
        if np.bincount(parts, minlength=n_candidates + 1)[:n_candidates].min() == 0:
            # outside the size event (probability counted in dp_delta_)
            raise ValueError(
                f"The random split of {n_samples} samples into {n_candidates + 1} "
                "parts (drawn from random_state, independently of the data) left "
                "a training part empty; fit again with another random_state."
            )
        return parts

    def _evaluate_candidates(self, X, y, estimators, seeds, parts):
        """Fit candidate k on part k (seeded by ``seeds``, None: their own
        ``random_state``); return the fits and their summed validation losses."""
        m = len(estimators)
        if seeds is not None:
            for est, seed in zip(estimators, seeds):
                est.set_params(random_state=seeded_random_state(seed))
        fitted = self._fit_candidates(
            delayed(fit_recording_warnings)(est, X[parts == k], y[parts == k],
                                            self._keys(parts == k))
            for k, est in enumerate(estimators)
        )
        val = parts == m
        if val.any():
            losses = np.column_stack(
                [validation_losses(est, X[val], y[val], self.y_bound_) for est in fitted]
            )
        else:  # no validation rows: every score is 0, a uniform choice
            losses = np.zeros((0, m))
        if self._people is not None and self._people.scores_people:
            # each person's mean loss: one person moves a score by SENSITIVITY
            losses = losses * self._people.record_weights(val)[:, None]
        return fitted, losses.sum(axis=0)

    def _refit(self, estimators, seed, X, y):
        """With ``refit``, fit on all the data (composed sequentially with
        the search by :class:`SearchRelease`); without, ``best_estimator_``
        is the selected candidate."""
        if not self.refit:
            self._full_fits = []
            self.best_estimator_ = self._part_fits[self.best_index_]
            return
        self._fit_all_data(estimators, self._refit_params(), seed, X, y)

    def _record_release(self, guarantee, X, y):
        """``release_``, the whole release (``guarantee``: the candidates'
        over the part sizes, None without parts), and the numbers read from
        it: ``dp_epsilon_``, ``dp_delta_``, ``pdp_delta_``, ``pdp_losses_``."""
        self.release_ = release = SearchRelease(
            scaler=self.best_estimator_.domain_scaler(), n_samples=X.shape[0],
            n_features=X.shape[1], n_people=getattr(self._people, "n_people", None),
            selection=self.selection_epsilon_,
            size_failure=self._size_failure(), part_guarantee=guarantee,
            part_fits=self._part_fits, full_fits=self._full_fits, y_bound=self.y_bound_,
            bounds_release=getattr(self, "bounds_release_", None), X=X,
            person_codes=(self._people.codes if self._people is not None
                          and self._people.scores_people else None),
            person_records=getattr(self._people, "max_records", None),
        )
        self.dp_epsilon_, self.dp_delta_ = release.guarantee
        self.pdp_delta_ = self.dp_delta_
        self.pdp_losses_ = release.losses(X, y)
        self.pdp_kind_ = "bound"  # the stages' terms add up (and a max over candidates)
        if self._people is not None:
            for name, value in self._people.attributes(self, release, X, y,
                                                       guarantee).items():
                setattr(self, name, value)

    def _keys(self, rows):
        """The person keys of ``rows`` (None without them)."""
        return None if self._people is None else self._people.of(rows)

    def _emit_fit_warnings(self, stacklevel):
        """Emit the candidates' warnings collected by :meth:`_fit_candidates`."""
        records, n_fits = self._fit_warnings
        del self._fit_warnings
        emit_warnings(records, n_fits, stacklevel=stacklevel + 1)

    def _record_results(self, grid, log_proba, seeded):
        """``best_params_`` and ``cv_results_``; the fits show the
        estimator's own ``random_state``."""
        self.best_params_ = grid[self.best_index_]
        if seeded:
            # the search seeded every fit itself: show the estimator's own value
            own = self.estimator.get_params()["random_state"]
            for est in [*self._part_fits, *self._full_fits]:
                est.set_params(random_state=own)
        self.cv_results_ = params_table(grid)
        # Kept for tests and audits, never to be published: the selection
        # probabilities (a function of the private data).
        self._log_proba = log_proba

    def _fit_candidates(self, tasks):
        """Run the candidates' fits; their warnings are collected in
        ``_fit_warnings`` (emitted once each at the end of ``fit``)."""
        results = Parallel(n_jobs=self.n_jobs)(tasks)
        self._fit_warnings[1] += len(results)
        for _, records in results:
            self._fit_warnings[0].extend(records)
        return [est for est, _ in results]

    def _fit_all_data(self, estimators, params, seed, X, y):
        """Fit every candidate on all the data with ``params``; the selected
        one is ``best_estimator_``. The selected index is released, so the
        charge is the worst candidate's (per record too, by
        :class:`SearchRelease`): sets ``_full_fits``. ``seed``: one seed for
        every fit (None: the estimators' own ``random_state``)."""
        fits = [clone(est).set_params(**params) for est in estimators]
        if seed is not None:
            for est in fits:
                est.set_params(random_state=seeded_random_state(seed))
        self._full_fits = self._fit_candidates(
            delayed(fit_recording_warnings)(est, X, y, self._keys(slice(None)))
            for est in fits)
        self.best_estimator_ = self._full_fits[self.best_index_]
