"""``python -m sklearn_pdp ledger LEDGER.sqlite``: summarise a privacy ledger.

Prints the recorded releases and the distribution of every person's total
loss over them (:doc:`/ledger`); ``--json`` prints the same as JSON. The text
shows every epsilon rounded up to 3 significant digits (``--json`` keeps the
values as computed, to the last bit of the float).
"""

import argparse
import json
import os

import numpy as np

from ..mechanisms.mean._fallback import ceil_text as _ceil
from ..ledger._charges import person_keys, privacy_profile_of
from ..utils._dask import quantiles
from ..ledger._sqlite import LedgerError
from ..ledger._ledger import PrivacyLedger
from ..report._public import _plain

__all__ = ["describe_record", "describe_summary", "main", "record_from_cli",
           "summarise_record", "summary"]

_QUANTILES = {"median": 0.5, "q90": 0.9, "q99": 0.99, "max": 1.0}
# relative excess of an epsilon over a round number that is the float error
# of its accounting (a budget of 1 met as 1.0000000000000016), not a loss
_FLOAT_NOISE = 1e-9


def shown(epsilon, digits=3):
    """An epsilon for the text: rounded up to ``digits`` significant digits
    (never below the value, up to float noise), so 1.0000000000000016 shows
    as 1 and 0.8749997 as 0.875."""
    return _ceil(float(epsilon) * (1.0 - _FLOAT_NOISE), digits)


def _parser():
    parser = argparse.ArgumentParser(
        prog="python -m sklearn_pdp ledger",
        description="Summarise a per-person privacy ledger: its releases and the "
                    "distribution of each person's total privacy loss.")
    parser.add_argument("ledger", help="the SQLite file of the ledger")
    parser.add_argument("--delta", type=float, default=None,
                        help="delta of the totals (default: the sum of the releases' "
                             "deltas, at which every person's total is finite)")
    parser.add_argument("--json", action="store_true",
                        help="print JSON, with every number as computed (the text "
                             "rounds epsilons up to 3 significant digits); strict: an "
                             'infinite epsilon is the string "inf"')
    return parser


def summary(ledger, delta=None):
    """The summary that the command prints, as a dict.

    Parameters
    ----------
    ledger : PrivacyLedger
        An open ledger.
    delta : float, default=None
        The delta of the totals; None: the sum of the releases' deltas.

    Returns
    -------
    summary : dict
        ``releases`` (list of dict), ``people``, ``delta``, ``totals``
        (quantiles of the people's totals: ``median``, ``q90``, ``q99``,
        ``max``; None without people) and ``dp_sum``, the sum of the
        releases' guarantees (what basic composition of the worst cases
        charges, at the sum of their deltas).
    """
    releases = ledger.releases()
    if hasattr(releases, "to_dict"):
        releases = releases.to_dict("records")
    releases = [{k: (v.item() if hasattr(v, "item") else v) for k, v in r.items()}
                for r in releases]
    if delta is None:
        delta = float(sum(r["delta"] for r in releases))
    people = ledger.people()
    totals = ledger.epsilon(people, delta) if people.size else np.zeros(0)
    return {
        "releases": releases,
        "people": int(people.size),
        "delta": delta,
        "totals": _quantiles(totals),
        "dp_sum": float(sum(r["dp_epsilon"] for r in releases)),
        "dp_delta_sum": float(sum(r["dp_delta"] for r in releases)),
    }


def _quantiles(values):
    """Quantiles of per-person epsilons (interpolated as the per-instance
    report's); a quantile next to an ``inf`` is ``inf``, not the NaN of
    interpolating between two of them. None without values."""
    values = np.asarray(values, dtype=np.float64)
    if not values.size:
        return None
    found = quantiles(values, list(_QUANTILES.values()))
    return {k: float(np.inf if np.isnan(v) else v) for k, v in zip(_QUANTILES, found)}


def strict_json(result):
    """``result`` as strict JSON text, indented: an infinite epsilon (no
    guarantee) is the string ``"inf"``, as in a saved model, never the
    ``Infinity`` that strict JSON parsers refuse; ``float()`` reads it back."""
    return json.dumps(_plain(result), indent=2, allow_nan=False)


