"""A gateway call in the browser: the card says where it runs, a reviewer edits what the
agent will run (its native input), and the session pages show the cwd and what ran."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tests.integration.conftest import PASSWORD
from tests.integration.gateway_helpers import CWD, Hook
from tools_app.models import ToolCall

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_hook_wait")]


@pytest.fixture
def browser(reviewer: User) -> Client:
    browser = Client(enforce_csrf_checks=True)
    assert browser.login(username="rita", password=PASSWORD)
    return browser


def csrf(browser: Client) -> str:
    match = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', browser.get("/").content)
    assert match
    return match.group(1).decode()


def test_the_card_says_the_call_runs_on_the_agents_machine(claude: Hook, browser: Client) -> None:
    claude.pre("Bash", {"command": "npm install", "description": "deps"})
    page = browser.get("/approvals/").content.decode()
    assert f"the agent&#x27;s machine, in {CWD}: the agent runs its own Bash" in page
    assert 'name="edit_value"' in page and ">npm install</textarea>" in page
    assert '<dd class="sandbox">none reported by the agent</dd>' in page


def test_a_claude_code_command_card_says_nothing_of_agentwebs_sandbox_or_timeout(
    claude: Hook, browser: Client
) -> None:
    """The command runs on the developer's machine with the timeout its agent chose:
    nothing about this host's sandbox, the worker's network or a default timeout."""
    claude.pre("Bash", {"command": "npm install lodash", "description": "deps"})
    page = browser.get("/approvals/").content.decode()
    assert "$ npm install lodash" in page
    assert "copy-on-write" not in page and "worker" not in page
    assert "<dt>Network</dt>" not in page and "<dt>Timeout</dt>" not in page
    claude.pre("Bash", {"command": "npm test", "timeout": 90000})
    page = browser.get("/approvals/").content.decode()
    assert '<dt>Timeout</dt><dd class="timeout">90 s (the agent&#x27;s own)</dd>' in page


def test_the_card_says_when_the_agent_turned_its_own_sandbox_off(
    claude: Hook, browser: Client
) -> None:
    claude.pre("Bash", {"command": "npm test", "dangerouslyDisableSandbox": True})
    page = browser.get("/approvals/").content.decode()
    off = "off for this call: the agent asked to run it outside its sandbox"
    assert f'<dd class="sandbox"><strong>{off}</strong></dd>' in page
    assert "the machine&#x27;s own: the agent&#x27;s sandbox is off for this call" in page


def test_edit_and_approve_in_the_inbox_edits_the_native_input(
    claude: Hook, browser: Client
) -> None:
    claude.pre("Bash", {"command": "npm install", "description": "deps"})
    call = ToolCall.objects.get()
    data = {"action": "edit", "edit_value": "npm ci", "csrfmiddlewaretoken": csrf(browser)}
    assert browser.post(f"/tool-calls/{call.pk}/decide", data).status_code in {200, 302}
    call.refresh_from_db()
    assert call.status == "approved"
    assert call.native_input == {"command": "npm ci", "description": "deps"}
    retry = claude.pre("Bash", {"command": "npm install", "description": "deps"})
    assert retry["updatedInput"] == {"command": "npm ci", "description": "deps"}


def test_an_edited_command_gets_no_carriage_returns_from_the_text_area(
    claude: Hook, browser: Client
) -> None:
    claude.pre("Bash", {"command": "npm install &&\nnpm test"})
    call = ToolCall.objects.get()
    typed = "npm ci &&\r\nnpm test"  # a text area's line break, as a browser sends it
    data = {"action": "edit", "edit_value": typed, "csrfmiddlewaretoken": csrf(browser)}
    browser.post(f"/tool-calls/{call.pk}/decide", data)
    call.refresh_from_db()
    assert (call.status, call.native_input) == ("approved", {"command": "npm ci &&\nnpm test"})


def test_the_session_pages_show_the_cwd_and_what_ran(claude: Hook, browser: Client) -> None:
    write = {"file_path": f"{CWD}/notes.md", "content": "hello\n"}
    assert claude.pre("Write", write)["permissionDecision"] == "allow"
    patch = [{"oldStart": 0, "oldLines": 0, "newStart": 1, "newLines": 1, "lines": ["+hullo"]}]
    claude.event(
        "PostToolUse", "Write", {**write, "content": "hullo\n"}, tool_use_id="toolu_1",
        tool_response={"type": "create", "filePath": write["file_path"], "structuredPatch": patch},
    )  # fmt: skip
    listing = browser.get("/sessions/").content.decode()
    assert CWD in listing and "agent gateway" in listing
    call = ToolCall.objects.get()
    page = browser.get(f"/sessions/{call.session_id}/").content.decode()
    assert "the input that ran differs from the one agentweb allowed" in page
    assert "hullo" in page
