"""The private search's accounting: how the budget is split between the
bounds' release, the search and the refit, what each record is charged, and
what can be published (:doc:`/mechanisms/tuning`)."""

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import ParameterGrid
from sklearn.utils.validation import check_is_fitted, validate_data

from ..domain import _tighten
from ..mechanisms._guarantee_law import GuaranteeLaw
from ..report._public import public_model
from ..domain._schema import stage_params
from ._release import SearchRelease
from ._selection import training_guarantee


class SearchPrivacyMixin:
    """Budgets, per-record losses and published forms of
    :class:`~sklearn_pdp.model_selection.PrivateGridSearchCV`, read from the
    fitted search (its candidates' fits, parts and bounds' release)."""

    def _budgets(self):
        """``(epsilon, delta)`` of the search (selection and candidates) and
        of the refit (None without one): ``refit_share`` of the total (less
        the bounds' release) goes to the refit."""
        return SearchRelease.split_budget(*self._model_budget(),
                                          self.refit_share if self.refit else None)

    def _budget_params(self, epsilon, delta):
        """The budget the search sets on its estimators: ``epsilon`` where
        the estimator has a budget (not a raw noise level), ``delta`` where
        it has one, unless the grid sets them."""
        names = self.estimator.get_params(deep=False)
        in_grid = {key for params in ParameterGrid(self.param_grid) for key in params}
        params = {}
        if names.get("epsilon") is not None and "epsilon" not in in_grid:
            params["epsilon"] = epsilon
        if "delta" in names and "delta" not in in_grid:
            params["delta"] = delta
        return params

    def _refit_params(self):
        """The refit's budget: ``refit_share`` of the total, no part sizes to bound."""
        return self._budget_params(*self._budgets()[1])

    def _training_guarantee(self, estimators, n_samples, n_features):
        """(epsilon, delta) bounding every candidate over its possible part
        sizes (:func:`~sklearn_pdp.model_selection._selection.training_guarantee`),
        the size event at ``SIZE_SHARE`` of the search's delta."""
        return training_guarantee(estimators, n_samples, n_features, self._size_failure(),
                                  getattr(self._people, "n_people", None))

    def _size_failure(self):
        """The probability, ``SIZE_SHARE`` of the search's delta, that a
        training part's size leaves the range the guarantee covers."""
        return SearchRelease.size_failure(self._budgets()[0][1])

    def _release_bounds(self, X, y, root):
        """Tighten the resolved bounds once, before the parts, with the
        estimator's ``tighten_share`` of the search's total budget
        (:doc:`/mechanisms/tightening`): sets ``bounds_release_`` and the
        bounds every fit then takes (the released ones), returned with
        ``tighten_bounds=False`` for the fits themselves."""
        for name in ("bounds_release_", "declared_bounds_", "bounds_epsilon_"):
            vars(self).pop(name, None)
        if "tighten_bounds" not in self.estimator.get_params(deep=False):
            return {}
        resolved = self.data_norm_, self.bounds_X_, self.y_bound_
        release = None
        # a search per person (max_records): the quantiles are sized for one record
        per_person = getattr(self._people, "max_records", None) is not None
        if _tighten.tightening_on(self.estimator, per_person):
            # (tighten_share) before any private release
            clone(self.estimator)._validate_params()
            release = _tighten.plan_release(self.estimator, resolved, X.shape[0],
                                            self.epsilon, self.delta, stacklevel=6)
        if release is None:
            return {"tighten_bounds": False}
        release.fit(X, y)
        # its own seed, spawned only here: searches without tightening
        # keep their other seeds
        drawn = release.draw(np.random.default_rng(root.spawn(1)[0]))
        bounds = _tighten.released_bounds(drawn, resolved)
        self.declared_bounds_ = resolved
        self.bounds_release_, self.bounds_epsilon_ = release, release.epsilon
        self.data_norm_, self.bounds_X_, self.y_bound_ = (
            bounds["data_norm"], bounds["bounds_X"], bounds["y_bound"])
        return {**stage_params(self.estimator, bounds), "tighten_bounds": False}

    def _tightened(self):
        return hasattr(self, "bounds_release_")

    def _model_budget(self):
        """``(epsilon, delta)`` of the search and refit: the total less the
        bounds' release (its epsilon, and the share of delta it keeps)."""
        if not self._tightened():
            return self.epsilon, self.delta
        release = self.bounds_release_
        return (_tighten.remaining_epsilon(self.epsilon, release.epsilon),
                self.delta - release.event_)

    def pdp_epsilon(self, X, y=None):
        """Per-instance epsilon, at ``pdp_delta_``, of adding new targets.

        The bound of ``pdp_losses_`` for a person added to the training
        data: the largest candidate guarantee over the part sizes of the
        larger data set, or the person's selection bound if larger, plus,
        with ``refit``, the largest of the candidates' exact per-instance
        losses of the target on all the data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Feature vectors of the targets.
        y : array-like of shape (n_samples,), default=None
            Their labels. If None, the worst label in ``[-y_bound_, y_bound_]``.

        Returns
        -------
        epsilon : ndarray of shape (n_samples,)
            ``inf`` where no finite epsilon exists.
        """
        check_is_fitted(self)
        if y is None:
            X = validate_data(self, X, reset=False, dtype=np.float64)
        else:
            X, y = validate_data(self, X, y, reset=False, dtype=np.float64, y_numeric=True)
        return self.release_.losses(X, y, add=True)

    def release_law(self):
        """Public description of the search, for a published report.

        What :class:`~sklearn_pdp.PDPReport` with ``publish_epsilon`` needs
        (:doc:`/publish`). Without refit a record's loss,
        ``max(G, epsilon * (1 + |y| / y_bound)^2 / 4)``, is a public function
        of its label: ``release_.public()``, the
        :class:`~sklearn_pdp.model_selection._release.SearchRelease` without
        the fits, holds ``G`` (at ``n`` and at ``n + 1`` records), the
        selection's ``epsilon`` and the bounds. With privately tightened
        bounds (refit or not), a
        :class:`~sklearn_pdp.mechanisms._guarantee_law.GuaranteeLaw`: every record's
        bound is the search's guarantee, the largest for a removal or an
        addition (:doc:`/mechanisms/tightening`, "Published reports").

        Returns
        -------
        law : SearchRelease or GuaranteeLaw

        Raises
        ------
        NotImplementedError
            With ``refit=True`` and no tightening: every candidate's refit on all the data is
            part of each record's loss, but only the selected one is
            released, so the others' residuals cannot be bounded from
            published quantities.
        """
        check_is_fitted(self)
        release = self.release_
        release.check_publishable()
        if self._tightened():
            return GuaranteeLaw(scaler=release.scaler, n_samples=release.n_samples,
                                delta=self.pdp_delta_,
                                guarantee=(self.dp_epsilon_, self.dp_delta_),
                                cap=release.guarantee_cap())
        return release.public()

    def law_statistics(self):
        """The row statistics that :meth:`release_law`'s law takes.

        Returns
        -------
        statistics : callable
            ``statistics(Xs, ys, add=False) -> dict`` on rows in the privacy
            domain: the training guarantee that applies (at ``n`` records,
            or at ``n + 1`` with ``add``) and each row's selection bound
            (``ys`` None: the worst label).
        """
        return self.release_law().statistics

    def public_model(self, decimals=None):
        """The selected model alone, under the guarantee of the whole search.

        ``best_estimator_``'s coefficients with ``(dp_epsilon_, dp_delta_)``
        of the search (selection, candidates and refit): see
        :meth:`sklearn_pdp.OPSRegressor.public_model`.

        Parameters
        ----------
        decimals : int, default=None
            Round the coefficients and the intercept to this many decimals.

        Returns
        -------
        model : PublicLinearModel
        """
        check_is_fitted(self)
        best = self.best_estimator_
        selected = best.public_model()  # its declared bounds and (released) parameters
        # the search gave its fits the bounds it read from the data: private, not written
        bounds = {name: None if name in self.bounds_from_data_ else value
                  for name, value in selected.bounds.items()}
        return public_model(
            best.coef_, best.intercept_, (self.dp_epsilon_, self.dp_delta_),
            f"PrivateGridSearchCV({type(best).__name__})",
            getattr(self, "feature_names_in_", None), decimals,
            bounds, selected.params, self._tightened(),
        )

