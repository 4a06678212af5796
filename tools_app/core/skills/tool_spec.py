"""A skill tool as the engine prepares and runs it: the `ToolSpec` of the definition a
call is bound to, so that a skill tool takes the same road as a core tool."""

from __future__ import annotations

from typing import Any

from tools_app.core.skills import executors
from tools_app.core.skills.arguments import validate_arguments
from tools_app.core.skills.executors import SkillCall
from tools_app.core.tools.base import ToolContext, ToolSpec
from tools_app.core.tools.catalogue import skill_facts
from tools_app.core.tools.errors import ToolError


def skill_tool_spec(call: SkillCall) -> ToolSpec:
    """The spec of `call`: its arguments checked against its input schema, a preview of
    the executor and exactly what it would get, judged by its `skill.tool` name; a
    command tool is held to the sandbox rule of run_command."""

    def check(raw: object) -> dict[str, Any]:
        args = validate_arguments(call.name, call.input_schema, raw)
        if not call.kind:
            raise ToolError(f"{call.name} has no executor yet; its skill's author must add one.")
        return args

    def preview(
        _: ToolContext, __: object, args: dict[str, Any]
    ) -> tuple[dict[str, Any], int | None]:
        return executors.preview(call, args), None

    def run(context: ToolContext, args: dict[str, Any]) -> str:
        return executors.run(call, args, context)

    return ToolSpec(
        skill_facts(call.name, runs_command=call.kind == "command"),
        description="",
        args_model=None,
        run=run,
        preview=preview,
        check=check,
        input_schema=call.input_schema,
        executor=call.executor,
    )
