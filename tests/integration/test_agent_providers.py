"""The SDK-backed providers end to end: a worker of its own pointed at small real HTTP
servers speaking the OpenAI and Anthropic wire protocols, with a recognisable key."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings

from tests.helpers import Worker
from tests.integration.agent_helpers import (
    assert_paired,
    dedicated_worker,
    messages,
    results,
    start_agent,
    wait_for,
    wait_status,
)
from tests.integration.helpers import Api
from tests.unit.provider_server import Answer, ProviderServer
from tools_app import tasks
from tools_app.models import AgentMessage, AgentSession, Event, ToolCall

pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True), pytest.mark.worker]

OPENAI_KEY = "sk-openai-test-KEY-7f3a9c1e5b"
ANTHROPIC_KEY = "sk-ant-test-KEY-2d8e6b4f0a"


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[ProviderServer, ProviderServer]]:
    with ProviderServer() as openai, ProviderServer() as anthropic:
        for server in (openai, anthropic):
            server.httpd.block_on_close = False  # a held answer must not hold the teardown
        yield openai, anthropic


@pytest.fixture(scope="module")
def provider_worker(
    stack: Worker,
    servers: tuple[ProviderServer, ProviderServer],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Worker]:
    """One worker for this module, with the keys and the servers' addresses."""
    openai, anthropic = servers
    env = {
        "OPENAI_API_KEY": OPENAI_KEY,
        "OPENAI_BASE_URL": f"{openai.url}/v1",
        "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
        "ANTHROPIC_BASE_URL": anthropic.url,
        "AGENTWEB_MODEL_RETRIES": "2",
    }
    logs = tmp_path_factory.mktemp("provider-worker")
    with dedicated_worker(stack, django_settings, logs, **env) as worker:
        yield worker


@pytest.fixture
def openai(servers: tuple[ProviderServer, ProviderServer], provider_worker: Worker) -> Any:
    server = servers[0]
    server.requests.clear()
    server.answers.clear()
    return server


@pytest.fixture
def anthropic(servers: tuple[ProviderServer, ProviderServer], provider_worker: Worker) -> Any:
    server = servers[1]
    server.requests.clear()
    server.answers.clear()
    return server


# --- the wire formats ---------------------------------------------------------------------


def completion(*calls: tuple[str, dict[str, Any]], text: str = "") -> dict[str, Any]:
    """An OpenAI chat completion asking for `calls` (name, args) in order."""
    tool_calls = [
        {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
        for i, (n, a) in enumerate(calls)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "test-model",
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
        ],
        "usage": {"prompt_tokens": 321, "completion_tokens": 45, "total_tokens": 366},
    }


def anthropic_message(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    content = [
        {"type": "tool_use", "id": f"toolu_{i}", "name": n, "input": a}
        for i, (n, a) in enumerate(calls)
    ]
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [{"type": "text", "text": "On it."}, *content],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 210, "output_tokens": 34},
    }


TASK_DONE = ("task_done", {"summary": "Checked the environment.", "files_changed": []})


def stored_text(session_id: int) -> str:
    """Everything the database keeps about a session's work, as one string."""
    session = AgentSession.objects.get(pk=session_id)
    parts = [session.summary, session.system_prompt, session.model, session.context_summary]
    parts += [json.dumps(m.content) for m in AgentMessage.objects.filter(session=session)]
    parts += [json.dumps(e.data) for e in Event.objects.filter(session=session)]
    for call in ToolCall.objects.filter(session=session):
        parts += [json.dumps(call.args), call.result, call.reason, json.dumps(call.preview)]
    return "\n".join(parts)


