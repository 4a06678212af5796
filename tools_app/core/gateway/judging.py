"""The gateway's judging: one native tool use judged from its input alone, on the
engine's one road.

agentweb cannot run the call nor read the agent's disk: `prepare_native` maps the call
(`mapping`) and hands `engine.prepare` the call's spec (`native_tool_spec`): its
arguments checked by the agentweb tool's model, its preview built from the input (a
Write's whole content, an Edit's hunk, a command's parsed parts), judged by the same
policy, with gate mode's last word (`gate_mode`). No Django here.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from tools_app.core import engine
from tools_app.core.gateway.claude_code import sandbox_off
from tools_app.core.gateway.gate_mode import Native, gate
from tools_app.core.gateway.mapping import map_native
from tools_app.core.gateway.native import NOT_SANDBOXED, Mapped
from tools_app.core.policy.preview import command_review
from tools_app.core.policy.types import PolicySpec, SessionCounters, Verdict
from tools_app.core.shell.commands import analyse_command
from tools_app.core.tools.base import Judged, ToolContext, ToolSpec
from tools_app.core.tools.catalogue import ToolFacts, facts_for
from tools_app.core.tools.errors import RunsElsewhere, ToolError
from tools_app.core.tools.jsonsafe import storable_args
from tools_app.core.tools.registry import validate_args

__all__ = ["agent_sandbox", "input_preview", "native_tool_spec", "prepare_native"]

# --- judging ---------------------------------------------------------------------------


def prepare_native(
    policy: PolicySpec,
    native_tool: str,
    native_input: Mapping[str, Any],
    cwd: str,
    counters: SessionCounters,
    ran_in: str = "",
) -> tuple[Mapped, engine.Prepared]:
    """Map, validate, preview and judge one native tool use, from its input alone (and
    the directory it runs in, `ran_in`, see `map_native`).

    The Prepared's status is `failed` (the input does not fit), `denied`,
    `awaiting_approval` or `approved` (the agent may run it)."""
    mapped = map_native(native_tool, native_input, cwd, ran_in)
    spec = native_tool_spec(mapped, Native(native_tool, native_input, cwd), policy)
    workspace = Path(cwd or "/nonexistent-agent-cwd")
    return mapped, engine.prepare(policy, spec, mapped.args, workspace, counters)


def native_tool_spec(mapped: Mapped, native: Native, policy: PolicySpec) -> ToolSpec:
    """The spec of one native tool use, judged by its agentweb name: the agentweb tool's
    arguments check (a native input that does not fit is refused), a preview from the
    input alone, and gate mode's last word on the verdict. It runs on the agent's
    machine, never here."""

    def check(raw: object) -> dict[str, Any]:
        if mapped.problem:
            raise ToolError(f"{native.tool}'s input does not fit its shape: {mapped.problem}")
        if mapped.kind != "core":
            return storable_args(raw)  # a tool agentweb does not have: judged by its name
        # What the agent sent, never a default it did not: the agent runs its own call.
        return validate_args(mapped.tool, raw).model_dump(exclude_none=True, exclude_unset=True)

    def preview(
        context: ToolContext, _: object, args: dict[str, Any]
    ) -> tuple[dict[str, Any], int | None]:
        shown, lines = input_preview(mapped, args, context.workspace, policy)
        return {**shown, "gateway": _gateway_facts(native, mapped)}, lines

    def judge(args: dict[str, Any], verdict: Verdict, shown: dict[str, Any] | None) -> Judged:
        return _gated(mapped, native, policy, Judged(verdict, args, shown))

    return ToolSpec(
        _facts(mapped),
        description="",
        args_model=None,
        run=_runs_on_the_agents_machine,
        preview=preview,
        check=check,
        judge=judge,
    )


def _facts(mapped: Mapped) -> ToolFacts:
    """The agentweb tool's facts, but for agentweb's sandbox rule (gate mode judges a
    command that runs on the agent's machine); a tool agentweb does not have is unknown."""
    if mapped.kind != "core":
        return ToolFacts(mapped.tool)
    return replace(facts_for(mapped.tool), runs_command=False)


def _runs_on_the_agents_machine(_: ToolContext, __: object) -> str:
    raise RunsElsewhere(NOT_SANDBOXED)


def _gated(mapped: Mapped, native: Native, policy: PolicySpec, judged: Judged) -> Judged:
    """Gate mode's verdict, with the call narrowed where it narrowed it: the input the
    agent is told to run (`runs`) and what the narrowing did, in the preview."""
    gated = gate(mapped, judged.args, judged.verdict, policy, native)
    args, shown = judged.args, dict(judged.preview or {})
    if gated.runs is not None:
        facts = shown["gateway"]
        shown["gateway"] = {**facts, "notes": [*facts["notes"], *gated.notes], "runs": gated.runs}
    if gated.args is not None:
        args = gated.args
        shown["command"] = args.get("command", shown.get("command"))
    return Judged(gated.verdict, args, shown)


def _gateway_facts(native: Native, mapped: Mapped) -> dict[str, Any]:
    return {
        "native_tool": native.tool,
        "where": NOT_SANDBOXED,
        "agent_sandbox": agent_sandbox(native.input),
        "notes": list(mapped.notes),
    }


def agent_sandbox(native_input: Mapping[str, Any]) -> str:
    """What the agent's hook event says of its own sandbox: `sandbox_off`, else "none
    reported" (no agent reports whether its sandbox is on)."""
    return sandbox_off(native_input) or "none reported by the agent"


# --- previews from the input alone ---------------------------------------------------


def input_preview(
    mapped: Mapped, args: Mapping[str, Any], workspace: Path, policy: PolicySpec
) -> tuple[dict[str, Any], int | None]:
    """What a reviewer sees and the lines the call changes, from the input alone."""
    if mapped.tool == "write_file":
        content = str(args.get("content", ""))
        diff = _diff(str(args["path"]), "", content, new_file=True)
        lines = len(content.splitlines())
        return {"path": args["path"], "diff": diff, "changed_lines": lines}, lines
    if mapped.tool == "edit_file":
        old, new = str(args.get("old_string", "")), str(args.get("new_string", ""))
        diff = _diff(str(args["path"]), old, new)
        lines = _changed(diff)
        every = "replace_all" in " ".join(mapped.notes)
        preview = {"path": args["path"], "diff": diff, "changed_lines": lines}
        # How often the string occurs on the agent's disk is unknown: not counted.
        return preview, None if every else lines
    if mapped.tool == "run_command":
        command = str(args["command"])
        analysis = analyse_command(command)
        parts, _ = command_review(analysis, workspace, tuple(policy.secret_paths))
        preview = {"command": command, "parts": parts, "opaque": list(analysis.opaque)}
        # The agent's own timeout, when it sent one; agentweb runs nothing here, so no
        # default of its own and no sandbox of its own (the card says where it runs).
        if "timeout" in args:
            preview["timeout"] = args["timeout"]
        return preview, None
    return {}, None


def _diff(path: str, old: str, new: str, *, new_file: bool = False) -> str:
    before = "/dev/null" if new_file else f"a/{path}"
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), before, f"b/{path}"
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _changed(diff: str) -> int:
    return sum(
        1
        for line in diff.splitlines()
        if line[:1] in {"+", "-"} and not line.startswith(("+++", "---"))
    )
