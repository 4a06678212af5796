"""The tool registry: names to specs, argument validation that explains itself, schemas.

Each spec joins a tool's facts (`tools/catalogue.py`) to what running it needs: its
args model, its function and the preview a reviewer sees. This module loads every tool
(httpx, GitPython …); what only needs the facts imports the catalogue instead.
"""

from __future__ import annotations

from typing import Any

from tools_app.core.shell.commands import analyse_command
from tools_app.core.tools import cow_probe, files, git_runner, held_effect, secret_files
from tools_app.core.tools.agents import SpawnSubagentArgs, spawn_subagent
from tools_app.core.tools.base import ToolArgs, ToolContext, ToolSpec
from tools_app.core.tools.catalogue import CATALOGUE, EFFECT_TOOL, INTERNAL
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
    "INTERNAL_SPECS",
    "REGISTRY",
    "core_tool_schemas",
    "get_tool",
    "internal_tool",
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


def _command_preview(
    context: ToolContext, validated: RunCommandArgs, args: dict[str, Any]
) -> _Result:
    if context.review_command is None:
        raise ToolError("run_command's preview needs the policy's review of the command")
    analysis = analyse_command(str(args["command"]))
    patterns = context.sandbox.secret_paths
    parts, named = context.review_command(analysis, context.workspace, patterns)
    preview = {
        "command": args["command"],
        "timeout": validated.timeout,
        "parts": parts,
        "opaque": list(analysis.opaque),
        "sandboxed": cow_probe.cow_available(),
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

# The agents' tools.
REGISTRY: dict[str, ToolSpec] = {spec.name: spec for spec in _SPECS}
# The tools only the server calls (never offered to agents).
INTERNAL_SPECS: dict[str, ToolSpec] = {
    EFFECT_TOOL: ToolSpec(
        INTERNAL[EFFECT_TOOL],
        held_effect.DESCRIPTION,
        held_effect.ApplyEffectArgs,
        held_effect.apply_command_effect,
    )
}
if set(REGISTRY) != set(CATALOGUE) or set(INTERNAL_SPECS) != set(INTERNAL):
    raise RuntimeError(f"registry and catalogue disagree: {set(REGISTRY) ^ set(CATALOGUE)}")


def get_tool(name: str) -> ToolSpec:
    """An agent's tool by name; any other name (an internal tool's too) is unknown."""
    spec = REGISTRY.get(name)
    if spec is None:
        raise ToolError(f"Unknown tool {name!r}. Available tools: {', '.join(REGISTRY)}")
    return spec


def internal_tool(name: str) -> ToolSpec | None:
    """A tool only the server calls (the held effect's), or None."""
    return INTERNAL_SPECS.get(name)


def validate_args(name: str, args: object) -> ToolArgs:
    """A core tool's args model, or a ToolError naming every bad argument and what it
    needs."""
    validated: ToolArgs = get_tool(name).validate(args)[0]
    return validated


def core_tool_schemas() -> list[dict[str, Any]]:
    """Every registered tool as {name, description, input_schema} (JSON Schema)."""
    return [
        {"name": s.name, "description": s.description, "input_schema": s.json_schema()}
        for s in REGISTRY.values()
    ]
