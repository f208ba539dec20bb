"""Privately publishable per-instance privacy (Redberg and Wang 2021; :doc:`/publish`).

A report of per-instance losses is a function of the private data. What is
published instead: a noisy Gram matrix ``G~ = Z^T Z + sigma E`` (analytic
Gaussian mechanism, E symmetric), next to the released coefficients and the
mechanism's public parameters (its :class:`~sklearn_pdp.mechanisms._release.Release`).
From these alone anyone bounds a person's loss, with probability at least
1 - beta over the noise:

- the Gram noise has spectral norm at most ``sigma t`` except with
  probability beta/2 (:func:`gram_noise_bound`), so
  ``H = Z^T Z + alpha P >= G~ + alpha P - sigma t I`` bounds the leverage
  x^T H^{-1} x and ||H^{-1} x|| from above;
- x^T (coef - theta_hat) has a known law given those statistics (the
  mechanism's ``residual_margin``), so |y - x^T theta_hat| <= |y - x^T coef|
  plus a margin exceeded with probability beta/2;
- the exact loss grows with each statistic (or the law maximises it over
  the box), so the loss at the upper values bounds the true one.

A law whose statistics can be bounded without it (random projection: from
the released sketch; a search without refit: its loss is a public function
of the label) sets ``needs_gram = False``: no Gram matrix is published for
it.

Private quantiles of these bounds over the training rows are released by
the exponential mechanism: each bound is a fixed public function of the
published object and of its own row, so removing a row removes one value
(rank sensitivity 1).
"""

import numpy as np
from scipy import linalg
from sklearn.isotonic import isotonic_regression
from sklearn.utils import check_array

from ..utils._ridge_system import penalty
from ..accounting import gram_change2, gram_max_change, gram_noise
from ..accounting._exponential import quantile_log_proba, select

# Share of publish_epsilon spent on the noisy Gram matrix; the rest is split
# equally between the summary's releases (_SUMMARY_PARTS).
GRAM_SHARE = 0.5
_QUANTILES = {"median": 0.5, "q90": 0.9, "q99": 0.99}
# mean, three quantiles, the fractions below the thresholds
_SUMMARY_PARTS = 5
# Relative resolution of the private quantiles' grid (values are rounded up to it)
_GRID_STEP = 1e-3
# Weights lam of the noisy Gram's bound in the mixtures lam A + (1 - lam) B
# of upper_statistics (1: the Gram's bound alone).
_MIX_GRID = np.linspace(0.0, 1.0, 11)


def gram_noise_bound(n_coef, beta):
    """t with P(||E||_2 > t) <= beta for the noise of :func:`gram_noise`.

    E is symmetric with independent N(0, 1) entries on and above the
    diagonal (or 0 on some diagonal entries). By Sudakov-Fernique,
    E lambda_max(E) <= 2 E||g|| <= 2 sqrt(p): the increments of
    v -> v^T E v over unit vectors have variance at most
    4 (1 - (u^T v)^2) <= E(2 g^T u - 2 g^T v)^2. lambda_max is
    sqrt(2)-Lipschitz in the independent entries (||E||_F^2 <= 2 ||g||^2),
    so P(lambda_max > 2 sqrt(p) + s) <= exp(-s^2 / 4) (Gaussian
    concentration), and the same for -E: t = 2 sqrt(p) + 2 sqrt(log(2 / beta)).
    """
    return 2.0 * np.sqrt(n_coef) + 2.0 * np.sqrt(np.log(2.0 / beta))


