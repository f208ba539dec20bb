"""AdaSSP: sufficient statistics perturbation with a privately chosen ridge
(Wang 2018, Algorithm 2; :doc:`/mechanisms/adassp`).

The estimator; its release, calibration and per-row losses are
:class:`~sklearn_pdp.mechanisms.adassp._release.AdaSSPRelease`.
"""

from numbers import Real

from ..utils._sklearn import Interval
from ._base import PrivateRegressorMixin
from ..utils._docstrings import fill_doc
from ..mechanisms.adassp._release import AdaSSPRelease


@fill_doc
class AdaSSPRegressor(PrivateRegressorMixin):
    """Linear regression by noisy sufficient statistics and adaptive ridge.

    AdaSSP (Wang 2018, Algorithm 2) with exact per-instance privacy losses.
    On the data scaled into the privacy domain (rows ``z`` in the unit ball
    plus the constant feature 1, labels in [-1, 1]) it releases, with
    independent Gaussian noise, the Gram matrix ``Z^T Z`` (upper triangle;
    the constant's own entry is the public size ``n``), ``X^T y``, the
    label sum and the smallest eigenvalue of the centred scatter matrix of
    the features. The coefficients solve the ridge system built from these
    noisy statistics, with a ridge ``alpha_`` chosen from them and no
    penalty on the intercept: pure post-processing, so the ridge costs no
    privacy.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy budget: the noise is calibrated so that ``dp_epsilon_ <=
        epsilon`` at ``delta``.
    delta : float, default=1e-6
        The delta of the budget, of ``pdp_losses_`` and of ``dp_epsilon_``.
    budget_split : array-like of shape (4,) or None, default=None
        Non-negative weights (normalised to sum 1) of the Gram matrix, of
        ``X^T y``, of the label sum and of the eigenvalue in the squared
        privacy ratio ``s^2`` of the whole release (see Notes); all must be
        positive but the third, which is ignored without intercept. None:
        ``(0.35, 0.3, 0.25, 0.1)``, the best of the splits measured on the
        utility benchmark.
    {bounds}
    {tighten}
    {fit_intercept}
    {random_state}
    {n_jobs}

    Attributes
    ----------
    {model}
    {mean_only}
    alpha_ : float
        The ridge chosen from the noisy statistics (scaled domain); ``inf``
        where they show no signal above their noise (the label mean alone).
    lambda_min_ : float
        The released (noisy) smallest eigenvalue.
    noise_scale_ : dict
        Standard deviation of the noise of each released block: ``"gram"``,
        ``"xy"``, ``"ysum"`` (with an intercept) and ``"eigen"``.
    pdp_losses_ : ndarray of shape (n_samples,)
        Exact per-instance epsilon, at ``delta``, of removing each training
        row from the whole release.
    dp_epsilon_ : float
        Data-independent epsilon at ``delta`` for any data set of this size
        in the declared domain (the budget, met exactly at the domain's
        worst case).
    dp_delta_ : float
        The delta of ``dp_epsilon_``.
    {fitted_bounds}

    See Also
    --------
    AdaOPSRegressor : One posterior sample with a privately chosen ridge.

    Notes
    -----
    Releases (the constant feature's own Gram entry is the public size, not
    computed from the data; the sample size is treated as public):

    - ``Z^T Z + sigma_G E``, ``E`` symmetric with independent N(0, 1)
      entries on and above the diagonal; a row's change of these entries
      has squared norm ``sum_(j <= k) (z_j z_k)^2`` (less the constant's own
      entry), at most 2 with an intercept and 1 without;
    - ``X^T y + sigma_xy N(0, I)``: change ``|y| ||x||``, at most 1;
    - with an intercept, ``sum y + sigma_y N(0, 1)``: change ``|y|``;
    - ``lambda_min(S) + sigma_lambda N(0, 1)``, S the centred scatter matrix
      (``X^T X`` without intercept). Removing row i changes S by the rank
      one matrix ``n/(n-1) (x_i - x_bar)(x_i - x_bar)^T``, and
      ``lambda_min`` by the root of the rank-one secular equation; at most
      ``4 (n - 1)/n`` (1 without intercept), attained in one dimension.

    The noise is independent, so the release is one Gaussian mechanism with
    ``s_i^2 = sum_b (Delta_b(i) / sigma_b)^2`` and ``pdp_losses_[i]`` is the
    analytic Gaussian epsilon at ``s_i`` (Balle and Wang 2018), identical
    in both directions. All the largest changes are reached together (a row
    ``x = e_1``, ``|y| = 1`` against rows at ``-e_1``; approached in more
    than one dimension), so the domain's worst ratio is
    ``s_max^2 = sum_b (max Delta_b / sigma_b)^2``; the sigmas
    are ``max Delta_b / (sqrt(w_b) s*)`` with ``s*`` the largest ratio whose
    epsilon at ``delta`` is ``epsilon`` and ``w`` the budget split.

    Model: with the noisy Schur complement ``S~ = G~_xx - s~ s~^T / n`` (the
    centred Gram) and cross term ``b~ = (X^T y)~ - s~ (sum y)~ / n``, slopes
    ``(S~ + alpha_ I)^{-1} b~`` and intercept ``((sum y)~ - s~^T beta) / n``:
    the ridge shrinks the slopes only, towards the private label mean.
    ``alpha_ = max(0, t - lambda_min_, t/4 - lambda_min(S~))`` with the
    noise level ``t = 3 sigma_G sqrt(d)`` (Wang's rule, with the last term
    keeping the noisy system positive definite).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_pdp import AdaSSPRegressor
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-1, 1, size=(20000, 3)) / np.sqrt(3)
    >>> y = np.clip(0.3 + X @ [1.0, -0.5, 0.2] + 0.1 * rng.randn(20000), -1, 1)
    >>> reg = AdaSSPRegressor(epsilon=1.0, data_norm=1.0, y_bound=1.0,
    ...                       random_state=0).fit(X, y)
    >>> bool(reg.dp_epsilon_ <= 1.0)
    True
    >>> bool(np.all(reg.pdp_losses_ <= reg.dp_epsilon_))
    True
    >>> bool(reg.score(X, y) > 0.9)
    True
    """

    _parameter_constraints: dict = {
        **PrivateRegressorMixin._parameter_constraints,
        "epsilon": [Interval(Real, 0, None, closed="right")],
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "budget_split": ["array-like", None],
    }

    def __init__(
        self,
        epsilon=1.0,
        *,
        delta=1e-6,
        budget_split=None,
        data_norm=None,
        bounds_X=None,
        y_bound=None,
        schema=None,
        tighten_bounds="auto",
        tighten_share=None,
        fit_intercept=True,
        random_state=None,
        n_jobs=None,
        max_records=None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.budget_split = budget_split
        self.data_norm = data_norm
        self.bounds_X = bounds_X
        self.y_bound = y_bound
        self.schema = schema
        self.tighten_bounds = tighten_bounds
        self.tighten_share = tighten_share
        self.fit_intercept = fit_intercept
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.max_records = max_records

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # scikit-learn's check data (200 rows, 10 features) at epsilon=1 is
        # mostly noise: the model falls back towards the label mean
        tags.regressor_tags.poor_score = True
        return tags

    # its noisy statistics learn slopes at lower n epsilon than the other
    # mechanisms: it falls back to the label mean only below (:doc:`/mechanisms/adassp`)
    _mean_only_rate = 60.0
    # what a privately tightened fit reads its model's box losses from
    _release_type = AdaSSPRelease
    # its noise is sized for a person's max_records rows (:doc:`/people`)
    _person_sensitivity = True

    def _mechanism_guarantee(self, n_samples, n_features, min_samples=None):
        return AdaSSPRelease.budget_guarantee(
            self.epsilon, self.delta, budget_split=self.budget_split,
            intercept=self.fit_intercept)

    def _make_release(self, data, scaler):
        return AdaSSPRelease.from_budget(self.epsilon, self.delta, data, scaler=scaler,
                                         budget_split=self.budget_split,
                                         records=self._person_records())
