"""An inbox with more calls than one page, in a real Chromium: keyboard navigation goes on
into the next page, older pages arrive as the reviewer reaches the end, live changes on
loaded and unloaded pages keep the count (heading and tab title) exact."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from playwright.sync_api import Page, Route, expect

from tests.browser import inbox
from tests.browser.server import Agent
from tools_app import services
from tools_app.models import ToolCall
from tools_app.selectors.inbox import PAGE_SIZE

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.timeout(150),
]


@pytest.fixture
def session(agent: Agent, workspace: Path) -> dict[str, Any]:
    return agent.start_session(workspace)


def hold(session: dict[str, Any], count: int) -> list[int]:
    """`count` writes awaiting a decision (made by hand: no worker needed), newest first."""
    expires = timezone.now() + timedelta(hours=1)
    for n in range(count):
        ToolCall.objects.create(
            session_id=session["id"], tool="write_file",
            args={"path": f"notes/page-{n}.txt", "content": f"note {n}\n"},
            status=ToolCall.Status.AWAITING_APPROVAL, verdict="require_approval",
            reason="a person decides", rule="test", expires_at=expires,
        )  # fmt: skip
    return list(ToolCall.objects.order_by("-id").values_list("id", flat=True))


def loaded(page: Page) -> list[int]:
    return [
        int(i)
        for i in page.eval_on_selector_all("#cards > .card", "c => c.map(x => x.dataset.call)")
    ]


def until(condition: Callable[[], bool], what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def expect_count(page: Page, count: int) -> None:
    expect(page.locator("#inbox-count")).to_have_text(f"({count})")
    expect(page).to_have_title(f"({count}) Approvals · agentweb")


def test_j_goes_on_into_the_next_page_and_d_denies_there(
    log_in: Any, reviewer: User, session: dict[str, Any]
) -> None:
    ids = hold(session, PAGE_SIZE + 3)
    page: Page = log_in(reviewer)
    inbox.open_inbox(page)
    expect_count(page, PAGE_SIZE + 3)
    assert loaded(page)[:PAGE_SIZE] == ids[:PAGE_SIZE]
    page.locator("body").click(position={"x": 5, "y": 5})
    for _ in range(PAGE_SIZE):
        page.keyboard.press("j")
    expect(page.locator(f"#call-{ids[PAGE_SIZE - 1]}")).to_be_focused()
    page.keyboard.press("j")  # past the first page: its next card, fetched if need be
    first_of_next = page.locator(f"#call-{ids[PAGE_SIZE]}")
    expect(first_of_next).to_be_focused()
    assert loaded(page) == ids, "a card is missing, repeated or out of order"
    page.keyboard.press("d")
    page.keyboard.type("not on page two")
    page.keyboard.press("Enter")
    expect(first_of_next).to_contain_text("Decided by rita: denied (not on page two)")
    assert ToolCall.objects.get(pk=ids[PAGE_SIZE]).status == "denied"
    expect_count(page, PAGE_SIZE + 2)
    page.keyboard.press("k")
    expect(page.locator(f"#call-{ids[PAGE_SIZE - 1]}")).to_be_focused()
    assert inbox.not_reloaded(page)


def test_the_keys_move_on_while_a_decision_is_sent_and_its_answer_leaves_the_focus_be(
    log_in: Any, reviewer: User, session: dict[str, Any]
) -> None:
    """The reviewer denies with d, Enter and at once presses k: the keyboard is back on the
    list before the server answers, and the answer does not pull the focus back."""
    ids = hold(session, 3)
    page: Page = log_in(reviewer)
    inbox.open_inbox(page)
    held: list[Route] = []
    page.route("**/tool-calls/*/decide", lambda route: held.append(route))  # held for the test
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("j")
    page.keyboard.press("j")
    middle = page.locator(f"#call-{ids[1]}")
    expect(middle).to_be_focused()
    page.keyboard.press("d")
    page.keyboard.type("later")
    page.keyboard.press("Enter")
    # Each evaluate lets Playwright hand the test the request it holds.
    until(lambda: page.evaluate("1") == 1 and bool(held), "the decision was not sent")
    page.keyboard.press("k")
    first = page.locator(f"#call-{ids[0]}")
    expect(first).to_be_focused()
    held[0].continue_()
    expect(middle).to_contain_text("Decided by rita: denied (later)")
    expect(first).to_be_focused()
    assert ToolCall.objects.get(pk=ids[1]).status == "denied"


def test_live_changes_on_loaded_and_unloaded_pages_keep_the_count_exact(
    log_in: Any, reviewer: User, second_reviewer: User, agent: Agent, session: dict[str, Any]
) -> None:
    ids = hold(session, PAGE_SIZE + 2)
    page: Page = log_in(reviewer)
    inbox.open_inbox(page)
    expect(page.get_by_text("Live: new calls appear here")).to_be_visible()
    expect_count(page, PAGE_SIZE + 2)
    assert loaded(page) == ids[:PAGE_SIZE]
    # A new call arrives on top; one on the unloaded page and one on the loaded page
    # are decided elsewhere.
    new = agent.call(session, "write_file", path=".github/CODEOWNERS", content="* @rita\n")
    assert new["status"] == "awaiting_approval", new
    expect(inbox.card(page, ".github/CODEOWNERS")).to_be_visible()
    expect_count(page, PAGE_SIZE + 3)
    for gone in (ids[-1], ids[3]):
        services.tool_call_decide(
            call=ToolCall.objects.get(pk=gone), user=second_reviewer, scope="session",
            decision="deny", reason="elsewhere",
        )  # fmt: skip
    expect_count(page, PAGE_SIZE + 1)
    expect(page.locator(f"#call-{ids[3]}")).to_contain_text("Decided by rex: denied")
    assert page.locator(f"#call-{ids[-1]}").count() == 0, "an unloaded card was placed"
    # The end of the list: the older page arrives by itself, without the decided call.
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    until(lambda: len(loaded(page)) == PAGE_SIZE + 2, "the older page never arrived")
    assert loaded(page) == [new["id"], *ids[:-1]]
    expect(page.get_by_role("link", name="Load more")).to_have_count(0)
    assert inbox.not_reloaded(page)
