"""Tightening by parallel composition: the rows split between the bounds
release and the model (:doc:`/mechanisms/tightening`, "Two parts of the
rows").

Each row goes to the *bounds part* or to the *model part* by a public
function of that row alone (:func:`row_hash`; with person keys, of its
key: a person's rows in one part), so adding or removing a row moves no
other. The bounds' quantiles (:class:`~._tighten.BoundsRelease`)
are fitted on the bounds part with the whole epsilon, the model on the
model part at the released bounds with the whole ``(epsilon, delta)``:
under adding or removing one row the release is ``(max, max)``-DP of the
two (parallel composition; under replacing one row a row may change parts,
and the guarantee doubles).

Each row's loss (kind ``"conditional"``, or ``"bound"`` where the model's
own losses are bounds: output perturbation with a ``radius``):

- a row of the bounds part: its exact pure loss for the bounds
  (:meth:`~._tighten.BoundsRelease.row_epsilon`); the model, fitted on
  other rows, is a post-processing of the bounds for it;
- a row of the model part: the released bounds have the same distribution
  with and without it, so its loss *given the released bounds* is the
  model's own per-instance loss at them (a valid guarantee conditional on
  a released quantity the row cannot influence). It may differ between
  ``random_state`` s through the released bounds. The stage's profile
  (:meth:`SplitStage.profile`) is of the family ``"epsilon_delta"``, for
  which the ledger's individual filters charge the release's guarantee,
  never these conditional numbers.

Sizes. The bounds' plan (quantile level, whether tightening is worthwhile)
uses the public ``tighten_share`` times the public n, never the realised
part size; each quantile's target is the q-th rank of its own part's
values, whose change by one row the exponential mechanism's sensitivity
covers. The model is calibrated as a fit on its own rows (their number
public, as every fit's n).
"""

import hashlib

import numpy as np

from ..mechanisms._guarantee_law import GuaranteeLaw
from ..report._profile import PrivacyProfile
from ..utils._arrays import compute, is_dask_array
from ..utils._dask import scaled_data
from ..utils._people import PersonLosses
from ._scaler import resolve_bounds
from ._schema import estimator_layout
from ._stage import DeclaredStage, added_guarantee, release_person_losses
from ._tighten import plan_release, released_bounds, tighten_share, tightening_on

# entries of the groups' grid counts formed at once (bounds_group_epsilon)
_GROUP_ENTRIES = 2**22


def resolve_stage(estimator, X, y, resolved, rng, keys=None):
    """The stage of a fit of ``estimator`` (its parameters only) on the
    validated ``X``, ``y``: the :class:`SplitStage` where its
    ``tighten_bounds`` applies (the bounds drawn from ``rng``, before the
    model's noise; with person ``keys``, split by person), else the
    :class:`~._stage.DeclaredStage` of ``resolved`` (the bounds of
    :meth:`~sklearn_pdp.linear_model._base.PrivateRegressorMixin.resolve_bounds`)."""
    epsilon, delta = getattr(estimator, "epsilon", None), estimator.delta
    if tightening_on(estimator):
        records = person_records(estimator, keys)
        # stack of its warning: plan_release, here, fit, its wrapper, the user
        release = plan_release(estimator, resolved, X.shape[0], epsilon / records, delta,
                               stacklevel=5, split=True)
        if release is not None:
            return SplitStage(release, resolved, X, y, rng, epsilon, delta,
                              tighten_share(estimator), estimator.n_jobs,
                              estimator_layout(estimator), keys, records)
    return DeclaredStage(resolved, X.shape[0], estimator.n_jobs)


def _bounds_part_losses(release, X, y, part):
    """Each row's exact loss for the bounds ``release``: its own on the
    bounds ``part``, 0 on the model part (whose cells the bounds part may
    not hold); in memory, computed on the bounds part's rows alone."""
    if is_dask_array(X):
        return np.where(part, release.row_epsilon(X, y), 0.0)
    losses = np.zeros(X.shape[0])
    losses[part] = release.row_epsilon(X[part], y[part])
    return losses


def person_records(estimator, keys):
    """The records of one person the bounds' release covers: the
    estimator's ``max_records`` where its model calibrates a whole person
    itself (``_person_sensitivity``) and the rows are split by person, else
    1. Its quantiles at ``epsilon / k`` a record are the exponential
    mechanism with rank sensitivity ``k`` at ``epsilon``: ``k`` rows of one
    person move each rank, and its target ``q n``, by at most ``k``."""
    k = getattr(estimator, "max_records", None)
    if keys is None or k is None or not getattr(estimator, "_person_sensitivity", False):
        return 1
    return k


