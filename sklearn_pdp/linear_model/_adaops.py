"""AdaOPS: One Posterior Sample with a privately chosen ridge and a private
residual bound (Wang 2017, Algorithm 1, corrected; Wang 2018's local
Lipschitz bound; :doc:`/mechanisms/adaops`).

The estimator; its release, with the mixture losses and the law of a
published report, is :class:`~sklearn_pdp.mechanisms.adaops._release.AdaOPSRelease`,
its calibration ``sklearn_pdp.accounting._adaops``.
"""

from numbers import Real

from ..mechanisms.adaops._release import AdaOPSRelease
from ._base import PrivateRegressorMixin
from ..utils._docstrings import fill_doc
from ..utils._sklearn import Interval


@fill_doc
class AdaOPSRegressor(PrivateRegressorMixin):
    """OPS with privately chosen regularisation: (epsilon, delta)-DP for a budget.

    The corrected AdaOPS algorithm (Wang 2017, Algorithm 1), with a private
    residual bound as in Wang (2018); see Notes. Three releases share the
    budget. A noisy lower bound on the data's conditioning, the smallest
    eigenvalue of the centred scatter matrix divided by
    ``(1 + ||x_bar||)^2``, falls into one cell of a public grid; the cell fixes
    an eigenvalue floor ``floor_`` and a ridge ``alpha_``, which bound the
    leverage of every possible target. A noisy upper bound on the fit's
    largest residual over the domain, ``1 + |intercept| + ||slopes||``, falls
    into one cell of a second public grid (``residual_bound_``). ``gamma_``
    is the largest posterior scaling for which One Posterior Sample at that
    leverage and residual stays within its share of the budget, and the
    released coefficients are one draw from ``N(theta_hat, (gamma_ H)^{-1})``,
    ``H = X^T X + alpha_ P`` with an unpenalised intercept. With an
    intercept (and a residual bound) the means of the rows and of the label
    are released too, with Gaussian noise, and the intercept is combined
    with the one of the released slopes at these means. Every training
    row's exact per-instance loss of the whole release is in ``pdp_losses_``.

    Parameters
    ----------
    epsilon : float, default=1.0
        Total privacy budget of the whole mechanism.
    delta : float, default=1e-6
        Total delta; also the delta at which ``pdp_losses_`` are reported.
    kappa : float, default=None
        Largest acceptable condition number: a fixed floor ``n / (d kappa)``
        (``d`` features) on the conditioning; below it the ridge lifts it
        there. Must satisfy the paper's constraint ``kappa <= n epsilon /
        (4 d (1 + log(4 / delta)))``. If None, the floor adapts to the
        released cell (see Notes).
    budget_split : array-like of shape (3,), default=None
        Weights, normalised to sum 1, of the epsilon budget spent on the
        conditioning, on the residual bound and on the posterior sample. The
        first and last must be positive; 0 for the bound releases none (the
        residual is then bounded from the floor alone). None means
        ``(0.2, 0.2, 0.6)``.
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
        The ridge strength of the released cell (scaled data).
    floor_ : float
        The floor on the conditioning of the released cell (scaled data).
    residual_bound_ : float
        The bound on any target's residual of the released pair of cells
        (labels scaled to [-1, 1]).
    gamma_ : float
        The posterior scaling of the released pair of cells.
    kappa_ : float
        ``n / (d floor_)``.
    pdp_losses_ : ndarray of shape (n_samples,)
        Exact per-instance epsilon, at ``delta``, of removing each training
        row from the whole release (both cells and the coefficients; see
        Notes).
    dp_epsilon_ : float
        Data-independent epsilon of the whole mechanism (the budget).
    dp_delta_ : float
        The delta of ``dp_epsilon_`` (= ``delta``).
    noise_scale_ : float
        ``1 / sqrt(gamma_)``: the draw is ``theta_hat + noise_scale_ * N(0, H^{-1})``.
    released_means_ : ndarray of shape (n_features + 1,)
        The released means of the scaled rows and, last, of the scaled label
        (with an intercept and a residual bound only).
    means_noise_ : ndarray of shape (n_features + 1,)
        The standard deviation of their Gaussian noise, per coordinate.
    intercept_weight_ : float
        The weight of the intercept at the released means in the fitted
        intercept (the draw's has the rest; see Notes).
    {fitted_bounds}

    See Also
    --------
    OPSRegressor : One Posterior Sample with a ridge fixed in advance.
    AdaSSPRegressor : Noisy sufficient statistics with a private ridge.

    Notes
    -----
    On the data scaled into the unit ball (labels in [-1, 1]), with budget
    shares eps_1, eps_2, eps_3 and delta split equally between the two
    releases, their two margin events and the sample (between three without
    bound), and z the normal quantile at 1 - delta/5:

    1. ``G~ = G + sigma_1 N(0, 1)``, ``G = lambda_min(S) / (1 + ||x_bar||)^2``,
       S the centred scatter matrix (``G = lambda_min(X^T X)`` without
       intercept), sigma_1 from the analytic Gaussian mechanism for G's
       sensitivity ``s_1 = 1 + 1/(n-1) + (2 + 1/(n-1)) / d`` (1 without
       intercept);
    2. ``e = G~ - sigma_1 z`` falls into a cell of a public grid that fixes
       the floor h and the ridge alpha, with ``G + alpha / 4 >= h`` whenever
       ``G >= e`` (``alpha`` without intercept): then every target's leverage
       against either data set of a pair of neighbours is at most
       ``mu = 1/(n-1) + 1/(h - s_1)``;
    3. ``u = log R + sigma_2 (N(0, 1) + z)``, ``R = 1 + |b| + ||beta||`` of the
       cell's ridge fit (the largest residual of any target), which one row
       moves by at most ``c = -log(1 - mu)`` once the floor holds, sigma_2
       from the analytic Gaussian mechanism for c; u falls into a cell of
       width ``max(6 sigma_2, 0.05)`` whose upper end, widened by
       ``1 / (1 - mu)``, bounds every target's residual (capped by the bound
       the floor alone gives, ``2 + sqrt((n - 1) / (h - s_1))``);
    4. ``gamma`` is the largest scaling whose exact OPS loss at delta/5 and
       the corner (mu, residual bound) is eps_3; one posterior sample with
       an unpenalised intercept;
    5. with an intercept and a residual bound, the means of the rows and of
       the label plus Gaussian noise, whose ratio joins the two cell
       releases' in squares: the three are one Gaussian mechanism at
       (eps_1 + eps_2, 2 delta / 5), the cells' noise unchanged, 0.9 of the
       means' squared ratio on the label. Post-processing: given the
       released slopes, the draw's intercept (variance ``1 / (gamma n)``)
       and ``y_bar~ - x_bar~^T slopes`` are both unbiased for
       ``y_bar - x_bar^T slopes``; the fitted intercept combines them by
       their precisions (``intercept_weight_``).

    The grids are functions of public quantities only. Cells without ridge
    start at ten times the bound's noise scale per unit sensitivity (where
    the bound is within a factor 3 of R) and grow by 6 noise deviations or
    half their floor; below them the ridge lifts the floor to the smallest
    one at which the posterior noise variance of the training predictions
    is on average at most 1e-3 with the residual bound the release gives
    for R = 2. The ridge shrinks the slopes only: with little ``n epsilon``
    or an ill-conditioned design the model falls back towards the label
    mean. The guarantee is ``(eps_1 + eps_2 + eps_3, delta)`` by
    composition.

    Only the cells are released: ``pdp_losses_[i]`` is the exact loss of the
    triple (cell, bound cell, coefficients), a finite mixture over pairs of
    cells of OPS losses shifted by the cells' log probability ratios (cells
    beyond 8.8 noise deviations counted as revealing everything), composed
    with the released means' Gaussian at the row's exact change of the
    means (basic composition, a tenth of delta to the Gaussian), at most
    the budget. It is the same for every ``random_state``. The sample size
    is treated as public.

    The fitted estimator keeps non-private statistics for
    :meth:`pdp_epsilon`; publish :meth:`public_model`, not the estimator.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_pdp import AdaOPSRegressor
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-1, 1, size=(20000, 3)) / np.sqrt(3)
    >>> y = np.clip(0.3 + X @ [1.0, -0.5, 0.2] + 0.1 * rng.randn(20000), -1, 1)
    >>> reg = AdaOPSRegressor(epsilon=1.0, data_norm=1.0, y_bound=1.0,
    ...                       random_state=0).fit(X, y)
    >>> bool(reg.dp_epsilon_ <= 1.0)
    True
    >>> bool(np.all(reg.pdp_losses_ <= reg.dp_epsilon_))
    True
    >>> bool(reg.score(X, y) > 0.9)  # least squares: 0.935
    True
    """

    _parameter_constraints: dict = {
        **PrivateRegressorMixin._parameter_constraints,
        "epsilon": [Interval(Real, 0, None, closed="right")],
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "kappa": [Interval(Real, 0, None, closed="neither"), None],
        "budget_split": ["array-like", None],
    }

    def __init__(
        self,
        epsilon=1.0,
        *,
        delta=1e-6,
        kappa=None,
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
        self.kappa = kappa
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

    def _make_release(self, data, scaler):
        return AdaOPSRelease.from_budget(
            self.epsilon, self.delta, data, scaler=scaler, kappa=self.kappa,
            budget_split=self.budget_split)

    def _mechanism_guarantee(self, n_samples, n_features, min_samples=None):
        return AdaOPSRelease.dp_guarantee(
            self.epsilon, self.delta, n_samples, n_features, min_samples,
            intercept=self.fit_intercept, kappa=self.kappa, budget_split=self.budget_split)
