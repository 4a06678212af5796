"""Sending one delivery: build its message, send it by its channel's kind, record the
attempt, and retry with backoff on a timeout, a 5xx or a 429 (never on another 4xx).

Runs in a worker (`tasks.deliver_notification`). It never raises: whatever happens is
an attempt row an admin reads, and a channel failing in a row is flagged on every
reviewer's page until it delivers again.
"""

from __future__ import annotations

import json
import logging
import smtplib
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.mail import EmailMultiAlternatives, get_connection
from django.db.models import F
from django.utils import timezone

from tools_app.core.notify import messages, outbound, signing
from tools_app.core.notify.messages import CallFacts, Message
from tools_app.core.notify.outbound import SendFailed
from tools_app.core.tools import redaction, secret_files
from tools_app.models import Channel, Delivery, DeliveryAttempt, ToolCall

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 6
BACKOFF_SECONDS = (10, 30, 90, 270, 810)
LEASE = timedelta(minutes=2)
SLACK_API = "https://slack.com/api"
State = Delivery.State
Kind = Channel.Kind


def delivery_send(*, delivery_id: int, now: Any = None) -> str:
    """Try once (if still due); the delivery's status afterwards."""
    now = now or timezone.now()
    claimed = Delivery.objects.filter(
        pk=delivery_id, state__in=(State.PENDING, State.RETRYING)
    ).exclude(next_attempt_at__gt=now)
    if not claimed.update(next_attempt_at=now + LEASE, attempts=F("attempts") + 1):
        return str(Delivery.objects.filter(pk=delivery_id).values_list("state", flat=True).first())
    delivery = Delivery.objects.select_related("channel", "tool_call__session__policy").get(
        pk=delivery_id
    )
    started = time.monotonic()
    try:
        ref, code = _send(delivery)
    except SendFailed as failure:
        return _failed(delivery, failure, started, now)
    except Exception as error:  # a bug or a surprise: recorded, never retried blindly
        logger.exception("notification %s failed", delivery_id)
        return _failed(delivery, SendFailed(f"internal error: {error}", retry=False), started, now)
    _attempt(delivery, started, ok=True, status_code=code)
    Delivery.objects.filter(pk=delivery.pk).update(
        state=State.SENT, sent_at=timezone.now(), next_attempt_at=None, external_ref=ref
    )
    Channel.objects.filter(pk=delivery.channel_id).update(failures=0, failing_since=None)
    return State.SENT


def delivery_send_again(*, delivery: Delivery) -> None:
    """An admin's "send again": a fresh try, whatever became of the last ones."""
    from tools_app.services.notifications import delivery_enqueue

    Delivery.objects.filter(pk=delivery.pk).update(state=State.PENDING, next_attempt_at=None)
    delivery_enqueue(delivery_id=delivery.pk)


def _failed(delivery: Delivery, failure: SendFailed, started: float, now: Any) -> str:
    _attempt(delivery, started, ok=False, status_code=failure.code, error=str(failure))
    tries = delivery.attempts
    if failure.retry and tries < MAX_ATTEMPTS:
        wait = BACKOFF_SECONDS[min(tries, len(BACKOFF_SECONDS)) - 1]
        state, next_at = State.RETRYING, now + timedelta(seconds=wait)
    else:
        state, next_at = State.FAILED, None
    Delivery.objects.filter(pk=delivery.pk).update(state=state, next_attempt_at=next_at)
    Channel.objects.filter(pk=delivery.channel_id).update(failures=F("failures") + 1)
    Channel.objects.filter(pk=delivery.channel_id, failing_since__isnull=True).update(
        failing_since=now
    )
    return state


def _attempt(
    delivery: Delivery, started: float, *, ok: bool, status_code: int | None, error: str = ""
) -> None:
    DeliveryAttempt.objects.create(
        delivery=delivery, ok=ok, status_code=status_code, error=error[:2000],
        milliseconds=int((time.monotonic() - started) * 1000),
    )  # fmt: skip


# --- the message ----------------------------------------------------------------------------


def message_for(delivery: Delivery) -> Message:
    if delivery.event == messages.EVENTS[3]:  # digest
        calls = ToolCall.objects.filter(pk__in=delivery.calls).select_related("session__policy")
        return Message(delivery.event, [call_facts(call) for call in calls])
    assert delivery.tool_call is not None
    return Message(delivery.event, [call_facts(delivery.tool_call)])


def call_facts(call: ToolCall) -> CallFacts:
    """The call as a message tells it: a summary redacted like a tool result."""
    summary = messages.summarize(call.tool, call.args, call.changed_lines)
    human = (
        getattr(call, "human", None) if call.status != ToolCall.Status.AWAITING_APPROVAL else None
    )
    decision = None
    if human is not None:
        by = human.user.get_username() if human.user else "someone"
        decision = {
            "by": by,
            "decision": human.decision,
            "reason": _redact(call, human.reason),
            "at": human.created_at.isoformat(),
        }
    return CallFacts(
        id=call.pk,
        tool=call.tool,
        session=call.session_id,
        task=_redact(call, call.session.task)[:200],
        policy=call.session.policy.name,
        status=call.status,
        reason=_redact(call, call.reason),
        rule=call.rule,
        summary=_redact(call, summary),
        url=card_url(call.pk),
        waiting_since=call.created_at.isoformat(),
        expires_at=call.expires_at.isoformat() if call.expires_at else "",
        decision=decision,
        outcome=call.outcome,
        outcome_detail=_redact(call, call.outcome_detail),
        held_call=call.held_call_id,
        network=call.network,
    )


