"""What an approvals card shows for one tool call: which preview, which edit field, the
rule "Approve & remember" would create, and, once decided, who decided and how."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from tools_app import access
from tools_app.models import Decision, ToolCall
from tools_app.services.policies import remember_patterns

# The argument a reviewer edits in a text area for "Edit & approve"; other tools: JSON.
EDIT_FIELDS = {"write_file": "content", "edit_file": "new_string"}
DIFF_TOOLS = {"write_file", "edit_file", "git_commit", "apply_command_effect"}
KINDS = {
    "run_command": "command",
    "create_pull_request": "pull",
    "web_fetch": "fetch",
    "spawn_subagent": "subagent",
}
FINAL_WORDS = {
    ToolCall.Status.EXPIRED: "expired",
    ToolCall.Status.CANCELLED: "cancelled",
    ToolCall.Status.DENIED: "denied",
}


def preview_kind(call: ToolCall) -> str:
    """Which preview partial shows the call: diff, command, pull, fetch, subagent, json."""
    if call.tool in KINDS:
        return KINDS[call.tool]
    if call.tool in DIFF_TOOLS or (call.preview or {}).get("diff"):
        return "diff"
    return "json"


def card_context(call: ToolCall, user: Any, **extra: Any) -> dict[str, Any]:
    """Everything `_card.html` needs; `extra` carries an error and the reviewer's text."""
    field = EDIT_FIELDS.get(call.tool)
    awaiting = call.status == ToolCall.Status.AWAITING_APPROVAL
    context = {
        "call": call,
        "kind": preview_kind(call),
        "preview": call.preview or {},
        "awaiting": awaiting,
        "decided": None if awaiting else decided_text(call),
        "may_approve": access.may_decide(user, access.BROWSER, call, approve=True),
        "edit_field": field,
        "edit_value": _edit_value(call, field),
        "args_json": json.dumps(call.args, indent=2, ensure_ascii=False),
        "remember": sorted(remember_patterns(call.args).items()),
        "network": call.session.policy.command_network,
        "host": _host(call) if call.tool == "web_fetch" else None,
    }
    context.update(extra)
    return context


def _edit_value(call: ToolCall, field: str | None) -> str:
    value = call.args.get(field) if field else None
    return value if isinstance(value, str) else ""


def _host(call: ToolCall) -> str:
    """The host the URL really names: punycode for look-alike names, and the port."""
    try:
        parts = urlsplit(str(call.args.get("url", "")))
        host = parts.hostname or ""
        ascii_host = host.encode("idna").decode("ascii") if host else ""
        return f"{ascii_host}:{parts.port}" if parts.port else ascii_host
    except (ValueError, UnicodeError):
        return "(the URL has no valid host)"


def decided_text(call: ToolCall) -> str:
    """ "Decided by rita: approved", "…: denied (reason)", "Expired", "Cancelled"."""
    try:
        human: Decision | None = call.human
    except Decision.DoesNotExist:
        human = None
    if human is None:
        word = FINAL_WORDS.get(ToolCall.Status(call.status), call.status)
        return f"No longer waiting: {word}."
    who = human.user.get_username() if human.user else "a deleted user"
    how = "approved" if human.decision == Decision.Verdict.APPROVE else "denied"
    if human.edited_args is not None and how == "approved":
        how = "approved with edited arguments"
    if human.remember and how == "approved":
        how = "approved and remembered"
    reason = f" ({human.reason})" if human.reason else ""
    return f"Decided by {who}: {how}{reason}"
