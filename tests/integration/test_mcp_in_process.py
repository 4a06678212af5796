"""The MCP server in this process (the `mcp` client over its in-memory transport), with
tasks run in process: bad arguments are results that name what is wrong and change
nothing, a started session's skill tools are listed and judged like any skill tool, and a
session that was cancelled takes no more calls."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from channels.layers import channel_layers
from django.contrib.auth.models import User
from mcp import Client

from tests.integration.test_card_facts_pages import assert_agentweb_sandbox_facts, card
from tools_app import services
from tools_app.api.mcp_callers import Principal
from tools_app.api.mcp_server import FACTS_KEY, build_server
from tools_app.models import AgentSession, ToolCall
from tools_app.services import skills as skill_services

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

NOTE = {
    "name": "stamper",
    "triggers": ["stamp"],
    "tools": [
        {
            "name": "stamp",
            "description": "Record a note.",
            "inputSchema": {"type": "object", "properties": {"note": {"type": "string"}}},
            "executor": {"kind": "prompt", "template": "Noted: $note"},
        }
    ],
}


@pytest.fixture(autouse=True)
def in_process(settings: Any, tmp_path: Path) -> Iterator[None]:
    """Tasks run where they are sent; no channel layer (waits read once a second); a
    call that waits for a person answers at once."""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.AGENTWEB_WORKSPACES = tmp_path / "workspaces"
    settings.CHANNEL_LAYERS = {}
    settings.AGENTWEB_MCP_WAIT_SECONDS = 0
    channel_layers.backends = {}
    yield
    channel_layers.backends = {}


def calls(user: User, *steps: tuple[str, dict[str, Any]]) -> list[Any]:
    """Send `steps` (tool, arguments) in order on one connection as `user`; the results."""
    server = build_server(lambda ctx: Principal(user=user, scope="agent", connection="one"))

    async def scenario() -> list[Any]:
        async with Client(server, mode="legacy") as client:
            return [await client.call_tool(name, args) for name, args in steps]

    return anyio.run(scenario)


def text(result: Any) -> str:
    return "".join(block.text for block in result.content)


def facts(result: Any) -> dict[str, Any]:
    """What a program reads of a result (ids, status): its `_meta`, beside the text."""
    found: dict[str, Any] = result.meta[FACTS_KEY]
    return found


def test_bad_arguments_are_results_naming_them_and_nothing_is_stored(
    creator: User, tmp_path: Path
) -> None:
    results = calls(
        creator,
        ("start_session", {"repo": str(tmp_path)}),
        ("start_session", {"task": "x", "repo": str(tmp_path / "missing")}),
        ("start_session", {"task": "x", "repo": str(tmp_path), "model": "coder"}),
        ("read_file", {"path": "README.md"}),
        ("read_file", {"path": "README.md", "session": "seven"}),
        ("read_file", {"path": "README.md", "session": True}),
        ("read_file", {"path": "README.md", "session": 99999}),
        ("await_tool_call", {"id": 99999}),
        ("await_tool_call", {}),
    )
    said = [text(result) for result in results]
    assert all(result.is_error for result in results), said
    assert said[0] == "`task` must be a string."
    assert "missing" in said[1]
    assert said[2] == "start_session takes task, repo and policy; not model."
    assert said[3].startswith("No session: call start_session {task, repo} first")
    assert said[4] == "`session` must be a positive integer (got 'seven')."
    assert said[5] == "`session` must be a positive integer (got True)."
    assert said[6] == "There is no session 99999."
    assert said[7] == "There is no tool call 99999."
    assert said[8] == "`id` must be a positive integer (got None)."
    assert not AgentSession.objects.exists() and not ToolCall.objects.exists()


def test_a_started_sessions_skill_tools_are_listed_and_wait_for_a_person(
    creator: User, workspace: Path
) -> None:
    skill_services.skill_import(data=NOTE)
    server = build_server(lambda ctx: Principal(user=creator, scope="agent", connection="one"))

    heard: list[str] = []

    async def listen(message: Any) -> None:
        heard.append(getattr(message, "method", type(message).__name__))

    async def scenario() -> tuple[Any, Any, Any]:
        async with Client(server, mode="legacy", message_handler=listen) as client:
            started = await client.call_tool(
                "start_session", {"task": "stamp it", "repo": str(workspace)}
            )
            assert not started.is_error, text(started)
            listed = await client.list_tools()
            stamped = await client.call_tool("stamp", {"note": "hello"})
            return listed, stamped, await client.list_tools(cursor=None)

    listed, stamped, _ = anyio.run(scenario)
    assert "notifications/tools/list_changed" in heard, heard
    tools = {tool.name: tool for tool in listed.tools}
    assert len(tools) == 18 and "session" in tools["stamp"].input_schema["properties"]
    assert tools["stamp"].description == "[skill stamper] Record a note."
    call = ToolCall.objects.get()
    assert (call.tool, call.status) == ("stamper.stamp", "awaiting_approval")
    assert text(stamped).startswith(f"awaiting approval (call {call.pk}): call await_tool_call")
    assert not stamped.is_error and "skill tool" in text(stamped)


def test_a_cancelled_session_takes_no_more_calls(creator: User, workspace: Path) -> None:
    (started,) = calls(creator, ("start_session", {"task": "fix it", "repo": str(workspace)}))
    session = AgentSession.objects.get(pk=facts(started)["session"])
    services.session_cancel(session=session)
    (refused,) = calls(creator, ("read_file", {"path": "README.md", "session": session.pk}))
    assert refused.is_error
    assert text(refused) == f"Session {session.pk} is cancelled; it takes no more calls."
    assert not ToolCall.objects.exists()


def test_a_results_text_is_what_the_model_reads_and_its_facts_ride_in_meta(
    creator: User, workspace: Path
) -> None:
    """No structuredContent: clients that find it hand the model that alone (Claude Code
    does), and the model would never read the file or "call await_tool_call"."""
    started, read, waiting = calls(
        creator,
        ("start_session", {"task": "read it", "repo": str(workspace)}),
        ("read_file", {"path": "README.md"}),
        ("write_file", {"path": ".env", "content": "A=1\n"}),
    )
    assert all(result.structured_content is None for result in (started, read, waiting))
    assert text(read).startswith("1 | # Title") and facts(read)["status"] == "succeeded"
    number = facts(waiting)["id"]
    assert text(waiting).startswith(f"awaiting approval (call {number}): call await_tool_call")
    assert facts(started)["session"] == ToolCall.objects.get(pk=number).session_id


def test_an_mcp_command_card_is_agentwebs_sandbox_not_the_agents_machine(
    creator: User, reviewer: User, workspace: Path
) -> None:
    """agentweb's tools over MCP run in agentweb's workspace: the card says so, as for
    its own agent, though the client is an agent on someone's machine."""
    calls(
        creator,
        ("start_session", {"task": "deps", "repo": str(workspace)}),
        ("run_command", {"command": "npm install lodash"}),
    )
    call = ToolCall.objects.get(tool="run_command")
    assert call.status == "awaiting_approval" and not call.native_tool
    page = card(reviewer, call)
    assert "$ npm install lodash" in page
    assert_agentweb_sandbox_facts(call, page)


