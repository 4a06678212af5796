"""Django admin: policies are edited here; audit rows are read-only."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db.models import Count, QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from tools_app import access, services
from tools_app.core import rendering
from tools_app.core.policy.types import SessionCounters
from tools_app.models import (
    AgentSession,
    ApiToken,
    AuditEntry,
    Decision,
    EgressCredential,
    Event,
    Policy,
    PolicyRule,
    PullRequest,
    SignInFailure,
    Skill,
    SkillTool,
    ToolCall,
)
from tools_app.selectors import records
from tools_app.services.credentials import egress_credential_delete, egress_credential_save
from tools_app.services.policies import policy_changed, policy_delete
from tools_app.services.sign_in import sign_in_failures_delete
from tools_app.services.skills import skill_audit
from tools_app.services.tokens import api_tokens_revoke_all
from tools_app.web.admin_forms import (
    POLICY_GROUPS,
    EgressCredentialForm,
    PolicyForm,
    PolicyRuleForm,
    TryCallForm,
)
from tools_app.web.sign_in_forms import AdminSignInForm

ADMIN = AuditEntry.Via.ADMIN  # the audit trail's "from where"

if TYPE_CHECKING:
    from django.contrib.admin.options import _FieldGroups, _FieldOpts


class PolicyRuleInline(admin.StackedInline[PolicyRule, Policy]):
    """The rules in the order the engine tries them, with who made each and whether a
    reviewer's "approve & remember" did (such a rule never allows its author's own
    sessions' calls under require_distinct_reviewer), and whether a reviewer who is not
    a policy admin widened it (it never allows a risky call; an admin may clear that).
    A require_approval rule may ask for more than one approval (its quorum)."""

    model = PolicyRule
    form = PolicyRuleForm
    extra = 0
    fields = (
        "position", "tool", "args", "decision", "reason", "approvals", "approvers", "hosts",
        "created_by", "remembered", "reviewer_bounded",
    )  # fmt: skip
    readonly_fields = ("created_by", "remembered")
    ordering = ("position", "id")


def _settings_fieldsets() -> list[tuple[str, _FieldOpts]]:
    """One admin section per group of the policy's settings (see forms.POLICY_GROUPS)."""
    return [(group, {"fields": names}) for group, names in POLICY_GROUPS]


@admin.register(Policy)
class PolicyAdmin(admin.ModelAdmin[Policy]):
    form = PolicyForm
    inlines = [PolicyRuleInline]
    list_display = (
        "name",
        "rule_count",
        "protected_path_count",
        "require_distinct_reviewer",
        "command_network",
        "version",
        "updated_at",
    )
    list_filter = ("require_distinct_reviewer", "command_network", "updated_at")
    search_fields = ("name", "description")
    readonly_fields = ("version", "updated_at")
    fieldsets = (
        (None, {"fields": ("name", "description", "version", "updated_at")}),
        *_settings_fieldsets(),
    )
    actions = ["try_a_call"]
    change_form_template = "admin/tools_app/policy/change_form.html"

    def get_queryset(self, request: HttpRequest) -> QuerySet[Policy]:
        return super().get_queryset(request).annotate(rule_count=Count("rules"))

    @admin.display(description="rules", ordering="rule_count")
    def rule_count(self, policy: Policy) -> int:
        return int(getattr(policy, "rule_count", 0))

    @admin.display(description="protected paths")
    def protected_path_count(self, policy: Policy) -> int:
        return len(policy.protected_paths)

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        """Saved with its rules: a new version (unless new) and an audit entry."""
        super().save_related(request, form, formsets, change)
        changed = list(form.changed_data) + [
            f"rules ({formset.prefix})" for formset in formsets if formset.has_changed()
        ]
        policy_changed(
            policy=form.instance, user=request.user, via=ADMIN, created=not change, changed=changed
        )

    def delete_model(self, request: HttpRequest, obj: Policy) -> None:
        policy_delete(policy=obj, user=request.user, via=ADMIN)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Policy]) -> None:
        for policy in queryset:
            policy_delete(policy=policy, user=request.user, via=ADMIN)

    def get_urls(self) -> list[URLPattern]:
        try_call = path(
            "<int:policy_id>/try/",
            self.admin_site.admin_view(self.try_call_view),
            name="tools_app_policy_try",
        )
        return [try_call, *super().get_urls()]

    @admin.action(description="Try a call on the selected policy", permissions=["view"])
    def try_a_call(self, request: HttpRequest, queryset: QuerySet[Policy]) -> HttpResponse | None:
        if queryset.count() != 1:
            self.message_user(request, "Select one policy to try a call on.", messages.WARNING)
            return None
        return redirect("admin:tools_app_policy_try", queryset.get().pk)

    def try_call_view(self, request: HttpRequest, policy_id: int) -> HttpResponse:
        """A dry run of a sample call against this policy: the decision, its reason and
        the rule that decided. Nothing is stored or run."""
        policy = self.get_object(request, str(policy_id))
        if policy is None:
            raise Http404(f"There is no policy {policy_id}.")
        if not self.has_view_permission(request, policy):
            raise PermissionDenied
        form = TryCallForm(request.POST if request.method == "POST" else None)
        result = None
        where = _try_where(request, form) if form.is_valid() else None
        if where is not None:
            workspace, counters = where
            result = services.policy_evaluate(
                policy=policy,
                tool=form.cleaned_data["tool"],
                args=form.cleaned_data["args"],
                workspace=workspace,
                counters=counters,
            ).as_dict()
            result["note"] = records.tracked_secrets_note(policy, workspace)
            if form.cleaned_data["tool"] == "run_command":
                result["hosts_shown"] = ", ".join(result.get("hosts", [])) or "none"
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "original": policy,
            "title": f"Try a call on policy {policy.name}",
            "form": form,
            "result": result,
        }
        return TemplateResponse(request, "admin/tools_app/policy/try_call.html", context)


