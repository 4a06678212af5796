"""Slack's interactivity endpoint: Approve and Deny clicked on a message, and the reason
typed into the form a Deny opens.

`POST /slack/interactivity/<channel>/` is called by Slack, not by a browser: no login
or CSRF token, but every request must carry Slack's signature over its timestamp and
body, made with that channel's signing secret, and be at most five minutes old; a
forged or stale one changes nothing (401). The Slack user must be linked to an
agentweb user (admin: Slack users), whose permissions decide exactly as in the browser:
the one decision service, four-eyes and every rule included.

Approve decides at once. Deny, on a channel with a bot token, opens a modal asking why
(`views.open`); its submission (`view_submission`, signed like a click) denies with that
reason, and a refusal is shown on the form's field. Without a bot token (an incoming
webhook) a modal cannot be opened, and Deny decides at once with "denied in Slack".
"""

from __future__ import annotations

import json
import time
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.http.multipartparser import MultiPartParserError
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from tools_app import access, services
from tools_app.core.digits import ascii_int
from tools_app.core.notify import messages, signing
from tools_app.models import AuditEntry, Channel, SlackUser, ToolCall
from tools_app.selectors.decisions import quorum_status

DECISIONS = {"approve": "approve", "deny": "deny"}
NOT_LINKED = (
    "Your Slack user is not linked to an agentweb account; nothing was decided. "
    "Ask an admin to link it (admin: Slack users)."
)


@csrf_exempt
@require_POST
def slack_interactivity(request: HttpRequest, channel_name: str) -> HttpResponse:
    channel = Channel.objects.filter(
        name=channel_name, kind=Channel.Kind.SLACK, enabled=True, interactive=True
    ).first()
    if channel is None:
        return JsonResponse(
            {"detail": f"There is no interactive Slack channel {channel_name!r}."}, status=404
        )
    why = signing.slack_verify(
        channel.signing_secret,
        request.headers.get("X-Slack-Request-Timestamp", ""),
        request.headers.get("X-Slack-Signature", ""),
        request.body,
        time.time(),
    )
    if why:
        return JsonResponse({"detail": f"Refused: {why}."}, status=401)
    try:
        payload = _payload(request)
        if payload.get("type") == "view_submission":
            return _submitted(*_submission(payload))
        slack_id, action, call_id, trigger = _click(payload)
    except ValueError as exc:
        return JsonResponse({"detail": f"Not an interaction agentweb sent: {exc}."}, status=400)
    if action == "deny" and trigger and channel.secret:
        return _ask_why(channel, slack_id, call_id, trigger)
    reason = "denied in Slack" if action == "deny" else ""
    return _reply(_decide(slack_id, action, call_id, reason)[1])


def _payload(request: HttpRequest) -> dict[str, Any]:
    try:
        payload = json.loads(request.POST.get("payload", ""))
    except MultiPartParserError:
        raise ValueError("the body is not a form Slack sends") from None
    except ValueError:
        raise ValueError("the payload is not JSON") from None
    if not isinstance(payload, dict):
        raise ValueError("the payload is not a JSON object")
    return payload


def _click(payload: dict[str, Any]) -> tuple[str, str, int, str]:
    """(the Slack user id, approve|deny, the call id, the trigger id) of a block_actions."""
    try:
        slack_id = str(payload["user"]["id"])
        action = payload["actions"][0]
        name, value = str(action["action_id"]), str(action["value"])
    except (KeyError, IndexError, TypeError):
        raise ValueError("the payload is not a block_actions JSON") from None
    call_id = ascii_int(value)
    if name not in DECISIONS:
        raise ValueError(f"unknown action {name[:100]!r}")
    if call_id is None:
        raise ValueError("the action's value is not a tool call id")
    return slack_id, DECISIONS[name], call_id, str(payload.get("trigger_id") or "")


def _submission(payload: dict[str, Any]) -> tuple[str, int, str]:
    """(the Slack user id, the call id, the reason typed) of the deny form's submission."""
    try:
        slack_id = str(payload["user"]["id"])
        view = payload["view"]
        callback, metadata = str(view["callback_id"]), str(view["private_metadata"])
        values = view["state"]["values"]
        reason = values[messages.REASON_BLOCK][messages.REASON_INPUT].get("value") or ""
    except (KeyError, TypeError, AttributeError):
        raise ValueError("the payload is not the deny form's view_submission") from None
    call_id = ascii_int(metadata)
    if callback != messages.DENY_CALLBACK or call_id is None:
        raise ValueError(f"unknown form {callback[:100]!r}")
    return slack_id, call_id, str(reason).strip()


def _ask_why(channel: Channel, slack_id: str, call_id: int, trigger: str) -> HttpResponse:
    """Open the deny form when the clicker could deny this call now; else say why not."""
    found = _linked_call(slack_id, call_id)
    if isinstance(found, str):
        return _reply(found)
    call = found[1]
    if call.status != ToolCall.Status.AWAITING_APPROVAL:
        return _reply(f"Tool call {call_id} is {call.status}; nothing was decided.")
    problem = services.slack_deny_form_open(channel=channel, trigger_id=trigger, call=call)
    if problem:
        return _reply(f"The form to say why could not open ({problem}); deny from the card.")
    return HttpResponse(status=200)


def _submitted(slack_id: str, call_id: int, reason: str) -> JsonResponse:
    """Close the form once denied; a refusal is shown on its reason field."""
    if not reason:
        ok, text = False, "Say why: the agent reads it."
    else:
        ok, text = _decide(slack_id, "deny", call_id, reason[: messages.REASON_CHARS])
    if ok:
        return JsonResponse({"response_action": "clear"})
    return JsonResponse({"response_action": "errors", "errors": {messages.REASON_BLOCK: text}})


def _linked_call(slack_id: str, call_id: int) -> tuple[Any, ToolCall] | str:
    """(the linked user, the call as they may see it), or what to tell the clicker."""
    link = SlackUser.objects.select_related("user").filter(slack_id=slack_id).first()
    if link is None:
        return NOT_LINKED
    try:
        return link.user, access.tool_call_for(link.user, call_id, scope="review")
    except Http404:
        return f"There is no tool call {call_id} you may see; nothing was decided."


def _decide(slack_id: str, decision: str, call_id: int, reason: str) -> tuple[bool, str]:
    """(decided, what to tell the clicker)."""
    found = _linked_call(slack_id, call_id)
    if isinstance(found, str):
        return False, found
    user, call = found
    try:
        call = services.tool_call_decide(
            call=call, user=user, scope="review", decision=decision, reason=reason,
            via=AuditEntry.Via.SLACK,
        )  # fmt: skip
    except services.ServiceError as exc:
        return False, f"Tool call {call_id}: {exc}"
    if call.status == call.Status.AWAITING_APPROVAL:  # one yes of several
        quorum = quorum_status(call) or {"still_needed": 0}
        return True, (
            f"Tool call {call_id}: your approval is recorded; it waits for "
            f"{quorum['still_needed']} more."
        )
    verdict = "approved" if decision == "approve" else "denied"
    return True, f"Tool call {call_id} {verdict} by {user.get_username()}."


def _reply(text: str) -> JsonResponse:
    """What the clicker sees (only them); the message itself is edited by the delivery."""
    return JsonResponse({"response_type": "ephemeral", "replace_original": False, "text": text})
