"""One SQLite handle a web process keeps open for its life, so its write-ahead log lives,
and the log's checkpoints made on a thread of their own, off the hooks' path.

SQLite checkpoints its write-ahead log into the database and deletes it when the last
connection to the database closes. Django closes a request's connection when the request
ends, so a web process that was the only one on its database (daphne with no worker
connected at that moment, as between tasks) paid a checkpoint, the log's deletion and its
re-creation on every hook event: the one-at-a-time hook's median halved with another
handle open (BENCHMARKS.md §16). With this handle open, no request's close is the last.
The handle holds no transaction between uses, so it never holds a checkpoint back.

SQLite's own checkpoint runs inside the COMMIT that takes the log past 1,000 pages: that
hook's answer waited while the log was copied into the database and both files were
synced, 5 to 25 ms on the benchmark machine's disk, about one hook in 80 (BENCHMARKS.md
§16, `bench_sqlite_checkpoints.py`). So the handle also checkpoints, passively (never
waiting for a reader or blocking a writer), a moment after hooks wrote: the log stays
under SQLite's threshold and no hook's COMMIT copies it. SQLite's own checkpoint stays as
the bound if this thread falls behind.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from typing import Any
from urllib.parse import quote

logger = logging.getLogger(__name__)

SQLITES = ("tools_app.sql.sqlite3", "django.db.backends.sqlite3")  # ours, and Django's
# How long after a write the checkpoint waits, so that one checkpoint (one pair of syncs)
# takes the writes of many hooks: an allowed hook writes about 13 pages, 50 agents in a
# closed loop about 3,000 a second, and SQLite copies the log itself at 1,000.
CHECKPOINT_AFTER_SECONDS = 0.1


class _Log:
    """A database's kept handle and the thread that checkpoints through it."""

    def __init__(self, handle: sqlite3.Connection, name: str) -> None:
        self.handle, self.name = handle, name
        self.written = threading.Event()
        self.checkpoints = 0  # tried by this thread: for tests and benchmarks
        self.failing = False
        threading.Thread(
            target=self._checkpoint_forever, name="agentweb-sqlite-checkpoint", daemon=True
        ).start()

    def _checkpoint_forever(self) -> None:
        while True:
            self.written.wait()
            time.sleep(CHECKPOINT_AFTER_SECONDS)
            self.written.clear()  # a write from now on asks for the next checkpoint
            try:
                # Passive: copies what no reader still needs, waits for nobody; and
                # sqlite3 lets go of the interpreter lock while it copies and syncs.
                self.handle.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            except sqlite3.Error as exc:  # SQLite's own checkpoint still bounds the log
                # Said once until one succeeds again: it is tried after every hook.
                level = logging.DEBUG if self.failing else logging.WARNING
                logger.log(level, "SQLite checkpoint of %s failed: %s", self.name, exc)
                self.failing = True
            else:
                self.failing = False
            self.checkpoints += 1


_kept: dict[str, _Log | None] = {}  # database file -> its log (None: no handle)
_lock = threading.Lock()
# A forked child (Celery's prefork pool) has its parent's logs but not their threads.
os.register_at_fork(after_in_child=_kept.clear)


def tend(settings_dict: dict[str, Any]) -> None:
    """After a hook's work on this database: the handle opened (once per process) and a
    checkpoint asked for. A no-op for an in-memory SQLite database and for PostgreSQL."""
    log = _log(settings_dict)
    if log is not None:
        log.written.set()


def kept(settings_dict: dict[str, Any]) -> _Log | None:
    """This process's log of the database, if `tend` opened one."""
    return _kept.get(str(settings_dict.get("NAME") or ""))


def _log(settings_dict: dict[str, Any]) -> _Log | None:
    if settings_dict.get("ENGINE") not in SQLITES:
        return None
    name = str(settings_dict.get("NAME") or "")
    if not name or name == ":memory:" or name.startswith("file:"):
        return None
    if name in _kept:
        return _kept[name]
    with _lock:
        if name not in _kept:
            handle = _open(name)
            _kept[name] = None if handle is None else _Log(handle, name)
        return _kept[name]


def _open(name: str) -> sqlite3.Connection | None:
    try:
        # mode=rw: never create a database that is not there.
        handle = sqlite3.connect(f"file:{quote(name)}?mode=rw", uri=True, check_same_thread=False)
        handle.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()  # opens the log
    except sqlite3.Error as exc:
        logger.debug("no SQLite handle kept open for %s: %s", name, exc)
        return None
    return handle
