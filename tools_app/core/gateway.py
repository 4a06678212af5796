"""The gateway's pure part: an agent's own tool use mapped to agentweb's, and judged.

Claude Code (Codex, Gemini) runs its tools on its own machine and asks a hook first.
agentweb cannot run the call nor read that machine's disk, so a call is judged from its
input alone: `map_native` turns the native tool and input into an agentweb tool and
arguments (`Bash` → `run_command`, `Write` → `write_file` …), `prepare_native` validates
them, builds the preview from the input (a Write's whole content, an Edit's hunk, a
command's parsed parts) and asks the same policy engine, then applies gate mode: a
command the policy would let run unseen only because agentweb's sandbox would catch its
effect is allowed here only when the analysis proves it reads and nothing else, or an
explicit rule allows it. Unknown tools and MCP tools go to a person unless a rule allows
them (fail closed). No Django here.
"""

from __future__ import annotations

import difflib
import posixpath
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from tools_app.core.codex_patch import PatchError, read_patch
from tools_app.core.engine import STATUS_OF_VERDICT, Prepared
from tools_app.core.gate import Fence, Proof, fold, prove_command
from tools_app.core.policy.engine import evaluate
from tools_app.core.policy.preview import command_review
from tools_app.core.policy.types import CallFacts, PolicySpec, SessionCounters, Verdict
from tools_app.core.shell.commands import analyse_command
from tools_app.core.tools.base import MAX_NAME_CHARS
from tools_app.core.tools.errors import ToolError
from tools_app.core.tools.jsonsafe import storable_args
from tools_app.core.tools.netguard import host_allowed, parse_target
from tools_app.core.tools.paths import protected_match
from tools_app.core.tools.registry import validate_args
from tools_app.core.tools.shell import MAX_TIMEOUT

__all__ = [
    "NOT_SANDBOXED",
    "Mapped",
    "gate",
    "map_native",
    "native_tool_name",
    "prepare_native",
]

Kind = Literal["core", "mcp", "no_effect", "unknown"]
NOT_SANDBOXED = "runs on the agent's machine, not sandboxed"
NATIVE_PREFIX = "native."  # an unknown or effect-free native tool: `native.TodoWrite`

# Native tools that change nothing in the workspace and reach nothing outside the agent:
# allowed and recorded (an explicit rule may still deny them).
NO_EFFECT_TOOLS = frozenset(
    {"TodoWrite", "ToolSearch", "TaskCreate", "TaskGet", "TaskUpdate", "TaskList"}
    | {"TaskStop", "TaskOutput", "EnterPlanMode", "ExitPlanMode", "AskUserQuestion"}
    # Gemini CLI's (docs/reference/tools.md of @google/gemini-cli 0.61)
    | {"write_todos", "update_topic", "ask_user", "enter_plan_mode", "exit_plan_mode"}
    | {"get_internal_docs", "complete_task", "tracker_create_task", "tracker_update_task"}
    | {"tracker_get_task", "tracker_list_tasks", "tracker_add_dependency", "tracker_visualize"}
)


@dataclass(frozen=True)
class Mapped:
    """An agentweb tool and arguments for one native tool use; `problem` names what in
    the native input does not fit the native tool's shape (the call is then refused)."""

    tool: str
    args: dict[str, Any]
    kind: Kind
    problem: str = ""
    notes: tuple[str, ...] = field(default=())
    # A command: the text the agent sent (its input's `command`) and the directory it
    # runs in, which gate mode's proof reads (`args["command"]` may carry a `cd`).
    sent: tuple[str, str] | None = None


def native_tool_name(native_tool: str) -> str:
    """The agentweb name a rule matches: `mcp.SERVER.TOOL` for an MCP tool (Claude Code's
    and Codex's `mcp__SERVER__TOOL`, Gemini CLI's `mcp_SERVER_TOOL`), `native.NAME` for a
    tool agentweb has no equivalent of."""
    server, tool = _mcp_parts(native_tool)
    if server and tool:
        return f"mcp.{server}.{tool}"
    return f"{NATIVE_PREFIX}{native_tool}"


def _mcp_parts(native_tool: str) -> tuple[str, str]:
    if native_tool.startswith("mcp__"):
        server, _, tool = native_tool[len("mcp__") :].partition("__")
        return server, tool
    if native_tool.startswith("mcp_"):
        # Gemini CLI's own parse: the server is what comes before the next `_`.
        server, _, tool = native_tool[len("mcp_") :].partition("_")
        return server, tool
    return "", ""


