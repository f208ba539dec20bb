"""Tightening by parallel composition: the rows split by a public hash of
each row between the bounds release and the model, each with the whole
budget; each row's loss given the released bounds."""

import hashlib
import struct

import numpy as np
import pytest

from sklearn_pdp import AdaSSPRegressor, ObjPertRegressor, OPSRegressor, PrivacyLedger
from sklearn_pdp.domain._split import bounds_part, row_hash
from sklearn_pdp.domain._tighten import BoundsRelease

from .test_tighten import _table  # a heavy-tailed column, a normal one, an indicator

MODELS = [AdaSSPRegressor, OPSRegressor, ObjPertRegressor]


def _fit(cls, X, y, bounds, y_bound, **params):
    # epsilon 3: enough on 300 bounds-part rows for the label's four
    # quantiles at their level and the features' four at the rest
    return cls(epsilon=3.0, delta=1e-6, bounds_X=bounds, y_bound=y_bound,
               tighten_bounds=True, **{"random_state": 0, **params}).fit(X, y)


def _splitmix64_fold(values):
    """The documented row encoding, in Python integers modulo 2^64."""
    mask, h = 2**64 - 1, 0
    for v in values:
        h ^= struct.unpack("<Q", struct.pack("<d", float(v) + 0.0))[0]
        z = (h + 0x9E3779B97F4A7C15) & mask
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        h = z ^ (z >> 31)
    return h


def test_row_hash_is_the_documented_encoding():
    """SplitMix64 folded over the row's float64 bit patterns then its
    label's; -0.0 as 0.0; BLAKE2b of a person key's str in UTF-8 instead."""
    X = np.array([[1.5, -0.0, 3.0], [1e300, 2.0, -7.25]])
    y = np.array([0.5, -1.0])
    for i in range(2):
        assert int(row_hash(X, y)[i]) == _splitmix64_fold([*X[i], y[i]])
    assert row_hash(np.array([[1.5, 0.0, 3.0]]), np.array([0.5]))[0] == row_hash(X[:1], y[:1])[0]
    keys = np.array(["ann", "ann", 7], dtype=object)
    hashed = row_hash(np.zeros((3, 1)), None, keys)
    assert hashed[0] == hashed[1] == int.from_bytes(
        hashlib.blake2b(b"ann", digest_size=8).digest(), "little")
    assert hashed[2] == int.from_bytes(hashlib.blake2b(b"7", digest_size=8).digest(), "little")


def test_the_split_is_a_function_of_the_row_alone():
    """Removing, adding or reordering rows moves no other; the share of
    the bounds part is the public share on average."""
    X, y, *_ = _table(20000)
    part = bounds_part(X, y, 0.1)
    order = np.random.RandomState(1).permutation(X.shape[0])
    assert np.array_equal(bounds_part(X[order], y[order], 0.1), part[order])
    assert np.array_equal(bounds_part(np.delete(X, 5, 0), np.delete(y, 5), 0.1),
                          np.delete(part, 5))
    # binomial(20000, 0.1): 5 standard deviations
    assert abs(part.mean() - 0.1) <= 5 * np.sqrt(0.09 / X.shape[0])
    # a larger share keeps every row of the smaller one's part
    assert np.all(bounds_part(X, y, 0.3)[part])


