"""Training rows on Dask: each block scaled and processed where it lives.

:class:`DaskScaledData` gives Dask arrays the interface of the in-memory
``_rows.ScaledData``: reductions summed pairwise on the workers (only d x d
matrices and scalars come back to the driver), per-row results as lazy Dask
arrays with the row chunks of X. Also the exact quantiles of a Dask array
(:func:`quantiles`, which takes numpy arrays too), and :func:`scaled_data`,
which picks the rows a fit reads. Dask itself is imported only inside the
functions, which run only when a Dask array is given.
"""

import operator
from functools import partial

import numpy as np

from ._arrays import is_dask_array
from ._rows import ScaledData, _Rows, add


class DaskScaledData(_Rows):
    """Rows of a Dask array: each block is scaled and processed where it lives.

    Same interface as :class:`~sklearn_pdp.utils._rows.ScaledData`: reductions are
    computed at once (partial results summed pairwise on the workers, only
    the total comes to the driver), per-row results are lazy Dask arrays
    with the row chunks of ``X``. The blocks are ``ScaledData`` chunked in
    memory, so a large block needs no more scratch memory than an in-memory
    fit. ``X`` has a single chunk along its columns (see
    :func:`~sklearn_pdp.utils._validation.validate_rows`).
    """

    def reduce(self, func, combine=add):
        """Same as :meth:`~sklearn_pdp.utils._rows.ScaledData.reduce`, computed with Dask."""
        import dask

        starts = np.cumsum((0,) + self.X.chunks[0][:-1])
        X_blocks = self.X.to_delayed().ravel()
        y_blocks = [None] * len(X_blocks) if self.y is None else self.y.to_delayed()
        parts = [
            dask.delayed(_reduce_block)(xb, yb, self.scaler, int(start), func, combine)
            for xb, yb, start in zip(X_blocks, y_blocks, starts)
        ]
        return dask.compute(tree_reduce(parts, combine))[0]

    def map_rows(self, func, *, columns=None):
        """Same as :meth:`~sklearn_pdp.utils._rows.ScaledData.map_rows`, a lazy Dask array."""
        import dask.array as da

        block = partial(
            _map_block, scaler=self.scaler, func=func, columns=columns
        )
        arrays = [self.X, "ij"] + ([] if self.y is None else [self.y, "i"])
        return da.blockwise(
            block, "i" if columns is None else "ik", *arrays,
            new_axes=None if columns is None else {"k": columns},
            concatenate=True, meta=np.empty((0,) * (1 + (columns is not None))),
        )


def _check_finite(*blocks):
    # what check_array does for in-memory data, here block by block
    for block in blocks:
        if block is not None and not np.isfinite(block).all():
            raise ValueError("Input contains NaN or infinity.")


def _reduce_block(xb, yb, scaler, start, func, combine):
    _check_finite(xb, yb)
    return ScaledData(xb, yb, scaler, start).reduce(func, combine)


def _map_block(xb, yb=None, *, scaler, func, columns):
    _check_finite(xb, yb)
    return ScaledData(xb, yb, scaler).map_rows(func, columns=columns)


def tree_reduce(parts, combine=add):
    """Pairwise ``combine`` of delayed partial results (a tree of depth log2 n)."""
    import dask

    while len(parts) > 1:
        pairs = [dask.delayed(combine)(a, b) for a, b in zip(parts[::2], parts[1::2])]
        parts = pairs + parts[len(pairs) * 2:]
    return parts[0]


def quantiles(values, q):
    """``np.quantile(values, q)`` (linear interpolation), exact also on Dask.

    Non-negative values only (per-instance epsilons, ``inf`` allowed). On a
    Dask array the order statistics are found by a radix selection on the
    bit patterns of the floats (monotone for non-negative floats): four
    passes, each a histogram of the next 16 bits among the values that share
    the bits found so far, summed on the workers.
    """
    q = np.asarray(q, dtype=np.float64)
    with np.errstate(invalid="ignore"):  # inf - inf between two infinite losses
        if not is_dask_array(values):
            return np.quantile(values, q)
        return _dask_quantiles(values, q)


def _dask_quantiles(values, q):
    h = (values.shape[0] - 1) * q
    below = np.floor(h).astype(np.int64)
    ranks = np.unique(np.concatenate([below, np.minimum(below + 1, values.shape[0] - 1)]))
    order = dict(zip(ranks.tolist(), _select(values, ranks)))
    # numpy's own interpolation between the two order statistics
    return np.array([
        np.quantile([order[lo], order[min(lo + 1, values.shape[0] - 1)]], frac)
        for lo, frac in zip(below.tolist(), h - below)
    ])


def _select(values, ranks):
    """Order statistics (0-based ``ranks``) of a non-negative 1-D Dask array."""
    import dask

    bits = [
        dask.delayed(_as_bits)(block) for block in values.to_delayed()
    ]
    prefix = np.zeros(len(ranks), dtype=np.uint64)
    remaining = np.asarray(ranks, dtype=np.int64)
    for shift in (48, 32, 16, 0):
        parts = [dask.delayed(_digit_counts)(b, prefix, shift) for b in bits]
        counts = np.cumsum(dask.compute(tree_reduce(parts, operator.add))[0], axis=1)
        for j in range(len(ranks)):
            digit = np.searchsorted(counts[j], remaining[j], side="right")
            remaining[j] -= counts[j, digit - 1] if digit else 0
            prefix[j] = (prefix[j] << np.uint64(16)) | np.uint64(digit)
    return prefix.view(np.float64)


def _as_bits(block):
    # + 0.0 turns -0.0 into +0.0, whose bit pattern is the smallest
    return (np.asarray(block, dtype=np.float64) + 0.0).view(np.uint64)


def _digit_counts(bits, prefix, shift):
    """Histogram of the 16 bits at ``shift`` of the values sharing each prefix."""
    counts = np.zeros((len(prefix), 1 << 16), dtype=np.int64)
    digits = ((bits >> np.uint64(shift)) & np.uint64(0xFFFF)).astype(np.intp)
    for j, p in enumerate(prefix):
        # the bits above the digit must equal the prefix found so far
        keep = slice(None) if shift == 48 else (bits >> np.uint64(shift + 16)) == p
        counts[j] = np.bincount(digits[keep], minlength=1 << 16)
    return counts


def scaled_data(X, y, scaler, n_jobs=None):
    """The rows a fit reads: a :class:`~sklearn_pdp.utils._rows.ScaledData` (on
    ``n_jobs`` threads) for an array in memory, a :class:`DaskScaledData`
    for a Dask array."""
    if is_dask_array(X):
        return DaskScaledData(X, y, scaler)
    return ScaledData(X, y, scaler, n_jobs=n_jobs)