def map_native(
    native_tool: str, native_input: Mapping[str, Any], cwd: str, ran_in: str = ""
) -> Mapped:
    """The agentweb call for one native tool use (never raises). `ran_in` is the
    directory the agent runs it in when that is not the session's `cwd` (Claude Code's
    shell keeps a `cd`, Codex takes a `workdir`): a command is judged as run there."""
    mapper = _MAPPERS.get(native_tool)
    if mapper is not None:
        try:
            return _run_in(mapper(native_input, cwd), cwd, ran_in)
        except _Misfit as exc:
            return Mapped(_CORE_NAMES[native_tool], {}, "core", str(exc))
    name = native_tool_name(native_tool)
    args = storable_args(dict(native_input))
    if name.startswith("mcp."):
        return Mapped(name, args, "mcp")
    kind: Kind = "no_effect" if native_tool in NO_EFFECT_TOOLS else "unknown"
    return Mapped(name, args, kind)


def _run_in(mapped: Mapped, cwd: str, ran_in: str) -> Mapped:
    if mapped.tool != "run_command" or not ran_in or _same_dir(ran_in, cwd):
        return mapped
    command = f"cd {shlex.quote(ran_in)} && {mapped.args['command']}"
    notes = (*mapped.notes, f"runs in {ran_in}")
    sent_in = (mapped.sent[0], ran_in) if mapped.sent else None
    args = {**mapped.args, "command": command}
    return Mapped(mapped.tool, args, "core", notes=notes, sent=sent_in)


def _same_dir(one: str, other: str) -> bool:
    return posixpath.normpath(one or "/") == posixpath.normpath(other or "/")


class _Misfit(ValueError):
    """The native input does not have the native tool's shape."""


def _text(native: Mapping[str, Any], name: str, *, required: bool = True) -> str | None:
    value = native.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise _Misfit(f"`{name}` must be a string, got {_type_name(value)}")
    return value


def _number(native: Mapping[str, Any], name: str) -> float | None:
    value = native.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Misfit(f"`{name}` must be a number, got {_type_name(value)}")
    return float(value)


def _type_name(value: object) -> str:
    return "nothing" if value is None else type(value).__name__


def workspace_path(path: str, cwd: str) -> str:
    """A native path as the policy sees it: relative to the session's `cwd` when it is
    inside (spelled lexically), else as given so that the invariant refuses it."""
    if not posixpath.isabs(path) or not cwd:
        return path
    relative = posixpath.relpath(posixpath.normpath(path), posixpath.normpath(cwd))
    return path if relative == ".." or relative.startswith("../") else relative


def _bash(native: Mapping[str, Any], cwd: str) -> Mapped:
    args: dict[str, Any] = {"command": _text(native, "command")}
    timeout_ms = _number(native, "timeout")
    if timeout_ms is not None and timeout_ms > 0:
        args["timeout"] = min(timeout_ms / 1000, MAX_TIMEOUT)
    background = native.get("run_in_background") is True
    notes = ("runs in the background on the agent's machine",) if background else ()
    return Mapped("run_command", args, "core", notes=notes, sent=(args["command"], cwd))


def _write(native: Mapping[str, Any], cwd: str) -> Mapped:
    path = workspace_path(str(_text(native, "file_path")), cwd)
    return Mapped("write_file", {"path": path, "content": _text(native, "content")}, "core")


def _edit(native: Mapping[str, Any], cwd: str) -> Mapped:
    path = workspace_path(str(_text(native, "file_path")), cwd)
    args = {"path": path, "old_string": _text(native, "old_string")}
    args["new_string"] = _text(native, "new_string")
    every = native.get("replace_all")
    if every is not None and not isinstance(every, bool):
        raise _Misfit(f"`replace_all` must be true or false, got {_type_name(every)}")
    notes = ("replaces every occurrence (replace_all)",) if every else ()
    return Mapped("edit_file", args, "core", notes=notes)


def _read(native: Mapping[str, Any], cwd: str) -> Mapped:
    args: dict[str, Any] = {"path": workspace_path(str(_text(native, "file_path")), cwd)}
    for name in ("offset", "limit"):
        value = native.get(name)
        if value is not None:
            args[name] = value
    return Mapped("read_file", args, "core")


def _glob(native: Mapping[str, Any], cwd: str) -> Mapped:
    where = _text(native, "path", required=False) or "."
    return _listing(workspace_path(where, cwd), _text(native, "pattern"))


