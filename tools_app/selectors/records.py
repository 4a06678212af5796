"""Reads for pages, the API, consumers and commands."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

from django.db import connection
from django.db.models import Q, QuerySet
from django.utils import timezone

from tools_app.core.policy.context import CallContext
from tools_app.core.policy.loader import PolicyInvalid, policy_from_dict
from tools_app.core.policy.rules import rule_matches
from tools_app.core.policy.types import (
    POLICY_SETTINGS,
    CallFacts,
    PolicySpec,
    SessionCounters,
    field_values,
)
from tools_app.core.skills.definitions import SkillData, ToolData, skill_to_dict
from tools_app.core.skills.matching import activations
from tools_app.core.tools import git_runner
from tools_app.core.tools.errors import ToolError
from tools_app.core.tools.registry import core_tool_schemas
from tools_app.models import (
    AgentSession,
    Decision,
    Event,
    Policy,
    PolicyRule,
    Skill,
    SkillTool,
    ToolCall,
)
from tools_app.selectors.decisions import quorum_status
from tools_app.sql import rules_revision
from tools_app.sql.prepared import Prepared


def policy_as_dict(policy: Policy) -> dict[str, Any]:
    """The policy-file JSON of a stored policy (what `export_policy` prints)."""
    return {
        "name": policy.name,
        "description": policy.description,
        **field_values(policy, POLICY_SETTINGS),
        "rules": [rule_as_dict(rule) for rule in policy.rules.all()],
    }


def rule_as_dict(rule: Any) -> dict[str, Any]:
    """A rule in a policy file: of a PolicyRule, or of its RuleRow."""
    data = {
        "tool": rule.tool,
        "args": dict(rule.args),
        "decision": rule.decision,
        "reason": rule.reason,
    }
    if rule.approvals > 1 or rule.approvers:
        data["approvals"] = {"count": rule.approvals, "group": rule.approvers}
    if rule.hosts is not None:
        data["hosts"] = rule.hosts
    return data


class RuleRow(NamedTuple):
    """What the engine's view of a stored rule is made of (with its policy's settings,
    all of its view)."""

    pk: int
    tool: str
    args: dict[str, str]
    decision: str
    reason: str
    approvals: int
    approvers: str
    hosts: Any
    remembered: bool
    created_by_id: int | None
    reviewer_bounded: bool


class Made(NamedTuple):
    """A spec, with what it was made from: its policy's settings and rules, and the
    policy's `rules_revision` when they were read."""

    source: tuple[Any, ...]
    revision: str
    spec: PolicySpec


# The specs made last, by policy id. A spec is used again when its policy's settings
# and rules equal what it was made from, or, for a policy read just now, when its
# settings and its `rules_revision` do: the database's triggers change the revision with
# any rule, whatever writes it (`sql/rules_revision.py`), so the rules need not be read.
_made: dict[int, Made] = {}
_RULES = Prepared(
    PolicyRule,
    lambda policy: (
        PolicyRule.objects.filter(policy_id=policy)
        .order_by("position", "id")
        .values_list(*RuleRow._fields)
    ),
    policy=int,
)
MADE_KEPT = 64


def policy_spec(policy: Policy, *, just_read: bool = False) -> PolicySpec:
    """The engine's view of a stored policy; raises PolicyInvalid if it cannot load.
    `just_read`: `policy` was read from the database in this request (with the session
    or call it governs), so its `rules_revision` says whether its rules changed since a
    spec was made of them: the rules as of that read, which is when they were read."""
    settings = (policy.name, policy.version, field_values(policy, POLICY_SETTINGS))
    revision = policy.rules_revision if _revision_trusted(just_read) else ""
    made = _made.get(policy.pk)
    if revision and made is not None and (made.revision, made.source[:3]) == (revision, settings):
        return made.spec
    # Ordered within the policy alone (the model's ordering starts with `policy`, which
    # joins the policies to sort by their names); rows, not models: nothing to build.
    rows = tuple(RuleRow._make(row) for row in _RULES.rows(policy=policy.pk))
    source = (*settings, rows)
    spec = made.spec if made is not None and made.source == source else _spec_made_of(source)
    if len(_made) >= MADE_KEPT:
        _made.clear()
    _made[policy.pk] = Made(source, revision, spec)
    return spec


def _revision_trusted(just_read: bool) -> bool:
    """A policy's revision stands for its rules when the policy was read just now, out
    of any transaction (read in one, it may be older than rules that transaction wrote
    and may yet roll back; rules read after it, out of one, are as new or newer), and
    the database keeps it."""
    return just_read and not connection.in_atomic_block and rules_revision.kept()


def _spec_made_of(source: tuple[Any, ...]) -> PolicySpec:
    name, version, settings, rows = source
    spec = policy_from_dict({"name": name, **settings, "rules": [rule_as_dict(r) for r in rows]})
    rules = tuple(
        replace(
            rule,
            id=str(row.pk),
            remembered_by=_remembered_by(row),
            reviewer_bounded=row.reviewer_bounded,
        )
        for rule, row in zip(spec.rules, rows, strict=True)
    )
    return replace(spec, version=version, rules=rules)