def test_a_client_that_sent_a_progress_token_waits_for_the_person_in_one_call(
    creator: User, reviewer: User, workspace: Path, settings: Any
) -> None:
    """Past `AGENTWEB_MCP_WAIT_SECONDS` (0 here): the answer is the call's result, the
    progress notifications having said meanwhile that it awaits approval."""
    settings.AGENTWEB_MCP_PROGRESS_WAIT_SECONDS = 30
    server = build_server(lambda ctx: Principal(user=creator, scope="agent", connection="one"))
    heard: list[str] = []

    def approve_once_waiting() -> None:
        call = ToolCall.objects.get(status="awaiting_approval")
        services.tool_call_decide(call=call, user=reviewer, scope="review", decision="approve")

    async def progress(done: float, total: float | None, message: str | None) -> None:
        heard.append(message or "")
        if message and message.endswith("awaiting approval") and len(heard) == 1:
            await anyio.to_thread.run_sync(approve_once_waiting)

    async def scenario() -> Any:
        async with Client(server, mode="legacy") as client:
            await client.call_tool("start_session", {"task": "key", "repo": str(workspace)})
            args = {"path": ".env", "content": "A=1\n"}
            return await client.call_tool("write_file", args, progress_callback=progress)

    written = anyio.run(scenario)
    assert not written.is_error and facts(written)["status"] == "succeeded", text(written)
    assert "awaiting approval" in heard[0] and "await_tool_call" not in text(written)
