"""Every reviewer's page says when a notification channel keeps failing: they may be
missing what waits for them."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from tools_app import access
from tools_app.selectors.channels import channels_failing


def failing_channels(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated or not access.may_review(user, access.BROWSER):
        return {"failing_channels": []}
    return {"failing_channels": [channel.name for channel in channels_failing()]}
