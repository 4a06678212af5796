"""Channels that tell reviewers a call waits (webhook, Slack, email), what each sent and
every attempt, Slack users linked to agentweb users, and each person's preference.

Secrets (a webhook's HMAC secret, a Slack bot token or signing secret) are stored as
given and never shown again: the admin's fields are write-only.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Channel(models.Model):
    class Kind(models.TextChoices):
        WEBHOOK = "webhook"
        SLACK = "slack", "Slack"
        EMAIL = "email"

    name = models.SlugField(max_length=100, unique=True)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    enabled = models.BooleanField(default=True)
    url = models.CharField(
        max_length=1000,
        blank=True,
        help_text="Webhook: where to POST. Slack: an incoming-webhook URL, or the Web API's "
        "base (https://slack.com/api) with a bot token.",
    )
    secret = models.CharField(
        max_length=500, blank=True, help_text="Webhook: the HMAC secret. Slack: the bot token."
    )
    signing_secret = models.CharField(
        max_length=500, blank=True, help_text="Slack: the app's signing secret (Approve/Deny)."
    )
    slack_channel = models.CharField(
        max_length=100, blank=True, help_text="Slack with a bot token: the channel's id."
    )
    recipients = models.JSONField(
        default=list, blank=True, help_text="Email: addresses told besides reviewers."
    )
    to_reviewers = models.BooleanField(
        default=False, help_text="Email: also each reviewer with an address, as they prefer."
    )
    groups = models.ManyToManyField(
        "auth.Group",
        blank=True,
        related_name="+",
        help_text="Email: also every member of these groups who may see the call, as they "
        "prefer (an escalation channel with a group reaches that group).",
    )
    interactive = models.BooleanField(
        default=False, help_text="Slack: Approve and Deny buttons (needs the signing secret)."
    )
    # Routing: empty means any.
    policies = models.ManyToManyField("tools_app.Policy", blank=True, related_name="channels")
    projects = models.ManyToManyField("tools_app.Project", blank=True, related_name="channels")
    sessions = models.JSONField(default=list, blank=True, help_text="Session ids; empty: any.")
    rules = models.JSONField(
        default=list, blank=True, help_text="Globs of the rule that sent a call to a person."
    )
    escalation = models.BooleanField(
        default=False,
        help_text="Hears only calls still waiting after their policy's escalate_after_seconds.",
    )
    failures = models.PositiveIntegerField(default=0, editable=False)
    failing_since = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind})"


class Delivery(models.Model):
    """One message for one channel (and one address, for email), and how it went."""

    class State(models.TextChoices):
        PENDING = "pending"
        RETRYING = "retrying"
        SENT = "sent"
        FAILED = "failed"
        HELD = "held"  # waiting for its recipient's digest

    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="deliveries")
    tool_call = models.ForeignKey(
        "tools_app.ToolCall", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    event = models.CharField(max_length=30)
    address = models.CharField(max_length=300, blank=True)
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    # A digest: the ids of the calls it collects.
    calls = models.JSONField(default=list, blank=True)
    # Slack with a bot token: "CHANNEL:TS" of the posted message, edited on a decision.
    external_ref = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        verbose_name_plural = "deliveries"
        indexes = [models.Index(fields=["state", "next_attempt_at"])]

    def __str__(self) -> str:
        return f"delivery {self.pk}: {self.event} to {self.channel.name} ({self.state})"


class DeliveryAttempt(models.Model):
    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="tries")
    at = models.DateTimeField(auto_now_add=True)
    ok = models.BooleanField(default=False)
    status_code = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    milliseconds = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"attempt {self.pk} of delivery {self.delivery_id}"


class SlackUser(models.Model):
    """A Slack user id linked to the agentweb user whose permissions a click carries."""

    slack_id = models.CharField(max_length=30, unique=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")

    def __str__(self) -> str:
        return f"{self.slack_id} → {self.user}"


class NotifyPreference(models.Model):
    class Mode(models.TextChoices):
        IMMEDIATELY = "immediately"
        DIGEST = "digest"
        OFF = "off"

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notify_preference"
    )
    mode = models.CharField(max_length=12, choices=Mode.choices, default=Mode.IMMEDIATELY)
    digest_minutes = models.PositiveIntegerField(default=30)
    last_digest_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.user}: {self.mode}"
