"""The OpenAI provider against a real HTTP server on 127.0.0.1 speaking Chat Completions."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.unit.provider_server import Answer, ProviderServer
from tools_app.runtime.conversation import (
    Message,
    ProviderError,
    ToolSchema,
    ToolUse,
    tool_result,
    tool_results_message,
    user_message,
)
from tools_app.runtime.providers.openai_provider import OpenAIProvider

KEY = "sk-test-0123456789abcdef-SECRET"
TOOLS = [
    ToolSchema(
        "read_file",
        "Read a file in the workspace.",
        {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    ),
    ToolSchema("list_dir", "List a directory.", {"type": "object", "properties": {}}),
]


def completion(message: dict[str, Any], finish: str = "stop", usage: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "test-model",
        "choices": [
            {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}
        ],
    }
    if usage:
        body["usage"] = {"prompt_tokens": 321, "completion_tokens": 45, "total_tokens": 366}
    return body


def call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def error(message: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


@pytest.fixture
def server() -> Iterator[ProviderServer]:
    with ProviderServer() as running:
        yield running


def provider(server: ProviderServer, **options: Any) -> OpenAIProvider:
    options = {"api_key": KEY, "timeout": 5.0, "max_retries": 0, **options}
    return OpenAIProvider("test-model", base_url=f"{server.url}/v1", **options)


def ask(target: OpenAIProvider, messages: list[Message] | None = None) -> Any:
    return target.complete(
        system="You are careful.", messages=messages or [user_message("Hi")], tools=TOOLS
    )


def test_a_text_reply(server: ProviderServer) -> None:
    server.answer(Answer(completion({"content": "Hello there."})))
    reply = ask(provider(server))
    assert reply.text == "Hello there."
    assert reply.tool_uses == ()
    assert reply.stop_reason == "stop"
    assert server.requests[0].path == "/v1/chat/completions"


def test_usage_is_read(server: ProviderServer) -> None:
    server.answer(Answer(completion({"content": "ok"})))
    usage = ask(provider(server)).usage
    assert (usage.input_tokens, usage.output_tokens) == (321, 45)


def test_a_server_without_usage_gives_zero(server: ProviderServer) -> None:
    server.answer(Answer(completion({"content": "ok"}, usage=False)))
    usage = ask(provider(server)).usage
    assert (usage.input_tokens, usage.output_tokens) == (0, 0)


def test_two_tool_calls_come_back_in_order_with_their_ids(server: ProviderServer) -> None:
    calls = [
        call("call_b", "read_file", '{"path": "README.md"}'),
        call("call_a", "list_dir", "{}"),
    ]
    server.answer(Answer(completion({"content": None, "tool_calls": calls}, "tool_calls")))
    reply = ask(provider(server))
    assert reply.text == ""
    assert reply.tool_uses == (
        ToolUse("call_b", "read_file", {"path": "README.md"}),
        ToolUse("call_a", "list_dir", {}),
    )
    assert reply.stop_reason == "tool_calls"


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ('{"path": "README.md"', "not valid JSON"),
        ('["README.md"]', "must be a JSON object, not list"),
        ('"README.md"', "must be a JSON object, not str"),
    ],
)
def test_arguments_that_are_not_a_json_object_set_args_error(
    server: ProviderServer, arguments: str, problem: str
) -> None:
    calls = [call("call_1", "read_file", arguments)]
    server.answer(Answer(completion({"content": "", "tool_calls": calls}, "tool_calls")))
    (use,) = ask(provider(server)).tool_uses
    assert (use.id, use.name, use.args) == ("call_1", "read_file", {})
    assert problem in use.args_error


def test_empty_arguments_mean_none_and_a_missing_id_is_made_up(server: ProviderServer) -> None:
    calls = [{"type": "function", "function": {"name": "list_dir", "arguments": ""}}]
    server.answer(Answer(completion({"content": "", "tool_calls": calls}, "tool_calls")))
    (use,) = ask(provider(server)).tool_uses
    assert use == ToolUse("call_0", "list_dir", {})


CONVERSATION: list[Message] = [
    user_message("Fix the bug."),
    {
        "role": "assistant",
        "content": "Looking.",
        "tool_uses": [
            {"id": "call_1", "name": "read_file", "args": {"path": "a.py"}},
            {"id": "call_2", "name": "list_dir", "args": {}},
        ],
    },
    tool_results_message(
        [
            tool_result("call_1", "read_file", "print(1)"),
            tool_result("call_2", "list_dir", "denied: not here", is_error=True),
        ]
    ),
    {
        "role": "assistant",
        "content": "",
        "tool_uses": [{"id": "call_3", "name": "list_dir", "args": {}}],
    },
    tool_results_message([tool_result("call_3", "list_dir", "a.py")]),
    user_message("Please hurry."),
]


def test_the_request_carries_the_translated_conversation(server: ProviderServer) -> None:
    server.answer(Answer(completion({"content": "ok"})))
    ask(provider(server), CONVERSATION)
    body = server.requests[0].body
    assert body["model"] == "test-model"
    assert body["messages"] == [
        {"role": "system", "content": "You are careful."},
        {"role": "user", "content": "Fix the bug."},
        {
            "role": "assistant",
            "content": "Looking.",
            "tool_calls": [
                call("call_1", "read_file", json.dumps({"path": "a.py"})),
                call("call_2", "list_dir", "{}"),
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "print(1)"},
        {"role": "tool", "tool_call_id": "call_2", "content": "Error: denied: not here"},
        {"role": "assistant", "content": None, "tool_calls": [call("call_3", "list_dir", "{}")]},
        {"role": "tool", "tool_call_id": "call_3", "content": "a.py"},
        {"role": "user", "content": "Please hurry."},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.input_schema,
            },
        }
        for tool in TOOLS
    ]


def test_no_tools_and_no_system_prompt_are_left_out(server: ProviderServer) -> None:
    server.answer(Answer(completion({"content": "ok"})))
    provider(server).complete(system="", messages=[user_message("Hi")], tools=[])
    body = server.requests[0].body
    assert "tools" not in body
    assert body["messages"] == [{"role": "user", "content": "Hi"}]


def test_the_key_goes_in_the_authorization_header(server: ProviderServer) -> None:
    server.answer(Answer(completion({"content": "ok"})))
    ask(provider(server))
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_a_local_server_without_a_key_gets_a_placeholder(server: ProviderServer) -> None:
    server.answer(Answer(completion({"content": "ok"})))
    ask(provider(server, api_key=""))
    assert server.requests[0].headers["authorization"] == "Bearer not-needed"


def test_a_400_becomes_a_clear_provider_error(server: ProviderServer) -> None:
    server.answer(Answer(error("'messages' must not be empty"), 400))
    with pytest.raises(ProviderError) as caught:
        ask(provider(server))
    assert str(caught.value) == (
        "openai:test-model: HTTP 400 (refused): 'messages' must not be empty"
    )
    assert len(server.requests) == 1


def test_a_500_after_the_retries_says_how_often_it_tried(server: ProviderServer) -> None:
    failure = Answer(error("upstream broke", "server_error"), 500, {"retry-after-ms": "10"})
    server.answer(failure, failure)
    with pytest.raises(ProviderError) as caught:
        ask(provider(server, max_retries=1))
    assert str(caught.value) == (
        "openai:test-model: HTTP 500 (server error) after 2 attempts: upstream broke"
    )
    assert len(server.requests) == 2


def test_a_429_then_success_is_retried_by_the_sdk(server: ProviderServer) -> None:
    limited = Answer(error("Rate limit reached", "rate_limit_error"), 429, {"retry-after-ms": "10"})
    server.answer(limited, Answer(completion({"content": "after the wait"})))
    started = time.monotonic()
    reply = ask(provider(server, max_retries=2))
    assert reply.text == "after the wait"
    assert len(server.requests) == 2
    assert server.requests[0].body == server.requests[1].body
    assert time.monotonic() - started < 3


def test_a_slow_server_times_out(server: ProviderServer) -> None:
    server.answer(Answer(completion({"content": "too late"}), delay=1.5))
    started = time.monotonic()
    with pytest.raises(ProviderError) as caught:
        ask(provider(server, timeout=0.3))
    assert str(caught.value) == "openai:test-model: no answer within 0.3 s"
    assert time.monotonic() - started < 1.4


def test_a_closed_port_is_a_connection_error(server: ProviderServer) -> None:
    url = server.url
    server.httpd.server_close()
    target = OpenAIProvider("m", api_key=KEY, base_url=f"{url}/v1", timeout=2, max_retries=0)
    with pytest.raises(ProviderError) as caught:
        ask(target)
    assert str(caught.value).startswith(f"openai:m: cannot reach {url}/v1")


def test_the_key_never_appears_in_an_error_even_when_the_server_echoes_it(
    server: ProviderServer,
) -> None:
    server.answer(Answer(error(f"Incorrect API key provided: {KEY}.", "invalid_api_key"), 401))
    with pytest.raises(ProviderError) as caught:
        ask(provider(server))
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in str(caught.value)
    assert KEY not in repr(caught.value)
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__
    assert str(caught.value) == (
        "openai:test-model: HTTP 401 (refused): Incorrect API key provided: [redacted]."
    )


def test_the_provider_repr_has_no_key(server: ProviderServer) -> None:
    assert KEY not in repr(provider(server))


@pytest.mark.parametrize(
    "body",
    [{}, {"choices": []}, {"choices": [{"index": 0}]}, "not an object"],
)
def test_an_answer_of_the_wrong_shape_is_a_provider_error(
    server: ProviderServer, body: object
) -> None:
    server.answer(Answer(body))
    with pytest.raises(ProviderError, match=r"^openai:test-model: "):
        ask(provider(server))


def test_an_error_body_that_is_not_an_object_is_quoted(server: ProviderServer) -> None:
    server.answer(Answer("Bad gateway", 502))
    with pytest.raises(ProviderError) as caught:
        ask(provider(server))
    assert str(caught.value) == "openai:test-model: HTTP 502 (server error): Bad gateway"


def test_an_unknown_role_in_the_conversation_is_refused_before_sending(
    server: ProviderServer,
) -> None:
    with pytest.raises(ProviderError, match="unknown role 'system'"):
        ask(provider(server), [{"role": "system", "content": "x"}])
    assert server.requests == []
