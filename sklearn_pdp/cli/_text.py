"""The report in plain words: (label, value) rows laid out in two columns."""

import textwrap

import numpy as np

from ._ledger_command import describe_summary
from ._spread import spread_text

# above this DP epsilon the guarantee protects practically no one
MEANINGLESS_EPSILON = 10.0
# the text report: labels padded to at most this width (a longer one is not
# padded), values wrapped to this many columns
LABEL_WIDTH = 22
TEXT_WIDTH = 100


def _plural(n, word):
    return f"{n} {word}{'' if n == 1 else 's'}"


def _number(value):
    return f"{value:.6g}"


def _text(r):
    """The report in plain words, as (label, value) rows in two blocks."""
    p, c = r["publishable"], r["curator_only"]
    if p["mean_only"]:
        what = (": the private label mean alone" + ("" if p["reason"] else
                ", too little data for slopes at this budget"))
    elif p["zero_slopes"]:
        what = ": every slope is 0 (no signal showed through the noise)"
    else:
        what = ""
    # with a person key a row is a record: the guarantee is per record, and a
    # person with several is protected as a group (public wording: it does not
    # depend on how many records anyone has)
    keyed = p.get("person_key") is not None
    # with --max-records the guarantee covers a whole person (up to k records)
    capped = p.get("max_records")
    rows = [
        ("MAY BE PUBLISHED", "the released model and its guarantee"),
        ("data", f"{p['data']}: {p['n_train']} {'records' if keyed else 'people'} in the "
                 f"training data, {_plural(p['n_features'], 'feature')}"),
        ("model", f"{p['estimator']}, released with differential privacy{what}"),
    ]
    if p["reason"]:
        rows.append(("  why", p["reason"]))
    m = p["model"]
    rows.append(("  intercept", _number(m["intercept"])))
    rows += [(f"  {name}", _number(coef)) for name, coef in zip(m["feature_names"], m["coef"])]
    # with a person key the guarantee's unit is named: a person only with a cap
    unit = f" per {'person' if capped else 'record'}" if keyed else ""
    rows.append(("guarantee", f"DP epsilon {p['dp_epsilon']:.3g} at delta "
                              f"{p['dp_delta']:.2g}{unit}: for every "
                              f"{'record' if keyed and not capped else 'person'}, any "
                              "conclusion drawn from the model is at most "
                              f"e^{p['dp_epsilon']:.3g} times more likely with "
                              f"{'it' if keyed and not capped else 'their data'} than "
                              "without it (except with probability delta)" + (
                                  f"; each person's records beyond their first {capped} "
                                  "were left out" if capped else
                                  "; a person with k records is protected as a group: "
                                  "their epsilon is up to k times this one, their delta "
                                  "larger (group privacy)" if keyed else "")))
    if not p["dp_epsilon"] <= MEANINGLESS_EPSILON:
        rows.append(("WARNING", f"a DP epsilon above {MEANINGLESS_EPSILON:g} protects "
                                "practically no one: lower --epsilon (or give one "
                                "instead of --gamma)"))
    b = p["released_bounds"]
    if b is not None:
        ranges = (f"features in [{', '.join(f'{v:.4g}' for v in b['bounds_X'][0])}] to "
                  f"[{', '.join(f'{v:.4g}' for v in b['bounds_X'][1])}]"
                  if "bounds_X" in b else f"rows of norm at most {b['data_norm']:.4g}")
        rows.append(("bounds", f"tightened privately at epsilon {b['epsilon']:.3g} on a "
                               "public share of the rows, the model fitted on the others: "
                               f"{ranges}; label in [{b['y_bound'][0]:.4g}, "
                               f"{b['y_bound'][1]:.4g}]"))
    rows.append(("noise", r["noise"]))
    if p["published"] is not None and not p["published"]["spent"]:
        rows.append(("published report",
                     "every person's bound is one public number, "
                     f"{p['published']['pdp_epsilon']['median']:.6g}"))
        rows.append(("  why", p["published"]["note"]))
    elif p["published"] is not None:
        q = p["published"]["pdp_epsilon"]
        rows.append(("published report",
                     f"per-instance epsilons{' per record' if keyed else ''}, private "
                     "estimates (noisy when the data "
                     f"are few): median {q['median']:.3g}, 90th percentile "
                     f"{q['q90']:.3g}, 99th {q['q99']:.3g}; the guarantee above "
                     "includes what publishing them costs"))
    if r.get("saved_model"):
        read = [entry for entry in c["read_from_data"] if entry.startswith("categories")]
        rows.append(("saved model", r["saved_model"] + (
            "" if p["data"] != r["saved_model_table"] else
            ": sklearn_pdp.PublicLinearModel.from_json(FILE).predict takes the table's "
            "own columns (text as text) or the encoded ones") + (
                                        f"; it holds the {', '.join(read)}, read from the "
                                        "data (see the note below)" if read else "")))
    q = c["pdp_epsilon"]
    ledger = c.get("ledger")
    # with a person key the numbers are each person's for all their records
    # together, but for a published report, whose numbers stay per record
    crowd = c.get("people")
    several = bool(crowd) and crowd["most_records"] > 1
    per_record = keyed and c.get("pdp_unit") != "person"
    unit = "records" if per_record else "people"
    kind = c["pdp_kind"]
    who = "record" if per_record else "person"
    whose = ", for all their records together" if several and not per_record else ""
    # a person's records together are within the guarantee only when it is per person
    within = ("(a person's records together can lose more than the DP epsilon, "
              "which is per record)" if whose and not capped else "(at most the DP epsilon)")
    # a bound says "at most" (and its shares "at least"), a conditional
    # number the draw it is conditional on
    at, least = ("at most ", "at least ") if kind == "bound" else ("", "")
    given = " given the released bounds" if kind == "conditional" else ""
    what = {
        "exact": f"each {who}'s per-instance epsilon{whose}: the guarantee above for the "
                 "training data as it is" + ("" if per_record or whose else
                                             ", computed from their own record")
                 + f" {within}",
        "conditional": f"each {who}'s per-instance epsilon{whose} given the released bounds: "
                       "the guarantee above for the training data as it is and the bounds "
                       f"drawn for it, which {'its' if per_record else 'their'} "
                       f"record{'s' if whose else ''} cannot influence {within}",
        "bound": f"at most these numbers: an upper bound on each {who}'s per-instance "
                 f"epsilon{whose} (the guarantee above for the training data as it is, "
                 f"{within[1:-1]}); the loss itself may be lower",
    }[kind]
    if several and per_record:
        held = (f"; {crowd['n']} people hold the {p['n_train']} training records, up to "
                f"{crowd['most_records']} each: " + (
                    "a person's loss for all their records is the privacy ledger's charge "
                    "below" if ledger else "a person with several is covered as a group"))
    elif several:
        held = (f"; {crowd['n']} people hold the {p['n_train']} training records, up to "
                f"{crowd['most_records']} each")
    else:
        held = ""

    def share(frac):  # of bounds at most t: a floor on the share of losses
        return f"{least if frac < 1 else ''}{frac:.1%}"

    rows += [
        ("", ""),
        ("FOR THE CURATOR ONLY", "computed from the private data without privacy: do "
                                 "not publish"),
        (f"per {who}", what + held),
        ("  median", f"{at}{q['median']:.3g}{given}"),
        (f"  90% of {unit}", f"at most {q['q90']:.3g}{given}"),
        (f"  99% of {unit}", f"at most {q['q99']:.3g}{given}"),
        ("  most exposed", f"{at}{q['max']:.3g}{given}"),
        ("  a tenth or less", f"{share(c['fraction_below_tenth_of_dp'])} of the {unit} "
                               f"lose at most a tenth of the DP epsilon{given}"),
        # a threshold at a tenth of the DP epsilon repeats the line above
        *((f"  at most {t}", f"{share(frac)} of the {unit}{given}")
          for t, frac in c["fraction_below"].items()
          if not np.isclose(float(t), p["dp_epsilon"] / 10)),
    ]
    record = c.get("pdp_epsilon_per_record")
    if several and record:
        rows.append(("per record", f"{at}median {record['median']:.3g}, most exposed "
                                   f"{at}{record['max']:.3g}{given}: one record alone, the "
                                   "person's other records kept"))
    if c.get("ledger"):
        rows.append(("privacy ledger", f"{c['ledger']['file']}: each person's loss in "
                                       "this release next to their total over every "
                                       "release recorded there"))
        rows += [(f"  {label}", value)
                 for label, value in describe_summary(c["ledger"], kind)]
    if c["test_r2"] is None:
        rows.append(("test R^2", "not evaluated (--test-size 0: every row trains)"))
    else:
        rows.append(("test R^2", f"{c['test_r2']:.4f} private model; without privacy "
                                 f"{c['test_r2_least_squares']:.4f} least squares, "
                                 f"{c['test_r2_mean']:.4f} the training labels' mean "
                                 f"({c['n_test']} held-out rows" + (
                                     "" if c.get("n_test_people") is None else
                                     f" of {c['n_test_people']} people, split by person: "
                                     "none of them trains") + ")"))
    if c.get("spread"):
        rows.append(("one draw", spread_text(c["spread"])))
    elif c["one_draw"]:
        rows.append(("one draw", "this model is one draw of a noisy mechanism: another "
                                 "draw of its noise gives other coefficients (and another "
                                 "test R^2); never refit the private data to pick a better "
                                 "draw (publishing the best of several breaks the "
                                 "guarantee)"))
    crowded = c["fewer_columns"]
    if crowded is not None:
        rows.append(("advice", f"{_plural(p['n_features'], 'column')} for {p['n_train']} "
                               "rows: rows times epsilon per coefficient (slopes and "
                               f"intercept) is {crowded['per_coefficient']:.0f}, under "
                               f"{crowded['below']:g}, and each column adds its share of "
                               "noise: fewer columns would help" + (
                                   f" ({crowded['one_hot']} of them one-hot: each category "
                                   "but the first is a column)" if crowded["one_hot"] else "")
                               + ", as would a larger epsilon or more rows"))
    rows += [("bounds", message) for message in c["bounds_warnings"]]
    rows += [("warning", message) for message in c["warnings"]]
    if c["read_from_data"]:
        rare = any(entry.startswith("categories") for entry in c["read_from_data"])
        rows.append(("note", f"{', '.join(c['read_from_data'])} read from the data: "
                             "that leaks and the numbers above do not cover it" + (
                                 " (a rare category shows that someone has it)"
                                 if rare else "") + "; declare them with --bounds-x (or "
                             "--data-norm), --y-bound and --categories COLUMN=a,b,c"))
    if r.get("plot"):
        rows.append(("plot", r["plot"]))
    return rows


def _layout(rows):
    """The text report's rows as lines: labels in a column, long values
    wrapped under their start (a label too long for the column is not
    padded)."""
    width = max(len(label) for label, _ in rows if len(label) <= LABEL_WIDTH)
    lines = []
    for label, value in rows:
        if not label:
            lines.append("")
            continue
        head = f"{label:<{width}} : "
        lines += textwrap.wrap(
            value, TEXT_WIDTH, initial_indent=head, subsequent_indent=" " * (width + 3),
            break_long_words=False, break_on_hyphens=False) or [head.rstrip()]
    return "\n".join(lines)
