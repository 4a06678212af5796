"""A badge tells the whole truth (issue 31, item 1): a command whose changes were refused
whole still `succeeded`, and its badge on the session page, live, says both."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Page, expect

from tests.browser.server import Agent
from tests.unit.helpers import requires_cow

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.timeout(120),
    requires_cow,
]


def test_the_badge_reads_succeeded_and_nothing_applied(
    log_in: Any, reviewer: User, agent: Agent, workspace: Path
) -> None:
    session = agent.start_session(workspace)
    page: Page = log_in(reviewer)
    page.goto(f"/sessions/{session['id']}/")
    expect(page.get_by_text("Live: updates appear as they happen.")).to_be_visible()
    ran = agent.call(session, "run_command", command="seq 1 600 > gen.txt")
    assert (ran["status"], ran["outcome"]) == ("succeeded", "refused"), ran
    badge = page.locator(f"#call-{ran['id']} .status")
    expect(badge).to_have_text("succeeded · nothing applied: 600 lines over the limit of 500")
    assert not (workspace / "gen.txt").exists()
