"""The training rows as the privacy analysis sees them, in memory or on Dask.

Every mechanism needs two kinds of passes over the rows, both expressed on one
chunk of scaled rows at a time: reductions to d x d sufficient statistics
(X^T X, X^T y, ...) and one value per row (per-instance losses). A numpy
array is processed chunk by chunk in memory (:class:`ScaledData`); a
``dask.array.Array`` is processed block by block where its blocks live
(:class:`DaskScaledData`), each block again in chunks. Only d x d matrices
and scalars come back to the driver; per-row results stay lazy Dask arrays
with the row chunks of X. Dask is imported only when a Dask array is given.

A chunk is a :class:`ScaledRows`: where every row lies within ``data_norm``
its products with d x d matrices are taken on the user's rows themselves,
the scaling folded into the matrices, so a pass makes no copy of X.
"""

import operator
import sys
import threading
from contextlib import nullcontext
from functools import cached_property, partial, reduce

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs, parallel_config
from sklearn import get_config
from threadpoolctl import threadpool_limits
from sklearn.utils import gen_batches
from sklearn.utils.validation import check_array, check_consistent_length, validate_data

# Upper limit (MiB) of the scratch memory of one chunk (four copies of its
# rows); scikit-learn's ``working_memory`` setting applies when it is
# smaller. Chunks of rows that stay in the cache between the passes of a
# chunk (norms, GEMM, products): at d = 100, 16 rather than 64 MiB took the
# CPU time of the Gram pass at n = 1e6 from 0.52 to 0.43 s and of the
# leverage pass from 0.71 to 0.59 s (one BLAS thread); no change at d = 10.
_CHUNK_MIB = 16
# Upper limit of the rows of one chunk: the per-row privacy accounting keeps
# dozens of temporaries per row (hundreds for the quadrature of objective
# perturbation) that the MiB limit, sized for the rows, does not see. At
# n = 1e6, d = 10, 2^15 rather than 2^16 took the traced peak of an OPS fit
# from 31% to 25% of X (AdaSSP 59% to 42%), its CPU time within 2%.
_CHUNK_ROWS = 1 << 15
# Per-row passes over rows narrower than this run BLAS on one thread: each
# chunk's product is then a few percent of its single-threaded accounting,
# which the BLAS workers, busy-waiting after every product, slow down. At
# n = 1e6, d = 10 an OPS fit took 0.40 rather than 0.56 s; at d = 30 and
# d = 100 the threaded products won as much as the spinning cost (0.61
# against 0.63 s, 1.75 against 1.94 s).
_THREADED_MIN_FEATURES = 32


