"""Stacks to measure side by side: this checkout and `--before REF`, each a `manage.py up`.

Shared by `bench_fanout.py` and `bench_cost.py`. A `Target` is one stack (its own
`AGENTWEB_VAR`, SQLite file, embedded Redis, Celery worker and daphne) with an operator
(agent token), a reviewer (password and review token) and one running session. The
processes' own CPU counters (`/proc/PID/stat`) say what a call costs each of them;
`Inboxes` reads many reviewers' `/ws/approvals/` sockets from one thread.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import selectors
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import _common  # noqa: F401 - puts the project root on sys.path
import httpx
from _common import ROOT
from bench_api import WAIT, Stack, descendants, free_port, stack_env

PASSWORD = "bench-password-23"
USERS = f"""
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
CLK_TCK = os.sysconf("SC_CLK_TCK")


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


@contextlib.contextmanager
def worktree(ref: str | None, tmp: Path) -> Iterator[Path | None]:
    """A detached `git worktree` of `ref` under `tmp`, removed afterwards."""
    if ref is None:
        yield None
        return
    root = tmp / f"before-{ref}"
    git = ["git", "-C", str(ROOT), "worktree"]
    subprocess.run([*git, "add", "-q", "--detach", str(root), ref], check=True)
    try:
        yield root
    finally:
        subprocess.run([*git, "remove", "--force", str(root)], check=False)


class Target:
    """One stack of one checkout, with its people and one running session."""

    def __init__(
        self, name: str, root: Path, tmp: Path, concurrency: int, env: dict[str, str] | None = None
    ) -> None:
        self.name, self.root = name, root
        var = tmp / name.replace(" ", "-").replace("(", "").replace(")", "") / "var"
        var.mkdir(parents=True)
        self.database = var / "agentweb.sqlite3"
        self.env = stack_env(var) | {"AGENTWEB_DEMO": "0"} | (env or {})
        manage = [sys.executable, "manage.py"]
        subprocess.run([*manage, "migrate", "-v0"], cwd=root, env=self.env, check=True)
        shell = subprocess.run([*manage, "shell", "-c", USERS], cwd=root, env=self.env,
                               check=True, capture_output=True, text=True)  # fmt: skip
        self.tokens = json.loads(shell.stdout.strip().splitlines()[-1])
        self.stack = Stack(var, free_port(), concurrency, self.env, root)
        self.samples: dict[str, list[float]] = {}

    def start(self, repo: Path) -> None:
        self.stack.start(self.tokens["agent"])
        self.http = httpx.Client(
            base_url=self.stack.url, timeout=WAIT + 30, trust_env=False,
            headers={"Authorization": f"Bearer {self.tokens['agent']}"},
        )  # fmt: skip
        self.session = self.new_session(repo)
        self.stack.note_processes()

    def stop(self) -> list[int]:
        with contextlib.suppress(Exception):
            self.http.close()
        return self.stack.stop()

    def new_session(self, repo: Path, **extra: Any) -> dict[str, Any]:
        body = {"task": "bench", "repo": str(repo), **extra}
        answer = self.http.post("/api/sessions", json=body)
        answer.raise_for_status()
        session: dict[str, Any] = answer.json()
        deadline = time.monotonic() + 120
        while session["status"] == "queued":
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name}: session {session['id']} was never cloned")
            time.sleep(0.05)
            session = self.http.get(f"/api/sessions/{session['id']}").json()
        return session

    def login(self) -> str:
        """The reviewer's browser cookies, logged in through the login form."""
        with httpx.Client(base_url=self.stack.url, trust_env=False) as browser:
            browser.get("/login/")
            form = {"username": "rita", "password": PASSWORD,
                    "csrfmiddlewaretoken": browser.cookies["csrftoken"]}  # fmt: skip
            browser.post("/login/", data=form)
            if "sessionid" not in browser.cookies:
                raise RuntimeError(f"{self.name}: the reviewer could not log in")
            return "; ".join(f"{k}={v}" for k, v in browser.cookies.items())

    def sample(self, name: str, value: float) -> None:
        self.samples.setdefault(name, []).append(value)

    def event_created_at(self, call_id: int, type: str) -> float:
        """The wall-clock time (s) the call's event of `type` was stored."""
        with contextlib.closing(sqlite3.connect(self.database, timeout=30)) as db:
            row = db.execute(
                "SELECT created_at FROM tools_app_event WHERE type = ? "
                "AND json_extract(data, '$.tool_call') = ?",
                (type, call_id),
            ).fetchone()
        if row is None:
            raise RuntimeError(f"{self.name}: no {type} event for call {call_id}")
        return datetime.fromisoformat(row[0]).replace(tzinfo=UTC).timestamp()

    def processes(self) -> dict[str, list[int]]:
        """The stack's live processes by role: daphne, celery (main, pool, beat), redis."""
        roles: dict[str, list[int]] = {"daphne": [], "celery": [], "redis": []}
        assert self.stack.process is not None
        for pid in sorted(descendants(self.stack.process.pid)):
            with contextlib.suppress(OSError):
                command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
                for role, mark in (("daphne", b"daphne"), ("celery", b"celery"),
                                   ("redis", b"redis-server")):  # fmt: skip
                    if mark in command:
                        roles[role].append(pid)
                        break
        return roles

    def cpu(self) -> dict[str, float]:
        """CPU seconds (user + system) used so far by each role's processes."""
        found: dict[str, float] = {}
        for role, pids in self.processes().items():
            found[role] = sum(cpu_seconds(pid) for pid in pids)
        return found


