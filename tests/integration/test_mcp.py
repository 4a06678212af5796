"""MCP: the `mcp` package's own client against agentweb on daphne (`/mcp`) and on stdio
(`manage.py mcp_stdio`), with a real Celery worker, Redis and git clones. Alice's agent
speaks MCP with her agent token; Rita decides with a service call, as the inbox does;
every outcome is checked in the database and on disk, not only in the answer."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import httpx
import httpx2
import pytest
from django.contrib.auth.models import User
from django.db import connections
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.browser.server import Daphne
from tests.helpers import ROOT, Worker
from tools_app import services
from tools_app.api.mcp_server import FACTS_KEY
from tools_app.models import AgentSession, ToolCall

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.worker,
]

WAIT = 8  # AGENTWEB_MCP_WAIT_SECONDS of the daphne under test


@pytest.fixture(scope="module")
def mcp_url(stack: Worker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """daphne on a free port of 127.0.0.1, with the worker's database, Redis and queues."""
    log = tmp_path_factory.mktemp("daphne-mcp") / "daphne.log"
    server = Daphne({**stack.env, "AGENTWEB_MCP_WAIT_SECONDS": str(WAIT)}, log)
    server.start()
    yield f"{server.url}/mcp"
    server.stop()


@pytest.fixture
def alice_token(creator: User) -> str:
    return services.api_token_create(user=creator, scope="agent")


@asynccontextmanager
async def connected(url: str, token: str, mode: str = "legacy") -> AsyncIterator[Client]:
    """An SDK client of /mcp: by default one of the initialize handshake (2025-11-25),
    whose MCP session is the connection that remembers its agentweb session; `auto`
    (the SDK's default) negotiates the newest version, 2026-07-28."""
    headers = {"Authorization": f"Bearer {token}"}
    timeout = httpx2.Timeout(30, read=120)
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        yield client


async def in_thread(function: Callable[..., Any], *args: Any) -> Any:
    """ORM work from the client's event loop: in a thread, on its own connection."""

    def call() -> Any:
        try:
            return function(*args)
        finally:
            connections.close_all()

    return await anyio.to_thread.run_sync(call)


def text(result: Any) -> str:
    return "".join(block.text for block in result.content)


def facts(result: Any) -> dict[str, Any]:
    """What a program reads of a result (ids, status): its `_meta`, beside the text."""
    found: dict[str, Any] = result.meta[FACTS_KEY]
    return found


def awaiting_call(session_id: int) -> ToolCall:
    deadline = time.monotonic() + 30
    while True:
        call = ToolCall.objects.filter(session_id=session_id, status="awaiting_approval").first()
        if call is not None:
            return call
        assert time.monotonic() < deadline, "no call came to wait for a person"
        time.sleep(0.05)


def decide(call_id: int, reviewer: User, decision: str, reason: str = "") -> None:
    call = ToolCall.objects.select_related("session__policy").get(pk=call_id)
    services.tool_call_decide(
        call=call, user=reviewer, scope="review", decision=decision, reason=reason
    )


async def start(client: Client, workspace: Path) -> int:
    started = await client.call_tool(
        "start_session", {"task": "fix the bug", "repo": str(workspace)}
    )
    assert not started.is_error, text(started)
    assert facts(started)["status"] == "running"  # the clone is ready
    return int(facts(started)["session"])


async def until_final(client: Client, result: Any) -> Any:
    """A call's answer, following `await_tool_call` while it says it still waits."""
    while "call await_tool_call" in text(result):
        result = await client.call_tool("await_tool_call", {"id": facts(result)["id"]})
    return result


