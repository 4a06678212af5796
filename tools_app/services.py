"""Every state change, named <entity>_<action>. Views, API, tasks and commands call these."""

from __future__ import annotations

import logging
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from tools_app import engine, selectors
from tools_app.models import AgentSession, CachedResult, Policy, PolicyRule, ToolCall
from tools_app.policy import (
    Decision,
    PolicyInvalid,
    PolicySpec,
    SessionCounters,
    policy_from_dict,
)
from tools_app.tools.base import SandboxOptions

logger = logging.getLogger(__name__)


class ServiceError(Exception):
    """A request that cannot be carried out; the message is for the person who asked."""


# --- policies ---------------------------------------------------------------------------


@transaction.atomic
def policy_import(*, data: object) -> Policy:
    """Create or replace a policy from its JSON form; refuses an invalid one whole."""
    if not isinstance(data, dict):
        raise ServiceError("A policy file holds one JSON object with a `name`.")
    spec = policy_from_dict(data)  # raises PolicyInvalid naming each bad field
    policy, created = Policy.objects.get_or_create(name=spec.name)
    _policy_apply(policy, spec, description=str(data.get("description", "")))
    if not created:
        policy.version = F("version") + 1
    policy.save()
    policy.rules.all().delete()
    PolicyRule.objects.bulk_create(
        PolicyRule(
            policy=policy,
            position=index,
            tool=rule.tool,
            args=dict(rule.args),
            decision=rule.decision,
            reason=rule.reason,
        )
        for index, rule in enumerate(spec.rules)
    )
    policy.refresh_from_db()
    return policy


def _policy_apply(policy: Policy, spec: PolicySpec, *, description: str) -> None:
    policy.description = description
    policy.protected_paths = list(spec.protected_paths)
    policy.blocked_commands = list(spec.blocked_commands)
    policy.approval_commands = list(spec.approval_commands)
    policy.max_diff_lines = spec.max_diff_lines
    policy.require_approval_above = spec.require_approval_above
    policy.web_allow_hosts = list(spec.web_allow_hosts)
    policy.command_network = spec.command_network
    policy.require_distinct_reviewer = spec.require_distinct_reviewer
    policy.approval_timeout_seconds = spec.approval_timeout_seconds


def policy_bump_version(*, policy: Policy) -> None:
    """Mark a policy changed (admin edits), so tool calls record which version decided."""
    Policy.objects.filter(pk=policy.pk).update(version=F("version") + 1)


def load_policy_or_denial(policy: Policy) -> PolicySpec | Decision:
    """The policy's spec, or a deny when it cannot load: fail closed, loudly."""
    try:
        return selectors.policy_spec(policy)
    except PolicyInvalid as exc:
        logger.error("policy %r cannot be loaded, denying every call: %s", policy.name, exc)
        return Decision(
            "deny", f"Policy {policy.name!r} cannot be loaded ({exc}); an admin must fix it.",
            "policy-error",
        )


# --- sessions ---------------------------------------------------------------------------


def session_open_for_workspace(*, workspace: Path, policy: Policy) -> AgentSession:
    """A session for one command-line call on an existing directory (no clone)."""
    return AgentSession.objects.create(
        task="command line call",
        repo=str(workspace),
        workspace=str(workspace),
        kind=AgentSession.Kind.CLI,
        status=AgentSession.Status.RUNNING,
        policy=policy,
    )


def session_close_cli(*, session: AgentSession) -> None:
    """A command-line call's session is done once its one call was handled."""
    AgentSession.objects.filter(pk=session.pk, kind=AgentSession.Kind.CLI).update(
        status=AgentSession.Status.DONE, finished_at=timezone.now()
    )


def _counters(session: AgentSession) -> SessionCounters:
    return SessionCounters(
        total_changed_lines=session.total_changed_lines,
        changed_since_approval=session.changed_since_approval,
    )


# --- tool calls -------------------------------------------------------------------------


def tool_call_submit(*, session: AgentSession, tool: str, args: object) -> ToolCall:
    """Store a call with the policy's decision; run it now when it is allowed."""
    workspace = Path(session.workspace)
    spec = load_policy_or_denial(session.policy)
    if isinstance(spec, Decision):
        prepared = engine.Prepared(status="denied", args=_plain(args), decision=spec)
    else:
        prepared = engine.prepare(spec, tool, args, workspace, _counters(session))
    call = _tool_call_record(session, tool, prepared, spec)
    if call.status == ToolCall.Status.APPROVED:
        return tool_call_execute(tool_call_id=call.pk)
    return call


