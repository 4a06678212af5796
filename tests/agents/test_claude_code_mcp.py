"""The real Claude Code CLI calling agentweb's tools over MCP (`--mcp-config`, `/mcp` with
a bearer token), through an approval: here agentweb runs the tools, in a clone it made.

The scripted model starts a session, writes `.env` (a protected path: a person decides;
the call names its session, as start_session's answer asks of a 2026-07-28 client),
hears "awaiting approval (call N)" once `AGENTWEB_MCP_WAIT_SECONDS` has passed, and keeps
waiting with `await_tool_call`; a reviewer approves (or denies) meanwhile. The write is
checked in the clone on disk, and what the model read in the fake API's request log."""

from __future__ import annotations

import json
import re
import shutil
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User

from tests.agents.claude import finished, needs_claude, run_claude
from tests.agents.common import daphne_serving
from tests.agents.fake_anthropic import FakeAnthropic
from tests.helpers import Worker, git
from tools_app import services
from tools_app.models import AgentSession, Decision, Policy, PolicyRule, ToolCall
from tools_app.services import upstreams

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.worker,
    needs_claude,
]

MCP_WAIT_SECONDS = 2  # short: the model hears "awaiting approval" and keeps waiting
SERVER = "agentweb"
AWAITING = re.compile(r"call await_tool_call with id (\d+)")
NAME_IT = re.compile(r"Pass `session`: (\d+) with each call")
SITE = sysconfig.get_paths()["purelib"]  # an upstream server's packages, shown read-only
UPSTREAM_SCRIPT = Path(__file__).parents[1] / "integration" / "mcp_upstream_server.py"


@pytest.fixture(scope="module")
def agentweb(stack: Worker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with daphne_serving(
        stack,
        tmp_path_factory,
        AGENTWEB_MCP_WAIT_SECONDS=str(MCP_WAIT_SECONDS),
        # Claude Code sends a progress token: without this it would wait in one call.
        AGENTWEB_MCP_PROGRESS_WAIT_SECONDS=str(MCP_WAIT_SECONDS),
    ) as url:
        yield url


@pytest.fixture
def alice() -> User:
    return User.objects.create_user("alice")


def mcp_args(url: str, folder: Path) -> tuple[str, ...]:
    """`--mcp-config` with agentweb's `/mcp` as the README shows it (the token from the
    environment), and its tools allowed: Claude Code's own permissions do not ask."""
    entry = {"type": "http", "url": f"{url}/mcp"}
    entry["headers"] = {"Authorization": "Bearer ${AGENTWEB_TOKEN}"}  # type: ignore[assignment]
    path = folder / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {SERVER: entry}}))
    return ("--mcp-config", str(path), "--strict-mcp-config", "--allowedTools", f"mcp__{SERVER}")


def in_session(results: list[str], args: dict[str, Any]) -> dict[str, Any]:
    """`args`, naming the session as start_session's answer asks: Claude Code speaks
    MCP 2026-07-28 with agentweb, where no connection remembers a session."""
    named = NAME_IT.search(results[0])
    return {**args, "session": int(named.group(1))} if named else args


def write_env_script(repo: Path) -> Any:
    """start_session, write `.env`, then await_tool_call for as long as it still waits."""

    def script(results: list[str]) -> tuple[str, dict[str, Any]] | None:
        if not results:
            return f"mcp__{SERVER}__start_session", {"task": "set the key", "repo": str(repo)}
        if len(results) == 1:
            args = {"path": ".env", "content": "API_KEY=ok\n"}
            return f"mcp__{SERVER}__write_file", in_session(results, args)
        waiting = AWAITING.search(results[-1])
        if waiting:
            return f"mcp__{SERVER}__await_tool_call", {"id": int(waiting.group(1))}
        return None

    return script


def heard(fake: FakeAnthropic, text: str) -> None:
    """Return once a tool result holding `text` has reached the model."""
    deadline = time.monotonic() + 60
    while not any(text in result for result in fake.tool_results()):
        assert time.monotonic() < deadline, f"the model never read {text!r}: {fake.tool_results()}"
        time.sleep(0.05)


def write_env_through_mcp(
    url: str,
    token: str,
    rita: User,
    repo: Path,
    folder: Path,
    settings: dict[str, Any] | None,
    decision: str = "approve",
    reason: str = "",
) -> tuple[list[str], ToolCall]:
    """Claude Code plays `write_env_script`; Rita decides the write once the model has
    heard that it waits. The tool results of the last conversation, and the call."""  # fmt: skip
    project = folder / "project"
    project.mkdir()
    with FakeAnthropic(script=write_env_script(repo)) as fake:
        args = mcp_args(url, folder)
        process = run_claude(project, url, token, fake, settings=settings, args=args)
        heard(fake, "awaiting approval (call")
        call = ToolCall.objects.get(status="awaiting_approval")
        services.tool_call_decide(
            call=call, user=rita, scope="session", decision=decision, reason=reason
        )
        finished(process)
        return fake.conversation(), call


