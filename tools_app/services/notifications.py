"""Who hears about a waiting call: routing to channels, the deliveries it makes, and the
sweep's part (retries that are due, lost sends, escalations, digests).

`notify_moved` runs inside a tool call's move or birth (lifecycle), so deliveries exist
exactly when the move does; their sending is queued after the commit and runs in a worker,
never in the request. A broker that is down delays a message, never the move: the
sweep sends what was never sent.
"""

from __future__ import annotations

import fnmatch
import logging
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from tools_app import access
from tools_app.errors import Invalid, Unavailable
from tools_app.models import Channel, Delivery, NotifyPreference, ToolCall
from tools_app.selectors.decisions import approved_by_person
from tools_app.services.queueing import notify_queue, task_send

logger = logging.getLogger(__name__)

DELIVER = "tools_app.tasks.deliver_notification"
WAITING, DECIDED, ESCALATED, DIGEST, FINISHED = (
    "tool_call.waiting", "tool_call.decided", "tool_call.escalated", "digest",
    "tool_call.finished",
)  # fmt: skip
LOST_AFTER = timedelta(seconds=30)
DECIDING_MOVES = frozenset({"decide_approve", "decide_deny", "expire", "cancel", "abandon"})
FINISHED_RUNS = frozenset({ToolCall.Status.SUCCEEDED, ToolCall.Status.FAILED})
State = Delivery.State
Mode = NotifyPreference.Mode


def notify_moved(call: ToolCall, move: str, previous: str) -> None:
    """A call began or stopped waiting for a person: tell the channels that route it.
    A call born waiting (`previous` empty: a held command effect) began too. A decided
    call's run ended: tell the webhooks that heard the decision."""
    waiting = ToolCall.Status.AWAITING_APPROVAL
    if call.status == waiting and previous != waiting:
        deliveries_create(call=call, event=WAITING, channels=channels_for(call, escalation=False))
    elif move in DECIDING_MOVES and previous == ToolCall.Status.AWAITING_APPROVAL:
        told = Channel.objects.filter(
            deliveries__tool_call=call, deliveries__event__in=(WAITING, ESCALATED)
        ).exclude(kind=Channel.Kind.EMAIL)
        deliveries_create(call=call, event=DECIDED, channels=list(told.distinct()))
    elif move == "finish" and call.status in FINISHED_RUNS and approved_by_person(call):
        # A webhook told that a person decided hears what the run then changed (its
        # outcome): the decision alone does not say whether anything was applied. Known
        # on the running call already: no statement on the hot path of allowed calls.
        told = Channel.objects.filter(
            kind=Channel.Kind.WEBHOOK, deliveries__tool_call=call, deliveries__event=DECIDED
        )
        deliveries_create(call=call, event=FINISHED, channels=list(told.distinct()))


def channels_for(call: ToolCall, *, escalation: bool) -> list[Channel]:
    """The enabled channels whose routing (projects, policies, sessions, rules) takes
    this call."""
    found = Channel.objects.filter(enabled=True, escalation=escalation).prefetch_related(
        "projects", "policies", "groups"
    )
    return [channel for channel in found if _routes(channel, call)]


def _routes(channel: Channel, call: ToolCall) -> bool:
    projects = {project.pk for project in channel.projects.all()}
    if projects and call.session.project_id not in projects:
        return False
    policies = {policy.pk for policy in channel.policies.all()}
    if policies and call.session.policy_id not in policies:
        return False
    if channel.sessions and call.session_id not in {int(s) for s in channel.sessions}:
        return False
    return not channel.rules or any(fnmatch.fnmatchcase(call.rule, g) for g in channel.rules)


def deliveries_create(*, call: ToolCall, event: str, channels: list[Channel]) -> list[Delivery]:
    """One delivery per channel (per address for email), each sent after the commit."""
    made: list[Delivery] = []
    for channel in channels:
        if channel.kind == Channel.Kind.EMAIL:
            made += _email_deliveries(channel, call, event)
        else:
            made.append(Delivery.objects.create(channel=channel, tool_call=call, event=event))
    for delivery in made:
        if delivery.state == State.PENDING:
            delivery_enqueue(delivery_id=delivery.pk)
    return made


