"""Package-wide settings of sklearn-pdp.

Like scikit-learn's own ``set_config``, but for the settings that only this
package reads. The settings are process-wide: worker processes started by
joblib begin with the defaults.
"""

from contextlib import contextmanager

__all__ = ["get_config", "set_config", "config_context"]

_DEFAULTS = {"secure_noise": True}
_config = dict(_DEFAULTS)


def get_config():
    """Current values of the package settings.

    Returns
    -------
    config : dict
        Keys are the parameters of :func:`set_config`.

    Examples
    --------
    >>> from sklearn_pdp import get_config
    >>> get_config()["secure_noise"]
    True
    """
    return dict(_config)


def set_config(secure_noise=None):
    """Set package-wide settings.

    Parameters
    ----------
    secure_noise : bool, default=None
        Where an estimator fitted with ``random_state=None`` draws its noise.
        True (the default of the package) gives every such fit a fresh
        generator seeded with 256 bits from the operating system's
        cryptographically secure source (:mod:`secrets`); this includes the
        random split and selection of
        :class:`~sklearn_pdp.model_selection.PrivateGridSearchCV`. False
        restores numpy's global ``RandomState``, which anyone can make
        predictable with ``np.random.seed``: only for reproducing old
        experiments, never for a release. An explicit ``random_state`` is
        always honoured (reproducible, and therefore predictable, noise).
        None leaves the setting unchanged.

    Examples
    --------
    >>> from sklearn_pdp import get_config, set_config
    >>> set_config(secure_noise=False)  # numpy's global generator: not for releases
    >>> get_config()["secure_noise"]
    False
    >>> set_config(secure_noise=True)
    """
    if secure_noise is not None:
        if not isinstance(secure_noise, bool):
            raise TypeError(f"secure_noise must be a bool, got {secure_noise!r}")
        _config["secure_noise"] = secure_noise


@contextmanager
def config_context(**new_config):
    """Context manager that applies :func:`set_config` temporarily.

    Parameters
    ----------
    **new_config
        Parameters of :func:`set_config`.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_pdp import OPSRegressor, config_context
    >>> rng = np.random.RandomState(0)
    >>> X, y = rng.uniform(-1, 1, size=(500, 2)), rng.uniform(-1, 1, size=500)
    >>> with config_context(secure_noise=False):  # reproduce with np.random.seed
    ...     np.random.seed(0)
    ...     reg = OPSRegressor(data_norm=2.0, y_bound=1.0).fit(X, y)
    """
    old = get_config()
    set_config(**new_config)
    try:
        yield
    finally:
        _config.update(old)
