"""The tool registry: names to specs, argument validation that explains itself, schemas.

Each spec joins a tool's facts (`tools/catalogue.py`) to what running it needs: its
args model, its function and the preview a reviewer sees. This module loads every tool
(httpx, GitPython …); what only needs the facts imports the catalogue instead.
"""

from __future__ import annotations

import reprlib
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from tools_app.core.shell.commands import analyse_command
from tools_app.core.tools import files, git_runner, overlay, secret_files
from tools_app.core.tools.agents import SpawnSubagentArgs, spawn_subagent
from tools_app.core.tools.base import ToolArgs, ToolContext, ToolSpec
from tools_app.core.tools.catalogue import CATALOGUE
from tools_app.core.tools.completion import TaskDoneArgs, task_done
from tools_app.core.tools.errors import ToolError
from tools_app.core.tools.files import (
    EditFileArgs,
    ReadFileArgs,
    WriteFileArgs,
    edit_file,
    read_file,
    write_file,
)
from tools_app.core.tools.git import (
    GitBranchArgs,
    GitCommitArgs,
    GitDiffArgs,
    GitLogArgs,
    GitStatusArgs,
    git_branch,
    git_commit,
    git_diff,
    git_log,
    git_status,
)
from tools_app.core.tools.jsonsafe import printable, text_issue
from tools_app.core.tools.pull_requests import (
    CreatePullRequestArgs,
    create_pull_request,
    pull_request_preview,
)
from tools_app.core.tools.search import (
    ListFilesArgs,
    SearchCodebaseArgs,
    list_files,
    search_codebase,
)
from tools_app.core.tools.shell import RunCommandArgs, run_command
from tools_app.core.tools.web import WEB_FETCH_DESCRIPTION, WebFetchArgs, web_fetch

__all__ = [
    "REGISTRY",
    "core_tool_schemas",
    "get_tool",
    "validate_args",
]

_Result = tuple[dict[str, Any], int | None]


def _file_preview(tool: str, context: ToolContext, args: dict[str, Any]) -> _Result:
    change = files.plan_file_change(context, tool, args)
    preview = {
        "path": change.path,
        "diff": change.diff,
        "changed_lines": change.changed_lines,
        "state": files.preview_state(change),
    }
    return preview, change.changed_lines


def _write_preview(context: ToolContext, _: WriteFileArgs, args: dict[str, Any]) -> _Result:
    return _file_preview("write_file", context, args)


def _edit_preview(context: ToolContext, _: EditFileArgs, args: dict[str, Any]) -> _Result:
    return _file_preview("edit_file", context, args)


def _command_preview(context: ToolContext, _: RunCommandArgs, args: dict[str, Any]) -> _Result:
    if context.review_command is None:
        raise ToolError("run_command's preview needs the policy's review of the command")
    analysis = analyse_command(str(args["command"]))
    patterns = context.sandbox.secret_paths
    parts, named = context.review_command(analysis, context.workspace, patterns)
    preview = {
        "command": args["command"],
        "timeout": args.get("timeout", 120),
        "parts": parts,
        "opaque": list(analysis.opaque),
        "sandboxed": overlay.cow_available(),
    }
    if named:  # what this command sees unmasked if a person approves it
        preview["secrets_visible"] = secret_files.covered(context.workspace, patterns, named)
    return preview, None


def _commit_preview(context: ToolContext, _: GitCommitArgs, args: dict[str, Any]) -> _Result:
    patterns = context.sandbox.secret_paths
    commit = git_runner.commit_preview(context.workspace, args.get("files"), patterns)
    preview = {
        "message": args["message"],
        "files": commit.files,
        "stat": commit.stat,
        "diff": commit.diff,
        "changed_lines": commit.changed_lines,
        "state": {"tree": commit.tree, "base": commit.base},
    }
    if commit.left_out:
        preview["secrets_left_out"] = commit.left_out
    return preview, commit.changed_lines


