"""One push to many (issue 23): an awaiting-approval event to N reviewers' sockets.

Each stack (`manage.py up --concurrency 1`: SQLite, its own embedded Redis, a Celery
worker, daphne) has N reviewer websockets on `/ws/approvals/` (`_stacks.Inboxes`: one
reader thread for all of them), logged in as the same reviewer. Each round POSTs a
`write_file` to `.env` (the policy holds it: `awaiting_approval`); the figure is from the
`created_at` of the call's `tool_call.awaiting_approval` Event (stored by the worker in
the transaction that publishes on commit; same machine, same clock) to each socket's
receipt: one sample per socket per call. The stacks are measured round by round,
interleaved, so that the machine's load falls on all alike:

* `--before REF`: a `git worktree` of REF (its own channel layer);
* `--layers pubsub,redis`: this checkout with each channel layer (`AGENTWEB_CHANNEL_LAYER`;
  `pubsub` is the default, `redis` is channels_redis's per-channel layer of before).

daphne's CPU time per event (its own counter in /proc over the rounds) is noted too.

Run: .venv/bin/python benchmarks/bench_fanout.py [--quick] [--before REF] [--clients 200]
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _common  # noqa: F401 - puts the project root on sys.path
from _common import ROOT, emit, markdown_table, parser, percentile, summary
from _stacks import Inboxes, Target, load, worktree
from bench_api import make_repo


def fan_out_round(target: Target, inboxes: Inboxes, offset: float, round_: int) -> None:
    body = {"tool": "write_file", "args": {"path": ".env", "content": f"S={round_}\n"}}
    answer = target.http.post(f"/api/sessions/{target.session['id']}/tool-calls", json=body)
    answer.raise_for_status()
    call = int(answer.json()["id"])
    arrivals = inboxes.arrivals(call)
    committed = target.event_created_at(call, "tool_call.awaiting_approval")
    times = [(at + offset - committed) * 1000 for at in arrivals]
    target.samples.setdefault("event_ms", []).extend(times)
    target.sample("last_socket_ms", max(times))


def measure(targets: list[Target], clients: int, calls: int) -> dict[str, Any]:
    inboxes = {t.name: Inboxes(t.stack.port, t.login(), clients) for t in targets}
    # perf_counter (what Inboxes notes) → wall clock, measured once, same machine.
    offset = time.time() - time.perf_counter()
    try:
        time.sleep(0.5)  # every consumer has joined its group
        for target in targets:  # warm-up
            fan_out_round(target, inboxes[target.name], offset, -1)
            target.samples.clear()
        cpu_before = {t.name: t.cpu() for t in targets}
        for round_ in range(calls):
            for target in targets:
                fan_out_round(target, inboxes[target.name], offset, round_)
                time.sleep(0.02)
        cpu_after = {t.name: t.cpu() for t in targets}
    finally:
        for box in inboxes.values():
            box.close()
    found: dict[str, Any] = {}
    for target in targets:
        events = target.samples["event_ms"]
        found[target.name] = {
            "event_ms": summary(events),
            "last_socket_p50_ms": statistics.median(target.samples["last_socket_ms"]),
            "p90_ms": percentile(events, 0.9),
            "cpu_ms_per_call": {
                role: (cpu_after[target.name][role] - seconds) * 1000 / calls
                for role, seconds in cpu_before[target.name].items()
            },
        }
    return found


def main() -> None:
    arguments = parser(__doc__.splitlines()[0])
    arguments.add_argument("--before", metavar="REF", help="also measure this commit")
    arguments.add_argument("--layers", default="pubsub", help="this checkout with these layers")
    arguments.add_argument("--clients", type=int, help="reviewer sockets (default 200, quick 20)")
    arguments.add_argument("--calls", type=int, help="calls (default 30, quick 5)")
    options = arguments.parse_args()
    clients = options.clients or (20 if options.quick else 200)
    calls = options.calls or (5 if options.quick else 30)
    tmp = Path(tempfile.mkdtemp(prefix="bench-fanout-"))
    targets: list[Target] = []
    results: dict[str, Any] = {"clients": clients, "calls": calls}
    try:
        with worktree(options.before, tmp) as before:
            repo = make_repo(tmp, 5)
            if before is not None:
                targets.append(Target(f"before ({options.before})", before, tmp, 1))
            for layer in options.layers.split(","):
                env = {"AGENTWEB_CHANNEL_LAYER": layer}
                targets.append(Target(f"after ({layer})", ROOT, tmp, 1, env))
            for target in targets:
                target.start(repo)
            results["load_before"] = load()
            results["stacks"] = measure(targets, clients, calls)
            results["load_after"] = load()
            results["leftover_processes"] = [pid for t in targets for pid in t.stop()]
    except BaseException:
        for target in targets:
            print(target.stack.tail(), file=sys.stderr)
            target.stop()
        raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    emit("bench_fanout", results, tables(results), options.json)


def tables(results: dict[str, Any]) -> list[str]:
    rows = [
        [name, got["event_ms"]["n"], got["event_ms"]["median"], got["p90_ms"],
         got["event_ms"]["p99"], got["last_socket_p50_ms"], got["cpu_ms_per_call"]["daphne"],
         got["cpu_ms_per_call"]["redis"]]
        for name, got in results["stacks"].items()
    ]  # fmt: skip
    head = (
        f"awaiting_approval event stored → received on each of {results['clients']} "
        f"/ws/approvals/ sockets, {results['calls']} calls, interleaved; load average "
        f"{results['load_before']} → {results['load_after']}"
    )
    return [
        head
        + "\n\n"
        + markdown_table(
            [
                "stack",
                "samples",
                "p50 ms",
                "p90 ms",
                "p99 ms",
                "last socket p50 ms",
                "daphne CPU ms / call",
                "Redis CPU ms / call",
            ],
            rows,
        )
    ]


if __name__ == "__main__":
    main()
