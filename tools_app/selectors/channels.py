"""Reads of notification channels: which keep failing (named on every reviewer's page),
and a person's own preference."""

from __future__ import annotations

from typing import Any

from tools_app.models import Channel, NotifyPreference

FAILING_AFTER = 3  # failures in a row that flag a channel


def channels_failing() -> list[Channel]:
    """Enabled channels whose last FAILING_AFTER attempts or more all failed."""
    return list(Channel.objects.filter(enabled=True, failures__gte=FAILING_AFTER))


def notify_preference_of(user: Any) -> NotifyPreference:
    """The person's preference; the default (immediately, every 30 minutes) if never set."""
    found = NotifyPreference.objects.filter(user=user).first()
    return found or NotifyPreference(user=user)
