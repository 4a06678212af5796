"""People's decisions on tool calls: the one Decision that settles a call, and each
yes towards a call that needs several (its quorum)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Decision(models.Model):
    """A person's decision on a tool call awaiting approval: who, what, why, when (the
    policy's answer is the call's `verdict`)."""

    class Choice(models.TextChoices):
        APPROVE = "approve"
        DENY = "deny"

    tool_call = models.OneToOneField(
        "tools_app.ToolCall", on_delete=models.CASCADE, related_name="human"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    decision = models.CharField(max_length=10, choices=Choice.choices)
    reason = models.TextField(blank=True)
    edited_args = models.JSONField(null=True, blank=True)
    remember = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.decision} on tool call {self.tool_call_id}"


class Approval(models.Model):
    """One person's yes to a call that needs more than one (its quorum): on the arguments
    they saw (`preview_hash`). An edit starts the count again; the last yes that completes
    it is also the call's Decision."""

    tool_call = models.ForeignKey(
        "tools_app.ToolCall", on_delete=models.CASCADE, related_name="approvals"
    )
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    preview_hash = models.CharField(max_length=64)
    via = models.CharField(max_length=20, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["tool_call", "id"]
        constraints = [
            models.UniqueConstraint(fields=["tool_call", "user"], name="one_approval_per_person")
        ]

    def __str__(self) -> str:
        return f"approval of tool call {self.tool_call_id} by {self.user_id}"
