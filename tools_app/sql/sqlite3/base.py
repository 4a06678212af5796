"""Django's SQLite backend, with each statement's conversion to SQLite's `?` style
remembered.

SQLite takes `?` where Django writes `%s`, so Django's SQLite cursor rewrites every
statement with a regular expression before running it, every time, though most
statements are the same text again and again (the hook's prepared lookups and inserts,
`sql/prepared.py`, `sql/rows.py`): 6% of an allowed hook's Django work (BENCHMARKS.md
§16). Here the rewrite of a text is kept (the last `CONVERTED_KEPT` texts) and reused.

A write transaction waits for another process's write more closely than SQLite would.
With a busy timeout, SQLite sleeps between tries 1, 2, 5, 10, 15, 20, 25… up to 100 ms
at a time, so a writer that waited behind another's 40 ms write gets in 13 ms after the
lock is free, behind a 140 ms one 38 ms after, and further on up to 100 ms after: a hook
queued behind a worker's write (web processes and workers share the file) pays that
(`benchmarks/bench_sqlite_writers.py`). Here `BEGIN IMMEDIATE`,
where every write transaction takes the write lock (WAL: the one place writers wait for
each other), is tried without SQLite's sleeps and tried again every `BEGIN_POLL_SECONDS`,
up to the busy timeout. Everything else is Django's backend, unchanged; `ENGINE` names
this package.
"""

from __future__ import annotations

import sqlite3
import time
from functools import lru_cache
from typing import Any

from django.db import OperationalError
from django.db.backends.sqlite3 import base

CONVERTED_KEPT = 2048  # statement texts; a few MB at most
BEGIN_POLL_SECONDS = 0.0005  # between tries of a write lock another process holds


@lru_cache(maxsize=CONVERTED_KEPT)
def _qmark(query: str) -> str:
    """Django's "format" to "qmark" rewrite (`SQLiteCursorWrapper.convert_query`)."""
    return str(base.FORMAT_QMARK_REGEX.sub("?", query)).replace("%%", "%")


class SQLiteCursorWrapper(base.SQLiteCursorWrapper):
    def convert_query(self, query: str, *, param_names: Any = None) -> str:
        if param_names is None:
            return _qmark(query)
        converted = super().convert_query(query, param_names=param_names)  # type: ignore[misc]
        return str(converted)


class DatabaseWrapper(base.DatabaseWrapper):
    busy_ms = 0  # the connection's busy timeout, read when it opens

    def create_cursor(self, name: Any = None) -> Any:
        return self.connection.cursor(factory=SQLiteCursorWrapper)

    def get_new_connection(self, conn_params: Any) -> Any:
        connection = super().get_new_connection(conn_params)
        self.busy_ms = int(connection.execute("PRAGMA busy_timeout").fetchone()[0])
        return connection

    def _start_transaction_under_autocommit(self) -> None:
        if getattr(self, "transaction_mode", None) != "IMMEDIATE":
            super()._start_transaction_under_autocommit()  # type: ignore[misc]  # Django's
            return
        self.connection.execute("PRAGMA busy_timeout = 0")
        try:
            self._begin_immediate(time.monotonic() + self.busy_ms / 1000)
        finally:
            self.connection.execute(f"PRAGMA busy_timeout = {self.busy_ms}")

    def _begin_immediate(self, deadline: float) -> None:
        """BEGIN IMMEDIATE (as Django runs it), tried again while another connection holds
        the write lock, until `deadline`; then SQLite's own "database is locked"."""
        while True:
            try:
                self.cursor().execute("BEGIN IMMEDIATE")
                return
            except OperationalError as error:
                if not _busy(error) or time.monotonic() >= deadline:
                    raise
            time.sleep(BEGIN_POLL_SECONDS)


def _busy(error: OperationalError) -> bool:
    cause = error.__cause__
    code = getattr(cause, "sqlite_errorcode", None)
    return code is not None and code & 0xFF == sqlite3.SQLITE_BUSY
