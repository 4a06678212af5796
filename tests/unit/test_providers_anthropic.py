"""The Anthropic provider against a real HTTP server on 127.0.0.1 speaking the Messages API."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.unit.provider_server import Answer, ProviderServer
from tools_app.runtime.conversation import (
    Message,
    ProviderError,
    Reply,
    ToolSchema,
    ToolUse,
    tool_result,
    tool_results_message,
    user_message,
)
from tools_app.runtime.providers.anthropic_provider import AnthropicProvider

KEY = "sk-ant-test-0123456789-SECRET"
TOOLS = [
    ToolSchema(
        "read_file",
        "Read a file in the workspace.",
        {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    ),
    ToolSchema("list_dir", "List a directory.", {"type": "object", "properties": {}}),
]


def message(content: list[dict[str, Any]], stop: str = "end_turn") -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 210, "output_tokens": 34},
    }


def text(words: str) -> dict[str, Any]:
    return {"type": "text", "text": words}


def use(use_id: str, name: str, args: object) -> dict[str, Any]:
    return {"type": "tool_use", "id": use_id, "name": name, "input": args}


def error(words: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": words}}


@pytest.fixture
def server() -> Iterator[ProviderServer]:
    with ProviderServer() as running:
        yield running


def provider(server: ProviderServer, **options: Any) -> AnthropicProvider:
    options = {"api_key": KEY, "timeout": 5.0, "max_retries": 0, **options}
    return AnthropicProvider("claude-test", base_url=server.url, **options)


def ask(target: AnthropicProvider, messages: list[Message] | None = None) -> Reply:
    return target.complete(
        system="You are careful.", messages=messages or [user_message("Hi")], tools=TOOLS
    )


def sent_key(server: ProviderServer) -> str:
    headers = server.requests[0].headers
    return headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")


def test_a_text_reply(server: ProviderServer) -> None:
    server.answer(Answer(message([text("Hello"), text("there.")])))
    reply = ask(provider(server))
    assert reply.text == "Hello\nthere."
    assert reply.tool_uses == ()
    assert reply.stop_reason == "end_turn"
    assert server.requests[0].path == "/v1/messages"


def test_usage_is_read_with_the_cached_parts(server: ProviderServer) -> None:
    answer = message([text("ok")])
    answer["usage"] |= {"cache_creation_input_tokens": 5, "cache_read_input_tokens": 7}
    server.answer(Answer(message([text("ok")])), Answer(answer))
    assert ask(provider(server)).usage.input_tokens == 210
    usage = ask(provider(server)).usage
    assert (usage.input_tokens, usage.output_tokens) == (222, 34)


def test_two_tool_uses_come_back_in_order_with_their_ids(server: ProviderServer) -> None:
    content = [
        text("Reading."),
        use("toolu_b", "read_file", {"path": "README.md"}),
        use("toolu_a", "list_dir", {}),
    ]
    server.answer(Answer(message(content, "tool_use")))
    reply = ask(provider(server))
    assert reply.text == "Reading."
    assert reply.tool_uses == (
        ToolUse("toolu_b", "read_file", {"path": "README.md"}),
        ToolUse("toolu_a", "list_dir", {}),
    )
    assert reply.stop_reason == "tool_use"


def test_input_that_is_not_an_object_sets_args_error(server: ProviderServer) -> None:
    server.answer(Answer(message([use("toolu_1", "read_file", "README.md")], "tool_use")))
    (tool_use,) = ask(provider(server)).tool_uses
    assert (tool_use.id, tool_use.name, tool_use.args) == ("toolu_1", "read_file", {})
    assert "must be a JSON object, not str" in tool_use.args_error


CONVERSATION: list[Message] = [
    user_message("Fix the bug."),
    {
        "role": "assistant",
        "content": "Looking.",
        "tool_uses": [
            {"id": "toolu_1", "name": "read_file", "args": {"path": "a.py"}},
            {"id": "toolu_2", "name": "list_dir", "args": {}},
        ],
    },
    tool_results_message(
        [
            tool_result("toolu_1", "read_file", "print(1)"),
            tool_result("toolu_2", "list_dir", "denied: not here", is_error=True),
        ]
    ),
    user_message("You repeat yourself."),
    {
        "role": "assistant",
        "content": "",
        "tool_uses": [{"id": "toolu_3", "name": "list_dir", "args": {}}],
    },
    tool_results_message([tool_result("toolu_3", "list_dir", "a.py")]),
]


def test_the_request_carries_the_translated_conversation(server: ProviderServer) -> None:
    server.answer(Answer(message([text("ok")])))
    ask(provider(server, max_tokens=1234), CONVERSATION)
    body = server.requests[0].body
    assert body["model"] == "claude-test"
    assert body["max_tokens"] == 1234
    assert body["system"] == "You are careful."
    assert body["messages"] == [
        {"role": "user", "content": [text("Fix the bug.")]},
        {
            "role": "assistant",
            "content": [
                text("Looking."),
                use("toolu_1", "read_file", {"path": "a.py"}),
                use("toolu_2", "list_dir", {}),
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": "print(1)",
                    "is_error": False,
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": "denied: not here",
                    "is_error": True,
                },
                text("You repeat yourself."),
            ],
        },
        {"role": "assistant", "content": [use("toolu_3", "list_dir", {})]},
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_3",
                    "content": "a.py",
                    "is_error": False,
                }
            ],
        },
    ]


def test_tools_are_sent_with_their_input_schema(server: ProviderServer) -> None:
    server.answer(Answer(message([text("ok")])))
    ask(provider(server))
    assert server.requests[0].body["tools"] == [
        {"name": tool.name, "description": tool.description, "input_schema": tool.input_schema}
        for tool in TOOLS
    ]


def test_no_tools_and_no_system_prompt_are_left_out(server: ProviderServer) -> None:
    server.answer(Answer(message([text("ok")])))
    provider(server).complete(system="", messages=[user_message("Hi")], tools=[])
    body = server.requests[0].body
    assert "tools" not in body
    assert "system" not in body


def test_the_key_is_sent_to_the_server(server: ProviderServer) -> None:
    server.answer(Answer(message([text("ok")])))
    ask(provider(server))
    assert sent_key(server) == KEY
    assert server.requests[0].headers["anthropic-version"]


def test_a_400_becomes_a_clear_provider_error(server: ProviderServer) -> None:
    server.answer(Answer(error("messages: roles must alternate"), 400))
    with pytest.raises(ProviderError) as caught:
        ask(provider(server))
    assert str(caught.value) == (
        "anthropic:claude-test: HTTP 400 (refused): messages: roles must alternate"
    )
    assert len(server.requests) == 1


def test_a_500_after_the_retries_says_how_often_it_tried(server: ProviderServer) -> None:
    failure = Answer(error("Overloaded", "overloaded_error"), 529, {"retry-after-ms": "10"})
    server.answer(failure, failure)
    with pytest.raises(ProviderError) as caught:
        ask(provider(server, max_retries=1))
    assert str(caught.value) == (
        "anthropic:claude-test: HTTP 529 (server error) after 2 attempts: Overloaded"
    )
    assert len(server.requests) == 2


def test_a_429_then_success_is_retried_by_the_sdk(server: ProviderServer) -> None:
    limited = Answer(error("Rate limited", "rate_limit_error"), 429, {"retry-after-ms": "10"})
    server.answer(limited, Answer(message([text("after the wait")])))
    started = time.monotonic()
    reply = ask(provider(server, max_retries=2))
    assert reply.text == "after the wait"
    assert len(server.requests) == 2
    assert server.requests[0].body == server.requests[1].body
    assert time.monotonic() - started < 3


def test_a_slow_server_times_out(server: ProviderServer) -> None:
    server.answer(Answer(message([text("too late")]), delay=1.5))
    started = time.monotonic()
    with pytest.raises(ProviderError) as caught:
        ask(provider(server, timeout=0.3))
    assert str(caught.value) == "anthropic:claude-test: no answer within 0.3 s"
    assert time.monotonic() - started < 1.4


def test_a_closed_port_is_a_connection_error(server: ProviderServer) -> None:
    url = server.url
    server.httpd.server_close()
    target = AnthropicProvider("m", api_key=KEY, base_url=url, timeout=2, max_retries=0)
    with pytest.raises(ProviderError) as caught:
        ask(target)
    assert str(caught.value).startswith(f"anthropic:m: cannot reach {url}")


def test_the_key_never_appears_in_an_error_even_when_the_server_echoes_it(
    server: ProviderServer,
) -> None:
    server.answer(Answer(error(f"invalid x-api-key {KEY}", "authentication_error"), 401))
    with pytest.raises(ProviderError) as caught:
        ask(provider(server))
    assert sent_key(server) == KEY
    assert KEY not in str(caught.value)
    assert KEY not in repr(caught.value)
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__
    assert str(caught.value) == (
        "anthropic:claude-test: HTTP 401 (refused): invalid x-api-key [redacted]"
    )


def test_the_provider_repr_has_no_key(server: ProviderServer) -> None:
    assert KEY not in repr(provider(server))


@pytest.mark.parametrize(
    "body",
    [{}, {"content": [{"type": "text"}]}, {"content": "text"}, "not an object"],
)
def test_an_answer_of_the_wrong_shape_is_a_provider_error(
    server: ProviderServer, body: object
) -> None:
    server.answer(Answer(body))
    with pytest.raises(ProviderError, match=r"^anthropic:claude-test: "):
        ask(provider(server))


def test_an_empty_assistant_turn_is_sent_with_placeholder_text(server: ProviderServer) -> None:
    """The API refuses empty text blocks and empty turns."""
    server.answer(Answer(message([text("ok")])))
    messages: list[Message] = [
        user_message("Hi"),
        {"role": "assistant", "content": "", "tool_uses": []},
        user_message("Go on."),
    ]
    ask(provider(server), messages)
    assert server.requests[0].body["messages"][1] == {
        "role": "assistant",
        "content": [text("(no text)")],
    }