def row_hash(X, y=None, keys=None):
    """The public, unsalted 64-bit hash of each row that assigns it a part.

    Encoding: for row i, the IEEE-754 float64 bit patterns (as unsigned
    64-bit integers) ``w_0, ..., w_d`` of ``X[i, 0], ..., X[i, d-1], y[i]``
    (the validated row, as the estimator received it; -0.0 read as 0.0),
    folded as ``h = mix(h XOR w_j)`` from ``h = 0``, where ``mix`` is the
    SplitMix64 step (add 0x9E3779B97F4A7C15, then its finaliser; all modulo
    2^64). One vectorised pass per column (a cryptographic hash per row
    cost several times a fit). With ``keys`` (one person key per row), the
    BLAKE2b hash (8-byte digest, a little-endian unsigned integer) of the
    UTF-8 bytes of ``str`` of each key instead, so that all of a person's
    rows fall in one part.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,), default=None
        Required without ``keys``.
    keys : array-like of shape (n_samples,), default=None

    Returns
    -------
    hashes : ndarray of uint64 of shape (n_samples,)
    """
    if keys is not None:
        names, person = np.unique(np.asarray(keys).astype(str), return_inverse=True)
        digests = [hashlib.blake2b(k.encode("utf-8"), digest_size=8).digest() for k in names]
        return np.frombuffer(b"".join(digests), dtype="<u8").astype(np.uint64)[person.ravel()]
    columns = np.vstack([np.transpose(X), np.reshape(y, (1, -1))]).astype(np.float64)
    columns += 0.0  # -0.0 -> 0.0
    h = np.zeros(columns.shape[1], dtype=np.uint64)
    for word in columns.view(np.uint64):
        h ^= word
        _splitmix64(h)
    return h


def _splitmix64(z):
    """One SplitMix64 step, in place, on a uint64 array (wrapping)."""
    z += np.uint64(0x9E3779B97F4A7C15)
    z ^= z >> np.uint64(30)
    z *= np.uint64(0xBF58476D1CE4E5B9)
    z ^= z >> np.uint64(27)
    z *= np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)


def bounds_part(X, y, share, keys=None):
    """Whether each row belongs to the bounds part: its :func:`row_hash`
    below ``share`` of the 64-bit range (so a share ``share`` of the rows on
    average, whatever the data); with person ``keys``, by each row's key,
    so that a person's rows fall in one part. Lazy, per block, for a Dask
    array (with its row blocks, by key)."""
    if keys is not None and is_dask_array(X):
        import dask.array as da

        return da.from_array(bounds_part(None, None, share, keys), chunks=X.chunks[0])
    if is_dask_array(X):
        return X.map_blocks(lambda b, yb: bounds_part(b, yb[:, 0], share), y[:, None],
                            drop_axis=1, dtype=bool)
    threshold = np.uint64(min(int(share * 2.0**64), 2**64 - 1))
    return row_hash(X, y, keys) < threshold


