"""Skills: create, replace, import, export and delete. Every write to Skill and SkillTool
goes through here (the API, the commands, the data migration's format)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from django.db import transaction

from tools_app.core.skills.definitions import SkillData, SkillInvalid, skill_from_dict
from tools_app.core.skills.skillmd import read_skill_folder, skill_folders
from tools_app.core.tools.catalogue import EFFECT_TOOL
from tools_app.core.tools.jsonsafe import UnsafeJSON, loads
from tools_app.core.tools.registry import REGISTRY
from tools_app.errors import Conflict, Invalid, NotFound
from tools_app.models import Skill, SkillTool
from tools_app.services.audit import Action, Via, audit_record

CORE_TOOLS = frozenset((*REGISTRY, EFFECT_TOOL))


class SkillRefused(Invalid):
    """A skill that cannot be saved; `field` names where (`tools[0].inputSchema`)."""

    def __init__(self, problem: SkillInvalid, prefix: str = "") -> None:
        super().__init__(f"{prefix}{problem}")
        self.field = problem.field


def skill_check(data: object, *, prefix: str = "") -> SkillData:
    """A skill file's skill, checked; SkillRefused (422) names the field."""
    try:
        return skill_from_dict(data, core_tools=CORE_TOOLS)
    except SkillInvalid as exc:
        raise SkillRefused(exc, prefix) from None


def skill_items(data: object) -> list[object]:
    """One skill or a list of them, as a file or a request holds them."""
    return list(data) if isinstance(data, list) else [data]


@transaction.atomic
def skill_import(*, data: object, user: Any = None, via: str = Via.CLI) -> list[Skill]:
    """Create or replace every skill of `data` (one or a list), all or nothing."""
    items = skill_items(data)
    many = len(items) > 1
    checked = [
        skill_check(item, prefix=f"skill {i}: " if many else "") for i, item in enumerate(items)
    ]
    _check_batch(checked)
    stored = [_store(skill, existing=skill.name, user=user) for skill in checked]
    for row in stored:
        skill_audit(row, user=user, via=via, details={"imported": True})
    return stored


@transaction.atomic
def skill_replace(*, name: str, data: object, user: Any = None, via: str = Via.API) -> Skill:
    """Replace the skill `name` (it may be renamed): PUT /api/skills/{name}."""
    if not Skill.objects.filter(name=name).exists():
        raise NotFound(f"There is no skill named {name!r}.")
    skill = skill_check(data)
    if skill.name != name and Skill.objects.filter(name=skill.name).exists():
        raise Conflict(f"There is already a skill named {skill.name!r}.")
    row = _store(skill, existing=name, user=user)
    renamed = {"renamed_from": name} if name != row.name else {}
    skill_audit(row, user=user, via=via, details={"replaced": True, **renamed})
    return row


@transaction.atomic
def skill_create(*, data: object, user: Any = None, via: str = Via.API) -> Skill:
    """A new skill (POST of one skill); an existing name is a Conflict."""
    skill = skill_check(data)
    if Skill.objects.filter(name=skill.name).exists():
        raise Conflict(f"There is already a skill named {skill.name!r}; PUT replaces it.")
    row = _store(skill, existing=skill.name, user=user)
    skill_audit(row, user=user, via=via, details={"created": True})
    return row


@transaction.atomic
def skill_delete(*, name: str, user: Any = None, via: str = Via.API) -> None:
    """Delete a skill and its tools; calls already made keep their record (by name)."""
    row = Skill.objects.filter(name=name).first()
    if row is None:
        raise NotFound(f"There is no skill named {name!r}.")
    skill_audit(row, user=user, via=via, details={}, action=Action.SKILL_DELETE)
    row.delete()


@transaction.atomic
def skill_set_enabled(*, name: str, enabled: bool, user: Any = None, via: str = Via.API) -> None:
    row = Skill.objects.filter(name=name).first()
    if row is None or not Skill.objects.filter(pk=row.pk).update(enabled=enabled):
        raise NotFound(f"There is no skill named {name!r}.")
    skill_audit(row, user=user, via=via, details={"enabled": enabled})