class PublishedReport:
    """A per-instance privacy report that is itself differentially private.

    Built by :class:`~sklearn_pdp.PDPReport` with ``publish_epsilon``. It
    holds a noisy Gram matrix, the released coefficients, public parameters
    and a private summary: d x d matrices and scalars, no per-row data, so
    it can be pickled and published. For a data-independent law (a fit
    with privately tightened bounds:
    :class:`~sklearn_pdp.mechanisms._guarantee_law.GuaranteeLaw`) nothing is released
    beyond the law: every bound is ``cap_epsilon``, never failing
    (``beta`` 0), and the summary is exact (``summary_epsilon`` 0).

    Attributes
    ----------
    law : Release
        The model's public description (:meth:`release_law` of the
        estimator).
    noisy_gram : ndarray of shape (p, p) or None
        ``Z^T Z + noise_scale * E`` of the scaled training rows (constant
        feature included, its own entry the public size); None for a law
        that needs none (``law.needs_gram`` false).
    noise_scale : float
        Standard deviation of the Gram noise (0 without one).
    beta : float
        Failure probability of :meth:`epsilon`.
    delta : float
        The delta of every epsilon here.
    summary_epsilon : float
        The pure-DP budget of ``summary``, part of every row's loss.
    dp_epsilon, dp_delta : float
        Guarantee of the model and the publication together.
    cap_epsilon : float
        The cap of :meth:`epsilon`: the largest total loss of a person
        removed from the training rows or added to them (``dp_epsilon``
        where the law bounds only removals: :doc:`/publish`).
    summary : dict
        Private estimates over the training rows of :meth:`epsilon`:
        ``mean``, ``median``, ``q90``, ``q99`` and ``below`` (fractions at or
        below each threshold), with ``n_samples``, ``delta``, ``dp_epsilon``,
        ``dp_delta`` and ``dp_over_median``.
    """

    def __init__(self, law, noisy_gram, noise_scale, *, beta, delta, summary_epsilon,
                 dp_epsilon, dp_delta, n_features_in, feature_names_in=None,
                 cap_epsilon=None):
        self.law = law
        self.noisy_gram = noisy_gram
        self.noise_scale = float(noise_scale)
        self.beta = float(beta)
        self.delta = float(delta)
        self.summary_epsilon = float(summary_epsilon)
        self.dp_epsilon = float(dp_epsilon)
        self.cap_epsilon = max(self.dp_epsilon, float(
            dp_epsilon if cap_epsilon is None else cap_epsilon))
        self.dp_delta = float(dp_delta)
        self.n_features_in = int(n_features_in)
        self.feature_names_in = feature_names_in
        self.summary = None

    def gaussian_ratio(self, Xs):
        """The Gram release's ratio (l2 change over noise) of each scaled row;
        None without a Gram release."""
        if self.noisy_gram is None:
            return None
        return np.sqrt(gram_change2(Xs, self.law.intercept)) / self.noise_scale

    def loss_at(self, stats, Xs):
        """Total loss (model, publication, summary) of scaled rows ``Xs`` with
        in-sample statistics ``stats`` (keys of :meth:`~sklearn_pdp.mechanisms._release.Release.statistics`): exact at the
        exact statistics (which only the data holder has), an upper bound at
        upper ones."""
        eps = self.law.epsilon(self.delta, stats, self.gaussian_ratio(Xs))
        return np.minimum(eps + self.summary_epsilon, self.cap_epsilon)

    def epsilon(self, X, y=None):
        """Upper bound on the per-instance loss of each person (x, y).

        Valid with probability at least ``1 - beta`` over the noise of the
        model and of the publication, for each person: for a training row,
        on its total loss (model, publication and summary) of being in the
        data; for anyone else, on the loss they would have had if added.
        Computed from this object alone.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Feature vectors (clipped into the declared domain, as the model
            does).
        y : array-like of shape (n_samples,), default=None
            Labels; None takes the worst label in the declared range.

        Returns
        -------
        epsilon : ndarray of shape (n_samples,)
            At ``delta``; at most ``cap_epsilon``.
        """
        X = check_array(X, dtype=np.float64)
        if X.shape[1] != self.n_features_in:
            raise ValueError(
                f"X has {X.shape[1]} features, but the published report is for "
                f"{self.n_features_in} features."
            )
        if y is not None:
            y = check_array(y, dtype=np.float64, ensure_2d=False)
            if y.shape != (X.shape[0],):
                raise ValueError(f"y must have shape ({X.shape[0]},), got {y.shape}.")
        scaler = self.law.scaler
        Xs = scaler.scale(X)
        ys = None if y is None else scaler.scale_labels(y)
        return self.scaled_epsilon(Xs, ys)

    def scaled_epsilon(self, Xs, ys=None):
        """:meth:`epsilon` of rows and labels already scaled into the domain."""
        return self.loss_at(self.law.published_statistics(self, Xs, ys), Xs)

    def noise_bound(self):
        """t: the Gram noise has spectral norm at most ``noise_scale * t``
        except with probability beta/2 (:func:`gram_noise_bound`)."""
        return gram_noise_bound(self.noisy_gram.shape[0], self.beta / 2.0)

    def ridge_statistics(self, Xs, ys=None):
        """Upper values of the in-sample leverage, ``||H^{-1} x||^2`` and
        |residual| of scaled rows (``ys`` None: the worst label), valid with
        probability at least 1 - beta: the leverages from the noisy Gram, the
        residual from the released coefficients plus the law's margin."""
        stats = self.upper_statistics(Xs)
        stats["residual"] = (self.observed_residual(Xs, ys)
                             + self.law.residual_margin(self.beta / 2.0, stats))
        return stats

    def observed_residual(self, Xs, ys=None):
        """|y - x^T coef| against the released coefficients; with ``ys`` None
        the worst label in [-1, 1], ``1 + |x^T coef|``."""
        fitted = Xs @ self.law.coef
        return 1.0 + np.abs(fitted) if ys is None else np.abs(ys - fitted)

    def feature_mean(self):
        """The feature mean read from the noisy Gram's constant column (with
        an intercept), and a bound on its error, ``noise_scale t / n`` in
        norm on the event of :meth:`noise_bound`."""
        n, d = self.law.n_samples, self.noisy_gram.shape[0] - 1
        return (self.noisy_gram[:d, d] / n,
                self.noise_scale * self.noise_bound() / n)

    def scatter_interval(self):
        """An interval holding lambda_min of the centred scatter matrix S (of
        X^T X without intercept) on the event of :meth:`noise_bound` (Weyl).
        With an intercept ``S~ = G~_xx - n c c^T`` (c the noisy mean) differs
        from S by ``sigma E_xx - (s~ s~^T - s s^T) / n``, s~ = s + sigma e the
        noisy feature sums: in norm at most ``sigma t (1 + 2 ||c|| + sigma t / n)``."""
        shift = self.noise_scale * self.noise_bound()
        if self.law.intercept:
            centre, _ = self.feature_mean()
            d, n = centre.size, self.law.n_samples
            scatter = self.noisy_gram[:d, :d] - n * np.outer(centre, centre)
            shift *= 1.0 + 2.0 * np.linalg.norm(centre) + shift / n
        else:
            scatter = self.noisy_gram
        lam = linalg.eigvalsh(scatter)[0]
        return max(lam - shift, 0.0), lam + shift

    def eigen_change_bound(self, Xs):
        """Upper bound on each scaled row's change of lambda_min(S), removed
        from the n rows or added to them, on the event of :meth:`noise_bound`:
        a rank-one update moves it by at most ``n / (n - 1) ||x - x_bar||^2``
        (``n / (n + 1)`` adding; ``||x||^2`` without intercept), with
        ``||x - x_bar|| <= ||x - c|| + sigma t / n`` (:meth:`feature_mean`);
        capped by the domain's ``4 n / (n + 1)`` (1 without intercept)."""
        if not self.law.intercept:
            return np.minimum(np.einsum("ij,ij->i", Xs, Xs), 1.0)
        centre, error = self.feature_mean()
        n = self.law.n_samples
        gap = np.linalg.norm(Xs[:, : centre.size] - centre, axis=1) + error
        return np.minimum(n / max(n - 1, 1) * gap**2, 4.0 * n / (n + 1))

    def upper_statistics(self, Xs, alpha=None, floor=None):
        """Upper bounds on the in-sample leverage and ||H^{-1} x||^2 of each row.

        H = Z^T Z + alpha P with the law's ridge, or ``alpha`` (a mechanism
        whose release may use another, AdaOPS). On the event
        ||noise|| <= s = noise_scale * t (probability >= 1 - beta/2),
        H >= A = G~ + alpha P - s I, so x^T H^{-1} x <= x^T A^{-1} x,
        and ||H^{-1} x||^2 <= x^T H^{-1} x / lambda_min(H) <= mu_up / lambda_min(A).
        Also ||H^{-1} x|| <= ||H~^{-1} x|| / (1 - s ||H~^{-1}||) with H~ = G~ + alpha P
        (H^{-1} x = H~^{-1} x + H~^{-1} (H~ - H) H^{-1} x); the smaller bound is used.

        ``floor``, a lower bound on lambda_min of the centred scatter matrix
        (of X^T X without intercept) certified by the caller, gives a second
        lower bound B <= H (:meth:`floor_bound`), and H >= lam A + (1 - lam) B
        for every lam in [0, 1]: the bounds are the smallest over a public
        grid of lam (where the Gram's noise swamps a weak direction, B still
        bounds it).
        The in-sample leverage of a row is below 1: larger bounds mean "unbounded".
        Also ``lowest``, the lower bound on lambda_min(H) (0 when no bound is
        positive).
        """
        law = self.law
        alpha = law.alpha if alpha is None else alpha
        p = self.noisy_gram.shape[0]
        shift = self.noise_scale * self.noise_bound()
        H_tilde = self.noisy_gram + alpha * penalty(p, law.intercept)
        eig_tilde = linalg.eigvalsh(H_tilde)[0]
        lower = H_tilde - shift * np.eye(p)
        B = None if floor is None else self.floor_bound(floor + alpha)
        mixes = [lower] if B is None else [lam * lower + (1.0 - lam) * B for lam in _MIX_GRID]
        norm2 = np.einsum("ij,ij->i", Xs, Xs)
        leverage = inverse_norm2 = np.full(Xs.shape[0], np.inf)
        lowest = 0.0
        for M in mixes:
            eig = linalg.eigvalsh(M)[0]
            if not eig > 0:
                continue
            chol = linalg.cholesky(M, lower=True)
            W = linalg.solve_triangular(chol, Xs.T, lower=True)
            mu = np.einsum("ij,ij->j", W, W)
            leverage = np.minimum(leverage, mu)
            inverse_norm2 = np.minimum(inverse_norm2, mu / eig)
            lowest = max(lowest, eig)
        if eig_tilde > shift:
            V = linalg.solve(H_tilde, Xs.T, assume_a="pos")
            neumann = np.einsum("ij,ij->j", V, V) / (1.0 - shift / eig_tilde) ** 2
            inverse_norm2 = np.minimum(inverse_norm2, neumann)
        if not lowest > 0:
            inverse_norm2 = np.full(Xs.shape[0], np.inf)
        leverage = np.where(leverage < 1.0, leverage, np.inf)
        return {"leverage": leverage, "inverse_norm2": inverse_norm2, "norm2": norm2,
                "lowest": lowest}

    def floor_bound(self, kappa):
        """A public B <= Z^T Z + alpha P from kappa <= lambda_min(S) + alpha,
        S the centred scatter matrix (X^T X without intercept, B = kappa I).

        With an intercept, in coordinates centred at the noisy feature mean c
        (``||x_bar - c|| <= e``, :meth:`feature_mean`), which leave the
        leverage and the slope penalty unchanged, H = diag(S + alpha I, 0)
        + n u u^T with u = (x_bar - c, 1); by the Schur complement
        n u u^T >= diag(-n e^2 I, n / 2), so H >= diag((kappa - n e^2) I, n / 2)
        there, which is B = [[k' I + m c c^T, m c], [m c^T, m]] (m = n / 2)
        in the original coordinates. None when k' <= 0.
        """
        law = self.law
        if not law.intercept:
            return kappa * np.eye(self.noisy_gram.shape[0]) if kappa > 0 else None
        centre, error = self.feature_mean()
        n = law.n_samples
        kappa = kappa - n * error**2
        if not kappa > 0:
            return None
        m = 0.5 * n
        c = np.append(centre, 1.0)
        B = m * np.outer(c, c)
        B[:-1, :-1] += kappa * np.eye(centre.size)
        return B

    def __repr__(self):
        return (f"PublishedReport({type(self.law).__name__}, dp_epsilon="
                f"{self.dp_epsilon:.4g}, dp_delta={self.dp_delta:.3g}, beta={self.beta:g})")


