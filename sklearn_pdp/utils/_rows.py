"""The passes over the training rows, in memory, one chunk at a time.

Every mechanism needs two kinds of passes over the rows, both expressed on one
chunk of scaled rows at a time: reductions to d x d sufficient statistics
(X^T X, X^T y, ...) and one value per row (per-instance losses). A numpy
array is processed chunk by chunk (:class:`ScaledData`), on threads if asked;
a Dask array block by block where its blocks live (``_dask.DaskScaledData``,
each block again a :class:`ScaledData`). :func:`~sklearn_pdp.utils._dask.scaled_data` picks one.

A chunk is a :class:`ScaledRows`: where every row lies within ``data_norm``
its products with d x d matrices are taken on the user's rows themselves,
the scaling folded into the matrices, so a pass makes no copy of X. The
chunks' sizes and threads are measured choices (:ref:`chunk-sizes`).
"""

import threading
from contextlib import nullcontext
from functools import cached_property, partial, reduce

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs, parallel_config
from sklearn import get_config
from sklearn.utils import gen_batches
from threadpoolctl import threadpool_limits

from ._arrays import row_norms
from ..domain._scaler import label_range

# The three limits below are measured choices (:ref:`chunk-sizes`).
# Upper limit (MiB) of the scratch memory of one chunk (four copies of its
# rows), small enough for the chunk to stay in cache between its passes;
# scikit-learn's ``working_memory`` applies when it is smaller.
_CHUNK_MIB = 16
# Upper limit of the rows of one chunk: the per-row accounting keeps dozens
# of temporaries per row that the MiB limit, sized for the rows, does not see.
_CHUNK_ROWS = 1 << 15
# Per-row passes over rows narrower than this run BLAS on one thread: its
# idle workers would otherwise spin beside the single-threaded accounting.
_THREADED_MIN_FEATURES = 32


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
    norm 1 (as :meth:`~sklearn_pdp.domain._scaler.DomainScaler.scale` scales
    them), their raw terms of the Gram matrix subtracted and their scaled
    ones added. A chunk whose long rows weigh more than c^2 per row of the
    chunk (where that subtraction would cancel more than the sum's own
    rounding: rows far out, or many), ``bounds_X`` (whose centres are
    subtracted before any product, so that nothing cancels), and a
    ``data_norm`` outside ``_FOLD_RANGE`` take a copy of the scaled
    features instead, computed exactly as
    :meth:`~sklearn_pdp.domain._scaler.DomainScaler.scale` computes them. Copies
    (also the full scaled rows, made when a NumPy function asks for them) go
    into buffers of ``scratch`` (a :class:`ChunkScratch`) that the next chunk
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
            # a boolean product is "any" along the rows, faster than .any(axis=1)
            n_rows = np.count_nonzero(outside @ np.ones(outside.shape[1], dtype=bool))
        n_labels = 0
        if self._y is not None:
            low, high = label_range(scaler.y_bound)
            margin = _CLIP_RTOL * 0.5 * (high - low)
            n_labels = np.count_nonzero((self._y < low - margin) | (self._y > high + margin))
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
    functions then receive ``ys=None``) seen through a
    :class:`~sklearn_pdp.domain._scaler.DomainScaler`."""

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
            # chunks of up to _CHUNK_ROWS (its cost is partly per call)
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
