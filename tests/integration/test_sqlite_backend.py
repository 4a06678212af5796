"""agentweb's SQLite backend (`tools_app/sql/sqlite3`) is Django's, with each statement's
rewrite to SQLite's `?` style kept: the same rewrite, and the same rows."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import OperationalError, connection, connections
from django.db.backends.sqlite3.base import SQLiteCursorWrapper as DjangosCursor
from django.db.utils import ConnectionHandler

from agentweb import settings as site_settings
from tools_app.sql.sqlite3 import base

QUERIES = [
    "SELECT 1",
    "SELECT %s, %s",
    "SELECT * FROM t WHERE a LIKE '%%x%%' AND b = %s",
    "SELECT '%%s' || %s",  # a literal %s, escaped
    "SELECT %s WHERE '100%%' = %s",
]


@pytest.mark.parametrize("query", QUERIES)
def test_the_rewrite_is_djangos(query: str) -> None:
    assert base._qmark(query) == DjangosCursor.convert_query(None, query)  # type: ignore[attr-defined]


@pytest.mark.django_db
def test_the_site_runs_on_it_and_named_parameters_still_work() -> None:
    if connection.vendor != "sqlite":
        pytest.skip("the SQLite backend is only used on SQLite")
    assert isinstance(connections["default"], base.DatabaseWrapper)
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s || '%%s', %s", ["a", 2])
        assert cursor.fetchone() == ("a%s", 2)
        cursor.execute("SELECT %(x)s + %(y)s", {"x": 1, "y": 2})
        assert cursor.fetchone() == (3,)


@pytest.fixture
def writers(tmp_path: Path, django_db_blocker: Any) -> Iterator[tuple[Any, Path]]:
    """agentweb's SQLite backend on a WAL file of its own, with the site's options (its
    own connection: pytest-django's block is for the site's test database)."""
    file = tmp_path / "writers.sqlite3"
    setup = sqlite3.connect(file)
    setup.execute("PRAGMA journal_mode=WAL")
    setup.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
    setup.close()
    own = site_settings._sqlite(file)  # as the site opens a SQLite file, on either leg
    wrapper = ConnectionHandler({"default": own})["default"]  # not the site's connections
    with django_db_blocker.unblock():
        wrapper.ensure_connection()
        yield wrapper, file
        wrapper.close()


def _hold_the_write_lock(file: Path, seconds: float, holding: threading.Event) -> None:
    """Another process's writer: the write lock held `seconds`, then a commit."""
    raw = sqlite3.connect(file, isolation_level=None)
    raw.execute("BEGIN IMMEDIATE")
    raw.execute("INSERT INTO t (v) VALUES ('held')")
    holding.set()
    time.sleep(seconds)
    raw.execute("COMMIT")
    raw.close()


def _begin_write_commit(wrapper: Any) -> None:
    wrapper._start_transaction_under_autocommit()
    with wrapper.cursor() as cursor:
        cursor.execute("INSERT INTO t (v) VALUES ('waited')")
    wrapper.connection.execute("COMMIT")


def test_a_write_waiting_for_another_s_lock_keeps_trying_then_gets_in(writers: Any) -> None:
    """Not SQLite's sleeps of up to 100 ms: BEGIN IMMEDIATE is tried again and again while
    the lock is held, and the connection's busy timeout is as it was afterwards."""
    wrapper, file = writers
    busy_ms = wrapper.connection.execute("PRAGMA busy_timeout").fetchone()[0]
    assert busy_ms > 0
    begins: list[str] = []

    def count_begins(execute: Any, sql: str, *args: Any) -> Any:
        begins.extend([sql] if sql.startswith("BEGIN") else [])
        return execute(sql, *args)

    holding = threading.Event()
    holder = threading.Thread(target=_hold_the_write_lock, args=(file, 0.3, holding))
    holder.start()
    holding.wait()
    with wrapper.execute_wrapper(count_begins):
        _begin_write_commit(wrapper)
    holder.join()
    assert len(begins) > 10  # one try every BEGIN_POLL_SECONDS while it was held
    rows = wrapper.connection.execute("SELECT v FROM t ORDER BY id").fetchall()
    assert rows == [("held",), ("waited",)]
    assert wrapper.connection.execute("PRAGMA busy_timeout").fetchone()[0] == busy_ms


def test_a_write_lock_held_past_the_busy_timeout_is_database_is_locked(writers: Any) -> None:
    """SQLite's own error at the timeout, and the connection usable after: out of any
    transaction, its busy timeout restored."""
    wrapper, file = writers
    wrapper.busy_ms = 100
    holding = threading.Event()
    holder = threading.Thread(target=_hold_the_write_lock, args=(file, 1.0, holding))
    holder.start()
    holding.wait()
    with pytest.raises(OperationalError, match="database is locked"):
        _begin_write_commit(wrapper)
    assert wrapper.connection.in_transaction is False
    assert wrapper.connection.execute("PRAGMA busy_timeout").fetchone()[0] == 100
    holder.join()
    _begin_write_commit(wrapper)
    assert wrapper.connection.execute("SELECT count(*) FROM t").fetchone() == (2,)
