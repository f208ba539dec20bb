"""Private tightening of the declared bounds: the exponential-mechanism
quantiles, their exact per-row losses and the estimators' hook."""

import itertools
import pickle
import warnings

import numpy as np
import pytest

from sklearn_pdp import (
    AdaSSPRegressor,
    OPSRegressor,
    OutputPerturbationRegressor,
    PDPReport,
)
from sklearn_pdp.accounting._exponential import quantile_log_proba, quantile_loss_table
from sklearn_pdp.exceptions import BoundsWarning, FallbackWarning
from sklearn_pdp._registry import REGRESSORS
from sklearn_pdp.mechanisms._guarantee_law import GuaranteeLaw
from sklearn_pdp.domain._split import bounds_part
from sklearn_pdp.domain._tighten import (BoundsRelease, plan_release, released_bounds,
                                         remaining_epsilon)
from sklearn_pdp.domain._stage import added_guarantee, box_rows, bounded_loss, charged_loss
from sklearn_pdp.domain import _tighten
from sklearn_pdp.model_selection import PrivateGridSearchCV

from ..conftest import audit_if_slow

# small budgets and few rows (the tightening's share taken) release the label
# mean (or zero slopes), or a candidate's fallback, by design
MEAN_RELEASED = pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.FallbackWarning")
# released (tightened or narrow declared) bounds cut the data's tails by design
TAILS_CLIPPED = pytest.mark.filterwarnings("ignore::sklearn_pdp.exceptions.BoundsWarning")


def _log_proba_brute(values, grid, q, epsilon):
    """The quantile mechanism's log probabilities from its definition:
    values rounded up to the grid, utility from the counts at each point."""
    rounded = grid[np.minimum(np.searchsorted(grid, values, side="left"), grid.size - 1)]
    n = values.size
    util = np.array([
        -max(np.sum(rounded < t) - q * n, q * n - np.sum(rounded <= t), 0.0) for t in grid
    ])
    logits = 0.5 * epsilon * util
    return logits - np.logaddexp.reduce(logits)


def _hockey_stick(logp, logq, eps):
    """delta(eps) of two discrete distributions, both directions."""
    p, q = np.exp(logp), np.exp(logq)
    return max(np.sum(np.maximum(p - np.exp(eps) * q, 0.0)),
               np.sum(np.maximum(q - np.exp(eps) * p, 0.0)))


@pytest.mark.parametrize("q", [0.5, 0.9, 0.995])
@pytest.mark.parametrize("add", [False, True])
def test_quantile_loss_table_is_the_exact_pure_loss(q, add):
    rng = np.random.RandomState(0)
    grid = np.geomspace(0.01, 1.0, 12)
    values = np.clip(rng.exponential(0.2, size=40), 0, 1)
    eps = 0.8
    base = _log_proba_brute(values, grid, q, eps)
    assert np.allclose(quantile_log_proba(
        np.bincount(np.searchsorted(grid, values), minlength=grid.size), q, eps), base)
    counts = np.bincount(np.searchsorted(grid, values), minlength=grid.size)
    upper, lower = quantile_loss_table(counts, q, eps, add=add)
    targets = np.concatenate([values[:6], [0.0, 0.5, 1.0]]) if add else values
    for i, v in enumerate(targets):
        if add:
            other = _log_proba_brute(np.append(values, v), grid, q, eps)
            L = base - other  # log P(without) / Q(with)
        else:
            other = _log_proba_brute(np.delete(values, i), grid, q, eps)
            L = other - base
        cell = np.searchsorted(grid, v)
        assert upper[cell] == pytest.approx(L.max(), abs=1e-12)
        assert lower[cell] == pytest.approx((-L).max(), abs=1e-12)
        loss = max(upper[cell], lower[cell])
        # exact: delta is 0 at the loss and positive just below it
        assert _hockey_stick(base, other, loss + 1e-9) <= 1e-12
        assert _hockey_stick(base, other, loss * 0.99) > 0
        assert loss <= eps + 1e-12  # the guarantee


def _table(n, seed=0):
    rng = np.random.RandomState(seed)
    X = np.column_stack([np.minimum(2 * rng.lognormal(0, 0.8, n), 59),
                         rng.normal(50, 10, n), rng.randint(0, 2, n)])
    y = 0.5 * X[:, 0] - 0.1 * X[:, 1] + 2 * X[:, 2] + rng.randn(n)
    bounds = (np.array([0.0, 0.0, 0.0]), np.array([60.0, 100.0, 1.0]))
    return X, y, bounds, (-60.0, 60.0)


def _refit_log_ratio(release, full, X, y, new_x, new_y, i):
    """Log-ratios of the bounds' output probabilities, refitted: with the row
    (``new_x``, ``new_y``) added, or (``new_x`` None) without training row i."""
    if new_x is not None:
        return full.log_proba() - release(np.vstack([X, new_x]), np.append(y, new_y)).log_proba()
    return release(np.delete(X, i, 0), np.delete(y, i)).log_proba() - full.log_proba()


# at epsilon 8 the label's quantiles get more than the norm's (the label first)
@pytest.mark.parametrize("eps", [15.0, 8.0])
@pytest.mark.parametrize("add", [False, True])
def test_release_row_epsilon_matches_brute_force_refits(add, eps, monkeypatch):
    """The whole bounds release (data_norm: one quantile; y: four, each end
    and its inner quantile) against the exact joint log-ratio of its
    outputs, refitted with and without the row, over the product of the
    five grids (a coarse public grid, so that the product stays small)."""
    grid = np.unique(np.concatenate([np.geomspace(1e-2, 1.0, 8), np.linspace(0, 1, 5)[1:]]))
    monkeypatch.setattr(_tighten, "_GRID", grid)
    monkeypatch.setattr(_tighten, "_GRID_POINTS", grid.size)
    X, y, _, y_bound = _table(60)
    n = X.shape[0]

    def release(Xr, yr):
        return BoundsRelease(70.0, None, y_bound, n, eps).fit(Xr, yr)

    full = release(X, y)
    assert full.n_quantiles == 5 and full.epsilon == pytest.approx(eps)
    assert (full.epsilon_q[0] < full.epsilon_q[1]) == (eps < 10)
    rows = range(5)
    if add:
        new_X, new_y = X[:5] * 1.3, np.array([-60.0, -3.0, 0.0, 7.0, 59.0])
        got = full.row_epsilon(new_X, new_y, add=True)
        worst = full.row_epsilon(new_X, None, add=True)
    else:
        got = full.row_epsilon(X[:5], y[:5])
    for i in rows:
        L_parts = _refit_log_ratio(release, full, X, y, new_X[i] if add else None,
                                   new_y[i] if add else None, i)
        joint = np.zeros(())
        for part in L_parts:
            joint = np.add.outer(joint, part)
        assert got[i] == pytest.approx(np.abs(joint).max(), rel=1e-12)
        if add:  # the worst label is at least the actual one's, and attained
            labels = np.linspace(-60, 60, 2001)
            each = full.row_epsilon(np.repeat(new_X[i: i + 1], labels.size, 0), labels, add=True)
            assert worst[i] >= got[i] - 1e-12
            assert worst[i] == pytest.approx(each.max(), rel=1e-9)