def test_an_openai_session_runs_tools_and_never_keeps_the_key(
    alice: Api, workspace: Path, openai: ProviderServer, provider_worker: Worker
) -> None:
    openai.answer(
        Answer(
            completion(("run_command", {"command": "env"}), ("read_file", {"path": "README.md"}))
        ),
        Answer(completion(TASK_DONE)),
    )
    session_id = start_agent(alice, workspace, "openai:test-model")
    session = wait_status(session_id)
    assert (session.status, session.summary) == ("done", "Checked the environment.")
    assert (session.tokens_in, session.tokens_out) == (642, 90)
    env_result, readme = results(session_id)
    assert "PATH=" in env_result["content"] and "# Title" in readme["content"]
    assert_paired(messages(session_id))
    assert len(openai.requests) == 2
    assert openai.requests[0].headers["authorization"] == f"Bearer {OPENAI_KEY}"
    assert openai.requests[0].body["model"] == "test-model"
    sent_back = [m for m in openai.requests[1].body["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in sent_back] == ["call_0", "call_1"]
    assert OPENAI_KEY not in env_result["content"] and "OPENAI_API_KEY" not in env_result["content"]
    assert OPENAI_KEY not in stored_text(session_id)
    assert OPENAI_KEY not in provider_worker.log.read_text()


def test_an_anthropic_session_runs_tools_and_never_keeps_the_key(
    alice: Api, workspace: Path, anthropic: ProviderServer, provider_worker: Worker
) -> None:
    anthropic.answer(
        Answer(anthropic_message(("run_command", {"command": "env"}))),
        Answer(anthropic_message(TASK_DONE)),
    )
    session_id = start_agent(alice, workspace, "anthropic:claude-test")
    session = wait_status(session_id)
    assert session.status == "done"
    assert (session.tokens_in, session.tokens_out) == (420, 68)
    assert messages(session_id)[1]["content"] == "On it."
    headers = anthropic.requests[0].headers
    sent = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
    assert sent == ANTHROPIC_KEY
    returned = anthropic.requests[1].body["messages"][-1]["content"]
    assert [block["tool_use_id"] for block in returned] == ["toolu_0"]
    env_result = results(session_id)[0]["content"]
    assert "PATH=" in env_result and ANTHROPIC_KEY not in env_result
    assert "ANTHROPIC" not in env_result
    assert ANTHROPIC_KEY not in stored_text(session_id)
    assert ANTHROPIC_KEY not in provider_worker.log.read_text()


def test_a_refused_request_fails_the_session_once_without_retries(
    alice: Api, workspace: Path, openai: ProviderServer, provider_worker: Worker
) -> None:
    refusal = {"error": {"message": "model 'test-model' does not exist", "type": "invalid"}}
    openai.answer(Answer(refusal, 400))
    session_id = start_agent(alice, workspace, "openai:test-model")
    session = wait_status(session_id)
    assert session.status == "failed"
    assert session.summary == (
        "The model provider failed: openai:test-model: HTTP 400 (refused): "
        "model 'test-model' does not exist"
    )
    provider_worker.wait_idle()  # a retry, or a turn task sent again, has reached the server
    assert len(openai.requests) == 1
    assert not AgentMessage.objects.filter(session_id=session_id, role="assistant").exists()
    assert session.turn_runner == ""


def test_cancel_during_a_model_turn_keeps_nothing_of_its_answer(
    alice: Api, workspace: Path, openai: ProviderServer
) -> None:
    touch = completion(("run_command", {"command": "touch after.txt"}))
    openai.answer(Answer(touch, delay=3))
    session_id = start_agent(alice, workspace, "openai:test-model")
    wait_for(lambda: openai.requests, what="the model to be asked")
    assert AgentSession.objects.get(pk=session_id).turn_runner != ""
    assert alice.post(f"/sessions/{session_id}/cancel", {}).status_code == 200
    # the answer arrives later: its usage is counted (it was paid for), nothing else kept
    session = wait_for(
        lambda: AgentSession.objects.filter(pk=session_id, tokens_in__gt=0).first(),
        what="the worker to receive the held answer",
    )
    assert (session.status, session.tokens_in, session.iterations) == ("cancelled", 321, 0)
    assert not AgentMessage.objects.filter(session_id=session_id, role="assistant").exists()
    assert not ToolCall.objects.filter(session_id=session_id).exists()
    assert not Path(session.workspace, "after.txt").exists()
    assert len(openai.requests) == 1


@pytest.mark.postgres
def test_duplicated_turn_tasks_ask_the_model_once_per_turn(
    alice: Api, workspace: Path, openai: ProviderServer, provider_worker: Worker
) -> None:
    openai.answer(
        Answer(completion(("list_files", {"path": "."})), delay=2), Answer(completion(TASK_DONE))
    )
    session_id = start_agent(alice, workspace, "openai:test-model")
    wait_for(lambda: openai.requests, what="the model to be asked")
    queue = AgentSession.objects.get(pk=session_id).worker_queue
    for _ in range(3):  # a redelivered or spare turn task while the model thinks
        tasks.agent_turn.apply_async((session_id,), queue=queue)
    session = wait_status(session_id)
    assert session.status == "done"
    for _ in range(3):  # and spare ones after the end
        tasks.agent_turn.apply_async((session_id,), queue=queue)
    provider_worker.wait_idle()  # a spare task that asked the model has reached the server
    assert len(openai.requests) == 2
    assert session.iterations == 2
    assert len(messages(session_id)) == 4
    keys = list(ToolCall.objects.filter(session_id=session_id).values_list("agent_key", flat=True))
    assert sorted(keys) == ["1:0", "3:0"]


def test_arguments_that_are_not_json_are_sent_back_to_the_model(
    alice: Api, workspace: Path, openai: ProviderServer
) -> None:
    broken = completion(("read_file", {}))
    broken["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = '{"path": "READ'
    openai.answer(Answer(broken), Answer(completion(TASK_DONE)))
    session_id = start_agent(alice, workspace, "openai:test-model")
    assert wait_status(session_id).status == "done"
    result = results(session_id)[0]
    assert result["is_error"] and result["content"].startswith(
        "The arguments for read_file could not be read ("
    )
    assert ToolCall.objects.filter(session_id=session_id).count() == 1  # only task_done
    sent_back = [m for m in openai.requests[1].body["messages"] if m["role"] == "tool"]
    assert sent_back[0]["content"].endswith(result["content"])


def test_a_reply_with_two_calls_pauses_at_the_first_and_keeps_their_order(
    alice: Api, rita: Api, workspace: Path, openai: ProviderServer
) -> None:
    ci = ".github/workflows/ci.yml"
    write = ("write_file", {"path": ci, "content": "name: ci\n"})
    openai.answer(
        Answer(completion(write, ("list_files", {"path": ".github/workflows"}))),
        Answer(completion(TASK_DONE)),
    )
    session_id = start_agent(alice, workspace, "openai:test-model")
    wait_status(session_id, "waiting")
    waiting = ToolCall.objects.get(session_id=session_id)
    assert waiting.agent_key == "1:0"  # the second call waits its turn: not even created
    rita.post(f"/tool-calls/{waiting.pk}/decision", {"decision": "approve"})
    assert wait_status(session_id).status == "done"
    calls = ToolCall.objects.filter(session_id=session_id).order_by("pk")
    assert [(c.agent_key, c.tool) for c in calls] == [
        ("1:0", "write_file"),
        ("1:1", "list_files"),
        ("3:0", "task_done"),
    ]
    written, listed = results(session_id)
    assert not written["is_error"]
    assert "ci.yml" in listed["content"]  # it ran after the approved write
    sent_back = [m for m in openai.requests[1].body["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in sent_back] == ["call_0", "call_1"]
