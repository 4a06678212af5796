"""The agent runtime: sessions driven by agentweb's own loop with the scripted provider.

Starts the whole stack (`manage.py up`, as bench_api.py does: embedded Redis, SQLite,
a Celery worker with beat, daphne) and starts sessions with `POST /api/sessions`
`{task, repo, model: "script:/abs/path.json"}`, which the worker drives one Celery task
per model turn. Then measures, from the stored timestamps (Event.created_at,
AgentMessage.created_at, read with the ORM on the same SQLite file):

(a) overhead per turn: from one tool call's `tool_call.succeeded` event to the next
    `tool_call.received` event, with scripts of 20 read_file steps then task_done, with
    1 session running (5 such sessions one after another) and with 50 at once; split
    into the rest of the finishing task (succeeded → tool results stored), the hop to
    the next turn task and the model turn (results stored → `agent.message`: commit,
    enqueue via Redis, pickup, load, scripted model call, recording), and settling the
    reply (`agent.message` → the call recorded);
(b) worker slots held by sessions waiting on approvals: N sessions whose first step is a
    protected write (`.github/workflows/x.yml`), all `waiting`; then the worker's active
    tasks (`app.control.inspect().active()` on the stack's broker) must hold no agent
    turn, and a new session still runs to `done` while they wait.

Run: .venv/bin/python benchmarks/bench_runtime.py [--quick] [--concurrency 4]
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _common  # noqa: F401 - puts the project root on sys.path
import httpx
from _common import emit, markdown_table, parser, summary
from bench_api import Stack, client, free_port, make_repo, setup_django, stack_env, wait_until

READS = 20
AGENT_TURN = "tools_app.tasks.agent_turn"


def write_scripts(folder: Path, reads: int) -> dict[str, Path]:
    """`reads`: that many read_file steps (distinct files) then task_done; `waits`: a
    protected write first (needs approval), then task_done."""
    done = {"tool": "task_done", "args": {"summary": "bench script finished"}}
    steps = [{"tool": "read_file", "args": {"path": f"files/f{i:04d}.txt"}} for i in range(reads)]
    wait = {"tool": "write_file", "args": {"path": ".github/workflows/x.yml", "content": "x\n"}}
    scripts = {"reads": [*steps, done], "waits": [wait, done], "short": [*steps[:3], done]}
    paths = {}
    for name, script in scripts.items():
        paths[name] = folder / f"{name}.json"
        paths[name].write_text(json.dumps(script))
    return paths


def start(http: httpx.Client, repo: Path, script: Path, count: int, label: str) -> list[int]:
    ids = []
    for i in range(count):
        body = {"task": f"bench {label} {i}", "repo": str(repo), "model": f"script:{script}"}
        answer = http.post("/api/sessions", json=body)
        answer.raise_for_status()
        ids.append(int(answer.json()["id"]))
    return ids


def wait_status(ids: list[int], status: str, timeout: float) -> float:
    """Wait until every session has `status`; fail early on one that ended otherwise."""
    from tools_app.models import AgentSession

    started = time.monotonic()

    def reached() -> bool:
        found = dict(AgentSession.objects.filter(pk__in=ids).values_list("pk", "status"))
        bad = {pk: s for pk, s in found.items() if s in ("failed", "cancelled")}
        if bad:
            pk = next(iter(bad))
            summary_ = AgentSession.objects.get(pk=pk).summary
            raise RuntimeError(f"session {pk} ended {bad[pk]}: {summary_[:300]}")
        return sum(1 for s in found.values() if s == status) == len(ids)

    wait_until(reached, timeout, f"{len(ids)} sessions to be {status}")
    return time.monotonic() - started


def ms(later: Any, earlier: Any) -> float:
    return float((later - earlier).total_seconds() * 1000)


def turn_gaps(ids: list[int]) -> dict[str, list[float]]:
    """Per turn after a tool call: the whole gap and its three parts (ms)."""
    from tools_app.models import AgentMessage, Event

    stored = {
        (m.session_id, m.index): m.created_at
        for m in AgentMessage.objects.filter(session_id__in=ids, role="tool_results")
    }
    gaps: dict[str, list[float]] = {"total": [], "finish": [], "hop_and_model": [], "settle": []}
    for session in ids:
        succeeded = message = None
        results = None
        for event in Event.objects.filter(session_id=session).order_by("seq"):
            if event.type == "tool_call.succeeded":
                succeeded, message, results = event.created_at, None, None
            elif event.type == "agent.message" and succeeded is not None:
                message = event.created_at
                results = stored.get((session, int(event.data["index"]) - 1))
            elif event.type == "tool_call.received" and succeeded is not None:
                if message is None or results is None:
                    raise RuntimeError(f"session {session}: no agent.message before a call")
                gaps["total"].append(ms(event.created_at, succeeded))
                gaps["finish"].append(ms(results, succeeded))
                gaps["hop_and_model"].append(ms(message, results))
                gaps["settle"].append(ms(event.created_at, message))
                succeeded = None
    return gaps


def task_times(log: str) -> list[float]:
    """The run time (ms) of every agent turn task in a piece of the worker's log."""
    found = re.findall(re.escape(AGENT_TURN) + r"\[[-0-9a-f]+\] succeeded in ([0-9.e-]+)s", log)
    return [float(seconds) * 1000 for seconds in found]


