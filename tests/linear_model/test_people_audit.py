"""Monte Carlo audit of the exact per-person losses (marker ``audit``): one
release per person-aware mechanism, the whole release sampled on the data
with and without all of a person's records, and the hockey-stick divergence
at the reported loss compared with the estimator's delta within the
sample's standard errors (:mod:`tests._mc`)."""

import numpy as np
import pytest

from sklearn_pdp import AdaSSPRegressor
from sklearn_pdp.exceptions import FallbackWarning

from .._mc import assert_exact_loss
from ..conftest import UNIT_BOUNDS
from .test_people import random_panel, released_statistics

# a delta that the sample resolves (its standard error about 3% of it)
DELTA = 1e-3
RUNS = 1_000_000
CHUNK = 100_000


def _check(exact_epsilon, sample_losses):
    """At the reported loss the divergence is the delta, in both directions:
    the sampled one agrees within Z_TOL standard errors (a lower reported
    loss would show a larger divergence, a higher one a smaller)."""
    assert_exact_loss(*sample_losses(), exact_epsilon, DELTA)


@pytest.mark.audit
def test_audit_adassp_person_loss():
    """AdaSSP's noisy statistics (Gram, X^T y, label sum, eigenvalue) on
    the panel and without one person's records, at the same public size
    and noise: the person with the largest exact joint loss among those
    with several records."""
    X, y, groups = random_panel(n_people=150, seed=21)
    est = AdaSSPRegressor(epsilon=1.0, delta=DELTA, **UNIT_BOUNDS, tighten_bounds=False,
                          random_state=0).fit(X, y, groups=groups)
    assert est.person_pdp_kind_ == "exact" and not est.mean_only_
    sizes = np.bincount(np.searchsorted(est.person_ids_, groups))
    k = np.flatnonzero(sizes > 2)[np.argmax(est.person_losses_[sizes > 2])]
    person = groups == est.person_ids_[k]
    Z, ys = est.domain_scaler().scale(X, y)
    full = released_statistics(Z, ys, X.shape[0])
    without = released_statistics(Z[~person], ys[~person], X.shape[0])
    sigma = {b: s for b, s in est.noise_scale_.items() if s > 0}
    rng = np.random.default_rng(4)

    def losses():
        def loss(noisy):  # log dP/dQ, P: without the person, Q: with them
            return sum((np.sum((noisy[b] - full[b]) ** 2, axis=1)
                        - np.sum((noisy[b] - without[b]) ** 2, axis=1)) / (2 * sigma[b] ** 2)
                       for b in sigma)

        def draws(stats):
            return {b: np.atleast_1d(stats[b]) + sigma[b] * rng.standard_normal(
                (CHUNK, np.size(stats[b]))) for b in sigma}

        chunks = [(loss(draws(without)), loss(draws(full))) for _ in range(RUNS // CHUNK)]
        return tuple(np.concatenate(c) for c in zip(*chunks))

    _check(est.person_losses_[k], losses)


@pytest.mark.audit
def test_audit_label_mean_person_loss():
    """The label mean's Laplace noise on the label sum, with and without the
    person whose labels' sum is largest in magnitude."""
    X, y, groups = random_panel(n_people=40, seed=22)
    with pytest.warns(FallbackWarning, match="label mean alone"):
        est = AdaSSPRegressor(delta=DELTA, **UNIT_BOUNDS, tighten_bounds=False,
                              random_state=0).fit(X, y, groups=groups)
    b = est.release_.noise_scale
    ys = est.domain_scaler().scale_labels(y)
    codes = np.searchsorted(est.person_ids_, groups)
    sums = np.bincount(codes, weights=ys)
    k = int(np.argmax(np.abs(sums) * (np.bincount(codes) > 1)))
    full, without = ys.sum(), ys.sum() - sums[k]
    rng = np.random.default_rng(5)

    def losses():
        def loss(noisy):
            return (np.abs(noisy - full) - np.abs(noisy - without)) / b

        return (loss(without + rng.laplace(scale=b, size=RUNS)),
                loss(full + rng.laplace(scale=b, size=RUNS)))

    _check(est.person_losses_[k], losses)
