"""
===========================================
A per-instance privacy report in a Pipeline
===========================================

``PDPReport`` fits a private regressor and reports how much privacy every
training row loses. It is a transformer, so it composes with scikit-learn's
``Pipeline``. Preprocessing steps in front of it must not learn from the
private data: a ``StandardScaler`` fitted on the training set would release
the column means and variances without any privacy accounting. Here the
preprocessing is a fixed, public transformation (a ``FunctionTransformer``
with known constants).
"""

# %%
import matplotlib.pyplot as plt
from sklearn.datasets import load_diabetes
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from sklearn_pdp import OPSRegressor, PDPReport

X, y = load_diabetes(return_X_y=True)
public_scaling = FunctionTransformer(lambda X: X * 10.0)  # fixed, data-free
report = PDPReport(
    OPSRegressor(epsilon=None, gamma=100.0, alpha=10.0, data_norm=3.5, y_bound=350.0, random_state=0),
    delta=1e-6,
)
pipe = make_pipeline(public_scaling, report).fit(X, y)

summary = pipe[-1].summary_
print(f"DP epsilon: {summary['dp_epsilon']:.3g}")
print(f"per-instance epsilon: median {summary['median']:.3g}, "
      f"99% {summary['q99']:.3g}, max {summary['max']:.3g}")

# %%
# ``transform`` gives, for any row, the epsilon of adding that person with the
# worst label, and the row's leverage.
print(pipe.transform(X[:5]))

# %%
fig, ax = plt.subplots(figsize=(6, 4))
pipe[-1].plot(ax=ax)
fig.tight_layout()
plt.show()
