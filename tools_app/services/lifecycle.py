"""Where a tool call's or a session's status changes: the one place that writes either.

Each allowed move is declared below (from which statuses, to which, who may cause it,
what follows it); a caller names who it acts for, and a move that actor may not cause
is a programming error, refused before anything is written. A call's birth is declared
the same way (its first status, who, what follows): every way into a status runs that
status's follow-ups, whether the call moved there or was born there.
A move claims by one conditional update: 0 rows means another process moved first and
the caller answers as before (Conflict, or nothing). What belongs to a move happens in
the same transaction — the events (published once it commits), the session's status,
waking its agent — and a held effect nobody will apply is dropped on every way out of
`awaiting_approval` that is not an approval.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q

from tools_app.core.tools.catalogue import EFFECT_TOOL
from tools_app.core.tools.effect_apply import drop_held_effect
from tools_app.core.tools.errors import ToolError
from tools_app.live import events
from tools_app.models import AgentSession, ToolCall
from tools_app.ops import metrics
from tools_app.selectors.decisions import approved_by_person, mark_judged_by_nobody
from tools_app.services.notifications import notify_moved
from tools_app.services.queueing import agent_turn_enqueue
from tools_app.sql import rows

Status = ToolCall.Status
SessionStatus = AgentSession.Status

REFRESH = "refresh_session"  # `waiting` <-> `running`, then wake the agent
WAKE = "wake_agent"  # an agent's call changed outside its turn
AFTER_RUN = "after_run"  # a person's approval refreshes the session, else WAKE
NOTHING = ""

# Who may cause a move.
POLICY = "policy"  # the policy's verdict, in the worker that judged the call
PERSON = "person"  # a reviewer's decision, a person cancelling a session
CLOCK = "clock"  # a deadline passed (the periodic sweep)
WORKER = "worker"  # the worker that runs the call or the agent's turn, or recovers it
AGENT = "agent"  # an agent sending a call, or reporting on one it ran itself (the hooks)
CALLS = "its calls"  # a session following its calls (waiting while one awaits a person)


@dataclass(frozen=True)
class Move:
    """An allowed change of status: from any of `sources` to one of `targets`, caused by
    one of `by`."""

    sources: frozenset[str]
    targets: frozenset[str]
    by: frozenset[str]
    after: str = NOTHING
    drops_held_effect: bool = False  # a held effect nobody will apply is forgotten
    passes_through: tuple[str, ...] = ()  # statuses announced before the target


def _move(sources: Iterable[str], targets: Iterable[str], by: Iterable[str], **kwargs: Any) -> Move:
    return Move(frozenset(sources), frozenset(targets), frozenset(by), **kwargs)


OPEN = {Status.PENDING, Status.AWAITING_APPROVAL, Status.APPROVED, Status.RUNNING}

TOOL_CALL_MOVES: dict[str, Move] = {
    "judge_wait": _move({Status.PENDING}, {Status.AWAITING_APPROVAL}, {POLICY}, after=REFRESH),
    "judge_end": _move({Status.PENDING}, {Status.DENIED, Status.FAILED}, {POLICY}, after=WAKE),
    # allowed by the policy: claimed to run here and now, announced as approved first
    "judge_run": _move(
        {Status.PENDING}, {Status.RUNNING}, {POLICY}, passes_through=(Status.APPROVED,)
    ),
    # a gateway call the policy allowed: the hook answers `allow` in the same transaction,
    # so it is the agent's to run from here on; announced as approved first
    "gateway_allow": _move(
        {Status.PENDING}, {Status.RUNNING}, {POLICY}, passes_through=(Status.APPROVED,)
    ),
    "decide_approve": _move({Status.AWAITING_APPROVAL}, {Status.APPROVED}, {PERSON}, after=REFRESH),
    # one person's yes towards a quorum, or an edit that starts its count again: the call
    # still waits for the others, announced again so that every card shows who approved
    "approve_partly": _move({Status.AWAITING_APPROVAL}, {Status.AWAITING_APPROVAL}, {PERSON}),
    "decide_deny": _move(
        {Status.AWAITING_APPROVAL},
        {Status.DENIED},
        {PERSON},
        after=REFRESH,
        drops_held_effect=True,
    ),
    "expire": _move(
        {Status.AWAITING_APPROVAL},
        {Status.EXPIRED},
        {CLOCK},
        after=REFRESH,
        drops_held_effect=True,
    ),
    "cancel": _move(OPEN, {Status.CANCELLED}, {PERSON}, drops_held_effect=True),
    # a gateway call whose agent stopped waiting (its hook request ended): nothing would
    # run an approval, so the card goes
    "abandon": _move(
        {Status.AWAITING_APPROVAL},
        {Status.CANCELLED},
        {AGENT},
        after=REFRESH,
        drops_held_effect=True,
    ),
    "claim_run": _move({Status.APPROVED}, {Status.RUNNING}, {WORKER, AGENT}),
    "finish": _move(
        {Status.RUNNING}, {Status.SUCCEEDED, Status.FAILED}, {WORKER, AGENT}, after=AFTER_RUN
    ),
    "recover_rerun": _move({Status.RUNNING}, {Status.APPROVED}, {WORKER}),
    "recover_fail": _move({Status.RUNNING}, {Status.FAILED}, {WORKER}, after=REFRESH),
}

LIVE = {SessionStatus.QUEUED, SessionStatus.RUNNING, SessionStatus.WAITING}
SESSION_MOVES: dict[str, Move] = {
    "start": _move({SessionStatus.QUEUED}, {SessionStatus.RUNNING}, {WORKER}),
    "wait": _move({SessionStatus.RUNNING}, {SessionStatus.WAITING}, {CALLS}),
    "resume": _move({SessionStatus.WAITING}, {SessionStatus.RUNNING}, {CALLS}),
    "finish": _move(LIVE, AgentSession.FINISHED_STATUSES, {WORKER, AGENT, PERSON}),
    "close_cli": _move(LIVE, {SessionStatus.DONE}, {PERSON}),
}


@dataclass(frozen=True)
class Birth:
    """A way a call comes to be: in `status`, caused by one of `by`, announced by `event`."""

    status: str
    by: frozenset[str]
    event: str
    after: str = NOTHING


TOOL_CALL_BIRTHS: dict[str, Birth] = {
    # an agent's call (agentweb's own loop, an external agent, a gateway hook, the command
    # line), stored before the policy judges it
    "receive": Birth(Status.PENDING, frozenset({AGENT}), "tool_call.received"),
    # what a command changed, held whole for a person: its own call, waiting from birth
    "hold_effect": Birth(
        Status.AWAITING_APPROVAL, frozenset({POLICY}), "tool_call.awaiting_approval", REFRESH
    ),
}


def _target(table: dict[str, Move], move: str, to: str | None, by: str) -> tuple[Move, str]:
    spec = table[move]
    if by not in spec.by:
        raise ValueError(f"Move {move!r} is caused by {sorted(spec.by)}, not by {by!r}.")
    if to is None and len(spec.targets) == 1:
        (to,) = spec.targets
    if to not in spec.targets:
        raise ValueError(f"Move {move!r} cannot end in {to!r}.")
    return spec, to


def tool_call_move(
    call: ToolCall,
    move: str,
    *,
    by: str,
    to: str | None = None,
    source: str | None = None,
    where: Q | None = None,
    then: Callable[[ToolCall], None] | None = None,
    first: Sequence[events.Item] = (),
    **fields: Any,
) -> bool:
    """Move `call` once; False (nothing written) when it is no longer where the move
    starts. `source` narrows the start to the status the caller read; `where` adds
    conditions; `then` runs in the same transaction right after a successful claim;
    `first` are events stored before the move's own, in its batch. `call` is updated
    in place."""
    spec, target = _target(TOOL_CALL_MOVES, move, to, by)
    sources = spec.sources if source is None else spec.sources & {source}
    if (
        source is None
        and where is None
        and then is None
        and _only_events_follow_move(call, spec, target)
    ):
        moved = _moved_in_one_statement(call, move, spec, target, first, fields)
        if moved is not None:
            return moved
    with transaction.atomic(savepoint=False):  # inside a caller's transaction: part of it
        if not _claim(call.pk, sources, where, {**fields, "status": target}):
            return False
        previous = _moved_in_place(call, target, fields)
        if then is not None:
            then(call)
        events.tool_call_events(call, [*spec.passes_through, target], first=first)
        _after(call, spec.after)
        notify_moved(call, move, previous)
        metrics.tool_call_moved(call, move)
    if spec.drops_held_effect and (source or previous) == Status.AWAITING_APPROVAL:
        effect_discard(call=call)
    return True


def _only_events_follow_move(call: ToolCall, spec: Move, target: str) -> bool:
    """On PostgreSQL, nothing follows the move but its events: the call neither waits nor
    waited (no channel to tell, no held effect to drop), no session to refresh and no
    agent to wake (an allowed call's run ending, as a gateway's PostToolUse reports it)."""
    if connection.vendor != "postgresql" or Status.AWAITING_APPROVAL in {call.status, target}:
        return False
    if spec.after == AFTER_RUN:  # a person's approval refreshes the session, else WAKE
        return not call.agent_key and not approved_by_person(call)
    return spec.after == NOTHING


def _moved_in_one_statement(
    call: ToolCall, move: str, spec: Move, target: str, first: Sequence[events.Item],
    fields: dict[str, Any],
) -> bool | None:  # fmt: skip
    """The claim and its events in one statement (no transaction of its own); whether the
    call moved, or None when a value needs the ORM (an expression)."""
    values = {**fields, "status": target}
    claim = rows.update_if_sql(
        ToolCall, call.pk, values, column="status", among=spec.sources, returning=True
    )
    if claim is None:
        return None
    after = copy.copy(call)  # the events say the call as the move leaves it
    _moved_in_place(after, target, fields)
    items = [*first, *events.tool_call_items(after, [*spec.passes_through, target])]
    if events.call_moved_with_events(call, claim, items) is None:
        return False
    _moved_in_place(call, target, fields)
    metrics.tool_call_moved(call, move)
    return True


def _moved_in_place(call: ToolCall, target: str, fields: dict[str, Any]) -> str:
    """`call` as a move to `target` with `fields` leaves it; the status it had."""
    previous = call.status
    for name, value in {**fields, "status": target}.items():
        setattr(call, name, value)
    if previous == Status.PENDING and target != Status.AWAITING_APPROVAL:
        mark_judged_by_nobody(call)  # judged now, run or ended: by nobody
    return previous


def _claim(pk: int, sources: Iterable[str], where: Q | None, values: dict[str, Any]) -> int:
    """The conditional update of a move: in SQL written once when it can be (a hook's
    judge-and-claim), else by the ORM (a `where`, an expression among the values)."""
    if where is None:
        claimed = rows.update_if(ToolCall, pk, values, column="status", among=sources)
        if claimed is not None:
            return claimed
    return ToolCall.objects.filter(where or Q(), pk=pk, status__in=sources).update(**values)


def tool_call_create(
    birth: str, *, by: str, session: AgentSession, announce: bool = True, **fields: Any
) -> ToolCall:
    """Create a call in its birth's status, in the caller's transaction, with what follows
    any way into that status: its event, the session's status, the channels told of a
    call that waits. `announce=False`: the caller stores the event (`tool_call_item`) in
    the batch of the move it makes at once (`first=`), one publish for both."""
    spec = _birth(birth, by)
    with transaction.atomic(savepoint=False):
        call = ToolCall.objects.create(session=session, status=spec.status, **fields)
        _born(call, birth, spec, announce)
    return call


def tool_call_create_unless_taken(
    birth: str, *, by: str, session: AgentSession, announce: bool = True, **fields: Any
) -> ToolCall | None:
    """`tool_call_create`, or None (nothing written, the caller's transaction usable)
    when a call already holds one of its unique keys (the same tool use, sent twice)."""
    spec = _birth(birth, by)
    call = ToolCall(session=session, status=spec.status, **fields)
    with transaction.atomic(savepoint=False):
        if not rows.insert_unless_taken(call):
            return None
        _born(call, birth, spec, announce)
    return call


@dataclass(frozen=True)
class Judged:
    """A verdict on a call not yet stored: the move it makes first, where to, and the
    fields it then has."""

    move: str
    to: str | None
    fields: dict[str, Any]


def tool_call_create_judged(
    birth: str,
    *,
    by: str,
    session: AgentSession,
    judge: Callable[[ToolCall], Judged],
    judged_by: str,
    **fields: Any,
) -> ToolCall | None:
    """Make a call as `birth` makes it, have `judge` choose its first move before it is
    stored, then store it moved, its birth's event first in the move's batch. When
    nothing follows the two but their events (a gateway hook the policy allowed), the
    call and its events are one write: one statement on PostgreSQL, no transaction.
    None, and nothing written, when a call already holds one of its unique keys."""
    born = _birth(birth, by)
    call = ToolCall(session=session, status=born.status, **fields)
    first = [events.tool_call_item(call, born.event)]  # as it came, before it is judged
    judged = judge(call)
    spec, target = _target(TOOL_CALL_MOVES, judged.move, judged.to, judged_by)
    if born.status not in spec.sources:
        raise ValueError(f"Move {judged.move!r} cannot follow birth {birth!r}.")
    if _only_events_follow(born, spec, target):
        return _create_moved(call, judged, spec, target, first)
    with transaction.atomic(savepoint=False):
        stored = tool_call_create_unless_taken(
            birth, by=by, session=session, announce=False, **fields
        )
        if stored is not None:  # stored in this transaction: nobody else moved it since
            first = [events.tool_call_item(stored, born.event)]
            tool_call_move(
                stored, judged.move, by=judged_by, to=target, first=first, **judged.fields
            )
    return stored


def _only_events_follow(born: Birth, spec: Move, target: str) -> bool:
    """Neither the birth nor the move writes anything but events (`notify_moved` tells
    the channels only of calls that wait or waited)."""
    quiet = born.after == NOTHING and spec.after == NOTHING and not spec.drops_held_effect
    return quiet and Status.AWAITING_APPROVAL not in {born.status, target}


def _create_moved(
    call: ToolCall, judged: Judged, spec: Move, target: str, first: list[events.Item]
) -> ToolCall | None:
    previous = _moved_in_place(call, target, judged.fields)
    moved = events.tool_call_items(call, [*spec.passes_through, target])
    durable = settings.AGENTWEB_DURABLE_ALLOWED_CALLS  # else their record's commit is lazy
    if events.call_store_with_events(call, [*first, *moved], durable=durable) is None:
        return None
    notify_moved(call, judged.move, previous)
    metrics.tool_call_moved(call, judged.move)
    return call


def _birth(birth: str, by: str) -> Birth:
    spec = TOOL_CALL_BIRTHS[birth]
    if by not in spec.by:
        raise ValueError(f"Birth {birth!r} is caused by {sorted(spec.by)}, not by {by!r}.")
    return spec


def _born(call: ToolCall, birth: str, spec: Birth, announce: bool) -> None:
    if announce:
        events.tool_call_event(call, spec.event)
    _after(call, spec.after)
    notify_moved(call, birth, "")


def _after(call: ToolCall, after: str) -> None:
    if after == AFTER_RUN:
        after = REFRESH if approved_by_person(call) else WAKE
    if after == REFRESH:
        session_refresh_status(session_id=call.session_id)
    elif after == WAKE and call.agent_key:
        session_wake_agent(session_id=call.session_id)


def effect_store() -> Path:
    return Path(settings.AGENTWEB_VAR) / "effects"


def effect_discard(*, call: ToolCall) -> None:
    """Forget a held effect nobody will apply (denied, expired, cancelled)."""
    if call.tool == EFFECT_TOOL:
        with contextlib.suppress(ToolError):
            drop_held_effect(effect_store(), str(call.args.get("effect", "")))


def session_move(
    session_id: int, move: str, *, by: str, to: str | None = None,
    event: dict[str, Any] | None = None, where: Q | None = None, **fields: Any,
) -> bool:  # fmt: skip
    """Move a session once (one conditional update); False when it already moved on.
    `event`: the data of the `session.<status>` event published on commit, if any."""
    _, target = _target(SESSION_MOVES, move, to, by)
    sources = SESSION_MOVES[move].sources
    with transaction.atomic():
        claimed = AgentSession.objects.filter(
            where or Q(), pk=session_id, status__in=sources
        ).update(status=target, **fields)
        if claimed and event is not None:
            events.event_append(session_id=session_id, type=f"session.{target}", data=event)
    return bool(claimed)


def session_refresh_status(*, session_id: int) -> None:
    """`waiting` while a call awaits a person, `running` again once none does."""
    awaiting = ToolCall.objects.filter(
        session_id=session_id, status=Status.AWAITING_APPROVAL
    ).exists()
    move, new = ("wait", SessionStatus.WAITING) if awaiting else ("resume", SessionStatus.RUNNING)
    session_move(session_id, move, by=CALLS, event={"status": new})
    session_wake_agent(session_id=session_id)


# The session whose agent this thread is driving right now: its calls' changes need no
# wake-up, since the driver goes on by itself.
driving_session: ContextVar[int | None] = ContextVar("driving_session", default=None)


def session_wake_agent(*, session_id: int, force: bool = False) -> None:
    """Queue the next step of a session's agent once none of its calls is still open.

    Called on every change of a call's state; a turn task that finds nothing to do ends
    at once, so a spare wake-up costs one short task, never a second run of anything.
    `force` wakes a parent whose sub-agent ended (its spawn call is open until then)."""
    if driving_session.get() == session_id:
        return
    session = (
        AgentSession.objects.filter(
            pk=session_id, status__in=(SessionStatus.RUNNING, SessionStatus.WAITING)
        )
        .exclude(model="")
        .first()
    )
    if session is None:
        return
    open_calls = ToolCall.objects.filter(session_id=session_id, status__in=OPEN).exclude(
        agent_key=""
    )
    if force or not open_calls.exists():
        agent_turn_enqueue(session=session)
