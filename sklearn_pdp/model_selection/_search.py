"""Private hyper-parameter search (Chaudhuri et al. 2011; Wu et al. 2015, Algorithm 5).

Every record goes to one of m + 1 parts, independently and uniformly at
random; candidate k is trained on part k by the private estimator, scored on
the last part (rows clipped into the declared domain like training rows) with
the squared error of clipped predictions, and one candidate is picked by the
exponential mechanism (doc/mechanisms/tuning.rst).
"""

from copy import deepcopy
from numbers import Integral, Real

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, MetaEstimatorMixin, _fit_context, clone
from sklearn.model_selection import ParameterGrid
from sklearn.utils._param_validation import HasMethods, Interval
from sklearn.utils._tags import get_tags
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted, validate_data

from .._accounting import exponential_log_proba, exponential_pdp_epsilon
from .._base import PrivateRegressorMixin, noise_generator
from .._data import is_dask_array

# One validation record adds at most (2 B)^2 to a candidate's summed squared
# error when predictions and labels are clipped to [-B, B]; in units of B^2: 4.
SENSITIVITY = 4.0
# Parameters the search sets on every candidate itself.
_RESERVED = ("y_bound", "random_state")


def validation_losses(estimator, X, y, y_bound):
    """Each record's squared error of clipped predictions, in units of ``y_bound**2``.

    Rows longer than the estimator's ``data_norm_`` are scaled down to it
    first, as its training rows were (a record far outside the domain is
    scored as the record the model would have been trained on). Predictions
    and labels are both clipped to [-y_bound, y_bound], so every value lies in
    [0, :data:`SENSITIVITY`] whatever the model (noisy coefficients leave any
    bounded set, erratum E7 in doc/errata.rst).
    """
    pred = np.clip(estimator.predict(estimator._scaler.clip(X)), -y_bound, y_bound)
    return ((pred - np.clip(y, -y_bound, y_bound)) / y_bound) ** 2


def select(log_proba, rng, size=None):
    """Index(es) drawn with the log probabilities ``log_proba``.

    Gumbel-max sampling: argmax_k (log P(k) + G_k) with G_k iid standard
    Gumbel is distributed as P, and needs no normalisation in linear scale.
    """
    log_proba = np.asarray(log_proba, dtype=float)
    shape = log_proba.shape if size is None else (size, log_proba.size)
    return np.argmax(log_proba + rng.gumbel(size=shape), axis=-1)


