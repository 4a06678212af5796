"""A reviewer decides tool calls in a real Chromium, live, against daphne and a worker."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Page, expect

from tests.browser import inbox
from tests.browser.server import Agent

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.timeout(120),
]

CI_FILE = ".github/workflows/ci.yml"
CI_CONTENT = "on: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n"
COMMAND = "pip install requests"


@pytest.fixture
def session(agent: Agent, workspace: Path) -> dict[str, Any]:
    return agent.start_session(workspace)


@pytest.fixture
def rita_page(log_in: Any, reviewer: User) -> Page:
    """Rita, logged in, on the inbox."""
    page: Page = log_in(reviewer)
    inbox.open_inbox(page)
    return page


def ask_to_write_ci(agent: Agent, session: dict[str, Any]) -> dict[str, Any]:
    waiting = agent.call(session, "write_file", path=CI_FILE, content=CI_CONTENT)
    assert waiting["status"] == "awaiting_approval", waiting
    return waiting


def test_a_call_appears_in_the_inbox_without_a_reload(
    rita_page: Page, agent: Agent, session: dict[str, Any]
) -> None:
    ask_to_write_ci(agent, session)
    expect(inbox.card(rita_page, CI_FILE)).to_be_visible()
    assert inbox.not_reloaded(rita_page), "the page reloaded to show the new card"


def test_approving_a_write_runs_it_and_the_card_goes_away(
    rita_page: Page, agent: Agent, session: dict[str, Any], screenshots: Path
) -> None:
    waiting = ask_to_write_ci(agent, session)
    card = inbox.card(rita_page, CI_FILE)
    expect(card).to_be_visible()
    card.screenshot(path=screenshots / "diff-card.png")
    inbox.approve(rita_page, CI_FILE)
    inbox.gone(rita_page, CI_FILE)
    done = agent.final(waiting["id"])
    assert done["status"] == "succeeded", done
    assert (Path(session["workspace"]) / CI_FILE).read_text() == CI_CONTENT


def test_denying_a_command_with_a_reason_tells_the_agent_why(
    rita_page: Page, agent: Agent, session: dict[str, Any], screenshots: Path
) -> None:
    waiting = agent.call(session, "run_command", command=COMMAND)
    assert waiting["status"] == "awaiting_approval", waiting
    card = inbox.card(rita_page, COMMAND)
    expect(card).to_be_visible()
    card.screenshot(path=screenshots / "command-card.png")
    inbox.deny(rita_page, COMMAND, "use the lock file instead")
    inbox.gone(rita_page, COMMAND)
    done = agent.final(waiting["id"])
    assert done["status"] == "denied"
    assert "use the lock file instead" in done["result"]


def test_edit_and_approve_writes_the_edited_content(
    rita_page: Page, agent: Agent, session: dict[str, Any]
) -> None:
    waiting = ask_to_write_ci(agent, session)
    expect(inbox.card(rita_page, CI_FILE)).to_be_visible()
    inbox.edit_and_approve(rita_page, CI_FILE, lambda text: text.replace("ubuntu", "debian"))
    inbox.gone(rita_page, CI_FILE)
    done = agent.final(waiting["id"])
    assert done["status"] == "succeeded", done
    written = (Path(session["workspace"]) / CI_FILE).read_bytes()  # LF, not the form's CRLF
    assert written == CI_CONTENT.replace("ubuntu", "debian").encode()


def test_another_reviewer_sees_the_card_go_away_when_the_first_decides(
    rita_page: Page, log_in: Any, second_reviewer: User, agent: Agent, session: dict[str, Any]
) -> None:
    rex_page: Page = log_in(second_reviewer)
    inbox.open_inbox(rex_page)
    waiting = ask_to_write_ci(agent, session)
    expect(inbox.card(rex_page, CI_FILE)).to_be_visible()
    expect(inbox.card(rita_page, CI_FILE)).to_be_visible()
    inbox.approve(rita_page, CI_FILE)
    inbox.gone(rex_page, CI_FILE)
    assert agent.final(waiting["id"])["status"] == "succeeded"


def test_an_outsider_sees_no_card(
    log_in: Any, outsider: User, agent: Agent, session: dict[str, Any]
) -> None:
    ask_to_write_ci(agent, session)
    page: Page = log_in(outsider)
    inbox.open_inbox(page)
    expect(page.get_by_role("heading", name="Approvals")).to_be_visible()
    expect(page.get_by_text(CI_FILE)).to_have_count(0)
    expect(page.get_by_role("button", name="Approve", exact=True)).to_have_count(0)


def test_the_inbox_follows_one_socket_and_counts_once_in_the_title(
    log_in: Any, reviewer: User, agent: Agent, session: dict[str, Any]
) -> None:
    """The header's counter and the inbox share live.js's one socket to /ws/approvals/,
    and only live.js writes the tab title: "(1) Approvals", never "(1) (1) Approvals",
    and "(2) …" once when a second call arrives while the page is open."""
    ask_to_write_ci(agent, session)
    # A fresh tab of the logged-in context: the login page's own socket is not counted.
    page: Page = log_in(reviewer).context.new_page()
    sockets: list[str] = []
    page.on("websocket", lambda socket: sockets.append(socket.url))
    page.goto("/approvals/")
    expect(page.get_by_text("Live: new calls appear here")).to_be_visible()
    expect(inbox.card(page, CI_FILE)).to_be_visible()
    expect(page).to_have_title("(1) Approvals · agentweb")
    waiting = agent.call(session, "run_command", command=COMMAND)
    assert waiting["status"] == "awaiting_approval", waiting
    expect(inbox.card(page, COMMAND)).to_be_visible()
    expect(page).to_have_title("(2) Approvals · agentweb")
    assert page.locator("#pending-count .count").text_content() == "2"
    approvals = [url for url in sockets if "/ws/approvals/" in url]
    assert len(approvals) == 1, sockets


def test_keys_j_then_a_approve_the_first_card(
    rita_page: Page, agent: Agent, session: dict[str, Any]
) -> None:
    """Keyboard navigation still works on the live inbox: j focuses the first card, a
    approves it, and the write happens."""
    waiting = ask_to_write_ci(agent, session)
    expect(inbox.card(rita_page, CI_FILE)).to_be_visible()
    rita_page.locator("body").click(position={"x": 5, "y": 5})
    rita_page.keyboard.press("j")
    rita_page.keyboard.press("a")
    inbox.gone(rita_page, CI_FILE)
    assert agent.final(waiting["id"])["status"] == "succeeded"
    assert (Path(session["workspace"]) / CI_FILE).read_text() == CI_CONTENT
