"""Tool calls: receive → evaluate (policy) → execute once → record, with events."""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from tools_app.core import engine
from tools_app.core.egress.grant import EgressGrant
from tools_app.core.outcomes import CallOutcome
from tools_app.core.policy.paths import workspace_relative
from tools_app.core.policy.types import PolicySpec, Quorum, SessionCounters, Verdict
from tools_app.core.tools import redaction, secret_files
from tools_app.core.tools.base import SandboxOptions, ToolContext, ToolSpec
from tools_app.core.tools.catalogue import facts_for
from tools_app.core.tools.errors import ToolError
from tools_app.core.tools.forge import ForgeSettings
from tools_app.core.tools.jsonsafe import storable_args, storable_text
from tools_app.errors import Conflict
from tools_app.models import AgentSession, Policy, ToolCall
from tools_app.selectors.decisions import approved_by_person
from tools_app.selectors.egress import egress_hosts, grant_credentials
from tools_app.services import cache, connections, effects, subagents
from tools_app.services.audit import Action as AuditAction
from tools_app.services.audit import Via as AuditVia
from tools_app.services.audit import audit_tool_call
from tools_app.services.lifecycle import (
    AGENT,
    POLICY,
    WORKER,
    effect_store,
    tool_call_create,
    tool_call_move,
)
from tools_app.services.policies import load_policy_or_denial
from tools_app.services.pull_request_store import PullRequestStore
from tools_app.services.queueing import EVALUATE_TOOL_CALL, tool_call_enqueue
from tools_app.services.sessions import session_count_lines
from tools_app.services.skill_calls import secret_value, skill_tool_canonical
from tools_app.services.tool_specs import tool_spec_approved, tool_spec_judged

logger = logging.getLogger(__name__)

Status = ToolCall.Status


def tool_call_receive(*, session: AgentSession, tool: str, args: object) -> ToolCall:
    """Store a call as `pending` and queue its evaluation on the session's worker (once
    the session's clone is ready, if it is not yet)."""
    call = _tool_call_create(session, tool, args)
    if session.worker_queue:
        tool_call_enqueue(tool_call_id=call.pk, task=EVALUATE_TOOL_CALL, session=session)
    return call


def tool_call_receive_external(*, session: AgentSession, tool: str, args: object) -> ToolCall:
    """A call sent by an external agent (REST, MCP): refused when the session has ended or
    when agentweb's own agent loop makes its calls."""
    if session.status in AgentSession.FINISHED_STATUSES:
        raise Conflict(f"Session {session.pk} is {session.status}; it takes no more calls.")
    if session.model:
        raise Conflict(
            f"Session {session.pk} is run by agentweb's agent loop ({session.model}); its "
            "tool calls come from its model. Start a session without `model` to send calls."
        )
    return tool_call_receive(session=session, tool=tool, args=args)


def tool_call_run_in_process(*, session: AgentSession, tool: str, args: object) -> ToolCall:
    """Receive and evaluate in this process (the command line's path)."""
    call = _tool_call_create(session, tool, args)
    return tool_call_evaluate(tool_call_id=call.pk, raw_args=args)


def tool_call_receive_from_agent(
    *, session: AgentSession, key: str, tool: str, args: object
) -> ToolCall:
    """The call for one tool use of the runtime's model, made once however often its turn
    is resumed (`key` is the use's place in the conversation)."""
    existing = ToolCall.objects.filter(session=session, agent_key=key).first()
    if existing is not None:
        return existing
    try:
        return _tool_call_create(session, tool, args, agent_key=key)
    except IntegrityError:
        return ToolCall.objects.get(session=session, agent_key=key)


@transaction.atomic
def _tool_call_create(
    session: AgentSession, tool: str, args: object, *, agent_key: str = ""
) -> ToolCall:
    tool = skill_tool_canonical(session=session, tool=tool)
    return tool_call_create(
        "receive",
        by=AGENT,
        session=session,
        tool=storable_text(tool[:200]),
        args=storable_args(args),
        agent_key=agent_key,
    )


