"""How late a write transaction starts after another connection's write ends (issue 32).

Web processes and workers share one SQLite file; in WAL mode writers wait for each other
at `BEGIN IMMEDIATE` and nowhere else. With a busy timeout SQLite sleeps between its tries
(1, 2, 5, 10, 15, 20, 25 … 100 ms), so a writer can stay asleep well after the lock it
waits for is free. agentweb's backend (`tools_app/sql/sqlite3`) tries again every
`BEGIN_POLL_SECONDS` instead.

For each hold time H: a second connection (a thread with a plain sqlite3 connection, as
another process's writer would be) takes the write lock, holds it H ms and commits; while
it holds, Django opens `transaction.atomic()` and inserts a row, once on Django's own
SQLite backend and once on agentweb's (both with agentweb's options: WAL, a 20 s busy
timeout, IMMEDIATE transactions). "Late" is the time from the holder's COMMIT to the
waiting transaction's start; its median and most over `--trials` for each H.

Run: .venv/bin/python benchmarks/bench_sqlite_writers.py [--quick] [--trials 20]
"""

from __future__ import annotations

import os
import sqlite3
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import _common  # noqa: F401 - puts the project root on sys.path
from _common import emit, markdown_table, parser

HOLDS_MS = (2, 10, 40, 60, 140)
BACKENDS = {"Django's": "django.db.backends.sqlite3", "agentweb's": "tools_app.sql.sqlite3"}


def configure(file: Path) -> None:
    """Django with both backends on one file, with agentweb's options."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentweb.settings")
    os.environ["DATABASE_URL"] = f"sqlite:///{file}"
    import django
    from django.conf import settings

    default = settings.DATABASES["default"]
    for alias, engine in BACKENDS.items():
        settings.DATABASES[alias] = {**default, "ENGINE": engine}
    django.setup()


def holder(file: Path, hold_ms: float, holding: threading.Event, released: list[float]) -> None:
    raw = sqlite3.connect(file, isolation_level=None, timeout=20)
    try:
        raw.execute("BEGIN IMMEDIATE")
        raw.execute("INSERT INTO t (v) VALUES ('held')")
        holding.set()
        time.sleep(hold_ms / 1000)
        raw.execute("COMMIT")
        released.append(time.monotonic())
    finally:
        raw.close()


def late_ms(alias: str, file: Path, hold_ms: float) -> float:
    """How long after the holder's commit a transaction of `alias` began."""
    from django.db import connections, transaction

    holding, released = threading.Event(), list[float]()
    thread = threading.Thread(target=holder, args=(file, hold_ms, holding, released))
    thread.start()
    holding.wait()
    with transaction.atomic(using=alias):
        began = time.monotonic()
        with connections[alias].cursor() as cursor:
            cursor.execute("INSERT INTO t (v) VALUES ('waited')")
    thread.join()
    return (began - released[0]) * 1000


def measure(file: Path, trials: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for alias in BACKENDS:
        for hold in HOLDS_MS:
            lates = [late_ms(alias, file, hold) for _ in range(trials)]
            results[f"{alias} {hold}"] = {
                "backend": alias,
                "hold_ms": hold,
                "median_ms": statistics.median(lates),
                "most_ms": max(lates),
            }
    return results


def main() -> None:
    options = parser(__doc__.splitlines()[0])
    options.add_argument("--trials", type=int, default=20, help="for each hold time")
    args = options.parse_args()
    trials = 5 if args.quick else args.trials
    with tempfile.TemporaryDirectory(prefix="bench-sqlite-writers-") as tmp:
        file = Path(tmp) / "writers.sqlite3"
        setup = sqlite3.connect(file)
        setup.execute("PRAGMA journal_mode=WAL")
        setup.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
        setup.close()
        configure(file)
        results = measure(file, trials)
    rows = [[r["backend"], r["hold_ms"], r["median_ms"], r["most_ms"]] for r in results.values()]
    headers = ["backend", "the other's write held (ms)", "late: median ms", "late: most ms"]
    emit("bench_sqlite_writers", results, [markdown_table(headers, rows)], args.json)


if __name__ == "__main__":
    main()