class DomainScaler:
    """Maps data into the domain of the privacy analysis, and models back.

    The declared bounds are public. With ``bounds_X = (lower, upper)`` each
    feature is clipped to its range, centred at its midpoint and divided by
    its half-width times ``sqrt(d)``, so every row lies in the unit ball; with
    ``data_norm`` rows are divided by it and rows still longer than 1 are
    scaled down to norm 1. Labels are clipped to ``y_bound`` (a pair
    ``(low, high)`` or ``b`` for ``(-b, b)``), centred at its midpoint and
    divided by its half-width, so they lie in [-1, 1]. With ``fit_intercept``
    a constant feature 1 is appended: the mechanisms leave it unpenalised, so
    the intercept is not shrunk. Clipping happens on copies.
    """

    def __init__(self, data_norm, y_bound, fit_intercept, bounds_X=None):
        self.data_norm = data_norm
        self.y_bound = y_bound
        self.fit_intercept = fit_intercept
        self.bounds_X = bounds_X
        low, high = label_range(y_bound)
        self.y_mid, self.y_half = 0.5 * (low + high), 0.5 * (high - low)
        if bounds_X is None:
            self.x_mid, self.x_scale = 0.0, data_norm
        else:
            lower, upper = bounds_X
            self.x_mid = 0.5 * (lower + upper)
            self.x_scale = 0.5 * (upper - lower) * np.sqrt(lower.shape[0])

    def scale(self, X, y=None, *, out=None):
        """Scaled (and clipped) copy of the rows ``X`` and labels ``y``.

        ``out``: an array of shape (n, d + fit_intercept) to write the rows into.
        """
        d = X.shape[1]
        Xs = np.empty((X.shape[0], d + int(self.fit_intercept))) if out is None else out
        self._unit_ball(X, Xs[:, :d])
        if self.fit_intercept:
            Xs[:, d] = 1.0
        if y is None:
            return Xs
        return Xs, self.scale_labels(y)

    def scale_labels(self, y):
        """Scaled labels in [-1, 1]."""
        with np.errstate(over="ignore", invalid="ignore"):  # +-inf clips to +-1
            return np.clip((y - self.y_mid) / self.y_half, -1.0, 1.0)

    def clip(self, X):
        """Copy of ``X`` with every row moved into the declared bounds.

        The rows as the mechanism sees them, in the units of the data: a model
        evaluated on them treats every row like a training row. Rows inside
        the domain are copied unchanged.
        """
        if self.bounds_X is not None:
            return np.clip(X, *self.bounds_X)
        unit = np.empty(X.shape)
        outside = self._unit_ball(X, unit)
        clipped = np.array(X, dtype=np.float64)
        clipped[outside] = unit[outside] * self.data_norm
        return clipped

    def _unit_ball(self, X, out):
        """The scaled rows of ``X`` into ``out``, rows longer than 1 scaled to norm 1.

        Returns the mask of the rows that were scaled down.
        """
        if self.bounds_X is None:
            np.divide(X, self.data_norm, out=out)
            # Rows outside the ball (or overflowing: inf and nan fail the
            # test) are rare: only they take the careful path below.
            long = np.flatnonzero(~(np.einsum("ij,ij->i", out, out) <= 1.0))
            clipped = np.zeros(X.shape[0], dtype=bool)
            if long.size:
                rows = X[long]
                # A row with an entry beyond data_norm is too long and only
                # its direction survives: dividing it by that entry first
                # keeps every entry in [-1, 1], so squaring cannot overflow
                # even near 1e308.
                peak = np.abs(rows).max(axis=1, initial=0.0)
                rows /= np.maximum(peak, self.data_norm)[:, None]
                clipped[long] = (peak > self.data_norm) | _to_unit_ball(rows)
                out[long] = rows
            return clipped
        # np.clip's values, a third faster
        np.maximum(X, self.bounds_X[0], out=out)
        np.minimum(out, self.bounds_X[1], out=out)
        out -= self.x_mid
        out /= self.x_scale
        # only rounding can leave a row a hair outside
        return _to_unit_ball(out)

    def unscale_coef(self, theta):
        """``coef_`` and ``intercept_`` in the user's units for the scaled model ``theta``."""
        d = theta.shape[0] - int(self.fit_intercept)
        coef = theta[:d] * (self.y_half / self.x_scale)
        intercept = self.y_mid - np.sum(coef * self.x_mid)
        if self.fit_intercept:
            intercept += self.y_half * theta[d]
        return coef, float(intercept)


def _to_unit_ball(rows):
    """Scale the rows longer than 1 to norm 1, in place; their mask."""
    norms = np.sqrt(np.einsum("ij,ij->i", rows, rows))
    long = norms > 1.0
    if long.any():
        rows[long] /= norms[long, None]
    return long


def label_range(y_bound):
    """``(low, high)`` of a ``y_bound`` given as a pair or as ``b`` for ``(-b, b)``."""
    if np.ndim(y_bound) == 0:
        return -float(y_bound), float(y_bound)
    low, high = (float(v) for v in y_bound)
    return low, high


def add(a, b):
    """Sum of two partial results: arrays, or tuples of them elementwise."""
    if isinstance(a, tuple):
        return tuple(map(add, a, b))
    return a + b


# Moves by the bounds smaller than this (relative to the bound) are rounding,
# not clipping: not counted in the shares of the BoundsWarning.
_CLIP_RTOL = 1e-9

# ``data_norm`` within which a chunk's scaling is folded into the d x d
# matrices: the squares of entries up to data_norm (rows in the ball) neither
# overflow nor vanish against data_norm^2; beyond, rows are scaled first.
_FOLD_RANGE = (1e-100, 1e100)


