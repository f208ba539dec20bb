"""Private hyper-parameter search (Chaudhuri et al. 2011; Wu et al. 2015, Algorithm 5).

Every record goes to one of m + 1 parts, independently and uniformly at
random; candidate k is trained on part k by the private estimator, scored on
the last part (rows clipped into the declared domain like training rows) with
the squared error of clipped predictions, and one candidate is picked by the
exponential mechanism (doc/mechanisms/tuning.rst).
"""

import re
import warnings
from copy import deepcopy
from functools import reduce
from numbers import Integral, Real

import numpy as np
from joblib import Parallel, delayed
from scipy import stats
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone
from sklearn.model_selection import ParameterGrid
from sklearn.utils import get_tags
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted, validate_data

from .._sklearn import HasMethods, Interval, _fit_context
from .._base import PrivateRegressorMixin, noise_generator
from .. import _tighten
from .._law import ReleaseLaw
from .._arrays import is_dask_array
from .._domain import bound_params, label_range, read_from_data
from .._validation import validate_rows, warn_large_delta
from .._public import public_model
from .._accounting._exponential import exponential_log_proba, select
from ..exceptions import FallbackWarning

# One validation record adds at most (2 B)^2 to a candidate's summed squared
# error when predictions and labels are clipped to [-B, B]; in units of B^2: 4.
SENSITIVITY = 4.0
# Parameters the search sets on every candidate itself.
_RESERVED = ("y_bound", "random_state")
# Share of ``delta`` for the event that every training part's size lies in the
# range over which the candidates' guarantees are bounded; the candidates get
# the rest.
SIZE_SHARE = 0.5
# Smallest training part the guarantee admits: a part and the same part
# without one record must both be non-empty.
_MIN_PART = 2


def part_size_range(n_samples, n_candidates, failure):
    """Range ``[low, high]`` holding the size of every training part, except
    with probability at most ``failure``.

    Each of the m training parts gets Binomial(n, 1 / (m + 1)) records; the
    bound is a union over the m parts and the two tails (``failure / (2 m)``
    each), from the exact binomial quantiles.
    """
    sizes = stats.binom(n_samples, 1.0 / (n_candidates + 1))
    tail = failure / (2 * n_candidates)
    return int(sizes.ppf(tail)), int(sizes.isf(tail))


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


def validation_losses(estimator, X, y, y_bound):
    """Each record's squared error of clipped predictions, in units of h**2.

    Rows are first moved into the estimator's declared bounds, as its
    training rows were (a record far outside the domain is scored as the
    record the model would have been trained on). Predictions and labels are
    both clipped to the label range [low, high] of ``y_bound`` (half-width
    h), so every value lies in [0, :data:`SENSITIVITY`] whatever the model
    (noisy coefficients leave any bounded set, erratum E7 in doc/errata.rst).
    """
    low, high = label_range(y_bound)
    pred = np.clip(estimator.predict(estimator.domain_scaler().clip(X)), low, high)
    return ((pred - np.clip(y, low, high)) / ((high - low) / 2)) ** 2


# A number in a warning: the candidates' warnings differ by them only
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?")


