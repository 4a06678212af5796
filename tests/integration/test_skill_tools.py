"""Skill tools end to end: a scripted agent whose task activates a skill calls its tool,
the policy sends it to Rita, and the approved definition runs (tasks in this process:
`eager`) — a command in the sandbox, a request to a real server on 127.0.0.1, a rendered
prompt."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.integration.agent_helpers import (
    done,
    results,
    script,
    start_agent,
    tool,
    wait_for,
    wait_status,
)
from tests.integration.helpers import Api
from tools_app.management.commands.demo import make_repository
from tools_app.models import AgentSession, Policy, PolicyRule, Skill, SkillTool, ToolCall
from tools_app.services import skills as skill_services
from tools_app.services.skill_calls import secret_value

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.eager,
]

# The secret a skill may use is read from the environment by name.
TOKEN_SETTING = "AGENTWEB_TEST_SKILL_TOKEN"
os.environ[TOKEN_SETTING] = "Bearer s3cret-token"


@pytest.fixture(autouse=True)
def skill_secrets(settings: Any) -> None:
    """The workers offer this one secret to skills (AGENTWEB_SKILL_SECRETS)."""
    settings.AGENTWEB_SKILL_SECRETS = [TOKEN_SETTING]


NASTY = "x\"; touch pwned1; $(touch pwned2) `touch pwned3` && rm -rf . ; echo '$HOME' #"
STAMP = {
    "name": "stamper",
    "triggers": ["stamp"],
    "instructions": "Stamp files with the stamp tool.",
    "tools": [
        {
            "name": "stamp",
            "description": "Record a note.",
            "inputSchema": {
                "type": "object",
                "properties": {"note": {"type": "string"}},
                "required": ["note"],
            },
            "executor": {
                "kind": "command",
                "command": (
                    'cat > stdin.json; printf %s "$AGENTWEB_ARG_NOTE" > note.txt; echo stamped'
                ),
            },
        }
    ],
}


def waiting_call(session_id: int) -> ToolCall:
    wait_status(session_id, "waiting")
    return ToolCall.objects.get(session_id=session_id, status="awaiting_approval")


def approve(rita: Api, call: ToolCall) -> None:
    answer = rita.post(f"/tool-calls/{call.pk}/decision", {"decision": "approve"})
    assert answer.status_code == 200, answer.content


def test_a_command_tool_runs_sandboxed_with_arguments_never_in_the_shell_text(
    alice: Api, rita: Api, workspace: Path, tmp_path: Path
) -> None:
    skill_services.skill_import(data=STAMP)
    model = script(tmp_path, [tool("stamp", note=NASTY), done("Stamped.")])
    session_id = start_agent(alice, workspace, model, task="Stamp the README, please.")
    session = AgentSession.objects.get(pk=session_id)
    assert session.active_skills == [{"skill": "stamper", "words": ["stamp"]}]
    assert "Stamp files with the stamp tool." in wait_status(session_id, "waiting").system_prompt
    call = waiting_call(session_id)
    assert (call.tool, call.reason.split(":")[0]) == ("stamper.stamp", "skill tool")
    assert call.preview["command"] == STAMP["tools"][0]["executor"]["command"]
    assert json.loads(call.preview["stdin"]) == {"note": NASTY}
    approve(rita, call)
    session = wait_status(session_id)
    assert session.status == "done", session.summary
    call.refresh_from_db()
    assert call.status == "succeeded" and call.result.startswith("exit code: 0\nstamped")
    root = Path(session.workspace)
    assert (root / "note.txt").read_text() == NASTY
    assert json.loads((root / "stdin.json").read_text()) == {"note": NASTY}
    assert not any(root.glob("pwned*")) and (root / "README.md").exists()
    assert results(session_id)[0]["is_error"] is False


def test_what_was_approved_runs_even_if_the_skill_is_edited_meanwhile_and_disabling_stops_it(
    alice: Api, rita: Api, tmp_path: Path
) -> None:
    repo = make_repository(tmp_path / "calc")
    model = script(tmp_path, [tool("check_syntax"), tool("check_syntax"), done("Linted.")])
    session_id = start_agent(alice, repo, model, task="Run the linter on calc.")
    first = waiting_call(session_id)
    assert first.tool == "lint.check_syntax" and first.preview["executor"] == "command"
    SkillTool.objects.filter(name="check_syntax").update(
        executor={"kind": "command", "command": "touch edited; echo EDITED"}
    )
    approve(rita, first)
    second = wait_for_second_call(session_id)
    first.refresh_from_db()
    assert first.status == "succeeded", first.result
    assert "checked 4 file(s): 0 with syntax errors" in first.result  # the demo repository
    assert second.preview["command"] == "touch edited; echo EDITED"  # judged as it is now
    Skill.objects.filter(name="lint").update(enabled=False)
    approve(rita, second)
    session = wait_status(session_id)
    second.refresh_from_db()
    assert (second.status, second.result) == (
        "failed",
        "Not run: lint.check_syntax was disabled after this call was judged.",
    )
    assert session.status == "done" and not Path(session.workspace, "edited").exists()


def wait_for_second_call(session_id: int) -> ToolCall:
    return wait_for(
        lambda: (
            ToolCall.objects.filter(session_id=session_id, status="awaiting_approval")
            .order_by("-pk")
            .exclude(agent_key="1:0")
            .first()
        ),
        what="the second call",
    )


def test_the_release_prompt_tool_renders_its_template(
    alice: Api, rita: Api, tmp_path: Path
) -> None:
    repo = make_repository(tmp_path / "calc")
    entry = tool("changelog_entry", summary="parse() accepts an empty string", kind="Fixed")
    model = script(tmp_path, [entry, done("Entry written.")])
    session_id = start_agent(alice, repo, model, task="Prepare the release notes.")
    call = waiting_call(session_id)
    assert call.tool == "release.changelog_entry" and "### Fixed" in call.preview["text"]
    approve(rita, call)
    wait_status(session_id)
    text = results(session_id)[0]["content"]
    assert "- parse() accepts an empty string" in text and "### Fixed" in text


class Hook(BaseHTTPRequestHandler):
    received: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Hook.received.append({"headers": dict(self.headers), "body": json.loads(body)})
        answer = b'{"ok": true}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def hook_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    Hook.received.clear()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook"
    server.shutdown()


def test_an_http_tool_posts_json_with_a_secret_header_and_refuses_other_hosts(
    alice: Api, workspace: Path, tmp_path: Path, hook_server: str
) -> None:
    policy = Policy.objects.create(name="hooks", web_allow_hosts=["127.0.0.1"])
    PolicyRule.objects.create(policy=policy, tool="notify.ping", decision="allow")
    headers = {"Authorization": {"env": TOKEN_SETTING}}
    skill_services.skill_import(
        data={
            "name": "notify",
            "triggers": ["notify"],
            "tools": [
                {
                    "name": "ping",
                    "executor": {"kind": "http", "url": hook_server, "headers": headers},
                },
                {"name": "ping_lan", "executor": {"kind": "http", "url": "http://10.255.0.1/x"}},
            ],
        }
    )
    steps = [tool("ping", message="deployed; $(reboot)"), tool("ping_lan", a=1), done("Told.")]
    answer = alice.post(
        "/sessions",
        {
            "task": "notify the team",
            "repo": str(workspace),
            "model": script(tmp_path, steps),
            "policy": "hooks",
        },
    )
    session = wait_status(answer.json()["id"])
    assert session.status == "done", session.summary
    assert Hook.received == [
        {
            "headers": Hook.received[0]["headers"],
            "body": {"message": "deployed; $(reboot)"},
        }
    ]
    assert Hook.received[0]["headers"]["Authorization"] == "Bearer s3cret-token"
    assert Hook.received[0]["headers"]["Content-Type"] == "application/json"
    ping, lan = ToolCall.objects.filter(session=session).order_by("pk")[:2]
    assert (ping.status, ping.rule) == ("succeeded", "rule " + str(policy.rules.get().pk))
    assert '"ok": true' in ping.result
    stored = json.dumps([ping.args, ping.preview, ping.result, lan.preview])
    assert "s3cret" not in stored and ping.preview["headers"] == {
        "Authorization": f"from {TOKEN_SETTING}"
    }
    assert lan.status == "denied" and "does not allow-list" in lan.reason


def test_a_skill_reaches_only_the_secrets_listed_for_skills(settings: Any) -> None:
    """Not SECRET_KEY, not a provider key: only names in AGENTWEB_SKILL_SECRETS."""
    settings.AGENTWEB_SKILL_SECRETS = [TOKEN_SETTING]
    assert secret_value(TOKEN_SETTING) == "Bearer s3cret-token"
    assert secret_value("SECRET_KEY") is None
    os.environ["AGENTWEB_TEST_UNLISTED"] = "hidden"
    try:
        assert secret_value("AGENTWEB_TEST_UNLISTED") is None
    finally:
        del os.environ["AGENTWEB_TEST_UNLISTED"]


class Recorder(BaseHTTPRequestHandler):
    """Answers 307 to `redirect_to` when set, else 200; records every request."""

    redirect_to = ""
    received: list[dict[str, Any]]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.received.append({"path": self.path, "headers": dict(self.headers), "body": body})
        if self.redirect_to:
            self.send_response(307)
            self.send_header("Location", self.redirect_to)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        answer = b'{"stored": true}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args: Any) -> None:
        pass


def recorder(redirect_to: str = "") -> tuple[ThreadingHTTPServer, list[dict[str, Any]]]:
    received: list[dict[str, Any]] = []
    handler = type("Handler", (Recorder,), {"redirect_to": redirect_to, "received": received})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, received


def run_ping(alice: Api, workspace: Path, tmp_path: Path, url: str) -> ToolCall:
    """An allowed http skill tool with a secret header, called once by a scripted agent."""
    policy, _ = Policy.objects.get_or_create(
        name="hooks", defaults={"web_allow_hosts": ["127.0.0.1", "localhost"]}
    )
    PolicyRule.objects.get_or_create(policy=policy, tool="relay.ping", decision="allow")
    headers = {"X-Api-Key": {"env": TOKEN_SETTING}}
    executor = {"kind": "http", "url": url, "headers": headers}
    skill_services.skill_import(
        data={
            "name": "relay",
            "triggers": ["relay"],
            "tools": [{"name": "ping", "executor": executor}],
        }
    )
    model = script(tmp_path, [tool("ping", secret_plan="launch at dawn"), done("Sent.")])
    answer = alice.post(
        "/sessions",
        {"task": "relay the plan", "repo": str(workspace), "model": model, "policy": "hooks"},
    )
    session = wait_status(answer.json()["id"])
    assert session.status == "done", session.summary
    return ToolCall.objects.get(session=session, tool="relay.ping")


def test_a_redirect_to_a_host_the_skill_does_not_name_gets_neither_its_headers_nor_its_body(
    alice: Api, workspace: Path, tmp_path: Path
) -> None:
    """127.0.0.1 answers 307 to localhost (a host the policy allows for web_fetch): the
    skill named only 127.0.0.1, so localhost never hears from it, and the agent reads why."""
    other, other_received = recorder()
    other_url = f"http://localhost:{other.server_address[1]}/collect"
    first, first_received = recorder(redirect_to=other_url)
    try:
        call = run_ping(alice, workspace, tmp_path, f"http://127.0.0.1:{first.server_address[1]}/")
    finally:
        first.shutdown()
        other.shutdown()
    assert len(first_received) == 1
    assert first_received[0]["headers"]["X-Api-Key"] == "Bearer s3cret-token"
    assert other_received == []
    assert call.status == "failed"
    assert f"redirected to {other_url}, on the host localhost" in call.result
    assert "it names only 127.0.0.1" in call.result
    agent_read = results(call.session_id)[0]
    assert agent_read["is_error"] is True and "on the host localhost" in agent_read["content"]
    assert "s3cret" not in call.result


def test_a_redirect_on_the_skills_own_host_is_followed(
    alice: Api, workspace: Path, tmp_path: Path
) -> None:
    final, final_received = recorder()
    final_url = f"http://127.0.0.1:{final.server_address[1]}/stored"
    first, _ = recorder(redirect_to=final_url)
    try:
        call = run_ping(alice, workspace, tmp_path, f"http://127.0.0.1:{first.server_address[1]}/")
    finally:
        first.shutdown()
        final.shutdown()
    assert call.status == "succeeded", call.result
    assert '"stored": true' in call.result and f"URL: {final_url}" in call.result
    assert [json.loads(r["body"]) for r in final_received] == [{"secret_plan": "launch at dawn"}]
