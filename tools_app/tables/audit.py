"""The audit trail: who did what, when, from where, having seen what, and why.

An entry is only ever added (by `services/audit.py` `audit_record`, inside the
transaction of the change it records). Nothing edits one: `save()` of a stored entry,
`delete()` and the queryset's `update()` and `delete()` refuse; the retention sweep
removes entries past `AGENTWEB_AUDIT_DAYS` with one SQL DELETE of its own.
"""

from __future__ import annotations

from typing import Any

from django.db import models
from django.utils import timezone


class AppendOnly(Exception):
    """An attempt to change or delete an audit entry."""


class AuditQuerySet(models.QuerySet["AuditEntry"]):
    def update(self, **kwargs: Any) -> int:
        raise AppendOnly("Audit entries are never changed.")

    def delete(self) -> tuple[int, dict[str, int]]:
        raise AppendOnly("Audit entries are never deleted (the retention sweep prunes them).")


class AuditEntry(models.Model):
    """One recorded action. References are plain values, not foreign keys: an entry
    outlives the session, call, policy or user it names."""

    class Via(models.TextChoices):
        BROWSER = "browser"
        API = "api", "API"
        SLACK = "slack"
        ADMIN = "admin"
        CLI = "cli", "command line"
        SYSTEM = "system"

    class Action(models.TextChoices):
        DECISION = "decision"
        RULE_REMEMBER = "rule.remember", "remembered rule"
        POLICY_CHANGE = "policy.change", "policy change"
        POLICY_DELETE = "policy.delete", "policy deleted"
        SKILL_CHANGE = "skill.change", "skill change"
        SKILL_DELETE = "skill.delete", "skill deleted"
        PROJECT_CHANGE = "project.change", "project change"
        CHANNEL_CHANGE = "channel.change", "channel change"
        CHANNEL_DELETE = "channel.delete", "channel deleted"
        TOKEN_CREATE = "token.create", "token created"
        TOKEN_REVOKE = "token.revoke", "token revoked"
        ACCOUNT_GROUPS = "account.groups", "groups set at sign-in"
        SIGN_IN_LOCK = "sign_in.lock", "password sign-in shut after failures"
        SIGN_IN_CLEAR = "sign_in.clear", "sign-in failures cleared"
        ACCOUNT_PASSWORD = "account.password", "password changed"
        SESSION_CANCEL = "session.cancel", "session cancelled"
        CREDENTIAL_CHANGE = "credential.change", "credential change"
        CREDENTIAL_DELETE = "credential.delete", "credential deleted"
        UPSTREAM_CHANGE = "upstream.change", "MCP upstream change"
        UPSTREAM_ACCEPT = "upstream.accept", "MCP tool definition accepted"
        # What a command's run changed (ToolCall.outcome), recorded by the system.
        RUN_OUTCOME = "tool_call.outcome", "run outcome"

    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    # The person's id and username as they were (a deleted user's entries stay as they are).
    actor_ref = models.PositiveIntegerField(null=True, blank=True)
    actor_name = models.CharField(max_length=150, blank=True)
    via = models.CharField(max_length=10, choices=Via.choices)
    action = models.CharField(max_length=30, choices=Action.choices)
    decision = models.CharField(max_length=10, blank=True)
    object_type = models.CharField(max_length=30)
    object_id = models.CharField(max_length=100, blank=True)
    object_repr = models.CharField(max_length=300, blank=True)
    session_ref = models.PositiveIntegerField(null=True, blank=True, db_index=True)
    tool_call_ref = models.PositiveIntegerField(null=True, blank=True)
    tool = models.CharField(max_length=200, blank=True)
    policy_name = models.CharField(max_length=100, blank=True)
    project_name = models.CharField(max_length=100, blank=True, db_index=True)
    # What the person saw: the SHA-256 of the preview's canonical JSON (empty: none shown).
    preview_hash = models.CharField(max_length=64, blank=True)
    reason = models.TextField(blank=True)
    details = models.JSONField(default=dict, blank=True)

    objects = AuditQuerySet.as_manager()

    class Meta:
        ordering = ["-id"]
        verbose_name_plural = "audit entries"
        indexes = [
            models.Index(fields=["actor_name", "id"]),
            models.Index(fields=["action", "id"]),
        ]

    def __str__(self) -> str:
        who = self.actor_name or "system"
        return f"{self.created_at:%Y-%m-%d %H:%M:%S} {who} {self.action} {self.object_repr}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise AppendOnly("Audit entries are never changed.")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise AppendOnly("Audit entries are never deleted (the retention sweep prunes them).")