def _pull_request_preview(
    context: ToolContext, validated: CreatePullRequestArgs, _: dict[str, Any]
) -> _Result:
    return pull_request_preview(context, validated), None


_SPECS = (
    ToolSpec(
        CATALOGUE["read_file"],
        "Read the contents of a file. Returns lines numbered `N | text`, at most 2,000 lines "
        "or 256 KB per call; page on with offset.",
        ReadFileArgs,
        read_file,
    ),
    ToolSpec(
        CATALOGUE["write_file"],
        "Create or overwrite a file with the full content given. Creates parent directories.",
        WriteFileArgs,
        write_file,
        _write_preview,
    ),
    ToolSpec(
        CATALOGUE["edit_file"],
        "Apply a surgical string replacement to a file: old_string must occur exactly once "
        "and differ from new_string.",
        EditFileArgs,
        edit_file,
        _edit_preview,
    ),
    ToolSpec(
        CATALOGUE["run_command"],
        "Execute a shell command in the workspace (bash -c). Returns the exit code and the "
        "output (stdout and stderr), truncated at 10 MB. No network unless approved.",
        RunCommandArgs,
        run_command,
        _command_preview,
    ),
    ToolSpec(
        CATALOGUE["search_codebase"],
        "Search file contents with a regex (ripgrep). Returns matching lines as path:line:text.",
        SearchCodebaseArgs,
        search_codebase,
    ),
    ToolSpec(
        CATALOGUE["list_files"],
        "List files in a directory (directories end in /). node_modules/ and .git/ are left out.",
        ListFilesArgs,
        list_files,
    ),
    ToolSpec(
        CATALOGUE["task_done"],
        "Signal that the task is complete, with a summary. This is the only way to finish.",
        TaskDoneArgs,
        task_done,
    ),
    ToolSpec(
        CATALOGUE["git_status"],
        "Show the working tree status (git status --short).",
        GitStatusArgs,
        git_status,
    ),
    ToolSpec(
        CATALOGUE["git_diff"],
        "Show unstaged changes (git diff), or only staged ones with staged=true "
        "(git diff --staged). Untracked files are not shown.",
        GitDiffArgs,
        git_diff,
    ),
    ToolSpec(
        CATALOGUE["git_commit"],
        "Stage files and create a commit: the given files, or every change (untracked "
        "files included). Returns the commit hash and summary.",
        GitCommitArgs,
        git_commit,
        _commit_preview,
    ),
    ToolSpec(
        CATALOGUE["git_log"],
        "Show recent commit history (default: the last 10, one line each).",
        GitLogArgs,
        git_log,
    ),
    ToolSpec(
        CATALOGUE["git_branch"],
        "Create (and switch to), list, or switch branches.",
        GitBranchArgs,
        git_branch,
    ),
    ToolSpec(
        CATALOGUE["create_pull_request"],
        "Push the current branch and create a pull request against base (default main). "
        "Always needs a reviewer's approval. Returns the PR URL and number.",
        CreatePullRequestArgs,
        create_pull_request,
        _pull_request_preview,
    ),
    ToolSpec(
        CATALOGUE["spawn_subagent"],
        "Delegate a subtask to an independent child agent; returns its summary, files "
        "changed and token usage.",
        SpawnSubagentArgs,
        spawn_subagent,
    ),
    ToolSpec(
        CATALOGUE["web_fetch"],
        WEB_FETCH_DESCRIPTION,
        WebFetchArgs,
        web_fetch,
    ),
)

REGISTRY: dict[str, ToolSpec] = {spec.name: spec for spec in _SPECS}
if set(REGISTRY) != set(CATALOGUE):
    raise RuntimeError(f"registry and catalogue disagree: {set(REGISTRY) ^ set(CATALOGUE)}")


def get_tool(name: str) -> ToolSpec:
    spec = REGISTRY.get(name)
    if spec is None:
        raise ToolError(f"Unknown tool {name!r}. Available tools: {', '.join(REGISTRY)}")
    return spec