def test_draws_follow_the_accounted_distribution():
    """Monte Carlo of the released bounds: the frequencies of one released
    end match the distribution whose losses are reported."""
    X, y, bounds, y_bound = _table(400)
    rel = BoundsRelease(None, bounds, y_bound, X.shape[0], 2.0).fit(X, y)
    rng = np.random.RandomState(1)
    draws = 4000
    ends = np.array([rel.draw(rng)[1][1][0] for _ in range(draws)])
    grid = rel.origin[0] + rel.sign[0] * rel.grid[0]
    freq = np.array([np.sum(np.isclose(ends, g)) for g in grid]) / draws
    p = np.exp(rel.log_proba()[0])
    # 5 standard errors per grid point
    assert np.all(np.abs(freq - p) <= 5 * np.sqrt(p * (1 - p) / draws) + 1e-3)


@pytest.fixture
def tighten_any_size(monkeypatch):
    """tighten_bounds=True on any number of rows (it declines too few, with
    a warning; here the tail guard, which sets the levels and the rows each
    needs, is made negligible): the accounting on data too small for useful
    bounds."""
    monkeypatch.setattr("sklearn_pdp.domain._tighten._TAIL_GUARD", 1e-6)


def _fit(cls=AdaSSPRegressor, n=3000, eps=1.0, **params):
    X, y, bounds, y_bound = _table(n)
    est = cls(epsilon=eps, bounds_X=bounds, y_bound=y_bound, tighten_bounds=True, **params)
    return est.fit(X, y), X, y


def test_adassp_tightened_accounting_and_predictions():
    est, X, y = _fit(eps=5.0, random_state=0)
    rel = est.bounds_release_
    # two quantiles for each range but the indicator column's, four for y
    # (each end and its inner quantile: uncapped at epsilon 5 on 300 rows)
    assert rel.n_quantiles == 8
    assert est.dp_epsilon_ <= 5.0
    assert est.dp_epsilon_ == max(est.bounds_epsilon_, est.model_epsilon_)
    assert est.bounds_epsilon_ == pytest.approx(5.0)
    assert est.declared_bounds_[1][1][0] == 60.0
    lower, upper = est.bounds_X_
    assert lower[2] == 0.0 and upper[2] == 1.0  # the indicator column is left alone
    assert upper[0] < 30.0 and 0.0 <= lower[0] < upper[0]
    assert est.y_bound_[1] - est.y_bound_[0] < 100.0
    # each row's loss: its part's (tests/domain/test_split.py checks both)
    rows = est.model_rows_
    assert np.array_equal(est.pdp_losses_[~rows], rel.row_epsilon(X, y)[~rows])
    assert est.dp_delta_ == 1e-6
    assert np.all(est.pdp_losses_ <= est.dp_epsilon_ + 1e-12)
    other = AdaSSPRegressor(**{**est.get_params(), "random_state": 7}).fit(X, y)
    assert np.array_equal(other.pdp_losses_[~rows], est.pdp_losses_[~rows])
    assert other.dp_epsilon_ == est.dp_epsilon_
    # predictions clip new rows to the released bounds; the public model too
    far = X[:5] * 10.0
    assert np.allclose(est.predict(far), np.clip(far, lower, upper) @ est.coef_ + est.intercept_)
    public = est.public_model()
    assert np.allclose(public.predict(far), est.predict(far))
    assert public.clip and np.allclose(public.bounds["bounds_X"], np.array(est.bounds_X_))
    loaded = type(public).from_json(public.to_json())
    assert np.array_equal(loaded.predict(far), public.predict(far))
    # targets: each part's loss of adding them, the larger without labels
    targets = est.pdp_epsilon(X[:20], y[:20])
    assert np.all(targets <= est.domain_stage().cap() + 1e-12)
    assert np.all(est.pdp_epsilon(X[:20]) >= targets - 1e-12)


def test_tightening_improves_a_heavy_tailed_fit():
    X, y, bounds, y_bound = _table(20000)
    Xte, yte, *_ = _table(5000, seed=1)
    mse = {}
    for tighten in (False, True):  # mean over four draws: one varies by 15%
        mse[tighten] = np.mean([np.mean((AdaSSPRegressor(
            epsilon=1.0, bounds_X=bounds, y_bound=y_bound, tighten_bounds=tighten,
            random_state=seed).fit(X, y).predict(Xte) - yte) ** 2) for seed in range(4)])
    assert mse[True] < 0.9 * mse[False]  # measured 1.45 against 1.72


@pytest.mark.parametrize("cls", [pytest.param(cls, marks=audit_if_slow(name)) for name, cls in REGRESSORS.items() if name != "adassp"])
def test_every_estimator_tightens_within_the_budget(cls):
    est, X, y = _fit(cls, n=4000, eps=2.0, random_state=0)
    assert est.dp_epsilon_ <= 2.0
    assert est.bounds_epsilon_ == pytest.approx(2.0)
    assert np.all(est.pdp_losses_ <= est.dp_epsilon_ + 1e-12)
    rows = est.model_rows_
    assert np.array_equal(est.pdp_losses_[~rows], est.bounds_release_.row_epsilon(X, y)[~rows])
    # the model part's losses are the model's own, below its guarantee
    assert np.all(est.pdp_losses_[rows] <= est.model_epsilon_ + 1e-12)
    assert np.all(np.isfinite(est.predict(X)))


def test_data_norm_is_tightened_by_one_norm_quantile():
    X, y, _, y_bound = _table(5000)
    est = AdaSSPRegressor(epsilon=2.0, data_norm=200.0, y_bound=y_bound,
                          tighten_bounds=True, random_state=0).fit(X, y)
    assert est.bounds_release_.n_quantiles == 5
    assert est.data_norm_ < 200.0 and est.bounds_X_ is None
    far = np.array([[300.0, 0.0, 0.0]])
    assert np.allclose(est.predict(far), [est.data_norm_ * est.coef_[0] + est.intercept_])
    assert np.allclose(est.public_model().predict(far), est.predict(far))