def _email_deliveries(channel: Channel, call: ToolCall, event: str) -> list[Delivery]:
    """The channel's own addresses now; each person it tells (reviewers, members of its
    groups) as they prefer: now, in their digest, or not at all."""
    made = [
        Delivery.objects.create(channel=channel, tool_call=call, event=event, address=address)
        for address in channel.recipients
    ]
    told = set(channel.recipients)
    for user, mode in _people_for(channel, call):
        if mode == Mode.OFF or user.email in told:
            continue
        told.add(user.email)
        state = State.HELD if mode == Mode.DIGEST else State.PENDING
        made.append(
            Delivery.objects.create(
                channel=channel, tool_call=call, event=event, address=user.email, state=state
            )
        )
    return made


def _people_for(channel: Channel, call: ToolCall) -> list[tuple[Any, str]]:
    """(person, their mode) for everyone with an address this email channel tells about
    `call`: reviewers who may decide it (`to_reviewers`), and members of its groups who
    may see it; nobody learns of a call they could not open."""
    users = get_user_model().objects.filter(is_active=True).exclude(email="")
    people = []
    if channel.to_reviewers:
        people += [u for u in users if access.may_decide(u, "session", call, approve=False)]
    groups = list(channel.groups.all())
    if groups:
        members = users.filter(groups__in=groups).distinct()
        people += [user for user in members if access.may_see_session(user, call.session)]
    modes = dict(NotifyPreference.objects.values_list("user_id", "mode"))
    return [(user, modes.get(user.pk, Mode.IMMEDIATELY)) for user in people]


def delivery_enqueue(*, delivery_id: int) -> None:
    """Send after the commit; a broker that is down leaves it for the sweep."""

    def send() -> None:
        try:
            task_send(DELIVER, delivery_id, queue=notify_queue())
        except Unavailable:
            logger.warning(
                "notification %s not queued (broker down); the sweep sends it", delivery_id
            )

    transaction.on_commit(send)


# --- the sweep's part ---------------------------------------------------------------------


def notify_sweep(*, now: Any = None) -> int:
    """Due retries and lost sends, escalations past their deadline, digests due."""
    now = now or timezone.now()
    return _send_due(now) + notify_escalate(now=now) + notify_digests(now=now)


def _send_due(now: Any) -> int:
    due = Q(state=State.RETRYING, next_attempt_at__lte=now) | Q(
        state=State.PENDING, attempts=0, created_at__lte=now - LOST_AFTER
    )
    sent = 0
    for delivery_id in list(Delivery.objects.filter(due).values_list("pk", flat=True)[:200]):
        # claimed by this sweep (one conditional update), then due for the worker at once
        if Delivery.objects.filter(due, pk=delivery_id).update(next_attempt_at=None):
            delivery_enqueue(delivery_id=delivery_id)
            sent += 1
    return sent


def notify_escalate(*, now: Any = None) -> int:
    """Calls still waiting past their policy's escalate_after_seconds: told once to the
    escalation channels."""
    now = now or timezone.now()
    waiting = ToolCall.objects.filter(
        status=ToolCall.Status.AWAITING_APPROVAL, session__policy__escalate_after_seconds__gt=0
    ).select_related("session__policy")
    count = 0
    for call in waiting:
        if call.created_at > now - timedelta(seconds=call.session.policy.escalate_after_seconds):
            continue
        count += _escalate_once(call)
    return count


def _escalate_once(call: ToolCall) -> int:
    """The call's row is locked first, so two sweeps at once escalate it once."""
    with transaction.atomic():
        ToolCall.objects.select_for_update().filter(pk=call.pk).first()
        if Delivery.objects.filter(tool_call=call, event=ESCALATED).exists():
            return 0
        channels = channels_for(call, escalation=True)
        return len(deliveries_create(call=call, event=ESCALATED, channels=channels))