class ScaledRows:
    """One chunk of rows in the privacy domain, scaled without a copy where possible.

    Stands for ``Xs = scaler.scale(X)`` (the constant feature last with an
    intercept) in what the passes do with it: products ``Xs @ A``, the Gram
    matrix (:meth:`gram`), squared row norms (:func:`squared_norms`), and
    NumPy functions of the rows (``np.asarray(Xs)``, ``Xs[...]``, ``Xs.T``
    and ``Xs.shape`` work as on the array).

    With ``data_norm`` (c) the products and the Gram matrix are taken on the
    user's ``X`` itself, the scaling folded into the d x d matrices
    (``Xs @ A = X @ (A[:d] / c) + A[d]``): one GEMM per chunk, no scaled
    copy (a copy in C order if ``X`` is not, so that the rounding does not
    depend on the layout). The few rows longer than c are then corrected
    exactly: their products replaced by those of their rows scaled down to
    norm 1 (as :meth:`DomainScaler.scale` scales them), their raw terms of
    the Gram matrix subtracted and their scaled ones added. A chunk whose
    long rows weigh more than c^2 per row of the chunk (where that
    subtraction would cancel more than the sum's own rounding: rows far out,
    or many), ``bounds_X`` (whose midpoints are subtracted before any
    product, so that nothing cancels), and a ``data_norm`` outside
    ``_FOLD_RANGE`` take a copy of the scaled features instead, computed
    exactly as :meth:`DomainScaler.scale` computes them. Copies (also the
    full scaled rows, made when a NumPy function asks for them) go into
    buffers of ``scratch`` (a :class:`ChunkScratch`) that the next chunk
    reuses: the rows are valid only during the call that receives them.
    """

    ndim = 2

    def __init__(self, X, scaler, scratch=None, y=None):
        self.shape = (X.shape[0], X.shape[1] + int(scaler.fit_intercept))
        self._X = X
        self._y = y  # the raw labels, for clip_counts
        self._scaler = scaler
        self._scratch = ChunkScratch(X.shape[0]) if scratch is None else scratch

    @cached_property
    def _folded(self):
        """``(B, c, sq, long, Z)``: the scaled rows are those of [B / c, 1]
        (``sq`` the squared norms of the rows of B, or None) except the rows
        ``long``, which are the rows of ``Z``."""
        X, c = self._X, self._scaler.data_norm
        if self._scaler.bounds_X is None and _FOLD_RANGE[0] <= c <= _FOLD_RANGE[1]:
            if not X.flags.c_contiguous:
                X = self._scratch.buffer("features", X.shape)
                X[...] = self._X
            with np.errstate(over="ignore"):
                sq = np.einsum("ij,ij->i", X, X)
            # outside the ball (the test fails on inf and nan too)
            long = np.flatnonzero(~(sq <= c * c))
            if np.sum(sq[long]) <= X.shape[0] * c * c:
                self._long = long
                return X, c, sq, long, self._scaler.scale(self._X[long])
        # the scaled features (into a contiguous buffer: elementwise
        # operations on it are twice as fast as on a strided one)
        B = self._scratch.buffer("features", X.shape)
        self._long = np.flatnonzero(self._scaler._unit_ball(X, B))
        return B, 1.0, None, np.empty(0, dtype=np.intp), None

    def _bulk(self, rows):
        """The rows ``rows`` as the products on B / c see them (unscaled down)."""
        B, c, *_ = self._folded
        bulk = np.ones((rows.size, self.shape[1]))
        np.divide(B[rows], c, out=bulk[:, : B.shape[1]])
        return bulk

    @cached_property
    def _dense(self):
        return self._scaler.scale(self._X, out=self._scratch.buffer("scaled", self.shape))

    def __array__(self, dtype=None, copy=None):
        dense = self._dense
        if dtype is not None and dtype != dense.dtype:
            return dense.astype(dtype)
        return dense.copy() if copy else dense

    def __len__(self):
        return self.shape[0]

    def __getitem__(self, key):
        return self._dense[key]

    @property
    def T(self):
        return self._dense.T

    def __matmul__(self, A):
        """``Xs @ A`` for A of shape (p,) or (p, k)."""
        B, c, _, long, Z = self._folded
        A = np.asarray(A)
        d = B.shape[1]
        out = B @ (A[:d] / c)
        if self.shape[1] > d:  # the constant feature
            out += A[d]
        if long.size:
            out[long] = Z @ A
        return out

    def clip_counts(self, rows=True):
        """Numbers of rows and of labels of the chunk that the declared
        bounds move: rows scaled down to ``data_norm`` or with a feature
        outside ``bounds_X`` (-1 when ``rows`` is False: not counted),
        labels outside ``y_bound``, each by more than rounding
        (``_CLIP_RTOL`` of the bound). Taken while the chunk is in cache, in
        the pass that scales it."""
        scaler = self._scaler
        n_rows = -1
        if rows and scaler.bounds_X is None:
            self._folded
            # the rows beyond data_norm, rounding included (rows normalised
            # to it land on both sides): their norms, again, with a margin
            norms = row_norms(self._X[self._long])
            n_rows = np.count_nonzero(norms > scaler.data_norm * (1.0 + _CLIP_RTOL))
        elif rows:
            lower, upper = scaler.bounds_X
            margin = _CLIP_RTOL * (upper - lower)
            outside = self._X < lower - margin
            outside |= self._X > upper + margin
            # a boolean product is "any" along the rows, 3 times as fast
            n_rows = np.count_nonzero(outside @ np.ones(outside.shape[1], dtype=bool))
        n_labels = 0
        if self._y is not None:
            n_labels = np.count_nonzero(
                np.abs(self._y - scaler.y_mid) > scaler.y_half * (1.0 + _CLIP_RTOL))
        return np.array([n_rows, n_labels], dtype=np.int64)

    def squared_norms(self):
        """``||x||^2`` of every scaled row (the constant feature included)."""
        B, c, sq, long, Z = self._folded
        if sq is None:
            sq = np.einsum("ij,ij->i", B, B)
        norms = sq / c**2 + (self.shape[1] - B.shape[1])
        if long.size:
            norms[long] = np.einsum("ij,ij->i", Z, Z)
        return norms

    def gram(self, ys):
        """``Xs^T Xs`` and ``Xs^T ys``: one SYRK on the features, scaled as
        a d x d matrix, and one pass for the labels and the constant."""
        B, c, _, long, Z = self._folded
        n, d = B.shape
        p = self.shape[1]
        XtX, Xty = np.empty((p, p)), np.empty(p)
        # numpy computes B.T @ B by one syrk call on the array itself (no
        # transposed copy), filling both triangles
        XtX[:d, :d] = (B.T @ B) / c**2
        right = ys[:, None] if p == d else np.column_stack((ys, np.ones(n)))
        cross = (B.T @ right) / c
        Xty[:d] = cross[:, 0]
        if p > d:  # the constant feature
            Xty[d] = ys.sum()
            XtX[:d, d] = XtX[d, :d] = cross[:, 1]
            XtX[d, d] = n
        if long.size:
            bulk = self._bulk(long)
            XtX += Z.T @ Z - bulk.T @ bulk
            Xty += (Z - bulk).T @ ys[long]
        return XtX, Xty


