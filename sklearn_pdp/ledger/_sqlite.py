"""The ledger's SQLite file (:doc:`/ledger`): its schema and version, the error
of a file it cannot read, transactions, and the rows of a charge."""

import hashlib

import numpy as np

from ._charges import (
    release_guarantee,
)


# PRAGMA application_id of a ledger ("PDPL") and the schema this code writes.
APPLICATION_ID = 0x5044504C


SCHEMA_VERSION = 1


_SCHEMA = """
CREATE TABLE releases (
    id INTEGER PRIMARY KEY,
    fingerprint TEXT NOT NULL UNIQUE,
    name TEXT,
    time TEXT NOT NULL,
    mechanism TEXT NOT NULL,
    family TEXT NOT NULL,
    delta REAL NOT NULL,
    dp_epsilon REAL NOT NULL,
    dp_delta REAL NOT NULL,
    n_rows INTEGER NOT NULL,
    n_people INTEGER NOT NULL
);
CREATE TABLE charges (
    release_id INTEGER NOT NULL REFERENCES releases(id),
    person TEXT NOT NULL,
    rows INTEGER NOT NULL,
    value REAL NOT NULL,
    epsilon REAL NOT NULL,
    delta REAL NOT NULL,
    filter_value REAL NOT NULL,
    filter_epsilon REAL NOT NULL,
    filter_delta REAL NOT NULL,
    PRIMARY KEY (release_id, person)
);
CREATE INDEX charges_person ON charges (person);
"""

class LedgerError(RuntimeError):
    """A file that is not a ledger this version of sklearn-pdp can read."""


class _Transaction:
    """``BEGIN IMMEDIATE`` (or ``mode``) ... ``COMMIT``, or ``ROLLBACK`` on
    any exception: a release is recorded whole or not at all, and two
    writers queue on the file's lock (the connection's busy timeout)."""

    def __init__(self, db, mode):
        self.db, self.mode = db, mode

    def __enter__(self):
        self.db.execute(f"BEGIN {self.mode}")
        return self.db

    def __exit__(self, kind, exc, tb):
        self.db.execute("ROLLBACK" if kind is not None else "COMMIT")
        return False


def _check_delta(delta):
    delta = float(delta)
    if not 0 <= delta < 1:
        raise ValueError(f"delta must be in [0, 1); got {delta!r}.")
    return delta


def _charge_rows(release_id, charges):
    """The rows of the ``charges`` table (a generator: executemany inserts them
    inside the release's transaction)."""
    for row in zip(*charges):
        yield (release_id, *row)


def _fingerprint(fitted, profile, keys, absent):
    """SHA-256 of what identifies a release: the mechanism, the released
    coefficients, the guarantee, the per-row profile and the person keys."""
    h = hashlib.sha256()
    model = fitted
    for attr in ("best_estimator_", "estimator_"):
        model = getattr(model, attr, model)
    for part in (profile.mechanism, profile.family, repr(release_guarantee(profile)),
                 repr(profile.delta)):
        h.update(part.encode() + b"\x00")
    for arr in (getattr(model, "coef_", None), getattr(model, "intercept_", None),
                profile.values):
        h.update(np.ascontiguousarray(np.asarray(arr, dtype=np.float64)).tobytes() + b"\x00")
    for group in (keys, absent):
        h.update("\x1f".join(group.tolist()).encode() + b"\x1e")
    return h.hexdigest()
