"""What a fit releases when the budget does not buy what was asked.

A user-set hyper-parameter that cannot meet the budget at this size raises
:class:`InfeasibleBudget` in the mechanism's calibration (a function of
public quantities only): the mechanism takes the ridge it offers
(:func:`ridge_fallback`) or the fit releases the private label mean, with
a reason in plain words and public thresholds (:func:`fallback_reason`).
"""

import copy
import warnings

import numpy as np

from .._release import ExactRelease, MeanRelease
from ...exceptions import FallbackWarning, PrivacyLeakWarning

# n epsilon per coefficient (slopes and intercept) up to which the label mean
# is released alone: see "Falling back to the mean" in the Mechanisms page.
MEAN_ONLY_RATE = 100.0


def mean_only_size(epsilon, n_features, rate=MEAN_ONLY_RATE):
    """The largest sample size whose fit releases the label mean alone."""
    return int(np.floor(rate * (n_features + 1) / epsilon))


class InfeasibleBudget(ValueError):
    """A user-set hyper-parameter cannot meet the epsilon budget at this size.

    Raised by a mechanism's calibration (a function of public quantities
    only), with ``ridge`` the larger ridge that meets the budget (the one
    of ``alpha="auto"``), which the mechanism then uses
    (:func:`ridge_fallback`), or None: :meth:`~sklearn_pdp.linear_model._base.PrivateRegressorMixin.fit`
    then releases the label mean at the budget. Either way a
    :class:`~sklearn_pdp.exceptions.FallbackWarning` carries the message,
    which names the parameter and a value that meets the budget.
    """

    def __init__(self, message, ridge=None):
        super().__init__(message)
        self.ridge = ridge


def ridge_fallback(exc, stacklevel=5):
    """The ridge that :class:`InfeasibleBudget` ``exc`` offers, with a
    FallbackWarning; ``exc`` itself again where it offers none (the label
    mean). ``stacklevel``: that of the caller's warning."""
    if exc.ridge is None:
        raise exc
    warnings.warn(f"{exc} It is used instead.", FallbackWarning, stacklevel=stacklevel)
    return exc.ridge


def ceil_text(value, digits=4):
    """``value`` rounded up to ``digits`` significant digits, as a string
    (a threshold that still holds once printed)."""
    if not (np.isfinite(value) and value > 0):
        return f"{value:g}"
    step = 10.0 ** (np.floor(np.log10(value)) - digits + 1)
    return f"{np.ceil(value / step) * step:.{digits}g}"


def fallback_reason(estimator, n_samples, n_features):
    """Why a fit of this size releases the label mean alone, with the
    public thresholds (epsilon and size) from which it fits slopes."""
    epsilon = float(estimator._mean_fallback_budget())
    records = estimator._person_records()
    size = estimator._mean_only_size(n_features)
    rule = estimator._mean_only_rate * (n_features + 1)
    slopes = f"{n_features} slope{'' if n_features == 1 else 's'}"
    per = "" if records == 1 else f" over max_records={records}"
    # the base rule's size; a larger one is a mechanism's own (random
    # projection: its sketch's label mean)
    rule_text = (f" (its rule: rows times epsilon{per}, here "
                 f"{n_samples * epsilon / records:.4g}, must exceed "
                 f"{estimator._mean_only_rate:g} per slope and intercept, here {rule:g})"
                 if size == mean_only_size(epsilon / records, n_features,
                                           estimator._mean_only_rate)
                 else "")
    return (f"{n_samples} rows at epsilon {epsilon:g} are too few for {slopes}: "
            f"this estimator fits slopes from epsilon "
            f"{ceil_text(slopes_epsilon(estimator, n_samples, n_features))} (at {n_samples} "
            f"rows) or from {size + 1} rows (at epsilon {epsilon:g}); below that it "
            f"releases the private label mean{rule_text}")


def released_text(mean_only, fit_intercept, coef):
    """What a fit released where it is less than was asked for, in words
    (its ``mean_only_``, ``fit_intercept`` and ``coef_``)."""
    if mean_only:
        return ("the private label mean alone" if fit_intercept
                else "the zero model (no intercept holds the label mean)")
    if not np.any(coef):
        return ("zero slopes (its model is the private label mean)" if fit_intercept
                else "zero slopes (without an intercept its model is 0)")
    return "less than it was asked for"