@MEAN_RELEASED
def test_auto_rule_and_refit_state():
    X, y, bounds, y_bound = _table(500)
    small = AdaSSPRegressor(epsilon=0.3, bounds_X=bounds, y_bound=y_bound,
                            tighten_bounds="auto", random_state=0).fit(X, y)
    assert not hasattr(small, "bounds_release_")  # n epsilon too small
    assert small.bounds_X_[1][0] == 60.0
    big, X, y = _fit(n=20000, eps=1.0, random_state=0)
    big.set_params(tighten_bounds="auto").fit(X, y)
    assert hasattr(big, "bounds_release_")
    big.set_params(tighten_bounds=False).fit(X, y)  # a refit drops the release
    assert not hasattr(big, "bounds_release_") and big.dp_epsilon_ == 1.0
    big.set_params(tighten_bounds=np.False_).fit(X, y)
    assert not hasattr(big, "bounds_release_")
    # True on too little data: says so, and fits on the declared bounds
    with pytest.warns(BoundsWarning, match="500 rows are too few to tighten"):
        small.set_params(tighten_bounds=np.True_).fit(X[:500], y[:500])
    assert not hasattr(small, "bounds_release_") and small.dp_epsilon_ == 0.3
    assert small.bounds_X_[1][0] == 60.0


@MEAN_RELEASED
@TAILS_CLIPPED
def test_unsupported_uses_raise_clear_errors(tighten_any_size):
    X, y, bounds, y_bound = _table(500)
    with pytest.raises(ValueError, match="tighten_bounds"):
        OPSRegressor(epsilon=None, gamma=1.0, bounds_X=bounds, y_bound=y_bound,
                     tighten_bounds=True).fit(X, y)
    with pytest.raises(ValueError, match="tighten_share"):
        AdaSSPRegressor(bounds_X=bounds, y_bound=y_bound, tighten_bounds=True,
                        tighten_share=1.5).fit(X, y)
    search = PrivateGridSearchCV(AdaSSPRegressor(bounds_X=bounds, y_bound=y_bound,
                                                 tighten_share=2.0, tighten_bounds=True),
                                 {"budget_split": [None]})
    with pytest.raises(ValueError, match="tighten_share"):
        search.fit(X, y)
    assert not hasattr(search, "bounds_release_")  # refused before any release
    est = AdaSSPRegressor(bounds_X=bounds, y_bound=y_bound, tighten_bounds=True)
    search = PrivateGridSearchCV(est, {"budget_split": [None]}, epsilon=1.0, refit=False)
    # published: the guarantee for everyone, publish_epsilon kept, with a warning
    # (test_published_report_of_a_tightened_fit_is_its_guarantee)
    for model in (search, est):
        with pytest.warns(FallbackWarning, match="tighten_bounds"):
            published = PDPReport(model, publish_epsilon=0.5).fit(X, y)
        report = PDPReport(model).fit(X, y)  # unpublished: the same losses
        assert hasattr(report.estimator_, "bounds_release_")
        assert np.array_equal(report.pdp_losses_, report.estimator_.pdp_losses_)
        # the same guarantee; draws apart, only a fit's model part's losses
        # move (the search's tightening is sequential: none)
        rows = getattr(report.estimator_, "model_rows_", None)
        kept = slice(None) if rows is None else ~rows
        assert np.array_equal(published.pdp_losses_[kept], report.pdp_losses_[kept])
        assert published.dp_epsilon_ == report.dp_epsilon_


@MEAN_RELEASED
@TAILS_CLIPPED
@pytest.mark.parametrize("cls, grid", [(AdaSSPRegressor, {"fit_intercept": [True, False]}),
                                       (OPSRegressor, {"alpha": [1.0, 10.0]})])
@pytest.mark.parametrize("refit", [True, False])
def test_search_tightens_once_inside_its_budget(cls, grid, refit):
    """The bounds are released once, before the parts, with the estimator's
    share of the search's total; every fit then takes the released bounds,
    and each record's loss is the bounds' exact one plus the search's, valid
    for every released bound."""
    X, y, bounds, y_bound = _table(6000)
    est = cls(bounds_X=bounds, y_bound=y_bound, tighten_bounds=True)
    searches = [PrivateGridSearchCV(est, grid, epsilon=3.0, refit=refit,
                                    random_state=seed).fit(X, y) for seed in (0, 3)]
    search = searches[0]
    rel = search.bounds_release_
    assert search.bounds_epsilon_ == pytest.approx(0.3) == rel.epsilon
    assert search.dp_epsilon_ <= 3.0 and search.dp_delta_ <= 1e-6
    assert search.declared_bounds_[1][1][0] == 60.0 and search.bounds_X_[1][0] < 30.0
    # the rest of the budget, split between the search and the refit
    rest = 2.7 * (0.5 if refit else 1.0)
    fits = [*search._part_fits, *search._full_fits]
    for fit in fits:
        assert fit.tighten_bounds is False and not hasattr(fit, "bounds_release_")
        assert np.array_equal(fit.bounds_X_[1], search.bounds_X_[1])
        assert fit.y_bound_ == search.y_bound_
    assert search._part_fits[0].epsilon == pytest.approx(rest)
    n, d = X.shape
    # the search stage: a candidate's guarantee or the worst label's
    # selection bound (the label range is tightened), for every release
    train = search._training_guarantee(search._part_fits, n, d)[0]
    expected = rel.row_epsilon(X, y) + max(train, search.selection_epsilon_)
    if refit:
        exact = np.max([f.pdp_losses_ for f in search._full_fits], axis=0)
        part = search.pdp_losses_ - expected
        # at least the refits' exact losses at the bounds that were released
        assert np.all(part >= exact - 1e-12)
        if cls is AdaSSPRegressor:
            assert part.min() < part.max() <= max(f.dp_epsilon_ for f in search._full_fits)
            rows = search.release_.box_rows
            assert np.allclose(part, np.max([bounded_loss(
                f.release_, r, X, y, False, f.delta, f.dp_epsilon_) for f, r in zip(
                    search._full_fits, rows)], axis=0))
        else:
            assert np.allclose(part, max(f.dp_epsilon_ for f in search._full_fits))
    else:
        assert np.allclose(search.pdp_losses_, expected)
    assert np.all(search.pdp_losses_ <= search.dp_epsilon_ + 1e-12)
    other = searches[1]
    assert other.y_bound_ != search.y_bound_  # other released bounds, same losses
    assert np.array_equal(other.pdp_losses_, search.pdp_losses_)
    assert other.dp_epsilon_ == search.dp_epsilon_ and other.dp_delta_ == search.dp_delta_
    # targets: the bounds' loss of adding them, and the search's
    targets = search.pdp_epsilon(X[:20], y[:20])
    assert np.all(targets >= rel.row_epsilon(X[:20], y[:20], add=True) + train - 1e-12)
    assert np.all(search.pdp_epsilon(X[:20]) >= targets - 1e-12)
    if refit and cls is not AdaSSPRegressor:
        # a person added: each refit's cap for an addition to its n rows (at
        # n + 1 rows OPS's corner grows), not its removal guarantee
        added = search.release_._full_fit_losses(X[:20], y[:20], True)
        assert np.allclose(added, max(added_guarantee(f.release_) for f in search._full_fits))
        assert np.all(added > max(f.dp_epsilon_ for f in search._full_fits))
    # predictions clip new rows to the released bounds, as the public model
    far = X[:5] * 10.0
    lower, upper = search.bounds_X_
    best = search.best_estimator_
    assert np.allclose(search.predict(far), np.clip(far, lower, upper) @ best.coef_
                       + best.intercept_)
    public = search.public_model()
    assert public.clip and np.allclose(public.predict(far), search.predict(far))


