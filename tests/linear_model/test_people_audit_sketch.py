"""Monte Carlo audit of random projection's per-person losses: the whole
release (the sketch and, with an intercept, the noisy label sum; the
coefficients are post-processing of the two) drawn on a panel and on it
without one person's records, and its hockey-stick divergence at the
reported loss compared with delta within the sample's standard errors
(:mod:`tests._mc`).

The sketches are drawn by the two fits' releases themselves, the
log-likelihood ratio computed here from the scaled rows' covariances
``Z^T Z + s^2 I``. The default run audits the sketch alone at a delta
that a small sample resolves; the marker ``audit`` both releases at delta
1e-3 on a million draws a side."""

import contextlib

import numpy as np
import pytest

from sklearn_pdp import RandomProjectionRegressor
from sklearn_pdp.exceptions import PrivacyLeakWarning

from .._mc import Z_TOL, assert_exact_loss, hockey_stick_mc
from ..conftest import UNIT_BOUNDS
from .test_people import random_panel

CHUNK = 50_000
SIZES = [pytest.param(0.05, 100_000, id="default"),
         pytest.param(1e-3, 1_000_000, id="audit", marks=pytest.mark.audit)]


def _fit(X, y, groups, delta, fit_intercept):
    est = RandomProjectionRegressor(epsilon=4.0, delta=delta, n_components=20, **UNIT_BOUNDS,
                                    fit_intercept=fit_intercept, tighten_bounds=False,
                                    random_state=0)
    # a delta this large is what a small sample resolves, not a guarantee
    warns = (pytest.warns(PrivacyLeakWarning, match="delta=") if delta > 1e-2
             else contextlib.nullcontext())
    with warns:
        return est.fit(X, y, groups=groups)


def _sampled_losses(delta, fit_intercept, runs, seed):
    """The loss of the person with the largest one among those with
    several records, and samples of the whole release's log dP/dQ under P
    (the panel without them) and Q (with them): (eps, label share,
    loss_p, loss_q)."""
    X, y, groups = random_panel(n_people=30, seed=seed)
    full = _fit(X, y, groups, delta, fit_intercept)
    assert full.person_pdp_kind_ == "exact" and not full.mean_only_
    sizes = np.bincount(np.searchsorted(full.person_ids_, groups))
    k = np.flatnonzero(sizes > 2)[np.argmax(full.person_losses_[sizes > 2])]
    person = groups == full.person_ids_[k]
    without = _fit(X[~person], y[~person], groups[~person], delta, fit_intercept)
    s = full.noise_scale_
    assert without.noise_scale_ == s and without.n_components_ == full.n_components_

    Xs, ys = full.domain_scaler().scale(X, y)
    Z = np.column_stack([Xs, ys])
    cov_q = Z.T @ Z + s**2 * np.eye(Z.shape[1])
    cov_p = Z[~person].T @ Z[~person] + s**2 * np.eye(Z.shape[1])
    # log N(R; 0, cov_p) - log N(R; 0, cov_q) summed over the sketch's rows
    shift = 0.5 * full.n_components_ * (np.linalg.slogdet(cov_q)[1] - np.linalg.slogdet(cov_p)[1])
    M = np.linalg.inv(cov_p) - np.linalg.inv(cov_q)
    b = full.label_noise_scale_
    assert b == without.label_noise_scale_ and (b is None) == (not fit_intercept)
    sum_q, sum_p = ys.sum(), ys[~person].sum()
    label_share = 0.0 if b is None else abs(sum_q - sum_p) / b
    rng = np.random.default_rng(seed)
    chunk = min(CHUNK, runs)

    def log_ratio(release, label_sum):
        R = release.draw(rng, size=chunk)
        loss = shift - 0.5 * np.einsum("cij,jk,cik->c", R, M, R)
        if b is None:
            return loss
        noisy = label_sum + rng.laplace(scale=b, size=chunk)
        return loss + (np.abs(noisy - sum_q) - np.abs(noisy - sum_p)) / b

    chunks = [(log_ratio(without.release_, sum_p), log_ratio(full.release_, sum_q))
              for _ in range(runs // chunk)]
    loss_p, loss_q = (np.concatenate(c) for c in zip(*chunks))
    return float(full.person_losses_[k]), label_share, loss_p, loss_q


# the post-processing may release zero slopes: the sketch's losses are the same
@pytest.mark.filterwarnings("ignore:RandomProjectionRegressor released zero slopes")
@pytest.mark.parametrize("delta, runs", SIZES)
def test_sketch_person_loss_audit(delta, runs):
    """Without an intercept the release is the sketch and the certified
    loss exact: at it the larger direction's divergence is delta (the
    other at most), and a tenth more or less loss is seen."""
    eps, _, loss_p, loss_q = _sampled_losses(delta, False, runs, seed=31)
    assert_exact_loss(loss_p, loss_q, eps, delta, symmetric=False)


@pytest.mark.audit
def test_sketch_and_label_sum_person_loss_audit():
    """With an intercept the loss is the sketch's plus the label sum's
    (basic composition): valid for the whole release (both divergences at
    most delta) and within a tenth of its exact loss (at 0.9 times it the
    divergence is above delta)."""
    delta = 1e-3
    eps, label_share, loss_p, loss_q = _sampled_losses(delta, True, 1_000_000, seed=32)
    assert label_share > 0
    for estimate, se in hockey_stick_mc(loss_p, loss_q, eps):
        assert estimate <= delta + Z_TOL * se, (eps, estimate, se)
    estimate, se = max(hockey_stick_mc(loss_p, loss_q, 0.9 * eps))
    assert estimate - delta > Z_TOL * se, (0.9 * eps, estimate, se)
