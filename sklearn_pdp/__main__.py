"""Command-line release with a per-instance privacy report.

``python -m sklearn_pdp`` fits a private regressor at a privacy budget
(epsilon = 1, delta = 1e-6 by default) on a bundled public table (the hourly
weather at New York City's airports, ``sklearn_pdp.datasets.load_nyc_weather``;
``--dataset diabetes`` for scikit-learn's diabetes data) and explains, in plain words, what may be published (the released model and
its guarantee) and what is for the curator's eyes only (the per-instance
epsilons of the people in it and the test R^2, computed from the private data
without privacy). ``python -m sklearn_pdp data.csv --target y`` does the same
for a table of one's own (text columns are one-hot encoded with the categories
declared by ``--categories``); ``--save-model FILE`` writes the released model
as JSON (read it back with ``sklearn_pdp.PublicLinearModel.from_json``),
``--json`` prints a machine-readable report instead, ``--plot FILE`` writes
the report's plot as a PNG. ``--id-column ID`` names the CSV's person keys:
the curator's numbers are then each person's loss for all their records
together (:doc:`/people`; ``--max-records K`` makes the guarantee per
person). ``--ledger FILE --id-column ID`` records the release in a
per-person privacy ledger (:doc:`/ledger`) and reports each person's total
over every release recorded in it; ``python -m sklearn_pdp ledger FILE``
summarises a ledger.
"""

import os
import re
import sys
import warnings

from .cli._ledger_command import strict_json
from .cli._options import DataError, _parser
from .cli._release import _check_ledger, _record, _report
from .cli._schema import apply_schema_file
from .cli._table import _load
from .cli._text import _layout, _text

PLOT_HINT = 'pip install matplotlib (or, from a checkout, pip install ".[plot]")'


def main(argv=None):
    try:
        code = _command(argv)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return code
    except BrokenPipeError:  # the reader (such as head) stopped early
        # Python flushes stdout again at exit: let that flush go nowhere
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def _command(argv):
    if (sys.argv[1:] if argv is None else list(argv))[:1] == ["ledger"]:
        from .cli._ledger_command import main as ledger_main
        return ledger_main((sys.argv[1:] if argv is None else list(argv))[1:])
    parser = _parser()
    # a value such as -20,40 is not an option (none starts with a digit):
    # argparse would take it for one
    argv = [" " + a if re.match(r"-\.?\d", a) else a
            for a in (sys.argv[1:] if argv is None else argv)]
    args = parser.parse_args(argv)
    # every warning is said once in the report's words, never as Python's
    # file:line lines (the fit's are sorted by _report, the ledger's by _record)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            return _main(args, caught)
        except DataError as exc:  # one line: the usage block would hide it
            warned = "".join(f"{parser.prog}: warning: {m}\n" for m in _unsaid(caught, []))
            parser.exit(2, f"{warned}{parser.prog}: error: {exc}\n")


def _unsaid(caught, said):
    """The messages of the caught warnings, once each, but those in ``said``."""
    return [m for m in dict.fromkeys(str(w.message) for w in caught) if m not in said]


def _main(args, caught):
    _check_ledger(args)
    for option, path in (("--save-model", args.save_model), ("--plot", args.plot)):
        folder = os.path.dirname(os.path.abspath(path)) if path is not None else None
        if folder is not None and not os.path.isdir(folder):
            # before the fit: a release recorded in a ledger but never saved
            raise DataError(f"cannot write {path} ({option}): no folder {folder}")
    apply_schema_file(args)
    X, y, name, bounds, encoding, ids = _load(args)
    if args.plot is not None:
        try:  # fail before the fit, not after
            import matplotlib
        except ImportError:
            raise DataError(f"--plot needs matplotlib: {PLOT_HINT}") from None
        matplotlib.use("Agg")
    report, public, result, split = _report(args, X, y, name, bounds, encoding, ids)
    if args.ledger is not None:  # before anything is written: a release not recorded
        curator = result["curator_only"]
        curator["ledger"], messages = _record(args, report, X, y, ids, split, name)
        curator["warnings"] += messages
    if args.save_model is not None:
        try:
            public.to_json(args.save_model)
        except OSError as exc:
            raise DataError(f"cannot write {args.save_model}: {exc.strerror}") from None
        result["saved_model"] = args.save_model
        # the table whose raw columns the saved model encodes (None: the diabetes data)
        result["saved_model_table"] = None if public.encoding is None else name
    if args.plot is not None:
        axes = report.plot(leverage=True)
        try:
            axes[0].figure.savefig(args.plot, format="png")
        except OSError as exc:
            raise DataError(f"cannot write {args.plot}: {exc.strerror}") from None
        result["plot"] = args.plot
    curator = result["curator_only"]
    curator["warnings"] += _unsaid(caught, curator["warnings"] + curator["bounds_warnings"])
    if args.json:
        print(strict_json(result))
        return 0
    print(_layout(_text(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