def cpu_seconds(pid: int) -> float:
    """utime + stime of one process, in seconds (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


# --- many reviewers' /ws/approvals/ read by one thread --------------------------------


class Inboxes:
    """`count` websockets on `/ws/approvals/`, one reader thread for all of them (a thread
    per socket would put 200 threads' GIL contention into the figures): for each
    `tool_call.awaiting_approval` event, the time each socket received it."""

    def __init__(self, port: int, cookie: str, count: int) -> None:
        self.sockets = [self._connect(port, cookie) for _ in range(count)]
        self.seen: dict[int, list[float]] = {}
        self.cond = threading.Condition()
        self.selector = selectors.DefaultSelector()
        for index, sock in enumerate(self.sockets):
            sock.setblocking(False)
            self.selector.register(sock, selectors.EVENT_READ, [index, bytearray()])
        self.running = True
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    @staticmethod
    def _connect(port: int, cookie: str) -> socket.socket:
        sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        sock.sendall(
            f"GET /ws/approvals/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            f"Origin: http://127.0.0.1:{port}\r\nCookie: {cookie}\r\n\r\n".encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            head += sock.recv(1)
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise RuntimeError(f"websocket refused: {head[:200]!r}")
        return sock

    def _read(self) -> None:
        while self.running:
            for key, _ in self.selector.select(timeout=0.2):
                now = time.perf_counter()
                sock: socket.socket = key.fileobj  # type: ignore[assignment]
                with contextlib.suppress(BlockingIOError):
                    chunk = sock.recv(65536)
                    if not chunk:
                        self.selector.unregister(sock)
                        continue
                    key.data[1] += chunk
                    self._frames(sock, key.data[1], now)

    def _frames(self, sock: socket.socket, buffer: bytearray, now: float) -> None:
        while len(buffer) >= 2:
            size, start = buffer[1] & 0x7F, 2
            if size == 126:
                size, start = int.from_bytes(buffer[2:4], "big"), 4
            elif size == 127:
                size, start = int.from_bytes(buffer[2:10], "big"), 10
            if len(buffer) < start + size:
                return
            opcode, payload = buffer[0] & 0x0F, bytes(buffer[start : start + size])
            del buffer[: start + size]
            if opcode == 9:  # ping → pong (a client's frame is masked)
                mask = os.urandom(4)
                masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
                sock.setblocking(True)
                sock.sendall(bytes([0x8A, 0x80 | len(payload)]) + mask + masked)
                sock.setblocking(False)
            elif opcode == 1:
                event = json.loads(payload)
                if event.get("type") == "tool_call.awaiting_approval":
                    with self.cond:
                        self.seen.setdefault(int(event["tool_call"]), []).append(now)
                        self.cond.notify_all()

    def arrivals(self, call_id: int, timeout: float = 60) -> list[float]:
        """perf_counter times at which each socket received the call's event."""
        count = len(self.sockets)
        with self.cond:
            if not self.cond.wait_for(lambda: len(self.seen.get(call_id, ())) >= count, timeout):
                got = len(self.seen.get(call_id, ()))
                raise RuntimeError(f"call {call_id}: the event reached {got} of {count} sockets")
            return self.seen.pop(call_id)

    def close(self) -> None:
        self.running = False
        self.thread.join(timeout=5)
        for sock in self.sockets:
            with contextlib.suppress(OSError):
                sock.close()
