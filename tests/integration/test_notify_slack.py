"""Slack (issue #25): a message posted by a fake Slack Web API on 127.0.0.1 and edited on
the decision; Approve/Deny through the interactivity endpoint, signed as Slack signs,
deciding with the linked user's permissions; and the admin refusing bad configuration."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from tests.integration.helpers import Api
from tests.integration.notify_servers import Receiver, serve
from tools_app import services
from tools_app.models import (
    AgentSession,
    AuditEntry,
    Channel,
    Delivery,
    Policy,
    SlackUser,
    ToolCall,
)

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)
TOKEN = "xoxb-test-token"
SIGNING = "slack-signing-secret"


@pytest.fixture(autouse=True)
def local_channels(settings: Any) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.AGENTWEB_NOTIFY_HOSTS = ["127.0.0.1"]
    settings.AGENTWEB_NOTIFY_PRIVATE_HOSTS = ["127.0.0.1"]  # the servers are local


@pytest.fixture
def slack() -> Iterator[Receiver]:
    found = Receiver()
    server = serve(found, slack_token=TOKEN)
    yield found
    server.shutdown()


@pytest.fixture
def channel(slack: Receiver) -> Channel:
    return Channel.objects.create(
        name="team", kind="slack", url=f"{slack.url}/api", secret=TOKEN, slack_channel="C0TEAM",
        signing_secret=SIGNING, interactive=True,
    )  # fmt: skip


def session_of(user: User, workspace: Path, *, distinct: bool = False) -> AgentSession:
    policy = Policy.objects.get(name="default")
    if distinct:
        Policy.objects.filter(pk=policy.pk).update(require_distinct_reviewer=True)
    return AgentSession.objects.create(
        task="rotate the key", repo=str(workspace), workspace=str(workspace), creator=user,
        status=AgentSession.Status.RUNNING, policy=Policy.objects.get(pk=policy.pk),
    )  # fmt: skip


def waiting_in(session: AgentSession) -> ToolCall:
    call = services.tool_call_run_in_process(
        session=session, tool="write_file", args={"path": ".env", "content": "KEY=new-value\n"}
    )
    assert call.status == "awaiting_approval"
    return call


def click(
    call: ToolCall, slack_user: str, action: str = "approve", *, secret: str = SIGNING,
    age: int = 0, trigger: str = "", headers: Any = None,
) -> Any:  # fmt: skip
    """POST what Slack posts for a button click, signed with `secret`, `age` seconds old;
    `headers` replace the signed ones."""
    payload = {
        "type": "block_actions", "user": {"id": slack_user, "username": "someone"},
        "actions": [{"action_id": action, "value": str(call.pk), "type": "button"}],
    }  # fmt: skip
    if trigger:
        payload["trigger_id"] = trigger
    return slack_post(payload, secret=secret, age=age, headers=headers)


def submit(
    call: ToolCall, slack_user: str, reason: str, *, secret: str = SIGNING, age: int = 0
) -> Any:
    """POST what Slack posts when the deny form is submitted with `reason`."""
    payload = {
        "type": "view_submission", "user": {"id": slack_user},
        "view": {"callback_id": "agentweb_deny", "private_metadata": str(call.pk),
                 "state": {"values": {"reason": {"reason": {"type": "plain_text_input",
                                                            "value": reason}}}}},
    }  # fmt: skip
    return slack_post(payload, secret=secret, age=age)


def slack_post(
    payload: dict[str, Any], *, secret: str = SIGNING, age: int = 0, headers: Any = None
) -> Any:
    """POST `payload` signed as Slack signs it; `headers` replace the signed ones."""
    body = urlencode({"payload": json.dumps(payload)}).encode()
    stamp = str(int(time.time()) - age)
    mac = hmac.new(secret.encode(), f"v0:{stamp}:".encode() + body, hashlib.sha256)
    signed = {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": f"v0={mac.hexdigest()}"}
    return Client().post(
        "/slack/interactivity/team/", body, content_type="application/x-www-form-urlencoded",
        headers={**signed, **(headers or {})},
    )  # fmt: skip


def test_the_message_is_posted_then_edited_on_the_decision(
    slack: Receiver, channel: Channel, workspace: Path, creator: User, rita: Api
) -> None:
    call = waiting_in(session_of(creator, workspace))
    (posted,) = slack.received
    assert posted.path == "/api/chat.postMessage"
    message = posted.json()
    assert message["channel"] == "C0TEAM"
    actions = next(b for b in message["blocks"] if b["type"] == "actions")["elements"]
    assert [a["action_id"] for a in actions] == ["open", "approve", "deny"]
    assert "KEY=new-value" not in posted.body.decode()

    assert rita.post(f"/tool-calls/{call.pk}/decision", {"decision": "approve"}).status_code == 200
    edited = slack.received[-1]
    assert edited.path == "/api/chat.update"
    update = edited.json()
    assert (update["channel"], update["ts"]) == ("C0TEAM", "1700000000.000001")
    assert "approved by rita" in update["text"]
    elements = next(b for b in update["blocks"] if b["type"] == "actions")["elements"]
    assert [a["action_id"] for a in elements] == ["open"]  # no buttons once decided


def test_an_incoming_webhook_posts_then_posts_the_decision_as_a_follow_up(
    slack: Receiver, workspace: Path, creator: User, rita: Api
) -> None:
    """An incoming webhook (a URL, no bot token) cannot edit what it posted: the decision
    is a second message, without buttons."""
    hook = f"{slack.url}/services/T0TEAM/B0HOOK/xyz"
    Channel.objects.create(name="hook", kind="slack", url=hook)
    call = waiting_in(session_of(creator, workspace))
    (posted,) = slack.received
    assert posted.path == "/services/T0TEAM/B0HOOK/xyz" and "Authorization" not in posted.headers
    message = posted.json()
    assert "channel" not in message and f"Tool call {call.pk}" in message["text"]
    actions = next(b for b in message["blocks"] if b["type"] == "actions")["elements"]
    assert [a["action_id"] for a in actions] == ["open"]  # not interactive
    assert "KEY=new-value" not in posted.body.decode()

    decided = {"decision": "deny", "reason": "not this key"}
    assert rita.post(f"/tool-calls/{call.pk}/decision", decided).status_code == 200
    follow_up = slack.received[-1]
    assert len(slack.received) == 2 and follow_up.path == posted.path
    assert "denied by rita" in follow_up.json()["text"]
    assert "Reason: not this key" in json.dumps(follow_up.json()["blocks"])
    states = Delivery.objects.filter(tool_call=call).values_list("event", "state", "external_ref")
    assert sorted(states) == [("tool_call.decided", "sent", ""), ("tool_call.waiting", "sent", "")]


def test_an_approval_clicked_in_slack_by_a_linked_reviewer_decides(
    slack: Receiver, channel: Channel, workspace: Path, creator: User, reviewer: User
) -> None:
    SlackUser.objects.create(slack_id="U0RITA", user=reviewer)
    call = waiting_in(session_of(creator, workspace))
    answer = click(call, "U0RITA")
    assert answer.status_code == 200 and "approved by rita" in answer.json()["text"]
    call.refresh_from_db()
    assert call.status in ("approved", "running", "succeeded")
    entry = AuditEntry.objects.get(action="decision")
    assert (entry.via, entry.actor_name) == ("slack", "rita")
    assert slack.received[-1].path == "/api/chat.update"


def hostile(**headers: str) -> dict[str, Any]:
    return {"headers": {name.replace("_", "-"): value for name, value in headers.items()}}


@pytest.mark.parametrize(
    "how",
    [
        pytest.param({"secret": "forged-secret"}, id="forged"),
        pytest.param({"age": 600}, id="stale"),
        pytest.param(hostile(X_Slack_Request_Timestamp="\u00b2"), id="superscript two"),
        pytest.param(hostile(X_Slack_Request_Timestamp="\u0661" * 10), id="Arabic-Indic digits"),
        pytest.param(hostile(X_Slack_Request_Timestamp="9" * 5000), id="5,000 digits"),
        pytest.param(hostile(X_Slack_Request_Timestamp="-1"), id="negative timestamp"),
        pytest.param(hostile(X_Slack_Request_Timestamp=""), id="empty timestamp"),
        pytest.param(hostile(X_Slack_Signature="v0=\u00b2"), id="non-ASCII signature"),
        pytest.param(hostile(X_Slack_Signature=""), id="empty signature"),
    ],
)
def test_a_forged_stale_or_garbled_click_is_a_401_and_changes_nothing(
    slack: Receiver, channel: Channel, workspace: Path, creator: User, reviewer: User,
    how: dict[str, Any],
) -> None:  # fmt: skip
    SlackUser.objects.create(slack_id="U0RITA", user=reviewer)
    call = waiting_in(session_of(creator, workspace))
    answer = click(call, "U0RITA", **how)
    assert answer.status_code == 401, answer.content
    assert answer.json()["detail"].startswith("Refused: ")
    call.refresh_from_db()
    assert call.status == "awaiting_approval"
    assert not AuditEntry.objects.filter(action="decision").exists()


@pytest.mark.parametrize("value", ["\u00b2", "\u0661", "9" * 30, "-1", ""])
def test_a_signed_click_or_form_naming_no_call_id_is_a_400_and_changes_nothing(
    slack: Receiver, channel: Channel, workspace: Path, creator: User, reviewer: User,
    value: str,
) -> None:  # fmt: skip
    SlackUser.objects.create(slack_id="U0RITA", user=reviewer)
    call = waiting_in(session_of(creator, workspace))
    clicked = {
        "type": "block_actions", "user": {"id": "U0RITA"},
        "actions": [{"action_id": "approve", "value": value}],
    }  # fmt: skip
    submitted = {
        "type": "view_submission", "user": {"id": "U0RITA"},
        "view": {"callback_id": "agentweb_deny", "private_metadata": value,
                 "state": {"values": {"reason": {"reason": {"value": "no"}}}}},
    }  # fmt: skip
    for payload in (clicked, submitted):
        answer = slack_post(payload)
        assert answer.status_code == 400, answer.content
        assert "Not an interaction agentweb sent" in answer.json()["detail"]
    call.refresh_from_db()
    assert call.status == "awaiting_approval"
    assert not AuditEntry.objects.filter(action="decision").exists()


def test_a_deny_in_slack_asks_why_and_denies_with_that_reason(
    slack: Receiver, channel: Channel, workspace: Path, creator: User, reviewer: User
) -> None:
    SlackUser.objects.create(slack_id="U0RITA", user=reviewer)
    call = waiting_in(session_of(creator, workspace))
    opened = click(call, "U0RITA", "deny", trigger="1337.42.abcd")
    assert opened.status_code == 200 and opened.content == b""
    form = slack.received[-1]
    assert form.path == "/api/views.open" and form.headers["Authorization"] == f"Bearer {TOKEN}"
    view = form.json()["view"]
    assert form.json()["trigger_id"] == "1337.42.abcd"
    assert (view["callback_id"], view["private_metadata"]) == ("agentweb_deny", str(call.pk))
    assert "KEY=new-value" not in form.body.decode()
    call.refresh_from_db()
    assert call.status == "awaiting_approval"  # the click asked; it decided nothing

    assert submit(call, "U0RITA", "  ").json()["errors"] == {
        "reason": "Say why: the agent reads it."
    }
    assert submit(call, "U0RITA", "rotate it in the vault").json() == {"response_action": "clear"}
    call.refresh_from_db()
    assert call.status == "denied" and call.human.reason == "rotate it in the vault"
    assert "rotate it in the vault" in call.result
    entry = AuditEntry.objects.get(action="decision")
    assert (entry.via, entry.decision, entry.reason) == ("slack", "deny", "rotate it in the vault")
    edited = slack.received[-1]
    assert edited.path == "/api/chat.update" and "denied by rita" in edited.json()["text"]
    assert "Reason: rotate it in the vault" in json.dumps(edited.json()["blocks"])
    again = submit(call, "U0RITA", "twice")
    assert "errors" in again.json()
    assert ToolCall.objects.get(pk=call.pk).human.reason == "rotate it in the vault"


@pytest.mark.parametrize(
    "how", [{"secret": "forged-secret"}, {"age": 600}], ids=["forged", "stale"]
)
def test_a_forged_or_stale_deny_form_changes_nothing(
    slack: Receiver, channel: Channel, workspace: Path, creator: User, reviewer: User,
    how: dict[str, Any],
) -> None:  # fmt: skip
    SlackUser.objects.create(slack_id="U0RITA", user=reviewer)
    call = waiting_in(session_of(creator, workspace))
    assert submit(call, "U0RITA", "forged reason", **how).status_code == 401
    assert click(call, "U0RITA", "deny", trigger="1.2.3", **how).status_code == 401
    call.refresh_from_db()
    assert call.status == "awaiting_approval"
    assert [r.path for r in slack.received] == ["/api/chat.postMessage"]  # no form, no edit
    assert not AuditEntry.objects.filter(action="decision").exists()


def test_a_deny_form_from_someone_who_may_not_decide_shows_why_on_the_field(
    slack: Receiver, channel: Channel, workspace: Path, creator: User
) -> None:
    SlackUser.objects.create(slack_id="U0ALICE", user=creator)  # not a reviewer
    call = waiting_in(session_of(creator, workspace))
    assert "not a reviewer" in submit(call, "U0ALICE", "mine").json()["errors"]["reason"]
    assert "not linked" in submit(call, "U0NOBODY", "who").json()["errors"]["reason"]
    call.refresh_from_db()
    assert call.status == "awaiting_approval"


def test_an_unknown_slack_user_or_one_who_may_not_decide_is_refused(
    slack: Receiver, channel: Channel, workspace: Path, creator: User
) -> None:
    SlackUser.objects.create(slack_id="U0ALICE", user=creator)  # not a reviewer
    call = waiting_in(session_of(creator, workspace))
    unknown = click(call, "U0NOBODY")
    assert unknown.status_code == 200 and "not linked" in unknown.json()["text"]
    alice = click(call, "U0ALICE")
    assert "not a reviewer" in alice.json()["text"]
    call.refresh_from_db()
    assert call.status == "awaiting_approval"


def test_four_eyes_hold_in_slack(
    slack: Receiver, channel: Channel, workspace: Path, reviewer: User
) -> None:
    """Rita's own session, under require_distinct_reviewer: she may deny, not approve."""
    SlackUser.objects.create(slack_id="U0RITA", user=reviewer)
    call = waiting_in(session_of(reviewer, workspace, distinct=True))
    refused = click(call, "U0RITA", "approve")
    assert "reviewer other than the session's creator" in refused.json()["text"]
    call.refresh_from_db()
    assert call.status == "awaiting_approval"
    assert "denied by rita" in click(call, "U0RITA", "deny").json()["text"]


