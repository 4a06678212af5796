"""How long a hook's COMMIT takes on SQLite, with SQLite's own checkpoints and with the web
process's checkpoint thread (`tools_app/ops/sqlite_wal.py`; issue 32).

SQLite copies its write-ahead log into the database inside the COMMIT that takes the log
past 1,000 pages, and syncs both files before that COMMIT returns. A web process now
checkpoints on a thread of its own a moment after hooks wrote (`sqlite_wal.tend`, as the
judging threads call it after each hook), so that no hook's COMMIT does.

Each "hook" here writes what an allowed hook writes on SQLite, in one `BEGIN IMMEDIATE`
transaction with agentweb's pragmas (WAL, `synchronous=NORMAL`): a call row of about 3 KB,
the session's counter, three event rows of about 1 KB, each table with an index; one hook
every `--pace-ms` (20: 50 agents at one hook a second), `--hooks` of them, on a database
of `--rows` earlier calls. For each mode: the COMMIT's median, p99 and most, how many
COMMITs took over 5 ms, and the log's pages a hook writes.

Run: .venv/bin/python benchmarks/bench_sqlite_checkpoints.py [--quick] [--hooks 1500]
"""

from __future__ import annotations

import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import _common  # noqa: F401 - puts the project root on sys.path
from _common import emit, markdown_table, parser

from tools_app.ops import sqlite_wal

SCHEMA = """
CREATE TABLE calls (id INTEGER PRIMARY KEY, session INTEGER, tool_use TEXT UNIQUE, v BLOB);
CREATE TABLE events (id INTEGER PRIMARY KEY, session INTEGER, seq INTEGER, v BLOB);
CREATE UNIQUE INDEX events_seq ON events (session, seq);
CREATE TABLE sessions (id INTEGER PRIMARY KEY, last_seq INTEGER);
"""
PRAGMAS = "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=20000;"
SESSIONS = 50


def _database(folder: Path, rows: int) -> Path:
    file = folder / "site.sqlite3"
    setup = sqlite3.connect(file, isolation_level=None)
    setup.executescript(PRAGMAS + SCHEMA)
    setup.executemany("INSERT INTO sessions (id, last_seq) VALUES (?, 0)",
                      [(n,) for n in range(SESSIONS)])  # fmt: skip
    setup.execute("BEGIN")
    for n in range(rows):
        _hook_writes(setup, f"earlier-{n}", n % SESSIONS)
    setup.execute("COMMIT")
    setup.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    setup.close()
    return file


def _hook_writes(db: sqlite3.Connection, tool_use: str, session: int) -> None:
    db.execute("INSERT INTO calls (session, tool_use, v) VALUES (?, ?, randomblob(3000))",
               (session, tool_use))  # fmt: skip
    seq = db.execute(
        "UPDATE sessions SET last_seq = last_seq + 3 WHERE id = ? RETURNING last_seq", (session,)
    ).fetchone()[0]
    db.executemany("INSERT INTO events (session, seq, v) VALUES (?, ?, randomblob(1000))",
                   [(session, seq - 2 + k,) for k in range(3)])  # fmt: skip


def run(file: Path, mode: str, hooks: int, pace_ms: float) -> dict[str, Any]:
    writer = sqlite3.connect(file, isolation_level=None)
    writer.executescript(PRAGMAS)
    settings = {"ENGINE": "tools_app.sql.sqlite3", "NAME": str(file)}
    log = file.with_name(file.name + "-wal")
    page = writer.execute("PRAGMA page_size").fetchone()[0]
    commits: list[float] = []
    pages = 0.0
    next_at = time.monotonic()
    for n in range(hooks):
        next_at += pace_ms / 1000
        writer.execute("BEGIN IMMEDIATE")
        _hook_writes(writer, f"{mode}-{n}", n % SESSIONS)
        started = time.perf_counter()
        writer.execute("COMMIT")
        commits.append((time.perf_counter() - started) * 1000)
        if n == 0:  # the log's pages of one hook (it was empty: 32 bytes of header)
            pages = (log.stat().st_size - 32) / (page + 24)
        if mode == "thread":
            sqlite_wal.tend(settings)
        time.sleep(max(0.0, next_at - time.monotonic()))
    writer.close()
    commits.sort()
    kept = sqlite_wal.kept(settings)
    return {
        "mode": mode,
        "hooks": hooks,
        "commit_median_ms": statistics.median(commits),
        "commit_p99_ms": commits[int(0.99 * len(commits))],
        "commit_most_ms": commits[-1],
        "commits_over_5ms": sum(ms > 5 for ms in commits),
        "log_pages_per_hook": pages,
        "thread_checkpoints": kept.checkpoints if kept is not None else 0,
    }


def main() -> None:
    options = parser(__doc__.splitlines()[0])
    options.add_argument("--hooks", type=int, default=1500, help="for each mode")
    options.add_argument("--pace-ms", type=float, default=20.0, help="between hooks")
    options.add_argument("--rows", type=int, default=20000, help="earlier calls stored")
    args = options.parse_args()
    hooks, rows = (300, 2000) if args.quick else (args.hooks, args.rows)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-sqlite-checkpoints-") as tmp:
        for mode in ("SQLite's own", "thread"):  # each on a database of its own
            folder = Path(tmp) / mode.replace("'", "").replace(" ", "-")
            folder.mkdir()
            results[mode] = run(_database(folder, rows), mode, hooks, args.pace_ms)
    headers = ["checkpoints by", "hooks", "COMMIT median ms", "p99 ms", "most ms",
               "COMMITs over 5 ms", "log pages a hook", "the thread's checkpoints"]  # fmt: skip
    table = [
        [r["mode"], r["hooks"], r["commit_median_ms"], r["commit_p99_ms"], r["commit_most_ms"],
         r["commits_over_5ms"], r["log_pages_per_hook"], r["thread_checkpoints"]]
        for r in results.values()
    ]  # fmt: skip
    emit("bench_sqlite_checkpoints", results, [markdown_table(headers, table)], args.json)


if __name__ == "__main__":
    main()
