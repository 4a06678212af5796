"""The pages: behind login, with the Approvals link, and decisions through CSRF-checked forms."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from tools_app import services
from tools_app.models import AgentSession, Policy, PolicyRule, ToolCall

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def tasks_in_process(settings: Any) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True


@pytest.fixture
def reviewer_browser(reviewer: User) -> Client:
    """Rita, logged in, in a browser that checks CSRF tokens as a real one must."""
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(reviewer)
    return browser


@pytest.fixture
def waiting(workspace: Path, creator: User) -> ToolCall:
    """A write to .env by Alice's session, waiting for a reviewer."""
    session = AgentSession.objects.create(
        task="rotate the key", repo=str(workspace), workspace=str(workspace),
        status=AgentSession.Status.RUNNING, policy=Policy.objects.get(name="default"),
        creator=creator,
    )  # fmt: skip
    call = services.tool_call_run_in_process(
        session=session, tool="write_file", args={"path": ".env", "content": "KEY=new\n"}
    )
    assert call.status == "awaiting_approval"
    return call


def csrf(browser: Client) -> str:
    page = browser.get("/approvals/")
    match = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page.content)
    assert match, "the page has no CSRF token"
    return match.group(1).decode()


def test_pages_need_a_login(client: Client) -> None:
    for path in ("/", "/approvals/", "/pulls/1/"):
        answer = client.get(path)
        assert answer.status_code == 302
        assert answer["Location"].startswith("/login/")


def test_the_inbox_shows_the_diff_and_the_buttons(
    reviewer_browser: Client, waiting: ToolCall
) -> None:
    page = reviewer_browser.get("/approvals/").content.decode()
    assert 'href="/approvals/">Approvals</a>' in page
    assert "+KEY=new" in page
    for button in ("Approve", "Deny", "Edit &amp; approve", "Approve &amp; remember"):
        assert f">{button}</button>" in page
    assert "Reason <input" in page


def test_a_reviewer_approves_in_the_browser(
    reviewer_browser: Client,
    waiting: ToolCall,
    workspace: Path,
    django_capture_on_commit_callbacks: Any,
) -> None:
    token = csrf(reviewer_browser)
    with django_capture_on_commit_callbacks(execute=True):  # the run is queued on commit
        answer = reviewer_browser.post(
            f"/tool-calls/{waiting.pk}/decide", {"action": "approve", "csrfmiddlewaretoken": token}
        )
    assert answer.status_code == 302
    waiting.refresh_from_db()
    assert waiting.status == "succeeded"
    assert (workspace / ".env").read_text() == "KEY=new\n"


def test_a_post_without_the_csrf_token_is_refused(
    reviewer_browser: Client, waiting: ToolCall
) -> None:
    answer = reviewer_browser.post(f"/tool-calls/{waiting.pk}/decide", {"action": "approve"})
    assert answer.status_code == 403
    waiting.refresh_from_db()
    assert waiting.status == "awaiting_approval"


def test_deny_with_a_reason(reviewer_browser: Client, waiting: ToolCall, workspace: Path) -> None:
    token = csrf(reviewer_browser)
    answer = reviewer_browser.post(
        f"/tool-calls/{waiting.pk}/decide",
        {"action": "deny", "reason": "keys rotate in the vault", "csrfmiddlewaretoken": token},
        follow=True,
    )
    assert f"Tool call {waiting.pk}: denied." in answer.content.decode()
    waiting.refresh_from_db()
    assert waiting.status == "denied"
    assert "keys rotate in the vault" in waiting.result
    assert (workspace / ".env").read_text() == "SECRET=shh\n"


def test_edit_and_approve_runs_the_edited_arguments(
    reviewer_browser: Client,
    waiting: ToolCall,
    workspace: Path,
    django_capture_on_commit_callbacks: Any,
) -> None:
    token = csrf(reviewer_browser)
    with django_capture_on_commit_callbacks(execute=True):
        reviewer_browser.post(
            f"/tool-calls/{waiting.pk}/decide",
            {
                "action": "edit",
                "args": '{"path": ".env", "content": "KEY=edited\\n"}',
                "csrfmiddlewaretoken": token,
            },
        )
    assert (workspace / ".env").read_text() == "KEY=edited\n"


def test_edited_arguments_that_are_not_json_change_nothing(
    reviewer_browser: Client, waiting: ToolCall
) -> None:
    answer = reviewer_browser.post(
        f"/tool-calls/{waiting.pk}/decide",
        {"action": "edit", "args": "{oops", "csrfmiddlewaretoken": csrf(reviewer_browser)},
        follow=True,
    )
    assert b"not valid JSON" in answer.content
    waiting.refresh_from_db()
    assert waiting.status == "awaiting_approval"


def test_approve_and_remember_adds_an_exact_allow_rule(
    reviewer_browser: Client, waiting: ToolCall
) -> None:
    reviewer_browser.post(
        f"/tool-calls/{waiting.pk}/decide",
        {"action": "remember", "csrfmiddlewaretoken": csrf(reviewer_browser)},
    )
    rule = PolicyRule.objects.get()
    assert (rule.tool, rule.decision) == ("write_file", "allow")
    assert rule.created_by is not None


def test_someone_who_is_not_a_reviewer_cannot_decide(waiting: ToolCall, outsider: User) -> None:
    browser = Client()
    browser.force_login(outsider)
    assert "Nothing is waiting" in browser.get("/approvals/").content.decode()
    answer = browser.post(f"/tool-calls/{waiting.pk}/decide", {"action": "approve"})
    assert answer.status_code == 404
    waiting.refresh_from_db()
    assert waiting.status == "awaiting_approval"


def test_a_reviewer_who_is_not_staff_logs_in_and_reaches_the_inbox(waiting: ToolCall) -> None:
    user = User.objects.create_user("rosa", password="a-long-password")
    user.groups.add(Group.objects.get_or_create(name="reviewers")[0])
    browser = Client(enforce_csrf_checks=True)
    login_page = browser.get("/login/?next=/approvals/")
    token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', login_page.content)
    assert token
    answer = browser.post(
        "/login/",
        {
            "username": "rosa",
            "password": "a-long-password",
            "next": "/approvals/",
            "csrfmiddlewaretoken": token.group(1).decode(),
        },
    )
    assert answer.status_code == 302
    assert answer["Location"] == "/approvals/"
    assert "+KEY=new" in browser.get("/approvals/").content.decode()


def test_a_wrong_password_is_refused_with_a_message(client: Client) -> None:
    User.objects.create_user("rosa", password="a-long-password")
    answer = client.post("/login/", {"username": "rosa", "password": "nope"})
    assert answer.status_code == 200
    assert b"didn&#x27;t match" in answer.content or b"didn't match" in answer.content


def test_the_api_docs_are_behind_login(client: Client) -> None:
    assert client.get("/api/docs").status_code == 302
    client.force_login(User.objects.create_user("olga"))
    assert client.get("/api/docs").status_code == 200
    schema = client.get("/api/openapi.json").json()
    assert "/api/sessions/{session_id}/tool-calls" in schema["paths"]