@MEAN_RELEASED
@TAILS_CLIPPED
def test_search_auto_on_little_data_is_the_plain_search():
    """"auto" that does not tighten leaves the search as without it: the same
    seeds, release and losses; a refit without tightening drops the release."""
    X, y, bounds, y_bound = _table(400)
    grid = {"budget_split": [None]}
    runs = [PrivateGridSearchCV(AdaSSPRegressor(bounds_X=bounds, y_bound=y_bound,
                                                tighten_bounds=mode),
                                grid, epsilon=0.3, random_state=0).fit(X, y)
            for mode in ("auto", False)]
    assert not hasattr(runs[0], "bounds_release_")
    assert runs[0].best_estimator_.tighten_bounds is False
    assert np.array_equal(runs[0].pdp_losses_, runs[1].pdp_losses_)
    assert np.array_equal(runs[0].best_estimator_.coef_, runs[1].best_estimator_.coef_)
    # True there declines with a warning (the search's total budget and size)
    with pytest.warns(BoundsWarning, match="400 rows are too few.*epsilon=0.3"):
        search = PrivateGridSearchCV(AdaSSPRegressor(
            bounds_X=bounds, y_bound=y_bound, tighten_bounds=True),
            grid, epsilon=0.3, random_state=0).fit(X, y)
    assert not hasattr(search, "bounds_release_")
    assert np.array_equal(search.pdp_losses_, runs[1].pdp_losses_)
    search = runs[1].set_params(estimator=AdaSSPRegressor(
        bounds_X=bounds, y_bound=y_bound, tighten_bounds=True), epsilon=20.0).fit(X, y)
    assert hasattr(search, "bounds_release_") and search.dp_epsilon_ <= 20.0
    search.set_params(estimator=AdaSSPRegressor(bounds_X=bounds, y_bound=y_bound,
                                                tighten_bounds=False)).fit(X, y)
    assert not hasattr(search, "bounds_release_")
    assert search.bounds_X_[1][0] == 60.0


@MEAN_RELEASED
@TAILS_CLIPPED
def test_search_tightens_data_norm_and_chooses_without_data(tighten_any_size):
    """A declared data_norm is tightened by one norm quantile before the
    parts; parts too small for the grid (a uniform choice) fit every
    candidate on all the data with what the bounds left."""
    X, y, bounds, y_bound = _table(6000)
    searches = [PrivateGridSearchCV(
        AdaSSPRegressor(data_norm=200.0, y_bound=y_bound, tighten_bounds=True),
        {"budget_split": [None]}, epsilon=2.0, random_state=seed).fit(X, y) for seed in (0, 1)]
    search = searches[0]
    assert search.bounds_release_.source == ["norm"] + ["y"] * 4
    assert search.data_norm_ < 200.0 and search.bounds_X_ is None
    assert search.best_estimator_.data_norm_ == search.data_norm_
    assert search.dp_epsilon_ <= 2.0 and search.dp_delta_ <= 1e-6
    assert np.array_equal(searches[1].pdp_losses_, search.pdp_losses_)
    # a grid that tightens again inside the fits: each such refit charges
    # its own guarantee (its bounds are not the search's)
    twice = PrivateGridSearchCV(
        AdaSSPRegressor(bounds_X=bounds, y_bound=y_bound, tighten_bounds=True),
        {"tighten_bounds": [False, True]}, epsilon=1.0, random_state=0).fit(X, y)
    assert [r is None for r in twice.release_.box_rows] == [False, True]
    inner = twice._full_fits[1]
    assert hasattr(inner, "bounds_release_")
    # a person added to it: its own bounds' loss too, not its model's cap alone
    charged = charged_loss(inner, None, X[:20], y[:20], True)
    assert np.all(charged >= inner.pdp_epsilon(X[:20], y[:20]))
    assert np.all(charged >= max(inner.bounds_epsilon_, added_guarantee(inner.release_)))
    assert twice.dp_epsilon_ <= 1.0 and np.all(twice.pdp_losses_ <= twice.dp_epsilon_)
    grid = {"fit_intercept": [True, False], "budget_split": [None, (1, 1, 1, 1)]}
    with pytest.warns(Warning, match="uniformly at random"):
        small = PrivateGridSearchCV(
            AdaSSPRegressor(bounds_X=bounds, y_bound=y_bound, tighten_bounds=True),
            grid, epsilon=1.0, random_state=0).fit(X[:60], y[:60])
    assert small.selection_epsilon_ == 0.0 and small.bounds_epsilon_ == pytest.approx(0.1)
    assert [f.epsilon for f in small._full_fits] == [pytest.approx(0.9)] * 4
    assert small.dp_epsilon_ <= 1.0 and small.dp_delta_ <= 1e-6
    # mean-only fits (too little data for slopes) charge their guarantee
    assert any(r is None for r in small.release_.box_rows)
    model = np.max([np.full(60, f.dp_epsilon_) if r is None else bounded_loss(
        f.release_, r, X[:60], y[:60], False, f.delta, f.dp_epsilon_)
        for f, r in zip(small._full_fits, small.release_.box_rows)], axis=0)
    assert np.allclose(small.pdp_losses_,
                       small.bounds_release_.row_epsilon(X[:60], y[:60]) + model)


