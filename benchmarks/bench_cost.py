"""What a call and a turn cost (issue 23): wall time over the floor, and CPU by process.

Each stack (`manage.py up --concurrency 1`: SQLite, its own embedded Redis, one Celery
pool process with beat, daphne) is measured round by round, interleaved with the others,
so that the machine's load falls on all alike:

1. **An allowed `read_file` with `?wait`, over the GET floor.** Blocks of plain
   `GET /api/sessions/{id}` (the floor) and of `POST …/tool-calls?wait=30` with
   `read_file` on a different one-line file each time (nothing from the cache); the
   figure is the median of the calls minus the median of the floor.
2. **CPU per allowed `read_file`**, all processes together and by process (daphne,
   Celery, Redis): the processes' own counters (utime + stime in /proc/PID/stat) summed
   over each block of calls, over the calls; the floor's CPU per GET is shown too.
3. **One scripted agent turn** (the scripted provider answers one `read_file`; the turn
   runs it and stores its results): the `agent_turn` tasks' run time from the worker's
   log (`succeeded in`), for sessions of `--steps` reads then `task_done`; the median
   of the first ten turns and of the last ten show whether a turn grows with the
   conversation; and the Celery processes' CPU per turn.

`--before REF` measures a `git worktree` of REF the same way, in the same rounds.

Run: .venv/bin/python benchmarks/bench_cost.py [--quick] [--before REF]
"""

from __future__ import annotations

import json
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _common  # noqa: F401 - puts the project root on sys.path
from _common import ROOT, emit, markdown_table, parser, summary
from _stacks import Target, load, worktree
from bench_api import make_repo

AGENT_TURN = "tools_app.tasks.agent_turn"
BLOCK = 10


class Meter:
    """CPU used by a stack's processes over blocks of work of one kind."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.cpu: dict[str, dict[str, float]] = {}
        self.count: dict[str, int] = {}

    def block(self, kind: str, work: Any, count: int) -> None:
        before = self.target.cpu()
        work()
        time.sleep(0.05)  # the tail of the last one (the worker's ack, a group leave)
        after = self.target.cpu()
        total = self.cpu.setdefault(kind, {})
        for role, seconds in after.items():
            total[role] = total.get(role, 0.0) + seconds - before.get(role, 0.0)
        self.count[kind] = self.count.get(kind, 0) + count

    def per_item_ms(self, kind: str) -> dict[str, float]:
        found = {role: 1000 * s / self.count[kind] for role, s in self.cpu[kind].items()}
        found["all"] = sum(found.values())
        return found


def floors(target: Target) -> None:
    for _ in range(BLOCK):
        start = time.perf_counter()
        target.http.get(f"/api/sessions/{target.session['id']}").raise_for_status()
        target.sample("floor", (time.perf_counter() - start) * 1000)


def reads(target: Target, first: int) -> None:
    for i in range(first, first + BLOCK):
        body = {"tool": "read_file", "args": {"path": f"files/f{i:04d}.txt"}}
        path = f"/api/sessions/{target.session['id']}/tool-calls?wait=30"
        start = time.perf_counter()
        answer = target.http.post(path, json=body)
        target.sample("read_file", (time.perf_counter() - start) * 1000)
        if answer.json().get("status") != "succeeded":
            raise RuntimeError(f"{target.name}: read_file did not succeed: {answer.text[:300]}")


def turn_times(log: str) -> list[float]:
    found = re.findall(re.escape(AGENT_TURN) + r"\[[-0-9a-f]+\] succeeded in ([0-9.e-]+)s", log)
    return [float(seconds) * 1000 for seconds in found]


def session_turns(target: Target, meter: Meter, repo: Path, script: Path, steps: int) -> None:
    """One scripted session to its end; its turn tasks' run times, in order."""
    offset = target.stack.log.stat().st_size

    def run() -> None:
        session = target.new_session(repo, model=f"script:{script}")
        deadline = time.monotonic() + 600
        while session["status"] not in ("done", "failed", "cancelled"):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{target.name}: session {session['id']} did not end")
            time.sleep(0.1)
            session = target.http.get(f"/api/sessions/{session['id']}").json()
        if session["status"] != "done":
            raise RuntimeError(f"{target.name}: session ended {session['status']}")

    meter.block("turn", run, steps + 2)  # the first turn, one per read, task_done
    with target.stack.log.open("rb") as log:
        log.seek(offset)
        times = turn_times(log.read().decode(errors="replace"))
    target.samples.setdefault("turn_sessions", []).append(times)  # type: ignore[arg-type]


