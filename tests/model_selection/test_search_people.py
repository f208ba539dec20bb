"""The private search with person keys: parts by person, keys passed to
every fit, and each person's loss for the whole search from its terms."""

import numpy as np
import pytest
import sklearn
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.model_selection import GroupKFold, cross_val_score

from sklearn_pdp import AdaSSPRegressor
from sklearn_pdp.accounting._exponential import exponential_log_proba
from sklearn_pdp.domain._tighten import BoundsRelease
from sklearn_pdp.model_selection import PrivateGridSearchCV
from sklearn_pdp.model_selection._search import (
    SENSITIVITY,
    part_size_range,
    selection_epsilon,
    validation_losses,
)
from sklearn_pdp.model_selection._selection import (
    person_selection_bounds,
    public_person_selection,
)

from ..conftest import UNIT_BOUNDS, regression_data
from ..linear_model.test_people import random_panel

GRID = {"fit_intercept": [True, False]}


def _search(refit=True, seed=0, **params):
    model = AdaSSPRegressor(**UNIT_BOUNDS, tighten_bounds=False, **params)
    return PrivateGridSearchCV(model, GRID, epsilon=1.0, refit=refit, random_state=seed)


@pytest.fixture(scope="module")
def panel():
    return random_panel(n_people=1200, seed=11)


def test_each_person_is_in_one_part(panel):
    X, y, groups = panel
    search = _search(refit=False).fit(X, y, groups=groups)
    codes = np.searchsorted(search.person_ids_, groups)
    parts = search._parts
    first = np.zeros(codes.max() + 1, dtype=int)
    first[codes] = parts
    np.testing.assert_array_equal(parts, first[codes])
    # every part fit saw its rows' people, and only theirs
    for k, fit in enumerate(search._part_fits):
        np.testing.assert_array_equal(fit.person_ids_, np.unique(groups[parts == k]))
    # the people of a training part, not its records, are binomial
    low, high = part_size_range(X.shape[0], 2, 1e-7, n_people=search.person_ids_.size)
    assert low == int(stats.binom(search.person_ids_.size, 1 / 3).ppf(1e-7 / 4))
    assert high - low > X.shape[0] - 2 * search.person_ids_.size
    assert all(low <= np.sum(parts == k) <= high for k in range(2))


def test_person_losses_are_the_terms(panel):
    """No refit: the larger of group privacy over the candidates' guarantee
    and the sum of the person's selection bounds; with refit, plus the
    refits' largest person loss."""
    X, y, groups = panel
    search = _search(refit=False).fit(X, y, groups=groups)
    codes = np.searchsorted(search.person_ids_, groups)
    m = np.bincount(codes)
    G = search.release_.part_epsilon
    selection = np.bincount(codes, weights=selection_epsilon(search.selection_epsilon_, y, 1.0))
    np.testing.assert_allclose(search.person_losses_, np.maximum(m * G, selection), rtol=1e-12)
    # a person with one record: that record's loss
    rows = np.flatnonzero(m[codes] == 1)
    np.testing.assert_array_equal(search.person_losses_[codes[rows]], search.pdp_losses_[rows])
    assert np.all(search.person_deltas_ >= search.dp_delta_ * (1 - 1e-12))
    assert search.person_pdp_kind_ == "bound"
    refit = _search().fit(X, y, groups=groups)
    full = np.maximum(*(fit.person_losses_ for fit in refit._full_fits))
    G = refit.release_.part_epsilon
    selection = np.bincount(codes, weights=selection_epsilon(refit.selection_epsilon_, y, 1.0))
    np.testing.assert_allclose(refit.person_losses_, full + np.maximum(m * G, selection),
                               rtol=1e-12)
    # a person's records together cost less than the group path of the refit
    assert np.median(full[m > 2]) < np.median(m[m > 2] * refit.best_estimator_.dp_epsilon_)


def test_person_losses_do_not_depend_on_the_draw(panel):
    X, y, groups = panel
    fits = [_search(seed=seed).fit(X, y, groups=groups) for seed in (0, 1)]
    np.testing.assert_array_equal(fits[0].person_losses_, fits[1].person_losses_)
    np.testing.assert_array_equal(fits[0].person_deltas_, fits[1].person_deltas_)


