"""Per-instance privacy report as a scikit-learn transformer."""

import warnings
from numbers import Real

import numpy as np
from sklearn.base import (
    BaseEstimator,
    MetaEstimatorMixin,
    TransformerMixin,
    _fit_context,
    clone,
)
from sklearn.utils.validation import check_is_fitted

from ..utils._docstrings import fill_doc
from ..utils._sklearn import HasMethods, Interval, _check_feature_names_in
from ..utils._arrays import compute, persist
from ..utils._dask import quantiles, scaled_data
from ..utils._validation import noise_generator, refuse_fit_params, validate_rows
from ..linear_model._adassp import AdaSSPRegressor
from ._leverage import design_ridge, leverage_residual
from ._publish import exact_summary, private_summary, publish
from ._plot import PrivacyLossDisplay, check_kind, import_pyplot
from ..exceptions import FallbackWarning

_COLUMNS = ("pdp_epsilon", "leverage")


class PDPReport(MetaEstimatorMixin, TransformerMixin, BaseEstimator):
    """Per-instance privacy report of a private regressor.

    ``fit`` fits a clone of ``estimator`` and records its per-instance privacy
    losses and a summary of them; ``transform`` tells, for any feature vector
    x, how much privacy a person with features x would lose to that release.

    Parameters
    ----------
    estimator : estimator object, default=None
        A private regressor of this package (anything with ``pdp_losses_``,
        ``dp_epsilon_``, ``dp_delta_`` and ``pdp_epsilon(X, y=None)``), or a
        :class:`~sklearn_pdp.model_selection.PrivateGridSearchCV` over one: its
        numbers are then the whole search's (at its ``pdp_delta_``), and the
        leverage is that of its ``best_estimator_``.
        ``None`` means ``AdaSSPRegressor()`` (see "Choosing an estimator" in
        the documentation). It is cloned, never fitted in place.
    delta : float, default=None
        The delta at which the per-instance epsilons are reported; set on the
        clone as its ``delta`` parameter. ``None`` keeps the estimator's own.
    thresholds : array-like of float, default=(0.1, 1.0)
        ``summary_["below"]`` gives the fraction of training rows whose
        per-instance epsilon is at most each of these values.
    publish_epsilon : float, default=None
        Extra privacy budget for publishing the report itself (see
        ``published_`` and :doc:`/publish`): half of it releases a noisy
        Gram matrix (analytic Gaussian mechanism, composed with the model
        at ``delta``), half a private summary (pure DP). Random projection
        and a search without refit need no Gram matrix (their losses are
        bounded from the release itself): all of it goes to the summary.
        ``pdp_losses_``, ``dp_epsilon_`` and ``summary_`` then include what
        the publication costs. Per record only: with ``groups`` in ``fit``
        it is a ValueError (what the publication costs a person with
        several records is not derived). Supported for every estimator but
        ``RandomProjectionRegressor(variant="paper")`` (no guarantee) and a
        search with ``refit=True``, which raise ``NotImplementedError``.
        With privately tightened bounds (``tighten_bounds``, of the
        estimator or of a search's), every person's published bound is the
        guarantee and nothing is spent (a
        :class:`~sklearn_pdp.exceptions.FallbackWarning` says why:
        :doc:`/mechanisms/tightening`, "Published reports"). None publishes
        nothing.
    publish_beta : float, default=0.05
        Failure probability of the published bounds: each holds for a given
        person with probability at least ``1 - publish_beta``.
    random_state : int, RandomState instance or None, default=None
        Seeds the publication's noise (the estimator has its own).

    Attributes
    ----------
    estimator_ : estimator object
        The fitted clone.
    pdp_losses_ : ndarray of shape (n_samples,)
        Exact per-instance epsilon of every training row: the privacy it loses
        by being in the training data (neighbour: the data without the row),
        with its own label. Equal to ``estimator_.pdp_losses_``.
    person_ids_ : ndarray of shape (n_people,)
        Only with ``groups`` in ``fit``: the distinct person keys (sorted as
        ``np.unique`` sorts them). Equal to ``estimator_.person_ids_``.
    person_losses_, person_pdp_kinds_ : ndarray of shape (n_people,)
        Only with ``groups``: each person's epsilon for removing all their
        records together and its kind (``estimator_.person_losses_`` and
        ``person_pdp_kinds_``; :doc:`/people`).
    dp_epsilon_ : float
        The data-independent (``dp_epsilon_``, ``dp_delta_``)-DP guarantee of
        ``estimator_`` over the whole declared domain: per record, or per
        person with ``groups`` and the estimator's ``max_records``
        (``summary_["dp_unit"]``).
    dp_delta_ : float
        The delta of ``dp_epsilon_``.
    summary_ : dict
        ``n_samples``; ``unit``, what the numbers below are over:
        ``"record"`` (``pdp_losses_``), or ``"person"`` with ``groups``
        (``person_losses_``, a person with several records counted once;
        ``n_people`` is then their number, else None); ``delta`` (of the
        per-instance epsilons); ``mean``, ``median``, ``q90``, ``q99`` and
        ``max`` of those losses; ``below``, a dict mapping each threshold
        to the fraction of records (people) at or below it; ``dp_epsilon`` and ``dp_delta``: the bound that holds for
        every possible person and every data set of this size in the declared
        domain, i.e. ``dp_epsilon_`` at ``dp_delta_``; ``dp_unit``, whom
        it covers: ``"person"`` for a fit with ``groups`` and
        ``max_records``, else ``"record"`` (a person with several records
        covered as a group); ``dp_over_median``, the
        ratio of ``dp_epsilon_`` to the median per-instance epsilon (how much
        the worst-case guarantee overstates the loss of a typical row);
        ``pdp_kind``, what kind of number each per-instance epsilon is: the
        estimator's ``pdp_kind_`` (per person, ``person_pdp_kind_``, the
        weakest of ``person_pdp_kinds_``; ``"exact"``, ``"conditional"``:
        exact given released quantities the row cannot influence, or
        ``"bound"``: a valid upper bound),
        ``"bound"`` once composed with a publication.
    published_ : PublishedReport
        Only with ``publish_epsilon``: the differentially private report,
        safe to pickle and publish (d x d matrices and scalars, no row).
        ``published_.epsilon(X, y=None)`` bounds a person's per-instance
        epsilon from it alone (with probability ``1 - publish_beta``; for a
        training row, its loss in ``pdp_losses_``), and
        ``published_.summary`` holds private estimates of ``summary_``'s
        ``mean``, ``median``, ``q90``, ``q99`` and ``below`` of those bounds.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when X has string column names.

    See Also
    --------
    AdaSSPRegressor : The default private regressor.

    Notes
    -----
    Two different questions are answered, and they are not comparable row by
    row:

    * ``pdp_losses_[i]`` is the loss of training row i, between the training
      data with and without it (Wang 2017's "pDP of a data set").
    * ``person_losses_[p]`` (with ``groups``) is the loss of person p for
      all their training rows together, between the training data with and
      without them; ``pdp_losses_`` stay per row, and so does ``plot``.
    * ``transform(X)`` is the loss of a person with features x and any label
      in the declared domain (the worst case over y, so it needs only x),
      between the training data and the training data with that person added
      (``estimator_.pdp_epsilon(X)``). It is meant for people outside the
      training data.

    Applied to a training row, ``transform`` answers the second question,
    i.e. for a second copy of the row, which can be *smaller* than the row's
    own ``pdp_losses_`` even though it takes the worst label: with h the
    row's hat value, its leverage is h / (1 - h) against the data without it
    but only h against the data that already contains it, and its residual
    shrinks by the same factor 1 - h. For a row that alone spans a direction
    (h close to 1) the difference is large. The comparison that does hold is
    within one pair of neighbouring data sets: the report of the data without
    row i, applied to x_i, is at least ``pdp_losses_[i]`` (equal for the
    row's actual label). Use ``pdp_losses_`` for the rows of the training
    data.

    The leverage column is x^T H^{-1} x in the estimator's privacy domain
    (scaled rows, H = X^T X + alpha I of the scaled training data, alpha the
    estimator's ridge strength or 0 if it has none): the statistic that
    drives the per-instance loss of ridge-based mechanisms. Where it is not
    defined it is its limit: for a release of the label mean alone
    (``mean_only_``, whose loss depends on the label alone) or with zero
    slopes, 1/n for every row, the leverage of the mean; where H is singular
    (linearly dependent columns, e.g. every category one-hot encoded, and no
    ridge), the hat value for rows in the span of the training rows and
    ``inf`` for rows with a component off it.

    The report holds non-private statistics of the training data (those of
    ``estimator_``): never publish the object or its numbers as they are.
    With ``publish_epsilon``, publish ``published_`` instead.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_pdp import OPSRegressor, PDPReport
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-1, 1, size=(2000, 3)) / np.sqrt(3)
    >>> y = np.clip(X @ [1.0, -0.5, 0.2] + 0.1 * rng.randn(2000), -1, 1)
    >>> report = PDPReport(OPSRegressor(data_norm=1.0, y_bound=1.0, random_state=0))
    >>> report.fit(X, y).transform(X[:2]).shape
    (2, 2)
    >>> report.get_feature_names_out().tolist()
    ['pdp_epsilon', 'leverage']
    >>> bool(report.summary_["dp_over_median"] > 5)
    True

    A report that can itself be published, at 0.2 more epsilon:

    >>> published = PDPReport(
    ...     OPSRegressor(data_norm=1.0, y_bound=1.0, random_state=0),
    ...     publish_epsilon=0.2, random_state=0).fit(X, y).published_
    >>> bool(published.epsilon(X[:1], y[:1])[0] <= published.dp_epsilon)
    True
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "pdp_epsilon"]), None],
        "delta": [Interval(Real, 0, 1, closed="neither"), None],
        "thresholds": ["array-like"],
        "publish_epsilon": [Interval(Real, 0, None, closed="neither"), None],
        "publish_beta": [Interval(Real, 0, 1, closed="neither")],
        "random_state": ["random_state"],
    }

    def __init__(self, estimator=None, *, delta=None, thresholds=(0.1, 1.0),
                 publish_epsilon=None, publish_beta=0.05, random_state=None):
        self.estimator = estimator
        self.delta = delta
        self.thresholds = thresholds
        self.publish_epsilon = publish_epsilon
        self.publish_beta = publish_beta
        self.random_state = random_state

    # the wrapped estimator validates its own parameters
    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, groups=None, **fit_params):
        """Fit the private estimator and record its privacy report.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,)
            Targets.
        groups : array-like of shape (n_samples,), default=None
            A person key per row, passed to the estimator's fit (routed as
            a :class:`~sklearn.pipeline.Pipeline` routes them with
            metadata routing, ``set_fit_request(groups=True)``): the report
            is then per person, ``person_ids_`` and ``person_losses_``
            (:doc:`/people`). Not with ``publish_epsilon`` (ValueError).
        **fit_params : dict
            Refused with why, ``sample_weight`` too: the guarantee and the
            per-instance losses assume that every row counts once.

        Returns
        -------
        self : object
            Fitted report.

        Warns
        -----
        FallbackWarning
            With ``publish_epsilon`` and privately tightened bounds: the
            published bounds are the guarantee and ``publish_epsilon`` is
            not spent (:doc:`/mechanisms/tightening`, "Published reports").
        """
        refuse_fit_params(self, fit_params)
        for attr in ("person_ids_", "person_losses_"):  # a refit without keys has none
            self.__dict__.pop(attr, None)
        thresholds = np.asarray(self.thresholds, dtype=np.float64).ravel()
        if not np.all(np.isfinite(thresholds) & (thresholds >= 0)):
            raise ValueError(
                "thresholds must be finite and non-negative, got "
                f"{self.thresholds!r}."
            )
        X, y = validate_rows(self, X, y, reset=True)
        if X.shape[0] == 1:
            # one row: no design to take its leverage against
            raise ValueError(
                "PDPReport needs at least 2 samples, got n_samples=1: a single "
                "sample has no leverage to report against the others."
            )
        if groups is not None and self.publish_epsilon is not None:
            # a published bound is a function of one row: what the publication
            # costs a person with several records is not derived
            raise ValueError(
                f"publish_epsilon={self.publish_epsilon!r} with groups: a published "
                "report bounds each record's loss from that record alone, and its "
                "accounting per person (all their records together) is not derived. "
                "Fit the report without groups (its numbers are then per record, a "
                "person with several records covered as a group), or set "
                "publish_epsilon=None.")
        est = clone(AdaSSPRegressor() if self.estimator is None else self.estimator)
        if self.delta is not None:
            est.set_params(delta=self.delta)
        self.estimator_ = est.fit(X, y) if groups is None else est.fit(X, y, groups=groups)
        # computed once and kept where they live: the summary takes a few passes
        self.pdp_losses_ = persist(est.pdp_losses_)
        if groups is not None:
            self.person_ids_ = est.person_ids_
            self.person_losses_ = np.asarray(est.person_losses_, dtype=np.float64)
            self.person_pdp_kinds_ = est.person_pdp_kinds_
        self.dp_epsilon_ = float(est.dp_epsilon_)
        self.dp_delta_ = float(est.dp_delta_)
        n_jobs = est.get_params().get("n_jobs")
        model = self._model()
        data = scaled_data(X, y, model.domain_scaler(), n_jobs)
        self._ridge = ridge = design_ridge(model, data)
        # training rows' hat values and residuals (scaled units), for plot()
        self._statistics = data.map_rows(leverage_residual(ridge), columns=2)
        if self.publish_epsilon is not None:
            self._publish(data, thresholds)
        self.summary_ = self._summary(thresholds)
        return self

    def _publish(self, data, thresholds):
        """Release ``published_``; compose the losses and the guarantee with it."""
        est = self.estimator_
        try:
            law = est.release_law()
        except (AttributeError, NotImplementedError) as exc:
            raise NotImplementedError(
                f"publish_epsilon is not supported for {type(est).__name__}: "
                f"{exc}" if isinstance(exc, NotImplementedError) else
                f"publish_epsilon is not supported for {type(est).__name__} "
                "(it has no release_law)."
            ) from None
        rng = noise_generator(self.random_state)
        self.published_ = published = publish(
            law, lambda: data.gram()[0], publish_epsilon=self.publish_epsilon,
            beta=self.publish_beta, delta=_pdp_delta(est), model_epsilon=self.dp_epsilon_,
            rng=rng, n_features_in=self.n_features_in_,
            feature_names_in=getattr(self, "feature_names_in_", None),
        )
        if law.data_independent:
            # every bound is one public number: the losses, the guarantee and
            # the summary are the fit's, exactly, and publish_epsilon is kept
            warnings.warn(
                f"PDPReport published {type(est).__name__}'s guarantee as every "
                f"person's bound: {law.reason}. publish_epsilon={self.publish_epsilon:g} "
                "was not spent (published_.summary_epsilon is 0, dp_epsilon_ is the "
                "fit's). For informative published bounds, declare bounds tight and "
                "publish a fit with tighten_bounds=False (tightening is on by "
                "default).", FallbackWarning,
                stacklevel=4)  # here, fit, scikit-learn's fit wrapper, the user
            summary = exact_summary(published.cap_epsilon, thresholds)
            n_rows = self.pdp_losses_.shape[0]
        else:
            statistics = est.law_statistics()

            def exact(Xs, ys):
                return published.loss_at(statistics(Xs, ys), Xs)

            self.pdp_losses_ = persist(data.map_rows(exact))
            self.dp_epsilon_, self.dp_delta_ = published.dp_epsilon, published.dp_delta
            # the summary is of the published bounds, each a function of its row alone
            bounds = np.asarray(compute(data.map_rows(published.scaled_epsilon))[0])
            # every row pays the summary's budget: the values' public floor
            summary = private_summary(bounds, thresholds, published.summary_epsilon,
                                      published.summary_epsilon, published.dp_epsilon, rng)
            n_rows = bounds.size
        published.summary = {
            "n_samples": n_rows, "delta": published.delta, **summary,
            "dp_epsilon": published.dp_epsilon, "dp_delta": published.dp_delta,
        }
        median = published.summary["median"]
        published.summary["dp_over_median"] = (
            published.dp_epsilon / median if median > 0 else np.inf)

    def _summary(self, thresholds):
        people = hasattr(self, "person_losses_")
        eps = self.person_losses_ if people else self.pdp_losses_
        q50, q90, q99 = quantiles(eps, [0.5, 0.9, 0.99])
        mean, peak, *below = compute(eps.mean(), eps.max(), *(
            (eps <= t).mean() for t in thresholds
        ))
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.float64(self.dp_epsilon_) / q50
        est = self.estimator_
        if people:
            kind = est.person_pdp_kind_
        else:
            # composed with a publication: not claimed exact
            kind = "bound" if self.publish_epsilon is not None else est.pdp_kind_
        return {
            "n_samples": self.pdp_losses_.size,
            "unit": "person" if people else "record",
            "n_people": eps.size if people else None,
            "delta": _pdp_delta(est),
            "mean": float(mean),
            "median": float(q50),
            "q90": float(q90),
            "q99": float(q99),
            "max": float(peak),
            "below": {float(t): float(b) for t, b in zip(thresholds, below)},
            "dp_epsilon": self.dp_epsilon_,
            "dp_delta": self.dp_delta_,
            "dp_unit": _guarantee_unit(est, people),
            # 0/0 (no guarantee, no loss) is meaningless: report inf
            "dp_over_median": np.inf if np.isnan(ratio) else float(ratio),
            "pdp_kind": kind,
        }

    def transform(self, X):
        """Worst-case-over-y epsilon and leverage of each row as a target.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Feature vectors of people who could be added to the training data.

        Returns
        -------
        X_report : ndarray of shape (n_samples, 2)
            Columns ``pdp_epsilon`` (the exact epsilon, at the estimator's
            ``delta``, of adding the person with the worst label in the
            declared domain; ``inf`` where no finite epsilon exists) and
            ``leverage`` (x^T H^{-1} x in the privacy domain). See the class
            Notes for what this means for rows of the training data. Per
            row also after a fit with ``groups``: each row is a person with
            that one record (for a person adding several records together,
            ``estimator_.pdp_epsilon(X, y, groups=keys)``).
        """
        check_is_fitted(self)
        X, _ = validate_rows(self, X, reset=False)
        est = self.estimator_
        ridge = self._ridge
        n_jobs = est.get_params().get("n_jobs")
        data = scaled_data(X, None, self._model().domain_scaler(), n_jobs)
        leverage = data.map_rows(lambda Xs, ys: ridge.row_statistics(Xs)["leverage"])
        if not hasattr(self, "published_") or self.published_.law.data_independent:
            # (a data-independent publication adds nothing to a person's loss)
            return np.stack([est.pdp_epsilon(X), leverage], axis=1)
        published = self.published_

        statistics = est.law_statistics()

        def added(Xs, ys):
            return published.loss_at(statistics(Xs, None, add=True), Xs)

        return np.stack([data.map_rows(added), leverage], axis=1)

    def _model(self):
        """The fitted linear model: a search's ``best_estimator_``, else the estimator."""
        return getattr(self.estimator_, "best_estimator_", self.estimator_)

    def get_feature_names_out(self, input_features=None):
        """Names of the output columns: ``pdp_epsilon`` and ``leverage``.

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            Only checked against the names seen during fit.

        Returns
        -------
        feature_names_out : ndarray of str objects
            ``["pdp_epsilon", "leverage"]``.
        """
        check_is_fitted(self)
        _check_feature_names_in(self, input_features)
        return np.asarray(_COLUMNS, dtype=object)

    @fill_doc
    def plot(self, ax=None, *, kind="box", leverage=False):
        """Distribution of the per-instance epsilons beside the DP epsilon.

        The style of Wang (2017), Figures 1 and 2: a box or violin plot of
        ``pdp_losses_`` on a log scale with ``dp_epsilon_`` as a line, and
        optionally the per-instance epsilon of every training row against its
        leverage, coloured by its residual. Rows with epsilon 0 (nothing to
        show on a log scale) and rows with infinite epsilon are counted in
        the axis label. Drawn by :class:`~sklearn_pdp.PrivacyLossDisplay`,
        whose :meth:`~sklearn_pdp.PrivacyLossDisplay.from_estimator` returns
        the display itself.

        Parameters
        ----------
        {plot}

        Returns
        -------
        ax : matplotlib Axes, or ndarray of two Axes when ``leverage=True``.
        """
        check_is_fitted(self)
        check_kind(kind)
        import_pyplot("PDPReport.plot")
        display = PrivacyLossDisplay.from_estimator(self, ax=ax, kind=kind, leverage=leverage)
        return display.axes_ if leverage else display.ax_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags


def _pdp_delta(est):
    """The delta of the estimator's per-instance losses: a search's
    ``pdp_delta_``, else its ``delta``."""
    return float(getattr(est, "pdp_delta_", est.delta))


def _guarantee_unit(est, people):
    """What ``dp_epsilon_`` covers: ``"person"`` (all of a person's records)
    for a fit with person keys and ``max_records`` (of the estimator or of a
    search's), else ``"record"``."""
    params = est.get_params()
    cap = params.get("max_records", params.get("estimator__max_records"))
    return "person" if people and cap is not None else "record"