def test_dask_input_gives_the_same_release():
    """Quantiles from per-block histograms: the same counts, bounds (same
    seed), losses and predictions as in memory, lazily."""
    da = pytest.importorskip("dask.array")
    X, y, bounds, y_bound = _table(6000)
    params = dict(epsilon=2.0, bounds_X=bounds, y_bound=y_bound, tighten_bounds=True,
                  random_state=0)
    mem = AdaSSPRegressor(**params).fit(X, y)
    lazy = AdaSSPRegressor(**params).fit(da.from_array(X, chunks=1000),
                                         da.from_array(y, chunks=1000))
    assert np.array_equal(lazy.bounds_release_.counts_, mem.bounds_release_.counts_)
    assert np.allclose(lazy.bounds_X_, mem.bounds_X_)
    assert isinstance(lazy.pdp_losses_, da.Array)
    assert np.allclose(lazy.pdp_losses_.compute(), mem.pdp_losses_)
    Xt, yt = da.from_array(X[:50] * 3, chunks=20), da.from_array(y[:50], chunks=20)
    assert np.allclose(lazy.pdp_epsilon(Xt).compute(), mem.pdp_epsilon(X[:50] * 3))
    assert np.allclose(lazy.pdp_epsilon(Xt, yt).compute(), mem.pdp_epsilon(X[:50] * 3, y[:50]))
    assert np.allclose(lazy.predict(Xt).compute(), mem.predict(X[:50] * 3))
    # published: the same public bound, the losses lazy and the fit's
    report = _publish_once(AdaSSPRegressor(**params), da.from_array(X, chunks=1000),
                           da.from_array(y, chunks=1000))
    assert report.published_.cap_epsilon == mem.domain_stage().cap()
    assert np.allclose(report.pdp_losses_.compute(), mem.pdp_losses_)


def test_undeclared_bounds_are_not_tightened():
    X, y, bounds, _ = _table(3000)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = AdaSSPRegressor(bounds_X=bounds, tighten_bounds=True,
                              random_state=0).fit(X, y)
    leaks = [w for w in caught if "y_bound was not given" in str(w.message)]
    assert len(leaks) == 1  # warned once, by the outer fit
    assert est.bounds_release_.n_quantiles == 4
    assert est.y_bound_ == est.declared_bounds_[2]


def test_command_line_reports_the_released_bounds(tmp_path, capsys):
    import json

    from sklearn_pdp.__main__ import main

    X, y, bounds, y_bound = _table(4000)
    path = tmp_path / "table.csv"
    np.savetxt(path, np.column_stack([X, y]), delimiter=",", header="a,b,c,y", comments="")
    common = [str(path), "--target", "y", "--bounds-x", "0,0,0", "60,100,1",
              "--y-bound=-60,60", "--epsilon", "3", "--json", "--random-state", "0"]
    assert main([*common, "--tighten-bounds"]) == 0
    report = json.loads(capsys.readouterr().out)
    released = report["publishable"]["released_bounds"]
    assert released["epsilon"] == pytest.approx(3.0)  # on the bounds part
    assert released["bounds_X"][1][2] == 1.0 and released["bounds_X"][1][0] < 60.0
    assert report["publishable"]["dp_epsilon"] <= 3.0
    assert main([*common, "--tighten-bounds", "auto", "--tighten-share", "0.2"]) == 0
    assert json.loads(capsys.readouterr().out)["publishable"]["released_bounds"]["epsilon"] == pytest.approx(3.0)
    assert main(common) == 0  # the default: "auto"
    assert json.loads(capsys.readouterr().out)["publishable"]["released_bounds"] is not None
    assert main([*common, "--tighten-bounds", "no"]) == 0
    assert json.loads(capsys.readouterr().out)["publishable"]["released_bounds"] is None


# -- published reports (the guarantee for everyone, nothing spent) ----------

# every registered regressor at its defaults, and OPS and output
# perturbation at a numeric ridge (their fixed-ridge releases)
PUBLISHED = [pytest.param(cls, {}, id=name,
                          marks=audit_if_slow(name))
             for name, cls in REGRESSORS.items()] + [
    pytest.param(OPSRegressor, {"alpha": 300.0}, id="ops-alpha"),
    pytest.param(OutputPerturbationRegressor, {"alpha": 1e4}, id="output-alpha"),
]


def _domain_data(n=4000, d=3, seed=0):
    """Rows well inside a declared domain of [-2, 2] per feature and label."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d))
    y = np.clip(0.3 + X @ [0.5, -0.3, 0.2][:d] + 0.2 * rng.normal(size=n), -1.5, 1.5)
    return X, y, {"bounds_X": (-2.0 * np.ones(d), 2.0 * np.ones(d)), "y_bound": 2.0}


def _people(d, rng):
    """The declared domain's corners (every feature and the label at an end),
    points inside it and points beyond it (clipped into it)."""
    corners = 2.0 * np.array(list(itertools.product((-1.0, 1.0), repeat=d)))
    inside = rng.uniform(-2, 2, size=(20, d))
    X = np.vstack([np.repeat(corners, 2, axis=0), inside, 5.0 * inside[:5]])
    y = np.concatenate([np.tile([-2.0, 2.0], corners.shape[0]),
                        rng.uniform(-2, 2, 20), [7.0, -7.0, 0.0, 3.0, -3.0]])
    return X, y


def _publish_once(model, X, y, random_state=0):
    """A published PDPReport of ``model``, with the one warning it gives."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = PDPReport(model, publish_epsilon=0.2, random_state=random_state).fit(X, y)
    said = [w for w in caught if issubclass(w.category, FallbackWarning)
            and "was not spent" in str(w.message)]
    assert len(said) == 1 and "tighten_bounds" in str(said[0].message)
    return report


