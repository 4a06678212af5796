"""A scripted fake of the Anthropic Messages API on 127.0.0.1, for the real Claude Code CLI.

Each conversation request (one that offers tools) is answered by the script: first the
scripted tool use, then, once a tool result came back, a short final text. A `Script`
plays several steps instead: it is given the tool results so far and names the next tool
use, or None for the final text. Anything else (a title, a summary) gets a plain text
answer. Every request body is kept in `requests`, so a test reads what reached the model
(a denial's reason in a tool_result).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tests.agents.fake_http import FakeServer, Reply, Seen

# The tool results of the conversation so far → the next (tool, input), or None: done.
Script = Callable[[list[str]], tuple[str, dict[str, Any]] | None]


class FakeAnthropic(FakeServer):
    def __init__(
        self, tool: str = "", tool_input: dict[str, Any] | None = None, script: Script | None = None
    ) -> None:
        super().__init__()
        self.script = script or _one_use(tool, tool_input or {})
        self.requests: list[dict[str, Any]] = []

    def tool_results(self) -> list[str]:
        """The text of every tool_result the model was sent, in order."""
        return [json.dumps(r, ensure_ascii=False) for b in self.requests for r in _results(b)]

    def conversation(self) -> list[str]:
        """The text of each tool result in the latest conversation, in order."""
        asked = [body for body in self.requests if body.get("tools")]
        return [_text(result) for result in _results(asked[-1])] if asked else []

    def reply(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The content blocks of the next answer."""
        step = (
            self.script([_text(result) for result in _results(body)]) if body.get("tools") else None
        )
        if step is None:
            return [{"type": "text", "text": "Done."}]
        use_id = f"toolu_fake_{len(self.requests)}"
        return [{"type": "tool_use", "id": use_id, "name": step[0], "input": step[1]}]

    def answer(self, seen: Seen) -> Reply:
        if seen.method == "GET":
            return Reply(json={"data": [], "has_more": False})
        if not seen.path.startswith("/v1/messages") or "count_tokens" in seen.path:
            return Reply(json={"input_tokens": 10})
        body = seen.body if isinstance(seen.body, dict) else {}
        self.requests.append(body)
        blocks = self.reply(body)
        if body.get("stream"):
            return Reply(events=tuple(_events(body, blocks)))
        return Reply(json=_message(body, blocks))


def _one_use(tool: str, tool_input: dict[str, Any]) -> Script:
    """One tool use, then the final text once its result came back."""
    return lambda results: None if results else (tool, tool_input)


def _results(body: dict[str, Any]) -> list[Any]:
    """The content of each tool_result in the conversation of one request, in order."""
    found: list[Any] = []
    for message in body.get("messages", []):
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                found.append(block.get("content"))
    return found


def _text(content: Any) -> str:
    """A tool_result's text: a string, or its text blocks joined."""
    if isinstance(content, str):
        return content
    blocks = content if isinstance(content, list) else []
    return "".join(b.get("text", "") for b in blocks if isinstance(b, dict))


def _message(body: dict[str, Any], blocks: list[dict[str, Any]]) -> dict[str, Any]:
    stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "claude-fake"),
        "content": blocks,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def _events(body: dict[str, Any], blocks: list[dict[str, Any]]) -> list[tuple[str | None, Any]]:
    message = {**_message(body, []), "stop_reason": None}
    events: list[tuple[str | None, Any]] = [
        ("message_start", {"type": "message_start", "message": message})
    ]
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            start: dict[str, Any] = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": start},
            ),
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": index}),
        ]
    stop = _message(body, blocks)["stop_reason"]
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events
