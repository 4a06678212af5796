"""A scripted fake of the OpenAI Responses API on 127.0.0.1, for the real Codex CLI.

Codex streams `POST /v1/responses` (server-sent events). Each conversation turn is
answered by the script: first the scripted function call, then, once its output came
back (a `function_call_output` in `input`), a short final text. Every request is kept in
`log`, so a test reads what reached the model (a denial's reason in that output).
"""

from __future__ import annotations

import json
from typing import Any

from tests.agents.fake_http import FakeServer, Reply, Seen

Event = tuple[str | None, Any]
OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})


class FakeOpenAI(FakeServer):
    def __init__(self, tool: str, arguments: dict[str, Any] | str) -> None:
        """`arguments` as a dict for a function tool (`exec_command`), as text for a
        freeform one (`apply_patch`, a `custom_tool_call`)."""
        super().__init__()
        self.tool, self.arguments = tool, arguments
        self.calls = 0

    def tool_results(self) -> list[str]:
        """The output of every tool call the model was sent, in order."""
        found: list[str] = []
        for seen in self.log:
            items = seen.body.get("input", []) if isinstance(seen.body, dict) else []
            for item in items if isinstance(items, list) else []:
                if isinstance(item, dict) and item.get("type") in OUTPUTS:
                    output = item.get("output")
                    found.append(output if isinstance(output, str) else json.dumps(output))
        return found

    def answer(self, seen: Seen) -> Reply:
        if seen.method != "POST" or not seen.path.endswith("/responses"):
            return Reply(json={"object": "list", "data": []})
        items = seen.body.get("input") or []
        answered = any(isinstance(i, dict) and i.get("type") in OUTPUTS for i in items)
        if answered or not seen.body.get("tools"):
            return Reply(events=_response(_message("Done.")))
        self.calls += 1
        call: dict[str, Any] = {
            "id": f"fc_fake_{self.calls}",
            "call_id": f"call_fake_{self.calls}",
            "name": self.tool,
        }
        if isinstance(self.arguments, str):
            call |= {"type": "custom_tool_call", "input": self.arguments}
        else:
            call |= {"type": "function_call", "arguments": json.dumps(self.arguments)}
        return Reply(events=_response(call))


def _message(text: str) -> dict[str, Any]:
    content = [{"type": "output_text", "text": text, "annotations": []}]
    return {"type": "message", "id": "msg_fake", "role": "assistant", "content": content}


def _response(item: dict[str, Any]) -> tuple[Event, ...]:
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    }
    done = {"id": "resp_fake", "object": "response", "status": "completed", "usage": usage}
    return (
        ("response.created", {"type": "response.created", "response": {"id": "resp_fake"}}),
        ("response.output_item.added", {"type": "response.output_item.added", "item": item}),
        ("response.output_item.done", {"type": "response.output_item.done", "item": item}),
        ("response.completed", {"type": "response.completed", "response": done}),
    )