@pytest.mark.parametrize("cls", [pytest.param(c, marks=pytest.mark.audit) if c is ObjPertRegressor else c for c in MODELS])
# the released bounds cut the tails by design: the reference fit warns
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.BoundsWarning")
def test_split_fit_losses_are_the_parts_own(cls):
    """A bounds-part row loses its exact bounds loss, a model-part row the
    model's loss at the released bounds: that of the same estimator
    declared at the released bounds with the model's budget, fitted on the
    model part alone (its losses and coefficients)."""
    X, y, bounds, y_bound = _table(6000)
    est = _fit(cls, X, y, bounds, y_bound)
    rows = est.model_rows_
    assert est.pdp_kind_ == "conditional"
    assert np.array_equal(rows, ~bounds_part(X, y, 0.1))
    assert est.dp_epsilon_ <= 3.0 and est.model_epsilon_ <= 3.0
    assert est.dp_epsilon_ == max(est.model_epsilon_, est.bounds_epsilon_)
    assert est.bounds_epsilon_ == pytest.approx(3.0)
    assert (est.model_delta_, est.dp_delta_) == (1e-6, 1e-6)
    assert np.array_equal(est.bounds_losses_[rows], np.zeros(rows.sum()))
    assert np.array_equal(est.pdp_losses_[~rows], est.bounds_losses_[~rows])
    assert np.array_equal(est.bounds_release_.counts_,
                          BoundsRelease(None, bounds, y_bound, 0.1 * X.shape[0], 3.0)
                          .fit(X[~rows], y[~rows]).counts_)
    ref = cls(epsilon=est.model_epsilon_, delta=est.model_delta_, bounds_X=est.bounds_X_,
              y_bound=est.y_bound_, tighten_bounds=False, random_state=0).fit(X[rows], y[rows])
    assert np.allclose(est.pdp_losses_[rows], ref.pdp_losses_, rtol=1e-10)
    assert np.all(est.pdp_losses_ <= est.dp_epsilon_ + 1e-12)
    # added rows: each in the part its hash gives; without labels the larger
    new_X, new_y = X[:40] * 1.1, y[:40] + 0.5
    added = est.pdp_epsilon(new_X, new_y)
    into_bounds = bounds_part(new_X, new_y, 0.1)
    assert into_bounds.any() and not into_bounds.all()
    assert np.allclose(added[into_bounds], est.bounds_release_.row_epsilon(
        new_X, new_y, add=True)[into_bounds])
    assert np.allclose(added[~into_bounds], ref.pdp_epsilon(new_X, new_y)[~into_bounds],
                       rtol=1e-10)
    worst = est.pdp_epsilon(new_X)
    assert np.all(worst >= np.maximum(est.bounds_release_.row_epsilon(new_X, None, add=True),
                                      ref.pdp_epsilon(new_X)) - 1e-12)


def test_a_bounds_part_row_loses_its_bounds_loss_exactly():
    """Brute force: the bounds refitted without a bounds-part row give the
    reported loss as the largest joint log-ratio of the released ends; the
    model part, and with the same bounds the model, do not change."""
    X, y, bounds, y_bound = _table(3000)
    est = _fit(OPSRegressor, X, y, bounds, y_bound)
    rel, rows = est.bounds_release_, est.model_rows_
    XB, yB = X[~rows], y[~rows]
    for i in np.flatnonzero(~rows)[:3]:
        j = int(np.sum(~rows[:i]))  # its place in the bounds part
        without = BoundsRelease(None, bounds, y_bound, 300.0, 3.0).fit(
            np.delete(XB, j, 0), np.delete(yB, j))
        L = without.log_proba() - rel.log_proba()  # (k, G), independent ends
        joint = max(L.max(axis=1).sum(), (-L).max(axis=1).sum())
        assert est.pdp_losses_[i] == pytest.approx(joint, rel=1e-12)
        smaller = _fit(OPSRegressor, np.delete(X, i, 0), np.delete(y, i), bounds, y_bound)
        assert np.array_equal(smaller.model_rows_, np.delete(rows, i))
        if np.allclose(smaller.bounds_X_, est.bounds_X_) and smaller.y_bound_ == est.y_bound_:
            assert np.array_equal(smaller.coef_, est.coef_)


@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.FallbackWarning")
def test_only_model_part_losses_depend_on_the_draw():
    """Across random_state: the parts, the bounds-part losses and the
    guarantee stay; model-part losses may move with the released bounds."""
    X, y, bounds, y_bound = _table(4000)
    fits = [_fit(AdaSSPRegressor, X, y, bounds, y_bound, random_state=s) for s in range(4)]
    for other in fits[1:]:
        assert np.array_equal(other.model_rows_, fits[0].model_rows_)
        assert np.array_equal(other.bounds_losses_, fits[0].bounds_losses_)
        assert other.dp_epsilon_ == fits[0].dp_epsilon_
        assert other.domain_stage().cap() == fits[0].domain_stage().cap()
    rows = fits[0].model_rows_
    assert len({f.pdp_losses_[rows].tobytes() for f in fits}) > 1


