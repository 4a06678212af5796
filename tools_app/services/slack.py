"""Slack's side of a decision: the modal a Deny click opens to ask why.

Slack gives a click a `trigger_id` that opens a modal for three seconds only, and the
click itself must be answered within three: so `views.open` is sent while the click is
answered, not by a worker, through the same SSRF-guarded client as every delivery and
with a timeout under Slack's limit. A Slack that does not answer delays nothing but that
click's answer (the reviewer is told to deny from the card); no tool call waits on it.
"""

from __future__ import annotations

import json

from django.conf import settings

from tools_app.core.notify import messages, outbound
from tools_app.core.notify.outbound import SendFailed
from tools_app.models import Channel, ToolCall
from tools_app.services.delivery import SLACK_API, call_facts

MODAL_TIMEOUT_SECONDS = 2.0


def slack_deny_form_open(*, channel: Channel, trigger_id: str, call: ToolCall) -> str:
    """Open the modal asking why `call` is denied; "" when Slack opened it, else why not."""
    if not channel.secret:
        return "this channel has no bot token to open a form with"
    view = messages.slack_deny_modal(call_facts(call))
    body = json.dumps({"trigger_id": trigger_id, "view": view}).encode()
    headers = {
        "Content-Type": "application/json; charset=utf-8",
        "Authorization": f"Bearer {channel.secret}",
    }
    url = f"{(channel.url or SLACK_API).rstrip('/')}/views.open"
    try:
        answer = outbound.post(
            url, body, headers, settings.AGENTWEB_NOTIFY_HOSTS,
            private_hosts=settings.AGENTWEB_NOTIFY_PRIVATE_HOSTS, timeout=MODAL_TIMEOUT_SECONDS,
        )  # fmt: skip
        data = json.loads(answer.body)
    except SendFailed as failure:
        return str(failure)
    except ValueError:
        return "Slack answered with something else than JSON"
    if not isinstance(data, dict) or not data.get("ok"):
        return f"Slack refused it: {data.get('error', 'unknown') if isinstance(data, dict) else ''}"
    return ""