# a person's budget over 3 records buys the label mean alone in some fits
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.FallbackWarning")
@pytest.mark.parametrize("refit", [False, True])
def test_max_records_makes_the_search_per_person(panel, refit):
    """With a cap the search's guarantee covers a whole person: the
    candidates' per person, the selection by people's mean losses, the
    refit per person; every person's loss is at most it."""
    X, y, groups = panel
    search = _search(refit=refit, max_records=3).fit(X, y, groups=groups)
    assert search.dp_epsilon_ <= search.epsilon * (1 + 1e-12)
    assert search.dp_delta_ <= search.delta
    G = search.release_.part_epsilon
    codes = np.searchsorted(search.person_ids_, groups)
    reach = np.zeros(codes.max() + 1)
    np.maximum.at(reach, codes, (1 + np.abs(y)) ** 2)
    selection = search.selection_epsilon_ * reach / SENSITIVITY
    full = (np.maximum(*(fit.person_losses_ for fit in search._full_fits)) if refit
            else 0.0)
    np.testing.assert_allclose(search.person_losses_, full + np.maximum(G, selection),
                               rtol=1e-12)
    assert np.all(search.person_losses_ <= search.dp_epsilon_ * (1 + 1e-12))
    for fit in search._part_fits:
        assert fit.max_records == 3 and fit.dp_epsilon_ <= G * (1 + 1e-12)
    for fit in search._full_fits:
        assert fit.max_records == 3
        assert fit.dp_epsilon_ <= search.epsilon * search.refit_share * (1 + 1e-12)
    # a record's loss (a kept one of a capped person lets the next in): within it too
    assert np.all(search.pdp_losses_ <= search.dp_epsilon_ * (1 + 1e-12))
    other = _search(refit=refit, seed=5, max_records=3).fit(X, y, groups=groups)
    np.testing.assert_array_equal(other.person_losses_, search.person_losses_)
    np.testing.assert_array_equal(other.pdp_losses_, search.pdp_losses_)
    assert other.dp_epsilon_ == search.dp_epsilon_


