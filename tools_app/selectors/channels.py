"""Reads of notification channels: which keep failing (named on every reviewer's page),
and a person's own preference, and the channels file (`export_channels`)."""

from __future__ import annotations

from typing import Any

from tools_app.models import Channel, NotifyPreference, SlackUser

FAILING_AFTER = 3  # failures in a row that flag a channel


def channels_failing() -> list[Channel]:
    """Enabled channels whose last FAILING_AFTER attempts or more all failed."""
    return list(Channel.objects.filter(enabled=True, failures__gte=FAILING_AFTER))


def notify_preference_of(user: Any) -> NotifyPreference:
    """The person's preference; the default (immediately, every 30 minutes) if never set."""
    found = NotifyPreference.objects.filter(user=user).first()
    return found or NotifyPreference(user=user)


def channel_as_dict(channel: Channel) -> dict[str, Any]:
    """A channel as a channels file holds it: never its secrets."""
    return {
        "name": channel.name,
        "kind": channel.kind,
        "enabled": channel.enabled,
        "url": channel.url,
        "slack_channel": channel.slack_channel,
        "interactive": channel.interactive,
        "recipients": list(channel.recipients),
        "to_reviewers": channel.to_reviewers,
        "groups": sorted(group.name for group in channel.groups.all()),
        "projects": sorted(project.name for project in channel.projects.all()),
        "policies": sorted(policy.name for policy in channel.policies.all()),
        "sessions": list(channel.sessions),
        "rules": list(channel.rules),
        "escalation": channel.escalation,
    }


def channels_export() -> dict[str, Any]:
    """Every channel and Slack link (what `import_channels` reads back; secrets left out)."""
    channels = Channel.objects.prefetch_related("projects", "policies", "groups").order_by("name")
    links = SlackUser.objects.select_related("user").order_by("slack_id")
    return {
        "channels": [channel_as_dict(channel) for channel in channels],
        "slack_users": [
            {"slack_id": link.slack_id, "user": link.user.get_username()} for link in links
        ],
    }