class SplitStage:
    """The declared bounds tightened on one part of the rows, the model
    fitted on the other (see the module docstring).

    Parameters
    ----------
    bounds_release : BoundsRelease
        Planned with the whole epsilon for ``share`` times n rows
        (:func:`~._tighten.plan_release` with ``split=True``).
    resolved : tuple
        The resolved ``(data_norm, bounds_X, y_bound)``.
    X, y : validated training rows
    rng : Generator
        Draws the released bounds (before the model's noise).
    epsilon, delta : float
        The whole budget, for each part.
    share : float
        The public share of the rows in the bounds part.
    n_jobs : int or None
        Threads of a pass over rows held in memory.
    layout : FeatureLayout or None
        A schema's columns: its indicators keep their (0, 1).
    keys : array-like of shape (n_samples,), default=None
        Person keys: the rows split by person (:func:`row_hash`), and each
        person's loss is their part's (:meth:`group_losses`).
    records : int, default=1
        The records of one person that the guarantee covers
        (:func:`person_records`): ``bounds_release`` is planned at the
        whole epsilon over them, and the guarantee counts it that many
        times (the model's is already per person).
    """

    clips_rows = True  # predictions clip rows to the released bounds

    def __init__(self, bounds_release, resolved, X, y, rng, epsilon, delta, share,
                 n_jobs=None, layout=None, keys=None, records=1):
        self.share, self.delta, self.n_jobs = share, delta, n_jobs
        self.records = records
        self.n_samples, self.declared = X.shape[0], resolved
        self.keyed = keys is not None
        part = bounds_part(X, y, share, keys)
        self.part, self.model_rows = part, ~part
        self.bounds_release = bounds_release.fit(X[part], y[part])
        released = released_bounds(bounds_release.draw(rng), resolved)
        if layout is not None:
            released["bounds_X"] = layout.restore_indicators(released["bounds_X"])
        self.bounds = resolve_bounds(X, y, **released)
        self.model_params = {"epsilon": epsilon, "delta": delta, "tighten_bounds": False}
        self.losses = _bounds_part_losses(bounds_release, X, y, part)

    def model_part(self, X, y):
        """The model part's rows (on Dask, with their block sizes computed)."""
        Xm, ym = X[self.model_rows], y[self.model_rows]
        if is_dask_array(X):
            Xm, ym = Xm.compute_chunk_sizes(), ym.compute_chunk_sizes()
        return Xm, ym

    def fit_model(self, release, scaler, X):
        """Bind the drawn model ``release`` and its ``scaler`` (model rows ``X``)."""
        self.release, self.scaler = release, scaler
        return self

    @property
    def kind(self):
        """"conditional", or the model's "bound" where its losses are bounds
        (the weaker kind of the two parts' numbers)."""
        return "bound" if self.release.kind == "bound" else "conditional"

    def guarantee(self):
        """Parallel composition: the larger epsilon of the two parts, the
        model's delta (the bounds are pure; over a person's ``records``,
        group privacy of a pure release: ``records`` times its epsilon)."""
        epsilon, delta = self.release.guarantee
        return max(self._bounds_epsilon(), float(epsilon)), delta

    def dp_epsilon(self, delta):
        """The larger of the bounds' pure epsilon and the model's guarantee
        at ``delta``."""
        return max(self._bounds_epsilon(), float(self.release.dp_epsilon(delta)))

    def _bounds_epsilon(self):
        # (a stage pickled before people had a cap covers one record)
        return getattr(self, "records", 1) * self.bounds_release.epsilon

    def group_losses(self, X, y, codes, sizes, add=False, data=None, keys=None):
        """Each group's loss for removing (adding) its rows ``X``, ``y``
        together, with its kind, a
        :class:`~sklearn_pdp.utils._people.PersonLosses` (``codes``: each
        row's group, -1 for none; ``sizes``: their numbers of rows;
        ``data``: the model part scaled, if at hand).

        Split by person (``keys``), a group's rows are in one part: in the
        bounds part its exact joint loss for the bounds
        (:func:`bounds_group_epsilon`), in the model part the model's loss
        of its rows given the released bounds where the release has a
        closed form, else ``nan`` (bounded by group privacy); "conditional",
        or "bound" where the model's is. Split by rows, None: a group's rows
        may fall in both parts."""
        if not self.keyed:
            return None
        part = np.asarray(compute(self.part if not add else
                                  bounds_part(X, y, self.share, keys))[0])
        out = PersonLosses.of(bounds_group_epsilon(self.bounds_release, X[part], y[part],
                                                   codes[part], sizes.size, add), "conditional")
        mine = np.unique(codes[~part & (codes >= 0)])
        if getattr(self.release, "person_losses", None) is not None and mine.size:
            if data is None:
                data = scaled_data(*self.model_part(X, y) if not add else (X[~part], y[~part]),
                                   self.scaler, self.n_jobs)
            index = np.full(sizes.size + 1, -1)  # the last: rows of no group
            index[mine] = np.arange(mine.size)
            exact = release_person_losses(self.release, data, index[codes[~part]], sizes[mine],
                                          add)
            if exact is not None:  # else nan: bounded by group privacy
                out.losses[mine] = exact.losses
                out.kinds[mine[exact.kinds == "bound"]] = "bound"
        return out

    def fitted_attributes(self):
        return {"declared_bounds_": self.declared, "bounds_release_": self.bounds_release,
                "bounds_epsilon_": self.bounds_release.epsilon}

    def row_losses(self, X, y, add=False, data=None, keys=None):
        """Each row's loss given the released bounds: a bounds-part row's
        exact bounds loss, a model-part row's model loss at the released
        bounds. Without ``add``, the training rows (``data``: the model
        part scaled); with it, rows added, each to the part its hash gives
        (split by person, its key's, ``keys``; without them, or without
        labels on a split by rows, the larger of the two: its part is
        unknown)."""
        if not add:
            if data is None:
                data = scaled_data(*self.model_part(X, y), self.scaler, self.n_jobs)
            return _scatter(self.model_rows, data.map_rows(self.release.row_losses()),
                            self.losses)
        model = scaled_data(X, y, self.scaler, self.n_jobs).map_rows(
            self.release.row_losses(add=True))
        bounds = self.bounds_release.row_epsilon(X, y, add=True)
        keys = keys if self.keyed else None
        if keys is None and (y is None or self.keyed):
            return np.maximum(bounds, model)
        return np.where(bounds_part(X, y, self.share, keys), bounds, model)

    def law(self):
        """Every person's published bound is the public :meth:`cap`
        (:class:`~sklearn_pdp.mechanisms._guarantee_law.GuaranteeLaw`): a
        published report states no number that depends on the draw."""
        return GuaranteeLaw(scaler=self.scaler, n_samples=self.n_samples,
                            delta=self.delta, guarantee=self.guarantee(), cap=self.cap())

    def statistics(self):
        return self.law().statistics

    def profile(self, losses, mechanism):
        """The per-row epsilons (family ``"epsilon_delta"``), whose
        individual filter charges the guarantee: a conditional loss is not
        fixed before the release."""
        epsilon, delta = self.guarantee()
        return PrivacyProfile("epsilon_delta", losses, delta=self.delta, guarantee=epsilon,
                              guarantee_delta=delta, n_samples=self.n_samples,
                              mechanism=mechanism)

    def cap(self):
        """The largest loss of anyone removed or added over every draw: the
        bounds' pure guarantee or the model's cap (whichever part the row
        falls in), a function of public quantities."""
        return max(self.bounds_release.epsilon, self.release.guarantee[0],
                   added_guarantee(self.release))

    def clip(self, X):
        """``X`` clipped to the released bounds, as the training rows were."""
        clip = self.scaler.clip
        return X.map_blocks(clip, dtype=np.float64) if is_dask_array(X) else clip(X)

    def box_rows(self, bounds_release, X):
        """None: a model that tightened its own bounds charges its cap."""
        return None

    def warn_clipping(self, clipped, stacklevel):
        """Silent: the released bounds clip the tails by design (up to 2
        ``_MAX_LEVEL`` of :mod:`._tighten`)."""


