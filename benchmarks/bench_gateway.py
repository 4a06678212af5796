"""The gateway's hook (issue 24): an allowed PreToolUse against the REST GET floor.

Against `manage.py up` (SQLite, embedded Redis, daphne): one Claude Code session's
allowed `ls`, POSTed to `/api/hooks/claude-code` N times, each with a fresh
`tool_use_id` (each is a new call: stored, judged in gate mode, answered `allow` and
marked running, all in the request; no worker), against N `GET /api/sessions/{id}` of
that session. One httpx client per series, keep-alive; the two series interleaved so
that both see the same machine; a few warm-up requests first. The figure is the
difference of the medians.

`--quick`: 10 of each (a smoke run, not figures).

Run: .venv/bin/python benchmarks/bench_gateway.py [--quick]
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
from _common import emit, markdown_table, parser, summary
from bench_api import Stack, client, free_port, setup_django, stack_env

WARM_UP = 5


def event(index: int) -> dict[str, Any]:
    return {
        "session_id": "bench-claude-session",
        "cwd": "/home/olga/project",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "ls -la", "description": "list"},
        "tool_use_id": f"toolu_bench_{index}",
        "permission_mode": "default",
    }


def measure(url: str, token: str, rounds: int) -> dict[str, Any]:
    hook_ms: list[float] = []
    get_ms: list[float] = []
    with client(url, token) as hooks, client(url, token) as api:
        first = hooks.post("/api/hooks/claude-code", json=event(0)).json()
        if first["hookSpecificOutput"]["permissionDecision"] != "allow":
            raise RuntimeError(f"the allowed ls was not allowed: {first}")
        session = api.get("/api/sessions").json()["items"][0]["id"]
        for index in range(1, WARM_UP + rounds + 1):
            start = time.perf_counter()
            answer = hooks.post("/api/hooks/claude-code", json=event(index))
            hook = (time.perf_counter() - start) * 1000
            assert answer.json()["hookSpecificOutput"]["permissionDecision"] == "allow"
            start = time.perf_counter()
            assert api.get(f"/api/sessions/{session}").status_code == 200
            get = (time.perf_counter() - start) * 1000
            if index > WARM_UP:
                hook_ms.append(hook)
                get_ms.append(get)
    return {
        "hook_ms": summary(hook_ms),
        "get_ms": summary(get_ms),
        "over_floor_ms": statistics.median(hook_ms) - statistics.median(get_ms),
    }


def main() -> None:
    options = parser(__doc__.splitlines()[0]).parse_args()
    rounds = 10 if options.quick else 50
    tmp = Path(tempfile.mkdtemp(prefix="bench-gateway-"))
    stack: Stack | None = None
    try:
        var = tmp / "var"
        env = stack_env(var)
        tokens = setup_django(env)
        stack = Stack(var, free_port(), 1, env)
        stack.start(tokens["agent"])
        results = measure(stack.url, tokens["agent"], rounds)
    except BaseException:
        if stack is not None:
            print(stack.tail(), file=sys.stderr)
        raise
    finally:
        if stack is not None:
            stack.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    emit("bench_gateway", results, tables(results), options.json)


def tables(results: dict[str, Any]) -> list[str]:
    rows = [
        ["allowed PreToolUse (POST /api/hooks/claude-code)", *_cells(results["hook_ms"])],
        ["GET /api/sessions/{id} (the floor)", *_cells(results["get_ms"])],
    ]
    table = markdown_table(["request", "n", "median ms", "p99 ms"], rows)
    return [table, f"allowed PreToolUse over the GET floor: {results['over_floor_ms']:.2f} ms"]


def _cells(series: dict[str, float]) -> list[Any]:
    return [series["n"], series["median"], series["p99"]]


if __name__ == "__main__":
    main()
