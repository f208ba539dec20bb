"""
=====================================================
Publishing a per-instance privacy report (and lookup)
=====================================================

A per-instance privacy report is computed from the private data, so it
cannot be published as it is. With ``publish_epsilon``, ``PDPReport`` also
releases ``published_``: a small object built only from differentially
private quantities (a noisy Gram matrix, the released coefficients, the
mechanism's public parameters and a private summary). Anyone holding it can
bound their own privacy loss from their own row, with probability 95%.
"""

# %%
import pickle

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_diabetes

from sklearn_pdp import AdaSSPRegressor, PDPReport

X, y = load_diabetes(return_X_y=True)
# epsilon 2: with 442 rows of 10 features, epsilon 1 would release the
# private label mean alone (``mean_only_``), whose loss is public anyway
model = AdaSSPRegressor(epsilon=2.0, bounds_X=(-0.2, 0.2), y_bound=(0.0, 400.0),
                        random_state=0)
report = PDPReport(model, publish_epsilon=0.2, random_state=0).fit(X, y)
published = report.published_
print(f"model alone: ({report.estimator_.dp_epsilon_:.3g}, 1e-6)-DP; "
      f"model and publication: ({report.dp_epsilon_:.3g}, {report.dp_delta_:g})-DP")
print(f"what is published: {len(pickle.dumps(published))} bytes, no row of the data")

# %%
# What gets published: private estimates of the summary (noisy: the
# diabetes data have only 442 rows for a summary budget of 0.1)
print({key: round(value, 3) for key, value in published.summary.items()
       if key in ("mean", "median", "q90", "q99")})

# %%
# A person looks up their own loss from the published object and their own
# row alone. For a training row the bound covers the whole loss (model,
# publication and summary) with probability 95%.
person = 7
print(f"person {person}: at most {published.epsilon(X[[person]], y[[person]])[0]:.3g} "
      f"(exact, known only to the data holder: {report.pdp_losses_[person]:.3g})")

# %%
# Every training row's published bound against its exact loss.
bound = published.epsilon(X, y)
fig, ax = plt.subplots(figsize=(5, 4), layout="constrained")
ax.scatter(report.pdp_losses_, bound, s=8)
line = [report.pdp_losses_.min(), bound.max()]
ax.plot(line, line, color="C3", linestyle="--", label="bound = exact")
ax.set_xlabel(r"exact per-instance $\varepsilon$ (private)")
ax.set_ylabel(r"published bound on $\varepsilon$")
ax.legend(frameon=False)
print(f"covered: {np.mean(bound >= report.pdp_losses_):.1%} of the rows; "
      f"median bound / exact: {np.median(bound / report.pdp_losses_):.2f}")
plt.show()
