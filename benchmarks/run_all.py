"""Run every benchmark (default mode) one after another and print their Markdown tables.

Each script runs in its own process, so that one's imports, caches and threads do not
colour the next. `make bench` runs this. `--quick` runs them in their smoke mode;
`--json FILE` writes every script's results into one file; `--before REF` makes
`bench_latency.py` and `bench_inbox.py` measure that commit too, side by side with this
one, and `--cost-before REF` does the same for issue 23's `bench_fanout.py` and
`bench_cost.py` (without it they measure this checkout alone).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
from _common import machine, parser

HERE = Path(__file__).resolve().parent
SCRIPTS = (
    "bench_policy.py",
    "bench_engine.py",
    "bench_sandbox.py",
    "bench_git_view.py",
    "bench_egress.py",
    "bench_api.py",
    "bench_runtime.py",
    "bench_latency.py",
    "bench_dashboard.py",
    "bench_fanout.py",
    "bench_cost.py",
    "bench_inbox.py",
    "bench_audit_export.py",
    "bench_held_waits.py",
    "bench_hook_load.py",
    "bench_sqlite_writers.py",
    "bench_site_requests.py",
    "bench_sqlite_checkpoints.py",
)
COST_SCRIPTS = ("bench_fanout.py", "bench_cost.py")
TAKE_BEFORE = {"bench_latency.py", "bench_inbox.py"}  # the scripts that take --before REF
# Issue 32's 5,000 held waits (100 in a smoke run), on PostgreSQL: left out, saying so,
# where PostgreSQL does not answer.
HELD_WAITS = {"full": ["--waits", "5000"], "quick": ["--waits", "100"]}
POSTGRES = "postgres://postgres@127.0.0.1:5432/postgres"


def run(
    script: str, quick: bool, folder: Path, before: str | None, cost_before: str | None
) -> dict[str, object]:
    out = folder / f"{script}.json"
    command = [sys.executable, str(HERE / script), "--json", str(out)]
    if quick:
        command.append("--quick")
    if before and script in TAKE_BEFORE:
        command += ["--before", before]
    if cost_before and script in COST_SCRIPTS:
        command += ["--before", cost_before]
    if script == "bench_held_waits.py":
        command += HELD_WAITS["quick" if quick else "full"]
    if script == "bench_hook_load.py" and not postgres_answers():
        command += ["--databases", "sqlite"]  # issue 32's 50 agents, on SQLite alone
    start = time.monotonic()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{script} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    result: dict[str, object] = json.loads(out.read_text())
    result["seconds"] = round(time.monotonic() - start, 1)
    return result


def postgres_answers() -> bool:
    try:
        psycopg.connect(POSTGRES, connect_timeout=3).close()
    except Exception:
        return False
    return True


def main() -> None:
    arguments = parser(__doc__.splitlines()[0])
    arguments.add_argument(
        "--before", metavar="REF", help="bench_latency.py, bench_inbox.py: also this commit"
    )
    arguments.add_argument(
        "--cost-before", metavar="REF", help="bench_fanout.py, bench_cost.py: also this commit"
    )
    options = arguments.parse_args()
    info = machine()
    print(f"Machine: {info['nproc']} CPUs, Python {info['python']}, {info['platform']}\n")
    collected = []
    with tempfile.TemporaryDirectory(prefix="bench-all-") as tmp:
        for script in SCRIPTS:
            if script == "bench_held_waits.py" and not postgres_answers():
                print(f"## {script}: left out, PostgreSQL does not answer at {POSTGRES}\n")
                continue
            result = run(script, options.quick, Path(tmp), options.before, options.cost_before)
            collected.append(result)
            print(f"## {script} ({result['seconds']} s)\n")
            for table in result["tables"]:  # type: ignore[attr-defined]
                print(table + "\n")
            sys.stdout.flush()
    if options.json:
        Path(options.json).write_text(json.dumps(collected, indent=2) + "\n")


if __name__ == "__main__":
    main()
