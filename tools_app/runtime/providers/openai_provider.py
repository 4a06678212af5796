"""`openai:MODEL`: the Chat Completions API through the official SDK.

Any OpenAI-compatible server works (vLLM, Ollama, llama.cpp, OpenRouter): the base URL
comes from the caller, and a local server that wants no key gets a placeholder one.
"""

from __future__ import annotations

import json
from typing import Any, cast

import openai
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageParam,
)

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
ERROR_PREFIX = "Error: "


class OpenAIProvider:
    def __init__(
        self,
        model: str,
        *,
        api_key: str = "",
        base_url: str = "",
        timeout: float = 120.0,
        max_retries: int = 2,
        context_window: int = 128_000,
    ) -> None:
        self.model = model
        self.spec = f"openai:{model}"
        self.context_window = context_window
        self.timeout = timeout
        self.max_retries = max_retries
        self._secrets = (api_key,)
        self._client = openai.OpenAI(
            api_key=api_key or NO_KEY,
            base_url=base_url or None,
            timeout=timeout,
            max_retries=max_retries,
        )

    def __repr__(self) -> str:
        return f"OpenAIProvider({self.model!r}, base_url={str(self._client.base_url)!r})"

    def complete(self, *, system: str, messages: list[Message], tools: list[ToolSchema]) -> Reply:
        wire = to_openai_messages(system, messages)
        extra: dict[str, Any] = {"tools": to_openai_tools(tools)} if tools else {}
        try:
            answer = self._client.chat.completions.create(model=self.model, messages=wire, **extra)
        except openai.OpenAIError as error:
            raise self._provider_error(error) from None
        try:
            return parse_openai_answer(self.spec, answer)
        except (AttributeError, TypeError, ValueError) as error:
            message = f"{self.spec}: the answer has an unexpected shape ({error})"
            raise safe_error(message, self._secrets) from None

    def _provider_error(self, error: openai.OpenAIError) -> ProviderError:
        attempts = self.max_retries + 1
        if isinstance(error, openai.APIStatusError):
            text = status_text(self.spec, error.status_code, error.body, attempts)
        elif isinstance(error, openai.APITimeoutError):
            text = timeout_text(self.spec, self.timeout, attempts)
        elif isinstance(error, openai.APIConnectionError):
            text = connection_text(self.spec, str(self._client.base_url), error.__cause__)
        else:
            text = f"{self.spec}: {type(error).__name__}: {error}"
        return safe_error(text, self._secrets)


def to_openai_messages(system: str, messages: list[Message]) -> list[ChatCompletionMessageParam]:
    """The neutral conversation as chat messages: one `tool` message per result, in order."""
    wire: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for message in messages:
        role = message["role"]
        if role == "user":
            wire.append({"role": "user", "content": message["content"]})
        elif role == "assistant":
            wire.append(assistant_message(message))
        elif role == "tool_results":
            wire.extend(tool_message(result) for result in message["results"])
        else:
            raise ProviderError(f"a conversation message has the unknown role {role!r}")
    return cast("list[ChatCompletionMessageParam]", wire)


def assistant_message(message: Message) -> dict[str, Any]:
    uses = message.get("tool_uses") or []
    text = message.get("content") or ""
    if not uses:
        return {"role": "assistant", "content": text}
    calls = [
        {
            "id": use["id"],
            "type": "function",
            "function": {"name": use["name"], "arguments": json.dumps(use["args"])},
        }
        for use in uses
    ]
    return {"role": "assistant", "content": text or None, "tool_calls": calls}


def tool_message(result: dict[str, Any]) -> dict[str, Any]:
    """Chat Completions has no error flag on a tool result, so the content says it."""
    content = str(result["content"])
    if result.get("is_error"):
        content = ERROR_PREFIX + content
    return {"role": "tool", "tool_call_id": result["id"], "content": content}


def to_openai_tools(tools: list[ToolSchema]) -> list[ChatCompletionFunctionToolParam]:
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.input_schema,
            },
        }
        for tool in tools
    ]


def parse_openai_answer(spec: str, answer: ChatCompletion) -> Reply:
    """Text, tool calls (in order, ids kept), usage and finish reason of the first choice."""
    choices = getattr(answer, "choices", None)
    if not choices:
        raise ProviderError(f"{spec}: the answer holds no choices: {str(answer)[:200]}")
    message = choices[0].message
    text = message.content or message.refusal or ""
    uses = tuple(
        parse_tool_call(call, index) for index, call in enumerate(message.tool_calls or [])
    )
    usage = answer.usage
    return Reply(
        text=text,
        tool_uses=uses,
        usage=Usage(
            input_tokens=(usage.prompt_tokens or 0) if usage else 0,
            output_tokens=(usage.completion_tokens or 0) if usage else 0,
        ),
        stop_reason=str(choices[0].finish_reason or ""),
    )


def parse_tool_call(call: Any, index: int) -> ToolUse:
    """A function call; arguments that are not a JSON object give a ToolUse with
    `args_error` (servers sometimes omit ids, so one is made from the position)."""
    use_id = getattr(call, "id", None) or f"call_{index}"
    function = getattr(call, "function", None)
    if function is None:
        name = str(getattr(getattr(call, "custom", None), "name", "") or "")
        return ToolUse(id=use_id, name=name, args={}, args_error="not a function call")
    name, raw = str(function.name or ""), function.arguments or ""
    args, problem = parse_arguments(raw)
    return ToolUse(id=use_id, name=name, args=args, args_error=problem)


def parse_arguments(raw: str) -> tuple[dict[str, Any], str]:
    """Parsed arguments, or ({}, why not). An empty string means no arguments."""
    if not raw.strip():
        return {}, ""
    try:
        args = json.loads(raw)
    except json.JSONDecodeError as error:
        return {}, f"the arguments are not valid JSON ({error}): {raw[:200]}"
    if not isinstance(args, dict):
        return {}, f"the arguments must be a JSON object, not {type(args).__name__}: {raw[:200]}"
    return args, ""