def _remembered_by(rule: Any) -> str:
    """The id of the reviewer whose approval a remembered rule stands for ("": none)."""
    return str(rule.created_by_id) if rule.remembered and rule.created_by_id else ""


def policy_by_name(name: str) -> Policy | None:
    return Policy.objects.filter(name=name).prefetch_related("rules").first()


def session_as_dict(session: AgentSession) -> dict[str, Any]:
    return {
        "id": session.pk,
        "status": session.status,
        "task": session.task,
        "repo": session.repo,
        "workspace": session.workspace,
        "policy": session.policy.name,
        "project": session.project.name,
        "model": session.model,
        "kind": session.kind,
        "cwd": session.cwd,
        "external_id": session.external_id,
        "parent": session.parent_id,
        "children": [child.pk for child in session.children.all()],
        "tokens": {
            "input": session.tokens_in,
            "output": session.tokens_out,
            "subagents": {
                "input": session.subagent_tokens_in,
                "output": session.subagent_tokens_out,
            },
        },
        "summary": session.summary,
        "files_changed": session.files_changed,
        "depth": session.depth,
        "iterations": session.iterations,
        "max_iterations": session.max_iterations,
        "token_budget": session.token_budget,
        "total_changed_lines": session.total_changed_lines,
        "changed_since_approval": session.changed_since_approval,
        "active_skills": session.active_skills,
        "created_at": session.created_at,
        "finished_at": session.finished_at,
    }


def tool_call_as_dict(call: ToolCall) -> dict[str, Any]:
    try:
        human: Decision | None = call.human
    except Decision.DoesNotExist:
        human = None
    return {
        "id": call.pk,
        "session": call.session_id,
        "tool": call.tool,
        "args": call.args,
        "status": ToolCall.Status.EXPIRED if tool_call_overdue(call) else call.status,
        "decision": call.verdict,
        "reason": call.reason,
        "rule": call.rule,
        "result": call.result,
        "preview": call.preview,
        "decided_by": human.user.get_username() if human and human.user else None,
        "from_cache": call.from_cache,
        "outcome": call.outcome,
        "outcome_detail": call.outcome_detail,
        "held_call": call.held_call_id,
        "network": call.network,
        "egress": call.egress,
        "connections": call.connections,
        "policy_version": call.policy_version,
        "created_at": call.created_at,
        "decided_at": call.decided_at,
        "expires_at": call.expires_at,
        "finished_at": call.finished_at,
        "native_tool": call.native_tool,
        "native_input": call.native_input,
        "tool_use_id": call.tool_use_id,
        "approvals": quorum_status(call),
    }


def session_get(session_id: int) -> AgentSession | None:
    return AgentSession.objects.select_related("policy", "project").filter(pk=session_id).first()


def tool_call_overdue(call: ToolCall) -> bool:
    """Awaiting a person past its deadline: it can no longer be decided or run.

    The sweep marks it `expired` (with its event) within seconds; until then reads
    already treat it as expired, so that no read has to write.
    """
    overdue = call.expires_at is not None and call.expires_at <= timezone.now()
    return call.status == ToolCall.Status.AWAITING_APPROVAL and overdue


def approvals_awaiting() -> QuerySet[ToolCall]:
    """Calls a reviewer can still decide, oldest first (overdue ones are left out)."""
    in_time = Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now())
    calls = ToolCall.objects.select_related("session__policy", "human__user")
    return calls.filter(in_time, status=ToolCall.Status.AWAITING_APPROVAL).order_by("created_at")


def session_tool_schemas(session: AgentSession) -> list[dict[str, Any]]:
    """The tools a session offers, as {name, description, input_schema}: the core tools,
    then its active skills' enabled tools under their plain names (what a model calls)."""
    schemas = core_tool_schemas()
    for skill in active_skills(session):
        for tool in skill.tools.all():
            if tool.enabled:
                schemas.append(skill_tool_schema(skill, tool))
    return schemas


def active_skill_names(session: AgentSession) -> list[str]:
    return [str(item.get("skill")) for item in session.active_skills if isinstance(item, dict)]


def active_skills(session: AgentSession) -> list[Skill]:
    """The session's active skills that are still enabled, with their tools."""
    names = active_skill_names(session)
    return list(Skill.objects.filter(name__in=names, enabled=True).prefetch_related("tools"))


def skill_tool_schema(skill: Skill, tool: SkillTool) -> dict[str, Any]:
    return {
        "name": tool.name,
        "description": f"[skill {skill.name}] {tool.description}".strip(),
        "input_schema": tool.input_schema or {"type": "object", "properties": {}},
    }


# --- skills ------------------------------------------------------------------------------


