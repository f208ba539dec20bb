"""The command line, ``python -m sklearn_pdp`` (entry point in
:mod:`sklearn_pdp.__main__`), by job: its options (``_options``), the data
(``_table``), the release, its report's numbers and its record in a ledger
(``_release``), the report in plain words (``_text``) and the ``ledger``
subcommand with the ledger's summaries (``_ledger_command``)."""
