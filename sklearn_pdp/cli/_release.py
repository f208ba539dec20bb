"""The release: the estimator the options describe, fitted on a training
split; the numbers of its report (publishable, and for the curator only);
its record in the privacy ledger (``--ledger``)."""

import os
import sqlite3
import warnings

import numpy as np
from sklearn.dummy import DummyRegressor
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import train_test_split

from ..domain._scaler import read_from_data_warning
from ..mechanisms.mean._fallback import MEAN_ONLY_RATE
from ..ledger._sqlite import LedgerError
from ..ledger._ledger import PrivacyLedger
from .._registry import REGRESSORS
from ..report._report import PDPReport
from ..exceptions import BoundsWarning, FallbackWarning
from ._ledger_command import _quantiles, record_from_cli, summarise_record
from ._options import EXPERT, DataError
from ._spread import spread
from ._schema import flag_schema
from ._table import _feature_bounds

# rows times epsilon per coefficient below which the advice says that fewer
# columns would help: ten times the rate up to which the estimators release
# the label mean alone (a public 20,000-row table at epsilon 1: AdaSSP's
# test R^2 0.31 with 23 columns, 625 per coefficient; 0.76 with its 6
# numeric columns alone, 2,143)
CROWDED_RATE = 10 * MEAN_ONLY_RATE


def _estimator(args, bounds, one_hot, encoding=None):
    """The unfitted estimator the options describe; on a CSV with
    ``--bounds-x`` (or ``--schema``), declared by its schema."""
    est = REGRESSORS[args.estimator]()
    params = {"epsilon": args.epsilon, "delta": args.delta,
              "random_state": args.random_state, **bounds}
    if args.data_norm is not None:  # replaces the bundled data's bounds_X
        params.pop("bounds_X", None)
    # both given by the user: the estimator's own error says so
    bounds_x = None if args.bounds_x is None else _feature_bounds(args.bounds_x, one_hot)
    for name, value in (("data_norm", args.data_norm), ("y_bound", args.y_bound),
                        ("bounds_X", bounds_x)):
        if value is not None:
            params[name] = value
    if bounds_x is not None and encoding is not None and args.data_norm is None:
        params["schema"] = flag_schema(params.pop("bounds_X"), one_hot, encoding, args)
    for name in EXPERT:
        value = getattr(args, name)
        if value is None:
            continue
        if name not in est.get_params():
            raise DataError(f"--{name} does not apply to --estimator {args.estimator}")
        params[name] = value
    params["tighten_bounds"] = {"yes": True, "auto": "auto", "no": False}[args.tighten_bounds]
    if args.tighten_share is not None:
        params["tighten_share"] = args.tighten_share
    if args.max_records is not None:
        if args.id_column is None:
            raise DataError("--max-records needs --id-column: the cap is on each "
                            "person's records")
        if args.publish_epsilon is not None:
            raise DataError("--max-records with --publish-epsilon: a published report "
                            "bounds each record's loss from that record alone, and what "
                            "it costs a person with several records is not derived; "
                            "leave out one of the two")
        params["max_records"] = args.max_records
    if args.gamma is not None:  # a raw noise level instead of a budget
        if args.alpha is None:
            raise DataError("--gamma needs --alpha: without a budget (--gamma replaces "
                            "--epsilon) the ridge strength is not chosen for you")
        params["epsilon"] = None
    return est.set_params(**params)


def _split(args, X, y, ids=None):
    """Training and test rows, and their indices; every row trains with
    ``--test-size 0``. With ``--id-column`` (``ids``), by person
    (:func:`split_people`)."""
    if not 0 <= args.test_size < 1:
        raise DataError(f"--test-size must be in [0, 1), got {args.test_size:g}")
    rows = np.arange(len(y))
    if args.test_size == 0:
        return X, None, y, None, rows, rows[:0]
    try:
        if args.id_column is None:  # the indices do not change the split
            return train_test_split(X, y, rows, test_size=args.test_size,
                                    random_state=args.random_state)
        train, test = split_people(ids, args.test_size, args.random_state)
    except ValueError as exc:
        raise DataError(f"--test-size {args.test_size:g}: {exc}") from None
    return X[train], X[test], y[train], y[test], train, test


def split_people(ids, test_size, random_state):
    """Training and held-out rows, every person wholly in one: the people,
    in the order of their first record, split as ``train_test_split``
    splits rows (``test_size`` the share of people held out, rounded up, as
    scikit-learn's ``GroupShuffleSplit``), each person's rows in the order
    given, so that a table of one record per person is split as without
    person keys."""
    _, first, codes = np.unique(ids, return_index=True, return_inverse=True)
    # person p (sorted keys) is the rank[p]-th to appear in the table
    rank = np.argsort(np.argsort(first))
    train, test = train_test_split(np.arange(first.size), test_size=test_size,
                                   random_state=random_state)
    drawn = np.empty(first.size, dtype=np.intp)  # each person's place in the draw
    drawn[np.r_[train, test]] = np.arange(first.size)
    order = np.lexsort((np.arange(codes.size), drawn[rank[codes]]))
    held = np.isin(rank[codes[order]], test)
    return order[~held], order[held]


