"""An upstream MCP server's tool as the engine prepares and runs it: the `ToolSpec` of the
pinned definition a call is bound to, whose run forwards the call instead of doing
anything here. The definition is captured in the call's preview when it is judged, so
that what a reviewer approved (the tool as its server described it then, with exactly
these arguments) is what is forwarded.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from jsonschema.exceptions import SchemaError

from tools_app.core.skills.arguments import validate_arguments
from tools_app.core.tools.base import ToolContext, ToolSpec
from tools_app.core.tools.catalogue import upstream_facts
from tools_app.core.tools.errors import ToolError
from tools_app.core.upstreams.definitions import Definition, judged_name, listed_name

MAX_RESULT_CHARS = 50_000  # what an agent reads of one result, as web_fetch's default

# Sends approved arguments to the server once and answers with the result's text; raises
# ToolError with what the agent should read when the server refused or failed.
Forward = Callable[[dict[str, Any]], str]


@dataclass(frozen=True)
class UpstreamCall:
    """A call bound to one pinned definition of one server's tool."""

    server: str
    definition: Definition
    fingerprint: str

    @property
    def judged(self) -> str:
        return judged_name(self.server, self.definition.name)

    def as_dict(self) -> dict[str, Any]:
        return {
            "server": self.server,
            "fingerprint": self.fingerprint,
            **self.definition.as_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> UpstreamCall:
        return cls(
            server=str(data.get("server", "")),
            definition=Definition.from_dict(data),
            fingerprint=str(data.get("fingerprint", "")),
        )


def upstream_tool_spec(call: UpstreamCall, forward: Forward | None = None) -> ToolSpec:
    """The spec of `call`: arguments checked against the pinned input schema, a preview
    that captures the definition, judged as `mcp.SERVER.TOOL` with its annotations as
    facts; `forward` (None while it is only judged) runs it on the server."""
    listed = listed_name(call.server, call.definition.name)

    def check(raw: object) -> dict[str, Any]:
        try:
            return validate_arguments(listed, call.definition.input_schema, raw)
        except SchemaError as exc:
            raise ToolError(
                f"{listed} cannot be called: its server's input schema is not valid JSON "
                f"Schema ({exc.message})."
            ) from None

    def preview(
        _: ToolContext, __: object, args: dict[str, Any]
    ) -> tuple[dict[str, Any], int | None]:
        return {"definition": call.as_dict(), "listed": listed, "arguments": args}, None

    def run(_: ToolContext, args: dict[str, Any]) -> str:
        if forward is None:
            raise ToolError(f"{listed} was judged but has no server to run on.")
        return forward(args)

    return ToolSpec(
        upstream_facts(call.judged),
        description=call.definition.description,
        args_model=None,
        run=run,
        preview=preview,
        check=check,
        input_schema=call.definition.input_schema,
        executor={
            "kind": "mcp",
            "server": call.server,
            "annotations": dict(call.definition.annotations),
        },
    )


def result_text(content: list[Any], structured: object, *, is_error: bool) -> tuple[str, bool]:
    """What the agent reads of a `tools/call` result: its text parts, other parts named,
    structured content as JSON when nothing else says it; capped at MAX_RESULT_CHARS."""
    parts = [_part_text(part) for part in content]
    text = "\n".join(part for part in parts if part)
    if not text and structured is not None:
        text = json.dumps(structured, indent=2, ensure_ascii=False)
    if len(text) > MAX_RESULT_CHARS:
        text = text[:MAX_RESULT_CHARS] + f"\n[truncated at {MAX_RESULT_CHARS} characters]"
    return text, is_error


def _part_text(part: Any) -> str:
    kind = getattr(part, "type", "")
    if kind == "text":
        return str(getattr(part, "text", ""))
    if kind == "resource_link":
        return f"[resource {getattr(part, 'uri', '')}]"
    if kind == "resource":
        resource = getattr(part, "resource", None)
        text = getattr(resource, "text", None)
        return str(text) if text is not None else f"[resource {getattr(resource, 'uri', '')}]"
    mime = getattr(part, "mime_type", "") or getattr(part, "mimeType", "")
    return f"[{kind or 'content'} {mime}]".replace(" ]", "]")
