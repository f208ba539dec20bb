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

import sklearn_pdp


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
    "ops": with_epsilon("OPSRegressor"),
    "adaops": with_epsilon("AdaOPSRegressor"),
    "adassp": with_epsilon("AdaSSPRegressor"),
    "outpert": with_epsilon("OutputPerturbationRegressor"),
    "objpert": with_epsilon("ObjPertRegressor"),
    "randproj": with_epsilon("RandomProjectionRegressor"),
}