def test_claude_code_writes_through_agentweb_mcp_after_an_approval(
    agentweb: str, alice: User, rita: User, workspace: Path, tmp_path: Path
) -> None:
    token = services.api_token_create(user=alice, scope="agent")
    results, call = write_env_through_mcp(agentweb, token, rita, workspace, tmp_path, {})
    session = AgentSession.objects.get()
    assert (session.kind, session.creator) == ("agent", alice)
    assert results[0].startswith(f"Session {session.pk} is")  # ready, or still cloning
    assert f"Pass `session`: {session.pk}" in results[0]  # 2026-07-28: no connection
    assert f"awaiting approval (call {call.pk})" in results[1]
    assert "protected path .env" in results[1]
    assert len(results) >= 3 and "call await_tool_call" not in results[-1]
    assert results[-1] == "Wrote 11 characters to .env", results
    call.refresh_from_db()
    assert (call.tool, call.status, call.args["path"]) == ("write_file", "succeeded", ".env")
    clone = Path(session.workspace)
    assert (clone / ".env").read_text() == "API_KEY=ok\n"
    assert (workspace / ".env").read_text() == "SECRET=shh\n"  # the clone, not the origin
    assert "+API_KEY=ok" in git(clone, "diff", "--", ".env")


def test_with_the_hooks_too_an_allow_rule_lets_agentwebs_own_tools_wait_only_once(
    agentweb: str, alice: User, rita: User, workspace: Path, tmp_path: Path
) -> None:
    """The README's two setups together: the hooks would hold every `mcp__agentweb__*`
    call for a person (an MCP tool); the rule the README gives lets them through, and the
    write waits once, in agentweb's own MCP session, where it runs."""
    default = Policy.objects.get(name="default")
    PolicyRule.objects.create(policy=default, position=0, tool=f"mcp.{SERVER}.*", decision="allow")
    services.policy_bump_version(policy=default)
    token = services.api_token_create(user=alice, scope="agent")
    results, call = write_env_through_mcp(agentweb, token, rita, workspace, tmp_path, None)
    assert results[-1] == "Wrote 11 characters to .env", results
    assert call.session.kind == "agent"  # held in agentweb's own MCP session, not the hook's
    assert (Path(call.session.workspace) / ".env").read_text() == "API_KEY=ok\n"
    gateway = AgentSession.objects.get(kind="gateway")
    seen = list(gateway.tool_calls.order_by("pk").values_list("tool", "status"))
    assert seen[:2] == [(f"mcp.{SERVER}.start_session", "succeeded"),
                        (f"mcp.{SERVER}.write_file", "succeeded")], seen  # fmt: skip
    assert Decision.objects.count() == 1  # one person decided, once


def test_claude_code_uses_an_upstream_mcp_servers_tool_through_an_approval(
    agentweb: str, alice: User, rita: User, workspace: Path, tmp_path: Path
) -> None:
    """Only agentweb's `/mcp` is configured: the upstream server (ours, recording each call
    it receives) is reached through it, its writing tool waits for Rita, and the note is
    written once, in the server's folder, after she approves."""
    readable = Path(tempfile.mkdtemp(prefix="aw-claude-upstream-"))
    readable.chmod(0o755)
    script = Path(shutil.copy(UPSTREAM_SCRIPT, readable / "server.py"))
    upstreams.upstreams_import(data={"upstreams": [{
        "name": "notes", "command": ["/usr/bin/python3", str(script)],
        "environment": {"PYTHONPATH": SITE}, "readonly_paths": [SITE, str(readable)],
    }]})  # fmt: skip
    folder = Path(settings.AGENTWEB_VAR) / "upstreams" / "notes"
    shutil.rmtree(folder, ignore_errors=True)

    def script_of_the_model(results: list[str]) -> tuple[str, dict[str, Any]] | None:
        if not results:
            return f"mcp__{SERVER}__start_session", {"task": "take a note", "repo": str(workspace)}
        if len(results) == 1:
            args = {"name": "n.txt", "text": "from claude"}
            return f"mcp__{SERVER}__notes__note_write", in_session(results, args)
        waiting = AWAITING.search(results[-1])
        if waiting:
            return f"mcp__{SERVER}__await_tool_call", {"id": int(waiting.group(1))}
        return None

    token = services.api_token_create(user=alice, scope="agent")
    project = tmp_path / "project"
    project.mkdir()
    try:
        with FakeAnthropic(script=script_of_the_model) as fake:
            args = mcp_args(agentweb, tmp_path)
            process = run_claude(project, agentweb, token, fake, settings={}, args=args)
            heard(fake, "awaiting approval (call")
            call = ToolCall.objects.get(status="awaiting_approval")
            assert call.tool == "mcp.notes.note_write" and not (folder / "n.txt").exists()
            services.tool_call_decide(call=call, user=rita, scope="session", decision="approve")
            finished(process)
        results = fake.conversation()
        assert results[-1] == "wrote n.txt", results
        assert (folder / "n.txt").read_text() == "from claude"
        received = [json.loads(line) for line in (folder / "calls.jsonl").read_text().splitlines()]
        assert received == [
            {"tool": "note_write", "args": {"name": "n.txt", "text": "from claude"}}
        ]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(readable, ignore_errors=True)


def test_a_denial_reaches_the_model_with_ritas_reason_and_nothing_is_written(
    agentweb: str, alice: User, rita: User, workspace: Path, tmp_path: Path
) -> None:
    token = services.api_token_create(user=alice, scope="agent")
    results, call = write_env_through_mcp(
        agentweb, token, rita, workspace, tmp_path, {}, "deny", "keys live in the vault"
    )
    assert results[-1].startswith(f"denied by rita (call {call.pk}): "), results
    assert "keys live in the vault" in results[-1]
    call.refresh_from_db()
    assert call.status == "denied"
    assert (Path(call.session.workspace) / ".env").read_text() == "SECRET=shh\n"
