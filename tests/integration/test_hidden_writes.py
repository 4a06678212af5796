"""No hidden writes: reads never change anything, the admin changes a session only through
its services, and work is sent to the workers only once the data it needs is committed."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from django.test import Client
from django.utils import timezone

from tools_app import services
from tools_app.models import AgentSession, Event, Policy, ToolCall
from tools_app.services import queueing

pytestmark = pytest.mark.django_db


@pytest.fixture
def reviewer_browser(reviewer: User) -> Client:
    """Rita is a reviewer, in the browser."""
    browser = Client()
    browser.force_login(reviewer)
    return browser


@pytest.fixture
def session(workspace: Path, creator: User) -> AgentSession:
    return AgentSession.objects.create(
        task="rotate the key", repo=str(workspace), workspace=str(workspace),
        status=AgentSession.Status.WAITING, policy=Policy.objects.get(name="default"),
        creator=creator,
    )  # fmt: skip


@pytest.fixture
def overdue(session: AgentSession) -> ToolCall:
    """A write that waited for a person past its deadline; the sweep has not run yet."""
    return ToolCall.objects.create(
        session=session, tool="write_file", args={"path": ".env", "content": "KEY=new\n"},
        status=ToolCall.Status.AWAITING_APPROVAL, verdict="require_approval",
        expires_at=timezone.now() - timedelta(seconds=5),
    )  # fmt: skip


def untouched(call: ToolCall) -> bool:
    call.refresh_from_db()
    no_events = not Event.objects.filter(session_id=call.session_id).exists()
    return call.status == ToolCall.Status.AWAITING_APPROVAL and no_events


# --- reads never write ---------------------------------------------------------------------


def test_the_inbox_leaves_out_an_overdue_call_without_expiring_it(
    reviewer_browser: Client, overdue: ToolCall
) -> None:
    assert reviewer_browser.get("/api/approvals").json()["items"] == []
    assert b"Nothing is waiting" in reviewer_browser.get("/approvals/").content
    assert untouched(overdue)


def test_reading_an_overdue_call_shows_it_expired_and_writes_nothing(
    reviewer_browser: Client, overdue: ToolCall
) -> None:
    answer = reviewer_browser.get(f"/api/tool-calls/{overdue.pk}?wait=5")
    assert answer.json()["status"] == "expired"
    assert untouched(overdue)


def test_an_overdue_call_cannot_be_decided(reviewer_browser: Client, overdue: ToolCall) -> None:
    late = reviewer_browser.post(
        f"/api/tool-calls/{overdue.pk}/decision", {"decision": "approve"},
        content_type="application/json",
    )  # fmt: skip
    assert late.status_code == 409
    page = reviewer_browser.post(
        f"/tool-calls/{overdue.pk}/decide", {"action": "approve"}, follow=True
    )
    assert b"expired before a decision" in page.content
    assert untouched(overdue)


def test_the_sweep_records_the_expiry_with_its_event(overdue: ToolCall) -> None:
    assert services.tool_call_expire_overdue() == 1
    overdue.refresh_from_db()
    assert overdue.status == ToolCall.Status.EXPIRED
    assert Event.objects.filter(type="tool_call.expired").count() == 1


# --- the admin changes sessions only through their services ----------------------------------


@pytest.fixture
def admin_site(client: Client, superuser: User) -> Client:
    """The superuser, logged in to the admin."""
    client.force_login(superuser)
    return client


def test_a_session_is_read_only_in_the_admin(admin_site: Client, session: AgentSession) -> None:
    page = admin_site.get(f"/admin/tools_app/agentsession/{session.pk}/change/")
    assert page.status_code == 200
    assert b'name="_save"' not in page.content
    changed = admin_site.post(
        f"/admin/tools_app/agentsession/{session.pk}/change/", {"status": "done"}
    )
    assert changed.status_code == 403
    assert admin_site.get("/admin/tools_app/agentsession/add/").status_code == 403
    deleted = admin_site.post(
        f"/admin/tools_app/agentsession/{session.pk}/delete/", {"post": "yes"}
    )
    assert deleted.status_code == 403
    session.refresh_from_db()
    assert session.status == AgentSession.Status.WAITING


def test_the_admin_cancel_action_goes_through_session_cancel(
    admin_site: Client, session: AgentSession, overdue: ToolCall
) -> None:
    answer = admin_site.post(
        "/admin/tools_app/agentsession/",
        {"action": "cancel_sessions", "_selected_action": [session.pk]},
        follow=True,
    )
    assert b"Cancelled 1 session(s)." in answer.content
    session.refresh_from_db()
    overdue.refresh_from_db()
    assert session.status == AgentSession.Status.CANCELLED
    assert overdue.status == ToolCall.Status.CANCELLED
    types = set(Event.objects.filter(session=session).values_list("type", flat=True))
    assert {"tool_call.cancelled", "session.cancelled"} <= types


def test_a_staff_member_cancels_only_sessions_they_may_act_on(session: AgentSession) -> None:
    staff = User.objects.create_user("stan", is_staff=True)
    staff.user_permissions.add(*_view_session_permission())
    browser = Client()
    browser.force_login(staff)
    answer = browser.post(
        "/admin/tools_app/agentsession/",
        {"action": "cancel_sessions", "_selected_action": [session.pk]},
        follow=True,
    )
    assert b"1 session(s) left running" in answer.content
    session.refresh_from_db()
    assert session.status == AgentSession.Status.WAITING


def _view_session_permission() -> Any:
    from django.contrib.auth.models import Permission

    return Permission.objects.filter(codename="view_agentsession")


# --- work is sent on commit ------------------------------------------------------------------


class Rollback(Exception):
    pass


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """What would have reached the broker."""
    messages: list[tuple[Any, ...]] = []
    monkeypatch.setattr(
        queueing, "task_send", lambda task, *args, queue: messages.append((task, *args))
    )
    return messages


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_dispatch_in_a_transaction_that_rolls_back_sends_nothing(
    session: AgentSession, sent: list[tuple[Any, ...]]
) -> None:
    call = ToolCall.objects.create(session=session, tool="read_file", status="pending")
    with pytest.raises(Rollback), transaction.atomic():
        queueing.tool_call_enqueue(
            tool_call_id=call.pk, task=queueing.EVALUATE_TOOL_CALL, session=session
        )
        assert sent == []  # not before the commit either
        raise Rollback
    assert sent == []
    call.refresh_from_db()
    assert call.queued_at is None


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_dispatch_is_sent_once_its_transaction_commits(
    session: AgentSession, sent: list[tuple[Any, ...]]
) -> None:
    call = ToolCall.objects.create(session=session, tool="read_file", status="pending")
    with transaction.atomic():
        queueing.tool_call_enqueue(
            tool_call_id=call.pk, task=queueing.EVALUATE_TOOL_CALL, session=session
        )
        assert sent == []
    assert sent == [("tools_app.tasks.evaluate_tool_call", call.pk)]
    call.refresh_from_db()
    assert call.queued_at is not None


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_session_started_in_a_transaction_that_rolls_back_clones_nothing(
    workspace: Path, creator: User, sent: list[tuple[Any, ...]]
) -> None:
    with pytest.raises(Rollback), transaction.atomic():
        services.session_start(user=creator, task="fix it", repo=str(workspace))
        raise Rollback
    assert sent == []
    assert not AgentSession.objects.exists()
    started = services.session_start(user=creator, task="fix it", repo=str(workspace))
    assert sent == [("tools_app.tasks.prepare_session", started.pk)]