def record_from_cli(ledger_path, fitted, ids, name=None, *, absent=None, absent_X=None,
                    absent_y=None, total_delta=None):
    """Record a release made by the command line into the ledger at
    ``ledger_path``.

    Parameters
    ----------
    ledger_path : str or path-like
        SQLite file of the ledger (created if missing).
    fitted : estimator or PDPReport
        The fitted release.
    ids : array-like of shape (n_samples,)
        The person key of each training row.
    name : str, default=None
        The release's label.
    absent, absent_X, absent_y : array-like, default=None
        People not in the training rows, charged the loss of adding their
        records (:meth:`PrivacyLedger.record`): with ``absent_X``, one key
        per row, a person with several rows charged for all of them together.
    total_delta : float or "sum", default=None
        The delta of the totals: None, the release's; ``"sum"``, the sum of
        the deltas of every release in the ledger (as
        ``python -m sklearn_pdp ledger`` reports them).

    Returns
    -------
    result : dict
        ``release_id``; ``delta``, the release's; ``release`` and
        ``total``: each training row's loss in this release (at ``delta``)
        and its person's total over the ledger at ``total_delta`` (so with
        None a person whose other releases need a larger delta shows
        ``inf``); ``release_people``: each training person's charge in this
        release, for all their rows, at delta ``release_people_delta`` (the
        release's, larger by group privacy for a person with several rows
        of an (epsilon, delta) release), and ``total_people`` their totals;
        ``total_delta``; ``people`` and ``releases``, how many the
        ledger holds; with ``absent``, ``absent_release`` and
        ``absent_total``, the absent people's charge in this release and
        total (each person once, in the sorted order of their keys), and
        ``absent_records``, their numbers of records.
    """
    profile = privacy_profile_of(fitted)
    with PrivacyLedger(ledger_path) as ledger:
        release_id = ledger._record(fitted, profile, ids, name, absent, absent_X, absent_y)
        deltas = [delta for (delta,) in ledger._db.execute("SELECT delta FROM releases")]
        if total_delta is None:
            total_delta = profile.delta
        elif isinstance(total_delta, str) and total_delta == "sum":
            total_delta = float(sum(deltas))
        result = {"release_id": release_id, "delta": profile.delta,
                  "release": profile.losses, "total_delta": total_delta,
                  "total": ledger.epsilon(ids, total_delta),
                  "people": int(ledger.people().size), "releases": len(deltas)}
        # each training person's charge, for all their rows (a group's: its
        # delta can exceed the release's, by group privacy)
        people = np.unique(person_keys(ids, "ids"))
        charge, charge_delta = ledger.charges(release_id, people)
        result["release_people"], result["release_people_delta"] = charge, charge_delta.max()
        result["total_people"] = ledger.epsilon(people, total_delta)
        if absent is not None:
            keys, counts = np.unique(person_keys(absent, "absent"), return_counts=True)
            result["absent_records"] = counts
            result["absent_release"] = ledger.charges(release_id, keys)[0]
            result["absent_total"] = ledger.epsilon(keys, total_delta)
        return result


def summarise_record(result):
    """What :func:`record_from_cli` returned, as quantiles (JSON-ready).

    Parameters
    ----------
    result : dict
        The value of :func:`record_from_cli`.

    Returns
    -------
    summary : dict
        ``release_id``, ``people`` and ``releases`` (in the ledger),
        ``delta`` and ``release`` (quantiles of the training rows' losses in
        this release), ``release_people`` and ``release_people_delta`` (of
        the training people's charges in it, for all their rows),
        ``total_delta`` and ``total`` (quantiles of their people's totals,
        each person once); with absent people, ``absent``: their number,
        ``most_records`` (of one of them), ``infinite`` (how many are
        charged ``inf``) and the same two quantile dicts.
    """
    summary = {
        "release_id": int(result["release_id"]),
        "people": int(result.get("people", np.unique(result["total"]).size)),
        "releases": result.get("releases"),
        "delta": float(result["delta"]),
        "release": _quantiles(result["release"]),
        "release_people": _quantiles(result["release_people"]),
        "release_people_delta": float(result["release_people_delta"]),
        "total_delta": float(result.get("total_delta", result["delta"])),
        # over people (a person with several rows counted once)
        "total": _quantiles(result["total_people"]),
        "absent": None,
    }
    if result.get("absent_release") is not None:
        charged = np.asarray(result["absent_release"], dtype=np.float64)
        summary["absent"] = {"people": int(charged.size),
                             "most_records": int(np.max(result.get("absent_records", 1))),
                             "infinite": int(np.sum(np.isposinf(charged))),
                             "release": _quantiles(charged),
                             "total": _quantiles(result["absent_total"])}
    return summary


# how the ledger's lines qualify a release's losses of each kind
_KIND_WORDS = {"exact": "", "conditional": ", given the released bounds",
               "bound": ", upper bounds"}


