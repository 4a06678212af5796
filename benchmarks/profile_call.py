"""Where one allowed call and one agent turn spend their CPU: py-spy on the real stack.

Starts this checkout's stack (`manage.py up --concurrency 1`: daphne, one Celery pool
process, the embedded Redis), then records, with `py-spy record --format raw` (CPU
samples only: idle threads are left out) on daphne and on the Celery pool process:

1. N allowed `read_file` calls through `POST …/tool-calls?wait=30` (a different file
   each, so nothing comes from the cache);
2. sessions driven by the scripted provider, each 40 `read_file` steps then `task_done`;
3. (`--clients N`) calls awaiting approval, each event pushed to N reviewers' sockets.

For each process and phase it prints the functions with the most samples, inclusive
(the function and what it calls) and self, as a share of that process's samples.

Needs py-spy (`pip install py-spy`) and the right to ptrace the stack's processes.
Run: .venv/bin/python benchmarks/profile_call.py [--calls 300] [--sessions 4]
"""

from __future__ import annotations

import collections
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _common  # noqa: F401 - puts the project root on sys.path
from _common import ROOT, emit, markdown_table, parser
from _stacks import Inboxes, Target, load
from bench_api import make_repo

PY_SPY = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")


class Recording:
    """`py-spy record` of some processes until stopped; collapsed stacks by role."""

    def __init__(self, roles: dict[str, list[int]], folder: Path) -> None:
        self.files: dict[str, list[Path]] = {}
        self.processes = []
        for role, pids in roles.items():
            for pid in pids:
                output = folder / f"{role}-{pid}-{time.monotonic_ns()}.txt"
                self.files.setdefault(role, []).append(output)
                command = [PY_SPY, "record", "--pid", str(pid), "--format", "raw", "--rate",
                           "250", "--nonblocking", "--output", str(output)]  # fmt: skip
                self.processes.append(
                    subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                )
        time.sleep(1.0)  # py-spy attaches

    def stop(self) -> dict[str, dict[str, Any]]:
        for process in self.processes:
            process.send_signal(signal.SIGINT)
        for process in self.processes:
            process.wait(timeout=60)
        return {
            role: top("\n".join(path.read_text() for path in paths if path.exists()))
            for role, paths in self.files.items()
        }


def frame_name(frame: str) -> str:
    """`function (path/file.py:line)` → `function (file.py)`, project paths kept short."""
    name, _, where = frame.partition(" (")
    path = where.rsplit(":", 1)[0]
    for marker in ("site-packages/", "/tools_app/", "/agentweb/", "python3.11/"):
        if marker in path:
            path = path.split(marker, 1)[1]
            if marker in ("/tools_app/", "/agentweb/"):
                path = marker.strip("/") + "/" + path
            break
    return f"{name} ({path})"


def top(collapsed: str, count: int = 15) -> dict[str, Any]:
    inclusive: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    total = 0
    for line in collapsed.splitlines():
        stack, _, samples = line.rpartition(" ")
        if not stack or not samples.isdigit():
            continue
        n = int(samples)
        frames = [frame_name(f) for f in stack.split(";") if not f.startswith("process ")]
        frames = [f for f in frames if not f.startswith("thread (")]
        total += n
        for frame in set(frames):
            inclusive[frame] += n
        if frames:
            own[frames[-1]] += n
    share = (lambda n: round(100 * n / total, 1)) if total else (lambda n: 0.0)
    return {
        "samples": total,
        "inclusive": [(name, share(n)) for name, n in inclusive.most_common(count)],
        "self": [(name, share(n)) for name, n in own.most_common(count)],
    }


def reads(target: Target, calls: int) -> None:
    for i in range(calls):
        body = {"tool": "read_file", "args": {"path": f"files/f{i:04d}.txt"}}
        answer = target.http.post(
            f"/api/sessions/{target.session['id']}/tool-calls?wait=30", json=body
        )
        if answer.json().get("status") != "succeeded":
            raise RuntimeError(f"read_file did not succeed: {answer.text[:300]}")