class ChunkScratch(threading.local):
    """Buffers for the chunks of one pass, one set per thread, each allocated
    on first use (for up to ``rows`` rows) and reused by the next chunks."""

    def __init__(self, rows):
        self.rows = rows
        self.buffers = {}

    def buffer(self, name, shape):
        """The buffer ``name`` as an array of ``shape`` (rows, columns)."""
        n, width = shape
        if name not in self.buffers:
            self.buffers[name] = np.empty(self.rows * width)
        return self.buffers[name][: n * width].reshape(n, width)


def squared_norms(Xs):
    """``||x||^2`` of every row of scaled rows: an array or :class:`ScaledRows`."""
    if isinstance(Xs, ScaledRows):
        return Xs.squared_norms()
    return np.einsum("ij,ij->i", Xs, Xs)


class _Rows:
    """Rows ``X`` and labels ``y`` (None: targets without labels, the
    functions then receive ``ys=None``) seen through a :class:`DomainScaler`."""

    def __init__(self, X, y, scaler):
        self.X = X
        self.y = y
        self.scaler = scaler
        self.n_samples = X.shape[0]
        self.n_features = X.shape[1] + int(scaler.fit_intercept)

    def gram(self):
        """Sufficient statistics X^T X and X^T y of the scaled data (and
        ``clipped``, see :meth:`scan`)."""
        return self.scan(_gram_part)

    def scan(self, func, combine=add, rows=True):
        """:meth:`reduce`, also counting in the same pass what the bounds
        clip: sets ``clipped``, the shares of the rows (NaN when not
        ``rows``: not read) and of the labels that the declared bounds move.
        Non-private statistics, for the curator's warning only."""
        result, counts = self.reduce(
            partial(_counted, func, rows), partial(_combine_counted, combine))
        n_rows, n_labels = np.asarray(counts, dtype=np.float64) / max(self.n_samples, 1)
        self.clipped = {"rows": n_rows if rows else np.nan,
                        "labels": n_labels if self.y is not None else np.nan}
        return result