def _grep(native: Mapping[str, Any], cwd: str) -> Mapped:
    where = workspace_path(_text(native, "path", required=False) or ".", cwd)
    return _search(_text(native, "pattern"), where, _text(native, "glob", required=False))


def _listing(path: str, pattern: str | None) -> Mapped:
    """A glob of any agent: a recursive `list_files`."""
    return Mapped("list_files", {"path": path, "pattern": pattern, "recursive": True}, "core")


def _search(pattern: str | None, path: str, include: str | None) -> Mapped:
    """A grep of any agent: `search_codebase`, with its file filter when it has one."""
    args: dict[str, Any] = {"pattern": pattern, "path": path}
    if include:
        args["include"] = include
    return Mapped("search_codebase", args, "core")


def _web_fetch(native: Mapping[str, Any], cwd: str) -> Mapped:
    return Mapped("web_fetch", {"url": _text(native, "url")}, "core")


def _agent(native: Mapping[str, Any], cwd: str) -> Mapped:
    title = (_text(native, "description", required=False) or "sub-agent")[:MAX_NAME_CHARS]
    prompt = _text(native, "prompt")
    return Mapped("spawn_subagent", {"title": title or "sub-agent", "description": prompt}, "core")


# --- Gemini CLI's tools: other names, other argument keys ----------------------------


def _gemini_dir(native: Mapping[str, Any], cwd: str) -> str:
    return workspace_path(_text(native, "dir_path", required=False) or ".", cwd)


def _gemini_shell(native: Mapping[str, Any], cwd: str) -> Mapped:
    """`run_shell_command` in `dir_path` is judged as `cd DIR && COMMAND`: what runs."""
    sent = command = str(_text(native, "command"))
    where = _text(native, "dir_path", required=False)
    if where and not _same_dir(where, cwd):
        command = f"cd {shlex.quote(where)} && {command}"
    background = native.get("is_background") is True
    notes = ("runs in the background on the agent's machine",) if background else ()
    sent_in = (sent, where or cwd)
    return Mapped("run_command", {"command": command}, "core", notes=notes, sent=sent_in)


def _gemini_replace(native: Mapping[str, Any], cwd: str) -> Mapped:
    every = native.get("allow_multiple")
    if every is not None and not isinstance(every, bool):
        raise _Misfit(f"`allow_multiple` must be true or false, got {_type_name(every)}")
    return _edit({**native, "replace_all": every}, cwd)


def _gemini_read(native: Mapping[str, Any], cwd: str) -> Mapped:
    args: dict[str, Any] = {"path": workspace_path(str(_text(native, "file_path")), cwd)}
    start, end = _number(native, "start_line"), _number(native, "end_line")
    if start is not None:
        args["offset"] = max(1, int(start))
    if end is not None:
        args["limit"] = max(1, int(end) - args.get("offset", 1) + 1)
    return Mapped("read_file", args, "core")


def _gemini_glob(native: Mapping[str, Any], cwd: str) -> Mapped:
    return _listing(_gemini_dir(native, cwd), _text(native, "pattern"))


def _gemini_list(native: Mapping[str, Any], cwd: str) -> Mapped:
    return Mapped("list_files", {"path": _gemini_dir(native, cwd)}, "core")


def _gemini_grep(native: Mapping[str, Any], cwd: str) -> Mapped:
    include = _text(native, "include_pattern", required=False)
    return _search(_text(native, "pattern"), _gemini_dir(native, cwd), include)


# --- Codex CLI's apply_patch ---------------------------------------------------------


def _apply_patch(native: Mapping[str, Any], cwd: str) -> Mapped:
    """One added file is a `write_file`, one file's single hunk an `edit_file`; any other
    patch (several files, a deletion, a move) goes to a person, naming what it does."""
    text = str(_text(native, "command"))
    as_is = Mapped(native_tool_name("apply_patch"), storable_args(dict(native)), "unknown")
    try:
        changes = read_patch(text)
    except PatchError as exc:
        return replace(as_is, notes=(f"not read as a patch: {exc}",))
    if len(changes) == 1:
        change = changes[0]
        path = workspace_path(change.path, cwd)
        if change.action == "add":
            return Mapped("write_file", {"path": path, "content": change.content}, "core")
        if change.action == "update" and not change.moved_to and len(change.hunks) == 1:
            old, new = change.hunks[0]
            args = {"path": path, "old_string": "\n".join(old), "new_string": "\n".join(new)}
            return Mapped("edit_file", args, "core")
    moves = {c.path: f" (to {c.moved_to})" if c.moved_to else "" for c in changes}
    return replace(as_is, notes=tuple(f"{c.action}s {c.path}{moves[c.path]}" for c in changes))


