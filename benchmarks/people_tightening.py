"""Person-level tightening, for doc/people.rst: AdaSSP with
``max_records`` and ``tighten_bounds`` on a synthetic panel.

Run from the repository root::

    python benchmarks/people_tightening.py [PEOPLE] [SEEDS]

Each person has 8 records (their features scattered around their own
centre, their label sharing a person effect), the declared bounds are four
times wider than the data, epsilon 1, delta 1e-6. For each seed, the test
MSE on 1,000 new people of the person-level fit (the bounds' quantiles at
rank sensitivity 8, the model calibrated for 8 records) against the group
path it replaces (the whole tightened fit calibrated per record at
``(epsilon / 8, delta / (8 e^(7 epsilon / 8)))``, the same bounds' draw),
both with the same ``random_state``; it prints the median paired ratio.
"""

import sys
import warnings

import numpy as np

from sklearn_pdp import AdaSSPRegressor

K, D, EPSILON, DELTA = 8, 3, 1.0, 1e-6
BOUNDS = dict(bounds_X=(-8.0, 8.0), y_bound=(-12.0, 12.0), tighten_bounds=True)


def panel(rng, n_people):
    centres = rng.normal(0, 0.5, size=(n_people, D))
    X = np.repeat(centres, K, axis=0) + rng.normal(0, 0.3, size=(n_people * K, D))
    effect = np.repeat(rng.normal(0, 0.3, size=n_people), K)
    y = X @ np.array([1.0, -0.7, 0.4]) + effect + rng.normal(0, 0.3, size=n_people * K)
    return X, y, np.repeat(np.arange(n_people), K)


def main(n_people=2000, n_seeds=20):
    group_delta = DELTA / (K * np.exp((K - 1) * EPSILON / K))
    ratios = []
    for seed in range(n_seeds):
        rng = np.random.default_rng(seed)
        X, y, groups = panel(rng, n_people)
        Xt, yt, _ = panel(rng, 1000)
        person = AdaSSPRegressor(epsilon=EPSILON, delta=DELTA, max_records=K, **BOUNDS,
                                 random_state=seed).fit(X, y, groups=groups)
        group = AdaSSPRegressor(epsilon=EPSILON / K, delta=group_delta, **BOUNDS,
                                random_state=seed).fit(X, y, groups=groups)
        mse = [np.mean((est.predict(Xt) - yt) ** 2) for est in (person, group)]
        ratios.append(mse[0] / mse[1])
    ratios = np.array(ratios)
    print(f"{n_people} people x {K} records, {n_seeds} seeds: test MSE person-level / "
          f"group path, median {np.median(ratios):.4f}, lower in "
          f"{np.sum(ratios < 1)} of {n_seeds}")


if __name__ == "__main__":
    warnings.simplefilter("ignore")  # the released bounds clip tails by design
    main(*(int(a) for a in sys.argv[1:3]))
