"""A web process's SQLite log is checkpointed by a thread of its own (`ops/sqlite_wal.py`),
so no hook's COMMIT copies the log into the database."""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tools_app.ops import sqlite_wal

ROWS = 300  # about 160 pages of the log a round


@pytest.fixture
def database(tmp_path: Path) -> Iterator[tuple[dict[str, str], sqlite3.Connection, Path]]:
    """A WAL database, its settings as Django's, and a writer that never checkpoints on
    its own (SQLite's automatic checkpoint off: only the thread under test copies)."""
    file = tmp_path / "site.sqlite3"
    writer = sqlite3.connect(file, isolation_level=None)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB)")
    yield {"ENGINE": "tools_app.sql.sqlite3", "NAME": str(file)}, writer, file
    writer.close()


def _write_a_round(writer: sqlite3.Connection) -> None:
    writer.execute("BEGIN IMMEDIATE")
    writer.executemany("INSERT INTO t (v) VALUES (?)", [(b"x" * 2000,)] * ROWS)
    writer.execute("COMMIT")


def _checkpointed(settings: dict[str, str], count: int) -> None:
    log = sqlite_wal.kept(settings)
    assert log is not None
    deadline = time.monotonic() + 10
    while log.checkpoints < count:
        assert time.monotonic() < deadline, "no checkpoint was made"
        time.sleep(0.02)


def test_the_log_is_checkpointed_after_a_write_and_starts_over(
    database: tuple[dict[str, str], sqlite3.Connection, Path],
) -> None:
    settings, writer, file = database
    log = file.with_name(file.name + "-wal")
    _write_a_round(writer)
    one_round = log.stat().st_size
    sqlite_wal.tend(settings)
    _checkpointed(settings, 1)
    # Copied into the database: the next write starts the log over from its beginning
    # (it does not grow), and every row is in the database file itself.
    _write_a_round(writer)
    assert log.stat().st_size == one_round
    sqlite_wal.tend(settings)  # each write asks for the next checkpoint
    _checkpointed(settings, 2)
    _write_a_round(writer)
    assert log.stat().st_size == one_round
    writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the rest, to read the file alone
    alone = sqlite3.connect(f"file:{file}?mode=ro&immutable=1", uri=True)
    assert alone.execute("SELECT count(*) FROM t").fetchone() == (3 * ROWS,)
    alone.close()


def test_without_the_thread_the_log_grows(
    database: tuple[dict[str, str], sqlite3.Connection, Path],
) -> None:
    """The observation above is the thread's doing: with nobody checkpointing, each round
    lengthens the log."""
    _settings, writer, file = database
    log = file.with_name(file.name + "-wal")
    _write_a_round(writer)
    one_round = log.stat().st_size
    _write_a_round(writer)
    assert log.stat().st_size > 1.8 * one_round


def test_one_log_and_one_thread_per_database_and_process(
    database: tuple[dict[str, str], sqlite3.Connection, Path],
) -> None:
    settings, _writer, _file = database
    before = _checkpoint_threads()
    for _ in range(5):
        sqlite_wal.tend(settings)
    first = sqlite_wal.kept(settings)
    assert first is not None
    assert _checkpoint_threads() == before + 1


def test_a_forked_child_opens_a_log_and_a_thread_of_its_own(
    database: tuple[dict[str, str], sqlite3.Connection, Path],
) -> None:
    """The parent's log is not the child's: its thread did not cross the fork."""
    settings, _writer, _file = database
    sqlite_wal.tend(settings)
    parent = sqlite_wal.kept(settings)
    assert parent is not None
    pid = os.fork()
    if pid == 0:  # the child: says through its exit status, never returns into pytest
        code = 1
        try:
            inherited = sqlite_wal.kept(settings)
            sqlite_wal.tend(settings)
            own = sqlite_wal.kept(settings)
            fresh = own is not None and own is not parent
            code = 0 if inherited is None and fresh and _checkpoint_threads() == 1 else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert sqlite_wal.kept(settings) is parent  # the parent's own is untouched


def test_a_failing_checkpoint_is_said_once_and_the_thread_goes_on(
    database: tuple[dict[str, str], sqlite3.Connection, Path], caplog: pytest.LogCaptureFixture
) -> None:
    settings, _writer, _file = database
    sqlite_wal.tend(settings)
    _checkpointed(settings, 1)
    log = sqlite_wal.kept(settings)
    assert log is not None
    log.handle.close()  # every checkpoint from now on fails
    with caplog.at_level(logging.DEBUG, logger=sqlite_wal.__name__):
        for count in (2, 3):
            sqlite_wal.tend(settings)
            _checkpointed(settings, count)
    said = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert [level for level, _ in said] == [logging.WARNING, logging.DEBUG]
    assert "SQLite checkpoint of" in said[0][1] and "closed database" in said[0][1]


@pytest.mark.parametrize(
    "settings",
    [
        {"ENGINE": "tools_app.sql.postgresql", "NAME": "agentweb"},
        {"ENGINE": "tools_app.sql.sqlite3", "NAME": ":memory:"},
        {"ENGINE": "tools_app.sql.sqlite3", "NAME": "file:memdb?mode=memory&cache=shared"},
    ],
)
def test_nothing_is_kept_for_postgresql_or_memory(settings: dict[str, str]) -> None:
    before = _checkpoint_threads()
    sqlite_wal.tend(settings)
    assert sqlite_wal.kept(settings) is None
    assert _checkpoint_threads() == before


def test_a_missing_database_is_never_created(tmp_path: Path) -> None:
    settings = {"ENGINE": "tools_app.sql.sqlite3", "NAME": str(tmp_path / "nowhere.sqlite3")}
    sqlite_wal.tend(settings)
    assert sqlite_wal.kept(settings) is None
    assert not (tmp_path / "nowhere.sqlite3").exists()


def _checkpoint_threads() -> int:
    return sum(t.name == "agentweb-sqlite-checkpoint" for t in threading.enumerate())
