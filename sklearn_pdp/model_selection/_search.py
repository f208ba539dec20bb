"""Private hyper-parameter search (Chaudhuri et al. 2011; Wu et al. 2015, Algorithm 5).

Every record goes to one of m + 1 parts, independently and uniformly at
random; candidate k is trained on part k by the private estimator, scored on
the last part (rows clipped into the declared domain like training rows) with
the squared error of clipped predictions, and one candidate is picked by the
exponential mechanism (:doc:`/mechanisms/tuning`).
"""

import warnings
from copy import deepcopy
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone
from sklearn.model_selection import ParameterGrid
from sklearn.pipeline import Pipeline
from sklearn.utils import get_tags
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted, validate_data

from ..utils._arrays import is_dask_array
from ..linear_model._base import PrivateRegressorMixin
from ..utils._validation import noise_generator
from ..domain._scaler import bound_params, read_from_data
from ..domain._schema import stage_params
from ..utils._validation import refuse_fit_params, validate_rows, warn_large_delta
from ..utils._sklearn import HasMethods, Interval, _fit_context
from ..exceptions import FallbackWarning
from ._people import search_people
from ._privacy import SearchPrivacyMixin
from ._selection import (
    SENSITIVITY,
    SIZE_SHARE,
    part_size_range,
    selection_epsilon,
    validation_losses,
)
from ._steps import SearchStepsMixin

# with the selection's names, which the tests and audits import from here
__all__ = ["PrivateGridSearchCV", "SENSITIVITY", "SIZE_SHARE", "part_size_range",
           "selection_epsilon", "validation_losses"]

# Parameters the search sets on every candidate itself.
_RESERVED = ("y_bound", "random_state")


def _estimator_has(attr):
    """Delegate ``attr`` to the best estimator once fitted, else to the estimator."""

    def check(self):
        getattr(getattr(self, "best_estimator_", self.estimator), attr)
        return True

    return check