_Mapper = Callable[[Mapping[str, Any], str], Mapped]
_MAPPERS: dict[str, _Mapper] = {
    "Bash": _bash,
    "Write": _write,
    "Edit": _edit,
    "Read": _read,
    "Glob": _glob,
    "Grep": _grep,
    "WebFetch": _web_fetch,
    "Agent": _agent,
    "Task": _agent,
    "run_shell_command": _gemini_shell,
    "write_file": _write,
    "replace": _gemini_replace,
    "read_file": _gemini_read,
    "glob": _gemini_glob,
    "list_directory": _gemini_list,
    "grep_search": _gemini_grep,
    "search_file_content": _gemini_grep,
    "apply_patch": _apply_patch,
}
_CORE_NAMES = {
    "Bash": "run_command",
    "Write": "write_file",
    "Edit": "edit_file",
    "Read": "read_file",
    "Glob": "list_files",
    "Grep": "search_codebase",
    "WebFetch": "web_fetch",
    "Agent": "spawn_subagent",
    "Task": "spawn_subagent",
    "run_shell_command": "run_command",
    "write_file": "write_file",
    "replace": "edit_file",
    "read_file": "read_file",
    "glob": "list_files",
    "list_directory": "list_files",
    "grep_search": "search_codebase",
    "search_file_content": "search_codebase",
    "apply_patch": "native.apply_patch",
}


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
    verdict, proof = gate(mapped, args, evaluate(policy, facts, counters), policy, cwd)
    gateway = _gateway_facts(native_tool, mapped, native_input)
    if proof is not None and proof.narrowed:
        args, gateway = _narrowed(mapped, args, native_input, proof, gateway)
        preview["command"] = args["command"]
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
    """What the agent's hook event says of its own sandbox. Claude Code's Bash carries
    `dangerouslyDisableSandbox` when the model asks to run a command outside it; no
    agent reports whether its sandbox is on, so anything else is "none reported"."""
    if native_input.get("dangerouslyDisableSandbox") is True:
        return "off for this call: the agent asked to run it outside its sandbox"
    return "none reported by the agent"


