"""The session page follows live.js's one live client: one socket to /ws/sessions/<id>/
and one to /ws/approvals/ (the header's counter), however many scripts follow them; the
tab title written once by live.js; the timeline updated in place without a reload."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Page, expect

from tests.browser.server import Agent

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.timeout(120),
]


@pytest.fixture
def session(agent: Agent, workspace: Path) -> dict[str, Any]:
    return agent.start_session(workspace)


def test_the_session_page_opens_one_socket_per_stream_and_titles_once(
    log_in: Any, reviewer: User, agent: Agent, session: dict[str, Any]
) -> None:
    waiting = agent.call(session, "write_file", path=".env", content="KEY=1\n")
    assert waiting["status"] == "awaiting_approval", waiting
    # A fresh tab of the logged-in context: the login page's own socket is not counted.
    page: Page = log_in(reviewer).context.new_page()
    sockets: list[str] = []
    page.on("websocket", lambda socket: sockets.append(socket.url))
    page.goto(f"/sessions/{session['id']}/")
    page.evaluate("window.__marker = 1")
    expect(page.get_by_text("Live: updates appear as they happen.")).to_be_visible()
    title = f"Session {session['id']} · agentweb"
    expect(page).to_have_title(f"(1) {title}")
    read = agent.call(session, "read_file", path="README.md")
    assert read["status"] == "succeeded", read
    expect(page.locator(f"#call-{read['id']}")).to_contain_text("read_file")
    second = agent.call(session, "run_command", command="pip install requests")
    assert second["status"] == "awaiting_approval", second
    expect(page.locator(f"#call-{second['id']}")).to_contain_text("awaiting_approval")
    expect(page).to_have_title(f"(2) {title}")
    assert page.locator("#pending-count .count").text_content() == "2"
    assert page.evaluate("window.__marker === 1"), "the page reloaded"
    ours = [url for url in sockets if f"/ws/sessions/{session['id']}/" in url]
    approvals = [url for url in sockets if "/ws/approvals/" in url]
    assert len(ours) == 1 and len(approvals) == 1 and len(sockets) == 2, sockets
    assert ours[0].endswith(f"?last_seq={page.locator('#session-live').get_attribute('data-seq')}")
