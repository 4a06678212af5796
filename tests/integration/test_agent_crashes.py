"""A worker SIGKILLed in the middle of an agent's work: a new worker resumes the session
from the database, never asks the model twice for an answer it kept, and never runs a
tool call twice."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import Worker, processes_running
from tests.integration.agent_helpers import (
    dedicated_worker,
    done,
    messages,
    results,
    script,
    start_agent,
    tool,
    wait_for,
    wait_status,
)
from tests.integration.helpers import Api
from tests.unit.provider_server import Answer, ProviderServer
from tools_app.models import AgentMessage, Event, ToolCall

pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True), pytest.mark.worker]

APPEND = "echo x >> log.txt"


def completion(name: str, args: dict[str, Any]) -> dict[str, Any]:
    function = {"name": name, "arguments": json.dumps(args)}
    call = {"id": f"call_{name}", "type": "function", "function": function}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "test-model",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None, "tool_calls": [call]},
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
    }


def assert_each_call_once(session_id: int) -> None:
    keys = Counter(
        ToolCall.objects.filter(session_id=session_id).values_list("agent_key", flat=True)
    )
    assert keys and max(keys.values()) == 1, keys


def test_a_worker_killed_while_the_model_thinks_is_replaced_and_the_session_ends(
    alice: Api, workspace: Path, tmp_path: Path, stack: Worker, settings: Any
) -> None:
    finish = completion("task_done", {"summary": "Logged once.", "files_changed": ["log.txt"]})
    with ProviderServer() as server:
        server.httpd.block_on_close = False
        server.answer(
            Answer(completion("run_command", {"command": APPEND})),
            Answer(finish, delay=60),  # the second turn hangs until the worker dies
            Answer(finish),
        )
        env = {"OPENAI_BASE_URL": f"{server.url}/v1", "OPENAI_API_KEY": "k-test"}
        with dedicated_worker(stack, settings, tmp_path, **env) as worker:
            session_id = start_agent(alice, workspace, "openai:test-model")
            wait_for(lambda: len(server.requests) == 2, what="the second model turn")
            assert AgentMessage.objects.filter(session_id=session_id).count() == 3
            worker.kill()
            worker.start()
            session = wait_status(session_id)
    assert (session.status, session.summary) == ("done", "Logged once.")
    assert len(server.requests) == 3  # the unanswered turn once more, nothing else
    assert Path(session.workspace, "log.txt").read_text() == "x\n"
    assert_each_call_once(session_id)
    assert [m["role"] for m in messages(session_id)] == [
        "user",
        "assistant",
        "tool_results",
        "assistant",
    ]
    assert Event.objects.filter(session_id=session_id, type="agent.turn_retried").count() == 1
    assert session.iterations == 2


@pytest.mark.postgres
def test_a_worker_killed_during_a_command_does_not_run_it_again(
    alice: Api, workspace: Path, tmp_path: Path, stack: Worker
) -> None:
    marker = f"sleep 28.{os.getpid()}"  # this run's own: no other test run has it
    steps = [tool("run_command", command=f"{APPEND}; {marker}"), done("Went on.")]
    session_id = start_agent(alice, workspace, script(tmp_path, steps))
    wait_for(lambda: processes_running(marker), what="the command to run")
    stack.kill()
    stack.start()
    session = wait_status(session_id, timeout=30)
    assert (session.status, session.summary) == ("done", "Went on.")
    log = Path(session.workspace, "log.txt")
    assert (log.read_text() if log.exists() else "") in ("", "x\n")  # killed, never rerun
    assert_each_call_once(session_id)
    interrupted = results(session_id)[0]
    assert interrupted["is_error"] and "was not run again" in interrupted["content"]
