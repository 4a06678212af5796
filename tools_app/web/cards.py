"""What an approvals card shows for one tool call: which preview, which edit field, the
rule "Approve & remember" would create, and, once decided, who decided and how."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlsplit

from tools_app import access
from tools_app.core import rendering
from tools_app.core.card_facts import InAgentweb, OnAgentMachine, Where, card_facts
from tools_app.core.gateway.claude_code import sandbox_off
from tools_app.core.policy.remember import remember_patterns
from tools_app.core.skills.executors import unfilled_placeholders
from tools_app.core.tools.catalogue import facts_for
from tools_app.models import Decision, PullRequest, ToolCall
from tools_app.selectors.decisions import quorum_status
from tools_app.selectors.egress import credential_hosts, egress_hosts
from tools_app.selectors.sessions import long_text

# An escaped pair (`\\` and any character), or an invisible character on its own.
_HIDDEN_CLASS = "[\x00-\x1f\x7f-\x9f\u00ad\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]"
_HIDDEN_PAIR = re.compile(_HIDDEN_CLASS)
_ESCAPED_OR_HIDDEN = re.compile(rf"\\(.)|({_HIDDEN_CLASS})", re.DOTALL)
FINAL_WORDS = {
    ToolCall.Status.EXPIRED: "expired",
    ToolCall.Status.CANCELLED: "cancelled",
    ToolCall.Status.DENIED: "denied",
}


def preview_kind(call: ToolCall) -> str:
    """Which preview partial shows the call: its tool's card kind (command, pull, fetch,
    subagent, skill), else diff or json."""
    facts = facts_for(call.tool)
    if facts.card:
        return facts.card
    if facts.shows_diff or (call.preview or {}).get("diff"):
        return "diff"
    return "json"


def call_view(call: ToolCall) -> dict[str, Any]:
    """What `{% tool_call %}` shows of a call on every page (the inbox card, the session
    timeline, the pull request page): which preview, and the facts the previews show."""
    kind = preview_kind(call)
    return {
        "kind": kind,
        "preview": call.preview or {},
        "facts": card_facts(where_of(call)),
        "args_hidden": rendering.hidden_count(json.dumps(call.args, ensure_ascii=False)),
        "host": _host(call) if facts_for(call.tool).shows_host else None,
        "unfilled": _unfilled(call.preview or {}),
        "fold_result": long_text(call.result or ""),
    }


def pull_request_call(pull: PullRequest) -> ToolCall:
    """A recorded pull request as the `create_pull_request` call that proposes it (not
    saved): its page shows it through `{% tool_call %}`, as the card that approved it."""
    fields = {"title": pull.title, "body": pull.body, "base": pull.base, "head": pull.head}
    preview = {**fields, "draft": pull.draft, "commits": pull.commits, "diff": pull.diff}
    return ToolCall(tool="create_pull_request", args=fields, preview=preview)


# A gateway call is edited in the agent's own shape: the field of its native input that
# a reviewer edits in a text area (other tools: the whole native input as JSON).
NATIVE_EDIT_FIELDS = {"Write": "content", "Edit": "new_string", "Bash": "command"}


def edit_target(call: ToolCall) -> tuple[str | None, dict[str, Any]]:
    """The field "Edit & approve" edits and the arguments it edits: a gateway call's
    native input (what will run on the agent's machine), else agentweb's arguments."""
    if call.native_tool:
        return NATIVE_EDIT_FIELDS.get(call.native_tool), dict(call.native_input or {})
    return facts_for(call.tool).edit_field, dict(call.args)


def edited_text(original: object, typed: str) -> str:
    """The text a reviewer typed, with the original's line breaks: a text area sends each
    line break as CRLF (HTML form submission), which would turn a file's LF endings into
    CRLF and end each line of a command with a carriage return. CRLF stays only where
    the original had it."""
    if isinstance(original, str) and "\r\n" in original:
        return typed
    return typed.replace("\r\n", "\n")


def card_context(call: ToolCall, user: Any, **extra: Any) -> dict[str, Any]:
    """Everything `_card.html` needs; `extra` carries an error and the reviewer's text."""
    field, edited = edit_target(call)
    awaiting = call.status == ToolCall.Status.AWAITING_APPROVAL
    quorum = quorum_status(call)
    approved_already = quorum is not None and user.get_username() in quorum["approved_by"]
    context = {
        **call_view(call),
        "call": call,
        "awaiting": awaiting,
        "decided": None if awaiting else decided_text(call),
        "quorum": quorum,
        "approved_already": approved_already,
        "may_approve": not approved_already
        and access.may_decide(user, access.BROWSER, call, approve=True),
        "edit_field": field,
        "edit_value": _edit_value(edited, field),
        "args_json": json.dumps(edited, indent=2, ensure_ascii=False),
        "remember": remember_fields(call),
        "remember_hosts": remembered_hosts(call),
    }
    context.update(extra)
    return context


def where_of(call: ToolCall) -> Where:
    """Where the call runs, with what the card may say of it: the agent's machine for a
    gateway call, else agentweb's workspace (agent loop, REST, MCP, command line)."""
    preview = call.preview or {}
    runs_command = facts_for(call.tool).runs_command or preview.get("executor") == "command"
    if call.native_tool:
        gateway = preview.get("gateway")
        notes = gateway.get("notes", []) if isinstance(gateway, dict) else []
        return OnAgentMachine(
            native_tool=call.native_tool,
            cwd=call.session.cwd,
            runs_command=runs_command,
            sandbox_off=sandbox_off(call.native_input or {}),
            timeout=_seconds(call.args.get("timeout")),
            notes=tuple(str(note) for note in notes),
        )
    if not runs_command:
        return InAgentweb(runs_command=False)
    sandboxed = preview.get("sandboxed")
    hosts = egress_hosts(call)
    return InAgentweb(
        runs_command=True,
        sandboxed=sandboxed if isinstance(sandboxed, bool) else None,
        timeout=_seconds(preview.get("timeout", call.args.get("timeout"))),
        awaiting=call.status == ToolCall.Status.AWAITING_APPROVAL,
        hosts=hosts,
        credential_hosts=tuple(credential_hosts(session=call.session, hosts=hosts or ())),
        connections=tuple(c for c in call.connections or [] if isinstance(c, dict)),
    )


def _seconds(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def remembered_hosts(call: ToolCall) -> str | None:
    """What a remembered rule would carry of a command's network: the hosts approving
    this call opens, never more (None: not a command)."""
    if not facts_for(call.tool).runs_command or call.native_tool:
        return None
    return ", ".join(egress_hosts(call) or ()) or "no host"


def remember_fields(call: ToolCall) -> list[tuple[str, str]]:
    """The rule form's fields: each argument the agent sent, with the pattern a person
    would type for its value (`core/policy/remember.py`), as an <input> keeps it."""
    patterns = remember_patterns(call.tool, call.args)
    return [(name, form_safe(pattern)) for name, pattern in sorted(patterns.items())]


def form_safe(pattern: str) -> str:
    """A `re:` pattern with its control and invisible characters spelled `\\uXXXX`: the
    same regular expression, but one an <input> keeps intact (it drops newlines) and a
    reviewer can read."""
    if not pattern.startswith("re:"):
        return pattern
    return _ESCAPED_OR_HIDDEN.sub(_spelled, pattern)


def _spelled(match: re.Match[str]) -> str:
    char = match.group(1) or match.group(2)
    if match.group(1) is not None and not _HIDDEN_PAIR.fullmatch(char):
        return match.group(0)  # an escape such as `\.`: kept as it is
    return f"\\u{ord(char):04x}"


def _unfilled(preview: dict[str, Any]) -> list[str]:
    """A prompt template's placeholders that stay in the text (a skill saved before such
    templates were refused): the card says so rather than show them as if rendered."""
    definition = preview.get("definition")
    if not isinstance(definition, dict) or preview.get("executor") != "prompt":
        return []
    executor, schema = definition.get("executor"), definition.get("input_schema")
    if not isinstance(executor, dict) or not isinstance(schema, dict):
        return []
    return unfilled_placeholders(str(executor.get("template", "")), schema)


def _edit_value(args: dict[str, Any], field: str | None) -> str:
    value = args.get(field) if field else None
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
    how = "approved" if human.decision == Decision.Choice.APPROVE else "denied"
    if human.edited_args is not None and how == "approved":
        how = "approved with edited arguments"
    if human.remember and how == "approved":
        how = "approved and remembered"
    reason = f" ({human.reason})" if human.reason else ""
    quorum = quorum_status(call) if how.startswith("approved") else None
    if quorum is not None:
        how += f" ({len(quorum['approved_by'])} of {quorum['needed']}: "
        how += ", ".join(quorum["approved_by"]) + ")"
    return f"Decided by {who}: {how}{reason}"
