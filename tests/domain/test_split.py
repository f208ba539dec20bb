"""Tightening by parallel composition: the rows split by a public hash of
each row between the bounds release and the model, each with the whole
budget; each row's loss given the released bounds."""

import hashlib

import numpy as np
import pytest

from sklearn_pdp import AdaSSPRegressor, ObjPertRegressor, OPSRegressor, PrivacyLedger
from sklearn_pdp.domain._split import bounds_part, row_hash
from sklearn_pdp.domain._tighten import BoundsRelease

from .test_tighten import _table  # a heavy-tailed column, a normal one, an indicator

MODELS = [AdaSSPRegressor, OPSRegressor, ObjPertRegressor]


def _fit(cls, X, y, bounds, y_bound, **params):
    return cls(epsilon=1.0, delta=1e-6, bounds_X=bounds, y_bound=y_bound,
               tighten_bounds=True, **{"random_state": 0, **params}).fit(X, y)


def test_row_hash_is_the_documented_encoding():
    """BLAKE2b (8 bytes, little-endian) of the row's float64 bytes then its
    label's; -0.0 as 0.0; a person key's str in UTF-8 instead."""
    X = np.array([[1.5, -0.0, 3.0], [1e300, 2.0, -7.25]])
    y = np.array([0.5, -1.0])
    for i in range(2):
        raw = np.r_[np.where(X[i] == 0.0, 0.0, X[i]), y[i]].astype("<f8").tobytes()
        expected = int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "little")
        assert int(row_hash(X, y)[i]) == expected
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
    assert est.dp_epsilon_ <= 1.0 and est.model_epsilon_ <= 1.0
    assert est.dp_epsilon_ == max(est.model_epsilon_, est.bounds_epsilon_)
    assert est.bounds_epsilon_ == pytest.approx(1.0)
    assert (est.model_delta_, est.dp_delta_) == (1e-6, 1e-6)
    assert np.array_equal(est.bounds_losses_[rows], np.zeros(rows.sum()))
    assert np.array_equal(est.pdp_losses_[~rows], est.bounds_losses_[~rows])
    assert np.array_equal(est.bounds_release_.counts_,
                          BoundsRelease(None, bounds, y_bound, 0.1 * X.shape[0], 1.0)
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
        without = BoundsRelease(None, bounds, y_bound, 300.0, 1.0).fit(
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
