"""Rita's "Approve & remember" form starts from what the agent sent, as she would type
it, and before she saves a widened rule it lists the policy's recent calls the rule
would also allow."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tests.integration.gateway_helpers import Hook
from tools_app import services
from tools_app.models import AgentSession, Policy, PolicyRule, ToolCall

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_hook_wait")]


@pytest.fixture
def rita(reviewer: User) -> Client:
    browser = Client()
    browser.force_login(reviewer)
    return browser


def card(rita: Client, call: ToolCall) -> str:
    return rita.get(f"/approvals/cards/{call.pk}/").content.decode()


def test_a_claude_code_command_is_remembered_as_the_agent_sent_it(
    claude: Hook, rita: Client
) -> None:
    claude.pre("Bash", {"command": "npm install lodash", "description": "deps"})
    call = ToolCall.objects.get()
    shown = card(rita, call)
    assert 'name="pattern.command" value="npm install lodash"' in shown
    assert "pattern.timeout" not in shown and "pattern.description" not in shown
    assert "re:" not in shown.split('remember-form"')[1].split("</form>")[0]


def test_an_agentweb_command_is_remembered_without_the_timeout_it_never_sent(
    workspace: Path, creator: User, reviewer: User, rita: Client
) -> None:
    session = AgentSession.objects.create(
        task="deps", repo=str(workspace), workspace=str(workspace),
        status=AgentSession.Status.RUNNING, policy=Policy.objects.get(name="default"),
        creator=creator,
    )  # fmt: skip
    call = services.tool_call_run_in_process(
        session=session, tool="run_command", args={"command": "npm install lodash"}
    )
    assert call.args == {"command": "npm install lodash", "timeout": 120.0}  # the default
    shown = card(rita, call)
    assert 'name="pattern.command" value="npm install lodash"' in shown
    assert "pattern.timeout" not in shown
    data = {"action": "remember", "pattern.command": "npm install lodash"}
    assert rita.post(f"/tool-calls/{call.pk}/decide", data).status_code == 302
    rule = PolicyRule.objects.get()
    assert rule.args == {"command": "npm install lodash"} and not rule.reviewer_bounded


def test_widening_lists_the_recent_calls_the_rule_would_also_allow(
    claude: Hook, rita: Client
) -> None:
    for command in ("npm install left-pad", "npm test", "npm install lodash"):
        claude.pre("Bash", {"command": command})
    call = ToolCall.objects.get(args__command="npm install lodash")
    url = f"/approvals/cards/{call.pk}/remember-count"
    exact = rita.get(url, {"pattern.command": "npm install lodash"}).json()
    assert "would also allow:" not in exact["preview"]
    assert "would have matched 0 of the last 2 calls" in exact["preview"]
    wide = rita.get(url, {"pattern.command": "npm install *"}).json()
    assert wide["count"] == 1
    assert "This rule would also allow:" in wide["preview"]
    assert "<code>npm install left-pad</code>" in wide["preview"]
    assert "npm test" not in wide["preview"]
