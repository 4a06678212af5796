"""Slack's interactivity endpoint: Approve and Deny clicked on a message.

`POST /slack/interactivity/<channel>/` is called by Slack, not by a browser: no login
or CSRF token, but every request must carry Slack's signature over its timestamp and
body, made with that channel's signing secret, and be at most five minutes old; a
forged or stale one changes nothing (401). The Slack user must be linked to an
agentweb user (admin: Slack users), whose permissions decide exactly as in the browser:
the one decision service, four-eyes and every rule included.
"""

from __future__ import annotations

import json
import time
from typing import Any

from django.http import Http404, HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from tools_app import access, services
from tools_app.core.notify import signing
from tools_app.models import AuditEntry, Channel, SlackUser

DECISIONS = {"approve": "approve", "deny": "deny"}


@csrf_exempt
@require_POST
def slack_interactivity(request: HttpRequest, channel_name: str) -> JsonResponse:
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
        slack_id, action, call_id = _click(request)
    except ValueError as exc:
        return JsonResponse({"detail": f"Not a button click agentweb sent: {exc}."}, status=400)
    return _reply(_decide(slack_id, action, call_id))


def _click(request: HttpRequest) -> tuple[str, str, int]:
    """(the Slack user id, approve|deny, the call id) of a block_actions payload."""
    try:
        payload: Any = json.loads(request.POST.get("payload", ""))
        slack_id = str(payload["user"]["id"])
        action = payload["actions"][0]
        name, value = str(action["action_id"]), str(action["value"])
    except (ValueError, KeyError, IndexError, TypeError):
        raise ValueError("the payload is not a block_actions JSON") from None
    if name not in DECISIONS or not value.isdigit():
        raise ValueError(f"unknown action {name!r}")
    return slack_id, DECISIONS[name], int(value)


def _decide(slack_id: str, decision: str, call_id: int) -> str:
    link = SlackUser.objects.select_related("user").filter(slack_id=slack_id).first()
    if link is None:
        return (
            "Your Slack user is not linked to an agentweb account; nothing was decided. "
            "Ask an admin to link it (admin: Slack users)."
        )
    try:
        call = access.tool_call_for(link.user, call_id, scope="review")
        services.tool_call_decide(
            call=call, user=link.user, scope="review", decision=decision,
            reason=f"{decision}d in Slack" if decision == "deny" else "",
            via=AuditEntry.Via.SLACK,
        )  # fmt: skip
    except Http404:
        return f"There is no tool call {call_id} you may see; nothing was decided."
    except services.ServiceError as exc:
        return f"Tool call {call_id}: {exc}"
    verdict = "approved" if decision == "approve" else "denied"
    return f"Tool call {call_id} {verdict} by {link.user.get_username()}."


def _reply(text: str) -> JsonResponse:
    """What the clicker sees (only them); the message itself is edited by the delivery."""
    return JsonResponse({"response_type": "ephemeral", "replace_original": False, "text": text})
