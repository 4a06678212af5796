"""`evaluate`: one function that walks the checks in the documented order.

1. invariants → deny            2. first explicit deny rule → deny
3. built-in denies → deny       4. first explicit allow / require_approval rule
5. built-in approvals           6. otherwise allow (read-only tools: "only reads")

The first decisive step wins, and its verdict names the rule and a reason a person can
read; a command's verdict also carries the hosts it may reach (`policy/egress.py`).
Anything unexpected inside fails closed: a deny with rule "engine-error". Under
`require_distinct_reviewer`, step 4 passes over a remembered rule in a session its own
author created (`rules.self_approval`): the four-eyes rule outranks it. And a rule a
reviewer widened without being a policy admin (`Rule.reviewer_bounded`) never allows a
call that a risky built-in approval (`RISKY_APPROVALS`) sends to a person: step 4 passes
it over, and if no later rule decides, that approval does, saying why the rule did not.
Nor does a reviewer's rule lower a quorum: where an admin's rule asks N people to
approve a call, a remembered or widened allow rule that matches first is passed over.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import replace

from tools_app.core.policy.checks import BUILTIN_APPROVALS, BUILTIN_DENIES, INVARIANTS, Check
from tools_app.core.policy.context import CallContext, is_read_only
from tools_app.core.policy.egress import command_egress
from tools_app.core.policy.rules import first_matching_rule
from tools_app.core.policy.types import (
    CallFacts,
    PolicySpec,
    Quorum,
    Rule,
    SessionCounters,
    Verdict,
)

logger = logging.getLogger(__name__)

# The built-in approvals a reviewer who is not a policy admin may remember a wider rule
# for (a call's size, a web write, a skill tool, an MCP upstream's tool). Every other one
# is risky (a protected or secret path, a risky or opaque command, a pull request, and
# any check added later): only a policy admin's rule allows what it would send to a person.
WIDENABLE_APPROVALS = frozenset(
    {
        "builtin:require-approval-above",
        "builtin:web-write",
        "builtin:skill-tool",
        "builtin:mcp-tool",
    }
)
RISKY_APPROVALS = tuple(c for c in BUILTIN_APPROVALS if c.name not in WIDENABLE_APPROVALS)


def evaluate(policy: PolicySpec, call: CallFacts, counters: SessionCounters) -> Verdict:
    """Decide one tool call (never raises)."""
    try:
        return _evaluate(CallContext(policy, call, counters))
    except Exception as exc:
        logger.exception("policy engine failed on %s", getattr(call, "tool", "?"))
        return Verdict(
            "deny",
            f"the policy engine could not judge this call ({type(exc).__name__}: {exc}); "
            "it is denied to be safe",
            "engine-error",
        )


def _evaluate(context: CallContext) -> Verdict:
    rules = context.policy.rules
    verdict = (
        _first(INVARIANTS, context)
        or _rule_verdict(first_matching_rule(rules, context, deny=True))
        or _first(BUILTIN_DENIES, context)
        or _allow_rule_verdict(context)
        or _first(BUILTIN_APPROVALS, context)
        or _fallthrough(context)
    )
    verdict = _builtin_quorum(verdict, context.policy)
    egress = command_egress(verdict, context)
    return verdict if egress is None else replace(verdict, egress=egress)


def _builtin_quorum(verdict: Verdict, policy: PolicySpec) -> Verdict:
    """A built-in check's approval asks the policy's `builtin_approvals` people."""
    builtin = verdict.kind == "require_approval" and verdict.rule.startswith("builtin:")
    if not builtin or verdict.quorum is not None or policy.builtin_approvals <= 1:
        return verdict
    return replace(verdict, quorum=Quorum(policy.builtin_approvals))


def _first(checks: Iterable[Check], context: CallContext) -> Verdict | None:
    for check in checks:
        verdict = check.evaluate(context)
        if verdict is not None:
            return verdict
    return None


def _allow_rule_verdict(context: CallContext) -> Verdict | None:
    """Step 4. A reviewer-bounded rule is passed over when a risky built-in approval
    applies: the next rule (not bounded) in order decides, else that approval does."""
    rules = context.policy.rules
    rule = first_matching_rule(rules, context, deny=False)
    kept = _quorum_kept(rule, rules, context)
    if kept is not None:
        return kept
    if rule is None or not _bounded(rule):
        return _rule_verdict(rule)
    risky = _first(RISKY_APPROVALS, context)
    if risky is None:
        return _rule_verdict(rule)
    unbounded = tuple(other for other in rules if not _bounded(other))
    later = first_matching_rule(unbounded, context, deny=False)
    return _rule_verdict(later) or _passed_over(risky, rule)


def _quorum_kept(
    rule: Rule | None, rules: tuple[Rule, ...], context: CallContext
) -> Verdict | None:
    """Remembered rules never lower a quorum: a reviewer's rule (remembered or widened)
    does not allow a call that an admin's rule, or a built-in check under
    `builtin_approvals`, sends to more than one person; that one decides instead."""
    if rule is None or rule.verdict != "allow":
        return None
    if not (rule.remembered_by or rule.reviewer_bounded):
        return None
    quorums = tuple(other for other in rules if other.quorum is not None)
    admins = first_matching_rule(quorums, context, deny=False) if quorums else None
    if admins is not None:
        return _rule_verdict(admins)
    if context.policy.builtin_approvals > 1:
        return _first(BUILTIN_APPROVALS, context)
    return None


def _bounded(rule: Rule) -> bool:
    """A require_approval rule still sends the call to a person: only an allow is bounded."""
    return rule.reviewer_bounded and rule.verdict == "allow"


def _passed_over(approval: Verdict, rule: Rule) -> Verdict:
    name = f"rule {rule.id} ({rule.reason})" if rule.reason else f"rule {rule.id}"
    why = (
        f"{name} does not allow this call: a reviewer who is not a policy admin widened "
        "it, and only a policy admin's rule may allow what this check sends to a person"
    )
    return replace(approval, reason=f"{approval.reason}; {why}")


def _rule_verdict(rule: Rule | None) -> Verdict | None:
    if rule is None:
        return None
    reason = rule.reason or _generated_reason(rule)
    return Verdict(rule.verdict, reason, f"rule {rule.id}", quorum=rule.quorum)


_VERBS = {"deny": "denies", "allow": "allows", "require_approval": "asks a person to approve"}


def _generated_reason(rule: Rule) -> str:
    args = json.dumps(dict(rule.args), sort_keys=True) if rule.args else "any arguments"
    return f"rule {rule.id} {_VERBS[rule.verdict]} {rule.tool} with {args}"


def _fallthrough(context: CallContext) -> Verdict:
    if is_read_only(context.tool, context.args):
        return Verdict("allow", f"{context.tool} only reads", "builtin:read-only")
    return Verdict("allow", "nothing in the policy objects to this call", "builtin:default-allow")
