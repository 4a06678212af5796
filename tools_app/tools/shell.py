"""run_command: a shell command in the workspace, sandboxed, bounded in time and output."""

from __future__ import annotations

import signal

from pydantic import Field

# The module, not its names: sandbox imports tools.base, which loads this package.
from tools_app.tools import guard, sandbox
from tools_app.tools.base import MAX_COMMAND_CHARS, ToolArgs, ToolContext

DEFAULT_TIMEOUT = 120.0
MAX_TIMEOUT = 3600.0
EROFS_NOTE = (
    "note: the sandbox mounts .git and protected paths read-only; use the git tools "
    "(git_commit, git_branch …) or ask for approval to run this command with write access."
)

GUARD_NOTE = (
    "note: commands may not create or change protected paths without approval; undone: "
    "{changes}. Use write_file or edit_file (a reviewer approves those), or ask for approval "
    "to run this command."
)


class RunCommandArgs(ToolArgs):
    command: str = Field(
        min_length=1,
        max_length=MAX_COMMAND_CHARS,
        description="Shell command to execute (run with bash -c).",
    )
    timeout: float = Field(
        default=DEFAULT_TIMEOUT,
        gt=0,
        le=MAX_TIMEOUT,
        description=f"Timeout in seconds (default: {DEFAULT_TIMEOUT:g}, at most {MAX_TIMEOUT:g}).",
    )


def run_command(ctx: ToolContext, args: RunCommandArgs) -> str:
    """Run `bash -c COMMAND`; a failing command is a result for the agent, not an error."""
    patterns = () if ctx.sandbox.approved else ctx.sandbox.protected_paths
    before = guard.record(ctx.workspace, patterns)
    result = sandbox.run_sandboxed(
        ctx.workspace,
        ["bash", "-c", args.command],
        ctx.sandbox,
        timeout=args.timeout,
        on_start=ctx.on_process_start,
        should_stop=ctx.should_stop,
    )
    text = format_result(result, args.timeout, approved=ctx.sandbox.approved)
    undone = guard.undo_unapproved_changes(ctx.workspace, patterns, before)
    if undone:
        text += "\n" + GUARD_NOTE.format(changes="; ".join(undone))
    return text


def format_result(result: sandbox.CommandResult, timeout: float, *, approved: bool) -> str:
    """`exit code: N` (or the timeout) on the first line, then the merged stdout and stderr."""
    if result.timed_out:
        head = f"timed out after {timeout:g} s; process group killed"
    else:
        head = f"exit code: {_describe_exit(result.exit_code)}"
    parts = [head, result.output.decode("utf-8", errors="replace")]
    if result.truncated:
        parts.append(
            f"[output truncated at {sandbox.OUTPUT_LIMIT // (1024 * 1024)} MB of "
            f"{result.total_bytes} bytes; redirect it to a file and read that with "
            "read_file or search_codebase]"
        )
    failed = result.timed_out or result.exit_code != 0
    if failed and result.sandboxed and not approved and b"Read-only file system" in result.output:
        parts.append(EROFS_NOTE)
    return "\n".join(part.rstrip("\n") for part in parts if part)


def _describe_exit(code: int | None) -> str:
    if code is None or code >= 0:
        return str(code)
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = f"signal {-code}"
    return f"{code} (killed by {name})"
