"""Skills at work in a session: activation at its start, the tools and instructions they
add, and binding a call to a skill tool's definition (captured, so that what a reviewer
approved is what runs)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from tools_app.core.skills.executors import SkillCall
from tools_app.core.skills.matching import activations
from tools_app.core.tools.catalogue import is_skill_tool, qualified_skill_tool, split_skill_tool
from tools_app.core.tools.registry import REGISTRY
from tools_app.models import AgentSession, Skill, SkillTool, ToolCall
from tools_app.selectors.records import active_skill_names, active_skills


def skills_activate(*, task: str) -> list[dict[str, Any]]:
    """The enabled skills `task` activates, as a session records them, each counted once
    more as activated."""
    enabled = Skill.objects.filter(enabled=True).order_by("name")
    found = [a.as_dict() for a in activations(((s.name, s.triggers) for s in enabled), task)]
    if found:
        names = [item["skill"] for item in found]
        Skill.objects.filter(name__in=names).update(times_activated=F("times_activated") + 1)
    return found


def skill_instructions(session: AgentSession) -> list[str]:
    """What each active skill adds to the system prompt."""
    words = {str(i.get("skill")): i.get("words", []) for i in session.active_skills}
    return [
        f"Skill `{skill.name}` is active (the task mentions {', '.join(words[skill.name])}):\n"
        + skill.instructions.strip()
        for skill in active_skills(session)
        if skill.instructions.strip()
    ]


def skill_tool_canonical(*, session: AgentSession, tool: str) -> str:
    """A skill tool as the model calls it (`deploy_staging`) becomes its stored and judged
    name (`deploy.deploy_staging`); core tools and unknown names stay as they are."""
    if tool in REGISTRY or is_skill_tool(tool):
        return tool
    tools = SkillTool.objects.filter(name=tool).select_related("skill")
    found = tools.filter(skill__name__in=active_skill_names(session)).first() or tools.first()
    return qualified_skill_tool(found.skill.name, found.name) if found else tool


def skill_call_bind(*, session: AgentSession, tool: str) -> SkillCall | str:
    """The definition a call of `tool` is judged and run with, or why it may not run."""
    skill_name, tool_name = split_skill_tool(tool)
    found = SkillTool.objects.filter(skill__name=skill_name, name=tool_name)
    row = found.select_related("skill").first()
    if row is None:
        return f"Unknown tool {tool!r}: no skill {skill_name!r} has a tool {tool_name!r}."
    if skill_name not in active_skill_names(session):
        triggers = ", ".join(row.skill.triggers) or "none yet"
        return (
            f"{tool} belongs to the skill {skill_name!r}, which is not active for this "
            f"session: none of its triggers ({triggers}) matched the task."
        )
    if not row.skill.enabled or not row.enabled:
        what = "skill" if not row.skill.enabled else "tool"
        return f"{tool} cannot be used: its {what} has been disabled."
    Skill.objects.filter(pk=row.skill_id).update(last_used_at=timezone.now())
    return SkillCall(skill_name, tool_name, row.executor, row.input_schema or {"type": "object"})


def skill_call_captured(call: ToolCall) -> SkillCall | None:
    """The definition captured when the call was judged (kept in its preview)."""
    preview = call.preview if isinstance(call.preview, Mapping) else {}
    definition = preview.get("definition")
    return SkillCall.from_dict(definition) if isinstance(definition, Mapping) else None


def skill_call_withdrawn(*, call: ToolCall, captured: SkillCall) -> str | None:
    """Why an approved skill tool call may no longer run (its skill or tool was disabled
    or deleted since it was judged), or None."""
    rows = SkillTool.objects.filter(skill__name=captured.skill, name=captured.tool)
    row = rows.select_related("skill").first()
    if row is None or not (row.enabled and row.skill.enabled):
        reason = "deleted" if row is None else "disabled"
        return f"Not run: {call.tool} was {reason} after this call was judged."
    return None


def secret_value(name: str) -> str | None:
    """A secret an http skill tool names: an environment variable the operator listed in
    AGENTWEB_SKILL_SECRETS. Anything else (SECRET_KEY, a provider key, DATABASE_URL) stays
    out of reach, so a skill author cannot send the server's own secrets to a host."""
    if name not in settings.AGENTWEB_SKILL_SECRETS:
        return None
    return os.environ.get(name) or None