def test_ledger_filters_charge_the_guarantee():
    """A conditional loss is never what an individual filter charges."""
    X, y, bounds, y_bound = _table(3000)
    est = _fit(OPSRegressor, X, y, bounds, y_bound)
    assert est.pdp_kind_ == "conditional"
    ledger = PrivacyLedger()
    ids = np.arange(X.shape[0])
    release_id = ledger.record(est, ids)
    assert np.allclose(ledger.filter_epsilon(ids, est.dp_delta_), est.dp_epsilon_)
    charged, _ = ledger.charges(release_id, ids)
    assert np.allclose(charged, est.pdp_losses_)
    assert np.median(charged) < 0.5 * est.dp_epsilon_


def test_dask_split_is_the_in_memory_split():
    """The hash per block: the same parts, bounds, losses and predictions."""
    da = pytest.importorskip("dask.array")
    X, y, bounds, y_bound = _table(5000)
    mem = _fit(OPSRegressor, X, y, bounds, y_bound)
    lazy = _fit(OPSRegressor, da.from_array(X, chunks=1200), da.from_array(y, chunks=1200),
                bounds, y_bound)
    assert np.array_equal(np.asarray(lazy.model_rows_), mem.model_rows_)
    assert np.array_equal(lazy.bounds_release_.counts_, mem.bounds_release_.counts_)
    assert np.allclose(lazy.pdp_losses_.compute(), mem.pdp_losses_, rtol=1e-10)
    assert np.allclose(lazy.coef_, mem.coef_)
    Xt, yt = da.from_array(X[:50] * 2, chunks=20), da.from_array(y[:50], chunks=20)
    assert np.allclose(lazy.pdp_epsilon(Xt, yt).compute(), mem.pdp_epsilon(X[:50] * 2, y[:50]))
    assert np.allclose(lazy.pdp_epsilon(Xt).compute(), mem.pdp_epsilon(X[:50] * 2))


def _panel(n_people, seed=0):
    """_table's rows grouped into people of 1 to 6 rows, in shuffled order."""
    rng = np.random.default_rng(seed)
    groups = rng.permutation(np.repeat(np.arange(n_people), rng.integers(1, 7, n_people)))
    return (*_table(groups.size, seed), groups)


def _people_parts(est, groups):
    """Each person's part: True for the bounds part, None for both."""
    codes = np.searchsorted(est.person_ids_, groups)
    model = np.bincount(codes, weights=np.asarray(est.model_rows_), minlength=codes.max() + 1)
    sizes = np.bincount(codes)
    assert np.all((model == 0) | (model == sizes)), "a person's rows in both parts"
    return model == 0


def test_a_split_with_person_keys_puts_each_person_in_one_part():
    """The hash of the person key: all of a person's rows in one part, the
    part a function of the key alone."""
    X, y, bounds, y_bound, groups = _panel(800)  # epsilon 4: the label's quantiles fit
    est = OPSRegressor(epsilon=4.0, bounds_X=bounds, y_bound=y_bound, tighten_bounds=True,
                       random_state=0).fit(X, y, groups=groups)
    in_bounds = _people_parts(est, groups)
    assert 0 < in_bounds.sum() < in_bounds.size
    assert np.array_equal(est.model_rows_, ~bounds_part(None, None, 0.1, groups))
    assert not np.array_equal(est.model_rows_, ~bounds_part(X, y, 0.1))


