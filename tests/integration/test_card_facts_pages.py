"""A card says what is true of where its call runs: agentweb's sandbox for a call of its
own agent, of the REST API or of its tools over MCP (test_mcp_in_process.py); the agent's
machine for a gateway call (test_gateway_pages.py). Rendered as the inbox renders it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tools_app import services
from tools_app.models import AgentSession, Policy, ToolCall

HOST_SANDBOX = "agentweb&#x27;s copy-on-write sandbox: what the command changes is judged"
NO_SANDBOX = "none: this host has no copy-on-write sandbox"


def card(reviewer: User, call: ToolCall) -> str:
    browser = Client()
    browser.force_login(reviewer)
    answer = browser.get(f"/approvals/cards/{call.pk}/")
    assert answer.status_code == 200
    return answer.content.decode()


def facts(page: str) -> dict[str, str]:
    """The card's facts: label → text, tags stripped."""
    found = re.findall(r'<dt>([^<]+)</dt><dd class="[a-z]+">(.*?)</dd>', page)
    return {label: re.sub(r"<[^>]+>", "", text) for label, text in found}


def assert_agentweb_sandbox_facts(call: ToolCall, page: str) -> None:
    """The host's sandbox as the preview found it, the hosts a person's approval opens,
    agentweb's default timeout; nothing of an agent's machine."""
    sandboxed = (call.preview or {})["sandboxed"]
    shown = facts(page)
    assert (HOST_SANDBOX if sandboxed else NO_SANDBOX) in page
    assert shown["Timeout"] == "120 s"  # the agent sent none: agentweb's default applies
    if sandboxed:
        assert shown["Network"].startswith("off now; approving opens only ")
    assert "Where" not in shown and "Agent&#x27;s sandbox" not in shown


@pytest.mark.django_db
def test_an_agentweb_command_card_says_the_hosts_sandbox_network_and_timeout(
    workspace: Path, creator: User, reviewer: User
) -> None:
    session = AgentSession.objects.create(
        task="add a dependency", repo=str(workspace), workspace=str(workspace),
        status=AgentSession.Status.RUNNING, policy=Policy.objects.get(name="default"),
        creator=creator,
    )  # fmt: skip
    call = services.tool_call_run_in_process(
        session=session, tool="run_command", args={"command": "npm install lodash"}
    )
    assert call.status == "awaiting_approval"
    page = card(reviewer, call)
    assert "$ npm install lodash" in page
    assert_agentweb_sandbox_facts(call, page)
