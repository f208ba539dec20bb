"""What one release charges each person it is about, and the totals an
individual filter composes (:doc:`/ledger`).

A charge is one row of the ledger's ``charges`` table: the person, their
number of rows, the family's parameter, the epsilon at the release's delta,
and the same three for the individual filter.
"""

import inspect
import warnings

import numpy as np

from ..accounting import gaussian_epsilon
from ..utils._arrays import compute
from ..report._profile import (
    PrivacyProfile, chain, family_epsilon, gaussian_ratio, laplace_ratio,
)


def privacy_profile_of(fitted, X=None, y=None):
    """The :class:`~sklearn_pdp.report._profile.PrivacyProfile` of a fitted release.

    Its own ``privacy_profile``; for a :class:`PDPReport`, its estimator's
    (only the report's own epsilons when it published, which adds a pure-DP
    summary, unless the publication spent nothing: a tightened fit's,
    ``data_independent``); for anything else with ``pdp_losses_`` (a private search: the
    selection and the refit together, whose loss is not one Gaussian), its
    epsilons at ``pdp_delta_``. ``X``: the loss of adding those records
    instead (``pdp_epsilon``).
    """
    if hasattr(fitted, "privacy_profile"):
        return fitted.privacy_profile(X, y)
    if released(fitted) is not fitted:
        return privacy_profile_of(released(fitted), X, y)
    published = getattr(fitted, "published_", None)
    for attr in ("pdp_losses_", "dp_epsilon_", "dp_delta_"):
        if not hasattr(fitted, attr):
            raise TypeError(
                f"{type(fitted).__name__} is not a fitted release of sklearn-pdp "
                f"(no {attr}).")
    if published is not None:
        if X is not None:
            raise ValueError("absent_X is not supported for a published PDPReport: "
                             "leave it out to charge the release's bound.")
        delta = published.delta
    else:
        delta = fitted.pdp_delta_
    losses = fitted.pdp_losses_ if X is None else fitted.pdp_epsilon(X, y)
    return PrivacyProfile(
        "epsilon_delta", np.asarray(compute(losses)[0], dtype=np.float64), delta=delta,
        guarantee=fitted.dp_epsilon_, guarantee_delta=fitted.dp_delta_,
        n_samples=np.asarray(fitted.pdp_losses_).shape[0], mechanism=type(fitted).__name__,
    )


def person_keys(ids, name):
    """Person keys as a 1-D array of str (``str`` of each Python scalar)."""
    arr = np.asarray(ids, dtype=object) if not isinstance(ids, np.ndarray) else ids
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional; got shape {arr.shape}.")
    values = arr.tolist()
    if any(v is None for v in values):
        raise ValueError(f"{name} must not contain None.")
    return np.array([str(v) for v in values], dtype=str)


def release_guarantee(profile):
    """The release's (epsilon, delta) guarantee for a training row."""
    if profile.family == "epsilon_delta":
        return profile.guarantee, profile.guarantee_delta
    return float(family_epsilon(profile.family, profile.guarantee, profile.delta)), profile.delta


def gaussian_ratio_of(epsilon, delta):
    """The ratio of a Gaussian mechanism calibrated to (epsilon, delta)."""
    return float(gaussian_ratio(epsilon, delta)) if delta > 0 else np.inf


def present_charges(profile, keys, people, counts):
    """Charges of the people in the training rows (one per person)."""
    if not keys.size:
        return [[] for _ in range(8)]
    n = profile.n_samples
    order = np.argsort(keys, kind="stable")
    rows = profile.values[order]
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    if profile.family == "laplace":
        # the label sum: a person's rows move it by the sum of their ratios
        values = np.add.reduceat(rows, starts)
    else:  # a group's first removal: its smallest own loss
        values = np.minimum.reduceat(rows, starts)
    own = profile.own_record and profile.family != "epsilon_delta"
    filter_values = values if own else np.full(people.size, profile.guarantee)
    bounds = {k: profile.step_bound(n - k + 1, n - 1) for k in np.unique(counts) if k > 1}
    extra = [bounds.get(k, 0.0) for k in counts.tolist()]
    # a person with one row: the loss as the release reported it
    losses = np.where(counts == 1, profile.losses[order][starts], np.nan)
    return charge_columns(profile, people, counts, values, filter_values,
                          np.asarray(extra), losses)


