"""
===========================================
A per-instance privacy report in a Pipeline
===========================================

``PDPReport`` fits a private regressor (``AdaSSPRegressor`` unless told
otherwise) and reports how much privacy every training row loses. It is a
transformer, so it composes with scikit-learn's ``Pipeline``.

Preprocessing steps in front of it must not learn from the private data: a
``StandardScaler`` fitted on the training set releases the column means and
variances without any privacy accounting, and every scaled row then depends
on all the others, which the guarantee does not cover. Here the
preprocessing is a fixed, public transformation (a ``FunctionTransformer``
with known constants) and the private estimator takes declared per-feature
ranges, from which it scales the data itself. :doc:`/preprocessing` shows the
same for a table with text columns.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from sklearn_pdp import AdaSSPRegressor, PDPReport, PrivacyLossDisplay

X, y = load_diabetes(return_X_y=True)
public_scaling = FunctionTransformer(lambda X: X * 10.0)  # fixed, data-free
# declared ranges (public knowledge of the domain), in the scaled units:
# features within [-2, 2], disease progression within [0, 400]
report = PDPReport(
    AdaSSPRegressor(epsilon=3.0, bounds_X=(-2.0, 2.0), y_bound=(0.0, 400.0),
                    random_state=0),  # a seed for a reproducible page; None for a release
    delta=1e-6,
)
pipe = make_pipeline(public_scaling, report).fit(X, y)

summary = pipe[-1].summary_
print(f"DP epsilon: {summary['dp_epsilon']:.3g} (at delta {summary['dp_delta']:g})")
print(f"per-instance epsilon: median {summary['median']:.3g}, "
      f"90% {summary['q90']:.3g}, max {summary['max']:.3g}")
print(f"released: intercept {pipe[-1].estimator_.intercept_:.4g}, "
      f"{np.count_nonzero(pipe[-1].estimator_.coef_)} non-zero slopes")

# %%
# ``transform`` gives, for any row, the epsilon of adding that person with the
# worst label, and the row's leverage.
print(pipe.transform(X[:5]))

# %%
# The plot is a :class:`~sklearn_pdp.PrivacyLossDisplay`, made from the fitted
# report (``pipe[-1].plot(ax=ax)`` draws the same and returns the Axes).
fig, ax = plt.subplots(figsize=(6, 4))
display = PrivacyLossDisplay.from_estimator(pipe[-1], ax=ax)
fig.tight_layout()
plt.show()