def test_a_session_started_over_mcp_clones_and_its_allowed_calls_run(
    mcp_url: str, alice_token: str, creator: User, workspace: Path
) -> None:
    async def scenario() -> tuple[int, list[str], Any, Any]:
        async with connected(mcp_url, alice_token) as client:
            assert client.protocol_version == "2025-11-25"  # the handshake's newest
            names = [tool.name for tool in (await client.list_tools()).tools]
            session_id = await start(client, workspace)
            read = await client.call_tool("read_file", {"path": "README.md"})
            wrote = await client.call_tool(
                "write_file", {"path": "notes.md", "content": "hello\n", "session": session_id}
            )
            return session_id, names, read, wrote

    session_id, names, read, wrote = anyio.run(scenario)
    assert names[:2] == ["start_session", "await_tool_call"] and len(names) == 17
    assert {"read_file", "run_command", "git_commit", "web_fetch"} <= set(names)
    assert not read.is_error and text(read).startswith("1 | # Title")
    assert not wrote.is_error, text(wrote)
    session = AgentSession.objects.get(pk=session_id)
    assert session.creator == creator and session.kind == "agent"
    assert Path(session.workspace, "notes.md").read_text() == "hello\n"
    statuses = list(session.tool_calls.order_by("pk").values_list("tool", "status"))
    assert statuses == [("read_file", "succeeded"), ("write_file", "succeeded")]


def test_a_write_approved_by_a_reviewer_during_the_wait_lands_on_disk(
    mcp_url: str, alice_token: str, reviewer: User, workspace: Path
) -> None:
    messages: list[str] = []

    async def scenario() -> tuple[int, Any]:
        told = anyio.Event()

        async def progress(done: float, total: float | None, message: str | None) -> None:
            messages.append(message or "")
            if "awaiting approval" in (message or ""):
                told.set()

        async with connected(mcp_url, alice_token) as client:
            session_id = await start(client, workspace)
            answers: dict[str, Any] = {}

            async def write() -> None:
                answers["write"] = await client.call_tool(
                    "write_file", {"path": ".env", "content": "A=1\n"}, progress_callback=progress
                )

            async with anyio.create_task_group() as group:
                group.start_soon(write)
                await told.wait()  # the client heard that a person must decide
                call = await in_thread(awaiting_call, session_id)
                await in_thread(decide, call.pk, reviewer, "approve")
            return session_id, await until_final(client, answers["write"])

    session_id, answer = anyio.run(scenario)
    assert not answer.is_error, text(answer)
    assert facts(answer)["status"] == "succeeded"
    assert facts(answer)["decided_by"] == "rita"
    number = facts(answer)["id"]
    assert f"call {number}: awaiting approval" in messages  # then approved, running
    workspace_dir = Path(AgentSession.objects.get(pk=session_id).workspace)
    assert (workspace_dir / ".env").read_text() == "A=1\n"


def test_a_call_nobody_decides_answers_within_the_wait_then_await_tool_call_follows_it(
    mcp_url: str, alice_token: str, reviewer: User, workspace: Path
) -> None:
    async def scenario() -> tuple[int, Any, Any]:
        async with connected(mcp_url, alice_token) as client:
            session_id = await start(client, workspace)
            first = await client.call_tool("write_file", {"path": ".env", "content": "B=2\n"})
            await in_thread(decide, facts(first)["id"], reviewer, "approve")
            later = await client.call_tool("await_tool_call", {"id": facts(first)["id"]})
            return session_id, first, later

    session_id, first, later = anyio.run(scenario)
    number = facts(first)["id"]
    assert text(first).startswith(
        f"awaiting approval (call {number}): call await_tool_call with id {number} to keep waiting"
    )
    assert not first.is_error and "protected path .env" in text(first)
    assert facts(later)["status"] == "succeeded", text(later)
    workspace_dir = Path(AgentSession.objects.get(pk=session_id).workspace)
    assert (workspace_dir / ".env").read_text() == "B=2\n"


def test_a_denial_is_a_result_carrying_the_reviewers_reason_and_nothing_is_written(
    mcp_url: str, alice_token: str, reviewer: User, workspace: Path
) -> None:
    async def scenario() -> tuple[int, Any]:
        async with connected(mcp_url, alice_token) as client:
            session_id = await start(client, workspace)
            answers: dict[str, Any] = {}

            async def write() -> None:
                answers["write"] = await client.call_tool(
                    "write_file", {"path": ".env", "content": "LEAK=1\n"}
                )

            async with anyio.create_task_group() as group:
                group.start_soon(write)
                call = await in_thread(awaiting_call, session_id)
                await in_thread(decide, call.pk, reviewer, "deny", "secrets stay in the vault")
            return session_id, await until_final(client, answers["write"])

    session_id, answer = anyio.run(scenario)
    assert answer.is_error and facts(answer)["status"] == "denied"
    assert "secrets stay in the vault" in text(answer) and "denied by rita" in text(answer)
    workspace_dir = Path(AgentSession.objects.get(pk=session_id).workspace)
    assert (workspace_dir / ".env").read_text() == "SECRET=shh\n"


