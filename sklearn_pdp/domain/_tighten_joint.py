"""The exact loss of AdaSSP fitted on a privately released label range
(:doc:`/mechanisms/tightening`, "The label alone: the exact loss").

With the label's two ends alone released, only the label's scaling depends
on the released ends b = (lo, hi): the features keep their declared bounds,
so the eigenvalue's and the Gram's changes by a row do not depend on b.
Given b, AdaSSP is one Gaussian mechanism whose ratio for a row is
``s_b^2 = s_0^2 + (s_1^2 - s_0^2) y_b^2``, with ``y_b`` the row's label
scaled to b and ``s_0``, ``s_1`` its ratios at scaled labels 0 and 1. The
whole release is the mixture over the pairs of released ends
(:func:`~sklearn_pdp.accounting.gaussian_mixture_epsilon`): each end's grid points of
least probability, together below ``_LEFT_OUT`` delta, are left out of it
and counted as revealing everything.
"""

import numpy as np

from ..accounting import gaussian_mixture_epsilon
from ..accounting._exponential import quantile_log_proba
from ._scaler import label_range

# Probability of each end's grid points left out of the mixture, over delta.
_LEFT_OUT = 1e-3
# Rows per block of the mixture (memory: rows times pairs of ends).
_BLOCK = 256


def label_alone(release):
    """Whether ``release`` (a :class:`~._tighten.BoundsRelease`) releases the
    label's two ends and nothing else."""
    return list(release.source) == ["y", "y"]


class LabelMixture:
    """The pairs of released label ends of ``release`` kept in the mixture,
    the scaled labels they give, and each end's log probabilities with and
    without a row (by the row's grid cell)."""

    def __init__(self, release, delta):
        self.release = release
        base = release.log_proba()
        q = 1.0 - release.level
        self.base, self.kept, self.moved = base, [], {}
        for k in range(2):
            order = np.argsort(base[k])
            left = np.cumsum(np.exp(base[k][order])) <= _LEFT_OUT * delta / 2.0
            self.kept.append(np.sort(order[~left]))
        for add in (False, True):
            moved = []
            for k in range(2):
                counts = release.counts_[k]
                changed = counts + (1.0 if add else -1.0) * np.eye(counts.size)
                with np.errstate(invalid="ignore"):
                    moved.append(quantile_log_proba(np.maximum(changed, 0.0), q,
                                                    release.epsilon_q))
            self.moved[add] = moved
        ends = release.origin[:, None] + release.sign[:, None] * release.grid
        a = ends[0][self.kept[0]][:, None]
        b = ends[1][self.kept[1]][None, :]
        low, high = label_range(release.declared[2])
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        same = lo >= hi  # the draw keeps the declared range (BoundsRelease.draw)
        self.lo = np.where(same, low, lo).ravel()
        self.hi = np.where(same, high, hi).ravel()

    def _log_probs(self, log_proba, k):
        """Log probabilities of the kept points of end k and of the rest."""
        kept = log_proba[..., self.kept[k]]
        mask = np.ones(log_proba.shape[-1], dtype=bool)
        mask[self.kept[k]] = False
        rest = np.exp(log_proba[..., mask]).sum(axis=-1)
        return kept, rest

    def _pairs(self, first, second):
        """Per row, the log probabilities of the kept pairs and of the rest."""
        (p0, r0), (p1, r1) = first, second
        log_pairs = (p0[:, :, None] + p1[:, None, :]).reshape(p0.shape[0], -1)
        with np.errstate(divide="ignore"):
            return log_pairs, np.log(np.minimum(r0 + r1 - r0 * r1, 1.0))

    def epsilon(self, r0, r1, y, cells, delta, add):
        """Each row's exact loss at ``delta`` for the whole release: ``r0``,
        ``r1`` its AdaSSP ratios at scaled labels 0 and 1, ``y`` its label,
        ``cells`` its grid cells (n, 2); ``add``: a person added (else a
        training row removed). The smaller data set's probabilities come first."""
        out = np.empty(y.shape[0])
        half, mid = 0.5 * (self.hi - self.lo), 0.5 * (self.hi + self.lo)
        base = [self._log_probs(self.base[k][None, :], k) for k in range(2)]
        for start in range(0, y.shape[0], _BLOCK):
            rows = slice(start, start + _BLOCK)
            m = y[rows].shape[0]
            moved = [self._log_probs(self.moved[add][k][cells[rows, k]], k) for k in range(2)]
            fixed = [(np.broadcast_to(p, (m, p.shape[1])), np.broadcast_to(r, (m,)))
                     for p, r in base]
            with_row, without = (moved, fixed) if add else (fixed, moved)
            log_q, log_q_rest = self._pairs(*with_row)
            log_p, log_p_rest = self._pairs(*without)
            ys = np.clip((y[rows, None] - mid) / half, -1.0, 1.0)
            s2 = r0[rows, None] ** 2 + (r1[rows, None] ** 2 - r0[rows, None] ** 2) * ys**2
            out[rows] = gaussian_mixture_epsilon(delta, np.sqrt(s2), log_p, log_q,
                                                 log_p_rest, log_q_rest)
        return out


def label_joint_loss(stage, X, y, add):
    """The exact loss of each row (labels ``y``) for a fit of AdaSSP on a
    released label range (a :class:`~._stage.TightenedStage` with its model
    fitted): removed from the training rows, or added (``add``)."""
    release = stage.bounds_release
    mixture = getattr(release, "mixture_", None)
    if mixture is None:
        mixture = release.mixture_ = LabelMixture(release, stage.delta)
    Xs = stage.scaler.scale(X)
    model = stage.release
    r0 = model.row_ratio(Xs, np.zeros(X.shape[0]), add)
    r1 = model.row_ratio(Xs, np.ones(X.shape[0]), add)
    return mixture.epsilon(r0, r1, np.asarray(y, dtype=float), release.cells(X, y),
                           stage.delta, add)