def _messages(caught, category):
    return [str(w.message) for w in caught if issubclass(w.category, category)]


def _report(args, X, y, name, bounds, encoding, ids=None):
    """Fit the release on a training split; the numbers of the report, in a
    publishable block and a block for the curator only. With ``--id-column``
    (``ids``), the fit knows whose records they are: the curator's numbers
    are each person's joint loss, which the ledger charges; with
    ``--publish-epsilon`` they stay per record (a published report's
    accounting per person is not derived)."""
    names, one_hot, categories_read, model_encoding = encoding
    est = _estimator(args, bounds, one_hot, model_encoding)
    X_train, X_test, y_train, y_test, train, test = _split(args, X, y, ids)
    # delta is the estimator's (set above): its own error names a bad value
    report = PDPReport(est, thresholds=args.thresholds,
                       publish_epsilon=args.publish_epsilon, random_state=args.random_state)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            report.fit(X_train, y_train, groups=None if args.id_column is None
                       or args.publish_epsilon is not None else ids[train])
        # invalid parameters, or an estimator that cannot publish its report
        except (ValueError, TypeError, NotImplementedError) as exc:
            raise DataError(str(exc)) from None
    fitted = report.estimator_
    public = fitted.public_model().set_params(feature_names=names,
                                              encoding=model_encoding)
    s = report.summary_
    people = s["unit"] == "person"
    eps = np.asarray(report.person_losses_ if people else report.pdp_losses_)
    published, note = None, None
    if args.publish_epsilon is not None:
        p = report.published_.summary
        # a publication that spent nothing (tightened bounds) says why once, here
        law = report.published_.law
        note = next((m for m in _messages(caught, FallbackWarning)
                     if law.data_independent and law.reason in m), None)
        published = {
            "beta": report.published_.beta,
            "pdp_epsilon": {key: p[key] for key in ("mean", "median", "q90", "q99")},
            "fraction_below": {f"{t:g}": frac for t, frac in p["below"].items()},
            "spent": not law.data_independent,
            "note": note,
        }
    evaluation = {"test_r2": None, "test_r2_least_squares": None, "test_r2_mean": None,
                  "n_test": 0, "n_test_people": None}
    if X_test is not None:
        evaluation = {
            "n_test": int(X_test.shape[0]),
            # with --id-column the split is by person: none of them trains
            "n_test_people": None if args.id_column is None else int(
                np.unique(ids[test]).size),
            "test_r2": float(fitted.score(X_test, y_test)),
            "test_r2_least_squares": float(
                LinearRegression().fit(X_train, y_train).score(X_test, y_test)),
            # the baseline a private model should not fall below: below 0 by
            # the held-out rows' own mean differing from the training rows'
            "test_r2_mean": float(
                DummyRegressor().fit(X_train, y_train).score(X_test, y_test)),
        }
    bounds_read = list(fitted.bounds_from_data_)
    # their warnings say the same: reported once, under read_from_data
    said = {read_from_data_warning(name) for name in bounds_read}
    mean_only = bool(getattr(fitted, "mean_only_", False))
    reason = getattr(fitted, "mean_only_reason_", None) or " ".join(
        m for m in _messages(caught, FallbackWarning) if m != note) or None
    publishable = {
        "data": name,
        "n_train": int(X_train.shape[0]),
        # with --id-column a row is a record and a person may have several
        "person_key": args.id_column,
        "max_records": args.max_records,
        "n_features": int(X.shape[1]),
        "estimator": REGRESSORS[args.estimator].__name__,
        "model": {"feature_names": names, "coef": public.coef_.tolist(),
                  "intercept": public.intercept_},
        "mean_only": mean_only,
        "zero_slopes": bool(not mean_only and not np.any(public.coef_)),
        "reason": reason,
        "dp_epsilon": float(s["dp_epsilon"]),
        "dp_delta": float(s["dp_delta"]),
        # whom the guarantee covers: a person only with --max-records
        "dp_unit": s["dp_unit"],
        "published": published,
        "released_bounds": _released_bounds(report.estimator_),
    }
    one_draw = args.gamma is not None or bool(np.isfinite(args.epsilon))
    curator = {
        # what kind of number each per-instance epsilon below is
        "pdp_kind": pdp_kind(report),
        "pdp_delta": s["delta"],
        # with --id-column: each person's loss for all their records together
        "pdp_unit": s["unit"],
        "pdp_epsilon": {key: s[key] for key in ("mean", "median", "q90", "q99", "max")},
        "people": None if ids is None or args.id_column is None else _people(ids[train]),
        "pdp_epsilon_per_record": _quantiles(report.pdp_losses_) if people else None,
        "fraction_below": {f"{t:g}": frac for t, frac in s["below"].items()},
        "fraction_below_tenth_of_dp": float(np.mean(eps <= s["dp_epsilon"] / 10)),
        **evaluation,
        # the model is one draw of the mechanism's noise (not at epsilon=inf)
        "one_draw": one_draw,
        "fewer_columns": _crowded(args, X_train.shape[0], one_hot),
        # where another draw could have landed: measured on public data at the
        # release's public n, d and epsilon, never by refitting these rows
        "spread": spread(args.estimator, int(X_train.shape[0]), int(X.shape[1]),
                         est.get_params()["epsilon"], mean_only) if one_draw else None,
        "ledger": None,  # with --ledger: this release next to the people's totals
        "read_from_data": bounds_read + [f"categories of {c!r}" for c in categories_read],
        "bounds_warnings": _messages(caught, BoundsWarning),
        # anything else the fit said (never swallowed)
        "warnings": [str(w.message) for w in caught if not (
            issubclass(w.category, (BoundsWarning, FallbackWarning))
            or str(w.message) in said)],
    }
    noise = ("secure (256 bits from the operating system)" if args.random_state is None
             else f"seeded with --random-state {args.random_state}: predictable noise, "
             "for experiments only, not for a release")
    return report, public, {"publishable": publishable, "curator_only": curator,
                            "noise": noise}, (train, test)


