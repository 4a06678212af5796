"""The four figures of issue 14, through the REST API and websockets of `manage.py up`.

Each figure is taken against the floor of a plain `GET /api/sessions/{id}`, measured
interleaved with it:

1. an allowed `read_file` with `?wait=`: its median minus the floor's, in ms;
2. `search_codebase` with `?wait=` on a clone of the installed Django package: its
   median minus the floor's, over the median of the same `rg` command line run raw
   on the same clone (`bench_engine.rg_command`);
3. POST of a call that needs approval → its `tool_call.awaiting_approval` event on a
   logged-in reviewer's `/ws/approvals/`: p50 and p99, in ms;
4. `GET /api/sessions` with 150 sessions over with 10, each over its floor (`--quick`:
   30 over 10, fewer rounds: a smoke run, not figures).

`--before REF` also starts the stack of that commit (a temporary `git worktree` under
/tmp) and measures both in the same run, round by round, interleaved, so that the
machine's load falls on both alike. The load average is noted before and after.

Run: .venv/bin/python benchmarks/bench_latency.py [--quick] [--before 8dc22c1]
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import _common  # noqa: F401 - puts the project root on sys.path
import django
import httpx
from _common import ROOT, emit, markdown_table, parser, summary
from bench_api import WAIT, Stack, free_port, make_repo, stack_env
from bench_engine import SEARCHES, raw_rg

PASSWORD = "bench-password-14"
TOKENS = f"""
import json
from django.contrib.auth.models import Group, User
from tools_app import services
operator = User.objects.create_user("olga")
reviewer = User.objects.create_user("rita", password="{PASSWORD}")
reviewer.groups.add(Group.objects.get_or_create(name="reviewers")[0])
print(json.dumps({{
    "agent": services.api_token_create(user=operator, scope="agent"),
    "review": services.api_token_create(user=reviewer, scope="review"),
}}))
"""


def load() -> str:
    """The load average over 1, 5 and 15 minutes, as `uptime` shows it."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


# --- a websocket reader, just enough of RFC 6455 for daphne -----------------------------