def tool_call_evaluate(*, tool_call_id: int, raw_args: object = None) -> ToolCall:
    """Validate and ask the policy; an allowed call runs at once, in this process.

    An allowed call is judged and claimed in one transaction (events `approved` and
    `running`, published together), run, and recorded in a second one.
    """
    call = ToolCall.objects.select_related("session__policy").get(pk=tool_call_id)
    if call.status != Status.PENDING:
        return call  # a duplicated message: already evaluated
    session = call.session
    spec = load_policy_or_denial(session.policy, just_read=True)  # with the call
    args = call.args if raw_args is None else raw_args
    prepared = _prepare(spec, call.tool, args, session)
    if not _tool_call_record_verdict(call, prepared, spec):
        return ToolCall.objects.get(pk=call.pk)
    if call.status == Status.RUNNING:
        return _run_claimed(call)
    return call


def _prepare(
    spec: PolicySpec | Verdict, tool: str, args: object, session: AgentSession
) -> engine.Prepared:
    if isinstance(spec, Verdict):
        return engine.Prepared(status=Status.DENIED, args=storable_args(args), verdict=spec)
    tool_spec = tool_spec_judged(session=session, tool=tool)
    if isinstance(tool_spec, str):
        return engine.Prepared(status=Status.FAILED, args=storable_args(args), error=tool_spec)
    return prepare_call(spec, tool_spec, args, session)


def prepare_call(
    spec: PolicySpec, tool: ToolSpec, args: object, session: AgentSession
) -> engine.Prepared:
    """A call of `tool` judged in `session`: its context and counters as the policy sees
    them."""
    context, counters = tool_context(session), session_counters(session)
    return engine.prepare(spec, tool, args, context, counters)


def session_counters(session: AgentSession) -> SessionCounters:
    """The session as the policy sees it, its creator included: every judgement of a
    session's call goes through here, so a remembered rule always knows whose it is."""
    return SessionCounters(
        total_changed_lines=session.total_changed_lines,
        changed_since_approval=session.changed_since_approval,
        creator=str(session.creator_id) if session.creator_id else "",
    )


def _tool_call_record_verdict(
    call: ToolCall, prepared: engine.Prepared, spec: PolicySpec | Verdict
) -> bool:
    """Store the policy's verdict, and claim an allowed call for this process in the same
    update; False when another process already did. `call` is updated in place."""
    fields = verdict_fields(call, prepared, spec)
    status = prepared.status
    if status == Status.APPROVED:  # runs here and now: claimed like an execution
        fields |= {"started_at": timezone.now(), "runner": runner_id()}
        return tool_call_move(call, "judge_run", by=POLICY, **fields)
    move = "judge_wait" if status == Status.AWAITING_APPROVAL else "judge_end"
    return tool_call_move(call, move, by=POLICY, to=status, **fields)


def verdict_fields(
    call: ToolCall, prepared: engine.Prepared, spec: PolicySpec | Verdict
) -> dict[str, Any]:
    now = timezone.now()
    verdict = prepared.verdict
    awaiting = prepared.status == Status.AWAITING_APPROVAL
    final = prepared.status in {Status.FAILED, Status.DENIED}
    return {
        "args": prepared.args,
        "args_hash": engine.args_hash(call.tool, prepared.args),
        "verdict": verdict.kind if verdict else "",
        "reason": verdict.reason if verdict else prepared.error,
        "rule": verdict.rule if verdict else "validation",
        "policy_version": spec.version if isinstance(spec, PolicySpec) else None,
        "preview": prepared.preview,
        "changed_lines": prepared.changed_lines,
        "result": prepared.error or (verdict.reason if final and verdict else ""),
        "decided_at": None if awaiting else now,
        "finished_at": now if final else None,
        "expires_at": _expiry(call.session.policy) if awaiting else None,
        "egress": egress_fields(verdict),
        **quorum_fields(verdict if awaiting else None),
    }


def egress_fields(verdict: Verdict | None) -> dict[str, Any] | None:
    """The hosts a command may reach, as the call stores them when it is judged: what
    runs after an approval gets exactly what the card showed (credentials are added at
    run time, never stored)."""
    if verdict is None or verdict.egress is None or verdict.kind == "deny":
        return None
    return {"hosts": list(verdict.egress.hosts)}