def scripted_sessions(target: Target, repo: Path, script: Path, sessions: int) -> None:
    for _ in range(sessions):
        session = target.new_session(repo, model=f"script:{script}")
        deadline = time.monotonic() + 300
        while session["status"] not in ("done", "failed", "cancelled"):
            if time.monotonic() > deadline:
                raise RuntimeError(f"session {session['id']} did not end")
            time.sleep(0.1)
            session = target.http.get(f"/api/sessions/{session['id']}").json()
        if session["status"] != "done":
            raise RuntimeError(f"session {session['id']} ended {session['status']}")


def fan_out(target: Target, inboxes: Inboxes, calls: int) -> None:
    for round_ in range(calls):
        body = {"tool": "write_file", "args": {"path": ".env", "content": f"S={round_}\n"}}
        path = f"/api/sessions/{target.session['id']}/tool-calls"
        inboxes.arrivals(int(target.http.post(path, json=body).json()["id"]))


def write_script(folder: Path, steps: int) -> Path:
    done = {"tool": "task_done", "args": {"summary": "profile script finished"}}
    script = [{"tool": "read_file", "args": {"path": f"files/f{i:04d}.txt"}} for i in range(steps)]
    path = folder / "reads.json"
    path.write_text(json.dumps([*script, done]))
    return path


def main() -> None:
    arguments = parser(__doc__.splitlines()[0])
    arguments.add_argument("--calls", type=int, default=300)
    arguments.add_argument("--sessions", type=int, default=4)
    arguments.add_argument("--clients", type=int, default=0, help="also profile a fan-out")
    arguments.add_argument("--only", choices=["read_file", "agent_turn", "fan_out"])
    options = arguments.parse_args()
    calls, sessions = (30, 1) if options.quick else (options.calls, options.sessions)
    tmp = Path(tempfile.mkdtemp(prefix="profile-call-"))
    target: Target | None = None
    results: dict[str, Any] = {}
    try:
        repo = make_repo(tmp, max(calls, 40))
        script = write_script(tmp, 40)
        target = Target("after", ROOT, tmp, 1)
        target.start(repo)
        reads(target, 10)  # warm up
        scripted_sessions(target, repo, script, 1)
        roles = target.processes()
        pids = {"daphne": roles["daphne"], "celery (worker, pool, beat)": roles["celery"]}
        results["load_before"] = load()
        inboxes = None
        if options.clients and options.only in (None, "fan_out"):  # connected before recording
            inboxes = Inboxes(target.stack.port, target.login(), options.clients)
        phases = {
            "read_file": lambda: reads(target, calls),
            "agent_turn": lambda: scripted_sessions(target, repo, script, sessions),
            "fan_out": lambda: fan_out(target, inboxes, 20),  # type: ignore[arg-type]
        }
        for phase, run in phases.items():
            if (options.only or phase) != phase or (phase == "fan_out" and inboxes is None):
                continue
            recording = Recording(pids, tmp)
            run()
            results[phase] = recording.stop()
        if inboxes is not None:
            inboxes.close()
        results["load_after"] = load()
        results["calls"], results["sessions"] = calls, sessions
        results["clients"] = options.clients
    finally:
        if target is not None:
            target.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    emit("profile_call", results, tables(results), options.json)


def tables(results: dict[str, Any]) -> list[str]:
    found = []
    phases = (
        ("read_file", f"{results['calls']} allowed read_file ?wait calls"),
        ("agent_turn", f"{results['sessions']} scripted sessions of 41 turns"),
        ("fan_out", f"20 calls awaiting approval to {results['clients']} sockets"),
    )
    for phase, label in phases:
        if phase not in results:
            continue
        for process, got in results[phase].items():
            rows = [
                [name, pct, own_name, own_pct]
                for (name, pct), (own_name, own_pct) in zip(
                    got["inclusive"], got["self"], strict=False
                )
            ]
            found.append(
                f"{label}: {process}, {got['samples']} CPU samples at 250/s (load "
                f"{results['load_before']} → {results['load_after']})\n\n"
                + markdown_table(["inclusive", "%", "self", "%"], rows)
            )
    return found


if __name__ == "__main__":
    main()
