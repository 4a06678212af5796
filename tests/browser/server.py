"""A live agentweb for the browser tests: daphne (HTTP and websockets) on 127.0.0.1, and
an external agent that speaks to it over the REST API. Plain code, no fixtures."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from tests.helpers import ROOT

PASSWORD = "a-long-password"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Daphne:
    """`python -m daphne agentweb.asgi:application` on a free port of 127.0.0.1 (or of
    `host`), answering to `url` (a name AGENTWEB_BASE_URL gives, say)."""

    def __init__(self, env: dict[str, str], log: Path, host: str = "127.0.0.1") -> None:
        self.env, self.log, self.host = env, log, host
        self.port = free_port()
        self.url = f"http://{host}:{self.port}"
        self.process: Any = None

    def start(self) -> None:
        command = [sys.executable, "-m", "daphne", "-b", self.host, "-p", str(self.port),
                   "agentweb.asgi:application"]  # fmt: skip
        handle = self.log.open("ab")
        self.process = subprocess.Popen(
            command, cwd=ROOT, env=self.env, stdout=handle, stderr=handle, start_new_session=True
        )
        deadline = time.monotonic() + 60
        while not self._answers():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("daphne did not start:\n" + self.log.read_text()[-3000:])
            time.sleep(0.2)

    def _answers(self) -> bool:
        try:
            return httpx.get(f"{self.url}/login/", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


class Agent:
    """An external agent: starts a session and sends tool calls with its agent token."""

    def __init__(self, url: str, token: str) -> None:
        self.http = httpx.Client(
            base_url=f"{url}/api", headers={"Authorization": f"Bearer {token}"}, timeout=60
        )

    def start_session(self, repo: Path) -> dict[str, Any]:
        """A session on `repo`, once the worker has cloned it."""
        answer = self.http.post("/sessions", json={"task": "tidy the CI", "repo": str(repo)})
        assert answer.status_code == 201, answer.text
        session: dict[str, Any] = answer.json()
        deadline = time.monotonic() + 30
        while session["status"] == "queued":
            assert time.monotonic() < deadline, "the session was never cloned"
            time.sleep(0.1)
            session = self.http.get(f"/sessions/{session['id']}").json()
        return session

    def call(self, session: dict[str, Any], tool: str, **args: Any) -> dict[str, Any]:
        """Send a call; return once it is final or waiting for a person (`?wait` would
        hold on through awaiting_approval, which is not final: poll instead)."""
        answer = self.http.post(
            f"/sessions/{session['id']}/tool-calls", json={"tool": tool, "args": args}
        )
        assert answer.status_code == 201, answer.text
        current: dict[str, Any] = answer.json()
        deadline = time.monotonic() + 20
        while current["status"] in {"pending", "approved", "running"}:
            assert time.monotonic() < deadline, f"call {current['id']} never settled"
            time.sleep(0.05)
            current = self.tool_call(current["id"])
        return current

    def tool_call(self, call_id: int, wait: float = 0) -> dict[str, Any]:
        query = f"?wait={wait}" if wait else ""
        return self.http.get(f"/tool-calls/{call_id}{query}").json()  # type: ignore[no-any-return]

    def final(self, call_id: int) -> dict[str, Any]:
        """The call once it is final (the worker ran it after a decision)."""
        deadline = time.monotonic() + 30
        current = self.tool_call(call_id, wait=20)
        while current["status"] not in {"succeeded", "failed", "denied", "expired", "cancelled"}:
            assert time.monotonic() < deadline, f"call {call_id} never became final: {current}"
            current = self.tool_call(call_id, wait=5)
        return current
