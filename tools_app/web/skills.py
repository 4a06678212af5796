"""The skill pages: the list with "Which skills would activate?", the create/edit form,
enable/disable, delete, export and import.

Any logged-in user reads skills; writing is for `access.may_edit_skills` (staff, or the
`change_skill` permission), and every write goes through `services/skills.py`, the same
checks as the API and `import_skills`.
"""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from tools_app import access
from tools_app.core.skills.definitions import skill_to_dict
from tools_app.errors import ServiceError
from tools_app.models import AuditEntry, Skill
from tools_app.selectors import records
from tools_app.services import skills as skill_services
from tools_app.web.skill_forms import SkillForm, SkillImportForm, example_tool_json, skill_initial

GET_OR_POST = ["GET", "HEAD", "POST"]

VIA = AuditEntry.Via.BROWSER  # the audit trail's "from where"


def _skill(name: str) -> Skill:
    skill = records.skill_by_name(name)
    if skill is None:
        raise Http404(f"There is no skill named {name!r}.")
    return skill


@login_required
@require_safe
def skill_list(request: HttpRequest) -> HttpResponse:
    task = request.GET.get("task", "").strip()
    context = {
        "skills": records.skills_all(),
        "task": task,
        "matches": records.skills_would_activate(task) if task else None,
        "may_edit": access.may_edit_skills(request.user, access.BROWSER),
    }
    return render(request, "tools_app/skills.html", context)


@login_required
@require_http_methods(GET_OR_POST)
def skill_new(request: HttpRequest) -> HttpResponse:
    access.check_edit_skills(request.user, access.BROWSER)
    form = SkillForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        try:
            skill = skill_services.skill_create(data=form.skill_dict(), user=request.user, via=VIA)
        except ServiceError as exc:
            form.refuse(exc)
        else:
            messages.success(request, f"Skill {skill.name} created.")
            return redirect("skills")
    return _form_page(request, form, None)


@login_required
@require_http_methods(GET_OR_POST)
def skill_edit(request: HttpRequest, name: str) -> HttpResponse:
    skill = _skill(name)
    access.check_edit_skills(request.user, access.BROWSER)
    if request.method != "POST":
        form = SkillForm(initial=skill_initial(skill_to_dict(records.skill_data(skill))))
        return _form_page(request, form, skill)
    form = SkillForm(request.POST)
    if form.is_valid():
        try:
            saved = skill_services.skill_replace(
                name=name, data=form.skill_dict(), user=request.user, via=VIA
            )
        except ServiceError as exc:
            form.refuse(exc)
        else:
            messages.success(request, f"Skill {saved.name} saved.")
            return redirect("skills")
    return _form_page(request, form, skill)


def _form_page(request: HttpRequest, form: SkillForm, skill: Skill | None) -> HttpResponse:
    context = {"form": form, "skill": skill, "example_tool": example_tool_json()}
    return render(request, "tools_app/skill_form.html", context)


@login_required
@require_POST
def skill_enabled(request: HttpRequest, name: str) -> HttpResponse:
    skill = _skill(name)
    access.check_edit_skills(request.user, access.BROWSER)
    enabled = request.POST.get("enabled") == "1"
    skill_services.skill_set_enabled(name=skill.name, enabled=enabled, user=request.user, via=VIA)
    messages.success(request, f"Skill {skill.name} {'enabled' if enabled else 'disabled'}.")
    return redirect("skills")


@login_required
@require_POST
def skill_delete_form(request: HttpRequest, name: str) -> HttpResponse:
    skill = _skill(name)
    access.check_edit_skills(request.user, access.BROWSER)
    skill_services.skill_delete(name=skill.name, user=request.user, via=VIA)
    messages.success(request, f"Skill {skill.name} deleted; calls already made keep their record.")
    return redirect("skills")


@login_required
@require_safe
def skill_export(request: HttpRequest) -> HttpResponse:
    """Every skill as a skill file (the format `import_skills` and the import page read)."""
    body = json.dumps(records.skills_export(), indent=2) + "\n"
    response = HttpResponse(body, content_type="application/json")
    response["Content-Disposition"] = 'attachment; filename="skills.json"'
    return response


@login_required
@require_http_methods(GET_OR_POST)
def skill_import_page(request: HttpRequest) -> HttpResponse:
    access.check_edit_skills(request.user, access.BROWSER)
    posted = request.method == "POST"
    form = SkillImportForm(request.POST if posted else None, request.FILES if posted else None)
    if posted and form.is_valid():
        try:
            skills = skill_services.skill_import(
                data=form.cleaned_data["skills"], user=request.user, via=VIA
            )
        except ServiceError as exc:
            form.add_error(None, str(exc))
        else:
            names = ", ".join(skill.name for skill in skills)
            messages.success(request, f"Imported {len(skills)} skill(s): {names}.")
            for skill in skills:
                if not skill.triggers:
                    messages.warning(
                        request, f"{skill.name} has no triggers, so it never activates."
                    )
            return redirect("skills")
    return render(request, "tools_app/skill_import.html", {"form": form})