def per_turn(
    http: httpx.Client, stack: Stack, repo: Path, script: Path, count: int, rounds: int
) -> dict[str, Any]:
    """`count` sessions at once, `rounds` times one after another (for enough samples)."""
    gaps: dict[str, list[float]] = {}
    wall = 0.0
    logged = stack.log.stat().st_size
    for round_ in range(rounds):
        ids = start(http, repo, script, count, f"turns x{count} round {round_}")
        wall += wait_status(ids, "done", 120 + 10 * count)
        for name, values in turn_gaps(ids).items():
            gaps.setdefault(name, []).extend(values)
    with stack.log.open("rb") as log:
        log.seek(logged)
        tasks = task_times(log.read().decode(errors="replace"))
    if tasks:
        gaps["turn_task"] = tasks
    expected = READS * count * rounds
    if len(gaps["total"]) != expected:
        raise RuntimeError(f"expected {expected} turns after a tool call, got {len(gaps['total'])}")
    return {"sessions": count, "rounds": rounds, "turns": len(gaps["total"]), "wall_s": wall,
            "turns_per_s": (READS + 1) * count * rounds / wall,
            "ms": {name: summary(values) for name, values in gaps.items()}}  # fmt: skip


def active_tasks() -> tuple[int, int]:
    """(all active tasks, active agent turns) on every worker of the stack's broker."""
    from agentweb.celery import app

    replies = app.control.inspect(timeout=2.0).active()
    if not replies:
        raise RuntimeError("no worker answered `inspect active`")
    tasks = [task for running in replies.values() for task in running]
    return len(tasks), sum(1 for task in tasks if task.get("name") == AGENT_TURN)


def waiting(http: httpx.Client, repo: Path, scripts: dict[str, Path], count: int) -> dict[str, Any]:
    from tools_app.models import AgentSession, ToolCall

    ids = start(http, repo, scripts["waits"], count, "waits")
    to_wait = wait_status(ids, "waiting", 120 + count)
    calls = ToolCall.objects.filter(session_id__in=ids, status="awaiting_approval").count()
    samples = []
    for _ in range(5):
        samples.append(active_tasks())
        time.sleep(0.2)
    extra = start(http, repo, scripts["short"], 1, "while waiting")
    extra_s = wait_status(extra, "done", 60)
    still = AgentSession.objects.filter(pk__in=ids, status="waiting").count()
    return {"sessions": count, "awaiting_approval": calls, "to_all_waiting_s": to_wait,
            "active_max": max(s[0] for s in samples),
            "active_agent_turns_max": max(s[1] for s in samples),
            "inspections": len(samples), "extra_session_done_s": extra_s,
            "still_waiting": still}  # fmt: skip


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f}, {five:.2f}, {fifteen:.2f}"