def publish(law, gram, *, publish_epsilon, beta, delta, model_epsilon, rng,
            n_features_in, feature_names_in=None):
    """The publication's Gram noise, calibrated: a :class:`PublishedReport`
    without its summary (:func:`private_summary` fills it).

    ``GRAM_SHARE * publish_epsilon`` goes to the noisy Gram matrix, composed
    with the model (``law.gaussian_allowance``), the rest to the summary.
    ``gram`` is called for ``Z^T Z`` only if the law needs it
    (``law.needs_gram``); otherwise the
    whole ``publish_epsilon`` goes to the summary. A law whose bound is one
    public number (``law.data_independent``) spends none of it
    (:func:`exact_summary`), and its bounds never fail (``beta`` 0).
    """
    names = dict(n_features_in=n_features_in, feature_names_in=feature_names_in)
    if law.data_independent:
        # one public bound for everyone: nothing to release, nothing spent, never wrong
        return PublishedReport(
            law, None, 0.0, beta=0.0, delta=delta, summary_epsilon=0.0,
            dp_epsilon=law.dp_epsilon(delta), dp_delta=law.guarantee[1],
            cap_epsilon=law.cap_epsilon(delta), **names,
        )
    common = dict(beta=beta, delta=delta, dp_delta=delta, **names)
    if not law.needs_gram:
        return PublishedReport(
            law, None, 0.0, summary_epsilon=publish_epsilon,
            dp_epsilon=law.dp_epsilon(delta) + publish_epsilon,
            cap_epsilon=law.cap_epsilon(delta) + publish_epsilon, **common,
        )
    summary_epsilon = (1.0 - GRAM_SHARE) * publish_epsilon
    target = model_epsilon + GRAM_SHARE * publish_epsilon
    ratio = law.gaussian_allowance(delta, target)
    noise_scale = gram_max_change(law.intercept) / ratio
    exact = gram()
    noisy = exact + noise_scale * gram_noise(rng, exact.shape[0], law.intercept)
    return PublishedReport(
        law, noisy, noise_scale, summary_epsilon=summary_epsilon,
        dp_epsilon=law.dp_epsilon(delta, ratio) + summary_epsilon,
        cap_epsilon=law.cap_epsilon(delta, ratio) + summary_epsilon, **common,
    )