@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.BoundsWarning")
def test_a_person_loses_their_part_s_joint_loss():
    """A bounds-part person: the exact joint log-ratio of the bounds refitted
    without all their rows (brute force), whatever the draw; a model-part
    person: AdaSSP's exact joint loss given the released bounds, that of the
    estimator declared at them on the model part; the guarantee per record."""
    X, y, bounds, y_bound, groups = _panel(1500)  # epsilon 3: the label's quantiles fit
    fits = [AdaSSPRegressor(epsilon=3.0, bounds_X=bounds, y_bound=y_bound,
                            tighten_bounds=True, random_state=seed).fit(X, y, groups=groups)
            for seed in (0, 1)]
    est = fits[0]
    assert est.person_pdp_kind_ == "conditional"
    in_bounds = _people_parts(est, groups)
    rows = est.model_rows_
    rel = est.bounds_release_
    XB, yB, gB = X[~rows], y[~rows], groups[~rows]
    sizes = np.bincount(np.searchsorted(est.person_ids_, groups))
    several = np.flatnonzero(in_bounds & (sizes > 2))[:3]
    assert several.size == 3
    for k in several:
        keep = gB != est.person_ids_[k]
        without = BoundsRelease(None, bounds, y_bound, 0.1 * X.shape[0], 3.0).fit(
            XB[keep], yB[keep])
        L = without.log_proba() - rel.log_proba()
        joint = max(L.max(axis=1).sum(), (-L).max(axis=1).sum())
        assert est.person_losses_[k] == pytest.approx(joint, rel=1e-12)
    # the bounds part's numbers and the guarantee do not depend on the draw
    assert np.array_equal(fits[1].model_rows_, rows)
    assert np.array_equal(fits[1].person_losses_[in_bounds], est.person_losses_[in_bounds])
    assert fits[1].dp_epsilon_ == est.dp_epsilon_
    ref = AdaSSPRegressor(epsilon=est.model_epsilon_, delta=est.model_delta_,
                          bounds_X=est.bounds_X_, y_bound=est.y_bound_, tighten_bounds=False,
                          random_state=0).fit(X[rows], y[rows], groups=groups[rows])
    np.testing.assert_allclose(est.person_losses_[~in_bounds], ref.person_losses_,
                               rtol=1e-10)
    # added people: each in their key's part, exact there
    new = np.isin(groups, np.arange(40))
    keys = groups[new] + 10**6
    added = est.pdp_epsilon(X[new], y[new], groups=keys)
    into = _key_parts(keys)
    assert into.any() and not into.all()
    alone = AdaSSPRegressor(epsilon=est.model_epsilon_, delta=est.model_delta_,
                            bounds_X=est.bounds_X_, y_bound=est.y_bound_,
                            tighten_bounds=False, random_state=0).fit(X[rows], y[rows])
    np.testing.assert_allclose(added[~into], alone.pdp_epsilon(
        X[new], y[new], groups=keys)[~into], rtol=1e-10)
    for k in np.flatnonzero(into)[:2]:
        person = keys == np.unique(keys)[k]
        bigger = BoundsRelease(None, bounds, y_bound, 0.1 * X.shape[0], 3.0).fit(
            np.vstack([XB, X[new][person]]), np.append(yB, y[new][person]))
        L = rel.log_proba() - bigger.log_proba()
        assert added[k] == pytest.approx(max(L.max(axis=1).sum(), (-L).max(axis=1).sum()),
                                         rel=1e-12)


def _key_parts(keys):
    """Whether each distinct key (sorted) hashes into the bounds part."""
    ids = np.unique(keys)
    return bounds_part(None, None, 0.1, ids)


def test_dask_split_by_person_is_the_in_memory_one():
    da = pytest.importorskip("dask.array")
    X, y, bounds, y_bound, groups = _panel(1500, seed=2)
    params = dict(epsilon=3.0, bounds_X=bounds, y_bound=y_bound, tighten_bounds=True,
                  random_state=0)
    mem = AdaSSPRegressor(**params).fit(X, y, groups=groups)
    lazy = AdaSSPRegressor(**params).fit(da.from_array(X, chunks=700),
                                         da.from_array(y, chunks=700), groups=groups)
    assert np.array_equal(np.asarray(lazy.model_rows_), mem.model_rows_)
    np.testing.assert_allclose(lazy.person_losses_, mem.person_losses_, rtol=1e-10)
    np.testing.assert_allclose(lazy.pdp_losses_.compute(), mem.pdp_losses_, rtol=1e-10)