@admin.register(EgressCredential)
class EgressCredentialAdmin(admin.ModelAdmin[EgressCredential]):
    """Credentials the egress proxy adds to commands' requests. The secret is write-only:
    no column, field or page shows it; the audit trail says "set" or "replaced"."""

    form = EgressCredentialForm
    list_display = ("host", "header", "project", "created_by", "created_at", "updated_at")
    list_filter = ("project",)
    search_fields = ("host",)
    fields = ("host", "header", "project", "secret_value", "created_by", "created_at")
    readonly_fields = ("created_by", "created_at")

    def save_model(
        self, request: HttpRequest, obj: EgressCredential, form: Any, change: bool
    ) -> None:
        secret = form.cleaned_data.get("secret_value") or None
        egress_credential_save(credential=obj, secret=secret, user=request.user, via=ADMIN)

    def delete_model(self, request: HttpRequest, obj: EgressCredential) -> None:
        egress_credential_delete(credential=obj, user=request.user, via=ADMIN)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[EgressCredential]) -> None:
        for credential in queryset:
            egress_credential_delete(credential=credential, user=request.user, via=ADMIN)


def _try_where(request: HttpRequest, form: TryCallForm) -> tuple[Path, SessionCounters] | None:
    """The workspace and counters a tried call is judged against: the session's when one
    is named (None, with the field's error, when this user cannot see it)."""
    session_id = form.cleaned_data.get("session")
    if session_id is None:
        return Path(settings.AGENTWEB_WORKSPACES) / "dry-run", SessionCounters()
    try:
        session = access.session_for(request.user, session_id)
    except Http404:
        form.add_error("session", f"There is no session {session_id} you may see.")
        return None
    return Path(session.workspace), services.session_counters(session)


def revealed(name: str) -> Callable[[Any, Any], SafeString]:
    """An admin column or field showing `name` as the inbox does: escaped, each hidden
    character (bidi override, zero-width, ANSI) a visible marker; JSON indented."""

    @admin.display(description=name.replace("_", " "), ordering=name)
    def show(self: Any, obj: Any) -> SafeString:
        value = getattr(obj, name)
        if value is None or value == "":
            return mark_safe("")
        text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)
        html = mark_safe(rendering.reveal(text))  # noqa: S308 (reveal escapes)
        if "\n" in text or not isinstance(value, str):
            return format_html('<pre class="revealed">{}</pre>', html)
        return html

    return show


class ReadOnlyAdmin(admin.ModelAdmin[Any]):
    """Audit rows: visible to admins, changed only by the services.

    `agent_text` names the fields an agent wrote: each is shown through `revealed` (as
    `<name>_shown`, bound here for every subclass) in the field's own place.
    """

    agent_text: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in cls.agent_text:
            if not hasattr(cls, f"{name}_shown"):
                setattr(cls, f"{name}_shown", revealed(name))

    def get_fields(self, request: HttpRequest, obj: Any = None) -> _FieldGroups:
        shown = {name: f"{name}_shown" for name in self.agent_text}
        return [
            shown.get(field.name, field.name)
            for field in self.model._meta.concrete_fields
            if not field.auto_created
        ]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [f"{name}_shown" for name in self.agent_text]

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ToolCall)
class ToolCallAdmin(ReadOnlyAdmin):
    list_display = ("id", "session", "tool_shown", "status", "verdict", "rule", "created_at")
    list_filter = ("status", "verdict", "tool")
    search_fields = ("tool", "reason", "rule")
    agent_text = ("tool", "args", "reason", "rule", "preview", "result", "runner")


@admin.register(Decision)
class DecisionAdmin(ReadOnlyAdmin):
    list_display = ("id", "tool_call", "decision", "user", "remember", "created_at")
    list_filter = ("decision",)
    agent_text = ("reason", "edited_args")  # edited arguments are mostly the agent's


@admin.register(Event)
class EventAdmin(ReadOnlyAdmin):
    list_display = ("id", "session", "seq", "type", "created_at")
    list_filter = ("type",)
    agent_text = ("data",)


