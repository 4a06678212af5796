"""Admin for notification channels, their deliveries (with "send again"), Slack users
and people's preferences.

A channel's secrets are write-only: the form never shows them (an empty field keeps the
saved one). A configuration that cannot work (a host not allowed, a missing secret, a
Slack user id that is not one) is a field error, never a 500.
"""

from __future__ import annotations

import re
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db.models import QuerySet
from django.http import HttpRequest

from tools_app.core.notify.outbound import url_problem
from tools_app.models import Channel, Delivery, DeliveryAttempt, NotifyPreference, SlackUser
from tools_app.services.delivery import SLACK_API, delivery_send_again
from tools_app.web.admin_forms import LinesField

SECRETS = ("secret", "signing_secret")
KEEP = "Write-only: never shown once saved. Leave empty to keep the saved one."
SLACK_ID = re.compile(r"^[UW][A-Z0-9]{2,29}$")


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
            "interactive", "recipients", "to_reviewers", "groups", "policies", "sessions",
            "rules", "escalation",
        )  # fmt: skip

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        for name in SECRETS:  # empty: keep what is saved
            if not data.get(name):
                data[name] = getattr(self.instance, name, "")
        check = {
            Channel.Kind.WEBHOOK: self._check_webhook,
            Channel.Kind.SLACK: self._check_slack,
            Channel.Kind.EMAIL: self._check_email,
        }.get(data.get("kind", ""))
        if check is not None:
            check(data)
        if data.get("groups") and data.get("kind") != Channel.Kind.EMAIL:
            self.add_error("groups", "A group is told by email: only an email channel has one.")
        self._check_sessions(data)
        return data

    def _host(self, data: dict[str, Any], url: str) -> None:
        problem = url_problem(url, settings.AGENTWEB_NOTIFY_HOSTS)
        if problem:
            self.add_error("url", problem)

    def _check_webhook(self, data: dict[str, Any]) -> None:
        if not data.get("url"):
            self.add_error("url", "A webhook needs the URL to POST to.")
        else:
            self._host(data, data["url"])
        if not data.get("secret"):
            self.add_error("secret", "A webhook needs a secret: every request is signed with it.")

    def _check_slack(self, data: dict[str, Any]) -> None:
        token, url = data.get("secret", ""), data.get("url", "")
        if not token and not url:
            self.add_error("url", "Slack needs an incoming-webhook URL, or a bot token.")
            return
        self._host(data, url or SLACK_API)
        if token and not data.get("slack_channel"):
            self.add_error("slack_channel", "With a bot token, name the channel's id (C…).")
        if data.get("interactive") and not data.get("signing_secret"):
            self.add_error("signing_secret", "Approve and Deny buttons need the signing secret.")

    def _check_email(self, data: dict[str, Any]) -> None:
        for address in data.get("recipients") or []:
            try:
                validate_email(address)
            except ValidationError:
                self.add_error("recipients", f"{address!r} is not an email address.")
        if not (data.get("recipients") or data.get("to_reviewers") or data.get("groups")):
            self.add_error("recipients", "Name an address, a group, or tell the reviewers.")

    def _check_sessions(self, data: dict[str, Any]) -> None:
        ids = data.get("sessions") or []
        bad = [value for value in ids if not str(value).isdigit()]
        if bad:
            self.add_error("sessions", f"{bad[0]!r} is not a session id.")
        else:
            data["sessions"] = [int(value) for value in ids]


@admin.register(Channel)
class ChannelAdmin(admin.ModelAdmin[Channel]):
    form = ChannelForm
    list_display = ("name", "kind", "enabled", "escalation", "failures", "failing_since")
    list_filter = ("kind", "enabled", "escalation")
    readonly_fields = ("failures", "failing_since")


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

    def clean_slack_id(self) -> str:
        value = str(self.cleaned_data.get("slack_id", "")).strip()
        if not SLACK_ID.match(value):
            raise ValidationError(f"{value!r} is not a Slack user id (U… or W…, capitals).")
        return value

    def clean_user(self) -> Any:
        user = self.cleaned_data.get("user")
        if user is not None and not user.is_active:
            raise ValidationError("This user is deactivated; a click would be refused.")
        return user


@admin.register(SlackUser)
class SlackUserAdmin(admin.ModelAdmin[SlackUser]):
    form = SlackUserForm
    list_display = ("slack_id", "user")


@admin.register(NotifyPreference)
class NotifyPreferenceAdmin(admin.ModelAdmin[NotifyPreference]):
    list_display = ("user", "mode", "digest_minutes", "last_digest_at")
    readonly_fields = ("last_digest_at",)
