"""REST API for skills: `GET|POST /api/skills`, `GET|PUT|DELETE /api/skills/{name}`, and
`POST /api/skills/match` ("which skills would activate for this task?").

Bodies are the skill file format (DESIGN.md): one skill, or for POST a list. Any
logged-in user reads; staff (or `change_skill`) write, by browser or review token
(`access.may_edit_skills`). A skill that cannot be saved is 422 with the `field`.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from ninja import NinjaAPI, Query, Router, Schema, Status

from tools_app import access
from tools_app.api.parsing import BODY, BadInput
from tools_app.api.schemas import ErrorOut, StrictIn
from tools_app.core.tools.jsonsafe import UnsafeJSON, loads
from tools_app.errors import NotFound
from tools_app.models import AuditEntry, Skill
from tools_app.selectors import records
from tools_app.selectors.pagination import PageQuery, page
from tools_app.services import skills as skill_services

router = Router(tags=["skills"])
_SKILL_BODY = {
    "requestBody": {
        "content": {"application/json": {"schema": {"type": ["object", "array"]}}},
        "required": True,
        "description": "A skill file: one skill, or (POST) a list of skills.",
    }
}

VIA = AuditEntry.Via.API  # the audit trail's "from where"


class SkillPage(Schema):
    items: list[dict[str, Any]]
    next: str | None


class Imported(Schema):
    items: list[dict[str, Any]]
    notes: list[str]


class MatchIn(StrictIn):
    task: str


class MatchOut(Schema):
    skills: list[dict[str, Any]]


def _scope(request: HttpRequest) -> str:
    return getattr(request, "agentweb_scope", "session")


def _body(request: HttpRequest) -> object:
    try:
        return loads(request.body, name=BODY)
    except UnsafeJSON as exc:
        raise BadInput(str(exc)) from None


def _skill(request: HttpRequest, name: str) -> Skill:
    skill = records.skill_by_name(name) if access.may_see_skills(request.user) else None
    if skill is None:
        raise NotFound(f"There is no skill named {name!r}.")
    return skill


@router.get("/skills", response={200: SkillPage, 422: ErrorOut})
def skill_list(request: HttpRequest, pages: Query[PageQuery]) -> dict[str, Any]:
    """Every skill with its tools, triggers and counters, by id."""
    return page(records.skills_all(), pages, records.skill_as_dict, order="oldest")


@router.post(
    "/skills",
    response={201: Imported, 403: ErrorOut, 422: ErrorOut},
    openapi_extra=_SKILL_BODY,
    operation_id="tools_app_api_skills_skill_import",  # the schema's name, kept
)
def skill_import_endpoint(request: HttpRequest) -> Status[dict[str, Any]]:
    """Create or replace (by name) one skill or a list of them, all or nothing."""
    access.check_edit_skills(request.user, _scope(request))
    skills = skill_services.skill_import(data=_body(request), user=request.user, via=VIA)
    notes = [f"{s.name}: no triggers, so it never activates" for s in skills if not s.triggers]
    fresh = [records.skill_by_name(s.name) for s in skills]
    return Status(201, {"items": [records.skill_as_dict(s) for s in fresh if s], "notes": notes})


@router.post("/skills/match", response={200: MatchOut})
def skill_match(request: HttpRequest, body: MatchIn) -> dict[str, Any]:
    """Which enabled skills a task would activate, and the words that matched."""
    return {"skills": records.skills_would_activate(body.task)}


@router.get("/skills/{name}", response={200: dict[str, Any], 404: ErrorOut})
def skill_detail(request: HttpRequest, name: str) -> dict[str, Any]:
    return records.skill_as_dict(_skill(request, name))


@router.put(
    "/skills/{name}",
    response={200: dict[str, Any], 403: ErrorOut, 404: ErrorOut, 409: ErrorOut, 422: ErrorOut},
    openapi_extra=_SKILL_BODY,
)
def skill_replace(request: HttpRequest, name: str) -> dict[str, Any]:
    """Replace the skill (its tools too); a different `name` in the body renames it."""
    _skill(request, name)
    access.check_edit_skills(request.user, _scope(request))
    skill = skill_services.skill_replace(name=name, data=_body(request), user=request.user, via=VIA)
    return records.skill_as_dict(_skill(request, skill.name))


@router.delete(
    "/skills/{name}",
    response={204: None, 403: ErrorOut, 404: ErrorOut},
    operation_id="tools_app_api_skills_skill_delete",  # the schema's name, kept
)
def skill_delete_endpoint(request: HttpRequest, name: str) -> Status[None]:
    """Delete the skill; tool calls already made keep their record."""
    _skill(request, name)
    access.check_edit_skills(request.user, _scope(request))
    skill_services.skill_delete(name=name, user=request.user, via=VIA)
    return Status(204, None)


def register(api: NinjaAPI) -> None:
    """Mount the routes, and answer a refused skill with the field to fix."""
    api.add_router("", router)

    @api.exception_handler(skill_services.SkillRefused)
    def refused(request: HttpRequest, exc: skill_services.SkillRefused) -> HttpResponse:
        return api.create_response(request, {"detail": str(exc), "field": exc.field}, status=422)
