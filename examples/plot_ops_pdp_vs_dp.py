"""
============================================================
Per-instance versus worst-case privacy of posterior sampling
============================================================

One Posterior Sample (OPS) releases a single draw from a scaled ridge
posterior; its parameter ``gamma`` trades privacy for utility. This example
reproduces the idea of Figure 2 (right) of Wang (2017): for a range of
``gamma``, it plots the privacy loss against the excess risk of the released
model, comparing

* the data-independent guarantee ``dp_epsilon_`` (DP: the worst case over all
  data sets of this size and all people in the declared domain), and
* the distribution of the exact per-instance losses ``pdp_losses_`` of the
  people actually in the training set (pDP).

All epsilons are at ``delta = 1e-6``. The data follow a linear-Gaussian model
whose rows are normalised to unit Euclidean norm, with labels clipped to
[-1, 1], so that ``data_norm = y_bound = 1`` are exact bounds.

The sweep goes far beyond a DP epsilon of 10 (up to about 10^6), where the
worst-case guarantee protects practically no one: it is there to draw the
whole curve of the paper's figure, not to suggest settings for a release. A
release takes a budget instead (``OPSRegressor(epsilon=1.0)``), which sets
``gamma`` for you.
"""

# %%
# Data
# ----
import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import train_test_split

from sklearn_pdp import OPSRegressor

rng = np.random.default_rng(0)
n_samples, n_features = 4000, 10
X = rng.standard_normal((n_samples, n_features))
X /= np.linalg.norm(X, axis=1, keepdims=True)
theta = rng.standard_normal(n_features)
y = np.clip(X @ theta + 0.1 * rng.standard_normal(n_samples), -1, 1)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.5, random_state=0)

best_mse = np.mean((LinearRegression().fit(X_train, y_train).predict(X_test) - y_test) ** 2)

# %%
# Privacy and excess risk for a range of gamma
# --------------------------------------------
# For every ``gamma`` the model is fitted with a few seeds: the per-instance
# losses do not depend on the seed (they are properties of the mechanism and
# the data, not of the draw), the excess test risk is averaged over the draws.
gammas = np.logspace(-2, 3, 11)
n_draws = 5
dp, pdp, risk = [], [], []
for gamma in gammas:
    excess = []
    for seed in range(n_draws):
        reg = OPSRegressor(
            epsilon=None, gamma=gamma, alpha=1.0, delta=1e-6, data_norm=1.0, y_bound=1.0,
            random_state=seed,
        ).fit(X_train, y_train)
        excess.append(np.mean((reg.predict(X_test) - y_test) ** 2) - best_mse)
    risk.append(np.mean(excess))
    dp.append(reg.dp_epsilon_)
    pdp.append(np.percentile(reg.pdp_losses_, [5, 50, 95, 100]))
pdp = np.array(pdp)

fig, ax = plt.subplots(figsize=(6, 4.5))
ax.plot(risk, dp, "k-o", label="DP: dp_epsilon_ (worst case)")
ax.plot(risk, pdp[:, 3], "C3--", label="pDP: most exposed training row")
ax.plot(risk, pdp[:, 1], "C0-s", label="pDP: median training row")
ax.fill_between(risk, pdp[:, 0], pdp[:, 2], color="C0", alpha=0.25,
                label="pDP: 5% to 95% of the rows")
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel("excess test risk (MSE above least squares)")
ax.set_ylabel("epsilon at delta = 1e-6")
ax.set_title(f"One Posterior Sample, n = {len(y_train)}, d = {n_features}")
ax.legend(fontsize="small")
fig.tight_layout()

# %%
# Reading the figure: at the same utility the typical person in the data set
# loses far less privacy than the worst case that DP has to promise, and even
# the most exposed training row stays below it. Moving right (smaller
# ``gamma``, more noise) lowers every epsilon.
# DP epsilons above 10 are printed with a flag: the curve, not a release.
for gamma, eps, (_, med, _, top) in zip(gammas[::5], dp[::5], pdp[::5]):
    flag = "  (above 10: protects practically no one)" if eps > 10 else ""
    print(f"gamma={gamma:8.2f}: dp_epsilon_={eps:8.3g}, "
          f"median pDP={med:8.3g}, max pDP={top:8.3g}{flag}")

# %%
# Who loses the most?
# -------------------
# The per-instance loss grows with a person's leverage (how unusual their
# features are) and with their residual (how badly the others predict their
# label). Here, at one ``gamma``, the loss against the absolute residual of
# the released model: the most exposed people are the poorly predicted ones.
reg = OPSRegressor(epsilon=None, gamma=100.0, alpha=1.0, data_norm=1.0, y_bound=1.0,
                   random_state=0).fit(X_train, y_train)
residual = np.abs(y_train - reg.predict(X_train))
fig, ax = plt.subplots(figsize=(6, 4))
ax.scatter(residual, reg.pdp_losses_, s=4, alpha=0.5)
ax.axhline(reg.dp_epsilon_, color="k", label="dp_epsilon_")
ax.set_yscale("log")
ax.set_xlabel("|y - prediction| of the released model")
ax.set_ylabel("pdp_losses_")
ax.set_title("gamma = 100")
ax.legend()
fig.tight_layout()
plt.show()
