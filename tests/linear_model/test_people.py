"""People with several records: each person's loss for removing (adding)
all their rows together, against an independent brute force of the two
releases, and person-level privacy with ``max_records``."""

import numpy as np
import pytest
import sklearn
from scipy.optimize import brentq
from scipy.stats import norm
from sklearn.model_selection import GroupKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from sklearn_pdp import (
    AdaSSPRegressor, OPSRegressor, PrivacyLedger,
)
from sklearn_pdp.exceptions import FallbackWarning
from sklearn_pdp.mechanisms.adaops._release import AdaOPSRelease
from sklearn_pdp.utils._people import PersonLosses

from ..conftest import UNIT_BOUNDS, regression_data

DELTA = 1e-6


def random_panel(n_people=120, seed=0):
    """People with 1 to 6 rows each, in shuffled order."""
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(n_people), rng.integers(1, 7, n_people))
    groups = rng.permutation(groups)
    X, y = regression_data(groups.size, seed=seed)
    return X, y, groups


def adversarial_panel(n=300, seed=1):
    """Four identical extreme records of one person (at a corner of the
    domain, label at its end) against rows spread around the other side."""
    X, y = regression_data(n, seed=seed)
    X = 0.5 * X - 0.3
    corner = np.full(3, 1.0 / np.sqrt(3))
    X[:4], y[:4] = corner, 1.0
    groups = np.concatenate([[-1] * 4, np.arange(n - 4) // 2])
    return X, y, groups


def released_statistics(Z, ys, public_n):
    """AdaSSP's noiseless statistics, computed directly: the Gram's upper
    triangle (the constant's own entry the public size), X^T y, the label
    sum and the smallest eigenvalue of the centred scatter."""
    d = Z.shape[1] - 1
    gram = Z.T @ Z
    gram[d, d] = public_n
    x = Z[:, :d] - Z[:, :d].mean(axis=0) if Z.shape[0] else Z[:, :d]
    eigen = np.linalg.eigvalsh(x.T @ x)[0]
    return {"gram": gram[np.triu_indices(d + 1)], "xy": Z[:, :d].T @ ys,
            "ysum": ys.sum(), "eigen": eigen}


def gaussian_epsilon_brute(s, delta):
    """eps(delta) of two Gaussians s apart (in noise units), by root search
    on the hockey-stick divergence."""
    def excess(eps):
        return norm.cdf(s / 2 - eps / s) - np.exp(eps) * norm.cdf(-s / 2 - eps / s) - delta

    if excess(0.0) <= 0:
        return 0.0
    return brentq(excess, 0.0, 200.0, xtol=1e-14, rtol=1e-14)


def brute_force(est, X, y, rows, add=False):
    """The exact loss of removing ``rows`` (bool mask) of the training data
    ``X``, ``y`` together (or of adding ``X[rows]`` to the others, ``add``)."""
    Z, ys = est.domain_scaler().scale(X, y)
    n = X.shape[0] - (rows.sum() if add else 0)
    big = released_statistics(Z, ys, n)
    small = released_statistics(Z[~rows], ys[~rows], n)
    s2 = sum(np.sum(np.square(big[k] - small[k])) / sigma**2
             for k, sigma in est.noise_scale_.items() if sigma > 0)
    return gaussian_epsilon_brute(np.sqrt(s2), est.delta)


def check_exact(est, X, y, groups):
    for k, key in enumerate(est.person_ids_):
        exact = brute_force(est, X, y, groups == key)
        got = est.person_losses_[k]
        assert got >= exact * (1 - 1e-9) - 1e-12, (key, got, exact)
        assert got <= exact * (1 + 1e-6) + 1e-12, (key, got, exact)


@pytest.mark.parametrize("panel", [random_panel, adversarial_panel])
def test_adassp_person_losses_are_exact(panel):
    X, y, groups = panel()
    est = AdaSSPRegressor(epsilon=1.0, delta=DELTA, **UNIT_BOUNDS, tighten_bounds=False,
                          random_state=0).fit(X, y, groups=groups)
    assert est.person_pdp_kind_ == "exact"
    np.testing.assert_array_equal(est.person_ids_, np.unique(groups))
    check_exact(est, X, y, groups)
    # a person with one row loses exactly that row's loss
    ones = np.flatnonzero(np.bincount(np.searchsorted(est.person_ids_, groups)) == 1)
    for k in ones[:5]:
        row = np.flatnonzero(groups == est.person_ids_[k])[0]
        assert est.person_losses_[k] == est.pdp_losses_[row]


def test_adassp_group_is_not_the_sum_of_its_rows():
    X, y, groups = adversarial_panel()
    est = AdaSSPRegressor(epsilon=1.0, delta=DELTA, **UNIT_BOUNDS, random_state=0).fit(
        X, y, groups=groups)
    four = est.person_losses_[0]
    # the four identical rows move every sum four times as far as one
    assert four > est.pdp_losses_[0] * 2
    assert est.person_ids_[0] == -1


def test_adassp_added_people_are_exact():
    X, y, groups = random_panel(seed=3)
    out = np.isin(groups, np.arange(10))
    est = AdaSSPRegressor(epsilon=1.0, delta=DELTA, **UNIT_BOUNDS, random_state=0).fit(
        X[~out], y[~out], groups=groups[~out])
    added = est.pdp_epsilon(X[out], y[out], groups=groups[out])
    keys = np.unique(groups[out])
    assert added.shape == keys.shape
    order = np.concatenate([np.flatnonzero(~out), np.flatnonzero(out)])
    Xa, ya, ga = X[order], y[order], groups[order]
    for k, key in enumerate(keys):
        person = ga == key
        others = ~out[order] | person
        exact = brute_force(est, Xa[others], ya[others], person[others], add=True)
        assert exact * (1 - 1e-9) - 1e-12 <= added[k] <= exact * (1 + 1e-6) + 1e-12


# four times the noise: the weak slopes of these panels do not show through it
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.FallbackWarning")
# the random panel under the audit marker: the adversarial one is the harder case
@pytest.mark.parametrize("panel", [
    pytest.param(lambda: random_panel(n_people=600), marks=pytest.mark.audit),
    lambda: adversarial_panel(n=1800)])
def test_adassp_max_records_is_per_person(panel):
    """Panels large enough for AdaSSP at a person's budget (the label mean
    alone up to 4 times the per-record size)."""
    X, y, groups = panel()
    est = AdaSSPRegressor(epsilon=1.0, delta=DELTA, **UNIT_BOUNDS, max_records=4,
                          random_state=0).fit(X, y, groups=groups)
    assert est.dp_epsilon_ <= 1.0 and est.dp_delta_ <= DELTA
    kept = est.model_rows_
    assert np.all(np.bincount(np.searchsorted(est.person_ids_, groups[kept])) <= 4)
    for k, key in enumerate(est.person_ids_):
        exact = brute_force(est, X[kept], y[kept], groups[kept] == key)
        assert exact <= est.dp_epsilon_ * (1 + 1e-9)
        assert est.person_losses_[k] >= min(exact * (1 - 1e-9), est.dp_epsilon_)
    # a dropped row changes nothing; the whole person's worst case is the budget
    assert np.all(est.pdp_losses_[~kept] == 0)


def test_the_mean_only_rule_sees_the_person_budget():
    """AdaSSP's noise covers max_records rows: it releases the label mean
    alone up to max_records times the size a record's budget gives, and
    says so; the guarantee is the person's budget either way."""
    X, y, groups = random_panel(n_people=200, seed=9)
    k = 4
    per_record = AdaSSPRegressor(**UNIT_BOUNDS)._mean_only_size(3)
    capped = AdaSSPRegressor(**UNIT_BOUNDS, max_records=k)
    assert capped._mean_only_size(3) == AdaSSPRegressor(
        **UNIT_BOUNDS, epsilon=1.0 / k)._mean_only_size(3) > per_record
    kept = np.sum(np.minimum(np.bincount(groups), k))
    assert per_record < kept <= capped._mean_only_size(3)
    with pytest.warns(FallbackWarning, match=f"over max_records={k}"):
        capped.fit(X, y, groups=groups)
    assert capped.mean_only_ and capped.dp_epsilon_ == 1.0
    assert np.all(capped.person_losses_ <= 1.0)


def test_first_records_are_kept():
    X, y = regression_data(12)
    groups = np.array([0, 1, 0, 0, 1, 0, 2, 0, 1, 1, 1, 2])
    with pytest.warns(FallbackWarning, match="label mean alone"):
        est = AdaSSPRegressor(**UNIT_BOUNDS, max_records=2, random_state=0).fit(
            X, y, groups=groups)
    expected = np.array([1, 1, 1, 0, 1, 0, 1, 0, 0, 0, 0, 1], dtype=bool)
    np.testing.assert_array_equal(est.model_rows_, expected)


def test_max_records_needs_groups():
    X, y = regression_data(50)
    with pytest.raises(ValueError, match="max_records=3"):
        AdaSSPRegressor(**UNIT_BOUNDS, max_records=3).fit(X, y)
    with pytest.raises(ValueError, match="one key per row"):
        AdaSSPRegressor(**UNIT_BOUNDS).fit(X, y, groups=np.arange(49))


def test_person_losses_do_not_depend_on_the_draw():
    X, y, groups = random_panel(seed=5)
    fits = [AdaSSPRegressor(**UNIT_BOUNDS, random_state=seed).fit(X, y, groups=groups)
            for seed in (0, 1)]
    np.testing.assert_array_equal(fits[0].person_losses_, fits[1].person_losses_)


# per record at epsilon / 4, this falls back to the label mean (exact there);
# a release without a joint loss for some person (an uncertified one): here
# AdaOPS's (OPS's alpha="auto") made so
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.FallbackWarning")
@pytest.mark.parametrize("Estimator", [OPSRegressor])
def test_group_privacy_bound_elsewhere(Estimator, monkeypatch):
    monkeypatch.setattr(AdaOPSRelease, "person_losses",
                        lambda self, gram, cross, sizes, add=False: PersonLosses.of(
                            np.full(sizes.shape, np.nan), "bound"))
    X, y, groups = random_panel(n_people=150, seed=2)
    est = Estimator(epsilon=1.0, delta=DELTA, **UNIT_BOUNDS, random_state=0).fit(
        X, y, groups=groups)
    sizes = np.bincount(np.searchsorted(est.person_ids_, groups))
    assert est.person_pdp_kind_ == "bound"
    multi = sizes > 1
    # group privacy: m times the guarantee at delta / (m e^((m - 1) eps)),
    # or (AdaOPS's, calibrated at delta alone) at the group's delta, stated
    assert np.all(est.person_losses_[multi] >= est.dp_epsilon_)
    assert np.all(np.isfinite(est.person_losses_))
    group = est.person_deltas_ > DELTA
    m, eps = sizes[group], est.person_losses_[group] / sizes[group]
    np.testing.assert_allclose(est.person_deltas_[group], m * np.exp((m - 1) * eps) * DELTA)
    assert np.all(est.person_deltas_ >= DELTA)
    capped = Estimator(epsilon=1.0, delta=DELTA, **UNIT_BOUNDS, max_records=4,
                       random_state=0).fit(X, y, groups=groups)
    assert capped.dp_epsilon_ <= 1.0 + 1e-12 and capped.dp_delta_ <= DELTA * (1 + 1e-12)
    assert np.all(capped.person_losses_ <= capped.dp_epsilon_)


def test_groups_are_routed():
    X, y, groups = random_panel(seed=4)
    with sklearn.config_context(enable_metadata_routing=True):
        model = AdaSSPRegressor(**UNIT_BOUNDS, random_state=0).set_fit_request(groups=True)
        pipe = make_pipeline(FunctionTransformer(), model).fit(X, y, groups=groups)
        np.testing.assert_array_equal(pipe[-1].person_ids_, np.unique(groups))
        scores = cross_val_score(make_pipeline(FunctionTransformer(), model), X, y,
                                 cv=GroupKFold(3), params={"groups": groups})
    assert scores.shape == (3,)


def test_ledger_charges_the_joint_losses():
    X, y, groups = random_panel(seed=6)
    est = AdaSSPRegressor(**UNIT_BOUNDS, random_state=0).fit(X, y, groups=groups)
    path = AdaSSPRegressor(**UNIT_BOUNDS, random_state=1).fit(X, y)
    with PrivacyLedger() as ledger:
        joint = ledger.charges(ledger.record(est, groups), est.person_ids_)
        grouped = ledger.charges(ledger.record(path, groups), est.person_ids_)
        # the same fit seen through other keys: the group path again
        renamed = ledger.charges(ledger.record(est, groups + 1000), est.person_ids_ + 1000)
        total = ledger.epsilon(est.person_ids_, DELTA)
    np.testing.assert_array_equal(joint[0], est.person_losses_)
    np.testing.assert_array_equal(joint[1], DELTA)
    np.testing.assert_array_equal(renamed[0], grouped[0])
    sizes = np.bincount(np.searchsorted(est.person_ids_, groups))
    assert np.all(joint[0][sizes > 1] < grouped[0][sizes > 1])
    # composed with the group path's Gaussian ratio: more than either
    assert np.all(total >= joint[0])


def test_ledger_charges_a_bound_person_their_path(monkeypatch):
    """Per person: where a joint loss is only a bound (the release labels
    the first person of several rows so here), the ledger charges that
    person the path through their rows and every other their exact joint
    loss."""
    from sklearn_pdp.mechanisms.adassp._release import AdaSSPRelease

    exact = AdaSSPRelease.person_losses

    def first_bound(self, *args, **kwargs):
        out = exact(self, *args, **kwargs)
        out.kinds[0] = "bound"
        return out

    monkeypatch.setattr(AdaSSPRelease, "person_losses", first_bound)
    X, y, groups = random_panel(seed=6)
    est = AdaSSPRegressor(**UNIT_BOUNDS, random_state=0).fit(X, y, groups=groups)
    path = AdaSSPRegressor(**UNIT_BOUNDS, random_state=1).fit(X, y)
    sizes = np.bincount(np.searchsorted(est.person_ids_, groups))
    first = np.flatnonzero(sizes > 1)[0]
    others = np.arange(sizes.size) != first
    assert est.person_pdp_kinds_[first] == est.person_pdp_kind_ == "bound"
    assert np.all(est.person_pdp_kinds_[others] == "exact")
    with PrivacyLedger() as ledger:
        joint = ledger.charges(ledger.record(est, groups), est.person_ids_)
        grouped = ledger.charges(ledger.record(path, groups), est.person_ids_)
    assert joint[0][first] == grouped[0][first] > est.person_losses_[first]
    np.testing.assert_array_equal(joint[0][others], est.person_losses_[others])


def test_dask_people_match_in_memory():
    da = pytest.importorskip("dask.array")
    X, y, groups = random_panel(seed=3)
    here = AdaSSPRegressor(**UNIT_BOUNDS, random_state=0).fit(X, y, groups=groups)
    there = AdaSSPRegressor(**UNIT_BOUNDS, random_state=0).fit(
        da.from_array(X, chunks=100), da.from_array(y, chunks=100), groups=groups)
    np.testing.assert_allclose(there.person_losses_, here.person_losses_, rtol=1e-9)


def test_added_people_are_capped_like_training_people():
    X, y, groups = random_panel(n_people=300, seed=7)
    out = np.isin(groups, np.arange(10))
    est = AdaSSPRegressor(**UNIT_BOUNDS, max_records=2, random_state=0).fit(
        X[~out], y[~out], groups=groups[~out])
    Xo, yo, go = X[out], y[out], groups[out]
    first = np.concatenate([np.flatnonzero(go == key)[:2] for key in np.unique(go)])
    np.testing.assert_array_equal(est.pdp_epsilon(Xo, yo, groups=go),
                                  est.pdp_epsilon(Xo[first], yo[first], groups=go[first]))


def test_label_mean_person_losses_are_exact():
    """The label mean (Laplace noise on the label sum): a person's loss is
    the Laplace mechanism's at |their labels' sum| / b, in closed form."""
    X, y, groups = random_panel(n_people=40, seed=8)
    with pytest.warns(FallbackWarning, match="label mean alone"):
        est = AdaSSPRegressor(**UNIT_BOUNDS, random_state=0).fit(X, y, groups=groups)
    b = est.release_.noise_scale
    ys = est.domain_scaler().scale_labels(y)
    for k, key in enumerate(est.person_ids_):
        shift = abs(ys[groups == key].sum()) / b
        # pure Laplace: delta(eps) = 1 - e^((eps - shift) / 2) below the shift
        exact = max(0.0, shift + 2 * np.log1p(-DELTA))
        assert exact - 1e-12 <= est.person_losses_[k] <= exact * (1 + 1e-6) + 1e-12


def test_group_calibration_with_a_guarantee_at_its_delta_alone():
    """OPS's private ridge (AdaOPS's release) states its guarantee at its own
    delta only: with max_records, a person is charged the person guarantee."""
    X, y, groups = random_panel(n_people=600, seed=3)
    est = OPSRegressor(**UNIT_BOUNDS, max_records=3, random_state=0).fit(X, y, groups=groups)
    assert not est.mean_only_
    assert est.dp_epsilon_ <= 1.0 + 1e-12 and est.dp_delta_ <= 1e-6 * (1 + 1e-12)
    # calibrated per record at a smaller delta: every number is a bound at delta
    assert est.pdp_kind_ == est.person_pdp_kind_ == "bound"
    assert np.all(est.person_losses_ <= est.dp_epsilon_)
