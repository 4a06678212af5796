"""Reads for pages, the API, consumers and commands."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tools_app.models import Policy, PolicyRule
from tools_app.policy import PolicySpec, policy_from_dict


def policy_as_dict(policy: Policy) -> dict[str, Any]:
    """The policy-file JSON of a stored policy (what `export_policy` prints)."""
    return {
        "name": policy.name,
        "description": policy.description,
        "protected_paths": list(policy.protected_paths),
        "blocked_commands": list(policy.blocked_commands),
        "approval_commands": list(policy.approval_commands),
        "max_diff_lines": policy.max_diff_lines,
        "require_approval_above": policy.require_approval_above,
        "web_allow_hosts": list(policy.web_allow_hosts),
        "command_network": policy.command_network,
        "require_distinct_reviewer": policy.require_distinct_reviewer,
        "approval_timeout_seconds": policy.approval_timeout_seconds,
        "rules": [rule_as_dict(rule) for rule in policy.rules.all()],
    }


def rule_as_dict(rule: PolicyRule) -> dict[str, Any]:
    return {"tool": rule.tool, "args": dict(rule.args), "decision": rule.decision, "reason": rule.reason}


def policy_spec(policy: Policy) -> PolicySpec:
    """The engine's view of a stored policy; raises PolicyInvalid if it cannot load."""
    spec = policy_from_dict(policy_as_dict(policy))
    rule_ids = [str(rule.pk) for rule in policy.rules.all()]
    rules = tuple(replace(rule, id=rule_id) for rule, rule_id in zip(spec.rules, rule_ids, strict=True))
    return replace(spec, version=policy.version, rules=rules)


def policy_by_name(name: str) -> Policy | None:
    return Policy.objects.filter(name=name).prefetch_related("rules").first()
