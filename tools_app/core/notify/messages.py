"""What a notification says, for each kind of channel, from plain facts about one call.

A message carries a summary (the tool, the path or command, the reason it waits) and a
link to the card; never the preview's content. The services redact the summary with the
workspace's secret values before it gets here, as tool results are.

Webhook body (schema `agentweb.notification/1`, documented in the README):
`{"schema", "event", "delivery", "sent_at", "tool_call": {...}, "decision": {...} | null}`.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

SCHEMA = "agentweb.notification/1"
EVENTS = (
    "tool_call.waiting", "tool_call.decided", "tool_call.escalated", "digest",
    "tool_call.finished",  # to a webhook told of the decision: what the run changed
)  # fmt: skip
SUMMARY_CHARS = 300


@dataclass(frozen=True)
class CallFacts:
    """One call as a notification tells it (already redacted)."""

    id: int
    tool: str
    session: int
    task: str
    policy: str
    status: str
    reason: str
    rule: str
    summary: str
    url: str
    waiting_since: str = ""
    expires_at: str = ""
    decision: Mapping[str, Any] | None = None  # {"by", "decision", "reason", "at"}
    # What its run changed, once it ran (core/outcomes.py); "" / None: not recorded.
    outcome: str = ""
    outcome_detail: str = ""
    held_call: int | None = None
    network: str = ""


@dataclass(frozen=True)
class Message:
    event: str
    calls: Sequence[CallFacts]
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def call(self) -> CallFacts:
        return self.calls[0]


def summarize(tool: str, args: Mapping[str, Any], changed_lines: int | None) -> str:
    """A line a person reads to know what waits: a path, a command, a pull request."""
    text = _summary(tool, args)
    if changed_lines:
        text += f" ({changed_lines} changed lines)"
    return _clip(text, SUMMARY_CHARS)


def _summary(tool: str, args: Mapping[str, Any]) -> str:
    if "command" in args:
        return f"{tool}: {args['command']}"
    if tool == "create_pull_request":
        return f"pull request {args.get('title', '')!r} into {args.get('base') or 'the default'}"
    if "url" in args:
        return f"{tool}: {args.get('method') or 'GET'} {args['url']}"
    if "path" in args:
        return f"{tool}: {args['path']}"
    shown = json.dumps(dict(args), ensure_ascii=False, sort_keys=True, default=str)
    return f"{tool} {shown}"


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


WAITING_EVENTS = frozenset({"tool_call.waiting", "tool_call.escalated"})


def headline(message: Message) -> str:
    call = message.call
    if message.event == "digest":
        return f"{len(message.calls)} tool calls wait for a person"
    if message.event == "tool_call.decided" and call.decision:
        verdict = "approved" if call.decision.get("decision") == "approve" else "denied"
        return f"Tool call {call.id} ({call.tool}) was {verdict} by {call.decision.get('by')}"
    if message.event == "tool_call.decided":
        return f"Tool call {call.id} ({call.tool}) is {call.status}"
    if message.event == "tool_call.finished":
        outcome = f" · {call.outcome_detail}" if call.outcome_detail else ""
        return f"Tool call {call.id} ({call.tool}) {call.status}{outcome}"
    still = "still waits" if message.event == "tool_call.escalated" else "waits"
    return f"Tool call {call.id} ({call.tool}) {still} for a person"


# --- webhook ---------------------------------------------------------------------------


def webhook_body(message: Message, *, delivery: int, sent_at: str) -> bytes:
    body: dict[str, Any] = {
        "schema": SCHEMA,
        "event": message.event,
        "delivery": delivery,
        "sent_at": sent_at,
        "text": headline(message),
    }
    if message.event == "digest":
        body["tool_calls"] = [_call_dict(call) for call in message.calls]
    else:
        body["tool_call"] = _call_dict(message.call)
        body["decision"] = dict(message.call.decision) if message.call.decision else None
    return json.dumps(body, ensure_ascii=False, sort_keys=True).encode()


def _call_dict(call: CallFacts) -> dict[str, Any]:
    values = asdict(call)
    values.pop("decision")
    return values


# --- Slack (Block Kit) -----------------------------------------------------------------


def _mrkdwn(text: str) -> str:
    """Slack's three escapes; anything else is shown as typed."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_payload(message: Message, *, interactive: bool) -> dict[str, Any]:
    """`text` (the notification's fallback) and `blocks`; Approve/Deny buttons while the
    call waits and the channel takes decisions, else a button that opens the card."""
    if message.event == "digest":
        lines = [
            f"• <{c.url}|#{c.id} {_mrkdwn(c.tool)}> {_mrkdwn(c.summary)}" for c in message.calls
        ]
        digest = [_section(f"*{_mrkdwn(headline(message))}*"), _section("\n".join(lines))]
        return {"text": headline(message), "blocks": digest}
    call = message.call
    blocks: list[dict[str, Any]] = [
        _section(f"*{_mrkdwn(headline(message))}*"),
        _section(f"`{_mrkdwn(call.summary)}`"),
        _context(
            f"Why: {_mrkdwn(call.reason or call.rule)} · session #{call.session} · "
            f"policy {_mrkdwn(call.policy)}"
        ),
    ]
    if call.decision and call.decision.get("reason"):
        blocks.append(_context(f"Reason: {_mrkdwn(str(call.decision['reason']))}"))
    blocks.append(_actions(call, waiting=message.event in WAITING_EVENTS, interactive=interactive))
    return {"text": headline(message), "blocks": blocks}


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text[:3000]}}