def _people(keys):
    """How the training records group into people (the curator's: a count
    of records per person is private)."""
    counts = np.unique(keys, return_counts=True)[1]
    return {"n": int(counts.size), "most_records": int(counts.max())}


def _crowded(args, n_samples, one_hot):
    """Where a column could go and rows times epsilon per coefficient
    (slopes and intercept) is below CROWDED_RATE, both numbers and the count
    of one-hot columns; else None. A public rule of thumb: n, d and the
    budget only."""
    n_features = one_hot.size
    if args.gamma is not None or n_features < 2 or not np.isfinite(args.epsilon):
        return None
    per_coefficient = n_samples * args.epsilon / (n_features + 1)
    if per_coefficient >= CROWDED_RATE:
        return None
    return {"per_coefficient": float(per_coefficient), "below": CROWDED_RATE,
            "one_hot": int(np.sum(one_hot))}


def pdp_kind(report):
    """What kind of number a fitted report's per-instance epsilons are:
    ``"exact"``, ``"conditional"`` (exact given released quantities the row
    cannot influence) or ``"bound"`` (a valid upper bound)."""
    return report.summary_["pdp_kind"]


def _check_ledger(args):
    """The ledger options, checked before the fit (a release that cannot be
    recorded is not made)."""
    if args.ledger is None:
        return
    if args.csv is not None and args.id_column is None:
        raise DataError("--ledger needs --id-column with a CSV file: the column of each "
                        "row's person key")
    if args.publish_epsilon is not None and args.test_size > 0:
        raise DataError("--ledger with --publish-epsilon needs --test-size 0: what a "
                        "published report reveals about a held-out person is not known")
    if not os.path.exists(args.ledger):
        folder = os.path.dirname(os.path.abspath(args.ledger))
        if not os.path.isdir(folder):
            raise DataError(f"cannot create the ledger {args.ledger}: no folder {folder}")
        return
    try:
        PrivacyLedger(args.ledger).close()
    except (LedgerError, sqlite3.Error) as exc:
        raise DataError(f"cannot open the ledger {args.ledger}: {exc}") from None


def _record(args, report, X, y, ids, split, name):
    """Record the release in the ledger: the training rows' people charged
    their losses, the held-out people (not in the release: the split is by
    person) the loss of adding all their records together; its summary,
    for the curator."""
    train, test = split
    train_ids = ids[train]
    absent = {} if not test.size else {"absent": ids[test], "absent_X": X[test],
                                       "absent_y": y[test]}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = record_from_cli(args.ledger, report, train_ids,
                                     name=f"{REGRESSORS[args.estimator].__name__} on {name}",
                                     total_delta="sum", **absent)
        except (LedgerError, sqlite3.Error) as exc:
            raise DataError(f"cannot record in the ledger {args.ledger}: {exc}") from None
    people = _people(train_ids)
    return {"file": args.ledger, **summarise_record(result),
            "training_people": people["n"], "most_records": people["most_records"]}, [
        str(w.message) for w in caught]


def _released_bounds(est):
    """The privately tightened bounds of a fit, or None."""
    if not hasattr(est, "bounds_release_"):
        return None
    out = {"epsilon": float(est.bounds_epsilon_), "y_bound": list(est.y_bound_)}
    if est.bounds_X_ is not None:
        out["bounds_X"] = [b.tolist() for b in est.bounds_X_]
    else:
        out["data_norm"] = est.data_norm_
    return out