def measure(stack: Stack, tokens: dict[str, str], repo: Path, paths: dict[str, Path],
            quick: bool) -> dict[str, Any]:  # fmt: skip
    # (sessions at once, rounds one after another), then sessions waiting on approval
    runs, waits = (((1, 1), (3, 1)), 10) if quick else (((1, 5), (50, 1)), 200)
    results: dict[str, Any] = {"concurrency": stack.concurrency, "turns": []}
    with client(stack.url, tokens["agent"]) as http:
        wait_status(start(http, repo, paths["short"], 1, "warm-up"), "done", 60)
        stack.note_processes()
        results["load_before"] = load()
        for count, rounds in runs:
            results["turns"].append(per_turn(http, stack, repo, paths["reads"], count, rounds))
        results["waiting"] = waiting(http, repo, paths, waits)
        results["load_after"] = load()
    if results["waiting"]["active_agent_turns_max"]:
        raise RuntimeError(f"sessions waiting on approval hold worker slots: {results['waiting']}")
    return results


def main() -> None:
    arguments = parser(__doc__.splitlines()[0])
    arguments.add_argument(
        "--concurrency", type=int, default=int(os.environ.get("AGENTWEB_CONCURRENCY", "4")),
        help="Celery worker processes (`up --concurrency`, default AGENTWEB_CONCURRENCY or 4)",
    )  # fmt: skip
    options = arguments.parse_args()
    if shutil.which("git") is None:
        sys.exit("bench_runtime needs git (to make the repository the sessions clone)")
    tmp = Path(tempfile.mkdtemp(prefix="bench-runtime-"))
    stack: Stack | None = None
    try:
        var = tmp / "var"
        env = stack_env(var)
        repo = make_repo(tmp, READS)
        paths = write_scripts(tmp, READS)
        tokens = setup_django(env)
        stack = Stack(var, free_port(), options.concurrency, env)
        stack.start(tokens["agent"])
        results = measure(stack, tokens, repo, paths, options.quick)
    except BaseException:
        if stack is not None:
            print(stack.tail(), file=sys.stderr)
        raise
    finally:
        left = stack.stop() if stack is not None else []
        shutil.rmtree(tmp, ignore_errors=True)
        if left:
            print(f"warning: killed {len(left)} processes left after `up` stopped: {left}",
                  file=sys.stderr)  # fmt: skip
    results["leftover_processes"] = left
    emit("bench_runtime", results, tables(results), options.json)


def tables(results: dict[str, Any]) -> list[str]:
    rows = []
    for run in results["turns"]:
        parts = run["ms"]
        task = parts.get("turn_task")
        rows.append(
            [f"{run['sessions']} ({run['rounds']} round{'s' if run['rounds'] > 1 else ''})",
             run["turns"], run["turns_per_s"], parts["total"]["median"],
             parts["total"]["p99"], parts["finish"]["median"], parts["hop_and_model"]["median"],
             parts["hop_and_model"]["p99"], parts["settle"]["median"], parts["settle"]["p99"],
             task["median"] if task else "-", task["p99"] if task else "-"]
        )  # fmt: skip
    first = markdown_table(
        ["sessions at once", "turns", "turns/s (incl. start)", "succeeded→next received median ms",
         "p99 ms", "succeeded→results stored median ms",
         "results stored→agent.message median ms", "p99 ms",
         "agent.message→received median ms", "p99 ms",
         "turn task run time (Celery log) median ms", "p99 ms"],
        rows,
    )  # fmt: skip
    w = results["waiting"]
    second = markdown_table(
        ["sessions waiting on approval", "calls awaiting approval", "all waiting after s",
         "active agent turns (max of inspections)", "active tasks of any kind",
         "a new session ran to done in s", "still waiting after it"],
        [[w["sessions"], w["awaiting_approval"], w["to_all_waiting_s"],
          f"{w['active_agent_turns_max']} ({w['inspections']} inspections)", w["active_max"],
          w["extra_session_done_s"], w["still_waiting"]]],
    )  # fmt: skip
    worker = f"Celery prefork concurrency {results['concurrency']}"
    loads = f"load average {results['load_before']} before, {results['load_after']} after"
    return [
        f"Runtime overhead per turn, scripted provider, {READS} read_file steps then "
        f"task_done per session ({worker}; {loads})\n\n" + first,
        "Worker slots held by sessions waiting on approvals (`inspect().active()`)\n\n" + second,
    ]


if __name__ == "__main__":
    main()