# --- the admin: write-only secrets, field errors ------------------------------------------------


def channel_form(**fields: str) -> dict[str, str]:
    form = {"name": "ops", "kind": "webhook", "enabled": "on", "url": "", "secret": "",
            "signing_secret": "", "slack_channel": "", "recipients": "", "sessions": "",
            "rules": ""}  # fmt: skip
    return {**form, **fields}


def test_bad_channel_configuration_is_a_field_error_never_a_500(superuser: User) -> None:
    admin = Client()
    admin.force_login(superuser)
    local = "http://127.0.0.1:9/hook"
    oncall = str(Group.objects.create(name="oncall").pk)
    cases = [
        (channel_form(url="https://evil.example/hook", secret="x"), "not an allowed notification"),
        (channel_form(url=local), "A webhook needs a secret"),
        (channel_form(kind="slack", secret=TOKEN, url=local), "channel&#x27;s id"),
        (channel_form(kind="slack", url=local, interactive="on"), "signing secret"),
        (channel_form(kind="email", recipients="not-an-address"), "is not an email address"),
        (channel_form(url=local, secret="x", sessions="seven"), "is not a session id"),
        (channel_form(url=local, secret="x", groups=oncall), "only an email channel has one"),
    ]
    for form, error in cases:
        answer = admin.post("/admin/tools_app/channel/add/", form)
        assert answer.status_code == 200, (form, answer.status_code)
        assert error in answer.content.decode(), error
    assert not Channel.objects.exists()
    linked = admin.post(
        "/admin/tools_app/slackuser/add/", {"slack_id": "rita", "user": superuser.pk}
    )
    assert linked.status_code == 200 and "is not a Slack user id" in linked.content.decode()


def test_a_saved_secret_is_never_shown_and_kept_when_left_empty(superuser: User) -> None:
    admin = Client()
    admin.force_login(superuser)
    form = channel_form(url="http://127.0.0.1:9/hook", secret="the-webhook-secret-123")
    assert admin.post("/admin/tools_app/channel/add/", form).status_code == 302
    saved = Channel.objects.get()
    page = admin.get(f"/admin/tools_app/channel/{saved.pk}/change/").content.decode()
    assert "the-webhook-secret-123" not in page
    again = channel_form(url="http://127.0.0.1:9/other", secret="")
    assert admin.post(f"/admin/tools_app/channel/{saved.pk}/change/", again).status_code == 302
    saved.refresh_from_db()
    assert (saved.url, saved.secret) == ("http://127.0.0.1:9/other", "the-webhook-secret-123")
