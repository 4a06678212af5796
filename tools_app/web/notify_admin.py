"""Admin for notification channels, their deliveries (with "send again"), Slack users
and people's preferences.

A channel's secrets are write-only: the form never shows them (an empty field keeps the
saved one). A configuration that cannot work (a host not allowed, a missing secret, a
Slack user id that is not one) is a field error, never a 500.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from tools_app.models import (
    AuditEntry,
    Channel,
    Delivery,
    DeliveryAttempt,
    NotifyPreference,
    SlackUser,
)
from tools_app.services.channels import (
    SECRETS,
    SLACK_ID,
    channel_changed,
    channel_delete,
    channel_problems,
    slack_user_problem,
)
from tools_app.services.delivery import delivery_send_again
from tools_app.web.admin_forms import LinesField

KEEP = "Write-only: never shown once saved. Leave empty to keep the saved one."
ADMIN = AuditEntry.Via.ADMIN


class ChannelForm(forms.ModelForm[Channel]):
    secret = forms.CharField(
        required=False, widget=forms.PasswordInput(render_value=False),
        help_text=f"Webhook: the HMAC secret. Slack: the bot token (xoxb-…). {KEEP}",
    )  # fmt: skip
    signing_secret = forms.CharField(
        required=False, widget=forms.PasswordInput(render_value=False),
        help_text=f"Slack: the app's signing secret, for Approve/Deny. {KEEP}",
    )  # fmt: skip
    recipients = LinesField(required=False, help_text="Email: one address a line.")
    rules = LinesField(required=False, help_text="Globs of the rule (builtin:protected-path …).")
    sessions = LinesField(required=False, help_text="Session ids, one a line; empty: any.")

    class Meta:
        model = Channel
        fields = (
            "name", "kind", "enabled", "url", "secret", "signing_secret", "slack_channel",
            "interactive", "recipients", "to_reviewers", "groups", "projects", "policies",
            "sessions",
            "rules", "escalation",
        )  # fmt: skip

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        for name in SECRETS:  # empty: keep what is saved
            if not data.get(name):
                data[name] = getattr(self.instance, name, "")
        for field, problem in channel_problems(data).items():
            if field in self.fields and field not in self.errors:
                self.add_error(field, problem)
        if not self.errors:
            data["sessions"] = [int(value) for value in data.get("sessions") or []]
        return data

    def fields_changed(self) -> list[str]:
        """The fields this save changed, for the audit trail; a secret (by name) only when
        a new one was typed: an empty field keeps the saved one, which Django counts as a
        change."""
        return [
            name for name in self.changed_data
            if name not in SECRETS or self.cleaned_data.get(name) != self.initial.get(name)
        ]  # fmt: skip


@admin.register(Channel)
class ChannelAdmin(admin.ModelAdmin[Channel]):
    form = ChannelForm
    list_display = ("name", "kind", "enabled", "escalation", "failures", "failing_since")
    list_filter = ("kind", "enabled", "escalation")
    readonly_fields = ("failures", "failing_since")

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        """Saved with its policies and groups: an audit entry naming what changed."""
        super().save_related(request, form, formsets, change)
        channel_changed(
            channel=form.instance, user=request.user, via=ADMIN, created=not change,
            changed=form.fields_changed(),
        )  # fmt: skip

    def delete_model(self, request: HttpRequest, obj: Channel) -> None:
        channel_delete(channel=obj, user=request.user, via=ADMIN)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Channel]) -> None:
        for channel in queryset:
            channel_delete(channel=channel, user=request.user, via=ADMIN)


class AttemptInline(admin.TabularInline[DeliveryAttempt, Delivery]):
    model = DeliveryAttempt
    extra = 0
    can_delete = False
    fields = readonly_fields = ("at", "ok", "status_code", "milliseconds", "error")

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin[Delivery]):
    """What was sent, to where, and every attempt; "send again" tries once more."""

    list_display = ("id", "channel", "event", "tool_call", "address", "state", "attempts",
                    "created_at", "sent_at")  # fmt: skip
    list_filter = ("state", "event", "channel")
    inlines = [AttemptInline]
    actions = ["send_again"]
    readonly_fields = (
        "channel", "tool_call", "event", "address", "state", "attempts", "next_attempt_at",
        "external_ref", "calls", "created_at", "sent_at",
    )  # fmt: skip

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.action(description="Send again", permissions=["change"])
    def send_again(self, request: HttpRequest, queryset: QuerySet[Delivery]) -> None:
        for delivery in queryset:
            delivery_send_again(delivery=delivery)
        self.message_user(request, f"Sending {queryset.count()} again.", messages.SUCCESS)


class SlackUserForm(forms.ModelForm[SlackUser]):
    class Meta:
        model = SlackUser
        fields = ("slack_id", "user")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        slack_id = str(data.get("slack_id", "")).strip()
        data["slack_id"] = slack_id
        problem = slack_user_problem(slack_id, data.get("user"))
        if problem:
            field = "slack_id" if not SLACK_ID.match(slack_id) else "user"
            self.add_error(field, problem)
        return data


@admin.register(SlackUser)
class SlackUserAdmin(admin.ModelAdmin[SlackUser]):
    form = SlackUserForm
    list_display = ("slack_id", "user")


@admin.register(NotifyPreference)
class NotifyPreferenceAdmin(admin.ModelAdmin[NotifyPreference]):
    list_display = ("user", "mode", "digest_minutes", "last_digest_at")
    readonly_fields = ("last_digest_at",)
