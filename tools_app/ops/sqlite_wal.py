"""One SQLite handle a web process keeps open for its life, so its write-ahead log lives.

SQLite checkpoints its write-ahead log into the database and deletes it when the last
connection to the database closes. Django closes a request's connection when the request
ends, so a web process that was the only one on its database (daphne with no worker
connected at that moment, as between tasks) paid a checkpoint, the log's deletion and its
re-creation on every hook event: the one-at-a-time hook's median halved with another
handle open (BENCHMARKS.md §16). With this handle open, no request's close is the last;
SQLite's automatic checkpoint (every 1,000 pages) keeps the log short meanwhile. The
handle holds no transaction between uses, so it never holds a checkpoint back.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from typing import Any
from urllib.parse import quote

logger = logging.getLogger(__name__)

SQLITES = ("tools_app.sql.sqlite3", "django.db.backends.sqlite3")  # ours, and Django's
_kept: dict[str, sqlite3.Connection | None] = {}  # database file -> its handle (None: failed)
_lock = threading.Lock()


def keep_open(settings_dict: dict[str, Any]) -> None:
    """Open the handle for this database once per process; a no-op for an in-memory
    SQLite database, for PostgreSQL, and after the first call."""
    if settings_dict.get("ENGINE") not in SQLITES:
        return
    name = str(settings_dict.get("NAME") or "")
    if name in _kept or not name or name == ":memory:" or name.startswith("file:"):
        return
    with _lock:
        if name not in _kept:
            _kept[name] = _open(name)


def _open(name: str) -> sqlite3.Connection | None:
    try:
        # mode=rw: never create a database that is not there.
        handle = sqlite3.connect(f"file:{quote(name)}?mode=rw", uri=True, check_same_thread=False)
        handle.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()  # opens the log
    except sqlite3.Error as exc:
        logger.debug("no SQLite handle kept open for %s: %s", name, exc)
        return None
    return handle
