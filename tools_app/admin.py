"""Django admin: policies are edited here; audit rows are read-only."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from tools_app import services
from tools_app.forms import PolicyForm, PolicyRuleForm
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


class PolicyRuleInline(admin.TabularInline[PolicyRule, Policy]):
    model = PolicyRule
    form = PolicyRuleForm
    extra = 0
    fields = ("position", "tool", "args", "decision", "reason")


@admin.register(Policy)
class PolicyAdmin(admin.ModelAdmin[Policy]):
    form = PolicyForm
    inlines = [PolicyRuleInline]
    list_display = ("name", "max_diff_lines", "require_approval_above", "version", "updated_at")
    readonly_fields = ("version", "updated_at")
    fieldsets = (
        (None, {"fields": ("name", "description", "version", "updated_at")}),
        (
            "Files",
            {
                "fields": (
                    "protected_paths",
                    "secret_paths",
                    "max_diff_lines",
                    "require_approval_above",
                )
            },
        ),
        ("Commands", {"fields": ("blocked_commands", "approval_commands", "command_network")}),
        ("Web", {"fields": ("web_allow_hosts", "web_write_hosts")}),
        ("Approvals", {"fields": ("require_distinct_reviewer", "approval_timeout_seconds")}),
    )

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        if change:
            services.policy_bump_version(policy=form.instance)


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
    list_display = ("number", "title", "head", "base", "repo_key", "created_at")
    search_fields = ("title", "head", "repo_key")


@admin.register(AgentSession)
class AgentSessionAdmin(admin.ModelAdmin[AgentSession]):
    list_display = ("id", "task", "status", "kind", "policy", "creator", "created_at")
    list_filter = ("status", "kind")
    readonly_fields = (
        "workspace",
        "total_changed_lines",
        "changed_since_approval",
        "tokens_in",
        "tokens_out",
        "created_at",
        "finished_at",
    )


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
