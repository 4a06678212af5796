"""A person's decision on a tool call: the one function every entry point uses."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from tools_app import access
from tools_app.core import engine
from tools_app.core.engine import preview_hash
from tools_app.core.policy.remember import fits_the_call, remember_is_exact, remembered_args
from tools_app.core.policy.risky_commands import APPROVE
from tools_app.core.policy.types import PolicySpec, Quorum
from tools_app.core.tools.catalogue import facts_for
from tools_app.core.tools.jsonsafe import storable_args
from tools_app.errors import Conflict, Forbidden, Invalid
from tools_app.models import Approval, Decision, ToolCall
from tools_app.selectors.egress import egress_hosts
from tools_app.services.audit import Action, audit_tool_call, via_for_scope
from tools_app.services.gateway import gateway_prepare_edit
from tools_app.services.lifecycle import PERSON, tool_call_move
from tools_app.services.policies import (
    load_policy_or_denial,
    policy_rule_remember,
    remember_check,
    widening_needs_admin,
)
from tools_app.services.queueing import EXECUTE_TOOL_CALL, tool_call_enqueue
from tools_app.services.tool_calls import egress_fields, prepare_call, quorum_fields
from tools_app.services.tool_specs import tool_spec_edited

Status = ToolCall.Status


def tool_call_decide(
    *,
    call: ToolCall,
    user: Any,
    scope: str,
    decision: str,
    reason: str = "",
    args: dict[str, Any] | None = None,
    remember: bool = False,
    rule_args: dict[str, str] | None = None,
    via: str = "",
) -> ToolCall:
    """Approve (maybe with edited arguments, maybe remembered) or deny, exactly once.

    The claim is one conditional update from `awaiting_approval`: a second decision
    finds nothing to update and gets Conflict (409). `rule_args`: widened patterns,
    checked (and maybe refused) before anything is decided. `via`: where the person
    decided (the audit trail's "from where"; by default read from `scope`).
    """
    approve = _check_decidable(call, user, scope, decision)
    if rule_args is not None and not (remember and approve):
        raise Invalid("Rule patterns are only for approving with remember.")
    if rule_args is not None:
        rule_args = _widened(call, rule_args, user)
    person = Person(
        user=user, reason=reason, via=via or via_for_scope(scope),
        seen=preview_hash(call.preview),  # before an edit replaces it: what the person saw
        args=args, edited=_edited_names(call, args),
    )  # fmt: skip
    status, outcome = _outcome(call, approve=approve, reason=reason, args=args)
    if status == Status.APPROVED and _quorum_of(call, outcome) != Quorum():
        if remember:
            raise Invalid(_no_remembering(call, outcome))
        return _approve_towards_quorum(call, person, outcome)
    remember = remember and approve
    record = _recorder(person, decision=decision, remember=remember, rule_args=rule_args)
    now = timezone.now()
    move = "decide_approve" if status == Status.APPROVED else "decide_deny"
    # Still waiting and not past its deadline (the sweep may not have expired it yet).
    live = Q(expires_at__isnull=True) | Q(expires_at__gt=now)
    if not tool_call_move(
        call, move, by=PERSON, where=live, then=record, decided_at=now, **outcome
    ):
        raise Conflict(_lost_claim(call.pk, now))
    if call.status == Status.APPROVED and not call.native_tool:  # a gateway's runs elsewhere
        tool_call_enqueue(tool_call_id=call.pk, task=EXECUTE_TOOL_CALL, session=call.session)
    return call


@dataclass(frozen=True)
class Person:
    """Who decides, and what they saw and sent."""

    user: Any
    reason: str
    via: str
    seen: str  # the preview's hash before any edit
    args: dict[str, Any] | None
    edited: list[str]


def _quorum_of(call: ToolCall, outcome: dict[str, Any]) -> Quorum:
    """The approvals the call needs now: an edit never asks for fewer than the call did."""
    count = max(call.approvals_needed, outcome.get("approvals_needed", 1))
    return Quorum(count, call.approvers or outcome.get("approvers", ""))


def _approve_towards_quorum(call: ToolCall, person: Person, outcome: dict[str, Any]) -> ToolCall:
    """One person's yes to a call that needs several: recorded on the arguments as they
    now are (an edit first replaces them and starts the count again); the yes that
    completes the quorum approves the call, exactly as a single decision does. The call's
    row is locked, so two people completing it at once cannot both approve it."""
    quorum = _quorum_of(call, outcome)
    if not access.in_group(person.user, quorum.group) or _own(call, person.user):
        raise Forbidden(_forbidden_reason(person.user, "", call, quorum=quorum))
    now = timezone.now()
    with transaction.atomic():
        locked = (
            ToolCall.objects.select_for_update().select_related("session__policy").get(pk=call.pk)
        )
        live = locked.status == Status.AWAITING_APPROVAL and (
            locked.expires_at is None or locked.expires_at > now
        )
        if not live or locked.args_hash != call.args_hash:
            raise Conflict(_lost_claim(call.pk, now))
        fields = {**outcome, "approvals_needed": quorum.count, "approvers": quorum.group}
        if person.args is not None:
            Approval.objects.filter(tool_call=locked).delete()  # the count starts again
        given = _approval_add(locked, person, fields.get("preview", locked.preview))
        if given < quorum.count:
            tool_call_move(locked, "approve_partly", by=PERSON, **fields)
            _audit_partial(locked, person, given, quorum)
            return locked
        record = _recorder(person, decision=Decision.Choice.APPROVE, remember=False)
        tool_call_move(locked, "decide_approve", by=PERSON, then=record, decided_at=now, **fields)
    if not locked.native_tool:
        tool_call_enqueue(tool_call_id=locked.pk, task=EXECUTE_TOOL_CALL, session=locked.session)
    return locked


def _recorder(
    person: Person, *, decision: str, remember: bool, rule_args: dict[str, str] | None = None
) -> Callable[[ToolCall], None]:
    """What a decision writes in its claim's transaction: the Decision, its audit entry
    and, approved with remember, the rule."""

    def record(call: ToolCall) -> None:
        _record(
            call, user=person.user, decision=decision, reason=person.reason, via=person.via,
            seen=person.seen, args=person.args, edited=person.edited, remember=remember,
        )  # fmt: skip
        if remember and call.status == Status.APPROVED:
            _remember(call, person.user, rule_args, via=person.via, seen=person.seen)

    return record


def _own(call: ToolCall, user: Any) -> bool:
    return bool(call.session.creator_id == user.pk)


def _approval_add(call: ToolCall, person: Person, preview: Any) -> int:
    """This person's yes on the arguments as they now are; how many such yeses there are."""
    # An edit deletes every approval first, so a person's row is always on these arguments.
    shown = preview_hash(preview)
    if Approval.objects.filter(tool_call=call, user=person.user).exists():
        raise Conflict(f"You have already approved tool call {call.pk}; it waits for others.")
    Approval.objects.create(tool_call=call, user=person.user, preview_hash=shown, via=person.via)
    return Approval.objects.filter(tool_call=call, preview_hash=shown).count()


def _audit_partial(call: ToolCall, person: Person, given: int, quorum: Quorum) -> None:
    details: dict[str, Any] = {"status": call.status, "edited": person.args is not None}
    details |= {"approvals": given, "needed": quorum.count, "group": quorum.group}
    if person.args is not None:
        details["edited_args"] = person.edited
    audit_tool_call(
        call=call, action=Action.DECISION, via=person.via, actor=person.user, seen=person.seen,
        decision=Decision.Choice.APPROVE, reason=person.reason, details=details,
    )  # fmt: skip


def _no_remembering(call: ToolCall, outcome: dict[str, Any]) -> str:
    quorum = _quorum_of(call, outcome)
    return (
        f"Tool call {call.pk} needs {quorum.count} approvals: a remembered rule would "
        "approve such calls alone. Approve without remembering; nothing was decided."
    )


def _check_decidable(call: ToolCall, user: Any, scope: str, decision: str) -> bool:
    """Whether this is an approval; raises when it is no decision, the person may not
    make it, or the call no longer waits for one."""
    if decision not in Decision.Choice.values:
        raise Invalid("`decision` must be 'approve' or 'deny'.")
    approve = decision == Decision.Choice.APPROVE
    if not access.may_decide(user, scope, call, approve=approve):
        raise Forbidden(_forbidden_reason(user, scope, call))
    if call.status != Status.AWAITING_APPROVAL:
        raise Conflict(f"Tool call {call.pk} is {call.status}, not awaiting a decision.")
    return approve


def _record(
    call: ToolCall, *, user: Any, decision: str, reason: str, via: str, seen: str,
    args: dict[str, Any] | None, edited: list[str], remember: bool,
) -> None:  # fmt: skip
    """The person's Decision row and its audit entry, in the claim's transaction."""
    Decision.objects.create(
        tool_call=call, user=user, decision=decision, reason=reason,
        edited_args=args, remember=remember,
    )  # fmt: skip
    details = {"status": call.status, "edited": args is not None, "remember": remember}
    if args is not None:
        details["edited_args"] = edited
    audit_tool_call(
        call=call, action=Action.DECISION, via=via, actor=user, seen=seen,
        decision=decision, reason=reason, details=details,
    )  # fmt: skip


def _edited_names(call: ToolCall, args: dict[str, Any] | None) -> list[str]:
    """The names of the arguments an edit changes (the audit names them, never values)."""
    if args is None:
        return []
    sent = (call.native_input if call.native_tool else call.args) or {}
    return sorted(name for name in {*sent, *args} if sent.get(name) != args.get(name))


def _remember(
    call: ToolCall, user: Any, rule_args: dict[str, str] | None, *, via: str, seen: str
) -> None:
    """The rule, reviewer-bounded when it is wider than the call and its author is not a
    policy admin: it then never allows what a risky built-in approval sends to a person
    (an admin's widening is an admin's rule)."""
    bounded = (
        rule_args is not None
        and not remember_is_exact(call.tool, call.args, rule_args)
        and not access.is_policy_admin(user)
    )
    rule = policy_rule_remember(
        policy=call.session.policy, tool=call.tool, args=call.args, user=user,
        rule_args=rule_args, reviewer_bounded=bounded, hosts=_approved_hosts(call),
    )  # fmt: skip
    details = {"rule": rule.pk, "args": rule.args, "reviewer_bounded": bounded}
    details |= {"hosts": rule.hosts} if rule.hosts is not None else {}
    audit_tool_call(
        call=call, action=Action.RULE_REMEMBER, via=via, actor=user, seen=seen,
        decision="allow", reason=rule.reason, details=details,
    )  # fmt: skip


def _approved_hosts(call: ToolCall) -> list[str] | None:
    """A command's grant as the reviewer approved it: what a remembered rule carries, so
    that the calls it allows never get more hosts (none for a command that had none)."""
    if not facts_for(call.tool).runs_command:
        return None
    return list(egress_hosts(call) or ())


def _widened(call: ToolCall, rule_args: dict[str, str], user: Any) -> dict[str, str]:
    """A widened rule keeps one pattern per argument the agent sent (`*` matches any
    value), so it never silently drops a condition; and it is no wider than the call when the
    call waited for a protected path, a risky command or a pull request, unless a
    policy admin widens it (a reviewer's rule would otherwise approve what they never
    saw, checked before the built-in approvals)."""
    if not fits_the_call(call.tool, call.args, rule_args):
        names = ", ".join(sorted(remembered_args(call.tool, call.args))) or "none"
        raise Invalid(f"The rule needs one pattern for each argument ({names}); use * for any.")
    patterns = remember_check(call.tool, rule_args)
    if remember_is_exact(call.tool, call.args, patterns) or not widening_needs_admin(call.rule):
        return patterns
    if not access.is_policy_admin(user):
        raise Forbidden(_widening_refused(call))
    return patterns


def _widening_refused(call: ToolCall) -> str:
    why = call.reason.removesuffix(APPROVE) or "of the policy"
    return (
        "Only a policy admin (permission change_policy) may remember a rule wider than "
        f"this call: it waited for a person because {why} ({call.rule}). Nothing was "
        "decided; remember the exact arguments, or ask a policy admin to widen the rule."
    )


def _lost_claim(call_id: int, now: Any) -> str:
    current = ToolCall.objects.filter(pk=call_id).values_list("status", "expires_at").first()
    if current and current[0] == Status.AWAITING_APPROVAL and current[1] and current[1] <= now:
        return f"Tool call {call_id} expired before a decision."
    return f"Tool call {call_id} was decided by someone else a moment ago."


def _outcome(
    call: ToolCall, *, approve: bool, reason: str, args: dict[str, Any] | None
) -> tuple[str, dict[str, Any]]:
    """The status a decision moves to and the other fields it sets. Edited arguments
    are validated and judged again."""
    if not approve:
        text = f"Denied by a reviewer: {reason}" if reason else "Denied by a reviewer."
        return Status.DENIED, {"result": text, "finished_at": timezone.now()}
    if args is None:
        return Status.APPROVED, {}
    return _outcome_for_edit(call, args)


def _outcome_for_edit(call: ToolCall, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    spec = load_policy_or_denial(call.session.policy)
    if not isinstance(spec, PolicySpec):
        return Status.DENIED, {"reason": spec.reason, "result": spec.reason,
                               "rule": spec.rule, "finished_at": timezone.now()}  # fmt: skip
    prepared = _prepare_edit(spec, call, args)
    if prepared.verdict is None:
        raise Invalid(f"The edited arguments are not valid: {prepared.error}")
    fields: dict[str, Any] = {"native_input": storable_args(args)} if call.native_tool else {}
    fields |= {
        "args": prepared.args,
        "args_hash": engine.args_hash(call.tool, prepared.args),
        "preview": prepared.preview,
        "changed_lines": prepared.changed_lines,
        "reason": prepared.verdict.reason,
        "rule": prepared.verdict.rule,
        "policy_version": spec.version,
        "egress": None if call.native_tool else egress_fields(prepared.verdict),
        **quorum_fields(prepared.verdict),
    }
    if prepared.verdict.kind == "deny":
        reason = f"The edited arguments are denied by the policy: {prepared.verdict.reason}"
        return Status.DENIED, {**fields, "result": reason, "finished_at": timezone.now()}
    return Status.APPROVED, fields


def _prepare_edit(spec: PolicySpec, call: ToolCall, args: dict[str, Any]) -> engine.Prepared:
    """Edited arguments judged again, with the spec the call was judged with. A gateway
    call is edited in the agent's own shape (its native input) and mapped again."""
    if call.native_tool:
        return gateway_prepare_edit(call=call, native_input=args)
    tool = tool_spec_edited(call=call)
    if isinstance(tool, str):
        raise Invalid(tool)
    return prepare_call(spec, tool, args, call.session)


def _forbidden_reason(
    user: Any, scope: str, call: ToolCall, *, quorum: Quorum | None = None
) -> str:
    quorum = quorum or Quorum(call.approvals_needed, call.approvers)
    if scope == "agent":
        return "Agent tokens cannot decide tool calls; use a review token or the browser."
    if not access.is_reviewer(user):
        return "You are not a reviewer; ask an admin to add you to the 'reviewers' group."
    if quorum != Quorum() and _own(call, user):
        return "The session's creator may not approve a call that needs several approvals."
    if quorum.group and not access.in_group(user, quorum.group):
        return f"Only members of the group {quorum.group!r} may approve this call."
    return "This policy requires a reviewer other than the session's creator to approve."