def test_no_token_or_a_bad_one_gets_401_and_nothing_is_served(mcp_url: str) -> None:
    hello = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    accept = {"Accept": "application/json, text/event-stream"}
    bad = {**accept, "Authorization": "Bearer aw_not-a-token"}
    for headers in (accept, bad, {**accept, "Authorization": "Basic YTpi"}):
        answer = httpx.post(mcp_url, json=hello, headers=headers, timeout=30)
        assert answer.status_code == 401, answer.text
        assert "token" in answer.json()["detail"].lower()
        assert answer.headers["www-authenticate"].startswith("Bearer")


def test_an_outsider_cannot_act_on_alices_session_and_a_call_without_session_says_so(
    mcp_url: str, alice_token: str, outsider: User, workspace: Path
) -> None:
    charlie = services.api_token_create(user=outsider, scope="agent")

    async def scenario() -> tuple[int, Any, Any]:
        async with connected(mcp_url, alice_token) as client:
            session_id = await start(client, workspace)
        async with connected(mcp_url, charlie) as client:
            foreign = await client.call_tool("read_file", {"path": ".env", "session": session_id})
            nothing = await client.call_tool("read_file", {"path": "README.md"})
        return session_id, foreign, nothing

    session_id, foreign, nothing = anyio.run(scenario)
    assert foreign.is_error and text(foreign) == f"There is no session {session_id}."
    assert nothing.is_error and "call start_session" in text(nothing)
    assert not ToolCall.objects.filter(session_id=session_id).exists()


def test_a_client_of_the_newest_protocol_names_its_session_and_waits_for_a_person(
    mcp_url: str, alice_token: str, reviewer: User, workspace: Path
) -> None:
    """The SDK's default client negotiates 2026-07-28, where each request stands alone:
    nothing remembers its session, so the listing requires `session`, start_session says
    to pass it, and a call without it is refused. Named, a held write is approved while
    the client hears the wait's progress, and another is denied."""
    messages: list[str] = []

    async def scenario() -> tuple[str, Any, Any, Any, Any, Any]:
        told = anyio.Event()

        async def progress(done: float, total: float | None, message: str | None) -> None:
            messages.append(message or "")
            if "awaiting approval" in (message or ""):
                told.set()

        async with connected(mcp_url, alice_token, mode="auto") as client:
            listed = await client.list_tools()
            started = await client.call_tool(
                "start_session", {"task": "fix the bug", "repo": str(workspace)}
            )
            number = facts(started)["session"]
            unnamed = await client.call_tool("read_file", {"path": "README.md"})
            answers: dict[str, Any] = {}

            async def write(content: str, callback: Any = None) -> None:
                args = {"path": ".env", "content": content, "session": number}
                answers[content] = await client.call_tool(
                    "write_file", args, progress_callback=callback
                )

            async with anyio.create_task_group() as group:
                group.start_soon(write, "A=1\n", progress)
                await told.wait()  # the client heard that a person must decide
                call = await in_thread(awaiting_call, number)
                await in_thread(decide, call.pk, reviewer, "approve")
            async with anyio.create_task_group() as group:
                group.start_soon(write, "LEAK=1\n")
                call = await in_thread(awaiting_call, number)
                await in_thread(decide, call.pk, reviewer, "deny", "secrets stay in the vault")
            approved = await until_final(client, answers["A=1\n"])
            denied = await until_final(client, answers["LEAK=1\n"])
            return client.protocol_version, listed, started, unnamed, approved, denied

    version, listed, started, unnamed, approved, denied = anyio.run(scenario)
    assert version == "2026-07-28"
    read_file = next(tool for tool in listed.tools if tool.name == "read_file")
    assert "session" in read_file.input_schema["required"]
    number = facts(started)["session"]
    assert f"Pass `session`: {number} with each call" in text(started)
    assert unnamed.is_error and "No session" in text(unnamed)
    assert facts(approved)["status"] == "succeeded", text(approved)
    assert any("awaiting approval" in message for message in messages)
    assert denied.is_error and "secrets stay in the vault" in text(denied)
    clone = Path(AgentSession.objects.get(pk=number).workspace)
    assert (clone / ".env").read_text() == "A=1\n"  # the denied write never ran


