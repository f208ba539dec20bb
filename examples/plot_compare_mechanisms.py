"""
==========================================
Utility against privacy for the mechanisms
==========================================

Test error of every private regressor of the package on one synthetic data
set, as a function of the privacy budget ``epsilon`` (at ``delta = 1e-6``), next
to non-private least squares and the mean predictor, and the median
per-instance epsilon of the training rows. Every estimator is given the
budget and the bounds only: the noise and the ridge follow from them.
AdaSSP, the default, has the smallest error; the others leave most people
with a smaller share of the budget (see :doc:`/choosing`).
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LinearRegression
from sklearn.metrics import mean_squared_error
from sklearn.model_selection import train_test_split

from sklearn_pdp import (
    AdaOPSRegressor,
    AdaSSPRegressor,
    ObjPertRegressor,
    OPSRegressor,
    OutputPerturbationRegressor,
    RandomProjectionRegressor,
)

rng = np.random.default_rng(0)
n, d = 4000, 5
X = rng.standard_normal((n, d))
X /= np.linalg.norm(X, axis=1, keepdims=True)
y = np.clip(X @ rng.standard_normal(d) + 0.1 * rng.standard_normal(n), -1, 1)
X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
bounds = dict(data_norm=1.0, y_bound=1.0, delta=1e-6, random_state=0)


factories = {
    "AdaSSP (default)": AdaSSPRegressor,
    "OPS": OPSRegressor,
    "AdaOPS": AdaOPSRegressor,
    "output perturbation": OutputPerturbationRegressor,
    "objective perturbation": ObjPertRegressor,
    "random projection": RandomProjectionRegressor,
}
budgets = [1.0, 3.0, 10.0]
errors = {name: [] for name in factories}
for name, make in factories.items():
    for eps in budgets:
        reg = make(epsilon=eps, **bounds).fit(X_train, y_train)
        assert reg.dp_epsilon_ <= eps * (1 + 1e-6)
        errors[name].append(mean_squared_error(y_test, reg.predict(X_test)))
        print(f"{name:24s} eps={eps:4g}  test MSE {errors[name][-1]:.4f}  "
              f"median pDP {np.median(reg.pdp_losses_):.3g}")

least_squares = mean_squared_error(
    y_test, LinearRegression().fit(X_train, y_train).predict(X_test)
)
mean_only = mean_squared_error(y_test, np.full_like(y_test, y_train.mean()))

# %%
fig, ax = plt.subplots(figsize=(6, 4.5))
for name, mse in errors.items():
    ax.plot(budgets, mse, marker="o", label=name)
ax.axhline(least_squares, color="k", ls="--", label="least squares")
ax.axhline(mean_only, color="0.5", ls=":", label="mean predictor")
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel(r"$\epsilon$ (data-independent, $\delta = 10^{-6}$)")
ax.set_ylabel("test MSE")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()