class Inbox:
    """A reviewer's `/ws/approvals/`: every message with the time it arrived."""

    def __init__(self, port: int, cookie: str) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        request = (
            f"GET /ws/approvals/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            f"Origin: http://127.0.0.1:{port}\r\nCookie: {cookie}\r\n\r\n"
        )
        self.sock.sendall(request.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.sock.recv(1)
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise RuntimeError(f"websocket refused: {head[:200]!r}")
        self.seen: dict[int, float] = {}
        self.cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _exactly(self, size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            if not chunk:
                raise EOFError
            data += chunk
        return data

    def _frame(self) -> tuple[int, bytes]:
        first, second = self._exactly(2)
        size = second & 0x7F
        if size == 126:
            size = int.from_bytes(self._exactly(2), "big")
        elif size == 127:
            size = int.from_bytes(self._exactly(8), "big")
        return first & 0x0F, self._exactly(size)

    def _read(self) -> None:
        with contextlib.suppress(OSError, EOFError):
            while True:
                opcode, payload = self._frame()
                now = time.perf_counter()
                if opcode == 9:  # ping → pong (a client's frame is masked)
                    mask = os.urandom(4)
                    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
                    self.sock.sendall(bytes([0x8A, 0x80 | len(payload)]) + mask + masked)
                elif opcode == 1:
                    self._note(json.loads(payload), now)
                elif opcode == 8:
                    return

    def _note(self, event: dict[str, Any], now: float) -> None:
        if event.get("type") == "tool_call.awaiting_approval":
            with self.cond:
                self.seen.setdefault(int(event["tool_call"]), now)
                self.cond.notify_all()

    def arrival(self, call_id: int, timeout: float = 30) -> float:
        with self.cond:
            if not self.cond.wait_for(lambda: call_id in self.seen, timeout):
                raise RuntimeError(f"no awaiting_approval event for call {call_id}")
            return self.seen[call_id]


# --- one stack: a checkout of agentweb, its users, sessions and reviewer ----------------


class Target:
    def __init__(self, name: str, root: Path, tmp: Path, concurrency: int) -> None:
        self.name, self.root = name, root
        var = tmp / name.split()[0] / "var"
        var.mkdir(parents=True)
        self.env = stack_env(var)
        manage = [sys.executable, "manage.py"]
        subprocess.run([*manage, "migrate", "-v0"], cwd=root, env=self.env, check=True)
        shell = subprocess.run([*manage, "shell", "-c", TOKENS], cwd=root, env=self.env,
                               check=True, capture_output=True, text=True)  # fmt: skip
        self.tokens = json.loads(shell.stdout.strip().splitlines()[-1])
        self.stack = Stack(var, free_port(), concurrency, self.env, root)
        self.samples: dict[str, list[float]] = {}
        self.next_file = 0

    def start(self, repo: Path, tree: Path) -> None:
        self.stack.start(self.tokens["agent"])
        self.http = httpx.Client(
            base_url=self.stack.url, timeout=WAIT + 30, trust_env=False,
            headers={"Authorization": f"Bearer {self.tokens['agent']}"},
        )  # fmt: skip
        self.small = self.new_session(repo)
        self.django = self.new_session(tree)

    def stop(self) -> list[int]:
        with contextlib.suppress(Exception):
            self.http.close()
        return self.stack.stop()

    def new_session(self, repo: Path, wait: bool = True) -> dict[str, Any]:
        answer = self.http.post("/api/sessions", json={"task": "bench", "repo": str(repo)})
        answer.raise_for_status()
        session: dict[str, Any] = answer.json()
        deadline = time.monotonic() + 120
        while wait and session["status"] == "queued":
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name}: session {session['id']} was never cloned")
            time.sleep(0.05)
            session = self.http.get(f"/api/sessions/{session['id']}").json()
        return session

    def login(self) -> str:
        with httpx.Client(base_url=self.stack.url, trust_env=False) as browser:
            browser.get("/login/")
            form = {"username": "rita", "password": PASSWORD,
                    "csrfmiddlewaretoken": browser.cookies["csrftoken"]}  # fmt: skip
            browser.post("/login/", data=form)
            return "; ".join(f"{k}={v}" for k, v in browser.cookies.items())

    def timed(self, name: str, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        start = time.perf_counter()
        answer = self.http.request(method, path, **kwargs)
        self.samples.setdefault(name, []).append((time.perf_counter() - start) * 1000)
        answer.raise_for_status()
        return answer.json()  # type: ignore[no-any-return]

    def floor(self, name: str = "floor") -> None:
        self.timed(name, "GET", f"/api/sessions/{self.small['id']}")

    def call(self, name: str, session: dict[str, Any], tool: str, args: dict[str, Any]) -> None:
        path = f"/api/sessions/{session['id']}/tool-calls?wait={WAIT}"
        data = self.timed(name, "POST", path, json={"tool": tool, "args": args})
        if data["status"] != "succeeded":
            raise RuntimeError(f"{self.name}: {tool} ended {data['status']}: {data['result']}")


# --- the four figures ----------------------------------------------------------------------


def read_round(target: Target) -> None:
    target.floor()
    target.next_file += 1
    path = f"files/f{target.next_file:04d}.txt"
    target.call("read_file", target.small, "read_file", {"path": path})
    # What the API alone costs: store the call and queue it, no ?wait (not a figure).
    target.next_file += 1
    body = {"tool": "read_file", "args": {"path": f"files/f{target.next_file:04d}.txt"}}
    target.timed("read_file_no_wait", "POST", f"/api/sessions/{target.small['id']}/tool-calls",
                 json=body)  # fmt: skip


def search_round(target: Target, round_: int) -> None:
    for index, (_, args) in enumerate(SEARCHES):
        target.floor(f"search_floor_{index}")
        # A different max_results each round: no answer comes from the session's cache.
        target.call(f"search_{index}", target.django, "search_codebase",
                    {**args, "max_results": 50 + round_})  # fmt: skip
        start = time.perf_counter()
        raw_rg(Path(target.django["workspace"]), args)
        elapsed = (time.perf_counter() - start) * 1000
        target.samples.setdefault(f"search_raw_{index}", []).append(elapsed)


def approval_round(target: Target, round_: int) -> None:
    body = {"tool": "write_file", "args": {"path": ".env", "content": f"S={round_}\n"}}
    start = time.perf_counter()
    answer = target.http.post(f"/api/sessions/{target.small['id']}/tool-calls", json=body)
    answer.raise_for_status()
    arrived = target.inbox.arrival(int(answer.json()["id"]))
    target.samples.setdefault("approval_event", []).append((arrived - start) * 1000)


def list_round(target: Target, label: str) -> None:
    target.floor(f"list_floor_{label}")
    target.timed(f"list_{label}", "GET", "/api/sessions")
    # The same number of items as the page at 10 sessions: what the total alone costs.
    target.timed(f"list_{label}_limit_10", "GET", "/api/sessions?limit=10")


def grow_sessions(target: Target, repo: Path, total: int) -> None:
    count = len(target.http.get("/api/sessions?limit=500").json()["items"])
    for _ in range(total - count):
        target.new_session(repo, wait=False)
    deadline = time.monotonic() + 300
    while target.http.get("/api/sessions?status=queued").json()["items"]:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{target.name}: sessions were never cloned")
        time.sleep(0.2)


def measure(targets: list[Target], repo: Path, quick: bool) -> None:
    rounds = {"read": 10, "search": 2, "approval": 10, "list": 10} if quick else {
        "read": 200, "search": 25, "approval": 200, "list": 100}  # fmt: skip
    totals = (10, 30) if quick else (10, 150)
    for target in targets:
        read_round(target)  # warm up each stack's worker processes
    for _ in range(rounds["read"]):
        for target in targets:
            read_round(target)
    for round_ in range(rounds["search"]):
        for target in targets:
            search_round(target, round_)
    for target in targets:
        # Connected just before: 8dc22c1's websockets close after 5 s without a message.
        target.inbox = Inbox(target.stack.port, target.login())
    for round_ in range(rounds["approval"]):
        for target in targets:
            approval_round(target, round_)
    for label, total in zip(("10", "150"), totals, strict=True):
        for target in targets:
            grow_sessions(target, repo, total)
        for _ in range(rounds["list"]):
            for target in targets:
                list_round(target, label)


def figures(target: Target) -> dict[str, Any]:
    s = {name: summary(values) for name, values in target.samples.items()}
    med = {name: value["median"] for name, value in s.items()}
    searches = [
        (med[f"search_{i}"] - med[f"search_floor_{i}"]) / med[f"search_raw_{i}"]
        for i in range(len(SEARCHES))
    ]
    at_10 = med["list_10"] / med["list_floor_10"]
    list_ratio = (med["list_150"] / med["list_floor_150"]) / at_10
    same_page = (med["list_150_limit_10"] / med["list_floor_150"]) / at_10
    return {
        "samples": s,
        "read_over_floor_ms": med["read_file"] - med["floor"],
        "search_over_raw": dict(zip([label for label, _ in SEARCHES], searches, strict=True)),
        "search_over_raw_median": statistics.median(searches),
        "approval_event_ms": s["approval_event"],
        "list_150_over_10": list_ratio,
        "list_150_over_10_same_page": same_page,
    }


def tables(results: dict[str, Any]) -> list[str]:
    names = list(results["figures"])
    got = results["figures"]
    rows = [
        ["allowed read_file ?wait minus the GET floor, ms (goal ≤ 5)",
         *[got[n]["read_over_floor_ms"] for n in names]],
        ["search_codebase ?wait minus the floor, over raw rg, median of 4 patterns "
         "(goal ≤ 1.2x)", *[got[n]["search_over_raw_median"] for n in names]],
        ["POST needing approval → event on /ws/approvals/, p50 ms (goal ≤ 10)",
         *[got[n]["approval_event_ms"]["median"] for n in names]],
        ["the same, p99 ms (goal ≤ 50)", *[got[n]["approval_event_ms"]["p99"] for n in names]],
        ["GET /api/sessions at 150 over at 10, each over its floor (goal ≤ 1.2x)",
         *[got[n]["list_150_over_10"] for n in names]],
        ["the same, both pages of 10 items (`?limit=10` at 150)",
         *[got[n]["list_150_over_10_same_page"] for n in names]],
    ]  # fmt: skip
    detail = [
        [name, *[got[n]["samples"][name]["median"] for n in names],
         *[got[n]["samples"][name]["p99"] for n in names]]
        for name in got[names[0]]["samples"]
    ]  # fmt: skip
    head = "The four figures; load average " + f"{results['load_before']} → {results['load_after']}"
    return [
        head + "\n\n" + markdown_table(["figure", *names], rows),
        "Raw samples (ms)\n\n"
        + markdown_table(
            ["series", *[f"{n} median" for n in names], *[f"{n} p99" for n in names]], detail
        ),
    ]


def checkout(ref: str, tmp: Path) -> Path:
    """A worktree of `ref` under /tmp (removed at the end)."""
    root = tmp / f"before-{ref}"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(root), ref],
                   check=True)  # fmt: skip
    return root


