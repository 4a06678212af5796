"""A session without a model says how to drive it, and what it says works as written:
the curl lines on Alice's session page, run in a shell with her agent token, list the
session's tools and send a call that then appears on the page, live."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Page, expect

from tests.browser.server import PASSWORD, Agent
from tools_app import services

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.timeout(120),
]


def run_as_shown(command: str, token: str) -> Any:
    """The command as the page shows it, in bash, with the token where it says."""
    env = {"PATH": os.environ["PATH"], "AGENTWEB_TOKEN": token}
    done = subprocess.run(
        ["bash", "-c", command], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_curl_lines_on_a_model_less_session_page_work_as_written(
    log_in: Any, live_server_url: str, workspace: Path
) -> None:
    alice = User.objects.create_user("alice", password=PASSWORD)
    token = services.api_token_create(user=alice, scope="agent")
    agent = Agent(live_server_url, token)
    session = agent.start_session(workspace)
    agent.http.close()
    page: Page = log_in(alice)
    page.goto(f"/sessions/{session['id']}/")
    drive = page.locator("#drive")
    expect(drive).to_have_attribute("open", "")  # nothing sent yet: the help is open
    expect(drive.locator("#drive-session-id")).to_have_text(str(session["id"]))
    assert live_server_url in drive.locator("#drive-mcp").inner_text()
    arguments = json.loads(drive.locator("#drive-mcp-args").inner_text())
    assert arguments["session"] == session["id"]

    tools = run_as_shown(drive.locator("#drive-tools").inner_text(), token)
    assert "list_files" in {tool["name"] for tool in tools}
    call = run_as_shown(drive.locator("#drive-curl").inner_text(), token)
    assert (call["session"], call["tool"], call["status"]) == (
        session["id"], "list_files", "succeeded",
    )  # fmt: skip
    timeline = page.locator("#session-live .timeline")
    expect(timeline).to_contain_text(f"call {call['id']}")  # the page heard of it
