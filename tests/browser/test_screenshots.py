"""Screenshots of what a reviewer sees, left in var/screenshots/ to be looked at: the
inbox with a diff, a command and a pull request waiting, the pull request card, and a
session page (once there is one)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Page, expect

from tests.browser import inbox
from tests.browser.server import Agent
from tests.helpers import git

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.timeout(120),
]

PR_TITLE = "Greet more briefly"


@pytest.fixture
def session(agent: Agent, workspace: Path, tmp_path: Path) -> dict[str, Any]:
    """A session on a bare clone of the workspace, so that a pull request has a remote."""
    origin = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(workspace), str(origin))
    return agent.start_session(origin)


def ask_for_a_pull_request(agent: Agent, session: dict[str, Any]) -> dict[str, Any]:
    steps = [
        ("git_branch", {"action": "create", "name": "brief-greeting"}),
        ("edit_file", {"path": "src/app.py", "old_string": "hello", "new_string": "hi"}),
        ("git_commit", {"message": PR_TITLE}),
    ]
    for tool, args in steps:
        done = agent.call(session, tool, **args)
        assert done["status"] == "succeeded", done
    body = "Why: shorter output.\nThe tests still pass."
    waiting = agent.call(session, "create_pull_request", title=PR_TITLE, body=body)
    assert waiting["status"] == "awaiting_approval", waiting
    return waiting


def test_the_inbox_with_a_diff_a_command_and_a_pull_request(
    log_in: Any, reviewer: User, agent: Agent, session: dict[str, Any], screenshots: Path
) -> None:
    ask_for_a_pull_request(agent, session)
    agent.call(session, "write_file", path=".github/CODEOWNERS", content="* @rita\n")
    agent.call(session, "run_command", command="pip install requests")
    page: Page = log_in(reviewer)
    inbox.open_inbox(page)
    for text in (PR_TITLE, ".github/CODEOWNERS", "pip install requests"):
        expect(inbox.card(page, text)).to_be_visible()
    inbox.card(page, PR_TITLE).screenshot(path=screenshots / "pull-request-card.png")
    page.screenshot(path=screenshots / "inbox.png", full_page=True)


def test_a_session_page(
    log_in: Any, reviewer: User, agent: Agent, session: dict[str, Any], screenshots: Path
) -> None:
    agent.call(session, "read_file", path="README.md")
    agent.call(session, "run_command", command="pip install requests")
    page: Page = log_in(reviewer)
    answer = page.goto(f"/sessions/{session['id']}/")
    if answer is None or answer.status == 404:
        pytest.skip("there is no session page (/sessions/<id>/) yet")
    assert answer.status == 200
    page.wait_for_load_state()
    page.screenshot(path=screenshots / "session.png", full_page=True)
