"""The scripted provider: replies follow from the conversation alone, as after a restart."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from tools_app.runtime.conversation import (
    Message,
    ProviderError,
    Reply,
    ToolSchema,
    tool_result,
    tool_results_message,
    user_message,
)
from tools_app.runtime.providers.scripted import END_OF_SCRIPT, ScriptedProvider

TOOLS = [ToolSchema("read_file", "Read a file.", {"type": "object"})]
PLAN: list[dict[str, Any]] = [
    {"say": "Let me look."},
    {"say": "First the README."},
    {"tool": "read_file", "args": {"path": "README.md"}},
    {"tool": "list_dir"},
    {"say": "All done."},
]


def write(tmp_path: Path, content: object) -> Path:
    path = tmp_path / "plan.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def advance(messages: list[Message], reply: Reply) -> list[Message]:
    """The conversation after `reply`, with a result for each of its tool uses."""
    after = [*messages, reply.as_message()]
    if reply.tool_uses:
        results = [tool_result(use.id, use.name, "ok") for use in reply.tool_uses]
        after.append(tool_results_message(results))
    return after


def run(provider: ScriptedProvider, turns: int) -> list[Reply]:
    messages: list[Message] = [user_message("Fix the bug.")]
    replies = []
    for _ in range(turns):
        reply = provider.complete(system="You are careful.", messages=messages, tools=TOOLS)
        replies.append(reply)
        messages = advance(messages, reply)
    return replies


def test_says_before_a_tool_become_one_reply_with_that_call(tmp_path: Path) -> None:
    first = run(ScriptedProvider(write(tmp_path, PLAN)), 1)[0]
    assert first.text == "Let me look.\n\nFirst the README."
    assert [(use.id, use.name, use.args) for use in first.tool_uses] == [
        ("script-1", "read_file", {"path": "README.md"})
    ]
    assert first.stop_reason == "tool_use"


def test_each_turn_takes_the_next_step_then_the_script_ends(tmp_path: Path) -> None:
    replies = run(ScriptedProvider(write(tmp_path, PLAN)), 5)
    assert [reply.tool_uses[0].name if reply.tool_uses else "" for reply in replies] == [
        "read_file",
        "list_dir",
        "",
        "",
        "",
    ]
    assert replies[1].text == ""
    assert replies[1].tool_uses[0].id == "script-2"
    assert replies[1].tool_uses[0].args == {}
    assert replies[2].text == "All done."
    assert replies[2].stop_reason == "end_turn"
    assert replies[3].text == replies[4].text == END_OF_SCRIPT
    assert "ended" in END_OF_SCRIPT


def test_the_step_comes_from_the_conversation_not_from_the_object(tmp_path: Path) -> None:
    """Two providers (two processes) give the same reply to the same conversation."""
    path = write(tmp_path, PLAN)
    messages = advance(
        [user_message("Fix the bug.")],
        ScriptedProvider(path).complete(
            system="", messages=[user_message("Fix the bug.")], tools=[]
        ),
    )
    again = ScriptedProvider(path).complete(system="", messages=messages, tools=[])
    once_more = ScriptedProvider(path).complete(system="", messages=messages, tools=[])
    assert again == once_more
    assert again.tool_uses[0].name == "list_dir"


def test_usage_is_a_quarter_of_the_characters_rounded_up(tmp_path: Path) -> None:
    provider = ScriptedProvider(write(tmp_path, [{"say": "x" * 10}]))
    messages = [user_message("hello")]
    reply = provider.complete(system="sys", messages=messages, tools=TOOLS)
    prompt = "sys" + json.dumps(messages) + json.dumps(["read_file"])
    assert reply.usage.input_tokens == math.ceil(len(prompt) / 4)
    assert reply.usage.output_tokens == math.ceil(len("x" * 10 + "[]") / 4)


def test_a_longer_conversation_costs_more_input(tmp_path: Path) -> None:
    provider = ScriptedProvider(write(tmp_path, PLAN))
    short = provider.complete(system="", messages=[user_message("a")], tools=[])
    long = provider.complete(system="", messages=[user_message("a" * 4000)], tools=[])
    assert long.usage.input_tokens >= short.usage.input_tokens + 1000


def test_an_empty_script_ends_at_once(tmp_path: Path) -> None:
    assert run(ScriptedProvider(write(tmp_path, [])), 1)[0].text == END_OF_SCRIPT


def test_spec_and_a_large_context_window(tmp_path: Path) -> None:
    path = write(tmp_path, PLAN)
    provider = ScriptedProvider(path)
    assert provider.spec == f"script:{path}"
    assert provider.context_window >= 100_000


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ProviderError) as caught:
        ScriptedProvider(tmp_path / "nope.json")
    assert str(tmp_path / "nope.json") in str(caught.value)
    assert "no such file" in str(caught.value)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("[{", "not valid JSON"),
        ({"say": "hi"}, "expected a JSON list of steps"),
        ([{"say": "ok"}, "read_file"], "step 1: expected an object, got str"),
        ([{"say": "ok"}, {}], "step 1: neither 'tool' nor 'say'"),
        ([{"tool": "", "args": {}}], "step 0: 'tool' must be a non-empty string"),
        ([{"tool": 3}], "step 0: 'tool' must be a non-empty string"),
        ([{"tool": "read_file", "args": ["README.md"]}], "step 0: 'args' must be an object"),
        ([{"tool": "read_file", "arg": {}}], "step 0: unknown keys ['arg']"),
        ([{"say": 5}], "step 0: 'say' must be a string"),
        ([{"say": "hi", "tool": "x"}], "step 0: a 'say' step has no other keys"),
    ],
)
def test_a_malformed_script_names_the_file_and_the_step(
    tmp_path: Path, content: object, problem: str
) -> None:
    path = write(tmp_path, content)
    with pytest.raises(ProviderError) as caught:
        ScriptedProvider(path)
    assert str(path) in str(caught.value)
    assert problem in str(caught.value)


def test_a_file_that_is_not_text_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    path.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ProviderError, match="cannot read it"):
        ScriptedProvider(path)