@admin.register(PullRequest)
class PullRequestAdmin(ReadOnlyAdmin):
    list_display = ("number", "title_shown", "session", "head_shown", "base", "created_at")
    search_fields = ("title", "head", "repo_key")
    agent_text = ("title", "body", "head", "base", "commits", "diff")


@admin.register(AgentSession)
class AgentSessionAdmin(ReadOnlyAdmin):
    """Read-only: a session's status changes only through its services, with an event.
    Cancel is the one action, and it goes through `session_cancel`."""

    list_display = (
        "id", "task_shown", "status", "kind", "project", "policy", "creator", "created_at",
    )  # fmt: skip
    list_filter = ("status", "kind", "project")
    actions = ["cancel_sessions"]
    agent_text = (
        "task",
        "summary",
        "files_changed",
        "system_prompt",
        "active_skills",
        "context_summary",
    )

    @admin.action(description="Cancel the selected sessions")
    def cancel_sessions(self, request: HttpRequest, queryset: QuerySet[AgentSession]) -> None:
        open_sessions = queryset.exclude(status__in=AgentSession.FINISHED_STATUSES)
        allowed = [s for s in open_sessions if access.may_act_on_session(request.user, s)]
        for session in allowed:
            services.session_cancel(session=session, user=request.user, via=ADMIN)
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
    """Skills edited here are recorded in the audit trail as the skills pages' are."""

    inlines = [SkillToolInline]
    list_display = ("name", "enabled", "updated_at")

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        details = {"created": not change, "changed": list(form.changed_data)}
        skill_audit(form.instance, user=request.user, via=ADMIN, details=details)

    def delete_model(self, request: HttpRequest, obj: Skill) -> None:
        skill_audit(obj, user=request.user, via=ADMIN, details={}, action=AUDIT_DELETE)
        super().delete_model(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Skill]) -> None:
        for skill in queryset:
            skill_audit(skill, user=request.user, via=ADMIN, details={}, action=AUDIT_DELETE)
        super().delete_queryset(request, queryset)


AUDIT_DELETE = AuditEntry.Action.SKILL_DELETE


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin[ApiToken]):
    """Read only: tokens are made and revoked on /settings/tokens/ (staff revoke anyone's
    there) or with `create_api_token`, so that each change is in the audit trail."""

    list_display = (
        "prefix", "name", "user", "scope", "created_at", "last_used_at", "expires_at", "revoked",
    )  # fmt: skip
    fields = (
        "user", "name", "scope", "prefix", "created_at", "last_used_at", "expires_at", "revoked",
    )  # fmt: skip
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # tokens are made with `manage.py create_api_token`, shown once


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnlyAdmin):
    """The audit trail: append-only, so no add, change or delete here either."""

    list_display = (
        "id", "created_at", "actor_name", "via", "action", "decision", "object_repr",
        "session_ref", "project_name", "policy_name",
    )  # fmt: skip
    list_filter = ("action", "via", "decision", "project_name", "created_at")
    search_fields = ("actor_name", "object_repr", "tool", "policy_name", "project_name", "reason")
    agent_text = ("object_repr", "tool", "reason", "details")

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        return {}  # not even the bulk delete action


class UserAdmin(DjangoUserAdmin[User]):
    """Django's user admin, with one more action: revoke all of a person's API tokens
    (someone who left, or a lost laptop), each revocation in the audit trail."""

    actions = ("revoke_api_tokens",)

    @admin.action(description="Revoke all API tokens of the selected users")
    def revoke_api_tokens(self, request: HttpRequest, queryset: QuerySet[User]) -> None:
        if not access.is_token_admin(request.user):
            raise PermissionDenied("Only staff may revoke other people's tokens.")
        for user in queryset:
            count = api_tokens_revoke_all(user=user, by=request.user, via=ADMIN)
            self.message_user(request, f"Revoked {count} token(s) of {user.get_username()}.")


admin.site.unregister(User)
admin.site.register(User, UserAdmin)
admin.site.login_form = AdminSignInForm  # the admin's passwords count against the same limits


@admin.register(SignInFailure)
class SignInFailureAdmin(admin.ModelAdmin[SignInFailure]):
    """Failed passwords of the last AGENTWEB_SIGN_IN_LOCK_MINUTES: deleting an account's
    rows opens password sign-in for it again at once."""

    list_display = ("username", "address", "at")
    search_fields = ("username", "address")
    ordering = ("-at",)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def delete_model(self, request: HttpRequest, obj: SignInFailure) -> None:
        sign_in_failures_delete(SignInFailure.objects.filter(pk=obj.pk), by=request.user, via=ADMIN)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[SignInFailure]) -> None:
        sign_in_failures_delete(queryset, by=request.user, via=ADMIN)


# channels and deliveries, and projects: admins of their own modules
from tools_app.web import notify_admin, project_admin, upstream_admin  # noqa: E402,F401
