"""
=============================================
A per-person privacy ledger across releases
=============================================

A curator releases a model every quarter, each trained on that quarter's
sample of an overlapping population. What has each person lost after a
year? :class:`~sklearn_pdp.PrivacyLedger` records every release with one
person key per training row and composes each person's exact per-instance
losses over all of them. AdaSSP releases are Gaussian mechanisms, so a
person's losses compose exactly: their ratios add in squares.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np

from sklearn_pdp import AdaSSPRegressor, PrivacyLedger

rng = np.random.default_rng(0)
n_people, d = 6000, 4
X = rng.uniform(-1, 1, size=(n_people, d)) / np.sqrt(d)
y = np.clip(0.2 + X @ rng.normal(size=d) + 0.1 * rng.normal(size=n_people), -1, 1)
people = np.array([f"person-{k:05d}" for k in range(n_people)])

# %%
# Four quarterly releases, each on a random 60% of the population at
# (epsilon, delta) = (0.5, 1e-6). The people left out of a quarter are
# declared ``absent`` with their records: the release also reveals something
# about them, the loss of adding their record (neighbouring data sets differ
# by adding or removing one person's row).
ledger = PrivacyLedger()  # PrivacyLedger("ledger.sqlite") keeps it in a file
delta = 1e-6
totals = []
for quarter in range(4):
    sample = np.sort(rng.choice(n_people, size=int(0.6 * n_people), replace=False))
    out = np.setdiff1d(np.arange(n_people), sample)
    model = AdaSSPRegressor(epsilon=0.5, delta=delta, data_norm=1.0, y_bound=1.0,
                            random_state=quarter).fit(X[sample], y[sample])
    ledger.record(model, people[sample], name=f"Q{quarter + 1}",
                  absent=people[out], absent_X=X[out], absent_y=y[out])
    totals.append(ledger.epsilon(people, delta))

print(ledger.releases()[["name", "mechanism", "family", "dp_epsilon", "n_rows",
                         "n_people"]])

# %%
# Each person's total after each quarter, for a few people. Every total is at
# ``delta = 1e-6`` and never exceeds basic composition of the guarantees
# (0.5 per quarter).
for k in range(5):
    print(people[k], " ".join(f"{t[k]:.3f}" for t in totals))

# %%
# The distribution of the totals after each quarter, against the sum of the
# releases' guarantees (what a global accountant charges everyone by basic
# composition). The people who were in every quarter's sample with a large
# influence on the model make the right tail.
fig, ax = plt.subplots(figsize=(7, 4))
for quarter, total in enumerate(totals):
    ax.hist(total, bins=60, histtype="step", label=f"after Q{quarter + 1}")
    ax.axvline(0.5 * (quarter + 1), color=f"C{quarter}", linestyle="--", linewidth=1)
ax.set_xlabel(r"each person's total $\varepsilon$ at $\delta$ = 1e-6")
ax.set_ylabel("people")
ax.set_title("Per-person totals (solid) and the sum of DP guarantees (dashed)")
ax.legend()
fig.tight_layout()
print("median total after four quarters:", np.median(totals[-1]).round(3),
      "| sum of the guarantees: 2.0")