def _check_published_guarantee(report, X, y, people, cap, sequential=False):
    """The published bound is ``cap`` for everyone; it covers every training
    row's exact loss and every person's loss of being added (their label,
    and the worst); nothing of publish_epsilon is spent."""
    est, published = report.estimator_, report.published_
    assert isinstance(published.law, GuaranteeLaw) and published.noisy_gram is None
    assert published.summary_epsilon == 0.0 and published.beta == 0.0
    assert report.dp_epsilon_ == est.dp_epsilon_ == published.dp_epsilon
    assert report.dp_delta_ == est.dp_delta_ == published.dp_delta
    assert np.array_equal(report.pdp_losses_, est.pdp_losses_)  # the exact losses
    assert published.cap_epsilon == cap >= est.dp_epsilon_
    train = published.epsilon(X, y)
    assert np.all(train == cap) and np.all(train >= report.pdp_losses_)
    Xp, yp = people
    assert np.all(published.epsilon(Xp, yp) == cap) and np.all(published.epsilon(Xp) == cap)
    assert np.all(est.pdp_epsilon(Xp, yp) <= cap) and np.all(est.pdp_epsilon(Xp) <= cap)
    rel = est.bounds_release_
    if sequential:
        # the sharp part: beyond the bounds' exact loss of adding a person,
        # what the search's fits are charged for them, at most the cap's share
        model_part = est.pdp_epsilon(Xp, yp) - rel.row_epsilon(Xp, yp, add=True)
        assert np.all(model_part <= cap - rel.epsilon + 1e-12)
    else:  # a person added to the bounds part loses the bounds' exact loss
        into_bounds = bounds_part(Xp, yp, 0.1)
        assert np.array_equal(est.pdp_epsilon(Xp, yp)[into_bounds],
                              rel.row_epsilon(Xp, yp, add=True)[into_bounds])
    # transform: the exact loss of adding (the publication adds nothing)
    assert np.array_equal(report.transform(Xp)[:, 0], est.pdp_epsilon(Xp))
    summary = published.summary
    assert [summary[k] for k in ("mean", "median", "q90", "q99")] == [cap] * 4
    assert summary["below"] == {0.1: float(cap <= 0.1), 1.0: float(cap <= 1.0)}
    assert summary["n_samples"] == X.shape[0] and summary["dp_epsilon"] == est.dp_epsilon_
    loaded = pickle.loads(pickle.dumps(published))
    assert np.array_equal(loaded.epsilon(Xp[:4], yp[:4]), published.epsilon(Xp[:4], yp[:4]))
    assert loaded.summary == summary


@pytest.mark.parametrize("cls, params", PUBLISHED)
def test_published_report_of_a_tightened_fit_is_its_guarantee(cls, params):
    """A tightened fit publishes one public number for everyone: the largest
    loss of a person removed or added over every data set of the domain and
    every released bound (the stage's ``cap``). It covers the exact losses
    of the training rows and of persons added at the declared domain's
    corners, spends nothing of publish_epsilon, warns once and is the same
    for every random_state."""
    X, y, declared = _domain_data()
    people = _people(X.shape[1], np.random.RandomState(1))
    caps = []
    for seed in (0, 7):
        est = cls(epsilon=2.0, tighten_bounds=True, random_state=seed, **declared, **params)
        report = _publish_once(est, X, y, random_state=seed)
        fit = report.estimator_
        # the bounds' pure guarantee or the model's cap for an addition
        cap = max(fit.bounds_epsilon_, fit.model_epsilon_, added_guarantee(fit.release_))
        assert fit.domain_stage().cap() == cap
        _check_published_guarantee(report, X, y, people, cap)
        caps.append((cap, report.published_.summary, report.dp_epsilon_))
    assert caps[0] == caps[1]


@MEAN_RELEASED
@pytest.mark.parametrize("cls, grid", [(AdaSSPRegressor, {"fit_intercept": [True, False]}),
                                       (OPSRegressor, {"alpha": [1.0, 10.0]})])
@pytest.mark.parametrize("refit", [True, False])
def test_published_report_of_a_tightened_search_is_its_guarantee(cls, grid, refit):
    """A search whose estimator tightens (refit or not) publishes the
    largest loss of a record removed or added, stage by stage: the bounds'
    guarantee, the search's (its candidates' over the part sizes of n and
    n + 1 records, or the selection's epsilon) and its fits' on all the
    data (each stage's ``cap``)."""
    X, y, declared = _domain_data(6000)
    people = _people(X.shape[1], np.random.RandomState(2))
    caps = []
    for seed in (0, 3):
        # epsilon 1.5: its tenth on 6000 rows holds the label's four quantiles
        search = PrivateGridSearchCV(cls(tighten_bounds=True, **declared), grid, epsilon=1.5,
                                     refit=refit, random_state=seed)
        report = _publish_once(search, X, y, random_state=seed)
        fitted, release = report.estimator_, report.estimator_.release_
        n, d = X.shape
        parts = [fitted._training_guarantee(fitted._part_fits, m, d)[0] for m in (n, n + 1)]
        cap = fitted.bounds_epsilon_ + max(*parts, fitted.selection_epsilon_)
        if refit:
            cap += max(f.domain_stage().cap() for f in fitted._full_fits)
        assert release.guarantee_cap() == pytest.approx(cap, rel=1e-12)
        _check_published_guarantee(report, X, y, people, release.guarantee_cap(),
                                   sequential=True)
        caps.append((release.guarantee_cap(), fitted.dp_epsilon_))
    assert caps[0] == caps[1]
    # without tightening, a refit still cannot be published (its unreleased fits)
    if refit:
        plain = PrivateGridSearchCV(cls(tighten_bounds=False, **declared), grid, epsilon=1.0,
                                    random_state=0)
        with pytest.raises(NotImplementedError, match="refit=True"):
            PDPReport(plain, publish_epsilon=0.2).fit(X, y)


def test_ledger_records_a_published_tightened_fit():
    """A publication that spent nothing adds nothing to anyone's loss: the
    ledger charges the fit's own losses, and people added theirs (refused
    for a publication that spends: its bounds hold for training rows)."""
    from sklearn_pdp import PrivacyLedger

    X, y, declared = _domain_data(3000)
    report = _publish_once(AdaSSPRegressor(epsilon=3.0, tighten_bounds=True, random_state=0,
                                           **declared), X, y)
    ledger = PrivacyLedger()
    absent = X[:3] * 1.5
    ledger.record(report, np.arange(3000), absent=["a", "b", "c"], absent_X=absent)
    assert np.allclose(ledger.epsilon(np.arange(3000), 1e-6), report.pdp_losses_, rtol=1e-9)
    assert np.allclose(ledger.epsilon(["a", "b", "c"], 1e-6),
                       report.estimator_.pdp_epsilon(absent), rtol=1e-9)
    spent = PDPReport(AdaSSPRegressor(epsilon=1.0, tighten_bounds=False, random_state=0,
                                      **declared),
                      publish_epsilon=0.2, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="absent_X"):
        PrivacyLedger().record(spent, np.arange(3000), absent=["a"], absent_X=absent[:1])


