"""The estimators the benchmarks run, built for a privacy budget.

``FACTORIES`` maps a short name to a function ``factory(epsilon, delta,
n_samples, n_features, *, data_norm, y_bound, random_state)`` returning an
unfitted estimator whose data-independent guarantee ``dp_epsilon_`` at
``delta`` is at most ``epsilon`` for training sets of ``n_samples`` rows and
``n_features`` features (both public). The first line of a factory's
docstring says how it meets the budget; it is printed with the results.
Adding an estimator is one entry, for example
``"adaops": with_epsilon("AdaOPSRegressor")``.
"""

import numpy as np
from scipy.optimize import brentq

import sklearn_pdp
from sklearn_pdp._ops import ops_dp_epsilon


def _largest(increasing, limit, lo=-60.0, hi=60.0):
    """Largest log-parameter where ``increasing(exp(.)) <= limit`` (root search).

    The root is nudged down until the condition is verified, so rounding can
    only make the result more private.
    """

    def excess(log_value):
        return increasing(np.exp(log_value)) - limit

    if excess(lo) > 0:
        raise ValueError("the budget cannot be reached")
    log_value = hi if excess(hi) <= 0 else brentq(excess, lo, hi, xtol=1e-10)
    while excess(log_value) > 0:
        log_value -= 1e-9
    return float(np.exp(log_value))


def ops_gamma(epsilon, delta, alpha, n_samples):
    """Largest gamma whose OPS ``dp_epsilon_`` is at most ``epsilon``.

    OPS is parametrised by the posterior scaling gamma, not by a budget; its
    data-independent epsilon grows with gamma, so a root search on log(gamma)
    inverts it.
    """
    return _largest(
        lambda gamma: ops_dp_epsilon(delta, alpha, gamma, n_samples), epsilon
    )


def ops_alpha(epsilon, delta, n_samples):
    """sqrt(n), raised if needed so that ``epsilon`` can be reached.

    OPS's epsilon does not vanish as gamma -> 0 (the posterior covariance
    itself depends on the data: the loss tends to that of a covariance change
    of size 1/alpha), so small budgets need more regularisation. alpha is
    raised until gamma -> 0 costs at most half the budget.
    """
    alpha = float(np.sqrt(n_samples))
    floor = ops_dp_epsilon(delta, alpha, 1e-12, n_samples)
    if floor <= epsilon / 2:
        return alpha
    inverse = _largest(
        lambda inv_alpha: ops_dp_epsilon(delta, 1 / inv_alpha, 1e-12, n_samples),
        epsilon / 2,
        hi=-np.log(alpha),
    )
    return 1.0 / inverse


def make_ops(
    epsilon, delta, n_samples, n_features, *, data_norm, y_bound, random_state=None
):
    """OPSRegressor: alpha = sqrt(n) (more for budgets that need it, see ops_alpha), gamma = the largest value whose dp_epsilon_ is within the budget (root search on sklearn_pdp._ops.ops_dp_epsilon).

    alpha = sqrt(n) (n is public) keeps the worst-case residual bound
    1 + sqrt(n)/(2 sqrt(alpha)) from growing like sqrt(n), which would force
    gamma, and so the utility, towards zero for large n.
    """
    alpha = ops_alpha(epsilon, delta, n_samples)
    return sklearn_pdp.OPSRegressor(
        gamma=ops_gamma(epsilon, delta, alpha, n_samples),
        alpha=alpha,
        delta=delta,
        data_norm=data_norm,
        y_bound=y_bound,
        random_state=random_state,
    )


def half_wu_alpha(epsilon, delta, n_samples, n_features):
    """alpha = sqrt(n d / epsilon) / 2, d counting the constant feature: half of Wu et al.'s data-independent rule"""
    return 0.5 * np.sqrt(n_samples * (n_features + 1) / epsilon)


def with_epsilon(class_name, **params):
    """Factory of an estimator that takes the budget as ``epsilon`` directly.

    ``params`` are further parameters: constants, or functions
    ``rule(epsilon, delta, n_samples, n_features)`` of public quantities only
    (the first line of a rule's docstring is printed with the results).
    """

    def make(
        epsilon, delta, n_samples, n_features, *, data_norm, y_bound, random_state=None
    ):
        cls = getattr(sklearn_pdp, class_name)
        chosen = {
            name: rule(epsilon, delta, n_samples, n_features) if callable(rule) else rule
            for name, rule in params.items()
        }
        return cls(
            epsilon=epsilon,
            delta=delta,
            data_norm=data_norm,
            y_bound=y_bound,
            random_state=random_state,
            **chosen,
        )

    notes = [
        f"{name} = {rule!r}" if not callable(rule) else rule.__doc__.splitlines()[0]
        for name, rule in params.items()
    ]
    make.__doc__ = f"{class_name} with ``epsilon`` and ``delta`` set to the budget" + (
        "; " + "; ".join(notes) if notes else ""
    ) + "."
    return make


FACTORIES = {
    "ops": make_ops,
    "adaops": with_epsilon("AdaOPSRegressor"),
    "outpert": with_epsilon("OutputPerturbationRegressor", alpha=half_wu_alpha),
    "objpert": with_epsilon("ObjPertRegressor"),
    "randproj": with_epsilon("RandomProjectionRegressor"),
}