def _fit(estimator, X, y):
    return estimator.fit(X, y)


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
    guarantee or the selection's, never both.

    Parameters
    ----------
    estimator : estimator object
        A private regressor of this package (it has ``y_bound`` and
        ``data_norm`` and reports ``pdp_losses_``, ``dp_epsilon_`` and
        ``dp_delta_``). Its parameters not in the grid are kept.
    param_grid : dict or list of dicts
        As in :class:`~sklearn.model_selection.GridSearchCV`. It may not set
        ``y_bound`` (the selection's sensitivity is computed from one bound)
        or ``random_state`` (the search seeds every fit).
    epsilon : float, default=1.0
        Budget of the selection step: the exponential mechanism is pure
        ``epsilon``-DP with respect to the validation records. If the
        estimator has an ``epsilon`` parameter, every candidate and the refit
        are also trained at this budget (unless the grid sets ``epsilon``), so
        the search as a whole is (``epsilon``, ``delta``)-DP; estimators
        without a budget (such as :class:`~sklearn_pdp.OPSRegressor`, tuned by
        ``gamma``) contribute their own ``dp_epsilon_``.
    delta : float, default=1e-6
        Passed to every candidate and the refit when the estimator has a
        ``delta`` parameter (its budget, or the level at which it reports).
    refit : bool, default=True
        Retrain the selected parameters on all the data (as scikit-learn's
        ``refit=True``). This is a second release of every record, so its
        guarantee is added to ``dp_epsilon_``/``dp_delta_`` and its
        per-instance losses to ``pdp_losses_`` (sequential composition). With
        ``refit=False``, ``best_estimator_`` is the selected candidate, trained
        on its part only (about 1 / (m + 1) of the data), at no extra cost.
    n_jobs : int, default=None
        Number of candidates trained in parallel (joblib). All seeds are drawn
        before any fit, so the results do not depend on ``n_jobs``.
    random_state : int, RandomState instance or None, default=None
        Seeds the split, the candidates, the selection and the refit. All of
        them draw from one generator made from it like the estimators' noise
        (:func:`sklearn_pdp.set_config` ``secure_noise`` applies), through
        child seeds of 256 bits each.

    Attributes
    ----------
    best_estimator_ : estimator
        The refit estimator, or the selected candidate when ``refit=False``.
    best_params_ : dict
        Parameter setting of the selected candidate.
    best_index_ : int
        Index of ``best_params_`` in ``cv_results_["params"]``.
    cv_results_ : dict of numpy (masked) ndarrays
        ``"params"`` and one ``"param_<name>"`` column per parameter, as in
        :class:`~sklearn.model_selection.GridSearchCV`. Validation scores,
        ranks and selection probabilities are deliberately absent: they are
        functions of the private data that the privacy analysis does not
        cover. Only the selected index is released.
    pdp_losses_ : ndarray of shape (n_samples,)
        Per-instance epsilon of each training row, valid at ``dp_delta_``: a
        row in training part k has candidate k's per-instance loss; a
        validation row has the exponential mechanism's pure per-instance loss
        ``max_k |log P(k) - log P_{-i}(k)|`` (given the candidates, which do
        not depend on it); with ``refit`` the refit's loss is added. Both
        condition on the row's part, which is drawn independently of the data
        and not released.
    dp_epsilon_ : float
        Data-independent epsilon of the whole procedure: ``max(epsilon,
        max_k candidate_k.dp_epsilon_)``, plus the refit's ``dp_epsilon_``.
    dp_delta_ : float
        Its delta: ``max_k candidate_k.dp_delta_`` (the selection is pure),
        plus the refit's ``dp_delta_``.
    data_norm_, y_bound_ : float
        The bounds given to every fit (the estimator's, or read once from the
        data with a :class:`~sklearn_pdp.exceptions.PrivacyLeakWarning`).
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
    ``(2 y_bound)^2`` (the paper's R^2 is wrong: erratum E7 in doc/errata.rst), and
    adding a record can only increase every summed loss. Selecting with
    ``P(k) ~ exp(-epsilon * loss_k / (2 y_bound)^2)`` is therefore exactly
    ``epsilon``-DP; the textbook factor 1/2 would waste half the budget.

    The part of each record is drawn independently, so adding or removing one
    record moves no other record between parts. Like the wrapped estimators,
    the search treats the sample size as public, and with it the sizes of the
    parts; it raises an error when a training part is empty, which depends on
    the sample size, the number of candidates and ``random_state`` only
    (certain with fewer samples than candidates, likely with few more).

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
    >>> ops = OPSRegressor(data_norm=1.0, y_bound=1.0)
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
        n_jobs=None,
        random_state=None,
    ):
        self.estimator = estimator
        self.param_grid = param_grid
        self.epsilon = epsilon
        self.delta = delta
        self.refit = refit
        self.n_jobs = n_jobs
        self.random_state = random_state

    def _common_params(self, X, y):
        """Bounds and budget shared by every fit, resolved once for all."""
        if not isinstance(self.estimator, PrivateRegressorMixin):
            raise ValueError(
                "estimator must be a private regressor of sklearn_pdp, got "
                f"{type(self.estimator).__name__}."
            )
        self.data_norm_, bounds_X, self.y_bound_ = clone(self.estimator)._resolve_bounds(
            X, y
        )
        common = {"data_norm": self.data_norm_, "bounds_X": bounds_X, "y_bound": self.y_bound_}
        names = self.estimator.get_params(deep=False)
        for name in ("epsilon", "delta"):
            if name in names:
                common[name] = getattr(self, name)
        return common

    def _candidates(self, common):
        grid = list(ParameterGrid(self.param_grid))
        for params in grid:
            reserved = sorted(set(_RESERVED) & set(params))
            if reserved:
                raise ValueError(
                    f"param_grid may not set {reserved}: the search sets them on "
                    "every candidate."
                )
        # set_params here, so that a bad grid fails before any private fit
        return grid, [
            clone(self.estimator).set_params(**{**common, **params}) for params in grid
        ]

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
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True)
        common = self._common_params(X, y)
        grid, estimators = self._candidates(common)
        m, n = len(grid), X.shape[0]

        # All randomness is fixed before any fit, so results do not depend on
        # n_jobs: seeds of the split, the selection, the refit, the candidates.
        # 256 bits of the search's generator seed them all, so that under
        # secure_noise no draw is easier to guess than that generator.
        root = np.random.SeedSequence(
            noise_generator(self.random_state).randint(2**32, size=8, dtype=np.uint64)
        )
        split_seed, select_seed, refit_seed, *seeds = root.spawn(m + 3)
        # The split has its own generator, drawn row by row: removing the last
        # row leaves every other row in its part.
        parts = np.random.default_rng(split_seed).integers(m + 1, size=n)
        sizes = np.bincount(parts, minlength=m + 1)
        if sizes[:m].min() == 0:
            raise ValueError(
                f"PrivateGridSearchCV needs at least one training sample for each "
                f"of its {m} candidates, but the random split of {n} sample(s) "
                f"into {m + 1} parts (drawn from random_state, independently of "
                "the data) left a training part empty: use more samples or "
                "fewer candidates."
            )
        seeded = "random_state" in self.estimator.get_params(deep=False)
        if seeded:
            for est, seed in zip(estimators, seeds):
                est.set_params(random_state=_random_state(seed))

        fitted = Parallel(n_jobs=self.n_jobs)(
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
        log_proba = exponential_log_proba(scores, self.epsilon, SENSITIVITY)
        self.best_index_ = int(select(log_proba, np.random.default_rng(select_seed)))
        self.best_params_ = grid[self.best_index_]

        self.pdp_losses_ = np.empty(n)
        for k, est in enumerate(fitted):
            self.pdp_losses_[parts == k] = est.pdp_losses_
        self.pdp_losses_[val] = exponential_pdp_epsilon(
            scores, losses, self.epsilon, SENSITIVITY
        )
        self.dp_epsilon_ = max(self.epsilon, *(est.dp_epsilon_ for est in fitted))
        self.dp_delta_ = max(est.dp_delta_ for est in fitted)

        if self.refit:
            best = clone(estimators[self.best_index_])
            if seeded:
                best.set_params(random_state=_random_state(refit_seed))
            self.best_estimator_ = best.fit(X, y)
            self.pdp_losses_ += best.pdp_losses_
            self.dp_epsilon_ += best.dp_epsilon_
            self.dp_delta_ += best.dp_delta_
        else:
            self.best_estimator_ = fitted[self.best_index_]

        self.cv_results_ = _params_table(grid)
        # Kept for tests and audits, never to be published: the split (drawn
        # independently of the data) and the selection probabilities (a
        # function of the private data).
        self._parts = parts
        self._log_proba = log_proba
        return self

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
        return self.best_estimator_.predict(
            validate_data(self, X, reset=False, dtype=np.float64)
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
