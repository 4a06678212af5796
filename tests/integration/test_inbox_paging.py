"""The inbox a page at a time: the newest cards first, the rest by `?before=` (a link
without JavaScript, the fragment endpoint with it), the count of every waiting call in
the heading and the tab title, and a clear 400 for a page that cannot be."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.utils import timezone

from tools_app import services
from tools_app.models import AgentSession, Policy, ToolCall
from tools_app.selectors.inbox import PAGE_SIZE

pytestmark = pytest.mark.django_db
WAITING = 2 * PAGE_SIZE + 5
CARD = re.compile(r'<article class="card[^"]*" id="call-(\d+)"')
NEXT = re.compile(r'id="cards-more" class="cards-more" data-next="(\d*)"')


def browser_for(user: User) -> Client:
    browser = Client()
    browser.force_login(user)
    return browser


@pytest.fixture
def session(workspace: Path, creator: User) -> AgentSession:
    return AgentSession.objects.create(
        task="tidy the repo", repo=str(workspace), workspace=str(workspace),
        status=AgentSession.Status.WAITING, policy=Policy.objects.get(name="default"),
        creator=creator,
    )  # fmt: skip


@pytest.fixture
def waiting(session: AgentSession) -> list[int]:
    """WAITING calls awaiting a decision, oldest first."""
    expires = timezone.now() + timedelta(hours=1)
    calls = [
        ToolCall(
            session=session,
            tool="write_file",
            args={"path": f"f{n}.txt", "content": "x\n"},
            status=ToolCall.Status.AWAITING_APPROVAL,
            decision="require_approval",
            reason="a person decides",
            rule="test",
            expires_at=expires,
        )
        for n in range(WAITING)
    ]
    ToolCall.objects.bulk_create(calls)
    return list(ToolCall.objects.order_by("id").values_list("id", flat=True))


def card_ids(html: str) -> list[int]:
    return [int(found) for found in CARD.findall(html)]


def next_before(html: str) -> str:
    found = NEXT.search(html)
    assert found, "no #cards-more on the page"
    return found.group(1)


def test_the_first_page_shows_the_newest_cards_and_counts_every_waiting_call(
    reviewer: User, waiting: list[int]
) -> None:
    page = browser_for(reviewer).get("/approvals/").content.decode()
    newest = sorted(waiting, reverse=True)[:PAGE_SIZE]
    assert card_ids(page) == newest
    assert f"<title>({WAITING}) Approvals · agentweb</title>" in page
    assert f'id="inbox-count" aria-live="polite">({WAITING})</span>' in page
    assert f'data-total="{WAITING}"' in page
    assert next_before(page) == str(newest[-1])
    assert f'href="/approvals/?before={newest[-1]}" rel="next">Load more</a>' in page


def test_following_the_pages_shows_every_card_once_newest_first(
    reviewer: User, waiting: list[int]
) -> None:
    browser, seen, before, pages = browser_for(reviewer), [], "", 0
    while True:
        query = f"?before={before}" if before else ""
        answer = browser.get(f"/approvals/cards/{query}")
        assert answer.status_code == 200
        fragment = answer.content.decode()
        seen += card_ids(fragment)
        pages += 1
        before = next_before(fragment)
        if not before:
            break
    assert seen == sorted(waiting, reverse=True)
    assert pages == 3
    assert "No older calls are waiting." in fragment


def test_the_page_without_javascript_follows_the_same_pages(
    reviewer: User, waiting: list[int]
) -> None:
    browser = browser_for(reviewer)
    first = browser.get("/approvals/").content.decode()
    second = browser.get(f"/approvals/?before={next_before(first)}").content.decode()
    assert card_ids(second) == sorted(waiting, reverse=True)[PAGE_SIZE : 2 * PAGE_SIZE]
    assert "Back to the newest calls" in second
    assert f"<title>({WAITING}) Approvals" in second


def test_a_decision_between_two_pages_neither_repeats_nor_skips_a_card(
    reviewer: User, superuser: User, waiting: list[int]
) -> None:
    browser = browser_for(reviewer)
    first = browser.get("/approvals/cards/").content.decode()
    decided = ToolCall.objects.get(pk=card_ids(first)[3])
    services.tool_call_decide(call=decided, user=superuser, scope="session", decision="deny")
    services.tool_call_decide(
        call=ToolCall.objects.get(pk=waiting[-1 - PAGE_SIZE]), user=superuser,
        scope="session", decision="deny",
    )  # fmt: skip
    second = browser.get(f"/approvals/cards/?before={next_before(first)}").content.decode()
    expected = sorted(waiting, reverse=True)[PAGE_SIZE + 1 : 2 * PAGE_SIZE + 1]
    assert card_ids(second) == expected
    assert f'data-total="{WAITING - 2}"' in second


def test_limit_sets_the_page_size(reviewer: User, waiting: list[int]) -> None:
    fragment = browser_for(reviewer).get("/approvals/cards/?limit=100").content.decode()
    assert card_ids(fragment) == sorted(waiting, reverse=True)
    assert next_before(fragment) == ""


def test_the_fragment_needs_a_login_and_shows_outsiders_nothing(
    outsider: User, creator: User, waiting: list[int]
) -> None:
    answer = Client().get("/approvals/cards/?before=10")
    assert answer.status_code == 302 and answer["Location"].startswith("/login/")
    for person in (outsider, creator):
        fragment = browser_for(person).get("/approvals/cards/").content.decode()
        assert card_ids(fragment) == [] and 'data-total="0"' in fragment
        assert next_before(fragment) == ""


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("before=abc", "before"), ("before=0", "before"), ("before=-3", "before"),
        ("before=1.5", "before"), ("before=" + "9" * 40, "before"), ("before=", "before"),
        ("before=%EF%BC%91", "before"), ("limit=0", "limit"), ("limit=201", "limit"),
        ("limit=1e3", "limit"),
    ],
)  # fmt: skip
def test_a_bad_page_is_a_400_that_names_the_parameter(
    reviewer: User, waiting: list[int], query: str, named: str
) -> None:
    browser = browser_for(reviewer)
    for url in ("/approvals/", "/approvals/cards/"):
        answer = browser.get(f"{url}?{query}")
        assert answer.status_code == 400, (url, query)
        text = answer.content.decode()
        assert text.startswith(f"{named} must be a whole number from 1 to ")
        assert "Traceback" not in text


def test_a_reviewer_who_is_in_the_group_sees_the_same_total_in_every_page_header(
    waiting: list[int], creator: User
) -> None:
    """The header's counter on any page is the total, not the size of a page."""
    creator.groups.add(Group.objects.get_or_create(name="reviewers")[0])
    page = browser_for(creator).get("/sessions/").content.decode()
    assert f'data-count="{WAITING}"' in page
