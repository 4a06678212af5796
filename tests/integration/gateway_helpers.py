"""Alice's Claude Code as a test drives it: hook events posted as its http hook does."""

from __future__ import annotations

import json
from typing import Any

from django.test import Client

URL = "/api/hooks/claude-code"
CWD = "/home/alice/project"


class Hook:
    """Alice's Claude Code: posts hook events as its http hook does."""

    def __init__(self, token: str, session_id: str = "cc-session-1") -> None:
        self.client = Client()
        self.token = token
        self.session_id = session_id
        self.uses = 0
        self.url = URL  # `URL?policy=NAME` for the policy of the sessions it starts

    def send(self, body: object, token: str | None = None) -> dict[str, Any]:
        data = body if isinstance(body, str | bytes) else json.dumps(body)
        headers = {"Authorization": f"Bearer {self.token if token is None else token}"}
        answer = self.client.post(self.url, data, content_type="application/json", headers=headers)
        assert answer.status_code == 200, answer.content
        return answer.json()  # type: ignore[no-any-return]

    def event(self, name: str, tool: str, tool_input: dict[str, Any], **extra: Any) -> Any:
        if "tool_use_id" not in extra:
            self.uses += 1
            extra["tool_use_id"] = f"toolu_{self.uses}"
        body = {
            "session_id": self.session_id,
            "cwd": CWD,
            "hook_event_name": name,
            "tool_name": tool,
            "tool_input": tool_input,
            "permission_mode": "default",
            **extra,
        }
        return self.send(body)

    def pre(self, tool: str, tool_input: dict[str, Any], **extra: Any) -> dict[str, Any]:
        return self.event("PreToolUse", tool, tool_input, **extra)["hookSpecificOutput"]  # type: ignore[no-any-return]


def denial(answer: dict[str, Any]) -> str:
    output = answer["hookSpecificOutput"]
    assert output["permissionDecision"] == "deny", output
    return str(output["permissionDecisionReason"])