def private_summary(values, thresholds, epsilon, lower, upper, rng, level=0.95):
    """Private mean, quantiles and fractions below ``thresholds`` of ``values``.

    ``values`` are in [lower, upper] (both public, lower > 0), each a public
    function of one row: removing a row removes one value. ``epsilon`` is
    split equally between the mean (Laplace noise on the sum, sensitivity
    ``upper``, divided by the public size), each quantile of ``_QUANTILES``
    (exponential mechanism on a public log grid, utility sensitivity 1) and
    the fractions (Laplace noise on the counts, l1 sensitivity the number
    of thresholds): pure epsilon-DP.

    Post-processing (free) makes the summary consistent: the quantiles
    non-decreasing, the fractions non-decreasing in the threshold (isotonic
    projection, then 0 below ``lower`` and 1 from ``upper``: public facts),
    and the mean inside the range the quantiles leave it: with a q-quantile
    v_q, at least a share 1 - q of the values is at least v_q and a share q
    at most v_q, so ``q lower + (1 - q) v_q <= mean <= q v_q + (1 - q) upper``.
    Next to them, from public quantities: ``stderr``, the standard errors of
    the Laplace noise on the mean and on each fraction (the projections
    move the fractions no further from the true ones in l2, as the true
    fractions satisfy the constraints), and ``quantile_levels``, for each
    quantile the interval of levels of which the published value is a
    quantile of the (grid-rounded) values with probability ``level``.
    """
    part = epsilon / _SUMMARY_PARTS
    values = np.clip(values, 0.0, upper)
    n = values.size
    out = {}
    previous = lower
    for key, q in _QUANTILES.items():
        previous = max(previous, _private_quantile(values, q, part, lower, upper, rng))
        out[key] = float(previous)
    mean = (values.sum() + rng.laplace(scale=upper / part)) / n
    low = max(q * lower + (1 - q) * out[key] for key, q in _QUANTILES.items())
    high = min(q * out[key] + (1 - q) * upper for key, q in _QUANTILES.items())
    out["mean"] = float(np.clip(mean, low, high))
    k = max(len(thresholds), 1)
    thresholds = np.asarray(thresholds, dtype=np.float64)
    order = np.argsort(thresholds, kind="stable")
    counts = np.array([np.sum(values <= t) for t in thresholds], dtype=np.float64)
    noisy = (counts + rng.laplace(scale=k / part, size=thresholds.size)) / n
    fractions = np.empty(thresholds.size)
    if thresholds.size:
        fractions[order] = isotonic_regression(noisy[order], y_min=0.0, y_max=1.0)
    fractions = np.where(thresholds < lower, 0.0, np.where(thresholds >= upper, 1.0, fractions))
    out["below"] = {float(t): float(f) for t, f in zip(thresholds, fractions)}
    grid_size = _log_grid(lower, upper).size
    # the exponential mechanism's draw has utility below -u with probability
    # at most |grid| exp(-eps u / 2): u = 2 log(|grid| / (1 - level)) / eps
    rank = 2.0 * np.log(grid_size / (1.0 - level)) / part / n
    out["stderr"] = {"mean": float(np.sqrt(2.0) * upper / part / n),
                     "below": float(np.sqrt(2.0) * k / part / n)}
    out["quantile_levels"] = {key: (float(max(q - rank, 0.0)), float(min(q + rank, 1.0)))
                              for key, q in _QUANTILES.items()}
    return out


