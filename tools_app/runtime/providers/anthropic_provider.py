"""`anthropic:MODEL`: the Messages API through the official SDK.

The API wants user and assistant turns to alternate, tool results as `tool_result` blocks
inside a user message (one per `tool_use`, in order), and the system prompt apart; the
neutral conversation is translated to that shape, merging neighbouring user-side parts.
"""

from __future__ import annotations

from typing import Any, cast

import anthropic
from anthropic.types import Message as AnthropicMessage
from anthropic.types import MessageParam, ToolParam

from tools_app.runtime.conversation import (
    Message,
    ProviderError,
    Reply,
    ToolSchema,
    ToolUse,
    Usage,
)
from tools_app.runtime.providers.errors import (
    connection_text,
    safe_error,
    status_text,
    timeout_text,
)

NO_KEY = "not-needed"
EMPTY_TEXT = "(no text)"
DEFAULT_MAX_TOKENS = 8192


class AnthropicProvider:
    def __init__(
        self,
        model: str,
        *,
        api_key: str = "",
        base_url: str = "",
        timeout: float = 120.0,
        max_retries: int = 2,
        context_window: int = 200_000,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> None:
        self.model = model
        self.spec = f"anthropic:{model}"
        self.context_window = context_window
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_tokens = max_tokens
        self._secrets = (api_key,)
        self._client = anthropic.Anthropic(
            api_key=api_key or NO_KEY,
            base_url=base_url or None,
            timeout=timeout,
            max_retries=max_retries,
        )

    def __repr__(self) -> str:
        return f"AnthropicProvider({self.model!r}, base_url={str(self._client.base_url)!r})"

    def complete(self, *, system: str, messages: list[Message], tools: list[ToolSchema]) -> Reply:
        extra: dict[str, Any] = {}
        if system:
            extra["system"] = system
        if tools:
            extra["tools"] = to_anthropic_tools(tools)
        try:
            answer = self._client.messages.create(
                model=self.model,
                max_tokens=self.max_tokens,
                messages=to_anthropic_messages(messages),
                **extra,
            )
        except anthropic.AnthropicError as error:
            raise self._provider_error(error) from None
        try:
            return parse_anthropic_answer(self.spec, answer)
        except (AttributeError, TypeError, ValueError) as error:
            message = f"{self.spec}: the answer has an unexpected shape ({error})"
            raise safe_error(message, self._secrets) from None

    def _provider_error(self, error: anthropic.AnthropicError) -> ProviderError:
        attempts = self.max_retries + 1
        if isinstance(error, anthropic.APIStatusError):
            text = status_text(self.spec, error.status_code, error.body, attempts)
        elif isinstance(error, anthropic.APITimeoutError):
            text = timeout_text(self.spec, self.timeout, attempts)
        elif isinstance(error, anthropic.APIConnectionError):
            text = connection_text(self.spec, str(self._client.base_url), error.__cause__)
        else:
            text = f"{self.spec}: {type(error).__name__}: {error}"
        return safe_error(text, self._secrets)


def to_anthropic_messages(messages: list[Message]) -> list[MessageParam]:
    """Content blocks per turn; consecutive parts of one side merged into one message."""
    wire: list[dict[str, Any]] = []
    for message in messages:
        role, blocks = message_blocks(message)
        if wire and wire[-1]["role"] == role:
            wire[-1]["content"].extend(blocks)
        else:
            wire.append({"role": role, "content": blocks})
    return cast("list[MessageParam]", wire)


def message_blocks(message: Message) -> tuple[str, list[dict[str, Any]]]:
    role = message["role"]
    if role == "user":
        return "user", [{"type": "text", "text": message["content"] or EMPTY_TEXT}]
    if role == "tool_results":
        return "user", [tool_result_block(result) for result in message["results"]]
    if role == "assistant":
        return "assistant", assistant_blocks(message)
    raise ProviderError(f"a conversation message has the unknown role {role!r}")


def assistant_blocks(message: Message) -> list[dict[str, Any]]:
    """A text block (when there is text) then one `tool_use` block per call; never empty,
    since the API refuses an empty assistant turn and an empty text block."""
    text = message.get("content") or ""
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    blocks.extend(
        {"type": "tool_use", "id": use["id"], "name": use["name"], "input": use["args"]}
        for use in message.get("tool_uses") or []
    )
    return blocks or [{"type": "text", "text": EMPTY_TEXT}]


def tool_result_block(result: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "tool_result",
        "tool_use_id": result["id"],
        "content": str(result["content"]),
        "is_error": bool(result.get("is_error")),
    }


def to_anthropic_tools(tools: list[ToolSchema]) -> list[ToolParam]:
    return [
        cast(
            "ToolParam",
            {"name": tool.name, "description": tool.description, "input_schema": tool.input_schema},
        )
        for tool in tools
    ]


def parse_anthropic_answer(spec: str, answer: AnthropicMessage) -> Reply:
    """Text blocks joined, `tool_use` blocks in order (ids kept), usage and stop reason."""
    content = getattr(answer, "content", None)
    if not isinstance(content, list):
        raise ProviderError(f"{spec}: the answer holds no content: {str(answer)[:200]}")
    texts = [block.text for block in content if getattr(block, "type", "") == "text"]
    uses = tuple(tool_use(block) for block in content if getattr(block, "type", "") == "tool_use")
    return Reply(
        text="\n".join(texts),
        tool_uses=uses,
        usage=parse_usage(answer),
        stop_reason=str(answer.stop_reason or ""),
    )


def tool_use(block: Any) -> ToolUse:
    raw = block.input
    if isinstance(raw, dict):
        return ToolUse(id=block.id, name=block.name, args=dict(raw))
    problem = f"the input must be a JSON object, not {type(raw).__name__}: {str(raw)[:200]}"
    return ToolUse(id=block.id, name=block.name, args={}, args_error=problem)


def parse_usage(answer: AnthropicMessage) -> Usage:
    """Input counts the cached parts too: all of it fills the context window."""
    usage = getattr(answer, "usage", None)
    if usage is None:
        return Usage()
    cached = (usage.cache_creation_input_tokens or 0) + (usage.cache_read_input_tokens or 0)
    return Usage(
        input_tokens=(usage.input_tokens or 0) + cached,
        output_tokens=usage.output_tokens or 0,
    )
