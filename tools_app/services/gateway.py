"""The gateway's writes: sessions and calls of agents that run their own tools.

A gateway session is one per (token user, the agent's session id), with no clone and no
agent loop: the agent's machine runs the tools and asks first through a hook. Each tool
use is one ToolCall, found again by its `tool_use_id`; the policy judges it from its
input (`core.gateway.judging.prepare_native`). An allowed call is `approved` until the hook
answers (then `running`: the agent runs it) and its PostToolUse makes it `succeeded` or
`failed` (`gateway_ran.py`). Nothing here runs a tool.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import replace
from typing import Any

from django.db.models import Exists, OuterRef
from django.utils import timezone

from tools_app.core import engine
from tools_app.core.gateway.judging import prepare_native
from tools_app.core.policy.types import PolicySpec, Verdict
from tools_app.core.tools.jsonsafe import storable_args, storable_text
from tools_app.errors import ServiceError
from tools_app.live import events
from tools_app.models import AgentSession, Policy, Project, ToolCall
from tools_app.services.lifecycle import (
    AGENT,
    POLICY,
    Judged,
    tool_call_create_judged,
    tool_call_move,
)
from tools_app.services.policies import load_policy_or_denial
from tools_app.services.projects import project_choose, project_policy
from tools_app.services.tool_calls import session_counters, verdict_fields
from tools_app.sql.prepared import Prepared

Status = ToolCall.Status
Kind = AgentSession.Kind
GATEWAY_RUNNER = "gateway"  # a gateway call runs on the agent's machine, never here
# The statuses of a call the model has not been told about yet, which a retry with the
# same input may join (never a second card for one change).
JOINABLE = (
    Status.AWAITING_APPROVAL,
    Status.APPROVED,
    Status.DENIED,
    Status.EXPIRED,
    Status.CANCELLED,
)


def gateway_session_for(
    *,
    user: Any,
    external_id: str,
    cwd: str,
    agent_id: str = "",
    agent_type: str = "",
    policy: str = "",
    project: Project | None = None,
    native_tool: str = "",
) -> AgentSession:
    """The session of one agent session (made on its first event, in the token's
    `project`, else the one whose patterns claim `cwd`, else `default`; under the policy
    named, else its project's, else `default`; it keeps both); a sub-agent's calls go to
    a child session of it. Raises ServiceError for a policy name that does not exist.
    `native_tool`: the event's tool, of which the session read says, in the same query,
    whether it has a call a retry could join (`joinable_calls`)."""
    session = _session_get_or_create(
        user, external_id, cwd, native_tool, parent=None, policy=policy, project=project
    )
    if not agent_id:
        return session
    child = session_external_id(external_id, agent_id)
    label = agent_type or "sub-agent"
    return _session_get_or_create(user, child, cwd, native_tool, parent=session, label=label)


def session_external_id(external_id: str, agent_id: str) -> str:
    """The id of the session an agent session's event goes to: a sub-agent's is a child."""
    return f"{external_id}/{agent_id}" if agent_id else external_id


def _session_get_or_create(
    user: Any,
    external_id: str,
    cwd: str,
    native_tool: str,
    *,
    parent: AgentSession | None,
    label: str = "",
    policy: str = "",
    project: Project | None = None,
) -> AgentSession:
    found = _session_find(user, external_id, native_tool)
    if found is not None:
        return found
    if parent is not None:
        project, chosen = parent.project, parent.policy
    else:
        project = project or project_choose(user=user, repo=cwd)
        chosen = _project_policy(project, policy)
    made = _session_create(user, external_id, cwd, parent, label, chosen, project)
    if made is None:  # made by a concurrent event of the same session
        made = _session_find(user, external_id, native_tool)
        assert made is not None
    return made


def _sessions_wanted(creator: int, external_id: str, native_tool: str) -> Any:
    """The session with its policy, and whether it has a call of `native_tool` a retry
    could join (through the index `unanswered_calls_by_tool`): most have none, and then
    its calls are not read at all. No ORDER BY (`first()` adds one): one session per
    (creator, external id)."""
    joinable = ToolCall.objects.filter(
        session=OuterRef("pk"), native_tool=native_tool, hook_answered_at=None, status__in=JOINABLE
    )
    return (
        AgentSession.objects.select_related("policy")
        .filter(creator_id=creator, external_id=external_id, kind=Kind.GATEWAY)
        .annotate(joinable_calls=Exists(joinable))
        .order_by()[:1]
    )


# Compiled once (`sql/prepared.py`): every hook event asks it.
_SESSION = Prepared(AgentSession, _sessions_wanted, creator=int, external_id=str, native_tool=str)


def _session_find(user: Any, external_id: str, native_tool: str) -> AgentSession | None:
    found = _SESSION.models(creator=user.pk, external_id=external_id, native_tool=native_tool)
    return next(iter(found), None)


def _project_policy(project: Project, name: str) -> Policy:
    try:
        return project_policy(project, named=name)
    except ServiceError as exc:
        raise ServiceError(f"{exc} (the hook URL's `policy`)") from exc


def _session_create(
    user: Any,
    external_id: str,
    cwd: str,
    parent: AgentSession | None,
    label: str,
    policy: Policy,
    project: Project,
) -> AgentSession | None:
    """The new session with its `session.created` event, in one write (one statement on
    PostgreSQL); None when a concurrent event made it first (`INSERT … ON CONFLICT DO
    NOTHING`: no savepoint, which a caught IntegrityError needs in a caller's
    transaction)."""
    task = f"{label} of " if parent else ""
    session = AgentSession(
        task=storable_text(f"{task}an agent working in {cwd}"[:2000]),
        repo="",
        workspace="",
        kind=Kind.GATEWAY,
        status=AgentSession.Status.RUNNING,
        policy=policy,
        project=project,
        creator=user,
        parent=parent,
        depth=parent.depth + 1 if parent else 0,
        cwd=cwd,
        external_id=external_id,
        last_event_seq=events.FIRST_SEQ,  # its `session.created`
    )
    data = {"status": session.status, "task": session.task, "repo": "", "cwd": cwd}
    created = events.session_store_with_first_event(session, type="session.created", data=data)
    return None if created is None else session


# --- PreToolUse ------------------------------------------------------------------------


def gateway_call_receive(
    *,
    session: AgentSession,
    native_tool: str,
    native_input: dict[str, Any],
    tool_use_id: str,
    ran_in: str = "",
) -> ToolCall:
    """The call for one tool use, judged: the same call for a re-sent event, the earlier
    unanswered call for a retry of the same input, else a new one. `ran_in` is the
    event's `cwd`, where the agent runs it (the session keeps its first)."""
    known = _calls_known(session, native_tool, tool_use_id) if _may_join(session) else []
    existing = next((call for call in known if call.tool_use_id == tool_use_id), None)
    if existing is not None:
        return existing
    joined = _join_retry(known, native_input, tool_use_id)
    if joined is not None:
        return joined
    call = _call_judge_and_store(session, native_tool, native_input, tool_use_id, ran_in)
    if call is None:  # the same event, sent twice at once (or older than the window)
        return ToolCall.objects.get(session=session, tool_use_id=tool_use_id)
    return call


JOIN_WINDOW = 20  # the newest unanswered calls of the same tool a retry may join


def _calls_wanted(session: int, native_tool: str, tool_use_id: str) -> Any:
    """The call of this tool use, and the newest joinable ones, each read through an index
    of its own (`one_call_per_native_tool_use`, `unanswered_calls_by_tool`). As one
    `WHERE session AND (tool_use_id OR joinable)`, both databases read every call of the
    session: 1 ms per hook on SQLite and 2.3 ms of PostgreSQL's at 1,550 calls."""
    this_use = (  # an empty id names no tool use (and the index leaves those out)
        ToolCall.objects.filter(session_id=session, tool_use_id=tool_use_id)
        .exclude(tool_use_id="")
        .order_by()
    )
    joinable = (
        ToolCall.objects.filter(
            session_id=session, native_tool=native_tool, hook_answered_at=None, status__in=JOINABLE
        )
        .exclude(tool_use_id=tool_use_id)
        .order_by()
    )
    return this_use.union(joinable, all=True).order_by("-id")[: JOIN_WINDOW + 1]


_CALLS = Prepared(ToolCall, _calls_wanted, session=int, native_tool=str, tool_use_id=str)


def _may_join(session: AgentSession) -> bool:
    """The session, when read, had a call of this tool a retry could join (a session
    made by this event has none). Else its calls are not read: a re-sent event's call
    is met by the unique key of its tool use when stored (`_call_judge_and_store`), and
    a call a retry could join was stored before this event came, so it was there to
    read with the session."""
    return bool(getattr(session, "joinable_calls", False))


def _calls_known(session: AgentSession, native_tool: str, tool_use_id: str) -> list[ToolCall]:
    """In one query: the call of this tool_use_id, and the calls a retry could join."""
    return _CALLS.models(session=session.pk, native_tool=native_tool, tool_use_id=tool_use_id)


def _join_retry(
    known: list[ToolCall], native_input: dict[str, Any], tool_use_id: str
) -> ToolCall | None:
    """A model whose call was answered "still awaiting approval" sends it again with a new
    tool_use_id: it joins that call, which then answers to the new id."""
    wanted = requested_hash(native_input)
    for call in known[:JOIN_WINDOW]:
        if _gateway_facts(call).get("requested") != wanted:
            continue
        if ToolCall.objects.filter(pk=call.pk, hook_answered_at=None).update(
            tool_use_id=tool_use_id
        ):
            call.tool_use_id = tool_use_id
            return call
    return None


def canonical(value: Any) -> str:
    """A JSON value as one text, whatever its keys' order."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def requested_hash(native_input: Any) -> str:
    """What the agent asked to run, as a retry is compared with it (a reviewer's edit
    changes `native_input`, never this)."""
    return hashlib.sha256(canonical(storable_args(native_input)).encode()).hexdigest()


def _gateway_facts(call: ToolCall) -> dict[str, Any]:
    facts = (call.preview or {}).get("gateway") if isinstance(call.preview, dict) else None
    return facts if isinstance(facts, dict) else {}


def _gateway_facts_of(prepared: engine.Prepared) -> dict[str, Any]:
    facts = (prepared.preview or {}).get("gateway")
    return facts if isinstance(facts, dict) else {}


def _call_judge_and_store(
    session: AgentSession,
    native_tool: str,
    native_input: dict[str, Any],
    tool_use_id: str,
    ran_in: str,
) -> ToolCall | None:
    """The call asked of the policy, in gate mode, before it is stored with its verdict:
    an allowed call is then one write. None, and nothing written, when a call of this
    tool use is already stored."""
    return tool_call_create_judged(
        "receive",
        by=AGENT,
        session=session,
        judge=functools.partial(_judged, ran_in=ran_in),
        judged_by=POLICY,
        tool=storable_text(native_tool[:200]),
        args={},
        native_tool=storable_text(native_tool[:200]),
        native_input=storable_args(native_input),
        tool_use_id=tool_use_id,
    )


def _judged(call: ToolCall, *, ran_in: str) -> Judged:
    """The policy's verdict on the unsaved `call`: its move, and its fields then (a call
    that does not wait is answered now; an allowed one is the agent's to run)."""
    spec = load_policy_or_denial(call.session.policy, just_read=True)  # with its session
    native_input = dict(call.native_input or {})
    prepared = _prepare(spec, call, native_input, ran_in)
    prepared = _with_requested(prepared, requested_hash(native_input), ran_in)
    # The agent's machine runs it: agentweb's egress proxy grants it nothing.
    fields = {"tool": call.tool, **verdict_fields(call, prepared, spec), "egress": None}
    runs = _gateway_facts_of(prepared).get("runs")
    if isinstance(runs, dict):  # gate mode narrowed it: the agent is told to run this
        fields["native_input"] = runs
    if prepared.status == Status.AWAITING_APPROVAL:
        return Judged("judge_wait", None, fields)
    fields["hook_answered_at"] = now = timezone.now()  # the hook answers it now
    if prepared.status != Status.APPROVED:
        return Judged("judge_end", prepared.status, fields)
    fields.update(started_at=now, runner=GATEWAY_RUNNER)
    return Judged("gateway_allow", None, fields)


def _prepare(
    spec: PolicySpec | Verdict, call: ToolCall, native_input: dict[str, Any], ran_in: str
) -> engine.Prepared:
    session = call.session
    if session.status in AgentSession.FINISHED_STATUSES:
        spec = Verdict(
            "deny",
            f"session {session.pk} is {session.status} in agentweb; it takes no more calls",
            "gateway:session-closed",
        )
    if isinstance(spec, Verdict):
        return engine.Prepared(status=Status.DENIED, args={}, verdict=spec)
    counters = session_counters(session)
    mapped, prepared = prepare_native(
        spec, call.native_tool, native_input, session.cwd, counters, ran_in
    )
    call.tool = mapped.tool
    return prepared


def gateway_prepare_edit(*, call: ToolCall, native_input: dict[str, Any]) -> engine.Prepared:
    """A reviewer's edit of a gateway call, in the agent's own shape, judged again."""
    spec = load_policy_or_denial(call.session.policy)
    facts = _gateway_facts(call)
    ran_in = str(facts.get("ran_in") or "")
    prepared = _prepare(spec, call, native_input, ran_in)
    return _with_requested(prepared, facts.get("requested"), ran_in)


def _with_requested(prepared: engine.Prepared, requested: Any, ran_in: str) -> engine.Prepared:
    """The facts a later edit is judged with again: what was asked, and where it runs."""
    preview = dict(prepared.preview or {})
    facts = {**preview.get("gateway", {}), "requested": requested}
    if ran_in:
        facts["ran_in"] = ran_in
    preview["gateway"] = facts
    return replace(prepared, preview=preview)


ABANDONED = (
    "the agent stopped waiting for the answer (its hook request ended) before a person decided"
)


def gateway_call_abandon(*, call_id: int) -> bool:
    """The hook request of a call waiting for a person ended (the agent was stopped, or
    gave up): no one would run an approval now, so the call is cancelled and leaves the
    inbox. False when it was decided meanwhile."""
    call = ToolCall.objects.filter(pk=call_id).first()
    if call is None:
        return False
    return tool_call_move(call, "abandon", by=AGENT, result=ABANDONED, finished_at=timezone.now())


def gateway_call_answered(*, call: ToolCall) -> ToolCall:
    """The hook was given this call's final answer: an approved call is now the agent's
    to run (`running`); any other is marked answered, so a retry no longer joins it."""
    now = timezone.now()
    if call.status == Status.APPROVED:
        claimed = tool_call_move(
            call, "claim_run", by=AGENT, started_at=now, runner=GATEWAY_RUNNER, hook_answered_at=now
        )
        if not claimed:  # moved meanwhile (cancelled, expired): answer what it is now
            call.refresh_from_db()
    elif call.hook_answered_at is None:
        ToolCall.objects.filter(pk=call.pk, hook_answered_at=None).update(hook_answered_at=now)
        call.refresh_from_db()
    return call
