"""A skill as plain data, read from and written to the skill file format (DESIGN.md).

The format is the tools reference's (`name`, `description`, `triggers`, `tools` with
`name`, `description`, `inputSchema`) plus `instructions`, `enabled` and, per tool,
`executor` and `enabled`. Every problem is a SkillInvalid naming the field
(`tools[1].inputSchema`), so a form, the API (422) and `import_skills` can say exactly
what to fix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from tools_app.core.skills.executors import executor_problem, template_problem
from tools_app.core.tools.catalogue import UPSTREAM_PREFIX, qualified_skill_tool

SKILL_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,99}$")
# What OpenAI's and Anthropic's tool formats accept as a tool name.
TOOL_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
MAX_TRIGGER_CHARS = 200
SKILL_KEYS = {"name", "description", "triggers", "instructions", "enabled", "tools"}
TOOL_KEYS = {"name", "description", "inputSchema", "executor", "enabled"}


class SkillInvalid(ValueError):
    """What is wrong with a skill, and where (`field`, as the file spells it)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.message = message


@dataclass(frozen=True)
class ToolData:
    name: str
    description: str = ""
    input_schema: Mapping[str, Any] = field(default_factory=dict)
    executor: Mapping[str, Any] = field(default_factory=dict)
    enabled: bool = True


@dataclass(frozen=True)
class SkillData:
    name: str
    description: str = ""
    triggers: tuple[str, ...] = ()
    instructions: str = ""
    enabled: bool = True
    tools: tuple[ToolData, ...] = ()

    def tool_names(self) -> list[str]:
        return [qualified_skill_tool(self.name, tool.name) for tool in self.tools]


def schema_problem(schema: object) -> str | None:
    """Why `schema` cannot be a tool's input schema (a JSON Schema for an object), or None."""
    if not isinstance(schema, Mapping):
        return "must be a JSON object (a JSON Schema)"
    try:
        Draft202012Validator.check_schema(dict(schema))
    except SchemaError as exc:
        where = "/".join(str(part) for part in exc.path)
        return f"is not a valid JSON Schema: {exc.message}" + (f" (at {where})" if where else "")
    if schema.get("type", "object") != "object":
        return 'must describe an object of named arguments ("type": "object")'
    return None


def skill_from_dict(data: object, *, core_tools: frozenset[str] = frozenset()) -> SkillData:
    """One skill of a skill file, checked; raises SkillInvalid naming the first problem."""
    if not isinstance(data, Mapping):
        raise SkillInvalid("", f"a skill must be a JSON object, not {type(data).__name__}")
    _no_unknown_keys("", data, SKILL_KEYS)
    name = _text(data, "name", "", required=True)
    if not SKILL_NAME.match(name):
        raise SkillInvalid("name", "use lowercase letters, digits, - and _ (at most 100)")
    if f"{name}." == UPSTREAM_PREFIX:
        raise SkillInvalid("name", f"{name!r} names the MCP upstreams' tools; choose another")
    tools = data.get("tools", [])
    if not isinstance(tools, list):
        raise SkillInvalid("tools", "must be a list of tools")
    parsed = tuple(_tool(item, f"tools[{i}]", core_tools) for i, item in enumerate(tools))
    _no_duplicates([tool.name for tool in parsed])
    return SkillData(
        name=name,
        description=_text(data, "description", ""),
        triggers=_triggers(data.get("triggers", [])),
        instructions=_text(data, "instructions", ""),
        enabled=_flag(data, "enabled", ""),
        tools=parsed,
    )


def skill_to_dict(skill: SkillData) -> dict[str, Any]:
    """The skill as a skill file holds it; `skill_from_dict` reads it back unchanged."""
    return {
        "name": skill.name,
        "description": skill.description,
        "triggers": list(skill.triggers),
        "instructions": skill.instructions,
        "enabled": skill.enabled,
        "tools": [_tool_to_dict(tool) for tool in skill.tools],
    }


def _tool_to_dict(tool: ToolData) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "inputSchema": dict(tool.input_schema),
    }
    if tool.executor:
        out["executor"] = dict(tool.executor)
    if not tool.enabled:
        out["enabled"] = False
    return out


def _tool(item: object, where: str, core_tools: frozenset[str]) -> ToolData:
    if not isinstance(item, Mapping):
        raise SkillInvalid(where, "a tool must be a JSON object")
    _no_unknown_keys(where, item, TOOL_KEYS)
    name = _text(item, "name", where, required=True)
    if not TOOL_NAME.match(name):
        raise SkillInvalid(
            f"{where}.name", "start with a letter; letters, digits, _ and - only (at most 64)"
        )
    if name in core_tools:
        raise SkillInvalid(f"{where}.name", f"{name!r} is a core tool; a skill may not shadow it")
    schema = item.get("inputSchema", {"type": "object", "properties": {}})
    problem = schema_problem(schema)
    if problem:
        raise SkillInvalid(f"{where}.inputSchema", problem)
    executor = item.get("executor", {})
    problem = executor_problem(executor)
    if problem:
        raise SkillInvalid(f"{where}.executor", problem)
    problem = template_problem(executor, schema)
    if problem:
        raise SkillInvalid(f"{where}.executor.template", problem)
    return ToolData(
        name=name,
        description=_text(item, "description", where),
        input_schema=dict(schema),
        executor=dict(executor),
        enabled=_flag(item, "enabled", where),
    )


def _text(data: Mapping[str, Any], key: str, where: str, *, required: bool = False) -> str:
    value = data.get(key, "")
    path = f"{where}.{key}" if where else key
    if not isinstance(value, str):
        raise SkillInvalid(path, "must be a string")
    if required and not value.strip():
        raise SkillInvalid(path, "is required")
    return value.strip() if required else value


def _flag(data: Mapping[str, Any], key: str, where: str) -> bool:
    value = data.get(key, True)
    if not isinstance(value, bool):
        raise SkillInvalid(f"{where}.{key}" if where else key, "must be true or false")
    return value


def _triggers(value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise SkillInvalid("triggers", "must be a list of words or phrases")
    cleaned = [" ".join(item.split()) for item in value]
    for i, trigger in enumerate(cleaned):
        if not trigger or len(trigger) > MAX_TRIGGER_CHARS:
            raise SkillInvalid(f"triggers[{i}]", f"must be 1 to {MAX_TRIGGER_CHARS} characters")
    return tuple(dict.fromkeys(cleaned))


def _no_unknown_keys(where: str, data: Mapping[str, Any], known: set[str]) -> None:
    unknown = sorted(str(key) for key in data if key not in known)
    if unknown:
        accepted = ", ".join(sorted(known))
        raise SkillInvalid(where, f"unknown key {unknown[0]!r}; accepted: {accepted}")


def _no_duplicates(names: list[str]) -> None:
    for i, name in enumerate(names):
        if name in names[:i]:
            raise SkillInvalid(f"tools[{i}].name", f"{name!r} is used by two tools of this skill")
