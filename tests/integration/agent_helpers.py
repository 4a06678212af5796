"""Helpers for the agent runtime's integration tests: scripts, waiting, the stored turns."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.helpers import Worker
from tests.integration.helpers import Api
from tools_app.models import AgentMessage, AgentSession

FINISHED = AgentSession.FINISHED_STATUSES


def script(folder: Path, steps: list[dict[str, Any]], name: str = "plan.json") -> str:
    """Write a scripted model's steps and return its spec (an absolute path)."""
    path = folder / name
    path.write_text(json.dumps(steps))
    return f"script:{path.resolve()}"


def tool(name: str, **args: Any) -> dict[str, Any]:
    return {"tool": name, "args": args}


def done(summary: str = "finished", files: tuple[str, ...] = ()) -> dict[str, Any]:
    return tool("task_done", summary=summary, files_changed=list(files))


def start_agent(api: Api, repo: Path, model: str, task: str = "fix the bug") -> int:
    answer = api.post("/sessions", {"task": task, "repo": str(repo), "model": model})
    assert answer.status_code == 201, answer.content
    return int(answer.json()["id"])


def wait_status(session_id: int, *statuses: str, timeout: float = 60) -> AgentSession:
    """The session once its status is one of `statuses` (any finished one by default)."""
    wanted = set(statuses) or FINISHED
    deadline = time.monotonic() + timeout
    while True:
        session = AgentSession.objects.get(pk=session_id)
        if session.status in wanted:
            return session
        assert session.status not in FINISHED, (session.status, session.summary)
        assert time.monotonic() < deadline, f"still {session.status}: {session.summary}"
        time.sleep(0.05)


def wait_for(check: Any, timeout: float = 30, what: str = "a condition") -> Any:
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
    return value


def messages(session_id: int) -> list[dict[str, Any]]:
    """The stored conversation, in order (each checked to sit at its index)."""
    rows = list(AgentMessage.objects.filter(session_id=session_id).order_by("index"))
    assert [row.index for row in rows] == list(range(len(rows)))
    return [row.content for row in rows]


def results(session_id: int) -> list[dict[str, Any]]:
    """Every tool result the model was sent, in order."""
    return [
        result
        for message in messages(session_id)
        if message["role"] == "tool_results"
        for result in message["results"]
    ]


def assert_paired(conversation: list[dict[str, Any]]) -> None:
    """Each reply's tool uses get exactly one result each, in order, in the next message
    (the last reply may be a task_done that ended the session)."""
    for position, message in enumerate(conversation):
        if message["role"] != "assistant" or not message["tool_uses"]:
            continue
        ids = [use["id"] for use in message["tool_uses"]]
        if position + 1 == len(conversation):
            assert [use["name"] for use in message["tool_uses"]][-1] == "task_done"
            continue
        following = conversation[position + 1]
        assert following["role"] == "tool_results"
        assert [result["id"] for result in following["results"]] == ids


@contextmanager
def dedicated_worker(stack: Worker, settings: Any, logs: Path, **env: str) -> Iterator[Worker]:
    """A worker of its own (own queues, extra environment) that gets this test's sessions."""
    name = uuid.uuid4().hex[:8]
    queue, host_queue = f"agentweb-dedicated-{name}", f"host.dedicated-{name}"
    worker_env = {**stack.env, "AGENTWEB_QUEUE": queue, "AGENTWEB_WORKER_QUEUE": host_queue, **env}
    queues = f"{queue},{host_queue},{queue}.notify"
    worker = Worker(worker_env, queues, logs / f"worker-{name}.log")
    worker.start()
    shared_queue, settings.CELERY_TASK_DEFAULT_QUEUE = settings.CELERY_TASK_DEFAULT_QUEUE, queue
    try:
        yield worker
    finally:
        settings.CELERY_TASK_DEFAULT_QUEUE = shared_queue
        worker.stop()