def slopes_epsilon(estimator, n_samples, n_features):
    """An epsilon (within 1e-6 relative of the smallest) from which a fit
    of ``n_samples`` rows releases slopes: public (n, d and the other
    parameters)."""
    trial = copy.copy(estimator)

    def mean_only(epsilon):
        trial.epsilon = epsilon
        return trial._releases_mean(n_samples, n_features)

    # the base rule's bound: the label mean alone up to it
    low = estimator._mean_only_rate * (n_features + 1) / n_samples
    high = 2.0 * low
    while mean_only(high):
        low, high = high, 2.0 * high
    while high > low * (1.0 + 1e-6):
        middle = 0.5 * (low + high)
        low, high = (middle, high) if mean_only(middle) else (low, middle)
    return high


class FallbackMixin:
    """How an estimator's parameters choose the release of a fit: least
    squares at ``epsilon=inf``, the label mean where the budget buys no
    slopes, else the mechanism's own (``_make_release``, with the data-
    independent ``_mechanism_guarantee`` of the estimator's subclass)."""

    # n epsilon per coefficient up to which a fit releases the label mean alone
    _mean_only_rate = MEAN_ONLY_RATE

    def _budget_guarantee(self, n_samples, n_features, min_samples=None):
        """:meth:`_mechanism_guarantee`, or the budget where a user-set
        hyper-parameter cannot meet it (:meth:`~sklearn_pdp.linear_model._base.PrivateRegressorMixin.fit` then
        releases the label mean at the budget: :class:`InfeasibleBudget`)."""
        try:
            return self._mechanism_guarantee(n_samples, n_features, min_samples)
        except InfeasibleBudget:
            return float(self.epsilon), self.delta

    def _choose_release(self, data, scaler):
        """The release this fit makes on ``data`` (scaled by ``scaler``), as
        the parameters calibrate it: least squares at ``epsilon=inf``, the
        label mean where the public size is too small for slopes or a
        user-set hyper-parameter cannot meet the budget (the mechanism's
        calibration raises :class:`InfeasibleBudget`), else the mechanism's
        own (:meth:`_make_release`)."""
        n, d = data.n_samples, data.n_features - int(scaler.fit_intercept)
        if self._unprotected():
            warnings.warn(
                "epsilon=inf protects nothing: the fit is least squares on the "
                "clipped data, without noise (dp_epsilon_ and pdp_losses_ are inf). "
                "Use it only to test a pipeline.",
                PrivacyLeakWarning,
                stacklevel=4,  # here, fit, scikit-learn's fit wrapper, the user
            )
            return ExactRelease.from_budget(np.inf, self.delta, data, scaler=scaler)
        reason = None
        if n > self._mean_only_size(d):
            try:
                return self._make_release(data, scaler)
            except InfeasibleBudget as exc:
                # a function of public quantities (the parameters and n):
                # what the budget allows is the label mean
                reason = str(exc).rstrip(".")
        release = MeanRelease.from_budget(self.epsilon, self.delta, data, scaler=scaler,
                                          records=self._person_records())
        release.guarantee = self.dp_guarantee(n, d)
        release.reason = reason or fallback_reason(self, n, d)
        return release

    def _person_records(self):
        """The public cap on a person's rows that a release calibrated by a
        sensitivity sizes its noise for: ``max_records`` where the estimator
        calibrates a whole person itself (``_person_sensitivity``), else 1
        (group privacy covers the person: :doc:`/people`)."""
        if not getattr(self, "_person_sensitivity", False):
            return 1
        return getattr(self, "max_records", None) or 1

    def _mean_only_size(self, n_features):
        """The largest size at which :meth:`fit` releases the label mean alone
        (0: never; only with an intercept and an epsilon budget). A release
        whose noise covers a person's :meth:`_person_records` rows has the
        budget of one record over them: the rule takes that."""
        budget = self._mean_fallback_budget()
        if not self.fit_intercept or budget is None:
            return 0
        return mean_only_size(budget / self._person_records(), n_features,
                              self._mean_only_rate)

    def _releases_mean(self, n_samples, n_features):
        """Whether a fit of this size releases the label mean alone (as
        :meth:`fit` decides it, from :meth:`_mean_only_size`)."""
        return n_samples <= self._mean_only_size(n_features)

    def _mean_fallback_budget(self):
        """The epsilon budget of the fallback to the label mean, or None where
        the estimator never falls back (a raw noise level, no budget)."""
        return getattr(self, "epsilon", None)

    def _unprotected(self):
        """Whether the budget is ``epsilon=inf``: nothing is protected."""
        epsilon = getattr(self, "epsilon", None)
        return epsilon is not None and np.isposinf(epsilon)