def _fit(estimator, X, y):
    """Fit ``estimator``; return it with the warnings its fit raised, as
    (category, message) pairs: the search emits each distinct one once
    (:func:`_emit_warnings`) instead of once per candidate."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        estimator.fit(X, y)
    return estimator, [(w.category, str(w.message)) for w in caught]


def _emit_warnings(records, n_fits, stacklevel):
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


def _estimator_has(attr):
    """Delegate ``attr`` to the best estimator once fitted, else to the estimator."""

    def check(self):
        getattr(getattr(self, "best_estimator_", self.estimator), attr)
        return True

    return check


class PrivateGridSearchCV(MetaEstimatorMixin, BaseEstimator):
    """Exhaustive search over a parameter grid that is itself differentially private.

    The records are assigned to m + 1 parts independently and uniformly at
    random (m = number of candidates). Candidate k is the wrapped private
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
        (doc/mechanisms/tightening.rst).
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
        at ``pdp_delta_``, that conditions on no draw (neither the row's part,
        nor the others', nor the candidates' noise, none of which is
        released). The search's term is ``max(G, epsilon * (1 + |y_i| /
        y_bound)^2 / 4)``: by joint convexity over the row's part, the
        largest of the candidates' guarantee ``G`` (the training parts: their
        per-instance losses depend on the unreleased part contents, so only
        the data-independent bound is reported) and the row's selection
        bound (the validation part, valid whatever the candidates). With
        ``refit``, the largest over the candidates of their exact
        per-instance loss of the row on all the data is added.
    pdp_delta_ : float
        The delta of ``pdp_losses_`` and :meth:`pdp_epsilon`: ``dp_delta_``.
    dp_epsilon_ : float
        Data-independent epsilon of the whole procedure, at most ``epsilon``
        when the search sets the budgets: ``max(selection_epsilon_, G)``
        with ``G`` the largest candidate ``dp_guarantee`` over the part sizes
        (at the upper end of the size range, see Notes), plus, with
        ``refit``, the largest candidate guarantee on all the data.
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
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when X has string column names.

    See Also
    --------
    sklearn.model_selection.GridSearchCV : The non-private search it mirrors.

    Notes
    -----
    A validation record changes one candidate's summed loss by at most
    ``(2 y_bound)^2`` (the paper's R^2 is wrong: erratum E7 in :doc:`/errata`), and
    adding a record can only increase every summed loss. Selecting with
    ``P(k) ~ exp(-epsilon * loss_k / (2 y_bound)^2)`` is therefore exactly
    ``epsilon``-DP; the textbook factor 1/2 would waste half the budget.

    The part of each record is drawn independently, so adding or removing one
    record moves no other record between parts. Like the wrapped estimators,
    the search treats the sample size as public, but the part sizes are
    random and not released: the guarantee holds on the event that every
    training part holds between ``low`` and ``high`` records (binomial
    quantiles), whose failure probability ``SIZE_SHARE`` times the
    search's delta is added to delta, and on it each candidate's guarantee is bounded by its
    ``dp_guarantee`` at ``high`` (non-decreasing in the size). When ``low``
    would be below 2 (too many candidates for the samples, e.g. 200
    candidates on 442 rows) or a candidate refuses the part sizes, decided
    before any private fit from ``n``, the grid and the parameters only,
    the search chooses a candidate uniformly at random instead (no privacy
    cost) with a :class:`~sklearn_pdp.exceptions.FallbackWarning`, and
    fits every candidate on all the data at the whole budget, charged like
    a refit. A training part left empty by the draw (within that failure
    probability) is an error.

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

    def _common_params(self, X, y, root):
        """Bounds and budget shared by every fit, resolved once for all
        (the bounds released first with ``tighten_bounds``: ``root`` seeds
        their draw)."""
        if not isinstance(self.estimator, PrivateRegressorMixin):
            raise ValueError(
                "estimator must be a private regressor of sklearn_pdp, got "
                f"{type(self.estimator).__name__}."
            )
        # a warning's stacklevel 5: here, _common_params, fit, the fit
        # wrapper, the user's line
        self.data_norm_, self.bounds_X_, self.y_bound_ = clone(
            self.estimator
        ).resolve_bounds(X, y, stacklevel=5)
        self.bounds_from_data_ = read_from_data(**bound_params(self.estimator))
        common = {
            "data_norm": self.data_norm_,
            "bounds_X": self.bounds_X_,
            "y_bound": self.y_bound_,
            **self._release_bounds(X, y, root),
        }
        # the search's share of delta less what bounds the part sizes
        epsilon, delta = self._budgets()[0]
        return {**common, **self._budget_params(epsilon, (1.0 - SIZE_SHARE) * delta)}

    def _candidates(self, common):
        grid = list(ParameterGrid(self.param_grid))
        for params in grid:
            reserved = sorted(set(_RESERVED) & set(params))
            if reserved:
                raise ValueError(
                    f"param_grid may not set {reserved}: the search sets them on "
                    "every candidate."
                )
        # set and validated here, so that a bad grid fails before any private
        # fit (and is not taken for parts too small for the grid)
        estimators = [
            clone(self.estimator).set_params(**{**common, **params}) for params in grid
        ]
        for est in estimators:
            est._validate_params()
        return grid, estimators

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y):
        """Run the private search (and the refit).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,)
            Targets.

        Returns
        -------
        self : object
            Fitted search.
        """
        if is_dask_array(X) or is_dask_array(y):
            # splitting into parts would gather the rows: say so, never do it
            raise TypeError(
                "PrivateGridSearchCV needs in-memory data, got a Dask array; "
                "call .compute() on X and y if they fit in memory."
            )
        # the shared validation: its errors point the way (a text column)
        X, y = validate_rows(self, X, y, reset=True)
        warn_large_delta(self.delta, X.shape[0], stacklevel=3)
        # All randomness is fixed before any fit, so results do not depend on
        # n_jobs: seeds of the bounds, the split, the selection, the refit,
        # the candidates. 256 bits of the search's generator seed them all, so
        # that under secure_noise no draw is easier to guess than that generator.
        root = np.random.SeedSequence(
            noise_generator(self.random_state).randint(2**32, size=8, dtype=np.uint64)
        )
        common = self._common_params(X, y, root)
        search_epsilon = self._budgets()[0][0]
        grid, estimators = self._candidates(common)
        m, (n, d) = len(grid), X.shape
        split_seed, select_seed, refit_seed, *seeds = root.spawn(m + 3)
        seeded = "random_state" in self.estimator.get_params(deep=False)
        # the candidates' warnings, emitted once each (not once per fit)
        self._fit_warnings = [[], 0]
        try:
            # from n, m and the parameters only, before any private fit
            train_epsilon, train_delta = self._training_guarantee(estimators, n, d)
        except ValueError as exc:
            # parts too small for the grid, or a candidate refusing their
            # sizes (public quantities): a choice without data costs nothing
            warnings.warn(
                f"{exc} The candidate is chosen uniformly at random instead (no "
                "privacy cost) and fitted on all the data with the whole budget.",
                FallbackWarning, stacklevel=3,
            )
            self.best_index_ = int(np.random.default_rng(select_seed).integers(m))
            self.selection_epsilon_ = 0.0
            self._part_fits, self._parts = [], None
            log_proba = np.full(m, -np.log(m))
            self._fit_all_data(estimators, self._budget_params(*self._model_budget()),
                               refit_seed if seeded else None, X, y)
        else:
            self.selection_epsilon_ = search_epsilon
            log_proba = self._search(X, y, estimators, seeds if seeded else None,
                                     split_seed, select_seed)
            # A record's part and the candidates' noise are not released: by
            # joint convexity over the part, its loss is at most the largest
            # over the parts, i.e. over the candidates' guarantees and its
            # selection bound.
            self.dp_epsilon_ = max(search_epsilon, train_epsilon)
            self.dp_delta_ = train_delta
            self.pdp_losses_ = np.maximum(
                train_epsilon, self._selection_bound(search_epsilon, y)
            )
            if self.refit:
                search = self.dp_epsilon_, self.dp_delta_, self.pdp_losses_
                self._fit_all_data(estimators, self._refit_params(),
                                   refit_seed if seeded else None, X, y)
                # sequential composition with the search
                self.dp_epsilon_ += search[0]
                self.dp_delta_ += search[1]
                self.pdp_losses_ = self.pdp_losses_ + search[2]
            else:
                self._full_fits = []
                self.best_estimator_ = self._part_fits[self.best_index_]
        records, n_fits = self._fit_warnings
        del self._fit_warnings
        _emit_warnings(records, n_fits, stacklevel=3)
        self.best_params_ = grid[self.best_index_]
        if self._tightened():  # the bounds stage composes with the rest
            release = self.bounds_release_
            self.dp_epsilon_ += release.epsilon
            self.dp_delta_ += release.event_
            self.pdp_losses_ = release.row_epsilon(X, y) + self.pdp_losses_
        self.pdp_delta_ = self.dp_delta_
        if seeded:
            # the search seeded every fit itself: show the estimator's own value
            own = self.estimator.get_params()["random_state"]
            for est in [*self._part_fits, *self._full_fits]:
                est.set_params(random_state=own)

        self.cv_results_ = _params_table(grid)
        # Kept for tests and audits, never to be published: the selection
        # probabilities (a function of the private data).
        self._log_proba = log_proba
        return self

    def _search(self, X, y, estimators, seeds, split_seed, select_seed):
        """Train candidate k on part k, score on the last part, select:
        sets ``best_index_``, ``_part_fits`` and ``_parts`` (the split, drawn
        independently of the data); returns the selection's log-probabilities."""
        m, n = len(estimators), X.shape[0]
        # The split has its own generator, drawn row by row: removing the last
        # row leaves every other row in its part.
        parts = np.random.default_rng(split_seed).integers(m + 1, size=n)
        if np.bincount(parts, minlength=m + 1)[:m].min() == 0:
            # outside the size event (probability counted in dp_delta_)
            raise ValueError(
                f"The random split of {n} samples into {m + 1} parts (drawn "
                "from random_state, independently of the data) left a training "
                "part empty; fit again with another random_state."
            )
        if seeds is not None:
            for est, seed in zip(estimators, seeds):
                est.set_params(random_state=_random_state(seed))
        fitted = self._fit_candidates(
            delayed(_fit)(est, X[parts == k], y[parts == k])
            for k, est in enumerate(estimators)
        )
        val = parts == m
        if val.any():
            losses = np.column_stack(
                [
                    validation_losses(est, X[val], y[val], self.y_bound_)
                    for est in fitted
                ]
            )
        else:  # no validation rows: every score is 0, a uniform choice
            losses = np.zeros((0, m))
        scores = losses.sum(axis=0)
        log_proba = exponential_log_proba(scores, self.selection_epsilon_, SENSITIVITY)
        self.best_index_ = int(select(log_proba, np.random.default_rng(select_seed)))
        self._part_fits, self._parts = fitted, parts
        return log_proba

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
        charge is the worst candidate's (per record too): sets ``dp_epsilon_``,
        ``dp_delta_``, ``pdp_losses_`` and ``_full_fits``. ``seed``: one seed
        for every fit (None: the estimators' own ``random_state``)."""
        fits = [clone(est).set_params(**params) for est in estimators]
        if seed is not None:
            for est in fits:
                est.set_params(random_state=_random_state(seed))
        self._full_fits = self._fit_candidates(delayed(_fit)(est, X, y) for est in fits)
        self.dp_epsilon_ = max(est.dp_epsilon_ for est in self._full_fits)
        self.dp_delta_ = max(est.dp_delta_ for est in self._full_fits)
        if self._tightened():
            self._box_rows = [_tighten.box_rows(self.bounds_release_, est, X)
                              for est in self._full_fits]
        self.pdp_losses_ = self._full_fit_losses(X, y, add=False)
        self.best_estimator_ = self._full_fits[self.best_index_]

    def _budgets(self):
        """``(epsilon, delta)`` of the search (selection and candidates) and
        of the refit (None without one): ``refit_share`` of the total (less
        the bounds' release) goes to the refit."""
        epsilon, delta = self._model_budget()
        if not self.refit:
            return (epsilon, delta), None
        share = self.refit_share
        return ((1 - share) * epsilon, (1 - share) * delta), (
            share * epsilon, share * delta)

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
        """(epsilon, delta) bounding every candidate over its possible part sizes.

        The guarantee of candidate k holds for the size of its part;
        ``dp_guarantee`` over the sizes of :func:`part_size_range` bounds
        every size in the range, and the range's failure probability is added
        to delta. It raises, before any private fit, the error of an
        estimator that refuses such small parts.
        """
        m = len(estimators)
        failure = SIZE_SHARE * self._budgets()[0][1]
        low, high = part_size_range(n_samples, m, failure)
        if low < _MIN_PART:
            raise ValueError(
                f"The parts are too small for the grid: {n_samples} samples "
                f"split into {m + 1} parts ({m} candidates and a validation "
                f"part) give {n_samples / (m + 1):.3g} samples per part on "
                f"average, and the guarantee needs every training part to hold "
                f"at least {_MIN_PART} except with probability {failure:.3g} "
                "(a share of delta); use more samples or fewer candidates."
            )
        bounds = [est.dp_guarantee(high, n_features, low) for est in estimators]
        return (
            max(eps for eps, _ in bounds),
            max(delta for _, delta in bounds) + failure,
        )

    def _release_bounds(self, X, y, root):
        """Tighten the resolved bounds once, before the parts, with the
        estimator's ``tighten_share`` of the search's total budget
        (doc/mechanisms/tightening.rst): sets ``bounds_release_`` and the
        bounds every fit then takes (the released ones), returned with
        ``tighten_bounds=False`` for the fits themselves."""
        for name in ("bounds_release_", "declared_bounds_", "bounds_epsilon_", "_box_rows"):
            vars(self).pop(name, None)
        if "tighten_bounds" not in self.estimator.get_params(deep=False):
            return {}
        resolved = self.data_norm_, self.bounds_X_, self.y_bound_
        release = None
        if _tighten.tightening_on(self.estimator):
            # (tighten_share) before any private release
            clone(self.estimator)._validate_params()
            release = _tighten.plan_release(self.estimator, resolved, X.shape[0],
                                            self.epsilon, self.delta)
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
        return {**bounds, "tighten_bounds": False}

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

    def _selection_bound(self, epsilon, y, n_rows=None):
        """Each record's selection bound (:func:`selection_epsilon`). With a
        tightened label range the scaled label depends on the released
        range: the worst label's, valid for every release."""
        if y is None or self._tightened() and "y" in self.bounds_release_.source:
            return np.full(len(y) if n_rows is None else n_rows, float(epsilon))
        return selection_epsilon(epsilon, y, self.y_bound_)

    def _full_fit_losses(self, X, y, add):
        """Per record, the largest of the fits on all the data: their exact
        losses, or with tightened bounds one valid for every released bound
        (the guarantee, or AdaSSP's largest over the plausible bounds,
        :func:`~sklearn_pdp._tighten.bounded_loss`)."""
        if not self._tightened():
            return reduce(np.maximum, (
                est.pdp_epsilon(X, y) if add else est.pdp_losses_ for est in self._full_fits))
        out = np.zeros(X.shape[0])
        for est, rows in zip(self._full_fits, self._box_rows):
            loss = (est.dp_epsilon_ if rows is None else
                    _tighten.bounded_loss(est, rows, X, y, add, est.delta, est.dp_epsilon_))
            out = np.maximum(out, loss)
        return out

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
        eps = np.zeros(X.shape[0])
        if self._part_fits:
            n_samples = self.pdp_losses_.shape[0] + 1
            train_epsilon, _ = self._training_guarantee(
                self._part_fits, n_samples, self.n_features_in_
            )
            eps += np.maximum(
                train_epsilon, self._selection_bound(self.selection_epsilon_, y, X.shape[0])
            )
        if self._full_fits:
            eps = eps + self._full_fit_losses(X, y, add=True)
        if self._tightened():
            eps = eps + self.bounds_release_.row_epsilon(X, y, add=True)
        return eps

    def release_law(self):
        """Public description of the search, for a published report.

        What :class:`~sklearn_pdp.PDPReport` with ``publish_epsilon`` needs
        (doc/publish.rst). Without refit a record's loss,
        ``max(G, epsilon * (1 + |y| / y_bound)^2 / 4)``, is a public function
        of its label: :class:`SearchLaw` holds ``G`` (at ``n`` and at
        ``n + 1`` records), the selection's ``epsilon`` and the bounds.

        Returns
        -------
        law : SearchLaw

        Raises
        ------
        NotImplementedError
            With ``refit=True``: every candidate's refit on all the data is
            part of each record's loss, but only the selected one is
            released, so the others' residuals cannot be bounded from
            published quantities.
        """
        check_is_fitted(self)
        if self._tightened():
            raise NotImplementedError(
                "published reports of a search with tighten_bounds are not "
                "supported yet (doc/mechanisms/tightening.rst).")
        if self._full_fits:
            raise NotImplementedError(
                "PrivateGridSearchCV with refit=True (or a choice without data): "
                "every candidate's fit on all the data is part of each record's "
                "loss but only the selected one is released, so the others "
                "cannot be bounded from published quantities (refit=False with "
                "parts large enough for the grid can be published)."
            )
        n, d = self.pdp_losses_.shape[0], self.n_features_in_
        return SearchLaw(
            guarantee=self._training_guarantee(self._part_fits, n, d)[0],
            added_guarantee=self._training_guarantee(self._part_fits, n + 1, d)[0],
            selection=self.selection_epsilon_, dp=(self.dp_epsilon_, self.dp_delta_),
            scaler=self.best_estimator_.domain_scaler(), n_samples=n,
        )

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


class SearchLaw(ReleaseLaw):
    """The private search's release law without refit (doc/publish.rst).

    A record's loss at the search's ``pdp_delta_`` is
    ``max(G, selection * (1 + |y|)^2 / 4)`` with ``y`` its scaled label and
    ``G`` the candidates' guarantee over the part sizes: a public function
    of the label, so the published bound needs no high-probability step and
    no Gram matrix (``needs_gram``). The published bound takes the larger
    of ``G`` at ``n`` records (a training record's) and at ``n + 1`` (a
    person added): it holds for both. The bound needs no coefficients
    (``coef`` is empty).
    """

    needs_gram = False

    def __init__(self, *, guarantee, added_guarantee, selection, dp, scaler, n_samples):
        super().__init__(scaler=scaler, coef=np.empty(0), alpha=0.0, n_samples=n_samples)
        self.guarantee = float(guarantee)
        self.added_guarantee = float(added_guarantee)
        self.selection = float(selection)
        self.dp = dp

    def statistics(self, Xs, ys, add=False):
        """Exact statistics: the guarantee that applies and the selection bound."""
        # scaled labels lie in [-1, 1]: the selection bound of the label bound 1
        selection = selection_epsilon(self.selection, ys, 1.0) * np.ones(Xs.shape[0])
        return {"guarantee": self.added_guarantee if add else self.guarantee,
                "selection": selection}

    def published_statistics(self, published, Xs, ys):
        stats = self.statistics(Xs, ys)
        stats["guarantee"] = max(self.guarantee, self.added_guarantee)
        return stats

    def epsilon(self, delta, stats, gaussian_ratio=None):
        """The loss at the search's delta (``dp[1]``); it composes with no
        Gaussian mechanism (``needs_gram`` false)."""
        return np.maximum(stats["guarantee"], stats["selection"])

    def dp_epsilon(self, delta, gaussian_ratio=None):
        return self.dp[0]


def _random_state(seed_sequence):
    """A ``random_state`` for an estimator from a 256-bit seed (ints hold 32)."""
    return np.random.RandomState(np.random.MT19937(seed_sequence))


def _params_table(grid):
    """``cv_results_`` without any score: the parameter columns only."""
    results = {"params": grid}
    for name in sorted({key for params in grid for key in params}):
        column = np.ma.MaskedArray(np.empty(len(grid), dtype=object), mask=True)
        for k, params in enumerate(grid):
            if name in params:
                column[k] = params[name]
        results[f"param_{name}"] = column
    return results
