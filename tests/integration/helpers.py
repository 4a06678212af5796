"""What an external agent and a reviewer do over the REST API, as plain functions."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from django.test import Client

UNSETTLED = {"pending", "approved", "running"}


class Api:
    """A client that speaks JSON with a bearer token; a str or bytes body is sent as is."""

    def __init__(self, token: str) -> None:
        self.client = Client()
        self.headers = {"Authorization": f"Bearer {token}"}

    def get(self, path: str) -> Any:
        return self.client.get(f"/api{path}", headers=self.headers)

    def post(self, path: str, body: object) -> Any:
        data = body if isinstance(body, str | bytes) else json.dumps(body)
        return self.client.post(
            f"/api{path}", data, content_type="application/json", headers=self.headers
        )


def start_session(api: Api, repo: Path, **extra: str) -> dict[str, Any]:
    """Start a session on `repo` and return it once the worker has cloned it."""
    answer = api.post("/sessions", {"task": "fix the bug", "repo": str(repo), **extra})
    assert answer.status_code == 201, answer.content
    session = answer.json()
    deadline = time.monotonic() + 30
    while api.get(f"/sessions/{session['id']}").json()["status"] == "queued":
        assert time.monotonic() < deadline, "the session was never cloned"
        time.sleep(0.05)
    return api.get(f"/sessions/{session['id']}").json()  # type: ignore[no-any-return]


def call(
    api: Api, session: dict[str, Any], tool: str, wait: float = 15, **args: Any
) -> dict[str, Any]:
    """Send a call; with `wait`, return once it is final or waiting for a person."""
    answer = api.post(
        f"/sessions/{session['id']}/tool-calls?wait={wait}", {"tool": tool, "args": args}
    )
    assert answer.status_code == 201, answer.content
    current: dict[str, Any] = answer.json()
    deadline = time.monotonic() + (20 if wait else 0)
    while current["status"] in UNSETTLED and time.monotonic() < deadline:
        time.sleep(0.02)  # a busy machine: the worker has not judged it yet
        current = api.get(f"/tool-calls/{current['id']}").json()
    return current


def wait_final(api: Api, call_id: int) -> dict[str, Any]:
    return api.get(f"/tool-calls/{call_id}?wait=20").json()  # type: ignore[no-any-return]