@transaction.atomic
def _tool_call_record(
    session: AgentSession, tool: str, prepared: engine.Prepared, spec: PolicySpec | Decision
) -> ToolCall:
    now = timezone.now()
    decision = prepared.decision
    awaiting = prepared.status == ToolCall.Status.AWAITING_APPROVAL
    call = ToolCall.objects.create(
        session=session,
        tool=tool,
        args=prepared.args,
        args_hash=engine.args_hash(tool, prepared.args),
        status=prepared.status,
        decision=decision.decision if decision else "",
        reason=decision.reason if decision else prepared.error,
        rule=decision.rule if decision else "validation",
        policy_version=spec.version if isinstance(spec, PolicySpec) else None,
        preview=prepared.preview,
        changed_lines=prepared.changed_lines,
        result=prepared.error or (decision.reason if prepared.status == "denied" and decision else ""),
        decided_at=now if not awaiting else None,
        finished_at=now if prepared.status in {"failed", "denied"} else None,
        expires_at=_expiry(session.policy) if awaiting else None,
    )
    if awaiting:
        AgentSession.objects.filter(pk=session.pk).update(status=AgentSession.Status.WAITING)
    return call


def _expiry(policy: Policy) -> Any:
    return timezone.now() + timedelta(seconds=policy.approval_timeout_seconds)


def tool_call_execute(*, tool_call_id: int) -> ToolCall:
    """Run an approved call once: claim it, check what was approved, run, record."""
    claimed = ToolCall.objects.filter(pk=tool_call_id, status=ToolCall.Status.APPROVED).update(
        status=ToolCall.Status.RUNNING, started_at=timezone.now()
    )
    call = ToolCall.objects.select_related("session__policy").get(pk=tool_call_id)
    if not claimed:
        return call  # another worker has it, or it is no longer approved
    if engine.args_hash(call.tool, call.args) != call.args_hash:
        return _tool_call_finish(
            call, "failed", "Refused to run: the arguments changed after they were approved."
        )
    session = call.session
    workspace = Path(session.workspace)
    cached = _cache_lookup(session, call)
    if cached is not None:
        return _tool_call_finish(call, "succeeded", cached, from_cache=True)
    human = _approved_by_human(call)
    options = SandboxOptions(
        network=human or session.policy.command_network,
        approved=human,
        protected_paths=tuple(session.policy.protected_paths),
    )
    outcome = engine.execute(call.tool, call.args, workspace, options)
    if outcome.status == "succeeded":
        _cache_after(session, call, outcome.result, human=human)
    return _tool_call_finish(call, outcome.status, outcome.result)


def _approved_by_human(call: ToolCall) -> bool:
    return call.decision == "require_approval"


def _tool_call_finish(call: ToolCall, status: str, result: str, *, from_cache: bool = False) -> ToolCall:
    ToolCall.objects.filter(pk=call.pk).update(
        status=status, result=result, from_cache=from_cache, finished_at=timezone.now()
    )
    call.refresh_from_db()
    return call


# --- cache ------------------------------------------------------------------------------


def _cache_lookup(session: AgentSession, call: ToolCall) -> str | None:
    key = engine.cache_key(call.tool, call.args, Path(session.workspace))
    if key is None:
        return None
    entry = CachedResult.objects.filter(session=session, key=key.key).first()
    return entry.result if entry else None


@transaction.atomic
def _cache_after(session: AgentSession, call: ToolCall, result: str, *, human: bool) -> None:
    """Store a cacheable result, or drop what a change made stale and count its lines."""
    workspace = Path(session.workspace)
    key = engine.cache_key(call.tool, call.args, workspace)
    if key is not None:
        CachedResult.objects.update_or_create(
            session=session, key=key.key, defaults={"tool": call.tool, "scope": key.scope, "result": result}
        )
        return
    _cache_invalidate(session, engine.invalidation_for(call.tool, call.args, workspace))
    if call.changed_lines and call.tool in engine.FILE_WRITE_TOOLS:
        _session_count_lines(session, call.changed_lines, human=human)


def _cache_invalidate(session: AgentSession, stale: engine.Invalidation) -> None:
    entries = CachedResult.objects.filter(session=session)
    if stale.everything:
        entries.delete()
        return
    condition = Q(pk__in=[])
    for path in stale.paths:
        condition |= Q(tool="read_file", scope=path)
        condition |= Q(
            tool__in=["list_files", "search_codebase"], scope__in=[path, *engine.parent_dirs(path)]
        )
    if stale.git_state:
        condition |= Q(tool__in=sorted(engine.GIT_STATE_TOOLS))
    if stale.git_log:
        condition |= Q(tool="git_log")
    entries.filter(condition).delete()


def _session_count_lines(session: AgentSession, lines: int, *, human: bool) -> None:
    """Add a write's changed lines; a person's approval restarts the since-approval count."""
    since = 0 if human else F("changed_since_approval") + lines
    AgentSession.objects.filter(pk=session.pk).update(
        total_changed_lines=F("total_changed_lines") + lines, changed_since_approval=since
    )


def _plain(args: object) -> dict[str, Any]:
    return dict(args) if isinstance(args, dict) else {"_raw": repr(args)[:1000]}
