"""The published law of a release whose per-row losses cannot be bounded
below its guarantee from published quantities (:doc:`/publish`,
"Privately tightened bounds").

A fit (or a private search) on privately tightened bounds charges each
person a loss that holds for every bound the release could produce; the
part of it below the guarantee is a function of the private grid counts
(:doc:`/mechanisms/tightening`, "Published reports"). What can be published
at no cost is the largest loss of a person removed from the training rows
or added to them, over every data set of the domain: one public number,
the same for everyone.
"""

import numpy as np

from ._release import Release

REASON = (
    "with privately tightened bounds a person's loss must hold for every bound the "
    "release could produce, and below the guarantee it depends on the private grid "
    "counts of the bounds' quantiles, so every person's published bound is the "
    "guarantee ({cap:.6g}: the largest loss of a person removed from the training "
    "rows or added to them; dp_epsilon {guarantee:.6g})"
)


class GuaranteeLaw(Release):
    """A data-independent law: every person's bound is ``cap``.

    ``cap`` is the largest loss at ``delta`` of a person removed from the
    ``n`` rows or added to them, over every data set of the declared domain
    and every draw: a function of public quantities only. A published
    report of it needs no Gram matrix and no summary budget
    (``data_independent``): its bounds and their summary are exact, and
    spend nothing.

    Parameters
    ----------
    scaler : DomainScaler
        The fitted model's domain (rows are scaled as the model does; the
        bound does not depend on them).
    n_samples : int
        The public size.
    delta : float
        The delta of ``cap`` and of the guarantee.
    guarantee : tuple of float
        The release's ``(dp_epsilon_, dp_delta_)``.
    cap : float
        Every person's bound (at least the guarantee).
    """

    needs_gram = False
    data_independent = True
    kind = "bound"
    _private = ()

    def __init__(self, *, scaler, n_samples, delta, guarantee, cap):
        super().__init__(scaler=scaler, n_samples=n_samples, delta=delta,
                         guarantee=guarantee, coef=np.empty(0))
        self.cap = max(float(cap), self.guarantee[0])
        self.reason = REASON.format(cap=self.cap, guarantee=self.guarantee[0])

    @classmethod
    def from_budget(cls, epsilon, delta, data, *, scaler, **params):
        raise NotImplementedError(
            "A GuaranteeLaw describes a fitted release (a tightened stage's, or a "
            "search's release_law); it is not calibrated from a budget.")

    def draw(self, rng, size=None):
        raise NotImplementedError("A GuaranteeLaw holds no coefficients to draw.")

    def losses(self, Xs, ys, add=False):
        return np.full(Xs.shape[0], self.cap)

    def statistics(self, Xs, ys, add=False):
        """No statistic: the number of rows only."""
        return {"rows": np.zeros(Xs.shape[0])}

    def published_statistics(self, published, Xs, ys):
        return self.statistics(Xs, ys)

    def _check(self, delta, gaussian_ratio):
        if delta != self.delta or gaussian_ratio is not None:
            raise ValueError(
                f"A GuaranteeLaw holds at its own delta ({self.delta:g}) and composes "
                "with no publication.")

    def epsilon(self, delta, stats, gaussian_ratio=None):
        self._check(delta, gaussian_ratio)
        return np.full(stats["rows"].shape, self.cap)

    def dp_epsilon(self, delta, gaussian_ratio=None):
        self._check(delta, gaussian_ratio)
        return self.guarantee[0]

    def cap_epsilon(self, delta, gaussian_ratio=None):
        self._check(delta, gaussian_ratio)
        return self.cap

    def gaussian_allowance(self, delta, target):
        raise ValueError("A GuaranteeLaw composes with no publication: it spends nothing.")