def person_charges(fitted, profile, people, counts, charges):
    """The charge columns of :func:`present_charges` with each person's
    value, epsilon and delta those of their joint loss (the fit's
    ``person_losses_``, :doc:`/people`), where ``fitted`` was fitted with
    person keys that group the rows as ``people`` (str keys) and ``counts``
    do; else ``charges`` as they are. Gaussian and Laplace ratios are read
    from exact joint losses only (``person_pdp_kinds_``: a bound at delta
    is no ratio, its person keeps the path through their rows); an
    ``"epsilon_delta"`` release takes each person's pair as it is."""
    fitted = released(fitted)
    ids = getattr(fitted, "person_ids_", None)
    if ids is None or profile.family == "epsilon_delta" and not hasattr(
            fitted, "person_deltas_"):
        return charges
    keys = np.array([str(v) for v in np.asarray(ids, dtype=object).tolist()], dtype=str)
    order = np.argsort(keys, kind="stable")
    if not (np.array_equal(keys[order], people)
            and np.array_equal(np.asarray(fitted._person_rows)[order], counts)):
        return charges
    losses = np.asarray(fitted.person_losses_, dtype=np.float64)[order]
    deltas = np.asarray(fitted.person_deltas_, dtype=np.float64)[order]
    joint = np.ones(people.size, dtype=bool)
    if profile.family != "epsilon_delta":
        joint = (np.asarray(fitted.person_pdp_kinds_)[order] == "exact") & (
            deltas == profile.delta)
    columns = joint_columns(profile, losses[joint], deltas[joint], exact=True)
    merged = [np.asarray(old, dtype=np.float64) for old in charges[2:5]]
    for column, new in zip(merged, columns):
        column[joint] = new
    return charges[:2] + [column.tolist() for column in merged] + charges[5:]


def joint_columns(profile, losses, deltas, exact):
    """The value, epsilon and delta columns of people's joint losses
    (``losses`` at ``deltas``): in a Gaussian or Laplace release, the ratio
    read from an ``exact`` loss at the release's delta, else ``inf`` (a
    bound at delta is no ratio: such a charge composes by its epsilon
    alone, basic composition); an ``"epsilon_delta"`` loss as it is."""
    losses, deltas = (np.asarray(v, dtype=np.float64) for v in (losses, deltas))
    values = losses
    if profile.family != "epsilon_delta":
        values = np.full(losses.size, np.inf)
        if exact and np.all(deltas == profile.delta):
            ratio = gaussian_ratio if profile.family == "gaussian" else laplace_ratio
            values = np.asarray(ratio(losses, profile.delta), dtype=np.float64)
    return [values.tolist(), losses.tolist(), deltas.tolist()]


def released(fitted):
    """The fitted estimator whose losses a release charges: a report's
    estimator unless it published (and spent) a bound of its own."""
    published = getattr(fitted, "published_", None)
    if hasattr(fitted, "estimator_") and (published is None or published.law.data_independent):
        return fitted.estimator_
    return fitted


def charge_columns(profile, people, counts, values, filter_values, extra, losses=None):
    """Charge columns (person, rows, value, epsilon, delta, filter value,
    filter epsilon, filter delta), a group's ``extra`` bound per further row
    composed in: Gaussian ratios add (triangle inequality), a person's
    Laplace ratios are already summed (any record's is at most the
    worst), (epsilon, delta) pairs compose by group privacy. ``losses``:
    the reported epsilons at the release's delta where known (NaN: from
    the value)."""
    family, delta = profile.family, profile.delta
    counts = np.asarray(counts)
    values, filter_values = (np.asarray(v, dtype=np.float64) for v in (values, filter_values))
    if family == "epsilon_delta":
        eps, dlt, f_eps, f_dlt = np.empty((4, counts.size))
        for i, (k, more) in enumerate(zip(counts.tolist(), np.asarray(extra).tolist())):
            steps = [(more, profile.guarantee_delta)] * (k - 1)
            eps[i], dlt[i] = chain((values[i], delta), steps)
            f_eps[i], f_dlt[i] = chain((filter_values[i], profile.guarantee_delta), steps)
        columns = (eps, eps, dlt, f_eps, f_eps, f_dlt)
    else:
        if family == "gaussian":
            values = values + (counts - 1) * extra
            filter_values = filter_values + (counts - 1) * extra
        f_delta = delta if family == "gaussian" else 0.0
        eps = family_epsilon(family, values, delta)
        if losses is not None:
            eps = np.where(np.isnan(losses), eps, losses)
        columns = (values, eps,
                   np.full(counts.size, delta), filter_values,
                   family_epsilon(family, filter_values, f_delta),
                   np.full(counts.size, f_delta))
    return [people.tolist(), counts.tolist(), *(np.asarray(c, float).tolist() for c in columns)]


