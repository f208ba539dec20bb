"""Statistical privacy audits (Jagielski et al. 2020 style), marker ``audit``.

Run the released mechanism many times on two neighbouring data sets, pick the
rejection region of a threshold test on one half of the runs, and on the other
half compute a Clopper-Pearson lower confidence bound on the epsilon that the
test demonstrates. That lower bound must not exceed the reported per-instance
epsilon. Each bound holds with probability 1 - ALPHA.
"""

import numpy as np
import pytest
from scipy import stats

from sklearn_pdp import ObjPertRegressor, OPSRegressor

ALPHA = 1e-6  # false-alarm rate of each audit


def _clopper_pearson(k, n, alpha):
    """Two-sided (1 - alpha) interval of a binomial proportion."""
    lo = stats.beta.ppf(alpha / 2, k, n - k + 1) if k > 0 else 0.0
    hi = stats.beta.ppf(1 - alpha / 2, k + 1, n - k) if k < n else 1.0
    return lo, hi


def epsilon_lower_bound(stat_p, stat_q, delta, alpha=ALPHA):
    """Clopper-Pearson lower bound on eps from one-sided threshold tests.

    ``stat_p``/``stat_q``: a scalar statistic of the output on the two data
    sets. The threshold is chosen on the first halves, the bound computed on
    the second halves, in both directions (P vs Q and Q vs P).
    """
    best = 0.0
    for a, b in ((stat_p, stat_q), (stat_q, stat_p)):
        sel_a, sel_b = a[: len(a) // 2], b[: len(b) // 2]
        ev_a, ev_b = a[len(a) // 2 :], b[len(b) // 2 :]
        for sign in (1, -1):
            grid = np.quantile(sign * sel_a, np.linspace(0.5, 0.999, 60))
            pa = np.array([(sign * sel_a > c).mean() for c in grid])
            pb = np.array([(sign * sel_b > c).mean() for c in grid])
            with np.errstate(divide="ignore"):
                score = np.log(np.maximum(pa - delta, 1e-300)) - np.log(np.maximum(pb, 1.0 / len(sel_b)))
            c = grid[np.argmax(score)]
            ka, kb = int((sign * ev_a > c).sum()), int((sign * ev_b > c).sum())
            # Bonferroni over the 2 x 2 tests and the two proportions
            pa_lo, _ = _clopper_pearson(ka, len(ev_a), alpha / 8)
            _, pb_hi = _clopper_pearson(kb, len(ev_b), alpha / 8)
            if pa_lo > delta:
                best = max(best, np.log((pa_lo - delta) / pb_hi))
    return best


@pytest.mark.audit
def test_audit_ops():
    rng = np.random.default_rng(0)
    # delta = 1e-3 keeps the events the test needs within reach of the sample
    n, runs, delta = 8, 2_000_000, 1e-3
    X = rng.normal(size=(n, 1)) * 0.2
    y = np.clip(X[:, 0] + 0.05 * rng.normal(size=n), -1, 1)
    X[0], y[0] = 0.4, -1.0  # an outlier with large leverage and residual
    params = dict(
        gamma=1.0, alpha=0.5, delta=delta, data_norm=1.0, y_bound=1.0, fit_intercept=False
    )
    reg = OPSRegressor(**params).fit(X, y)
    target = int(np.argmax(reg.pdp_losses_))
    reported = reg.pdp_losses_[target]
    neighbour = np.arange(n) != target

    def releases(Xa, ya):
        # the fit is deterministic up to the noise draw: fit once, then draw
        # the release many times through the estimator's own sampler
        est = OPSRegressor(**params).fit(Xa, ya)
        return est._release(rng, size=runs)[:, 0]

    stat_full = releases(X, y)
    stat_without = releases(X[neighbour], y[neighbour])
    lower = epsilon_lower_bound(stat_without, stat_full, delta)
    assert lower <= reported
    # the audit is not vacuous: it certifies a sizeable share of the loss
    assert lower > 0.6 * reported, (lower, reported)


@pytest.mark.audit
def test_audit_objective_perturbation():
    rng = np.random.default_rng(1)
    n, runs, delta = 8, 2_000_000, 1e-3
    X = rng.normal(size=(n, 2)) * 0.2
    y = np.clip(X @ [1.0, -0.5] + 0.05 * rng.normal(size=n), -1, 1)
    X[0], y[0] = [0.5, 0.3], -1.0  # an outlier with large leverage and residual
    params = dict(
        sigma=1.0, alpha=4.0, delta=delta, data_norm=1.0, y_bound=1.0, fit_intercept=False
    )
    reg = ObjPertRegressor(**params).fit(X, y)
    target = int(np.argmax(reg.pdp_losses_))
    reported = reg.pdp_losses_[target]
    neighbour = np.arange(n) != target
    full = ObjPertRegressor(**params).fit(X, y)
    without = ObjPertRegressor(**params).fit(X[neighbour], y[neighbour])

    def release_law(est):
        H_inv = np.linalg.inv(est._ridge.chol @ est._ridge.chol.T)
        return stats.multivariate_normal(est._ridge.coef, params["sigma"] ** 2 * H_inv @ H_inv)

    # the most powerful statistic: the log-likelihood ratio of the two releases
    law_p, law_q = release_law(without), release_law(full)

    def statistic(draws):
        return law_p.logpdf(draws) - law_q.logpdf(draws)

    stat_without = statistic(without._release(rng, size=runs))
    stat_full = statistic(full._release(rng, size=runs))
    lower = epsilon_lower_bound(stat_without, stat_full, delta)
    assert lower <= reported
    assert lower > 0.6 * reported, (lower, reported)
