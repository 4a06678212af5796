"""Django admin for projects: their groups, default policy, repository patterns, and how
many sessions each holds. A change is recorded in the audit trail like an import."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import Count, QuerySet
from django.http import HttpRequest

from tools_app.core.projects import pattern_problem
from tools_app.models import Project
from tools_app.services.audit import Via
from tools_app.services.projects import project_changed
from tools_app.web.admin_forms import LinesField


class ProjectForm(forms.ModelForm[Project]):
    repositories = LinesField(
        required=False,
        help_text="Glob patterns of repository URLs or paths, one a line; a session on a "
        "matching repository is this project's (the longest matching pattern wins).",
    )

    class Meta:
        model = Project
        fields = ("name", "description", "members", "reviewers", "policy", "repositories")

    def clean_repositories(self) -> list[str]:
        patterns: list[str] = self.cleaned_data.get("repositories") or []
        problems = [f"{p!r}: {why}" for p in patterns if (why := pattern_problem(p))]
        if problems:
            raise forms.ValidationError("; ".join(problems))
        return patterns


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin[Project]):
    form = ProjectForm
    list_display = ("name", "description", "policy", "session_count")
    search_fields = ("name", "description")
    filter_horizontal = ("members", "reviewers")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Project]:
        return super().get_queryset(request).annotate(session_total=Count("sessions"))

    @admin.display(description="sessions")
    def session_count(self, project: Any) -> int:
        return int(project.session_total)

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        project_changed(project=form.instance, user=request.user, via=Via.ADMIN, created=not change)
