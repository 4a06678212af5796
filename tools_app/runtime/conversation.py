"""The provider-neutral conversation: what is persisted, and what every provider reads.

A conversation is a list of JSON-ready messages, each one of:

* ``{"role": "user", "content": TEXT}`` — the task, a nudge, or a summary of old turns;
* ``{"role": "assistant", "content": TEXT, "tool_uses": [{"id", "name", "args"}]}``;
* ``{"role": "tool_results", "results": [{"id", "name", "content", "is_error"}]}`` —
  exactly one result per tool use of the assistant message before it, in its order.

Providers translate this to their wire format (OpenAI's ``tool`` messages, Anthropic's
``tool_result`` blocks) and their answer back into a `Reply`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

Message = dict[str, Any]


@dataclass(frozen=True)
class ToolSchema:
    """A tool as offered to a model: its name, description and JSON Schema input."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class ToolUse:
    """One tool call the model asked for. `args` is what it sent, parsed when it could be;
    `args_error` says why not (then `args` is empty and the call gets an error result)."""

    id: str
    name: str
    args: dict[str, Any]
    args_error: str = ""

    def as_message_part(self) -> dict[str, Any]:
        part: dict[str, Any] = {"id": self.id, "name": self.name, "args": self.args}
        if self.args_error:
            part["args_error"] = self.args_error
        return part


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True)
class Reply:
    """One model turn: its text, the tool calls it asked for (in order), and its usage."""

    text: str
    tool_uses: tuple[ToolUse, ...] = ()
    usage: Usage = field(default_factory=Usage)
    stop_reason: str = ""

    def as_message(self) -> Message:
        return {
            "role": "assistant",
            "content": self.text,
            "tool_uses": [use.as_message_part() for use in self.tool_uses],
        }


class ProviderError(Exception):
    """A model provider could not answer; the message is safe to show (no keys)."""


class Provider(Protocol):
    """A model: one call per turn, the whole conversation in, one `Reply` out."""

    spec: str
    context_window: int

    def complete(
        self, *, system: str, messages: list[Message], tools: list[ToolSchema]
    ) -> Reply: ...


def user_message(text: str) -> Message:
    return {"role": "user", "content": text}


def tool_results_message(results: list[dict[str, Any]]) -> Message:
    return {"role": "tool_results", "results": results}


def tool_result(use_id: str, name: str, content: str, *, is_error: bool = False) -> dict[str, Any]:
    return {"id": use_id, "name": name, "content": content, "is_error": is_error}
