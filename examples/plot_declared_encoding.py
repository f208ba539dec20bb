"""
==============================================================
Encoding a table with text columns without learning from it
==============================================================

A private estimator protects the rows it sees, but not what preprocessing
learned from them before: a ``StandardScaler`` fitted on the private data
releases the column means and variances (and every scaled row then depends
on all the others), and ``OneHotEncoder`` with ``categories="auto"`` releases
the list of categories present, which tells whether anyone has a rare one.
Neither is covered by the guarantee.

The way out is to *declare* what the encoding needs, from knowledge of the
domain, never from the data: the categories of each text column, and the
range of each numeric column. scikit-learn's ``OneHotEncoder`` with
``categories=`` given learns nothing from the rows, and the private estimator
scales the numeric columns itself from ``bounds_X``, so no scaler is needed.
"""

# %%
# A table with numeric and text columns: scikit-learn's diabetes data in its
# original units, with the sex column as text.
import numpy as np
from sklearn.compose import ColumnTransformer
from sklearn.datasets import load_diabetes
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

from sklearn_pdp import AdaSSPRegressor, PublicLinearModel

table = load_diabetes(as_frame=True, scaled=False).frame
table["sex"] = table["sex"].map({1.0: "female", 2.0: "male"})
X, y = table.drop(columns="target"), table["target"]
X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
print(X.head(3))

# %%
# The declarations: public knowledge of the domain (clinical ranges wide
# enough for any patient), written down before looking at the data.
categories = {"sex": ["female", "male"]}
ranges = {"age": (18, 90), "bmi": (15, 50), "bp": (50, 150), "s1": (50, 350),
          "s2": (20, 300), "s3": (10, 120), "s4": (1, 12), "s5": (3, 7),
          "s6": (50, 150)}
label_range = (0, 400)

# One column per category but the first (the intercept carries it), then
# the numeric columns as they are. The output order fixes the order of the
# per-feature bounds: one-hot columns lie in [0, 1].
encoder = ColumnTransformer(
    [("text", OneHotEncoder(categories=list(categories.values()), drop="first",
                            sparse_output=False),
      list(categories)),
     ("numbers", "passthrough", list(ranges))],
    verbose_feature_names_out=False,
).set_output(transform="pandas")
n_one_hot = sum(len(c) - 1 for c in categories.values())
lower = [0.0] * n_one_hot + [low for low, _ in ranges.values()]
upper = [1.0] * n_one_hot + [high for _, high in ranges.values()]

# %%
# The private fit. Without ``random_state`` the noise is drawn from the
# operating system's secure source; the seed here only makes this page
# reproducible.
model = AdaSSPRegressor(epsilon=3.0, bounds_X=(lower, upper), y_bound=label_range,
                        random_state=0)
pipe = make_pipeline(encoder, model).fit(X_train, y_train)
print(f"DP epsilon: {model.dp_epsilon_:.3g} (at delta {model.dp_delta_:g})")
# computed from the private data: for the curator, not for publication
print(f"per-instance epsilon: median {np.median(model.pdp_losses_):.3g}, "
      f"90% {np.quantile(model.pdp_losses_, 0.9):.3g}")
print(f"test R^2: {pipe.score(X_test, y_test):.3f}")

# %%
# What may be published: the released model, with its feature names, bounds
# and guarantee, as JSON that reads back to the same predictions.
text = model.public_model().to_json()  # or .to_json("model.json")
loaded = PublicLinearModel.from_json(text)
print({name: round(float(c), 3) for name, c in zip(loaded.feature_names_in_, loaded.coef_)})
print("bounds:", loaded.bounds["y_bound"], "guarantee:", loaded.dp_epsilon_, loaded.dp_delta_)
# anyone can put the same declared encoder in front of it
encoded = encoder.transform(X_test)
print("same predictions:", np.array_equal(loaded.predict(encoded), pipe.predict(X_test)))

# %%
# What a fitted scaler would have released on top: statistics of the private
# rows, with no noise at all. Do not put a ``StandardScaler`` (or
# ``MinMaxScaler``, or ``OneHotEncoder(categories="auto")``) before a private
# estimator.
from sklearn.preprocessing import StandardScaler  # noqa: E402

print("a scaler's exact means:", StandardScaler().fit(X_train[list(ranges)]).mean_.round(2))