# the saved model is read back and asked about rows without their names
@pytest.mark.filterwarnings("ignore:X does not have valid feature names:UserWarning")
def test_command_line_publishes_a_tightened_fit(tmp_path, capsys):
    """``--tighten-bounds --publish-epsilon 0.2``: the guarantee is published
    for everyone, publish_epsilon is not spent, the reason is said once, and
    the saved model is the release's, as without publication."""
    import json

    from sklearn_pdp import PublicLinearModel
    from sklearn_pdp.__main__ import main

    X, y, bounds, y_bound = _table(4000)
    path = tmp_path / "table.csv"
    np.savetxt(path, np.column_stack([X, y]), delimiter=",", header="a,b,c,y", comments="")
    common = [str(path), "--target", "y", "--bounds-x", "0,0,0", "60,100,1",
              "--y-bound=-60,60", "--epsilon", "3", "--tighten-bounds", "--random-state", "0"]
    saved = {}
    for publish in ([], ["--publish-epsilon", "0.2"]):
        model = tmp_path / f"model{len(publish)}.json"
        assert main([*common, *publish, "--json", "--save-model", str(model)]) == 0
        saved[bool(publish)] = json.loads(capsys.readouterr().out)
        saved[bool(publish), "model"] = PublicLinearModel.from_json(str(model))
    plain, report = saved[False]["publishable"], saved[True]["publishable"]
    assert report["dp_epsilon"] == plain["dp_epsilon"] <= 3.0  # nothing spent
    assert report["released_bounds"] == plain["released_bounds"]
    assert report["model"] == plain["model"] and report["reason"] is None
    published = report["published"]
    assert not published["spent"] and "was not spent" in published["note"]
    cap = published["pdp_epsilon"]["median"]
    assert set(published["pdp_epsilon"].values()) == {cap}
    assert plain["dp_epsilon"] <= cap < plain["dp_epsilon"] + 1e-3
    assert np.array_equal(saved[True, "model"].predict(X * 2), saved[False, "model"].predict(X * 2))
    assert main([*common, "--publish-epsilon", "0.2"]) == 0
    text = capsys.readouterr().out
    assert text.count("was not spent") == 1
    assert text.index("published report") < text.index("FOR THE CURATOR ONLY")


class _SearchCharge:
    """What a private search charges AdaSSP refitted on bounds it released
    (sequential composition, :func:`~sklearn_pdp.domain._stage.box_rows`):
    the bounds from every row with a share of ``epsilon``, the model on the
    released bounds with the rest, each row charged its largest model loss
    over the plausible released bounds."""

    def __init__(self, X, y, epsilon, delta=1e-6, **declared):
        est = AdaSSPRegressor(epsilon=epsilon, delta=delta, tighten_bounds=True, **declared)
        self.resolved = est.resolve_bounds(X, y)
        self.rel = plan_release(est, self.resolved, X.shape[0], epsilon, delta)
        self.rel.fit(X, y)
        released = released_bounds(self.rel.draw(np.random.default_rng(0)), self.resolved)
        self.delta = delta - self.rel.event_
        self.model = AdaSSPRegressor(epsilon=remaining_epsilon(epsilon, self.rel.epsilon),
                                     delta=self.delta, random_state=0, **released).fit(X, y)
        self.rows = box_rows(self.rel, self.model.release_, self.model.domain_scaler(), X)

    def __call__(self, X, y, add):
        return bounded_loss(self.model.release_, self.rows, X, y, add, self.delta,
                            self.model.dp_epsilon_)


@MEAN_RELEASED
@TAILS_CLIPPED
@pytest.mark.parametrize("declare", ["bounds_X", "data_norm"])
def test_adassp_model_part_bounds_every_plausible_release(declare):
    """A private search charges AdaSSP, for the model, the largest per-row
    loss over the released bounds of non-negligible probability: refit the model on
    bounds drawn from that set (its corners included) and check that its
    exact per-row losses, removed and added, never exceed the charge."""
    X, y, bounds, y_bound = _table(2000)
    decl = {"bounds_X": bounds} if declare == "bounds_X" else {"data_norm": 120.0}
    charge = _SearchCharge(X, y, 5.0, y_bound=y_bound, **decl)
    rel, model_epsilon = charge.rel, charge.model.dp_epsilon_
    assert rel.event_ == pytest.approx(1e-7)
    ranges = rel.plausible(rel.event_)
    charged = charge(X, y, add=False)
    assert np.all(charged <= model_epsilon)
    assert np.ptp(charged) > 0.05  # not the guarantee for everyone
    targets = X[:30] * np.linspace(0.5, 2.0, 30)[:, None]
    charged_add = charge(targets, y[:30], add=True)
    charged_worst = charge(targets, None, add=True)
    ends = rel.origin[:, None] + rel.sign[:, None] * rel.grid
    rng = np.random.RandomState(0)
    for trial in range(6):
        # trial 0 and 1: the corners (lo_min, hi_min) and (lo_max, hi_max)
        pick = []
        for k in range(rel.n_quantiles):
            inside = np.flatnonzero((ends[k] >= ranges[k, 0]) & (ends[k] <= ranges[k, 1]))
            # (a label end extrapolated from its inner quantile: that one at its far side)
            side = (trial + (rel.sign[k] < 0) + rel.inner[k]) % 2 if trial < 2 else rng.randint(2)
            pick.append(ends[k, inside[0 if side == 0 else -1]] if trial < 2
                        else ends[k, rng.choice(inside)])
        pick = np.array(pick)
        data_norm, bounds_X, y_b = _assemble(rel, pick, charge.resolved)
        model = AdaSSPRegressor(epsilon=model_epsilon, delta=1e-6 - rel.event_,
                                y_bound=y_b, data_norm=data_norm, bounds_X=bounds_X,
                                random_state=0).fit(X, y)
        assert not model.mean_only_
        assert np.all(model.pdp_losses_ <= charged + 1e-9)
        assert np.all(model.pdp_epsilon(targets, y[:30]) <= charged_add + 1e-9)
        assert np.all(model.pdp_epsilon(targets) <= charged_worst + 1e-9)


def _assemble(rel, ends, resolved):
    """The bounds a draw of these quantiles' ends releases."""
    return [*released_bounds(rel.assemble(rel.sign * (ends - rel.origin)), resolved).values()]


def _wide_table(n, seed=0):
    """24 loose measurement ranges and an indicator: 48 feature quantiles.
    At the default share the label's four quantiles reach their uncapped
    level from n epsilon of about 7000, and the features join them (each at
    the rest of the budget) from about 15,400: between, the label alone."""
    rng = np.random.RandomState(seed)
    X = np.column_stack([np.minimum(2 * rng.lognormal(0, 0.8, (n, 24)), 59),
                         rng.randint(0, 2, n)])
    y = X @ np.r_[np.linspace(-0.5, 0.5, 24), 2.0] + rng.randn(n)
    bounds = (np.zeros(25), np.r_[np.full(24, 60.0), 1.0])
    return X, y, bounds, (-100.0, 100.0)


