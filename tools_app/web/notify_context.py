"""Every reviewer's page says when a notification channel keeps failing: they may be
missing what waits for them."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from tools_app.selectors.channels import channels_failing
from tools_app.web.context_processors import reviewer_browsing


def failing_channels(request: HttpRequest) -> dict[str, Any]:
    if not reviewer_browsing(request):
        return {"failing_channels": []}
    return {"failing_channels": [channel.name for channel in channels_failing()]}