def describe_summary(summary, kind="exact"):
    """Text lines of :func:`summarise_record`'s value.

    Parameters
    ----------
    summary : dict
        The value of :func:`summarise_record`.
    kind : {"exact", "conditional", "bound"}, default="exact"
        What kind of number the release's losses are (a report's
        ``pdp_kind``, per person with person keys): the lines of this
        release's losses and of the held-out people's say so.

    Returns
    -------
    lines : list of (str, str)
        Label and value, for the command's report.
    """
    def spread(values):
        if values is None:
            return "nobody"
        return ", ".join(f"{k} {shown(v)}" for k, v in values.items())

    lines = [("ledger release", str(summary["release_id"]))]
    if summary["releases"] is not None:
        n = summary["releases"]
        lines.append(("ledger", f"{summary['people']} people, {n} "
                                f"release{'' if n == 1 else 's'} so far"))
    grouped = summary.get("most_records", 1) > 1
    lines += [
        (f"this release's loss {'per record ' if grouped else ''}(delta = "
         f"{summary['delta']:.2g}{_KIND_WORDS[kind]})", spread(summary["release"])),
        *([("each person's charge in it", "for all their records together, at delta "
            f"{summary['release_people_delta']:.2g}: " + spread(summary["release_people"]))]
          if grouped else []),
        ("each person's total over the ledger",
         f"at delta = {summary['total_delta']:.2g}: {spread(summary['total'])}"),
    ]
    absent = summary["absent"]
    if absent is not None:
        several = absent.get("most_records", 1) > 1
        infinite = absent.get("infinite", 0)
        how = ("not in the training rows: charged the loss of adding their record"
               if not several else
               f"not in the training rows, up to {absent['most_records']} records each: "
               "each charged the loss of adding all their records together"
               f"{_KIND_WORDS[kind]}")
        if infinite:  # said, never left for a quantile to show
            how += (f"; {infinite} of them inf: this release has no finite loss for "
                    "adding their records")
        lines += [
            (f"held out ({absent['people']} people)", how),
            ("  their loss in this release", spread(absent["release"])),
            ("  their total over the ledger", spread(absent["total"])),
        ]
    return lines


def describe_record(result):
    """Text lines describing what :func:`record_from_cli` returned: the
    release's per-row losses next to the people's totals (quantiles).

    Parameters
    ----------
    result : dict
        The value of :func:`record_from_cli`.

    Returns
    -------
    lines : list of (str, str)
        Label and value, for the command's report.
    """
    return describe_summary(summarise_record(result))


def main(argv=None):
    """Run the command on ``argv`` (the arguments after ``ledger``)."""
    parser = _parser()
    args = parser.parse_args(argv)
    if not os.path.exists(args.ledger):
        parser.exit(2, f"{parser.prog}: error: no ledger at {args.ledger}\n")
    if args.delta is not None and not 0 <= args.delta < 1:
        parser.error(f"--delta must be in [0, 1); got {args.delta}")
    try:
        with PrivacyLedger(args.ledger) as ledger:
            result = summary(ledger, args.delta)
    except LedgerError as exc:
        parser.exit(2, f"{parser.prog}: error: {exc}\n")
    if args.json:
        print(strict_json(result))
        return 0
    print(f"ledger   : {args.ledger}")
    print(f"releases : {len(result['releases'])}")
    for r in result["releases"]:
        # the command's names already say the mechanism; the family is in --json
        name = r["name"] or r["mechanism"]
        if r["mechanism"] not in name:
            name += f" ({r['mechanism']})"
        print(f"  {r['id']:>4}  {r['time'].replace('T', ' ').replace('+00:00', ' UTC')}  "
              f"{name}: {r['n_rows']} rows, {r['n_people']} people, "
              f"({shown(r['dp_epsilon'])}, {r['dp_delta']:.2g})-DP")
    print(f"people   : {result['people']}")
    if result["totals"] is not None:
        t = result["totals"]
        print(f"total epsilon per person at delta = {result['delta']:.3g}: "
              + ", ".join(f"{k} {shown(v)}" for k, v in t.items()))
        # a guarantee is per record: a person with several records in a
        # release is charged as a group, and their total can exceed the sum
        grouped = any(r["n_rows"] > r["n_people"] for r in result["releases"])
        print(f"sum of the releases' guarantees: epsilon = {shown(result['dp_sum'])} at "
              f"delta = {result['dp_delta_sum']:.3g}" + (
                  " per record (a person with several records in a release is charged "
                  "as a group, beyond it)" if grouped else ""))
    return 0