def exact_summary(value, thresholds):
    """:func:`private_summary` of values that all equal ``value``, a public
    number: exact, at no cost (no noise, every level's quantile ``value``)."""
    value = float(value)
    out = {key: value for key in _QUANTILES}
    out["mean"] = value
    out["below"] = {float(t): float(value <= t) for t in thresholds}
    out["stderr"] = {"mean": 0.0, "below": 0.0}
    out["quantile_levels"] = {key: (q, q) for key, q in _QUANTILES.items()}
    return out


def _log_grid(lower, upper):
    """The public grid of the private quantiles: relative step about
    ``_GRID_STEP`` on a log scale from ``lower`` to ``upper`` (both included)."""
    low, high = np.log(lower), np.log(upper)
    grid = np.exp(np.linspace(low, high, max(int(np.ceil((high - low) / _GRID_STEP)), 0) + 1))
    grid[-1] = max(grid[-1], upper)
    return grid


def _private_quantile(values, q, epsilon, lower, upper, rng):
    """Exponential-mechanism quantile over a public log grid.

    The candidates are the points ``lower * e^(j h)`` of a grid of relative
    step about ``_GRID_STEP`` from ``lower`` to ``upper`` (both included).
    Each value is first rounded up to the grid, a fixed public map: one row
    still moves one value. A candidate o has utility
    ``-max(#{v < o} - q n, q n - #{v <= o}, 0)``, zero exactly when o is a
    q-quantile of the rounded values (also for tied values, where Smith's
    (2011) intervals between values have no length). Removing a row lowers
    each count by 0 or 1 and ``q n`` by q, so the utility moves by at most
    1; o is drawn with probability proportional to ``exp(epsilon u(o) / 2)``
    (:func:`~sklearn_pdp.accounting._exponential.quantile_log_proba`).
    """
    grid = _log_grid(lower, upper)
    # rounded up in the linear domain: no value exceeds its grid point
    cells = np.searchsorted(grid, np.clip(values, lower, upper), side="left")
    counts = np.bincount(np.minimum(cells, grid.size - 1), minlength=grid.size)
    return float(grid[select(quantile_log_proba(counts, q, epsilon), rng)])