@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.BoundsWarning")
def test_max_records_sizes_the_bounds_for_a_person_and_the_model_per_person():
    """AdaSSP with max_records=k and tightening, split by person: the
    bounds' quantiles at epsilon / k a record (rank sensitivity k at the
    whole epsilon), the model calibrated for k records at the whole
    (epsilon, delta) as on declared bounds: per person, each person's exact
    loss (given the released bounds) at most the guarantee; the group path
    over epsilon / k is what the other estimators keep."""
    X, y, bounds, y_bound, groups = _panel(4000, seed=4)  # enough for slopes
    k, eps = 4, 4.0  # epsilon / k a record: the label's quantiles fit
    params = dict(epsilon=eps, delta=1e-6, bounds_X=bounds, y_bound=y_bound,
                  tighten_bounds=True, max_records=k)
    fits = [AdaSSPRegressor(**params, random_state=seed).fit(X, y, groups=groups)
            for seed in (0, 1)]
    est = fits[0]
    rel = est.bounds_release_
    assert rel.epsilon == pytest.approx(eps / k)
    assert (est.dp_epsilon_, est.dp_delta_) == (eps, 1e-6)
    assert (est.model_epsilon_, est.model_delta_) == (eps, 1e-6)
    assert est.person_pdp_kind_ == "conditional" and np.any(est.coef_)
    assert np.all(est.person_losses_ <= est.dp_epsilon_ * (1 + 1e-12))
    # a bounds-part person with k records: their exact joint loss, within
    # k times a record's epsilon; the same for every draw
    codes = np.searchsorted(est.person_ids_, groups)
    sizes = np.minimum(np.bincount(codes), k)
    in_bounds = _key_parts(groups)
    full = np.flatnonzero(in_bounds & (sizes == k))[:2]
    assert full.size == 2
    first = np.zeros(groups.size, dtype=bool)  # each person's first k rows
    for code in np.unique(codes):
        first[np.flatnonzero(codes == code)[:k]] = True
    part = first & ~est.model_rows_
    for p in full:
        keep = part & (codes != p)
        without = BoundsRelease(None, bounds, y_bound, 0.1 * first.sum(), eps / k).fit(
            X[keep], y[keep])
        L = without.log_proba() - rel.log_proba()
        joint = max(L.max(axis=1).sum(), (-L).max(axis=1).sum())
        assert est.person_losses_[p] == pytest.approx(joint, rel=1e-12)
        assert joint <= k * rel.epsilon * (1 + 1e-12)
    np.testing.assert_array_equal(fits[1].person_losses_[in_bounds],
                                  est.person_losses_[in_bounds])
    # the model part: the estimator declared at the released bounds, capped
    ref = AdaSSPRegressor(epsilon=eps, delta=1e-6, bounds_X=est.bounds_X_, tighten_bounds=False,
                          y_bound=est.y_bound_, max_records=k, random_state=0).fit(
        X[first & est.model_rows_], y[first & est.model_rows_],
        groups=groups[first & est.model_rows_])
    np.testing.assert_allclose(est.person_losses_[~in_bounds], ref.person_losses_,
                               rtol=1e-10)
    # other estimators keep group privacy over the per-record calibration
    ops = OPSRegressor(**params, random_state=0).fit(X, y, groups=groups)
    assert ops.person_pdp_kind_ == "bound" and ops.model_epsilon_ < eps / k * 1.01


# the private ridge's fit (800 rows: fewer release the public ridge, whose
# person losses are a bound either way) takes seconds: under the audit
# marker; the default run checks the kinds of the parts' losses in
# test_split_fit_losses_are_the_parts_own and tests/domain/test_stage.py
@pytest.mark.audit
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.BoundsWarning")
def test_a_model_part_bound_is_labelled_a_bound(monkeypatch):
    """Tightened by person key, the model part's joint losses keep their own
    kind: where the model can only bound them (objective perturbation's
    smoothed laws), the fit's person losses are a "bound", not "conditional"."""
    from sklearn_pdp.mechanisms.objective_perturbation import _adaptive, _release

    X, y, bounds, y_bound, groups = _panel(800)
    params = dict(epsilon=4.0, bounds_X=bounds, y_bound=y_bound, tighten_bounds=True,
                  random_state=0)
    certified = _release.objpert_person_epsilon

    def smoothed(*args, **kwargs):
        eps, _ = certified(*args, **kwargs)
        return eps, np.ones(eps.shape, dtype=bool)

    for module in (_release, _adaptive):  # the fixed ridge's and the private ridge's
        monkeypatch.setattr(module, "objpert_person_epsilon", smoothed)
    est = ObjPertRegressor(**params).fit(X, y, groups=groups)
    # per person: a model-part person of several rows the model's bound, the
    # others conditional
    codes = np.searchsorted(est.person_ids_, groups)
    multi = np.isin(np.arange(est.person_ids_.size), codes[est.model_rows_]) & (
        np.bincount(codes) > 1)
    assert multi.any() and not multi.all()
    assert np.all(est.person_pdp_kinds_[multi] == "bound")
    assert np.all(est.person_pdp_kinds_[~multi] == "conditional")
    assert est.person_pdp_kind_ == "bound"