def stdio(env: dict[str, str], token: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["manage.py", "mcp_stdio"],
        env={**env, "AGENTWEB_TOKEN": token},
        cwd=ROOT,
    )


def test_mcp_stdio_serves_the_same_tools_as_the_tokens_user(
    stack: Worker, alice_token: str, creator: User, workspace: Path
) -> None:
    async def scenario() -> tuple[int, Any]:
        async with Client(stdio(stack.env, alice_token)) as client:
            assert client.protocol_version == "2026-07-28"  # the process is the connection
            session_id = await start(client, workspace)
            wrote = await client.call_tool("write_file", {"path": "notes.md", "content": "hi\n"})
            return session_id, wrote

    session_id, wrote = anyio.run(scenario)
    assert facts(wrote)["status"] == "succeeded", text(wrote)
    session = AgentSession.objects.get(pk=session_id)
    assert session.creator == creator
    assert Path(session.workspace, "notes.md").read_text() == "hi\n"


def test_mcp_stdio_without_credentials_exits_with_a_message_and_no_protocol(
    stack: Worker,
) -> None:
    env = {key: value for key, value in stack.env.items() if key != "AGENTWEB_TOKEN"}
    for extra in ({}, {"AGENTWEB_TOKEN": "aw_revoked-or-never-was"}):
        finished = subprocess.run(
            [sys.executable, "manage.py", "mcp_stdio"],
            cwd=ROOT, env={**env, **extra}, input="", capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip
        assert finished.returncode == 1 and finished.stdout == ""
        assert "AGENTWEB_TOKEN" in finished.stderr


def claude_cli() -> Path:
    """Claude Code's CLI: AGENTWEB_TEST_CLAUDE, else the npm cache of the gateway's tests."""
    configured = os.environ.get("AGENTWEB_TEST_CLAUDE", "")
    found = Path(configured) if configured else ROOT / ".cache/npm-agents/node_modules/.bin/claude"
    if not found.exists() or shutil.which("node") is None:
        pytest.skip(f"no Claude Code CLI at {found} (npm @anthropic-ai/claude-code) or no node")
    return found


def test_claude_code_connects_with_the_readme_config_and_a_bad_token_is_refused(
    mcp_url: str, alice_token: str, tmp_path: Path
) -> None:
    """The README's `.mcp.json` entry, added to Claude Code as it is: `claude mcp list`
    reaches /mcp with the token from AGENTWEB_TOKEN; a bad token is named a 401."""
    claude = claude_cli()
    headers = {"Authorization": "Bearer ${AGENTWEB_TOKEN}"}
    entry = {"type": "http", "url": mcp_url, "headers": headers}
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),  # a fresh user config, nothing of this machine's
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "ANTHROPIC_API_KEY": "unused",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",  # no model is asked
    }

    def claude_says(*args: str, token: str) -> str:
        finished = subprocess.run(
            [str(claude), *args], cwd=tmp_path, env={**env, "AGENTWEB_TOKEN": token},
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        return finished.stdout + finished.stderr

    added = claude_says("mcp", "add-json", "-s", "user", "agentweb", json.dumps(entry), token="")
    assert "Added" in added, added
    listed = claude_says("mcp", "list", token=alice_token)
    assert "agentweb" in listed and "Connected" in listed, listed
    refused = claude_says("mcp", "list", token="aw_not-a-token")
    assert "401" in refused and "the token is unknown" in refused, refused
