"""Rita remembers a Claude Code `npm install lodash` in a real Chromium: the form holds
the command as the agent sent it, and widening it lists the policy's recent calls the
rule would also allow before she saves."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.contrib.auth.models import Permission, User
from playwright.sync_api import Page, expect

from tests.browser import inbox
from tests.browser.server import Agent
from tools_app import services
from tools_app.models import PolicyRule

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.timeout(120),
]


def claude_code_asks(url: str, token: str, command: str, answers: list[Any]) -> threading.Thread:
    """Alice's Claude Code's PreToolUse hook for a Bash command, waiting for its answer."""
    body = {
        "session_id": "cc-remember", "cwd": "/home/alice/project",
        "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "toolu_1",
        "tool_input": {"command": command, "description": "add lodash"},
        "permission_mode": "default",
    }  # fmt: skip
    headers = {"Authorization": f"Bearer {token}"}

    def ask() -> None:
        answer = httpx.post(f"{url}/api/hooks/claude-code", json=body, headers=headers, timeout=90)
        answers.append(answer.json())

    thread = threading.Thread(target=ask, daemon=True)
    thread.start()
    return thread


def test_rita_widens_a_remembered_npm_install_after_seeing_what_it_would_also_allow(
    live_server_url: str, log_in: Any, reviewer: User, agent: Agent, workspace: Path
) -> None:
    session = agent.start_session(workspace)
    earlier = agent.call(session, "run_command", command="npm install left-pad")
    assert earlier["status"] == "awaiting_approval", earlier
    alice = User.objects.create_user("alice-cc")
    token = services.api_token_create(user=alice, scope="agent")
    answers: list[Any] = []
    hook = claude_code_asks(live_server_url, token, "npm install lodash", answers)
    reviewer.user_permissions.add(Permission.objects.get(codename="change_policy"))
    page: Page = log_in(reviewer)
    inbox.open_inbox(page)

    card = inbox.card(page, "npm install lodash")
    expect(card).to_be_visible(timeout=20_000)
    card.get_by_text("Remember…").click()
    pattern = card.locator("input[name='pattern.command']")
    expect(pattern).to_have_value("npm install lodash")
    expect(card.locator("input[name='pattern.timeout']")).to_have_count(0)
    pattern.fill("npm install *")
    reach = card.locator(".remember-count")
    expect(reach).to_contain_text("This rule would also allow:", timeout=10_000)
    expect(reach.locator(".also-allowed li")).to_have_count(1)
    expect(reach.locator(".also-allowed")).to_contain_text("npm install left-pad")

    card.get_by_role("button", name="Approve & remember").click()
    hook.join(timeout=30)
    assert answers and answers[0]["hookSpecificOutput"]["permissionDecision"] == "allow"
    rule = PolicyRule.objects.get(remembered=True)
    assert (rule.tool, rule.args) == ("run_command", {"command": "npm install *"})