def measure(targets: list[Target], repo: Path, script: Path, options: Any) -> dict[str, Any]:
    meters = {t.name: Meter(t) for t in targets}
    for target in targets:  # warm up
        reads(target, 0)
        target.samples.clear()
    for round_ in range(options.rounds):
        for target in targets:
            meters[target.name].block("floor", lambda t=target: floors(t), BLOCK)
        for target in targets:
            first = (round_ + 1) * BLOCK
            meters[target.name].block("read_file", lambda t=target, f=first: reads(t, f), BLOCK)
    for _ in range(options.sessions):
        for target in targets:
            session_turns(target, meters[target.name], repo, script, options.steps)
    found = {}
    for target in targets:
        sessions: list[list[float]] = target.samples.pop("turn_sessions")  # type: ignore[assignment]
        turns = [t for times in sessions for t in times]
        s = {name: summary(values) for name, values in target.samples.items()}
        found[target.name] = {
            "samples": s,
            "read_over_floor_ms": s["read_file"]["median"] - s["floor"]["median"],
            "cpu_ms_per_read": meters[target.name].per_item_ms("read_file"),
            "cpu_ms_per_floor": meters[target.name].per_item_ms("floor"),
            "cpu_ms_per_turn": meters[target.name].per_item_ms("turn"),
            "turn_ms": summary(turns),
            "first_ten_turns_ms": statistics.median(t for times in sessions for t in times[:10]),
            "last_ten_turns_ms": statistics.median(t for times in sessions for t in times[-10:]),
        }
    return found


def write_script(folder: Path, steps: int) -> Path:
    done = {"tool": "task_done", "args": {"summary": "bench script finished"}}
    script = [{"tool": "read_file", "args": {"path": f"files/f{i:04d}.txt"}} for i in range(steps)]
    path = folder / "reads.json"
    path.write_text(json.dumps([*script, done]))
    return path


def main() -> None:
    arguments = parser(__doc__.splitlines()[0])
    arguments.add_argument("--before", metavar="REF", help="also measure this commit")
    arguments.add_argument("--rounds", type=int, help="blocks of 10 reads (default 20)")
    arguments.add_argument("--sessions", type=int, help="scripted sessions (default 3)")
    arguments.add_argument("--steps", type=int, help="reads per session (default 60)")
    options = arguments.parse_args()
    options.rounds = options.rounds or (2 if options.quick else 20)
    options.sessions = options.sessions or (1 if options.quick else 3)
    options.steps = options.steps or (20 if options.quick else 60)
    tmp = Path(tempfile.mkdtemp(prefix="bench-cost-"))
    targets: list[Target] = []
    results: dict[str, Any] = {
        key: getattr(options, key) for key in ("rounds", "sessions", "steps")
    }
    try:
        with worktree(options.before, tmp) as before:
            repo = make_repo(tmp, (options.rounds + 1) * BLOCK + options.steps)
            script = write_script(tmp, options.steps)
            if before is not None:
                targets.append(Target(f"before ({options.before})", before, tmp, 1))
            targets.append(Target("after", ROOT, tmp, 1))
            for target in targets:
                target.start(repo)
            results["load_before"] = load()
            results["stacks"] = measure(targets, repo, script, options)
            results["load_after"] = load()
            results["leftover_processes"] = [pid for t in targets for pid in t.stop()]
    except BaseException:
        for target in targets:
            print(target.stack.tail(), file=sys.stderr)
            target.stop()
        raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    emit("bench_cost", results, tables(results), options.json)


def tables(results: dict[str, Any]) -> list[str]:
    got = results["stacks"]
    names = list(got)
    cpu = [
        (f"CPU per allowed read_file, {role}, ms", [got[n]["cpu_ms_per_read"][role] for n in names])
        for role in ("all", "daphne", "celery", "redis")
    ]
    rows = [
        ["allowed read_file ?wait minus the GET floor, ms (goal ≤ 10)",
         *[got[n]["read_over_floor_ms"] for n in names]],
        *[[label, *values] for label, values in cpu],
        ["CPU per GET (the floor), all processes, ms",
         *[got[n]["cpu_ms_per_floor"]["all"] for n in names]],
        ["agent turn task run time, median ms (goal ≤ 15)",
         *[got[n]["turn_ms"]["median"] for n in names]],
        ["the same, p99 ms", *[got[n]["turn_ms"]["p99"] for n in names]],
        ["the same, median of the first ten turns / of the last ten",
         *[f"{got[n]['first_ten_turns_ms']:.1f} / {got[n]['last_ten_turns_ms']:.1f}"
           for n in names]],
        ["CPU per turn, Celery processes, ms",
         *[got[n]["cpu_ms_per_turn"]["celery"] for n in names]],
        ["CPU per turn, all processes, ms", *[got[n]["cpu_ms_per_turn"]["all"] for n in names]],
        ["GET floor median ms", *[got[n]["samples"]["floor"]["median"] for n in names]],
        ["read_file ?wait median ms", *[got[n]["samples"]["read_file"]["median"] for n in names]],
        ["read_file ?wait p99 ms", *[got[n]["samples"]["read_file"]["p99"] for n in names]],
    ]  # fmt: skip
    head = (
        f"{results['rounds'] * BLOCK} reads and floors in blocks of {BLOCK}, "
        f"{results['sessions']} sessions of {results['steps']} reads per stack, interleaved; "
        f"load average {results['load_before']} → {results['load_after']}"
    )
    return [head + "\n\n" + markdown_table(["figure", *names], rows)]


if __name__ == "__main__":
    main()