def join_charges(a, b):
    """Two sets of charge columns as one."""
    return [x + y for x, y in zip(a, b)]


def filter_total(delta, person, family, value, epsilon, own_delta, n):
    """Filter totals: one Gaussian where all of a person's charges are,
    basic composition otherwise."""
    family = np.asarray(family)
    gauss = family == "gaussian"
    all_gauss = np.bincount(person[~gauss], minlength=n) == 0
    ratio = np.sqrt(np.bincount(person, weights=np.where(gauss, value, 0.0) ** 2, minlength=n))
    basic = np.bincount(person, weights=epsilon, minlength=n)
    need = np.bincount(person, weights=own_delta, minlength=n)
    out = np.where(need <= delta * (1 + 1e-12), basic, np.inf)
    g = all_gauss & (ratio > 0)
    if np.any(g) and delta > 0:
        out[g] = np.minimum(out[g], gaussian_epsilon(delta, ratio[g]))
    out[all_gauss & (ratio == 0)] = 0.0
    return out


def absent_charges(fitted, profile, absent, absent_X, absent_y, present):
    """Keys and charge columns of the people declared ``absent`` (not among
    the keys ``present``): the loss of adding their records (``absent_X``,
    ``absent_y``, one row per entry of ``absent``; a key repeated, a person
    with several records, charged their joint loss, :func:`added_jointly`),
    or without them the release's bound for any record."""
    keys = person_keys(absent, "absent")
    out_keys, first, counts = np.unique(keys, return_index=True, return_counts=True)
    if absent_X is None and out_keys.size != keys.size:
        raise ValueError("absent must not repeat a key without absent_X (a person with "
                         "several records is charged for the records given).")
    both = np.intersect1d(out_keys, present)
    if both.size:
        raise ValueError(
            f"absent lists people who are in the training rows: {both[:5].tolist()}")
    n = profile.n_samples
    worst = profile.step_bound(n + 1, n + 1)
    values, losses = np.full(out_keys.size, worst), None
    if absent_X is not None:
        added = privacy_profile_of(fitted, absent_X, absent_y)
        if added.values.size != keys.size:
            raise ValueError("absent_X must have one row per key of absent.")
        values, losses = added.values[first], added.losses[first]
    elif absent_y is not None:
        raise ValueError("absent_y needs absent_X.")
    elif not np.isfinite(worst) and out_keys.size:
        warnings.warn(
            f"{profile.mechanism} has no bound on the loss of adding any record "
            "with this release's noise: the absent people are charged inf. Pass "
            "their records (absent_X) to charge their own losses.",
            UserWarning, stacklevel=4)
    # the filter's charge: any record's bound (a person's added loss
    # depends on the other rows), one more step of it per further record
    extra = [profile.step_bound(n + 2, n + k) for k in counts.tolist()]
    columns = charge_columns(profile, out_keys, counts, values,
                             np.full(out_keys.size, worst), np.asarray(extra), losses)
    several = counts > 1
    if np.any(several):
        rows = several[np.searchsorted(out_keys, keys)]
        joint = joint_columns(profile, *added_jointly(fitted, profile, absent_X, absent_y,
                                                      keys, rows))
        for column, values in zip(columns[2:5], joint):
            for i, value in zip(np.flatnonzero(several).tolist(), values):
                column[i] = value
    return out_keys, columns


def added_jointly(fitted, profile, X, y, keys, rows):
    """The loss of adding each person's ``rows`` of ``X``, ``y`` together
    (their ``keys``; one per person, in the sorted order of the keys), the
    deltas it holds at and whether it is exact: the release's own
    ``pdp_epsilon(X, y, groups=...)`` (:doc:`/people`), exact where its
    ``person_pdp_kind_`` is (a release fitted without person keys: read as
    a bound), ``inf`` where it has no joint loss for several records."""
    if y is None:
        raise ValueError("absent people with several records need their labels "
                         "(absent_y): their joint loss depends on them.")
    est = released(fitted)
    if "groups" not in inspect.signature(est.pdp_epsilon).parameters:
        raise ValueError(
            f"{type(est).__name__} has no loss for adding a person's several records "
            "together (its pdp_epsilon takes no groups): give each absent person one "
            "record.")
    X, y = (v[np.flatnonzero(rows)] for v in (X, y))
    losses = np.asarray(compute(est.pdp_epsilon(X, y, groups=keys[rows]))[0],
                        dtype=np.float64)
    exact = getattr(est, "person_pdp_kind_", None) == "exact"
    return losses, np.full(losses.size, profile.delta), exact