def notify_digests(*, now: Any = None) -> int:
    """For each person whose digest is due, one message collecting what was held."""
    now = now or timezone.now()
    count = 0
    for preference in NotifyPreference.objects.filter(mode=Mode.DIGEST).select_related("user"):
        last = preference.last_digest_at
        if last is None:  # chosen elsewhere (the admin): its first period starts now
            NotifyPreference.objects.filter(pk=preference.pk).update(last_digest_at=now)
            continue
        if last > now - timedelta(minutes=preference.digest_minutes):
            continue
        count += _digest_for(preference, now)
    return count


def _digest_for(preference: NotifyPreference, now: Any) -> int:
    held = Delivery.objects.filter(state=State.HELD, address=preference.user.email)
    count = 0
    with transaction.atomic():
        claim = {"pk": preference.pk, "last_digest_at": preference.last_digest_at}
        if not NotifyPreference.objects.filter(**claim).update(last_digest_at=now):
            return 0  # another sweep sent this period's digest
        for channel_id in set(held.values_list("channel_id", flat=True)):
            rows = held.filter(channel_id=channel_id)
            calls = sorted(set(rows.values_list("tool_call_id", flat=True)) - {None})
            rows.update(state=State.SENT, sent_at=now)
            digest = Delivery.objects.create(
                channel_id=channel_id, event=DIGEST, address=preference.user.email, calls=calls
            )
            delivery_enqueue(delivery_id=digest.pk)
            count += 1
    return count


# --- each person's preference -----------------------------------------------------------------

DIGEST_MINUTES = (5, 1440)  # the shortest and the longest digest interval


def notify_preference_problems(
    *, mode: str, digest_minutes: int | None, email: str
) -> dict[str, str]:
    """What is wrong with a preference, by field ({} when nothing): the self-service
    page shows each on its field, and `notify_preference_set` refuses any."""
    problems: dict[str, str] = {}
    if mode not in Mode.values:
        problems["mode"] = f"{mode!r} is not one of {', '.join(Mode.values)}."
    low, high = DIGEST_MINUTES
    if mode == Mode.DIGEST and not (digest_minutes and low <= digest_minutes <= high):
        problems["digest_minutes"] = f"A digest comes every {low} to {high} minutes."
    if email:
        try:
            validate_email(email)
        except ValidationError:
            problems["email"] = f"{email!r} is not an email address."
    elif mode in (Mode.IMMEDIATELY, Mode.DIGEST):
        problems["email"] = "Give the address to tell you at, or turn notifications off."
    return problems


def notify_preference_set(
    *, user: Any, mode: str, digest_minutes: int | None, email: str
) -> NotifyPreference:
    """A person's own choice: how email channels tell them, and at which address. Choosing
    the digest starts its first period now; leaving it sends what it holds now; a new
    address takes what is held with it."""
    problems = notify_preference_problems(mode=mode, digest_minutes=digest_minutes, email=email)
    if problems:
        raise Invalid(" ".join(problems.values()))
    with transaction.atomic():
        preference, _ = NotifyPreference.objects.select_for_update().get_or_create(user=user)
        held = Delivery.objects.filter(state=State.HELD, address=user.email)
        if email != user.email:
            held.update(address=email)
            get_user_model().objects.filter(pk=user.pk).update(email=email)
            user.email = email
        leaving_digest = preference.mode == Mode.DIGEST and mode != Mode.DIGEST
        if mode == Mode.DIGEST and preference.mode != Mode.DIGEST:
            preference.last_digest_at = timezone.now()
        preference.mode = mode
        preference.digest_minutes = digest_minutes or preference.digest_minutes
        preference.save()
        if leaving_digest:
            _digest_for(preference, timezone.now())
    return preference