def quorum_fields(verdict: Verdict | None) -> dict[str, Any]:
    """The approvals a waiting call needs (one, from any reviewer, unless its rule says)."""
    quorum = verdict.quorum if verdict is not None and verdict.quorum else Quorum()
    return {"approvals_needed": quorum.count, "approvers": quorum.group}


def _expiry(policy: Policy) -> Any:
    return timezone.now() + timedelta(seconds=policy.approval_timeout_seconds)


def runner_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def tool_call_execute(*, tool_call_id: int) -> ToolCall:
    """Run an approved call once: claim it, check what was approved, run, record."""
    call = ToolCall.objects.select_related("session__policy").get(pk=tool_call_id)
    if call.native_tool:
        return call  # a gateway call runs on the agent's machine, never here
    if not tool_call_move(
        call, "claim_run", by=WORKER, started_at=timezone.now(), runner=runner_id()
    ):
        call.refresh_from_db()
        return call  # another worker has it, or it is no longer approved
    return _run_claimed(call)


def _run_claimed(call: ToolCall) -> ToolCall:
    """Run a call this process claimed (`running`, with its runner) and record the end."""
    if engine.args_hash(call.tool, call.args) != call.args_hash:
        reason = "Refused to run: the arguments changed after they were approved."
        return _tool_call_finish(call, Status.FAILED, reason)
    cached = cache.lookup(call)
    if cached is not None:
        return _tool_call_finish(call, Status.SUCCEEDED, cached, from_cache=True)
    spec = tool_spec_approved(call=call)
    if isinstance(spec, str):
        return _tool_call_finish(call, Status.FAILED, spec)
    context = tool_context(call.session, call)
    ran = engine.execute(spec, call.args, context)
    if ran.status == Status.RUNNING:
        return call  # runs as a child session; its end finishes this call
    changed = effects.command_outcome(context, ran.result, connections.logged(context))
    return _tool_call_finish(call, ran.status, ran.result, ran=True, outcome=changed)


def tool_context(session: AgentSession, call: ToolCall | None = None) -> ToolContext:
    """Where and how a session's tools run; a person's approval widens the sandbox."""
    human = call is not None and approved_by_person(call)
    policy = session.policy
    egress = _grant(session, call)
    options = SandboxOptions(
        network=egress is not None,
        egress=egress,
        approved=human,
        protected_paths=tuple(policy.protected_paths),
        web_allow_hosts=tuple(policy.web_allow_hosts),
        secret_paths=tuple(policy.secret_paths),
        secrets_visible=_secrets_shown(call) if human and call is not None else (),
    )
    forge = ForgeSettings(
        github_token=settings.GITHUB_TOKEN or None,
        github_api_base=settings.GITHUB_API_URL,
        local_pull_requests=PullRequestStore(session_id=session.pk),
    )
    should_stop = None
    if call is not None:
        call_id = call.pk

        def should_stop() -> bool:
            return ToolCall.objects.filter(pk=call_id, status=Status.CANCELLED).exists()

    preview = call.preview if call is not None else None
    return ToolContext(
        workspace=Path(session.workspace),
        sandbox=options,
        preview_state=preview.get("state") if isinstance(preview, dict) else None,
        effect_handler=None if call is None else effects.effect_handler(call=call, approved=human),
        should_stop=should_stop,
        session_id=session.pk,
        git_author=(settings.AGENTWEB_GIT_AUTHOR_NAME, settings.AGENTWEB_GIT_AUTHOR_EMAIL),
        forge=forge,
        effect_store=effect_store(),
        start_subagent=None if call is None else subagents.subagent_starter(call=call),
        secrets=secret_value,
        on_connections=None if call is None else connections.connection_log(call=call),
    )


def _grant(session: AgentSession, call: ToolCall | None) -> EgressGrant | None:
    """The grant the call was judged with, and the credentials for its hosts now."""
    hosts = egress_hosts(call) if call is not None else None
    if not hosts:
        return None
    return EgressGrant(hosts=hosts, credentials=grant_credentials(session=session, hosts=hosts))