def main() -> None:
    arguments = parser(__doc__.splitlines()[0])
    arguments.add_argument("--before", metavar="REF", help="also measure this commit, interleaved")
    arguments.add_argument("--concurrency", type=int, default=4, help="Celery worker processes")
    options = arguments.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-latency-"))
    targets: list[Target] = []
    left: list[int] = []
    try:
        repo, tree = make_repo(tmp, 1100), make_tree(tmp)
        roots = [("after", ROOT)]
        if options.before:
            roots.insert(0, (f"before ({options.before})", checkout(options.before, tmp)))
        for name, root in roots:
            targets.append(Target(name, root, tmp, options.concurrency))
            targets[-1].start(repo, tree)
        results: dict[str, Any] = {"load_before": load()}
        measure(targets, repo, options.quick)
        results["load_after"] = load()
        results["figures"] = {target.name: figures(target) for target in targets}
    except BaseException:
        for target in targets:
            print(target.stack.tail(), file=sys.stderr)
        raise
    finally:
        for target in targets:
            left += target.stop()
        if options.before:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                            str(tmp / f"before-{options.before}")], check=False)  # fmt: skip
        shutil.rmtree(tmp, ignore_errors=True)
    results["leftover_processes"] = left
    emit("bench_latency", results, tables(results), options.json)


def make_tree(tmp: Path) -> Path:
    """A git repository holding a copy of the installed Django package (4.5k files)."""
    tree = tmp / "django-tree"
    shutil.copytree(django.__path__[0], tree / "django")
    git = ["git", "-C", str(tree), "-c", "user.email=b@example.com", "-c", "user.name=bench"]
    for step in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "tree"]):
        subprocess.run([*git, *step], check=True)
    return tree


if __name__ == "__main__":
    main()
