"""Release laws: the public description of a fitted release from which a
published report bounds per-instance losses (doc/publish.rst).

Every mechanism's law subclasses :class:`ReleaseLaw`; a release that is one
Gaussian mechanism made of noisy blocks (AdaSSP) uses
:class:`GaussianLaw`. Nothing here is a statistic of the private data.
"""

import numpy as np

from ._accounting import gaussian_epsilon, gaussian_noise_scale


class ReleaseLaw:
    """The public description of a fitted release, for reports published from it.

    Returned by :meth:`PrivateRegressorMixin.release_law`. It holds public
    quantities only: the declared domain (``scaler``, a ``DomainScaler``),
    the released coefficients in scaled coordinates (``coef``), the ridge
    strength ``alpha`` and whether the constant feature is unpenalised
    (``intercept``), the public size ``n_samples`` and the mechanism's noise
    parameters. Nothing in it is a statistic of the private data.

    Row statistics are passed as a dict with the keys of
    :meth:`Ridge.row_statistics` (``leverage`` x^T H^{-1} x, ``residual``
    y - x^T theta_hat, ``inverse_norm2`` ||H^{-1} x||^2 and ``norm2``
    ||x||^2), *in-sample*: against H and theta_hat of the data that contains
    the row. Subclasses implement:

    - ``residual_margin(beta, stats)``: a bound on |x^T (coef - theta_hat)|
      that holds with probability at least 1 - beta over the mechanism's
      noise, for a fixed row; non-decreasing in the statistics;
    - ``epsilon(delta, stats, gaussian_ratio=None)``: the per-instance epsilon
      at ``delta`` of removing the row, exact at exact statistics, composed
      with an independent Gaussian mechanism whose ratio (l2 change over
      noise) for the row is ``gaussian_ratio``; given upper bounds on
      ``leverage``, ``inverse_norm2`` and ``|residual|`` it returns an upper
      bound (the largest loss over that box);
    - ``dp_epsilon(delta, gaussian_ratio=None)``: the data-independent
      guarantee at ``delta``, composed with a Gaussian mechanism of worst
      ratio ``gaussian_ratio``;
    - ``gaussian_allowance(delta, target)``: the largest worst-case ratio of
      such a Gaussian mechanism for which ``dp_epsilon(delta, ratio)`` is at
      most ``target``.

    :meth:`cap_epsilon` caps published bounds, which hold for anyone: the
    largest loss of a row removed from the ``n`` rows or added to them.

    Where the composition is not exact (the mechanism's loss is not
    Gaussian) it spends ``delta`` as ``(1 - GAUSSIAN_DELTA_SHARE) delta`` on
    the mechanism and the rest on the Gaussian (basic composition: a valid
    upper bound).

    :meth:`published_statistics` gives the statistics' upper values from a
    published report alone; the fitted estimator gives their exact values
    (``_law_statistics``). A mechanism whose loss depends on other
    statistics overrides both (AdaSSP, random projection; AdaOPS, whose
    exact statistics are its mixture over pairs of cells and whose published
    ones the terms of an adaptive composition that bounds it).

    A law whose statistics are bounded without the publication's noisy Gram
    matrix (from the release itself, or a loss that is a public function of
    the row) sets the class attribute ``needs_gram = False``: no Gram
    matrix is published, all of ``publish_epsilon``
    goes to the summary, and ``gaussian_allowance`` is not needed.
    """

    needs_gram = True

    def __init__(self, *, scaler, coef, alpha, n_samples):
        self.scaler = scaler
        self.coef = np.asarray(coef, dtype=np.float64)
        self.alpha = float(alpha)
        self.intercept = bool(scaler.fit_intercept)
        self.n_samples = int(n_samples)

    def cap_epsilon(self, delta, gaussian_ratio=None):
        """The largest loss, at ``delta``, of a row removed from the ``n``
        rows or added to them (composed like :meth:`dp_epsilon`). By default
        ``dp_epsilon``, derived for removals: a law whose guarantee does not
        cover a person added overrides it with its worst case at n + 1 rows
        (AdaSSP, OPS, objective and output perturbation) or states that it
        does (random projection); AdaOPS's is not derived yet
        (doc/publish.rst)."""
        return self.dp_epsilon(delta, gaussian_ratio)

    def published_statistics(self, published, Xs, ys):
        """Upper values of each scaled row's statistics, valid with
        probability at least ``1 - published.beta`` over the noise: by
        default the leverage and ``||H^{-1} x||^2`` from the noisy Gram and
        the residual from the released coefficients plus
        :meth:`residual_margin` (``ys`` None: the worst label)."""
        return published.ridge_statistics(Xs, ys)


def block_ratio(noise_scale, changes2):
    """The Gaussian ratio of a release made of noisy blocks:
    sqrt(sum_b change_b^2 / sigma_b^2) over the blocks with noise."""
    return np.sqrt(sum(
        changes2[key] / sigma**2 for key, sigma in noise_scale.items() if sigma > 0
    ))


class GaussianLaw(ReleaseLaw):
    """The law of a release that is one Gaussian mechanism of noisy blocks.

    ``noise_scale`` maps each released block to its noise's standard
    deviation; a row's statistics are the squared changes of the blocks
    (same keys); the loss is the analytic Gaussian epsilon at their
    :func:`block_ratio`, capped by the domain's ``worst_ratio``, and a
    Gaussian publication composes exactly (the ratios add in squares).
    """

    def __init__(self, *, noise_scale, worst_ratio, **public):
        super().__init__(**public)
        self.noise_scale = dict(noise_scale)
        self.worst_ratio = float(worst_ratio)

    def cap_ratio(self):
        """The largest model ratio of a row removed or added: by default the
        domain's worst for removals, ``worst_ratio``."""
        return self.worst_ratio

    def epsilon(self, delta, stats, gaussian_ratio=None):
        extra = 0.0 if gaussian_ratio is None else gaussian_ratio
        # no row's model ratio exceeds the domain's worst (rounding aside)
        ratio = np.minimum(block_ratio(self.noise_scale, stats), self.cap_ratio())
        return gaussian_epsilon(delta, np.hypot(ratio, extra))

    def cap_epsilon(self, delta, gaussian_ratio=None):
        extra = 0.0 if gaussian_ratio is None else gaussian_ratio
        return float(gaussian_epsilon(delta, np.hypot(self.cap_ratio(), extra)))

    def dp_epsilon(self, delta, gaussian_ratio=None):
        extra = 0.0 if gaussian_ratio is None else gaussian_ratio
        return float(gaussian_epsilon(delta, np.hypot(self.worst_ratio, extra)))

    def gaussian_allowance(self, delta, target):
        total = 1.0 / gaussian_noise_scale(target, delta)
        if not total > self.worst_ratio:
            raise ValueError(
                f"The release alone costs {self.dp_epsilon(delta):.4g} at this delta: "
                f"nothing is left for a publication within {target:.4g}; raise "
                "publish_epsilon."
            )
        return float(np.sqrt(total**2 - self.worst_ratio**2))