def _secrets_shown(call: ToolCall) -> tuple[str, ...]:
    """The secret files a person let this call see: those its preview listed (a
    command's `secrets_visible`; read_file's own path). Every other one stays hidden."""
    preview = call.preview if isinstance(call.preview, dict) else {}
    if call.tool == "run_command":
        return tuple(str(path) for path in preview.get("secrets_visible") or ())
    if call.tool == "read_file" and isinstance(call.args.get("path"), str):
        with contextlib.suppress(ToolError):
            return (workspace_relative(Path(call.session.workspace), call.args["path"]),)
    return ()


def tool_call_finish_subagent(*, call: ToolCall) -> ToolCall:
    """A spawn_subagent call whose child ended gets the child's report as its result."""
    outcome = subagents.subagent_report(call=call)
    if outcome is None:
        return call
    return _tool_call_finish(call, outcome.status, outcome.result)


def _tool_call_finish(
    call: ToolCall,
    status: str,
    result: str,
    *,
    from_cache: bool = False,
    ran: bool = False,
    outcome: CallOutcome | None = None,
) -> ToolCall:
    """Record the end, what the run changed (`outcome`), and what a successful run changes
    (cache, line counts), in one transaction. A call cancelled meanwhile stays cancelled;
    what it did is still counted, and its outcome still recorded."""
    now = timezone.now()
    result = _redacted(call, result)
    with transaction.atomic():
        changed = _outcome_fields(call, outcome)
        fields: dict[str, Any] = {"result": result, "from_cache": from_cache, "finished_at": now}
        # A person's approval refreshes the session (healing one left `waiting` by racing
        # decisions) and wakes its agent; an agent's call run outside its turn wakes it.
        finished = tool_call_move(call, "finish", by=WORKER, to=status, **fields, **changed)
        if ran and status == Status.SUCCEEDED:
            _record_success(call, result)
        if not finished and changed:  # cancelled meanwhile: what the run did still happened
            ToolCall.objects.filter(pk=call.pk).update(
                outcome=changed["outcome"], outcome_detail=changed["outcome_detail"],
                held_call_id=changed["held_call_id"], network=changed["network"],
                connections=changed["connections"],
            )  # fmt: skip
        if not finished:
            call.refresh_from_db()
    return call


def _outcome_fields(call: ToolCall, outcome: CallOutcome | None) -> dict[str, Any]:
    """The outcome as the call stores it (redacted like the result), with its audit entry."""
    if outcome is None:
        return {}
    fields = {
        "outcome": outcome.kind,
        "outcome_detail": _redacted(call, outcome.detail),
        "held_call_id": outcome.held_call,
        "network": outcome.network,
        "connections": [connection.as_json() for connection in outcome.connections],
    }
    audit_tool_call(
        call=call, action=AuditAction.RUN_OUTCOME, via=AuditVia.SYSTEM, actor=None, seen="",
        reason=fields["outcome_detail"],
        details={k: v for k, v in fields.items() if k != "outcome_detail"},
    )  # fmt: skip
    return fields


def _redacted(call: ToolCall, result: str) -> str:
    """The result without the values the workspace's secret files hold (defence in
    depth: the sandbox masks them, the git tools leave them out), except those of the
    files a person let this call see. Every result an agent reads passes here once."""
    session = call.session
    if not session.workspace or not result:
        return result
    workspace = Path(session.workspace)
    files = secret_files.secret_files(workspace, session.policy.secret_paths, strict=False)
    shown = set(_secrets_shown(call)) if approved_by_person(call) else set()
    values = redaction.secret_values(workspace, [f for f in files if f not in shown])
    return redaction.redact(result, values)


def _record_success(call: ToolCall, result: str) -> None:
    cache.after_success(call, result)
    if call.changed_lines and facts_for(call.tool).counts_lines:
        session_count_lines(
            session_id=call.session_id,
            lines=call.changed_lines,
            approved_by_human=approved_by_person(call),
        )
