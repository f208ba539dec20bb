"""Privacy accounting: tight hockey-stick divergences, their inverses, and
the calibrations of the package's mechanisms.

Every mechanism of the package reduces to a pair of output distributions P (the
smaller data set) and Q (the larger one, with the privacy target added) and the
privacy loss L = log dP/dQ.  The tight per-instance guarantee is
(:doc:`/mechanisms/index`)

    delta_PQ(eps) = P(L > eps) - e^eps Q(L > eps),
    delta_QP(eps) = Q(L < -eps) - e^eps P(L < -eps),
    delta(eps) = max(delta_PQ, delta_QP).

Both directions have the shape ``A(eps) - e^eps B(eps)`` and the derivative
``-e^eps B(eps)``.  A mechanism therefore only supplies a *tails* function
returning ``(log A, log B)`` for each direction, in a
:class:`~._engine.PrivacyLoss`; the engine turns it into delta(eps)
(``_divergence``) and into eps(delta) with one vectorised, safeguarded
Newton search that always returns an upper bound (``_search``: the end of
the bracket whose delta was checked to be at most the target, started for
the many rows of a fit from a table of ``_table``), and solves every
calibration with one bracketing root finder (``_engine``). One module per
mechanism holds its loss and its calibration: ``_gaussian`` (Gaussian
mechanism: output perturbation, AdaSSP, publication), ``_laplace`` (Laplace
mechanism: the label mean of the fallback, in closed form), ``_ops`` (One
Posterior Sample and the AdaOPS mixture), ``_chi2`` (Gaussian sketch: random
projection), ``_objpert`` (objective perturbation), ``_gram`` (a released
noisy Gram matrix: AdaSSP, publication); ``_domain`` bounds the statistics
over the privacy domain; ``_exponential`` holds the exponential mechanism
(the search's selection, the tightened bounds' quantiles).

Nothing here knows about scikit-learn: the estimators feed it arrays of
per-row statistics.
"""

from ._chi2 import chi2_delta, chi2_epsilon, chi2_noise_scale
from ._divergence import hockey_stick, log_gauss_mass, log_phi
from ._domain import PREDICTION_NOISE, domain_bounds
from ._gaussian import (
    GAUSSIAN_DELTA_SHARE,
    compose_with_gaussian,
    gaussian_allowance,
    gaussian_delta,
    gaussian_epsilon,
    gaussian_mixture_epsilon,
    gaussian_noise_scale,
)
from ._gram import feature_powers, gram_change2, gram_max_change, gram_noise
from ._laplace import laplace_delta, laplace_epsilon, laplace_noise_scale
from ._objpert import (
    objpert_auto_alpha,
    objpert_delta,
    objpert_dp_epsilon,
    objpert_epsilon,
    objpert_noise_scale,
)
from ._ops import (
    ops_auto_alpha,
    ops_delta,
    ops_dp_epsilon,
    ops_epsilon,
    ops_gamma,
    ops_mixture_epsilon,
)
from ._search import epsilon_from_delta

__all__ = [
    "GAUSSIAN_DELTA_SHARE",
    "PREDICTION_NOISE",
    "chi2_delta",
    "chi2_epsilon",
    "chi2_noise_scale",
    "compose_with_gaussian",
    "domain_bounds",
    "epsilon_from_delta",
    "feature_powers",
    "gaussian_allowance",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_mixture_epsilon",
    "gaussian_noise_scale",
    "gram_change2",
    "gram_max_change",
    "gram_noise",
    "hockey_stick",
    "laplace_delta",
    "laplace_epsilon",
    "laplace_noise_scale",
    "log_gauss_mass",
    "log_phi",
    "objpert_auto_alpha",
    "objpert_delta",
    "objpert_dp_epsilon",
    "objpert_epsilon",
    "objpert_noise_scale",
    "ops_auto_alpha",
    "ops_delta",
    "ops_dp_epsilon",
    "ops_epsilon",
    "ops_gamma",
    "ops_mixture_epsilon",
]
