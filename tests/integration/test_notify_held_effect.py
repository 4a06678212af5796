"""A command effect held for a person is a waiting call like any other (issue 31, item 4):
born waiting through the lifecycle, it reaches every channel of its session — a signed
webhook, Slack, email — within seconds, sent by a real Celery worker, not only an
escalation channel later.

Every server is real, on 127.0.0.1; the command runs in the real sandbox."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from tests.helpers import Worker
from tests.integration.helpers import Api, call, start_session
from tests.integration.notify_servers import Mailbox, Receiver, parts_of, serve, smtp_server
from tests.unit.helpers import requires_cow
from tools_app.models import Channel, ToolCall

pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True), requires_cow]

SLACK_TOKEN = "xoxb-held-effect"
BASE_URL = "https://agentweb.example"
WITHIN_SECONDS = 10.0


class Servers(NamedTuple):
    hook: Receiver
    slack: Receiver
    mailbox: Mailbox
    smtp_port: int


@pytest.fixture
def servers() -> Iterator[Servers]:
    """A webhook receiver, a fake Slack Web API and an SMTP server, each on 127.0.0.1."""
    hook, slack = Receiver(), Receiver()
    http = [serve(hook), serve(slack, slack_token=SLACK_TOKEN)]
    smtp, mailbox = smtp_server()
    yield Servers(hook, slack, mailbox, smtp.port)
    smtp.stop()
    for server in http:
        server.shutdown()


@pytest.fixture
def worker(
    services_env: dict[str, str], settings: Any, tmp_path: Path, servers: Servers
) -> Iterator[Worker]:
    """A real worker whose email goes to this test's SMTP server: queues of its own (the
    session's worker knows no such server), its notification queue among them."""
    queue = f"agentweb-held-{uuid.uuid4().hex[:8]}"
    host_queue = f"host.{queue}"
    settings.CELERY_TASK_DEFAULT_QUEUE, settings.AGENTWEB_NOTIFY_QUEUE = queue, ""
    env = {
        **services_env, "AGENTWEB_QUEUE": queue, "AGENTWEB_WORKER_QUEUE": host_queue,
        "AGENTWEB_NOTIFY_QUEUE": "", "AGENTWEB_BASE_URL": BASE_URL,
        "EMAIL_HOST": "127.0.0.1", "EMAIL_PORT": str(servers.smtp_port),
    }  # fmt: skip
    started = Worker(env, f"{queue},{host_queue},{queue}.notify", tmp_path / "worker.log")
    started.start()
    yield started
    started.wait_idle()
    started.stop()


def until(condition: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.02)


def test_a_held_command_effect_reaches_webhook_slack_and_email_within_seconds(
    worker: Worker, servers: Servers, alice: Api, workspace: Path
) -> None:
    receiver, slack, mailbox = servers.hook, servers.slack, servers.mailbox
    session = start_session(alice, workspace)
    routed = {"sessions": [session["id"]]}
    Channel.objects.create(
        name="hook", kind="webhook", url=f"{receiver.url}/hook", secret=receiver.secret, **routed
    )
    Channel.objects.create(
        name="team", kind="slack", url=f"{slack.url}/api", secret=SLACK_TOKEN,
        slack_channel="C0TEAM", **routed,
    )  # fmt: skip
    Channel.objects.create(name="mail", kind="email", recipients=["ops@example.com"], **routed)

    # 300 changed lines: over require_approval_above (200), under max_diff_lines (500)
    ran = call(alice, session, "run_command", command="seq 1 300 > big.txt")
    why = {key: ran.get(key) for key in ("status", "reason", "rule", "result")}
    assert ran["status"] == "succeeded", why  # a dict's repr is cut short
    held = ToolCall.objects.get(session_id=session["id"], tool="apply_command_effect")
    assert (held.status, held.changed_lines) == ("awaiting_approval", 300)
    assert f"tool call {held.pk}" in ran["result"]
    assert not (Path(session["workspace"]) / "big.txt").exists()

    until(lambda: bool(receiver.received), "the webhook's message")
    until(lambda: bool(slack.received), "the Slack message")
    until(lambda: bool(mailbox.messages), "the email")
    born = held.created_at.timestamp()
    delays = {
        "webhook": receiver.received[0].at - born,
        "slack": slack.received[0].at - born,
        "email": mailbox.arrived[0] - born,
    }
    print(f"held effect {held.pk} reached its channels after (s): {delays}")
    assert all(0 <= delay < WITHIN_SECONDS for delay in delays.values()), delays

    (hooked,) = receiver.received
    body = hooked.json()
    assert hooked.signed and body["event"] == "tool_call.waiting"
    assert body["tool_call"]["id"] == held.pk
    assert body["tool_call"]["url"] == f"{BASE_URL}/approvals/#call-{held.pk}"

    (posted,) = slack.received
    assert posted.path == "/api/chat.postMessage" and posted.json()["channel"] == "C0TEAM"
    assert f"#call-{held.pk}" in posted.body.decode()

    (mail,) = mailbox.messages
    assert mail["To"] == "ops@example.com" and f"Tool call {held.pk}" in mail["Subject"]
    assert f"{BASE_URL}/approvals/#call-{held.pk}" in parts_of(mail)["text/plain"]