def _context(text: str) -> dict[str, Any]:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": text[:3000]}]}


def _button(text: str, action: str, call: CallFacts, style: str = "") -> dict[str, Any]:
    button: dict[str, Any] = {
        "type": "button",
        "text": {"type": "plain_text", "text": text},
        "action_id": action,
        "value": str(call.id),
    }
    if style:
        button["style"] = style
    return button


def _actions(call: CallFacts, *, waiting: bool, interactive: bool) -> dict[str, Any]:
    elements = [{**_button("Open the card", "open", call), "url": call.url}]
    if waiting and interactive:
        elements += [_button("Approve", "approve", call, "primary"),
                     _button("Deny", "deny", call, "danger")]  # fmt: skip
    return {"type": "actions", "block_id": f"call-{call.id}", "elements": elements}


# Slack's Deny asks why in a modal (`views.open`); its submission comes back with these ids.
DENY_CALLBACK = "agentweb_deny"
REASON_BLOCK = REASON_INPUT = "reason"
REASON_CHARS = 2000


def slack_deny_modal(call: CallFacts) -> dict[str, Any]:
    """The modal a Deny click opens: what is denied, and a required reason the agent reads."""
    return {
        "type": "modal",
        "callback_id": DENY_CALLBACK,
        "private_metadata": str(call.id),
        "title": {"type": "plain_text", "text": f"Deny tool call {call.id}"[:24]},
        "submit": {"type": "plain_text", "text": "Deny"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "blocks": [
            _section(f"`{_mrkdwn(call.summary)}`"),
            {
                "type": "input",
                "block_id": REASON_BLOCK,
                "label": {"type": "plain_text", "text": "Why? The agent reads it."},
                "element": {
                    "type": "plain_text_input",
                    "action_id": REASON_INPUT,
                    "multiline": True,
                    "max_length": REASON_CHARS,
                },
            },
        ],
    }


# --- email -------------------------------------------------------------------------------


def email_parts(message: Message) -> tuple[str, str, str]:
    """Subject, plain text and HTML, each call with its link."""
    subject = f"[agentweb] {headline(message)}"
    lines, items = [headline(message), ""], []
    for call in message.calls:
        why = call.reason or call.rule
        lines += [f"#{call.id} {call.summary}", f"  why: {why}", f"  session #{call.session}, "
                  f"policy {call.policy}", f"  {call.url}", ""]  # fmt: skip
        items.append(
            f'<li><a href="{html.escape(call.url)}">#{call.id} {html.escape(call.tool)}</a>: '
            f"<code>{html.escape(call.summary)}</code><br>why: {html.escape(why)}<br>"
            f"session #{call.session}, policy {html.escape(call.policy)}</li>"
        )
    text = "\n".join(lines)
    body = f"<p><strong>{html.escape(headline(message))}</strong></p><ul>{''.join(items)}</ul>"
    return subject, text, body
