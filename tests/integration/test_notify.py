"""Reaching reviewers (issue #25): a webhook that signs, retries on 5xx and not on 4xx,
Slack messages posted and edited, email through a real SMTP server, escalation and
digests, and bad configuration refused in the admin as field errors.

Every server is real, on 127.0.0.1; tasks run in the process (eager), so a delivery is
sent when its transaction commits and a retry when the sweep finds it due."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.utils import timezone

from tests.integration.helpers import Api
from tests.integration.notify_servers import Receiver, parts_of, serve, smtp_server
from tools_app import services
from tools_app.models import (
    AgentSession,
    Channel,
    Delivery,
    NotifyPreference,
    Policy,
    ToolCall,
)
from tools_app.services.notifications import notify_digests, notify_escalate, notify_sweep

# Real commits: a delivery is sent after its transaction commits, as in production.
pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@pytest.fixture(autouse=True)
def local_channels(settings: Any) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.AGENTWEB_NOTIFY_HOSTS = ["127.0.0.1"]
    settings.AGENTWEB_NOTIFY_PRIVATE_HOSTS = ["127.0.0.1"]  # the servers are local
    settings.AGENTWEB_BASE_URL = "https://agentweb.example"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    server = serve(found)
    yield found
    server.shutdown()


@pytest.fixture
def session(workspace: Path, creator: User) -> AgentSession:
    return AgentSession.objects.create(
        task="rotate the key", repo=str(workspace), workspace=str(workspace),
        status=AgentSession.Status.RUNNING, policy=Policy.objects.get(name="default"),
        creator=creator,
    )  # fmt: skip


def wait_on(session: AgentSession, path: str = ".env") -> ToolCall:
    call = services.tool_call_run_in_process(
        session=session, tool="write_file", args={"path": path, "content": "KEY=new-value-9\n"}
    )
    assert call.status == "awaiting_approval"
    return call


def webhook(receiver: Receiver, **fields: Any) -> Channel:
    return Channel.objects.create(
        name=fields.pop("name", "hook"), kind="webhook", url=f"{receiver.url}/hook",
        secret=fields.pop("secret", receiver.secret), **fields,
    )  # fmt: skip


# --- webhook ----------------------------------------------------------------------------------


def test_a_waiting_call_and_its_decision_reach_a_signed_webhook(
    receiver: Receiver, session: AgentSession, rita: Api
) -> None:
    webhook(receiver)
    call = wait_on(session)
    (sent,) = receiver.received
    assert sent.signed and sent.path == "/hook"
    body = sent.json()
    assert (body["schema"], body["event"]) == ("agentweb.notification/1", "tool_call.waiting")
    assert body["tool_call"]["id"] == call.pk and body["tool_call"]["summary"].startswith(
        "write_file: .env ("
    )
    assert body["tool_call"]["url"] == f"https://agentweb.example/approvals/#call-{call.pk}"
    assert "new-value-9" not in sent.body.decode() and "shh" not in sent.body.decode()
    assert sent.headers["X-Agentweb-Event"] == "tool_call.waiting"

    assert (
        rita.post(
            f"/tool-calls/{call.pk}/decision", {"decision": "deny", "reason": "no"}
        ).status_code
        == 200
    )
    decided = receiver.received[1].json()
    assert decided["event"] == "tool_call.decided"
    assert decided["decision"]["by"] == "rita" and decided["decision"]["decision"] == "deny"
    assert set(Delivery.objects.values_list("state", flat=True)) == {"sent"}


def test_a_5xx_is_retried_with_backoff_until_it_lands(
    receiver: Receiver, session: AgentSession
) -> None:
    channel = webhook(receiver)
    receiver.answers = [500, 503]
    call = wait_on(session)
    delivery = Delivery.objects.get(tool_call=call)
    assert (delivery.state, delivery.attempts) == ("retrying", 1)
    assert delivery.next_attempt_at is not None and delivery.next_attempt_at > timezone.now()
    assert notify_sweep() == 0  # not due yet: nothing is sent before its time
    later = timezone.now() + timedelta(hours=1)
    notify_sweep(now=later)
    assert Delivery.objects.get(pk=delivery.pk).state == "retrying"
    channel.refresh_from_db()
    assert channel.failures == 2
    notify_sweep(now=later + timedelta(hours=1))
    delivery.refresh_from_db()
    assert (delivery.state, delivery.attempts) == ("sent", 3)
    assert [t.status_code for t in delivery.tries.all()] == [500, 503, 200]
    channel.refresh_from_db()
    assert (channel.failures, channel.failing_since) == (0, None)
    assert len(receiver.received) == 3 and all(r.signed for r in receiver.received)


def test_a_4xx_is_not_retried(receiver: Receiver, session: AgentSession) -> None:
    webhook(receiver)
    receiver.answers = [400]
    call = wait_on(session)
    delivery = Delivery.objects.get(tool_call=call)
    assert (delivery.state, delivery.attempts) == ("failed", 1)
    notify_sweep(now=timezone.now() + timedelta(days=1))
    assert len(receiver.received) == 1
    assert [t.status_code for t in delivery.tries.all()] == [400]


def test_a_wrong_secret_is_refused_by_the_receiver_and_not_retried(
    receiver: Receiver, session: AgentSession
) -> None:
    webhook(receiver, secret="not-the-receivers-secret")
    call = wait_on(session)
    assert not receiver.received[0].signed
    assert Delivery.objects.get(tool_call=call).state == "failed"  # its 401 is a 4xx


def test_a_channel_that_keeps_failing_is_flagged_on_reviewers_pages(
    receiver: Receiver, session: AgentSession, reviewer: User, creator: User
) -> None:
    webhook(receiver, name="pager")
    receiver.answers = [500] * 10
    wait_on(session)
    for hour in (1, 2):
        notify_sweep(now=timezone.now() + timedelta(hours=hour))
    browser = Client()
    browser.force_login(reviewer)
    assert "Notifications are failing on pager" in browser.get("/approvals/").content.decode()
    browser.force_login(creator)
    assert "Notifications are failing" not in browser.get("/sessions/").content.decode()


def test_a_host_that_is_not_allowed_is_never_reached(
    receiver: Receiver, session: AgentSession, settings: Any
) -> None:
    webhook(receiver)
    settings.AGENTWEB_NOTIFY_HOSTS = ["hooks.example.com"]
    call = wait_on(session)
    assert receiver.received == []
    delivery = Delivery.objects.get(tool_call=call)
    assert delivery.state == "failed"
    assert "not an allowed notification host" in delivery.tries.get().error


def test_an_allowed_host_that_resolves_to_a_private_address_is_refused(
    receiver: Receiver, session: AgentSession, settings: Any
) -> None:
    """Being on AGENTWEB_NOTIFY_HOSTS does not make a loopback address reachable: the
    name is resolved, the address checked, and the delivery fails saying why."""
    hook = webhook(receiver)
    Channel.objects.filter(pk=hook.pk).update(url=receiver.url.replace("127.0.0.1", "localhost"))
    settings.AGENTWEB_NOTIFY_HOSTS = ["localhost"]
    settings.AGENTWEB_NOTIFY_PRIVATE_HOSTS = []
    call = wait_on(session)
    assert receiver.received == []
    delivery = Delivery.objects.get(tool_call=call)
    error = delivery.tries.get().error
    assert delivery.state == "failed"
    assert "localhost resolves to" in error and "a loopback address" in error, error
    assert "AGENTWEB_NOTIFY_PRIVATE_HOSTS" in error

    Channel.objects.filter(pk=hook.pk).update(url=f"{receiver.url}/hook")
    settings.AGENTWEB_NOTIFY_HOSTS = settings.AGENTWEB_NOTIFY_PRIVATE_HOSTS = ["127.0.0.1"]
    wait_on(session, "deploy/.env.prod")  # named in both: the explicit opt-in
    assert [r.json()["event"] for r in receiver.received] == ["tool_call.waiting"]


def test_a_private_address_is_a_field_error_unless_permitted(
    superuser: User, settings: Any
) -> None:
    admin = Client()
    admin.force_login(superuser)
    settings.AGENTWEB_NOTIFY_HOSTS = ["10.1.2.3", "127.0.0.1"]
    settings.AGENTWEB_NOTIFY_PRIVATE_HOSTS = ["127.0.0.1"]
    form = {"name": "ops", "kind": "webhook", "enabled": "on", "url": "http://10.1.2.3/hook",
            "secret": "s", "signing_secret": "", "slack_channel": "", "recipients": "",
            "sessions": "", "rules": ""}  # fmt: skip
    answer = admin.post("/admin/tools_app/channel/add/", form)
    page = answer.content.decode()
    assert answer.status_code == 200 and "10.1.2.3 is a private address" in page
    assert "AGENTWEB_NOTIFY_PRIVATE_HOSTS" in page and not Channel.objects.exists()
    local = {**form, "url": "http://127.0.0.1:9/hook"}
    assert admin.post("/admin/tools_app/channel/add/", local).status_code == 302


# --- routing, escalation, digests -------------------------------------------------------------


def test_routing_by_policy_session_and_rule(receiver: Receiver, session: AgentSession) -> None:
    other = Policy.objects.create(name="other")
    by_policy = webhook(receiver, name="by-policy")
    by_policy.policies.add(other)
    webhook(receiver, name="by-session", sessions=[session.pk + 100])
    webhook(receiver, name="by-rule", rules=["builtin:protected*", "builtin:secret*"])
    webhook(receiver, name="to-all")
    call = wait_on(session)
    told = set(Delivery.objects.filter(tool_call=call).values_list("channel__name", flat=True))
    assert told == {"by-rule", "to-all"}, call.rule


def test_a_call_still_waiting_after_the_deadline_escalates_once(
    receiver: Receiver, session: AgentSession
) -> None:
    Policy.objects.filter(pk=session.policy_id).update(escalate_after_seconds=600)
    webhook(receiver, name="first")
    webhook(receiver, name="escalation", escalation=True)
    call = wait_on(session)
    assert [r.json()["event"] for r in receiver.received] == ["tool_call.waiting"]
    assert notify_escalate(now=timezone.now() + timedelta(seconds=300)) == 0
    assert notify_escalate(now=timezone.now() + timedelta(seconds=601)) == 1
    assert notify_escalate(now=timezone.now() + timedelta(seconds=900)) == 0
    escalated = receiver.received[-1].json()
    assert escalated["event"] == "tool_call.escalated" and escalated["tool_call"]["id"] == call.pk
    assert Delivery.objects.get(event="tool_call.escalated").channel.name == "escalation"


@pytest.fixture
def mailbox(settings: Any) -> Iterator[Any]:
    controller, box = smtp_server()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", controller.port
    yield box
    controller.stop()


def test_an_email_with_the_link_reaches_a_real_smtp_server(
    mailbox: Any, session: AgentSession
) -> None:
    Channel.objects.create(name="mail", kind="email", recipients=["ops@example.com"])
    call = wait_on(session)
    (message,) = mailbox.messages
    assert message["To"] == "ops@example.com"
    assert f"Tool call {call.pk}" in message["Subject"]
    parts = parts_of(message)
    link = f"https://agentweb.example/approvals/#call-{call.pk}"
    assert link in parts["text/plain"] and f'href="{link}"' in parts["text/html"]
    assert "new-value-9" not in parts["text/plain"]


def test_a_digest_collects_several_calls_for_who_prefers_it(
    mailbox: Any, session: AgentSession, reviewer: User
) -> None:
    reviewer.email = "rita@example.com"
    reviewer.save()
    NotifyPreference.objects.create(user=reviewer, mode="digest", digest_minutes=30)
    Channel.objects.create(name="mail", kind="email", to_reviewers=True)
    first, second = wait_on(session, ".env"), wait_on(session, "deploy/.env.prod")
    assert mailbox.messages == []
    assert notify_digests() == 0  # set in the admin: its first period starts at this sweep
    later = timezone.now() + timedelta(minutes=30)
    assert notify_digests(now=later) == 1
    (digest,) = mailbox.messages
    text = parts_of(digest)["text/plain"]
    assert f"#call-{first.pk}" in text and f"#call-{second.pk}" in text
    assert "2 tool calls wait" in digest["Subject"]
    assert notify_digests(now=later + timedelta(minutes=10)) == 0  # not due again


def person(name: str, *groups: str, mode: str = "") -> User:
    user = User.objects.create_user(name, email=f"{name}@example.com")
    for group in groups:
        user.groups.add(Group.objects.get_or_create(name=group)[0])
    if mode:
        NotifyPreference.objects.create(user=user, mode=mode, digest_minutes=30)
    return user


def test_a_call_still_waiting_escalates_to_a_group_each_member_as_they_prefer(
    mailbox: Any, receiver: Receiver, session: AgentSession
) -> None:
    """The on-call group hears of a call still waiting after the policy's deadline, and
    not before: Olga now, Omar in his digest, Oscar (off) never, and Otto, who may not
    see the session, never."""
    Policy.objects.filter(pk=session.policy_id).update(escalate_after_seconds=600)
    person("olga", "oncall", "reviewers")
    person("omar", "oncall", "reviewers", mode="digest")
    person("oscar", "oncall", "reviewers", mode="off")
    person("otto", "oncall")
    webhook(receiver, name="first")
    oncall = Channel.objects.create(name="oncall", kind="email", escalation=True)
    oncall.groups.add(Group.objects.get(name="oncall"))
    start = timezone.now()
    call = wait_on(session)
    assert [r.json()["event"] for r in receiver.received] == ["tool_call.waiting"]

    notify_sweep(now=start + timedelta(seconds=300))
    assert mailbox.messages == [] and not Delivery.objects.filter(event="tool_call.escalated")
    notify_sweep(now=start + timedelta(seconds=601))
    (olga,) = mailbox.messages
    assert olga["To"] == "olga@example.com"
    assert f"Tool call {call.pk} (write_file) still waits" in olga["Subject"]
    assert f"#call-{call.pk}" in parts_of(olga)["text/plain"]
    escalated = Delivery.objects.filter(event="tool_call.escalated")
    assert sorted(escalated.values_list("address", "state")) == [
        ("olga@example.com", "sent"), ("omar@example.com", "held"),
    ]  # fmt: skip
    assert len(receiver.received) == 1  # the first channel is not an escalation channel

    notify_sweep(now=start + timedelta(hours=2))  # Omar's digest is due
    assert [m["To"] for m in mailbox.messages] == ["olga@example.com", "omar@example.com"]
    assert f"#call-{call.pk}" in parts_of(mailbox.messages[1])["text/plain"]
    notify_sweep(now=start + timedelta(hours=3))
    assert len(mailbox.messages) == 2  # escalated once


def test_a_reviewer_who_turned_notifications_off_gets_none(
    mailbox: Any, session: AgentSession, reviewer: User
) -> None:
    reviewer.email = "rita@example.com"
    reviewer.save()
    NotifyPreference.objects.create(user=reviewer, mode="off")
    Channel.objects.create(name="mail", kind="email", to_reviewers=True)
    wait_on(session)
    notify_digests()
    assert mailbox.messages == []