class PrivateGridSearchCV(SearchStepsMixin, SearchPrivacyMixin, MetaEstimatorMixin, BaseEstimator):
    """Exhaustive search over a parameter grid that is itself differentially private.

    The records (with ``groups``, the people) are assigned to m + 1 parts
    independently and uniformly at random (m = number of candidates). Candidate k is the wrapped private
    estimator with the k-th parameter setting, trained on part k; the last part
    scores every candidate by the summed squared error of its predictions, with
    validation rows clipped into the declared domain exactly as training rows
    are (rows longer than ``data_norm`` scaled down to it), and predictions
    and labels clipped to ``[-y_bound, y_bound]``; the exponential
    mechanism picks one candidate. Every record is in exactly one part, so by
    parallel composition the search costs each record either its candidate's
    guarantee or the selection's, never both. Every privacy number is a
    function of the data (and ``n``) only: refitting with another
    ``random_state`` reports the same ``dp_epsilon_`` and ``pdp_losses_``.

    Parameters
    ----------
    estimator : estimator object
        A private regressor of this package (it has ``y_bound`` and
        ``data_norm`` and reports ``pdp_losses_``, ``dp_epsilon_`` and
        ``dp_delta_``). Its parameters not in the grid are kept. With its
        ``tighten_bounds``, the search releases tighter bounds once, before
        the parts, with ``tighten_share`` of ``epsilon`` (and, for
        :class:`~sklearn_pdp.AdaSSPRegressor`, a tenth of ``delta``), and
        runs on them with the rest; every fit gets ``tighten_bounds=False``
        (:doc:`/mechanisms/tightening`).
    param_grid : dict or list of dicts
        As in :class:`~sklearn.model_selection.GridSearchCV`. It may not set
        ``y_bound`` (the selection's sensitivity is computed from one bound)
        or ``random_state`` (the search seeds every fit).
    epsilon : float, default=1.0
        Total budget of the release, selection and refit together. The
        search sets it on its candidates, as GridSearchCV sets parameters:
        with ``refit``, ``refit_share`` of it goes to the refit and the rest
        to the search, else all of it to the search. The search's share is
        the exponential mechanism's (pure DP with respect to the validation
        records) and, if the estimator has an ``epsilon`` parameter (unless
        the grid sets ``epsilon``), every candidate's. Estimators set to a
        raw noise level (such as :class:`~sklearn_pdp.OPSRegressor` with
        ``epsilon=None``, tuned by ``gamma``) contribute their own guarantee
        instead.
    delta : float, default=1e-6
        Total delta, split like ``epsilon``. Of the search's share, half
        (``SIZE_SHARE``) bounds the probability that a training part is
        larger or smaller than the range the guarantee covers and the other
        half is passed to every candidate when the estimator has a
        ``delta`` parameter (its budget, or the level at which it reports),
        unless the grid sets ``delta``.
    refit : bool, default=True
        Retrain the selected parameters on all the data (as scikit-learn's
        ``refit=True``) at ``refit_share`` of the budget. This is a second
        release of every record, charged by sequential composition; the
        selected index is released, so the charge is the worst over the
        candidates: to know each record's, every candidate is fitted on all
        the data (m full fits instead of one, run by ``n_jobs``; the others
        are discarded). With ``refit=False``, ``best_estimator_`` is the
        selected candidate, trained on its part only (about 1 / (m + 1) of
        the data), and the search has the whole budget.
    refit_share : float in (0, 1), default=0.5
        Share of ``epsilon`` and ``delta`` that the refit gets (with
        ``refit``); the search gets the rest.
    n_jobs : int, default=None
        Number of candidates trained in parallel (joblib). All seeds are drawn
        before any fit, so the results do not depend on ``n_jobs``.
    random_state : int, RandomState instance or None, default=None
        Seeds the split, the candidates, the selection and the refit. All of
        them draw from one generator made from it like the estimators' noise
        (None: 256 bits from :mod:`secrets`), through
        child seeds of 256 bits each.

    Attributes
    ----------
    best_estimator_ : estimator
        The refit estimator, or the selected candidate when ``refit=False``.
        Its ``random_state`` is the wrapped estimator's own: the search seeds
        every fit from its own ``random_state`` and then restores the
        parameter, so that it reads like ``estimator`` with ``best_params_``.
    best_params_ : dict
        Parameter setting of the selected candidate.
    best_index_ : int
        Index of ``best_params_`` in ``cv_results_["params"]``.
    selection_epsilon_ : float
        Budget of the exponential mechanism (and of the candidates): the
        search's share of ``epsilon``; 0 where the candidate was chosen
        without data (parts too small for the grid).
    cv_results_ : dict of numpy (masked) ndarrays
        ``"params"`` and one ``"param_<name>"`` column per parameter, as in
        :class:`~sklearn.model_selection.GridSearchCV`. Validation scores,
        ranks and selection probabilities are deliberately absent: they are
        functions of the private data that the privacy analysis does not
        cover. Only the selected index is released.
    pdp_losses_ : ndarray of shape (n_samples,)
        Upper bound on the per-instance epsilon of each training row, valid
        at ``pdp_delta_``, that conditions on no draw (neither the parts nor
        the candidates' noise are released): ``max(G, epsilon * (1 + |y_i| /
        y_bound)^2 / 4)``, the larger of the candidates' guarantee ``G`` and
        the row's selection bound, plus, with ``refit``, the largest over the
        candidates of their exact per-instance loss of the row on all the
        data (derivation in :doc:`/mechanisms/tuning`). With
        ``max_records`` the selection scores people by their mean loss, and
        a row's selection bound is that of one of its person's ``m`` rows
        (:doc:`/people`).
    pdp_kind_ : str
        ``"bound"``: each of ``pdp_losses_`` is an upper bound (the
        estimator's ``pdp_kind_`` vocabulary).
    person_ids_, person_losses_, person_deltas_, person_pdp_kinds_, person_pdp_kind_ : ndarray, str
        With ``groups``: the distinct keys, each person's bound for all
        their records at their delta (each ``"bound"``; derivation in
        :mod:`sklearn_pdp.model_selection._people`). With the estimator's
        ``max_records`` each is at most ``dp_epsilon_``.
    pdp_delta_ : float
        The delta of ``pdp_losses_`` and :meth:`pdp_epsilon`: ``dp_delta_``.
    dp_epsilon_ : float
        Data-independent epsilon of the whole procedure, at most ``epsilon``
        when the search sets the budgets: ``max(selection_epsilon_, G)``
        with ``G`` the largest candidate ``dp_guarantee`` over the part sizes
        (at the upper end of the size range, see Notes), plus, with
        ``refit``, the largest candidate guarantee on all the data. Per
        record; with ``groups`` and the estimator's ``max_records``, per
        person (adding or removing all of a person's records): the parts
        split by person, every fit is per person, and the selection scores
        each validation person by the mean loss of their records, which one
        person moves by at most the sensitivity of one record
        (:doc:`/people`).
    dp_delta_ : float
        Its delta, at most ``delta``: the candidates' largest delta plus
        ``SIZE_SHARE`` of the search's delta for the part sizes (the
        selection is pure), plus, with ``refit``, the refit candidates'
        largest delta.
    data_norm_, y_bound_ : float
        The bounds given to every fit (the estimator's, or read once from the
        data with a :class:`~sklearn_pdp.exceptions.PrivacyLeakWarning`;
        with tightening, the released ones, to which ``predict`` clips
        new rows).
    bounds_from_data_ : tuple of str
        The names of the bounds read from the data (``"data_norm"``,
        ``"y_bound"``), as the estimator's ``bounds_from_data_``; empty when
        the estimator declares them all.
    declared_bounds_, bounds_epsilon_ : tuple, float
        With tightening only: the declared ``(data_norm, bounds_X, y_bound)``
        and the pure epsilon of the bounds' release, part of ``dp_epsilon_``.
        Each row's exact loss for that release is added to ``pdp_losses_``;
        the search's term then bounds the selection by the worst label's
        (the label range is released) and the refits by a loss valid for
        every released bound (their guarantee, or AdaSSP's largest over the
        plausible bounds), so that no term conditions on the draw.
    release_ : SearchRelease
        The whole release (the selection, the candidates' fits, the refit's
        and the bounds' release) from which ``dp_epsilon_``, ``dp_delta_``,
        ``pdp_losses_``, :meth:`pdp_epsilon` and :meth:`release_law` are
        read.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when X has string column names.

    See Also
    --------
    sklearn.model_selection.GridSearchCV : The non-private search it mirrors.

    Notes
    -----
    The selection is exactly ``epsilon``-DP with the sensitivity
    ``(2 y_bound)^2`` in the denominator (no textbook factor 1/2: adding a
    record moves every score in the same direction; the paper's R^2 is wrong,
    erratum E7 in :doc:`/errata`). The part sizes are random and not
    released: the guarantee holds on the event that every training part
    holds between two binomial quantiles ``low`` and ``high``, whose failure
    probability (``SIZE_SHARE`` of the search's delta) is added to delta.
    When ``low`` would be below 2 or a candidate refuses the part sizes
    (decided before any private fit from ``n``, the grid and the parameters
    only), the search chooses a candidate uniformly at random instead (no
    privacy cost) with a :class:`~sklearn_pdp.exceptions.FallbackWarning`
    and fits every candidate on all the data at the whole budget, charged
    like a refit. A training part left empty by the draw (within that
    failure probability) is an error. The derivations are in
    :doc:`/mechanisms/tuning`.

    Data beyond the declared bounds is treated as in the wrapped estimators:
    rows longer than ``data_norm`` are scaled down to it, for training and
    for validation alike, so such data gives the same release as the clipped
    data it stands for.

    The guarantees hold for a grid fixed before seeing the data. The other
    candidates are discarded. Publish ``best_params_`` and
    the predictions or coefficients of ``best_estimator_``, not the search
    object (the estimators keep non-private statistics for their reports).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_pdp import OPSRegressor
    >>> from sklearn_pdp.model_selection import PrivateGridSearchCV
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-1, 1, size=(3000, 3)) / np.sqrt(3)
    >>> y = np.clip(X @ [1.0, -0.5, 0.2] + 0.1 * rng.randn(3000), -1, 1)
    >>> ops = OPSRegressor(epsilon=None, alpha=10.0, data_norm=1.0, y_bound=1.0)
    >>> search = PrivateGridSearchCV(ops, {"gamma": [1.0, 100.0]}, epsilon=1.0,
    ...                              random_state=0).fit(X, y)
    >>> search.best_params_
    {'gamma': 100.0}
    >>> bool(np.all(search.pdp_losses_ <= search.dp_epsilon_))
    True
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "predict"])],
        "param_grid": [dict, list],
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "refit": ["boolean"],
        "refit_share": [Interval(Real, 0, 1, closed="neither")],
        "n_jobs": [Integral, None],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        estimator,
        param_grid,
        *,
        epsilon=1.0,
        delta=1e-6,
        refit=True,
        refit_share=0.5,
        n_jobs=None,
        random_state=None,
    ):
        self.estimator = estimator
        self.param_grid = param_grid
        self.epsilon = epsilon
        self.delta = delta
        self.refit = refit
        self.refit_share = refit_share
        self.n_jobs = n_jobs
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, groups=None, **fit_params):
        """Run the private search (and the refit).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,)
            Targets.
        groups : array-like of shape (n_samples,), default=None
            A person key per row (routed as scikit-learn's ``GridSearchCV``
            routes them): each person's records go to one part together,
            every fit gets its rows' keys, and ``person_ids_`` and
            ``person_losses_`` say what the search costs each person
            (:doc:`/people`).
        **fit_params : dict
            Refused with why, ``sample_weight`` too: the guarantee and the
            per-instance losses assume that every row counts once.

        Returns
        -------
        self : object
            Fitted search.
        """
        refuse_fit_params(self, fit_params)
        if is_dask_array(X) or is_dask_array(y):
            # splitting into parts would gather the rows: say so, never do it
            raise TypeError(
                "PrivateGridSearchCV needs in-memory data, got a Dask array; "
                "call .compute() on X and y if they fit in memory."
            )
        self._check_estimator()
        # the shared validation: its errors point the way (a text column)
        X, y = validate_rows(self, X, y, reset=True)
        self._people = search_people(self.estimator, groups, X.shape[0])
        warn_large_delta(self.delta, X.shape[0], stacklevel=3)
        root = self._root_seed()
        grid, estimators = self._candidates(self._common_params(X, y, root))
        split_seed, select_seed, refit_seed, *seeds = root.spawn(len(grid) + 3)
        seeded = "random_state" in self.estimator.get_params(deep=False)
        if not seeded:  # the fits keep the estimators' own random_state
            refit_seed, seeds = None, None
        self._fit_warnings = [[], 0]
        try:
            # from n, m and the parameters only, before any private fit
            guarantee = self._training_guarantee(estimators, *X.shape)
        except ValueError as exc:
            guarantee = None
            log_proba = self._choose_without_data(exc, estimators, select_seed,
                                                  refit_seed, X, y)
        else:
            log_proba = self._search(X, y, estimators, seeds, split_seed, select_seed)
            self._refit(estimators, refit_seed, X, y)
        self._emit_fit_warnings(stacklevel=3)
        self._record_release(guarantee, X, y)
        self._record_results(grid, log_proba, seeded)
        return self

    def _check_estimator(self):
        """A private regressor of this package, searched itself (its bounds
        and budget are set by the search), not a pipeline around one."""
        if isinstance(self.estimator, PrivateRegressorMixin):
            return
        way_out = ""
        if isinstance(self.estimator, Pipeline) and isinstance(
                self.estimator[-1], PrivateRegressorMixin):
            way_out = (
                " Encode the table first with the pipeline's other steps (with "
                "declared categories and public constants they learn nothing from "
                "the rows), X_encoded = pipeline[:-1].fit_transform(X), and search "
                "the regressor, pipeline[-1], on X_encoded (see the 'Preparing a "
                "table without leaking' page of the sklearn-pdp documentation)."
            )
        raise ValueError(
            "estimator must be a private regressor of sklearn_pdp, got "
            f"{type(self.estimator).__name__}.{way_out}"
        )

    def _root_seed(self):
        """The seed of every draw of the search, fixed before any fit so that
        results do not depend on ``n_jobs``: the bounds, the split, the
        selection, the refit and the candidates spawn their seeds from it."""
        # 256 bits: under secure_noise no draw is easier to guess than the
        # search's generator
        return np.random.SeedSequence(
            noise_generator(self.random_state).randint(2**32, size=8, dtype=np.uint64)
        )

    def _common_params(self, X, y, root):
        """Bounds and budget shared by every fit, resolved once for all
        (the bounds released first with ``tighten_bounds``: ``root`` seeds
        their draw)."""
        # a warning's stacklevel 5: here, _common_params, fit, the fit
        # wrapper, the user's line
        self.data_norm_, self.bounds_X_, self.y_bound_ = clone(
            self.estimator
        ).resolve_bounds(X, y, stacklevel=5)
        self.bounds_from_data_ = read_from_data(**bound_params(self.estimator))
        common = stage_params(self.estimator, {
            "data_norm": self.data_norm_,
            "bounds_X": self.bounds_X_,
            "y_bound": self.y_bound_,
        })
        common.update(self._release_bounds(X, y, root))
        # the search's share of delta less what bounds the part sizes
        epsilon, delta = self._budgets()[0]
        return {**common, **self._budget_params(epsilon, (1.0 - SIZE_SHARE) * delta)}

    def _candidates(self, common):
        """The grid and its candidates, each set and validated here so that a
        bad grid fails before any private fit (and is not taken for parts too
        small for the grid)."""
        grid = list(ParameterGrid(self.param_grid))
        for params in grid:
            reserved = sorted(set(_RESERVED) & set(params))
            if reserved:
                raise ValueError(
                    f"param_grid may not set {reserved}: the search sets them on "
                    "every candidate."
                )
            if "max_records" in params:
                raise ValueError(
                    "param_grid may not set max_records: it decides the unit the "
                    "search's guarantee covers, set it on the estimator.")
        estimators = [
            clone(self.estimator).set_params(**{**common, **params}) for params in grid
        ]
        for est in estimators:
            est._validate_params()
        return grid, estimators

    def _choose_without_data(self, exc, estimators, select_seed, seed, X, y):
        """Parts too small for the grid, or a candidate refusing their sizes
        (public quantities): a uniform choice, which costs nothing, and every
        candidate fitted on all the data at the whole budget. Returns the
        choice's log-probabilities."""
        warnings.warn(
            f"{exc} The candidate is chosen uniformly at random instead (no "
            "privacy cost) and fitted on all the data with the whole budget.",
            FallbackWarning, stacklevel=4,
        )
        m = len(estimators)
        self.best_index_ = int(np.random.default_rng(select_seed).integers(m))
        self.selection_epsilon_ = 0.0
        self._part_fits, self._parts = [], None
        self._fit_all_data(estimators, self._budget_params(*self._model_budget()), seed, X, y)
        return np.full(m, -np.log(m))

    @available_if(_estimator_has("predict"))
    def predict(self, X):
        """Predict with ``best_estimator_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predictions of the selected (refit) model.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        if self._tightened():  # new rows clipped to the released bounds
            X = self.best_estimator_.domain_scaler().clip(X)
        return self.best_estimator_.predict(X)

    @available_if(_estimator_has("score"))
    def score(self, X, y, sample_weight=None):
        """``best_estimator_.score``: the R^2 of its predictions on (X, y).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Test samples.
        y : array-like of shape (n_samples,)
            True values for ``X``.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights.

        Returns
        -------
        score : float
            R^2 of ``self.predict(X)`` with respect to ``y``.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self.best_estimator_.score(X, y, sample_weight=sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        sub = get_tags(self.estimator)
        tags.estimator_type = sub.estimator_type
        tags.regressor_tags = deepcopy(sub.regressor_tags)
        tags.input_tags.sparse = sub.input_tags.sparse
        return tags