@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.FallbackWarning")
def test_with_max_records_the_selection_scores_people(panel):
    """The exponential mechanism's scores: each validation person's mean
    clipped loss, summed, at the sensitivity of one record."""
    X, y, groups = panel
    search = _search(refit=False, max_records=3).fit(X, y, groups=groups)
    val = search._parts == len(search._part_fits)
    codes = np.searchsorted(search.person_ids_, groups)[val]
    losses = np.column_stack([validation_losses(fit, X[val], y[val], 1.0)
                              for fit in search._part_fits])
    means = np.stack([np.bincount(codes, weights=col)[np.unique(codes)]
                      / np.bincount(codes)[np.unique(codes)] for col in losses.T], axis=1)
    expected = exponential_log_proba(means.sum(axis=0), search.selection_epsilon_,
                                     SENSITIVITY)
    np.testing.assert_allclose(search._log_proba, expected, rtol=1e-12)
    # without a cap the records' losses are summed, as without keys
    plain = _search(refit=False).fit(X, y, groups=groups)
    val = plain._parts == len(plain._part_fits)
    scores = sum(validation_losses(fit, X[val], y[val], 1.0).sum() * e
                 for fit, e in zip(plain._part_fits, np.eye(2)))
    np.testing.assert_allclose(
        plain._log_proba, exponential_log_proba(scores, plain.selection_epsilon_, SENSITIVITY),
        rtol=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_person_selection_bounds_cover_the_mechanism(seed):
    """Brute force on random losses within each record's reach: removing a
    record, or a whole person, moves the exponential mechanism's
    log-probabilities by at most the bounds, both ways."""
    rng = np.random.default_rng(seed)
    n_people, m, epsilon = 5, 3, 1.7
    codes = rng.integers(n_people, size=12)
    codes = np.unique(codes, return_inverse=True)[1]
    n_people = codes.max() + 1
    reach = rng.uniform(0, SENSITIVITY, size=codes.size)
    losses = rng.uniform(0, 1, size=(codes.size, m)) * reach[:, None]
    losses[rng.random(codes.size) < 0.3] = 0.0  # extremes
    losses[rng.random(codes.size) < 0.3, rng.integers(m)] = 0.0
    records, people = person_selection_bounds(epsilon, reach, codes, n_people)

    def log_proba(keep):
        sizes = np.bincount(codes[keep], minlength=n_people)
        scores = (losses[keep] / sizes[codes[keep]][:, None]).sum(axis=0)
        return exponential_log_proba(scores, epsilon, SENSITIVITY)

    full = log_proba(np.ones(codes.size, dtype=bool))
    for j in range(codes.size):
        keep = np.arange(codes.size) != j
        assert np.abs(full - log_proba(keep)).max() <= records[j] * (1 + 1e-12)
        # the public bound from the label alone covers it
        assert records[j] <= public_person_selection(epsilon, reach[j]) * (1 + 1e-12)
    for p in range(n_people):
        assert np.abs(full - log_proba(codes != p)).max() <= people[p] * (1 + 1e-12)
    assert np.all(records <= epsilon * (1 + 1e-12)) and np.all(people <= epsilon)


def test_max_records_needs_keys_and_declared_bounds(panel):
    X, y, groups = panel
    with pytest.raises(ValueError, match="pass the person keys"):
        _search(refit=False, max_records=3).fit(X, y)
    model = AdaSSPRegressor(**UNIT_BOUNDS, tighten_bounds=True, max_records=3)
    with pytest.raises(ValueError, match="sized for one record"):
        PrivateGridSearchCV(model, GRID, random_state=0).fit(X, y, groups=groups)
    with pytest.raises(ValueError, match="may not set max_records"):
        PrivateGridSearchCV(AdaSSPRegressor(**UNIT_BOUNDS), {"max_records": [2, 4]},
                            random_state=0).fit(X, y, groups=groups)
    # one record a person: removing the kept one lets the next one in
    with pytest.raises(ValueError, match="max_records=1 is not supported"):
        _search(refit=False, max_records=1).fit(X, y, groups=groups)


def test_groups_are_routed_to_the_search():
    X, y, groups = random_panel(n_people=900, seed=12)
    with sklearn.config_context(enable_metadata_routing=True):
        search = _search(refit=False).set_fit_request(groups=True)
        scores = cross_val_score(search, X, y, cv=GroupKFold(2), params={"groups": groups})
    assert scores.shape == (2,)


def test_without_groups_the_split_is_by_record():
    X, y = regression_data(3000, seed=3)
    search = _search(refit=False).fit(X, y)
    assert not hasattr(search, "person_losses_")


# the released bounds cut the tails by design: the fits on them warn
@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.BoundsWarning")
def test_a_tightened_search_adds_each_person_s_joint_bounds_loss():
    """Bounds released once from every row: a person pays their exact joint
    loss for them (the bounds refitted without their records), on top of
    the search's and the refits' terms, none of which depends on the draw."""
    X, y, groups = random_panel(n_people=1500, seed=13)
    model = AdaSSPRegressor(**UNIT_BOUNDS, tighten_bounds=True)
    # epsilon 1.5: the label's four quantiles fit (at 1 nothing is tightened)
    fits = [PrivateGridSearchCV(model, GRID, epsilon=1.5, refit=False, random_state=seed)
            .fit(X, y, groups=groups) for seed in (0, 1)]
    search = fits[0]
    rel = search.bounds_release_
    codes = np.searchsorted(search.person_ids_, groups)
    m = np.bincount(codes)
    k = int(np.argmax(m))
    out = codes != k
    without = BoundsRelease(1.0, None, 1.0, X.shape[0], rel.epsilon).fit(X[out], y[out])
    L = without.log_proba() - rel.log_proba()
    joint = max(L.max(axis=1).sum(), (-L).max(axis=1).sum())
    # the selection bound of the worst label (the label range is released)
    term = max(m[k] * search.release_.part_epsilon, m[k] * search.selection_epsilon_)
    assert search.person_losses_[k] == pytest.approx(term + joint, rel=1e-12)
    np.testing.assert_array_equal(fits[1].person_losses_, search.person_losses_)


@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.FallbackWarning")
def test_the_published_law_covers_people_scored_by_their_mean(panel):
    """With a cap the public law keeps no person keys: from the label alone
    its bound covers each record's, which depends on its person's others."""
    X, y, groups = panel
    search = _search(refit=False, max_records=3).fit(X, y, groups=groups)
    law = search.release_law()
    assert "person_codes" not in vars(law)
    # unit bounds: the privacy domain is the data's own; the candidates'
    # guarantee (the budget) dominates here, so compare the selection's terms
    published = law.statistics(X, y)["selection"]
    own = search.release_._selection_bound(y, y.size)
    assert np.all(published >= own * (1 - 1e-12)) and np.any(published > own)
    assert np.all(law.epsilon(search.pdp_delta_, law.statistics(X, y))
                  >= search.pdp_losses_ * (1 - 1e-12))
    np.testing.assert_array_equal(law.statistics(X, y, add=True)["selection"],
                                  selection_epsilon(search.selection_epsilon_, y, 1.0))


@pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.FallbackWarning")
def test_a_validation_person_moves_the_selection_within_their_bound(panel):
    """End to end, at the same draws: the person with the last key (whose
    removal moves no one else's part), when scored, changes the selection's
    log-probabilities by at most their selection bound, below the budget."""
    X, y, groups = panel
    last = groups == groups.max()
    for seed in range(40):
        search = _search(refit=False, seed=seed, max_records=3).fit(X, y, groups=groups)
        if search._parts[last][0] == len(search._part_fits):
            break
    else:
        pytest.fail("the last person was never in the validation part")
    without = _search(refit=False, seed=seed, max_records=3).fit(
        X[~last], y[~last], groups=groups[~last])
    np.testing.assert_array_equal(without._parts, search._parts[~last])
    moved = np.abs(search._log_proba - without._log_proba).max()
    bound = search.selection_epsilon_ * ((1 + np.abs(y[last])) ** 2).max() / SENSITIVITY
    assert 0 < moved <= bound * (1 + 1e-12)
    assert search.person_losses_[-1] >= bound
