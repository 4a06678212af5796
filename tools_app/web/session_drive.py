"""How to drive a session that has no model: an external agent sends its tool calls, and
its page says exactly how — this session's id and this server's URL filled in, so each
command shown runs as written (tests/browser/test_session_drive.py runs the curl line)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from django.http import HttpRequest

from tools_app.models import AgentSession

EXAMPLE_TOOL = "list_files"  # read-only: every policy allows it, on any repository
EXAMPLE_ARGS = {"path": "."}
EXAMPLE_BODY = json.dumps({"tool": EXAMPLE_TOOL, "args": EXAMPLE_ARGS})
WAIT_SECONDS = 30  # the answer waits this long for the call to be final


@dataclass(frozen=True)
class DriveHelp:
    """The commands and addresses an external agent needs for one session."""

    tools_curl: str
    call_curl: str
    mcp_url: str
    mcp_tool: str
    mcp_arguments: str
    token_command: str
    wait_seconds: int = WAIT_SECONDS


def drive_help(request: HttpRequest, session: AgentSession) -> DriveHelp | None:
    """The help for a session an external agent drives (None for a model's or a gateway's:
    their calls come from the agent loop or the hooks; None once it is over)."""
    if session.model or session.kind != AgentSession.Kind.AGENT:
        return None
    if session.status in AgentSession.FINISHED_STATUSES:
        return None
    server = request.build_absolute_uri("/").rstrip("/")
    calls = f"{server}/api/sessions/{session.pk}"
    bearer = '-H "Authorization: Bearer $AGENTWEB_TOKEN"'
    creator = session.creator.get_username() if session.creator else "USERNAME"
    return DriveHelp(
        tools_curl=f'curl -sS {bearer} "{calls}/tools"',
        call_curl=(
            f'curl -sS -X POST "{calls}/tool-calls?wait={WAIT_SECONDS}" {bearer} '
            f"-H \"Content-Type: application/json\" -d '{EXAMPLE_BODY}'"
        ),
        mcp_url=f"{server}/mcp",
        mcp_tool=EXAMPLE_TOOL,
        mcp_arguments=json.dumps({**EXAMPLE_ARGS, "session": session.pk}),
        token_command=f"bin/agentweb create_api_token {creator} --scope agent",
    )
