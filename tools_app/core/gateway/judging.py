"""The gateway's judging: one native tool use validated, previewed and judged from its
input alone.

agentweb cannot run the call nor read the agent's disk: `prepare_native` maps the call
(`mapping`), validates it, builds the preview from the input (a Write's whole content,
an Edit's hunk, a command's parsed parts), asks the same policy engine, then applies
gate mode (`gate_mode`). No Django here.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tools_app.core.engine import STATUS_OF_VERDICT, Prepared
from tools_app.core.gateway.claude_code import sandbox_off
from tools_app.core.gateway.gate_mode import Native, gate
from tools_app.core.gateway.mapping import map_native
from tools_app.core.gateway.native import NOT_SANDBOXED, Mapped
from tools_app.core.policy.engine import evaluate
from tools_app.core.policy.preview import command_review
from tools_app.core.policy.types import CallFacts, PolicySpec, SessionCounters
from tools_app.core.shell.commands import analyse_command
from tools_app.core.tools.errors import ToolError
from tools_app.core.tools.registry import validate_args

__all__ = ["agent_sandbox", "input_preview", "prepare_native"]

# --- judging ---------------------------------------------------------------------------


def prepare_native(
    policy: PolicySpec,
    native_tool: str,
    native_input: Mapping[str, Any],
    cwd: str,
    counters: SessionCounters,
    ran_in: str = "",
) -> tuple[Mapped, Prepared]:
    """Map, validate, preview and judge one native tool use, from its input alone (and
    the directory it runs in, `ran_in`, see `map_native`).

    The Prepared's status is `failed` (the input does not fit), `denied`,
    `awaiting_approval` or `approved` (the agent may run it)."""
    mapped = map_native(native_tool, native_input, cwd, ran_in)
    if mapped.problem:
        error = f"{native_tool}'s input does not fit its shape: {mapped.problem}"
        return mapped, Prepared(status="failed", args=mapped.args, error=error)
    args = mapped.args
    if mapped.kind == "core":
        try:
            validated = validate_args(mapped.tool, mapped.args)
            args = validated.model_dump(exclude_none=True, exclude_unset=True)
        except ToolError as exc:
            return mapped, Prepared(status="failed", args=mapped.args, error=str(exc))
    workspace = Path(cwd or "/nonexistent-agent-cwd")
    preview, lines = input_preview(mapped, args, workspace, policy)
    facts = CallFacts(mapped.tool, args, workspace, lines)
    native = Native(native_tool, native_input, cwd)
    gated = gate(mapped, args, evaluate(policy, facts, counters), policy, native)
    gateway = _gateway_facts(native_tool, mapped, native_input)
    if gated.runs is not None:
        gateway |= {"notes": [*gateway["notes"], *gated.notes], "runs": gated.runs}
    if gated.args is not None:
        args = gated.args
        preview["command"] = args.get("command", preview.get("command"))
    verdict = gated.verdict
    prepared = Prepared(
        status=STATUS_OF_VERDICT[verdict.kind],
        args=args,
        verdict=verdict,
        preview={**preview, "gateway": gateway},
        changed_lines=lines,
    )
    return mapped, prepared


def _gateway_facts(
    native_tool: str, mapped: Mapped, native_input: Mapping[str, Any]
) -> dict[str, Any]:
    return {
        "native_tool": native_tool,
        "where": NOT_SANDBOXED,
        "agent_sandbox": agent_sandbox(native_input),
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
