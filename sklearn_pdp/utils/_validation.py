"""Checks of what a fit is given: the rows, the labels, and delta against n.

:func:`validate_rows` gives float64 rows and labels as scikit-learn's
``validate_data`` does, and keeps Dask arrays lazy (checked block by block
when they are processed).
"""

import secrets
import warnings

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_array, check_consistent_length, validate_data

from ._arrays import is_dask_array
from .._config import get_config as _get_pdp_config
from ..exceptions import PrivacyLeakWarning


def refuse_fit_params(estimator, fit_params):
    """Refuse ``fit``'s arguments beyond X and y by name, ``sample_weight``
    with why, instead of Python's TypeError about an unexpected keyword.

    Per-row weights change every row's sensitivity (a row of weight w moves
    the statistics w times as far): the guarantee and the per-instance losses
    hold for unit weights. ``fit(X, y, **fit_params)`` keeps ``sample_weight``
    out of the signature, which scikit-learn reads (``has_fit_parameter``)
    to skip its sample-weight checks and to route no weights to ``fit``.
    ``sample_weight=None`` is unit weights and passes.
    """
    given = {k: v for k, v in fit_params.items() if k != "sample_weight" or v is not None}
    if "sample_weight" in given:
        raise TypeError(
            f"{type(estimator).__name__}.fit does not take sample_weight: per-row weights "
            "change every row's sensitivity (a row of weight w counts w times), and the "
            "privacy guarantee (dp_epsilon_) and the per-instance losses (pdp_losses_) "
            "assume that every row counts once. Fit on the rows as they are.")
    if given:
        raise TypeError(f"{type(estimator).__name__}.fit takes X and y only, got "
                        f"{', '.join(sorted(given))}.")


def validate_rows(estimator, X, y="no_validation", *, reset):
    """Validated float64 ``X`` and 1-D ``y``, as ``validate_data`` gives them.

    ``y="no_validation"`` validates ``X`` only (``y`` is returned as None);
    ``y=None`` is an error for an estimator that requires y. Dask arrays
    stay Dask arrays (checked lazily: non-finite values raise when a block
    is processed), rechunked to one chunk along the columns and ``y`` to the
    row chunks of ``X``; everything else goes through scikit-learn's
    ``validate_data``.
    """
    no_y = isinstance(y, str) and y == "no_validation"
    if is_dask_array(X) or is_dask_array(y):
        return _validate_dask(estimator, X, None if no_y else y, reset, required=not no_y)
    try:
        if no_y:
            return validate_data(estimator, X, reset=reset, dtype=np.float64), None
        X, y = validate_data(estimator, X, y, reset=reset, dtype=np.float64,
                             y_numeric=True)
    except ValueError as exc:
        if "could not convert string to float" not in str(exc):
            raise
        # scikit-learn's text first (its checks match it), then the way out
        raise ValueError(
            f"{exc}. A text column must be encoded first: one-hot encode it with "
            "declared categories (OneHotEncoder(categories=...), see the "
            "'Preparing a table without leaking' page of the sklearn-pdp documentation)."
        ) from exc
    # y_numeric converts only object arrays: strings and complex end here
    if y.dtype.kind not in "biuf":
        raise ValueError(f"y must contain real numbers, got dtype {y.dtype}.")
    return X, y.astype(np.float64, copy=False)


def _validate_dask(estimator, X, y, reset, required):
    import dask.array as da

    if not is_dask_array(X):
        X = da.from_array(check_array(X, dtype=np.float64))
    if X.ndim != 2:
        raise ValueError(f"Expected a 2-D array for X, got a Dask array of shape {X.shape}.")
    if np.isnan(X.shape[0]):
        raise ValueError(
            "X is a Dask array with unknown chunk sizes: call "
            "X.compute_chunk_sizes() (or to_dask_array(lengths=True)) first."
        )
    if X.shape[0] == 0:
        raise ValueError("Found array with 0 sample(s) while a minimum of 1 is required.")
    _check_real("X", X.dtype)
    X = X.astype(np.float64).rechunk({1: -1})
    validate_data(estimator, X, reset=reset, skip_check_array=True)
    if not required:
        return X, None
    if y is None:
        raise ValueError(
            f"{type(estimator).__name__} requires y to be passed, but the target y is None."
        )
    if not is_dask_array(y):
        y = da.from_array(np.asarray(y), chunks=X.chunks[0])
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"y should be a 1d array, got a Dask array of shape {y.shape}.")
    check_consistent_length(X, y)
    _check_real("y", y.dtype)
    return X, y.astype(np.float64).rechunk((X.chunks[0],))


def _check_real(name, dtype):
    if dtype.kind not in "biuf":
        raise ValueError(f"{name} must contain real numbers, got dtype {dtype}.")


def warn_large_delta(delta, n_samples, stacklevel=2):
    """A :class:`~sklearn_pdp.exceptions.PrivacyLeakWarning` when ``delta >=
    1 / n_samples``: an (epsilon, delta) guarantee with such a delta permits
    publishing one whole record (each with probability delta)."""
    if delta is not None and n_samples and delta >= 1.0 / n_samples:
        warnings.warn(
            f"delta={delta:g} is at least 1 / n_samples = {1.0 / n_samples:.3g}: "
            "a mechanism that publishes a random record in full would meet this "
            "guarantee. Use delta well below 1 / n_samples (e.g. 1e-6).",
            PrivacyLeakWarning, stacklevel=stacklevel + 1,
        )


def noise_generator(random_state):
    """The random generator from which a fit draws all of its noise.

    ``random_state`` is used as scikit-learn uses it (``check_random_state``)
    except for None: an int seeds a new ``RandomState`` (reproducible fits,
    for experiments), an instance is used as is, and None gives a fresh
    ``RandomState`` seeded with 256 bits from :mod:`secrets`, so that no
    ``np.random.seed`` can predict a release. Under
    ``sklearn_pdp.set_config(secure_noise=False)``, None is numpy's global
    ``RandomState`` (predictable after ``np.random.seed``), as in
    scikit-learn.
    The noise is sampled in float64, so the reported epsilons are those of
    the ideal real-valued mechanism (floating-point caveats, Mironov 2012:
    see the README section "Noise source and floating point").
    """
    if random_state is None and _get_pdp_config()["secure_noise"]:
        seed = np.random.SeedSequence(secrets.randbits(256))
        return np.random.RandomState(np.random.MT19937(seed))
    return check_random_state(random_state)