def skill_audit(
    row: Skill, *, user: Any, via: str, details: dict[str, Any], action: str = Action.SKILL_CHANGE
) -> None:
    """Record a change to a skill, with the tools it now has (the admin saves one too)."""
    tools = list(row.tools.values_list("name", flat=True))
    audit_record(
        action=action, via=via, actor=user, object_type="skill", object_id=row.name,
        object_repr=f"skill {row.name}", details={**details, "tools": tools},
    )  # fmt: skip


def _check_batch(skills: list[SkillData]) -> None:
    """A tool name is one skill's only: the model calls skill tools by their plain name."""
    owner: dict[str, str] = {}
    for skill in skills:
        for i, tool in enumerate(skill.tools):
            other = owner.setdefault(tool.name, skill.name)
            if other != skill.name:
                raise Invalid(
                    f"{skill.name}: tools[{i}].name: {tool.name!r} is also a tool of {other!r}"
                )
    replaced = [skill.name for skill in skills]
    taken = SkillTool.objects.filter(name__in=owner).exclude(skill__name__in=replaced)
    clash = taken.select_related("skill").first()
    if clash is not None:
        raise Invalid(
            f"{owner[clash.name]}: tools: {clash.name!r} is already a tool of the skill "
            f"{clash.skill.name!r}; tool names are unique across skills"
        )


def _store(skill: SkillData, *, existing: str, user: Any) -> Skill:
    if existing == skill.name:
        _check_batch([skill])
    else:
        _check_renamed(skill, existing)
    fields = {
        "name": skill.name,
        "description": skill.description,
        "triggers": list(skill.triggers),
        "instructions": skill.instructions,
        "enabled": skill.enabled,
    }
    row = Skill.objects.filter(name=existing).first()
    if row is None:
        row = Skill.objects.create(**fields, created_by=user if _is_user(user) else None)
    else:
        for key, value in fields.items():
            setattr(row, key, value)
        row.save()
        row.tools.all().delete()
    SkillTool.objects.bulk_create(
        SkillTool(
            skill=row,
            name=tool.name,
            description=tool.description,
            input_schema=dict(tool.input_schema),
            executor=dict(tool.executor),
            enabled=tool.enabled,
        )
        for tool in skill.tools
    )
    return row


def _check_renamed(skill: SkillData, old_name: str) -> None:
    names = [tool.name for tool in skill.tools]
    taken = SkillTool.objects.filter(name__in=names).exclude(skill__name__in=[old_name, skill.name])
    clash = taken.select_related("skill").first()
    if clash is not None:
        raise Invalid(f"tools: {clash.name!r} is already a tool of the skill {clash.skill.name!r}")


def _is_user(user: Any) -> bool:
    return user is not None and bool(getattr(user, "is_authenticated", False))


# --- files and folders ----------------------------------------------------------------------


def skill_import_path(
    *, path: Path, user: Any = None, via: str = Via.CLI
) -> tuple[list[Skill], list[str]]:
    """Import a skill JSON file, or a folder holding SKILL.md (or folders of them).

    Returns the skills and notes for the person importing (a skill without triggers
    never activates until an author adds some).
    """
    if path.is_dir():
        folders = skill_folders(path)
        if not folders:
            raise Invalid(f"{path} holds no SKILL.md (nor do its subfolders).")
        data: object = [_read_folder(folder) for folder in folders]
    else:
        data = _read_json(path)
    skills = skill_import(data=data, user=user, via=via)
    notes = [
        f"{skill.name}: no triggers, so it never activates until an author adds some"
        for skill in skills
        if not skill.triggers
    ]
    return skills, notes


def _read_folder(folder: Path) -> dict[str, Any]:
    try:
        return read_skill_folder(folder)
    except SkillInvalid as exc:
        raise SkillRefused(exc) from None


def _read_json(path: Path) -> object:
    try:
        return loads(path.read_bytes(), name=str(path))
    except OSError as exc:
        raise Invalid(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnsafeJSON as exc:
        raise Invalid(f"not a JSON skill file: {exc}") from None


def skill_names_exist(names: Iterable[str]) -> None:
    missing = sorted(
        set(names) - set(Skill.objects.filter(name__in=names).values_list("name", flat=True))
    )
    if missing:
        raise NotFound(f"There is no skill named {missing[0]!r}.")