def skill_data(skill: Skill) -> SkillData:
    return SkillData(
        name=skill.name,
        description=skill.description,
        triggers=tuple(skill.triggers),
        instructions=skill.instructions,
        enabled=skill.enabled,
        tools=tuple(
            ToolData(t.name, t.description, t.input_schema, t.executor, t.enabled)
            for t in skill.tools.all()
        ),
    )


def skill_as_dict(skill: Skill) -> dict[str, Any]:
    """The skill file's dict, with the counters a list shows."""
    return skill_to_dict(skill_data(skill)) | {
        "times_activated": skill.times_activated,
        "last_used_at": skill.last_used_at,
        "updated_at": skill.updated_at,
    }


def skills_all() -> QuerySet[Skill]:
    return Skill.objects.prefetch_related("tools").order_by("name")


def skill_by_name(name: str) -> Skill | None:
    return skills_all().filter(name=name).first()


def skills_export(names: Iterable[str] = ()) -> list[dict[str, Any]]:
    """Skills as a skill file holds them (all, or those named), for `export_skills`."""
    skills = skills_all()
    if names:
        skills = skills.filter(name__in=list(names))
    return [skill_to_dict(skill_data(skill)) for skill in skills]


def skills_would_activate(text: str) -> list[dict[str, Any]]:
    """ "Which skills would activate?": the enabled skills a task would activate, with the
    words that matched; nothing is counted."""
    enabled = [(s.name, s.triggers) for s in Skill.objects.filter(enabled=True).order_by("name")]
    return [activation.as_dict() for activation in activations(enabled, text)]


def events_last_id() -> int:
    """The newest event's id: a page rendered now asks the socket for what came after."""
    return Event.objects.order_by("-id").values_list("id", flat=True).first() or 0


@dataclass(frozen=True)
class RuleReach:
    """What an allow rule would have matched among the policy's recent calls to a tool:
    `matched` of `seen`, and the first `also` of those the exact rule of the call being
    remembered would not have matched (id, session id, status, arguments), newest first."""

    matched: int
    seen: int
    also: list[tuple[int, int, str, dict[str, Any]]]


def rule_reach(
    *,
    policy: Policy,
    tool: str,
    patterns: dict[str, str],
    exact: dict[str, str],
    exclude: int | None,
    limit: int = 1000,
    listed: int = 10,
) -> RuleReach:
    """Which of the policy's last `limit` calls to `tool` an allow rule with `patterns`
    would have matched, and which of them only because it is wider than `exact` (the
    call's own rule). Raises PolicyInvalid for a pattern the loader refuses."""
    rule, own = (_allow_rule(tool, args) for args in (patterns, exact))
    calls = (
        ToolCall.objects.filter(session__policy=policy, tool=tool)
        .exclude(pk=exclude or 0)
        .order_by("-id")
        .values_list("id", "session_id", "status", "args", "session__workspace", "session__cwd")
    )
    matched = seen = 0
    also: list[tuple[int, int, str, dict[str, Any]]] = []
    for pk, session_id, status, args, workspace, cwd in calls[:limit]:
        seen += 1
        facts = CallFacts(tool, args if isinstance(args, dict) else {}, Path(workspace or cwd))
        if not _matches(rule, facts):
            continue
        matched += 1
        if len(also) < listed and not _matches(own, facts):
            also.append((pk, session_id, status, dict(facts.args)))
    return RuleReach(matched, seen, also)


def _allow_rule(tool: str, patterns: dict[str, str]) -> PolicySpec:
    rule_data = {"tool": tool, "args": patterns, "decision": "allow", "reason": ""}
    return policy_from_dict({"name": "remember", "rules": [rule_data]})


def _matches(spec: PolicySpec, facts: CallFacts) -> bool:
    try:
        return rule_matches(spec.rules[0], CallContext(spec, facts, SessionCounters()))
    except ToolError:  # a path outside the workspace: no rule matches it
        return False


def tracked_secrets(policy: Policy, workspace: Path) -> list[str]:
    """The paths the workspace's repository tracks that the policy calls secret: they are
    in git's objects, out of the sandbox's reach (none when no repo, or no policy)."""
    try:
        return git_runner.tracked_secrets(workspace, policy_spec(policy).secret_paths)
    except (PolicyInvalid, ToolError, OSError):
        return []


def tracked_secrets_note(policy: Policy, workspace: Path) -> str:
    """A warning when the workspace tracks secret paths ("" when none, or no repo)."""
    return git_runner.tracked_secrets_note(tracked_secrets(policy, workspace))


def session_tracked_secrets_note(session: AgentSession, policy: Policy | None = None) -> str:
    """The warning for a session's workspace under `policy` (its own by default): read in
    the workspace when it is on this host; else, for its own policy, what its worker host
    found after the clone (a web host apart from the workers has no workspaces)."""
    policy = policy or session.policy
    workspace = Path(session.workspace)
    if workspace.is_dir():
        return tracked_secrets_note(policy, workspace)
    if policy.pk == session.policy_id:
        return git_runner.tracked_secrets_note(session.tracked_secrets)
    return ""