def _narrowed(
    mapped: Mapped,
    args: dict[str, Any],
    native_input: Mapping[str, Any],
    proof: Proof,
    gateway: dict[str, Any],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The call as gate mode narrowed it: the command in agentweb's arguments (behind the
    `cd` the mapping put in front) and in the agent's own input, which the hook's answer
    hands back as the input to run (`runs`)."""
    sent = mapped.sent[0] if mapped.sent else str(args["command"])
    command = str(args["command"])
    prefix = command[: len(command) - len(sent)] if command.endswith(sent) else ""
    runs = {**storable_args(dict(native_input)), "command": proof.narrowed}
    notes = [*gateway["notes"], *proof.notes]
    return {**args, "command": prefix + proof.narrowed}, {**gateway, "notes": notes, "runs": runs}


def gate(
    mapped: Mapped,
    args: Mapping[str, Any],
    verdict: Verdict,
    policy: PolicySpec,
    cwd: str,
) -> tuple[Verdict, Proof | None]:
    """Gate mode: nothing runs unseen on the agent's machine unless it is proven harmless
    (a command: `core.gate`), changes nothing (an effect-free tool) or an explicit rule
    allows it. The file-system checks are made again case-folded and normalised, as the
    agent's file system may compare names (macOS, Windows). An explicit rule's verdict
    stands, but for a write into `.git`, which no rule allows."""
    folded = _folded_path_verdict(mapped, args, policy)
    if folded is not None and (folded.kind == "deny" or not verdict.rule.startswith("rule ")):
        return (folded, None) if _stricter(folded, verdict) else (verdict, None)
    if verdict.kind != "allow" or verdict.rule.startswith("rule "):
        return _named_for_gateway(mapped, verdict), None
    if mapped.kind == "no_effect":
        return Verdict(
            "allow", f"{mapped.tool} changes nothing in the workspace", "gateway:no-effect"
        ), None
    if mapped.kind in {"mcp", "unknown"}:
        return _unknown_tool(mapped), None
    if mapped.tool == "run_command":
        return _prove(mapped, args, policy, cwd)
    if mapped.tool == "web_fetch":
        return _network(args, policy), None
    return verdict, None


def _prove(
    mapped: Mapped, args: Mapping[str, Any], policy: PolicySpec, cwd: str
) -> tuple[Verdict, Proof]:
    command, where = mapped.sent or (str(args.get("command", "")), cwd)
    fence = Fence(cwd or "/", tuple(policy.protected_paths), tuple(policy.secret_paths))
    proof = prove_command(command, where, fence)
    if not proof.proven:
        reason = (
            f"gate mode cannot prove this command harmless: {proof.reason}. It "
            f"{NOT_SANDBOXED}, so a person approves it unless a policy rule allows it"
        )
        return Verdict("require_approval", reason, "gateway:not-proven"), proof
    reason = (
        "gate mode proved it harmless: every program and option is on its list of those "
        "that only read, every word is a plain literal, and every path is inside the "
        "session's directory and neither protected nor secret"
    )
    return Verdict("allow", reason, "gateway:proven"), proof


def _network(args: Mapping[str, Any], policy: PolicySpec) -> Verdict:
    """A fetch from the agent's machine may carry anything it read out: it passes
    unseen only to a host the policy names (`web_allow_hosts`, or an allow rule)."""
    url = str(args.get("url", ""))
    try:
        target = parse_target(url)
    except ValueError as exc:
        return Verdict("deny", f"web_fetch of {url} cannot be judged: {exc}", "gateway:network")
    if host_allowed(target, tuple(policy.web_allow_hosts)):
        return Verdict(
            "allow", f"{target.host} is in the policy's web_allow_hosts", "gateway:network"
        )
    return Verdict(
        "require_approval",
        f"web_fetch reaches {target.host} from the agent's machine, which could carry out "
        "what the agent read; a person approves it unless the policy names the host "
        "(web_allow_hosts, or an allow rule)",
        "gateway:network",
    )


_WRITES = frozenset({"write_file", "edit_file"})
_READS = frozenset({"read_file", "list_files", "search_codebase"})
_SEVERITY = {"allow": 0, "require_approval": 1, "deny": 2}


def _stricter(one: Verdict, other: Verdict) -> bool:
    return _SEVERITY[one.kind] > _SEVERITY[other.kind]


def _folded_path_verdict(
    mapped: Mapped, args: Mapping[str, Any], policy: PolicySpec
) -> Verdict | None:
    """The path checks once more on the name case-folded and normalised: `.GIT/hooks`,
    `.GitHub/workflows`, `.ENV` are the lower-case ones where the agent's disk folds
    case."""
    if mapped.kind != "core" or mapped.tool not in _WRITES | _READS:
        return None
    path = str(args.get("path", ""))
    folded = fold(posixpath.normpath(path)) if path else ""
    if not folded or folded.startswith("/") or folded.startswith("../"):
        return None  # outside: the invariant already denies it
    if mapped.tool in _WRITES and ".git" in folded.split("/"):
        return Verdict(
            "deny",
            f"{path} is inside a .git directory (compared as the agent's file system may "
            "compare names, case-folded); no tool writes there",
            "invariant:git-dir",
        )
    checks = [("secret", policy.secret_paths, "builtin:secret-path")]
    if mapped.tool in _WRITES:
        checks.insert(0, ("protected", policy.protected_paths, "builtin:protected-path"))
    for kind, patterns, rule in checks:
        pattern = protected_match([fold(p) for p in patterns], folded)
        if pattern is not None:
            reason = (
                f"{path} matches the {kind} pattern {pattern} (compared case-folded, as the "
                "agent's file system may)"
            )
            return Verdict("require_approval", reason, rule)
    return None


def _unknown_tool(mapped: Mapped) -> Verdict:
    what = "an MCP tool" if mapped.kind == "mcp" else "a tool agentweb does not know"
    return Verdict(
        "require_approval",
        f"{mapped.tool} is {what}; it {NOT_SANDBOXED}, so a person approves it unless "
        "a policy rule allows it by name",
        f"gateway:{mapped.kind}-tool",
    )


def _named_for_gateway(mapped: Mapped, verdict: Verdict) -> Verdict:
    """The skill-tool check also fires on `mcp.…` and `native.…` names (they hold a dot):
    say what the tool really is."""
    if verdict.rule != "builtin:skill-tool" or mapped.kind == "core":
        return verdict
    if mapped.kind == "no_effect":
        return Verdict(
            "allow", f"{mapped.tool} changes nothing in the workspace", "gateway:no-effect"
        )
    return _unknown_tool(mapped)


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
        preview = {"command": command, "timeout": args.get("timeout", 120), "parts": parts}
        return {**preview, "opaque": list(analysis.opaque), "sandboxed": False}, None
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