def bounds_group_epsilon(release, X, y, codes, n_groups, add=False):
    """Exact pure epsilon of the bounds ``release`` for removing (adding,
    ``add``) each group's rows ``X``, ``y`` together (``codes``: each row's
    group in ``range(n_groups)``, -1 for none): the larger of the sums over
    the quantiles of the largest log-ratio in each direction, with the
    group's rows taken out of (put into) each quantile's grid counts at
    once; ``nan`` for a group without rows here."""
    out = np.full(n_groups, np.nan)
    if is_dask_array(X):  # the cells are a few integers a row
        import dask

        cells = np.concatenate(dask.compute(*[
            dask.delayed(release.cells)(xb, yb)
            for xb, yb in zip(X.to_delayed().ravel(), y.to_delayed())]))
    else:
        cells = release.cells(X, y)
    mine = codes >= 0
    groups = np.unique(codes[mine])
    base = release.log_proba()
    k, width = base.shape
    for chunk in np.array_split(groups, 1 + groups.size * k * width // _GROUP_ENTRIES):
        index = np.full(n_groups, -1)
        index[chunk] = np.arange(chunk.size)
        rows = mine & (index[np.maximum(codes, 0)] >= 0)
        counts = np.zeros((chunk.size, k, width))
        np.add.at(counts, (index[codes[rows]][:, None], np.arange(k), cells[rows]), 1.0)
        moved = release.log_proba(release.counts_ + (counts if add else -counts))
        L = base - moved if add else moved - base  # log P(without) - log P(with)
        out[chunk] = np.maximum(L.max(axis=-1).sum(axis=-1), (-L).max(axis=-1).sum(axis=-1))
    return out


def _scatter(mask, values, fill):
    """``fill`` with ``values`` (one per True of ``mask``) in the True
    places; on Dask block by block (``values`` has one block per block of
    ``mask``, as a boolean selection gives)."""
    if not is_dask_array(mask):
        out = np.array(fill, dtype=np.float64)
        out[mask] = values
        return out
    import dask.array as da

    return da.blockwise(_scatter, "i", mask, "i", values, "i", fill, "i",
                        align_arrays=False, concatenate=True, dtype=np.float64)
