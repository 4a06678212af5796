"""Django admin: policies are edited here; audit rows are read-only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from tools_app import access, services
from tools_app.forms import POLICY_GROUPS, PolicyForm, PolicyRuleForm
from tools_app.models import (
    AgentSession,
    ApiToken,
    Decision,
    Event,
    Policy,
    PolicyRule,
    PullRequest,
    Skill,
    SkillTool,
    ToolCall,
)

if TYPE_CHECKING:
    from django.contrib.admin.options import _FieldOpts


class PolicyRuleInline(admin.TabularInline[PolicyRule, Policy]):
    model = PolicyRule
    form = PolicyRuleForm
    extra = 0
    fields = ("position", "tool", "args", "decision", "reason")


def _settings_fieldsets() -> list[tuple[str, _FieldOpts]]:
    """One admin section per group of the policy's settings (see forms.POLICY_GROUPS)."""
    return [(group, {"fields": names}) for group, names in POLICY_GROUPS]


@admin.register(Policy)
class PolicyAdmin(admin.ModelAdmin[Policy]):
    form = PolicyForm
    inlines = [PolicyRuleInline]
    list_display = ("name", "max_diff_lines", "require_approval_above", "version", "updated_at")
    readonly_fields = ("version", "updated_at")
    fieldsets = (
        (None, {"fields": ("name", "description", "version", "updated_at")}),
        *_settings_fieldsets(),
    )

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        if change:
            services.policy_bump_version(policy=form.instance)


FINISHED = (
    AgentSession.Status.DONE,
    AgentSession.Status.FAILED,
    AgentSession.Status.CANCELLED,
)


class ReadOnlyAdmin(admin.ModelAdmin[Any]):
    """Audit rows: visible to admins, changed only by the services."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ToolCall)
class ToolCallAdmin(ReadOnlyAdmin):
    list_display = ("id", "session", "tool", "status", "decision", "rule", "created_at")
    list_filter = ("status", "decision", "tool")
    search_fields = ("tool", "reason", "rule")


@admin.register(Decision)
class DecisionAdmin(ReadOnlyAdmin):
    list_display = ("id", "tool_call", "decision", "user", "remember", "created_at")
    list_filter = ("decision",)


@admin.register(Event)
class EventAdmin(ReadOnlyAdmin):
    list_display = ("id", "session", "seq", "type", "created_at")
    list_filter = ("type",)


@admin.register(PullRequest)
class PullRequestAdmin(ReadOnlyAdmin):
    list_display = ("number", "title", "session", "head", "base", "repo_key", "created_at")
    search_fields = ("title", "head", "repo_key")


@admin.register(AgentSession)
class AgentSessionAdmin(ReadOnlyAdmin):
    """Read-only: a session's status changes only through its services, with an event.
    Cancel is the one action, and it goes through `session_cancel`."""

    list_display = ("id", "task", "status", "kind", "policy", "creator", "created_at")
    list_filter = ("status", "kind")
    actions = ["cancel_sessions"]

    @admin.action(description="Cancel the selected sessions")
    def cancel_sessions(self, request: HttpRequest, queryset: QuerySet[AgentSession]) -> None:
        open_sessions = queryset.exclude(status__in=FINISHED)
        allowed = [s for s in open_sessions if access.may_act_on_session(request.user, s)]
        for session in allowed:
            services.session_cancel(session=session)
        self.message_user(request, f"Cancelled {len(allowed)} session(s).", messages.SUCCESS)
        skipped = len(open_sessions) - len(allowed)
        if skipped:
            note = f"{skipped} session(s) left running: only a creator or a superuser cancels."
            self.message_user(request, note, messages.WARNING)


class SkillToolInline(admin.StackedInline[SkillTool, Skill]):
    model = SkillTool
    extra = 0


@admin.register(Skill)
class SkillAdmin(admin.ModelAdmin[Skill]):
    inlines = [SkillToolInline]
    list_display = ("name", "enabled", "updated_at")


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin[ApiToken]):
    list_display = ("prefix", "user", "scope", "created_at", "last_used_at", "revoked")
    fields = ("user", "scope", "prefix", "created_at", "last_used_at", "revoked")
    readonly_fields = ("user", "scope", "prefix", "created_at", "last_used_at")

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # tokens are made with `manage.py create_api_token`, shown once