def card_url(call_id: int) -> str:
    return f"{settings.AGENTWEB_BASE_URL.rstrip('/')}/approvals/#call-{call_id}"


def _redact(call: ToolCall, text: str) -> str:
    workspace = Path(call.session.workspace) if call.session.workspace else None
    if workspace is None or not text or not workspace.is_dir():
        return text
    files = secret_files.secret_files(workspace, call.session.policy.secret_paths, strict=False)
    return redaction.redact(text, redaction.secret_values(workspace, files))


# --- by kind --------------------------------------------------------------------------------


def _send(delivery: Delivery) -> tuple[str, int | None]:
    """(the reference to remember, the HTTP status) or SendFailed."""
    channel = delivery.channel
    message = message_for(delivery)
    if channel.kind == Kind.WEBHOOK:
        return "", _send_webhook(channel, delivery, message)
    if channel.kind == Kind.SLACK:
        return _send_slack(channel, delivery, message)
    _send_email(delivery, message)
    return "", None


def _send_webhook(channel: Channel, delivery: Delivery, message: Message) -> int:
    sent_at = int(time.time())
    stamp = timezone.now().isoformat()
    body = messages.webhook_body(message, delivery=delivery.pk, sent_at=stamp)
    headers = {
        "Content-Type": "application/json",
        signing.SIGNATURE_HEADER: signing.webhook_signature(channel.secret, sent_at, body),
        "X-Agentweb-Event": message.event,
        "X-Agentweb-Delivery": str(delivery.pk),
    }
    return outbound.post(
        channel.url, body, headers, settings.AGENTWEB_NOTIFY_HOSTS,
        private_hosts=settings.AGENTWEB_NOTIFY_PRIVATE_HOSTS,
    ).code  # fmt: skip


def _send_slack(channel: Channel, delivery: Delivery, message: Message) -> tuple[str, int]:
    payload = messages.slack_payload(message, interactive=channel.interactive)
    hosts = settings.AGENTWEB_NOTIFY_HOSTS
    private = settings.AGENTWEB_NOTIFY_PRIVATE_HOSTS
    if not channel.secret:  # an incoming webhook: post only
        body = json.dumps(payload).encode()
        answer = outbound.post(
            channel.url, body, {"Content-Type": "application/json"}, hosts, private_hosts=private
        )
        return "", answer.code
    base = (channel.url or SLACK_API).rstrip("/")
    earlier = _posted_ref(delivery) if delivery.event == messages.EVENTS[1] else ""
    if earlier:
        slack_channel, _, ts = earlier.partition(":")
        method, payload = "chat.update", {**payload, "channel": slack_channel, "ts": ts}
    else:
        method, payload = "chat.postMessage", {**payload, "channel": channel.slack_channel}
    headers = {
        "Content-Type": "application/json; charset=utf-8",
        "Authorization": f"Bearer {channel.secret}",
    }
    answer = outbound.post(
        f"{base}/{method}", json.dumps(payload).encode(), headers, hosts, private_hosts=private
    )
    data = _slack_answer(answer.body)
    return f"{data.get('channel', '')}:{data.get('ts', '')}", answer.code


def _posted_ref(delivery: Delivery) -> str:
    """Where this channel posted about the call: the message a decision edits."""
    earlier = (
        Delivery.objects.filter(
            channel=delivery.channel, tool_call=delivery.tool_call, state=State.SENT
        )
        .exclude(external_ref="")
        .exclude(external_ref=":")
        .order_by("id")
        .values_list("external_ref", flat=True)
        .first()
    )
    return earlier or ""


def _slack_answer(body: str) -> dict[str, Any]:
    try:
        data = json.loads(body)
    except ValueError:
        raise SendFailed(
            f"Slack answered with something else than JSON: {body[:200]}", retry=True
        ) from None
    if not isinstance(data, dict) or not data.get("ok"):
        error = data.get("error", "unknown") if isinstance(data, dict) else "unknown"
        raise SendFailed(f"Slack refused it: {error}", retry=error == "ratelimited")
    return data


def _send_email(delivery: Delivery, message: Message) -> None:
    subject, text, html = messages.email_parts(message)
    email = EmailMultiAlternatives(subject, text, settings.DEFAULT_FROM_EMAIL, [delivery.address])
    email.attach_alternative(html, "text/html")
    try:
        get_connection(timeout=settings.EMAIL_TIMEOUT).send_messages([email])
    except smtplib.SMTPResponseException as error:
        code = error.smtp_code
        raise SendFailed(
            f"SMTP {code}: {error.smtp_error!r}", retry=code < 500, code=code
        ) from None
    except smtplib.SMTPRecipientsRefused as error:
        raise SendFailed(f"recipient refused: {error.recipients}", retry=False) from None
    except (smtplib.SMTPException, OSError) as error:
        raise SendFailed(f"mail server: {error}", retry=True) from None