def _counted(func, rows, start, Xs, ys):
    return func(start, Xs, ys), Xs.clip_counts(rows)


def _combine_counted(combine, a, b):
    return combine(a[0], b[0]), a[1] + b[1]


class TwoStageRows:
    """A per-row function ``finish(statistics(Xs, ys))`` whose stages a pass
    may run apart: ``statistics`` takes the products with the rows and
    returns ``width`` values per row (None: one, as a 1-D array), ``finish``
    the per-row results from those values alone (the accounting)."""

    def __init__(self, statistics, finish, width=None):
        self.statistics = statistics
        self.finish = finish
        self.width = width

    def __call__(self, Xs, ys):
        return self.finish(self.statistics(Xs, ys))


class ScaledData(_Rows):
    """Rows of an in-memory array, seen chunk by chunk as :class:`ScaledRows`.

    The scaled rows are never stored whole. ``start`` is the index of the
    first row in the whole data set (for a block of a larger one); chunks are
    processed on ``n_jobs`` threads (joblib's convention), at most that many
    at a time, each thread reusing one scratch buffer for the chunks' scaled
    copies (a first write to fresh memory is slow on some virtual machines).
    """

    def __init__(self, X, y, scaler, start=0, n_jobs=None):
        super().__init__(X, y, scaler)
        self.start = start
        self.n_jobs = n_jobs

    def _effective_n_jobs(self):
        # resolved for threads: joblib's default (process) backend would fall
        # back to one job inside a daemon process such as a pool worker
        with parallel_config(backend="threading"):
            return effective_n_jobs(self.n_jobs)

    def _each_chunk(self, func):
        """``func(rows, Xs, ys)`` for consecutive row slices, results in order
        (``Xs`` a :class:`ScaledRows`, ``ys`` the scaled labels)."""
        # the products of the rows (up to 2 d + 2 columns) and a scaled copy
        row_bytes = 8 * 4 * self.n_features
        working_memory = min(get_config()["working_memory"], _CHUNK_MIB)
        size = min(max(int(working_memory * 2**20 // row_bytes), 1), _CHUNK_ROWS)
        scratch = ChunkScratch(size)

        def chunk(rows):
            Xs = ScaledRows(self.X[rows], self.scaler, scratch,
                            None if self.y is None else self.y[rows])
            ys = None if self.y is None else self.scaler.scale_labels(self.y[rows])
            return func(rows, Xs, ys)

        batches = list(gen_batches(self.n_samples, size))
        n_jobs = min(self._effective_n_jobs(), len(batches))
        if n_jobs == 1:
            return [chunk(rows) for rows in batches]
        # threads share X; BLAS must not start threads of its own on top
        with threadpool_limits(1, user_api="blas"):
            return Parallel(n_jobs=n_jobs, backend="threading")(
                delayed(chunk)(rows) for rows in batches
            )

    def reduce(self, func, combine=add):
        """``combine`` of ``func(start, Xs, ys)`` over all chunks, in order.

        ``start`` is the index (in the whole data set) of the chunk's first row.
        """
        parts = self._each_chunk(
            lambda rows, Xs, ys: func(self.start + rows.start, Xs, ys)
        )
        return reduce(combine, parts)

    def map_rows(self, func, *, columns=None):
        """``func(Xs, ys)`` of every chunk, one value (or ``columns`` values) per row.

        Per-row results are finished chunk by chunk (for example the exact
        epsilons), so no other length-n intermediate is kept, except for a
        :class:`TwoStageRows` on wide rows and one job: its statistics are
        then taken in one pass (a few values per row, small against the
        rows) and finished after it.
        """
        out = np.empty(self.n_samples if columns is None else (self.n_samples, columns))
        narrow = self.n_features < _THREADED_MIN_FEATURES
        if isinstance(func, TwoStageRows) and not narrow and self._effective_n_jobs() == 1:
            # the products on BLAS threads, then the single-threaded
            # accounting without workers spin-waiting between products, in
            # chunks of up to _CHUNK_ROWS (its cost is partly per call): at
            # n = 1e6, d = 100 an OPS fit took 1.23 rather than 1.49 s
            stats = self.map_rows(func.statistics, columns=func.width)
            for rows in gen_batches(self.n_samples, _CHUNK_ROWS):
                out[rows] = func.finish(stats[rows])
            return out

        def fill(rows, Xs, ys):
            out[rows] = func(Xs, ys)

        with threadpool_limits(1, user_api="blas") if narrow else nullcontext():
            self._each_chunk(fill)
        return out


def _gram_part(start, Xs, ys):
    return Xs.gram(ys)


class DaskScaledData(_Rows):
    """Rows of a Dask array: each block is scaled and processed where it lives.

    Same interface as :class:`ScaledData`: reductions are computed at once
    (partial results summed pairwise on the workers, only the total comes to
    the driver), per-row results are lazy Dask arrays with the row chunks of
    ``X``. The blocks are :class:`ScaledData` chunked in memory, so a large
    block needs no more scratch memory than an in-memory fit. ``X`` has a
    single chunk along its columns (see :func:`validate_rows`).
    """

    def reduce(self, func, combine=add):
        """Same as :meth:`ScaledData.reduce`, computed with Dask."""
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
        """Same as :meth:`ScaledData.map_rows`, a lazy Dask array."""
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


def scaled_data(X, y, scaler, n_jobs=None):
    """The :class:`ScaledData` (on ``n_jobs`` threads) or
    :class:`DaskScaledData` of validated rows."""
    if is_dask_array(X):
        return DaskScaledData(X, y, scaler)
    return ScaledData(X, y, scaler, n_jobs=n_jobs)


def is_dask_array(X):
    """Whether ``X`` is a ``dask.array.Array`` (without importing Dask)."""
    da = sys.modules.get("dask.array")
    return da is not None and isinstance(X, da.Array)


def validate_rows(estimator, X, y="no_validation", *, reset):
    """Validated float64 ``X`` and 1-D ``y``, as ``validate_data`` gives them.

    ``y="no_validation"`` validates ``X`` only (``y`` is returned as None);
    ``y=None`` is an error for an estimator that requires y. Dask arrays stay Dask arrays (checked lazily: non-finite values raise
    when a block is processed), rechunked to one chunk along the columns and
    ``y`` to the row chunks of ``X``; everything else goes through
    scikit-learn's ``validate_data``.
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


def row_norms(X):
    """Euclidean norms of the rows of ``X``, without overflow near 1e308."""
    if is_dask_array(X):
        return X.map_blocks(row_norms, drop_axis=1, dtype=np.float64)
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    big = ~np.isfinite(norms)
    if np.any(big):  # squares overflowed: rescale those rows by their peak
        peak = np.abs(X[big]).max(axis=1)
        norms[big] = peak * np.linalg.norm(X[big] / peak[:, None], axis=1)
    return norms


def compute(*values):
    """The values, with the Dask ones computed together (one pass)."""
    if not any(map(is_dask_array, values)):
        return values
    import dask

    return dask.compute(*values)


def persist(values):
    """A Dask array computed and kept where it lives; anything else as is."""
    return values.persist() if is_dask_array(values) else values


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