@MEAN_RELEASED
def test_label_alone_where_the_ranges_are_too_many():
    """Between the label's rule and the per-range rule only the label's
    range is tightened ("auto" silently, True with a warning), the features
    keep their declared bounds; below both nothing is; the bounds-part
    losses and the guarantee are the same for every random_state."""
    X, y, bounds, y_bound = _wide_table(2000)
    params = dict(bounds_X=bounds, y_bound=y_bound, random_state=0)
    est = AdaSSPRegressor(epsilon=4.0, tighten_bounds="auto", **params).fit(X, y)
    rel = est.bounds_release_
    assert rel.source == ["y"] * 4 and rel.epsilon == pytest.approx(4.0)
    assert not est.mean_only_
    assert all(np.array_equal(a, b) for a, b in zip(est.bounds_X_, bounds))
    assert est.y_bound_[1] - est.y_bound_[0] < 150.0
    assert est.dp_epsilon_ <= 4.0 and est.dp_delta_ == 1e-6
    assert est.dp_epsilon_ == max(est.bounds_epsilon_, est.model_epsilon_)
    rows = est.model_rows_
    assert np.array_equal(est.pdp_losses_[~rows], rel.row_epsilon(X, y)[~rows])
    others = [AdaSSPRegressor(**{**est.get_params(), "random_state": s}).fit(X, y)
              for s in (1, 2, 3)]
    # the same bounds-part losses and guarantee whatever the draw (the draws
    # of the label's ends on a coarse grid at epsilon 4 may coincide)
    for other in others:
        assert np.array_equal(other.pdp_losses_[~rows], est.pdp_losses_[~rows])
        assert other.dp_epsilon_ == est.dp_epsilon_
    # new rows are clipped to the declared feature bounds only
    far = X[:5] * 10.0
    assert np.allclose(est.predict(far), np.clip(far, *bounds) @ est.coef_ + est.intercept_)
    with pytest.warns(BoundsWarning, match="only the label's range is tightened"):
        forced = AdaSSPRegressor(epsilon=4.0, tighten_bounds=True, **params).fit(X, y)
    assert np.array_equal(forced.pdp_losses_, est.pdp_losses_)
    # enough rows for every range once the label has its share: both
    wide = AdaSSPRegressor(epsilon=8.0, tighten_bounds="auto", **params).fit(X, y)
    assert wide.bounds_release_.n_quantiles == 52 and wide.y_bound_ != y_bound
    # too few for the label's rule too: nothing is tightened
    small = AdaSSPRegressor(epsilon=3.0, tighten_bounds="auto", **params).fit(X, y)
    assert not hasattr(small, "bounds_release_") and small.dp_epsilon_ == 3.0
    # every estimator: within the budget, its model part its guarantee
    ops = OPSRegressor(epsilon=4.0, tighten_bounds="auto", **params).fit(X, y)
    assert ops.bounds_release_.source == ["y"] * 4 and ops.dp_epsilon_ <= 4.0
    assert np.all(ops.pdp_losses_[rows] <= ops.model_epsilon_ + 1e-12)


@MEAN_RELEASED
@TAILS_CLIPPED
def test_label_alone_adassp_model_part_bounds_every_plausible_release():
    """With the label alone released, a search's charge for AdaSSP covers
    the model refitted at the corners of the label's plausible range (each
    end extrapolated from its two quantiles: the widest and the narrowest)
    and inside it (features at their declared bounds), removed and added
    rows."""
    X, y, bounds, y_bound = _wide_table(2000)
    with pytest.warns(BoundsWarning, match="only the label's range"):
        charge = _SearchCharge(X, y, 4.0, bounds_X=bounds, y_bound=y_bound)
    rel = charge.rel
    assert rel.source == ["y"] * 4
    ranges = rel.plausible(rel.event_)
    charged = charge(X, y, add=False)
    targets = X[:30] * np.linspace(0.5, 2.0, 30)[:, None]
    charged_add = charge(targets, y[:30], add=True)
    charged_worst = charge(targets, None, add=True)
    ends = rel.origin[:, None] + rel.sign[:, None] * rel.grid
    inside = [np.flatnonzero((ends[k] >= ranges[k, 0]) & (ends[k] <= ranges[k, 1]))
              for k in range(4)]
    rng = np.random.RandomState(0)
    # grid indices of the quantiles (inner low, inner high, low end, high
    # end); at the corners each end and its inner quantile are at opposite
    # sides, which puts the extrapolated end at its nearest or farthest
    picks = [(inside[0][-a], inside[1][-b], inside[2][a - 1], inside[3][b - 1])
             for a in (0, 1) for b in (0, 1)] + [
        tuple(rng.choice(i) for i in inside) for _ in range(3)]
    for pick in picks:
        y_b = _assemble(rel, ends[np.arange(4), pick], charge.resolved)[2]
        model = AdaSSPRegressor(epsilon=charge.model.dp_epsilon_, delta=1e-6 - rel.event_,
                                y_bound=y_b, bounds_X=bounds, random_state=0).fit(X, y)
        assert np.all(model.pdp_losses_ <= charged + 1e-9)
        assert np.all(model.pdp_epsilon(targets, y[:30]) <= charged_add + 1e-9)
        assert np.all(model.pdp_epsilon(targets) <= charged_worst + 1e-9)


@MEAN_RELEASED
@TAILS_CLIPPED
def test_search_and_dask_release_the_label_alone():
    """A private search tightens the label alone once, before the parts, on
    the rule's band; Dask input gives the same counts and losses."""
    da = pytest.importorskip("dask.array")
    X, y, bounds, y_bound = _wide_table(4000)
    est = AdaSSPRegressor(bounds_X=bounds, y_bound=y_bound, tighten_bounds="auto")
    searches = [PrivateGridSearchCV(est, {"fit_intercept": [True, False]}, epsilon=2.0,
                                    random_state=seed).fit(X, y) for seed in (0, 4)]
    search = searches[0]
    assert search.bounds_release_.source == ["y"] * 4
    assert np.array_equal(search.bounds_X_[1], bounds[1])
    assert search.best_estimator_.y_bound_ == search.y_bound_ != y_bound
    assert search.dp_epsilon_ <= 2.0 and search.dp_delta_ <= 1e-6
    assert np.all(search.pdp_losses_ <= search.dp_epsilon_ + 1e-12)
    assert np.array_equal(searches[1].pdp_losses_, search.pdp_losses_)
    params = dict(epsilon=2.0, bounds_X=bounds, y_bound=y_bound, tighten_bounds="auto",
                  random_state=0)
    mem = AdaSSPRegressor(**params).fit(X, y)
    lazy = AdaSSPRegressor(**params).fit(da.from_array(X, chunks=500),
                                         da.from_array(y, chunks=500))
    assert np.array_equal(lazy.bounds_release_.counts_, mem.bounds_release_.counts_)
    assert lazy.y_bound_ == mem.y_bound_
    assert np.allclose(lazy.pdp_losses_.compute(), mem.pdp_losses_)
