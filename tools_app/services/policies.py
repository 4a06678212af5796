"""Policy writes: import, version bumps, remembered rules; and the fail-closed loader."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from django.contrib.auth.models import Group
from django.db import transaction
from django.db.models import F, Max

from tools_app.core import engine
from tools_app.core.policy.engine import WIDENABLE_APPROVALS
from tools_app.core.policy.loader import (
    PolicyInvalid,
    PolicyProblem,
    policy_from_dict,
    validate_policy_dict,
)
from tools_app.core.policy.remember import remember_patterns
from tools_app.core.policy.types import (
    POLICY_SETTINGS,
    HostChange,
    PolicySpec,
    SessionCounters,
    Verdict,
    field_values,
)
from tools_app.errors import Invalid, ServiceError
from tools_app.models import Policy, PolicyRule
from tools_app.selectors import records
from tools_app.services.audit import Action, Via, audit_record
from tools_app.sql.prepared import Prepared

logger = logging.getLogger(__name__)


@transaction.atomic
def policy_import(*, data: object, user: Any = None, via: str = Via.CLI) -> Policy:
    """Create or replace a policy from its JSON form; refuses an invalid one whole."""
    if not isinstance(data, dict):
        raise ServiceError("A policy file holds one JSON object with a `name`.")
    # Raises PolicyInvalid naming each bad field; the description is ours, not the engine's.
    spec = policy_from_dict({key: value for key, value in data.items() if key != "description"})
    _check_approver_groups(spec)
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
            decision=rule.verdict,
            reason=rule.reason,
            approvals=rule.quorum.count if rule.quorum else 1,
            approvers=rule.quorum.group if rule.quorum else "",
            hosts=rule.hosts.as_dict() if rule.hosts else None,
        )
        for index, rule in enumerate(spec.rules)
    )
    policy.refresh_from_db()
    details = {"imported": True, "created": created, "version": policy.version}
    _audit_policy(policy, Action.POLICY_CHANGE, user=user, via=via, details=details)
    return policy


def _check_approver_groups(spec: PolicySpec) -> None:
    """A quorum names a group that exists: else nobody could ever approve its calls."""
    problems = [
        PolicyProblem(f"rules[{index}].approvals.group", f"no group is named {group!r}")
        for index, rule in enumerate(spec.rules)
        if rule.quorum and (group := rule.quorum.group)
        and not Group.objects.filter(name=group).exists()
    ]  # fmt: skip
    if problems:
        raise PolicyInvalid(problems)


def policy_changed(
    *, policy: Policy, user: Any, via: str, created: bool, changed: list[str]
) -> None:
    """A person saved a policy (its settings or rules, in the admin): a new version
    unless it is new, and an audit entry naming what changed."""
    with transaction.atomic():
        if not created:
            policy_bump_version(policy=policy)
        version = Policy.objects.filter(pk=policy.pk).values_list("version", flat=True).first()
        details = {"created": created, "changed": changed, "version": version}
        _audit_policy(policy, Action.POLICY_CHANGE, user=user, via=via, details=details)


# Compiled once (`sql/prepared.py`): a gateway session's first hook asks it. No ORDER BY
# (`first()` adds one): the name is unique.
_BY_NAME = Prepared(Policy, lambda name: Policy.objects.filter(name=name).order_by()[:1], name=str)


def policy_named(name: str) -> Policy:
    """The policy called `name`; ServiceError naming it when there is none."""
    found = next(iter(_BY_NAME.models(name=name)), None)
    if found is None:
        raise ServiceError(f"There is no policy named {name[:100]!r}.")
    return found


def policy_delete(*, policy: Policy, user: Any, via: str) -> None:
    """Delete a policy (its rules with it), recorded. A policy sessions use is protected."""
    with transaction.atomic():
        _audit_policy(policy, Action.POLICY_DELETE, user=user, via=via, details={})
        policy.delete()


def _audit_policy(
    policy: Policy, action: str, *, user: Any, via: str, details: dict[str, Any]
) -> None:
    audit_record(
        action=action, via=via, actor=user, object_type="policy", object_id=policy.pk,
        object_repr=f"policy {policy.name}", policy=policy.name, details=details,
    )  # fmt: skip


def _policy_apply(policy: Policy, spec: PolicySpec, *, description: str) -> None:
    policy.description = description
    for name, value in field_values(spec, POLICY_SETTINGS).items():
        setattr(policy, name, value)


def policy_bump_version(*, policy: Policy) -> None:
    """Mark a policy changed (admin edits), so tool calls record which version decided."""
    Policy.objects.filter(pk=policy.pk).update(version=F("version") + 1)


def policy_rule_remember(
    *,
    policy: Policy,
    tool: str,
    args: dict[str, Any],
    user: Any,
    rule_args: dict[str, str] | None = None,
    reviewer_bounded: bool = False,
    hosts: list[str] | None = None,
) -> PolicyRule:
    """An allow rule for exactly this tool and these arguments ("approve & remember"),
    or for `rule_args`: the patterns a reviewer widened (checked by `remember_check`);
    `reviewer_bounded` when that reviewer is not a policy admin (see `widening_needs_admin`).
    `hosts`: a command's grant as it was approved; the rule's commands get no host beyond
    them (`HostChange.only`)."""
    if rule_args is None:
        patterns = remember_patterns(tool, args)
    else:
        patterns = remember_check(tool, rule_args)
    last = policy.rules.aggregate(last=Max("position"))["last"]
    rule = PolicyRule.objects.create(
        policy=policy,
        position=(last or 0) + 1,
        tool=tool,
        args=patterns,
        decision="allow",
        reason=f"remembered by {user.get_username()}",
        created_by=user,
        remembered=True,
        reviewer_bounded=reviewer_bounded,
        hosts=None if hosts is None else HostChange(only=tuple(hosts)).as_dict(),
    )
    policy_bump_version(policy=policy)
    return rule


def widening_needs_admin(rule: str) -> bool:
    """True when a call that waited because of `rule` may only be remembered wider by a
    policy admin (fails closed: an unknown reason needs one).

    A reviewer may widen the rule of a call that waited for its size, a web write, a
    skill tool (`WIDENABLE_APPROVALS`) or an admin's require_approval rule; such a rule
    is stored `reviewer_bounded`, so it never allows a call that a risky built-in
    approval sends to a person. For any other reason (a protected or secret path, a
    blocked, risky, unanalysable or unsandboxed command, a pull request, any reason added
    later) a reviewer remembers only what they saw.
    """
    return not (rule in WIDENABLE_APPROVALS or re.fullmatch(r"rule \S+", rule))


def remember_check(tool: str, rule_args: object) -> dict[str, str]:
    """Widened patterns as the policy loader reads them, or Invalid naming each problem."""
    rule = {"tool": tool, "args": rule_args, "decision": "allow", "reason": "remembered"}
    problems = validate_policy_dict({"name": "remember", "rules": [rule]})
    if problems:
        found = "; ".join(f"{p.field.removeprefix('rules[0].')}: {p.message}" for p in problems)
        raise Invalid(f"The rule cannot be saved: {found}.")
    assert isinstance(rule_args, dict)
    return {str(name): str(pattern) for name, pattern in rule_args.items()}


def load_policy_or_denial(policy: Policy, *, just_read: bool = False) -> PolicySpec | Verdict:
    """The policy's spec, or a deny when it cannot load: fail closed, loudly. `just_read`:
    `policy` was read in this request (`records.policy_spec`)."""
    try:
        return records.policy_spec(policy, just_read=just_read)
    except PolicyInvalid as exc:
        logger.error("policy %r cannot be loaded, denying every call: %s", policy.name, exc)
        reason = f"Policy {policy.name!r} cannot be loaded ({exc}); an admin must fix it."
        return Verdict("deny", reason, "policy-error")


def policy_evaluate(
    *, policy: Policy, tool: str, args: object, workspace: Path, counters: SessionCounters
) -> Verdict:
    """A dry run: what the policy would decide for this call; nothing is stored or run."""
    spec = load_policy_or_denial(policy)
    if isinstance(spec, Verdict):
        return spec
    return engine.dry_run(spec, tool, args, workspace, counters)
