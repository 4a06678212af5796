"""The session pages: the list, the new-session form, and one session's live timeline.

Alice (the creator) starts sessions, Rita (the reviewer) sees every session, Charlie (the
outsider) sees none of Alice's, and an anonymous visitor is sent to log in."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tools_app.models import AgentMessage, AgentSession, Decision, Policy, ToolCall

pytestmark = pytest.mark.django_db

Status = AgentSession.Status


def browser(user: User | None, *, csrf_checks: bool = False) -> Client:
    client = Client(enforce_csrf_checks=csrf_checks)
    if user is not None:
        client.force_login(user)
    return client


def make_session(creator: User | None, **fields: object) -> AgentSession:
    values: dict[str, object] = {
        "task": "fix the parser", "repo": "/srv/repos/app", "workspace": "/tmp/ws",
        "status": Status.RUNNING, "policy": Policy.objects.get(name="default"),
        "creator": creator,
    }  # fmt: skip
    values.update(fields)
    return AgentSession.objects.create(**values)


def awaiting(session: AgentSession, **fields: object) -> ToolCall:
    values: dict[str, object] = {
        "tool": "write_file", "args": {"path": ".env", "content": "KEY=new\n"},
        "status": ToolCall.Status.AWAITING_APPROVAL, "decision": "require_approval",
        "expires_at": timezone.now() + timedelta(hours=1),
    }  # fmt: skip
    values.update(fields)
    return ToolCall.objects.create(session=session, **values)


def session_ids(page: str) -> list[int]:
    return [int(found) for found in re.findall(r'<tr id="session-(\d+)"', page)]


# --- the list ------------------------------------------------------------------------------


def test_the_list_shows_a_creator_only_their_own_sessions(
    creator: User, reviewer: User, outsider: User
) -> None:
    mine = make_session(creator, task="Alice's task")
    theirs = make_session(outsider, task="Charlie's task")
    assert session_ids(browser(creator).get("/sessions/").content.decode()) == [mine.pk]
    assert session_ids(browser(reviewer).get("/sessions/").content.decode()) == [
        theirs.pk,
        mine.pk,
    ]


def test_the_list_shows_status_repository_model_and_waiting_count(
    creator: User, reviewer: User
) -> None:
    session = make_session(creator, status=Status.WAITING, model="script:/tmp/plan.json")
    awaiting(session)
    awaiting(session)
    awaiting(session, status=ToolCall.Status.SUCCEEDED)
    page = browser(reviewer).get("/sessions/").content.decode()
    row = page[page.index(f'id="session-{session.pk}"') :].split("</tr>")[0]
    assert "waiting</span>" in row
    assert "/srv/repos/app" in row
    assert "script:/tmp/plan.json" in row
    assert "<strong>2</strong>" in row


def test_the_list_filters_by_status(creator: User) -> None:
    running = make_session(creator, status=Status.RUNNING)
    done = make_session(creator, status=Status.DONE)
    alice = browser(creator)
    assert session_ids(alice.get("/sessions/?status=done").content.decode()) == [done.pk]
    assert session_ids(alice.get("/sessions/?status=running").content.decode()) == [running.pk]
    assert session_ids(alice.get("/sessions/?status=bogus").content.decode()) == [
        done.pk,
        running.pk,
    ]


def test_the_list_pages_with_a_cursor_newest_first(creator: User) -> None:
    policy = Policy.objects.get(name="default")
    AgentSession.objects.bulk_create(
        AgentSession(task=f"task {n}", repo="r", workspace="w", policy=policy, creator=creator)
        for n in range(120)
    )
    alice = browser(creator)
    seen: list[int] = []
    url = "/sessions/"
    while url:
        page = alice.get(url).content.decode()
        seen += session_ids(page)
        found = re.search(r'rel="next" href="([^"]+)"', page)
        url = "/sessions/" + found.group(1).replace("&amp;", "&") if found else ""
    ids = list(AgentSession.objects.order_by("-id").values_list("id", flat=True))
    assert seen == ids


def test_a_bad_cursor_starts_at_the_newest(creator: User) -> None:
    session = make_session(creator)
    page = browser(creator).get("/sessions/?cursor=not-a-cursor").content.decode()
    assert session_ids(page) == [session.pk]


def _queries_for_the_first_page(user: User) -> int:
    client = browser(user)
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/sessions/").status_code == 200
    return len(queries)


def test_a_page_costs_the_same_queries_whatever_the_number_of_sessions(reviewer: User) -> None:
    policy = Policy.objects.get(name="default")

    def add(count: int) -> None:
        sessions = AgentSession.objects.bulk_create(
            AgentSession(task="t", repo="r", workspace="w", policy=policy, creator=reviewer)
            for _ in range(count)
        )
        for session in sessions[-60:]:
            awaiting(session)

    add(60)
    few = _queries_for_the_first_page(reviewer)
    add(600)
    assert _queries_for_the_first_page(reviewer) == few
    assert few <= 8


# --- the new-session form ------------------------------------------------------------------


def test_the_form_shows_the_fields_and_the_configured_roles(creator: User, settings) -> None:
    settings.AGENTWEB_MODEL_CODER = "openai:gpt-4.1"
    page = browser(creator).get("/sessions/new/").content.decode()
    for label in ("Repository", "Task", "Model", "Policy"):
        assert f">{label}</label>" in page
    assert "<code>openai:gpt-4.1</code>" in page
    assert '<option value="default" selected>default</option>' in page


def test_a_valid_form_starts_a_session_and_opens_its_page(creator: User, workspace: Path) -> None:
    answer = browser(creator).post(
        "/sessions/new/",
        {"repo": str(workspace), "task": "add a test", "model": "", "policy": "default"},
    )
    session = AgentSession.objects.get()
    assert answer.status_code == 302
    assert answer["Location"] == f"/sessions/{session.pk}/"
    assert (session.task, session.creator, session.repo) == ("add a test", creator, str(workspace))


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        ("repo", "/no/such/directory", "is not a directory on the server"),
        ("model", "nonsense:model", "nonsense"),
        ("model", "architect", "has no model spec"),
        ("task", "   ", "This field is required"),
        ("policy", "no-such-policy", "Select a valid choice"),
    ],
)
def test_a_bad_field_is_named_on_the_form_and_starts_nothing(
    creator: User, workspace: Path, settings, field: str, value: str, error: str
) -> None:
    settings.AGENTWEB_MODEL_ARCHITECT = ""
    data = {"repo": str(workspace), "task": "add a test", "model": "", "policy": "default"}
    data[field] = value
    answer = browser(creator).post("/sessions/new/", data)
    assert answer.status_code == 200
    errors = answer.context["form"].errors
    assert list(errors) == [field]
    assert error in str(errors[field])
    assert 'role="alert"' in answer.content.decode()
    assert not AgentSession.objects.exists()


def test_the_form_needs_its_csrf_token(creator: User, workspace: Path) -> None:
    alice = browser(creator, csrf_checks=True)
    data = {"repo": str(workspace), "task": "add a test", "policy": "default"}
    assert alice.post("/sessions/new/", data).status_code == 403
    token = re.search(
        r'name="csrfmiddlewaretoken" value="([^"]+)"', alice.get("/sessions/new/").content.decode()
    )
    assert token
    data["csrfmiddlewaretoken"] = token.group(1)
    assert alice.post("/sessions/new/", data).status_code == 302
