"""Reads of notification channels: which keep failing (named on every reviewer's page)."""

from __future__ import annotations

from tools_app.models import Channel

FAILING_AFTER = 3  # failures in a row that flag a channel


def channels_failing() -> list[Channel]:
    """Enabled channels whose last FAILING_AFTER attempts or more all failed."""
    return list(Channel.objects.filter(enabled=True, failures__gte=FAILING_AFTER))