def validate_args(name: str, args: object) -> ToolArgs:
    """The tool's args model, or a ToolError naming every bad argument and what it needs."""
    spec = get_tool(name)
    if not isinstance(args, Mapping):
        raise ToolError(
            f"Arguments for {name} must be a JSON object of named arguments "
            f"({', '.join(spec.args_model.model_fields)}); got {type(args).__name__}."
        )
    _check_names(name, args)
    try:
        return spec.args_model.model_validate(dict(args))
    except ValidationError as error:
        raise ToolError(printable(_explain(name, spec, error))) from None


def _check_names(name: str, args: Mapping[Any, Any]) -> None:
    """Argument names are text without surrogates or NUL (the model cannot even report those)."""
    for key in args:
        if not isinstance(key, str):
            raise ToolError(f"Invalid arguments for {name}: names must be strings; got {key!r}")
        issue = text_issue(key)
        if issue:
            shown = printable(key)
            raise ToolError(f"Invalid arguments for {name}: the argument name `{shown}` {issue}")


def core_tool_schemas() -> list[dict[str, Any]]:
    """Every registered tool as {name, description, input_schema} (JSON Schema)."""
    return [
        {"name": s.name, "description": s.description, "input_schema": s.json_schema()}
        for s in REGISTRY.values()
    ]


def _explain(name: str, spec: ToolSpec, error: ValidationError) -> str:
    fields = spec.args_model.model_fields
    properties = spec.json_schema().get("properties", {})
    messages: list[str] = []
    seen: set[str] = set()
    for item in error.errors():
        loc = item["loc"]
        field = str(loc[0]) if loc else ""
        index = next((part for part in loc[1:] if isinstance(part, int)), None)
        key = f"{field}[{index}]" if index is not None else field
        if key in seen:
            continue
        seen.add(key)
        if item["type"] == "value_error":  # a validator's own message names the argument
            messages.append(str(item.get("ctx", {}).get("error", item["msg"])))
        elif item["type"] == "extra_forbidden":
            accepted = ", ".join(fields)
            messages.append(f"unexpected argument `{field}`; {name} accepts: {accepted}")
        elif item["type"] == "missing":
            messages.append(f"missing required argument `{field}`")
        elif item["type"] == "string_too_long":
            limit, length = item["ctx"]["max_length"], len(item["input"])
            messages.append(f"`{key}` is too long: {length:,} characters, at most {limit:,}")
        elif index is not None:
            messages.append(f"`{key}` {item['msg'].lower()} (got {_shown(item['input'])})")
        else:
            expected = _expectation(properties.get(field, {}))
            messages.append(f"`{field}` must be {expected} (got {_shown(item['input'])})")
    return f"Invalid arguments for {name}: " + "; ".join(messages)


def _expectation(schema: Mapping[str, Any]) -> str:
    """A phrase for what a JSON Schema property accepts: 'a positive integer' and so on."""
    kind = schema.get("type")
    if "enum" in schema:
        return "one of " + ", ".join(repr(value) for value in schema["enum"])
    bounds = ""
    if "maximum" in schema:
        bounds = f", at most {schema['maximum']:g}"
    if kind in ("integer", "number"):
        noun = "integer" if kind == "integer" else "number"
        if schema.get("minimum") == 1 or "exclusiveMinimum" in schema:
            return f"a positive {noun}{bounds}"
        if "minimum" in schema:
            return f"a {noun} >= {schema['minimum']}{bounds}"
        return f"a {noun}{bounds}"
    if kind == "string":
        return "a non-empty string" if schema.get("minLength") else "a string"
    if kind == "boolean":
        return "true or false"
    if kind == "array":
        return "a list of strings"
    return "a valid value"


_SHORT = reprlib.Repr()
_SHORT.maxstring = 80
_SHORT.maxother = 80
_SHORT.maxlevel = 3


def _shown(value: object) -> str:
    """A short repr, safe for values nested far deeper than the recursion limit."""
    text = _SHORT.repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
