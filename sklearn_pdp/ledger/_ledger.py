"""A per-person privacy ledger across releases, kept in SQLite (:doc:`/ledger`).

Each recorded release charges every person it is about one privacy-loss
profile (:mod:`sklearn_pdp.report._profile`): a training row the loss of removing
it, a person declared absent the loss of adding their record (or, without
it, the release's bound for any record). A person's total is the
composition of their charges (:func:`~sklearn_pdp.report._profile.compose`).
One release is one transaction: a process killed in the middle leaves the
ledger as it was.
"""

import datetime
import sqlite3
import warnings

import numpy as np

from ._charges import (
    absent_charges,
    filter_total,
    gaussian_ratio_of,
    join_charges,
    person_charges,
    person_keys,
    present_charges,
    privacy_profile_of,
    release_guarantee,
)
from ..report._profile import compose
from ._sqlite import (
    APPLICATION_ID, LedgerError, SCHEMA_VERSION, _SCHEMA, _Transaction, _charge_rows, _check_delta,
    _fingerprint,
)


class PrivacyLedger:
    """Each person's total privacy loss over every recorded release.

    Records releases (fitted estimators, :class:`PDPReport`,
    :class:`~sklearn_pdp.model_selection.PrivateGridSearchCV`) with one
    person key per training row, and composes each person's per-instance
    losses over all of them: exactly where all of a person's releases are
    Gaussian mechanisms (ratios add in squares), otherwise by a bound never
    above basic composition of the per-release losses (see Notes and
    :doc:`/ledger`).

    Parameters
    ----------
    path : str or path-like, default=None
        SQLite file of the ledger (created if missing); None keeps it in
        memory for the life of the object.
    timeout : float, default=30.0
        Seconds to wait for another process that is writing the file.

    Notes
    -----
    Neighbouring data sets differ by adding or removing one record (the
    release's public size as fitted). A training row is charged the loss of
    removing it (``pdp_losses_``); a person listed in ``absent`` the loss of
    adding their records when they are given (``absent_X``), otherwise the
    largest loss of adding any record of the domain with that release's
    noise (``inf`` where the mechanism has no such bound). A person with
    several rows in one release is charged as a group (see :meth:`record`).

    A total is the loss of the releases as they were made, each on its own
    data set. Where the releases were chosen adaptively (after looking at
    earlier ones), per-instance totals are not a guarantee: use the
    individual filter :meth:`admit`, which charges bounds fixed by a
    person's own record and public quantities.

    Ids are stored as text, ``str`` of each id as a Python scalar: ``3``,
    ``np.int64(3)`` and ``"3"`` are one person, ``3.0`` another.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_pdp import AdaSSPRegressor, PrivacyLedger
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-1, 1, size=(3000, 3)) / np.sqrt(3)
    >>> y = np.clip(X @ [1.0, -0.5, 0.2] + 0.1 * rng.randn(3000), -1, 1)
    >>> ids = np.arange(3000)
    >>> ledger = PrivacyLedger()
    >>> for seed, rows in enumerate([slice(0, 2000), slice(1000, 3000)]):
    ...     est = AdaSSPRegressor(epsilon=0.5, data_norm=1.0, y_bound=1.0,
    ...                           random_state=seed).fit(X[rows], y[rows])
    ...     _ = ledger.record(est, ids[rows], name=f"release {seed}")
    >>> total = ledger.epsilon(ids, delta=1e-6)
    >>> bool(np.all(total < 1.0))  # the sum of the two guarantees
    True
    >>> len(ledger.releases())
    2
    """

    def __init__(self, path=None, timeout=30.0):
        self.path = ":memory:" if path is None else str(path)
        self._db = sqlite3.connect(self.path, timeout=timeout, isolation_level=None)
        self._db.execute("PRAGMA foreign_keys = ON")
        self._open()

    # -- the file -------------------------------------------------------------

    def _open(self):
        """Create the schema in an empty file, or check the file's version
        (read only: a ledger file may be read-only)."""
        try:
            app, version, tables = self._header()
            if app == 0 and version == 0 and tables == 0:
                with self._transaction():  # another process may be creating it
                    app, version, tables = self._header()
                    if app == 0 and version == 0 and tables == 0:
                        for statement in _SCHEMA.split(";"):
                            if statement.strip():
                                self._db.execute(statement)
                        self._db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                        self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                        return
        except sqlite3.DatabaseError as exc:
            self.close()
            raise LedgerError(f"{self.path} is not a SQLite database: {exc}") from None
        if app != APPLICATION_ID:
            self.close()
            raise LedgerError(f"{self.path} is not a sklearn-pdp privacy ledger.")
        if version != SCHEMA_VERSION:
            self.close()
            raise LedgerError(
                f"{self.path} is a privacy ledger of schema version {version}; this "
                f"version of sklearn-pdp reads version {SCHEMA_VERSION} only"
                + (" (upgrade sklearn-pdp)." if version > SCHEMA_VERSION else ".")
            )

    def _header(self):
        """The file's application id, schema version and number of objects."""
        return tuple(self._db.execute(query).fetchone()[0] for query in (
            "PRAGMA application_id", "PRAGMA user_version",
            "SELECT count(*) FROM sqlite_master"))

    def _transaction(self, mode="IMMEDIATE"):
        return _Transaction(self._db, mode)

    def close(self):
        """Close the database connection."""
        self._db.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- recording -------------------------------------------------------------

    def record(self, fitted, ids, name=None, *, absent=None, absent_X=None, absent_y=None):
        """Record one release and charge every person it is about.

        Parameters
        ----------
        fitted : estimator, PDPReport or PrivateGridSearchCV
            The fitted release.
        ids : array-like of shape (n_samples,)
            One person key per training row, in the rows' order. A key
            repeated (one person, several rows) charges that person as a
            group: one row's loss composed (group privacy) with the release's
            bound for each further row (see Notes).
        name : str, default=None
            A label for :meth:`releases`.
        absent : array-like, default=None
            Keys of people not in the training rows whose privacy the release
            also concerns (e.g. the population it was drawn from): each is
            charged the loss of adding their records. With ``absent_X``, one
            key per row of it: a key repeated is one person with several
            records, charged the loss of adding all of them together, the
            release's ``pdp_epsilon(absent_X, absent_y, groups=absent)``
            (``inf`` where it has no finite one; their filter charge, the
            bound for any record added, one step per record).
        absent_X, absent_y : array-like, default=None
            Their records, aligned with ``absent`` (``absent_y`` None: the
            worst label; needed for a person with several records). Without
            ``absent_X`` they are charged the largest loss of adding any
            record of the domain.

        Returns
        -------
        release_id : int
            Recording the same release again (same coefficients, guarantee,
            ids and absent people) charges nothing and returns the first
            record's id, with a warning.

        Notes
        -----
        A person with k rows r_1..r_k is charged for the data set without
        all of them, reached by removing one row at a time: the first
        removal costs that row's own loss (the smallest), each further one at
        most the release's bound for any record at that size (the other
        rows' own losses are for the full data set, not for the data set
        the earlier removals leave, so summing them would not be valid).
        Gaussian ratios add along the path (triangle inequality); Laplace
        ratios of the label sum add exactly; (epsilon, delta) pairs compose
        by group privacy. A release fitted with person keys that group the
        rows as ``ids`` do (``fit(X, y, groups=ids)``) charges each person
        their joint loss instead, ``person_losses_`` (:doc:`/people`): for a
        Gaussian or Laplace release where it is exact (``person_pdp_kinds_``),
        as its ratio, the others the path through their rows.
        """
        return self._record(fitted, privacy_profile_of(fitted), ids, name, absent,
                            absent_X, absent_y)

    def _record(self, fitted, profile, ids, name, absent, absent_X, absent_y):
        """:meth:`record` with the release's profile computed."""
        keys = person_keys(ids, "ids")
        if keys.size != profile.values.size:
            raise ValueError(
                f"ids must have one key per training row: got {keys.size} for "
                f"{profile.values.size} rows.")
        people, counts = np.unique(keys, return_counts=True)
        charges = person_charges(fitted, profile, people, counts,
                                 present_charges(profile, keys, people, counts))
        out_keys = np.array([], dtype=str)
        if absent is not None:
            out_keys, absent_columns = absent_charges(fitted, profile, absent, absent_X,
                                                      absent_y, people)
            charges = join_charges(charges, absent_columns)
        fingerprint = _fingerprint(fitted, profile, keys, out_keys)
        time = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        with self._transaction():
            row = self._db.execute(
                "SELECT id, name FROM releases WHERE fingerprint = ?", (fingerprint,)
            ).fetchone()
            if row is not None:
                warnings.warn(
                    f"This release was already recorded (release {row[0]}, "
                    f"name {row[1]!r}); it is not charged again.", UserWarning, stacklevel=3)
                return row[0]
            cursor = self._db.execute(
                "INSERT INTO releases (fingerprint, name, time, mechanism, family, delta, "
                "dp_epsilon, dp_delta, n_rows, n_people) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (fingerprint, name, time, profile.mechanism, profile.family, profile.delta,
                 *release_guarantee(profile), int(keys.size), int(people.size + out_keys.size)))
            release_id = cursor.lastrowid
            self._db.executemany(
                "INSERT INTO charges VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                _charge_rows(release_id, charges))
        return release_id

    # -- reading ---------------------------------------------------------------

    def _charges_of(self, ids):
        """(index into ids, family, value, epsilon, delta, filter columns) of
        every charge of the people ``ids``."""
        keys = person_keys(ids, "ids")
        uniq, inverse = np.unique(keys, return_inverse=True)
        with self._transaction("DEFERRED"):
            self._db.execute("CREATE TEMP TABLE IF NOT EXISTS wanted "
                             "(person TEXT PRIMARY KEY, k INTEGER)")
            self._db.execute("DELETE FROM wanted")
            self._db.executemany("INSERT INTO wanted VALUES (?, ?)",
                                 ((key, k) for k, key in enumerate(uniq.tolist())))
            rows = self._db.execute(
                "SELECT w.k, r.family, c.value, c.epsilon, c.delta, c.filter_value, "
                "c.filter_epsilon, c.filter_delta FROM charges c "
                "JOIN wanted w ON w.person = c.person "
                "JOIN releases r ON r.id = c.release_id").fetchall()
            self._db.execute("DELETE FROM wanted")
        cols = list(zip(*rows)) if rows else [()] * 8
        person = np.asarray(cols[0], dtype=np.intp)
        family = np.asarray(cols[1], dtype=object)
        numbers = [np.asarray(c, dtype=np.float64) for c in cols[2:]]
        return uniq.size, inverse, person, family, numbers

    def epsilon(self, ids, delta):
        """Each person's total epsilon at ``delta`` over every recorded release.

        Exact (to the root searches' tolerance, never below) where all of a
        person's releases are Gaussian: the Gaussian epsilon at
        ``sqrt(sum s^2)``. Otherwise the smaller of basic composition of the
        person's per-release losses (valid when ``delta`` is at least the
        sum of their deltas) and the Gaussian part composed exactly plus the
        other losses; ``inf`` when ``delta`` is below what the
        ``"epsilon_delta"`` releases need. 0 for a person never recorded.

        Parameters
        ----------
        ids : array-like of shape (n_people,)
            Person keys.
        delta : float
            The delta of the totals.

        Returns
        -------
        epsilon : ndarray of shape (n_people,)
        """
        delta = _check_delta(delta)
        n, inverse, person, family, (value, eps, own_delta, *_) = self._charges_of(ids)
        return compose(delta, person, family, value, eps, own_delta, n)[inverse]

    def charges(self, release_id, ids):
        """Each person's charge in one release: their epsilon at its delta
        (for a person with several rows, their group's, whose delta can
        exceed the release's).

        Parameters
        ----------
        release_id : int
            A release of :meth:`releases`.
        ids : array-like of shape (n_people,)
            Person keys charged in it (as training rows or as absent).

        Returns
        -------
        epsilon, delta : ndarray of shape (n_people,)
        """
        keys = person_keys(ids, "ids")
        charged = {person: (eps, dlt) for person, eps, dlt in self._db.execute(
            "SELECT person, epsilon, delta FROM charges WHERE release_id = ?",
            (int(release_id),))}
        missing = [k for k in keys.tolist() if k not in charged]
        if missing:
            raise ValueError(f"{len(missing)} of the ids (e.g. {missing[0]!r}) were not "
                             f"charged in release {release_id}.")
        found = np.array([charged[k] for k in keys.tolist()], dtype=np.float64).reshape(-1, 2)
        return found[:, 0], found[:, 1]

    def remaining(self, ids, epsilon, delta):
        """What is left of an individual budget: ``epsilon`` minus each
        person's total at ``delta`` (:meth:`epsilon`), at least 0.

        Parameters
        ----------
        ids : array-like of shape (n_people,)
            Person keys.
        epsilon : float
            The budget.
        delta : float
            Its delta.

        Returns
        -------
        remaining : ndarray of shape (n_people,)
        """
        return np.maximum(float(epsilon) - self.epsilon(ids, delta), 0.0)

    def filter_epsilon(self, ids, delta):
        """Each person's total at ``delta`` of the bounds an individual filter
        may charge (:meth:`admit`): for each release, the part of their loss
        fixed before it by public quantities and their own record.

        Parameters
        ----------
        ids : array-like of shape (n_people,)
            Person keys.
        delta : float
            The delta of the totals.

        Returns
        -------
        epsilon : ndarray of shape (n_people,)
        """
        delta = _check_delta(delta)
        n, inverse, person, family, (*_, f_value, f_eps, f_delta) = self._charges_of(ids)
        return filter_total(delta, person, family, f_value, f_eps, f_delta, n)[inverse]

    def admit(self, ids, epsilon, delta, cost=(0.0, 0.0), gaussian=False):
        """Which people can take part in the next release within their budget.

        An individual privacy filter (Feldman and Zrnic 2021): a person is
        admitted while their filter total, with the next release's
        data-independent ``cost`` added, stays within (``epsilon``,
        ``delta``). It is valid under adaptive choice of the releases because
        each charge is fixed before its release by public quantities and the
        person's own record alone: the release's data-independent bound for
        every mechanism whose per-instance loss depends on other rows
        (leverages, residuals: every model release), the person's own loss
        only for the label mean's Laplace ratio ``|y| / b``. All-Gaussian
        charges compose as one Gaussian (the individual Gaussian DP filter of
        Koskela, Tobaben and Honkela 2023 and Smith and Thakurta 2022);
        any other mix by basic composition, which is valid for filters
        (Rogers, Roth, Ullman and Vadhan 2016).

        Parameters
        ----------
        ids : array-like of shape (n_people,)
            Person keys.
        epsilon, delta : float
            The individual budget.
        cost : tuple (epsilon, delta), default=(0.0, 0.0)
            The next release's data-independent guarantee (its
            ``dp_guarantee``).
        gaussian : bool, default=False
            The next release is a Gaussian mechanism calibrated to ``cost``
            (AdaSSP, Gaussian output perturbation): composed exactly.

        Returns
        -------
        admitted : ndarray of bool, shape (n_people,)
        """
        delta = _check_delta(delta)
        next_eps, next_delta = map(float, cost)
        n, inverse, person, family, (*_, f_value, f_eps, f_delta) = self._charges_of(ids)
        if next_eps == 0 and next_delta == 0:  # nothing more: who is within budget
            total = filter_total(delta, person, family, f_value, f_eps, f_delta, n)
            return (total <= float(epsilon))[inverse]
        # the next release charges every person once
        everyone = np.arange(n)
        total = filter_total(
            delta, np.concatenate([person, everyone]),
            np.concatenate([family, np.full(n, "gaussian" if gaussian else "epsilon_delta",
                                            dtype=object)]),
            np.concatenate([f_value, np.full(n, gaussian_ratio_of(next_eps, next_delta)
                                             if gaussian else next_eps)]),
            np.concatenate([f_eps, np.full(n, next_eps)]),
            np.concatenate([f_delta, np.full(n, next_delta)]), n)
        return (total <= float(epsilon))[inverse]

    def releases(self):
        """The recorded releases, oldest first.

        Returns
        -------
        releases : pandas.DataFrame or list of dict
            ``id``, ``name``, ``time`` (UTC, ISO 8601), ``mechanism``,
            ``family`` (of the per-row losses), ``delta``, the guarantee
            ``dp_epsilon`` and ``dp_delta``, ``n_rows`` and ``n_people``
            (including people charged as absent). A DataFrame when pandas is
            installed.
        """
        cursor = self._db.execute(
            "SELECT id, name, time, mechanism, family, delta, dp_epsilon, dp_delta, "
            "n_rows, n_people FROM releases ORDER BY id")
        names = [c[0] for c in cursor.description]
        records = [dict(zip(names, row)) for row in cursor.fetchall()]
        try:
            import pandas as pd
        except ImportError:
            return records
        return pd.DataFrame.from_records(records, columns=names)

    def people(self):
        """Every person key in the ledger, sorted.

        Returns
        -------
        ids : ndarray of str
        """
        rows = self._db.execute("SELECT DISTINCT person FROM charges ORDER BY person")
        return np.array([r[0] for r in rows], dtype=str)


# -- helpers -------------------------------------------------------------------


