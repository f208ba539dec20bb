"""The estimators the benchmarks run, built for a privacy budget.

``FACTORIES`` maps each short name of the package's registry of regressors
(``sklearn_pdp._registry.REGRESSORS``, the command line's ``--estimator``
names) to a function ``factory(epsilon, delta, n_samples, n_features, *,
data_norm, y_bound, random_state)`` returning an unfitted estimator whose
data-independent guarantee ``dp_epsilon_`` at ``delta`` is at most
``epsilon`` for training sets of ``n_samples`` rows and ``n_features``
features (both public). The first line of a factory's docstring says how it
meets the budget; it is printed with the results. Every regressor of the
registry takes the budget as ``epsilon`` directly; one that needs more is
given its own entry, for example ``with_epsilon(AdaOPSRegressor, kappa=...)``.
"""

from sklearn_pdp._registry import REGRESSORS


def with_epsilon(cls, **params):
    """Factory of an estimator class that takes the budget as ``epsilon``
    directly.

    ``params`` are further parameters: constants, or functions
    ``rule(epsilon, delta, n_samples, n_features)`` of public quantities only
    (the first line of a rule's docstring is printed with the results).
    """

    def make(
        epsilon, delta, n_samples, n_features, *, data_norm, y_bound, random_state=None
    ):
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
    make.__doc__ = f"{cls.__name__} with ``epsilon`` and ``delta`` set to the budget" + (
        "; " + "; ".join(notes) if notes else ""
    ) + "."
    return make


FACTORIES = {name: with_epsilon(cls) for name, cls in REGRESSORS.items()}
