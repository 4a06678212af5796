"""Django admin for the MCP upstream servers: their entries (the credential write-only),
the error of their last start, and their pinned tools: each held tool's diff against
the definition an admin accepted, what in it looks aimed at the model, and the action
that accepts what the server lists now (docs/mcp.md)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import Count, Q, QuerySet
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from tools_app import access
from tools_app.core import rendering
from tools_app.core.upstreams.entries import entry_problems
from tools_app.models import UpstreamServer, UpstreamTool
from tools_app.selectors.upstreams import tool_definition_diff
from tools_app.services.audit import Via
from tools_app.services.upstreams import upstream_changed, upstream_tool_accept
from tools_app.web.admin_forms import LinesField

KEEP = "(kept: leave empty to keep the stored value; it is never shown)"


class UpstreamServerForm(forms.ModelForm[UpstreamServer]):
    command = LinesField(required=False, help_text="stdio: the program (an absolute path), "
                         "then one argument a line.")  # fmt: skip
    readonly_paths = LinesField(required=False, help_text="stdio: one path a line.")
    writable_paths = LinesField(required=False, help_text="stdio: one path a line.")
    network_hosts = LinesField(
        required=False, help_text="stdio: one host a line (empty: no network at all)."
    )
    environment = forms.JSONField(required=False, initial=dict)
    credential_value = forms.CharField(
        required=False,
        widget=forms.PasswordInput(render_value=False),
        help_text=f"Added by agentweb, never shown to an agent {KEEP}.",
    )

    class Meta:
        model = UpstreamServer
        fields = (
            "name", "kind", "command", "url", "environment", "readonly_paths",
            "writable_paths", "network_hosts", "credential_name", "credential_value",
            "project", "enabled",
        )  # fmt: skip

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        entry = {key: cleaned.get(key) for key in self.Meta.fields if key != "project"}
        entry = {key: value for key, value in entry.items() if value is not None}
        entry["environment"] = cleaned.get("environment") or {}
        problems = entry_problems(entry)
        if problems:
            raise forms.ValidationError("; ".join(problems))
        if not cleaned.get("credential_value") and self.instance.pk:
            cleaned["credential_value"] = self.instance.credential_value  # write-only: kept
        return cleaned


class UpstreamToolInline(admin.TabularInline[UpstreamTool, UpstreamServer]):
    model = UpstreamTool
    fields = ("name", "pin", "flags")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(UpstreamServer)
class UpstreamServerAdmin(admin.ModelAdmin[UpstreamServer]):
    form = UpstreamServerForm
    list_display = ("name", "kind", "project", "enabled", "held_tools", "error")
    list_filter = ("kind", "enabled")
    search_fields = ("name",)
    readonly_fields = ("last_error", "last_started_at", "last_listed_at")
    inlines = (UpstreamToolInline,)

    def get_queryset(self, request: HttpRequest) -> QuerySet[UpstreamServer]:
        held = Count("tools", filter=~Q(tools__pin=UpstreamTool.Pin.ACCEPTED))
        return super().get_queryset(request).annotate(held=held)

    @admin.display(description="tools held")
    def held_tools(self, server: Any) -> int:
        return int(server.held)

    @admin.display(description="last error")
    def error(self, server: UpstreamServer) -> str:
        return rendering.spelled(server.last_error[:200])

    def save_model(
        self, request: HttpRequest, obj: UpstreamServer, form: Any, change: bool
    ) -> None:
        super().save_model(request, obj, form, change)
        upstream_changed(server=obj, user=request.user, via=Via.ADMIN, created=not change)


@admin.register(UpstreamTool)
class UpstreamToolAdmin(admin.ModelAdmin[UpstreamTool]):
    list_display = ("listed_as", "pin", "flagged", "changed_at")
    list_filter = ("pin", "server")
    fields = ("server", "name", "pin", "warnings", "diff", "accepted_by", "accepted_at")
    readonly_fields = fields
    actions = ("accept_listed",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # a definition changes only by its server's listing and an acceptance

    @admin.display(description="tool")
    def listed_as(self, tool: UpstreamTool) -> str:
        return rendering.spelled(str(tool))

    @admin.display(description="flags")
    def flagged(self, tool: UpstreamTool) -> str:
        return "; ".join(tool.flags) or "—"

    @admin.display(description="looks aimed at the model")
    def warnings(self, tool: UpstreamTool) -> SafeString:
        if not tool.flags:
            return mark_safe("nothing found")
        items = format_html_join("", "<li>{}</li>", ((flag,) for flag in tool.flags))
        return format_html('<ul class="flags">{}</ul>', items)

    @admin.display(description="definition: accepted → listed now")
    def diff(self, tool: UpstreamTool) -> SafeString:
        text = tool_definition_diff(tool) or "(no change)"
        html = rendering.reveal(text)
        return format_html('<pre class="upstream-diff">{}</pre>', mark_safe(html))  # noqa: S308

    def has_accept_permission(self, request: HttpRequest) -> bool:
        return access.is_policy_admin(request.user)

    @admin.action(
        description="Accept the definitions listed now (the tools become usable)",
        permissions=["accept"],
    )
    def accept_listed(self, request: HttpRequest, queryset: QuerySet[UpstreamTool]) -> None:
        held = queryset.exclude(pin=UpstreamTool.Pin.ACCEPTED).select_related("server")
        count = 0
        for tool in held:
            upstream_tool_accept(tool=tool, user=request.user, via=Via.ADMIN)
            count += 1
        self.message_user(request, f"Accepted {count} definition(s).", messages.SUCCESS)
