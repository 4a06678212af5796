"""run_command: a shell command on a copy-on-write view of the workspace, bounded in
time and output; what it changed is judged before anything is applied."""

from __future__ import annotations

import dataclasses
import signal
from collections.abc import Mapping

from pydantic import Field

from tools_app.core.egress import sandbox as egress_sandbox
from tools_app.core.tools import cow_probe, git_view, overlay, processes, secret_files
from tools_app.core.tools.base import MAX_COMMAND_CHARS, SandboxOptions, ToolArgs, ToolContext
from tools_app.core.tools.effect import Effect
from tools_app.core.tools.errors import ToolError

MAX_TIMEOUT = 3600.0
NO_HANDLER_NOTE = "note: nothing the command changed was applied (no effect handler)."
UNSANDBOXED_NOTE = "note: ran without the copy-on-write sandbox (unavailable on this host)."
NO_HOSTS_NOTE = (
    "network: none (this command was meant to have network, but its grant names no "
    "hosts, so nothing could connect)"
)


class RunCommandArgs(ToolArgs):
    command: str = Field(
        min_length=1,
        max_length=MAX_COMMAND_CHARS,
        description="Shell command to execute (run with bash -c).",
    )
    timeout: float = Field(
        default=processes.DEFAULT_TIMEOUT,
        gt=0,
        le=MAX_TIMEOUT,
        description=f"Timeout in seconds (default: {processes.DEFAULT_TIMEOUT:g}, "
        f"at most {MAX_TIMEOUT:g}).",
    )


def run_command(ctx: ToolContext, args: RunCommandArgs) -> str:
    """Run `bash -c COMMAND`; a failing command is a result for the agent, not an error.

    On a copy-on-write view when the host supports it: what the command changed is its
    effect, which only `ctx.effect_handler` (the policy) may apply. Without one, nothing
    is applied: failing closed.
    """
    return run_argv(ctx, ["bash", "-c", args.command], timeout=args.timeout)


def run_argv(
    ctx: ToolContext,
    argv: list[str],
    *,
    timeout: float,
    stdin: bytes | None = None,
    env: Mapping[str, str] | None = None,
) -> str:
    """Run `argv` as run_command runs a command (a skill's command tool shares this):
    sandboxed, bounded, its effect judged by `ctx.effect_handler` before it applies."""
    if not cow_probe.cow_available():
        result = processes.run_plain(
            ctx.workspace,
            argv,
            timeout=timeout,
            should_stop=ctx.should_stop,
            stdin=stdin,
            extra_env=env,
        )
        return format_result(result, timeout) + "\n" + UNSANDBOXED_NOTE
    options = _with_secrets_masked(ctx)
    with (
        git_view.object_views(ctx.workspace, options.secret_paths) as views,
        overlay.run_copy_on_write(
            ctx.workspace,
            argv,
            dataclasses.replace(options, object_views=views),
            timeout=timeout,
            should_stop=ctx.should_stop,
            stdin=stdin,
            extra_env=env,
        ) as run,
    ):
        text = format_result(run.result, timeout)
        note = _judge(ctx, run.effect)
    notes = [note] if note else []
    if options.egress is not None:
        notes.append(egress_sandbox.summary(run.connections))
        if ctx.on_connections is not None:
            ctx.on_connections(run.connections)
    elif options.network or options.approved:
        notes.append(NO_HOSTS_NOTE)
    return "\n".join([text, *filter(None, notes)])


def _with_secrets_masked(ctx: ToolContext) -> SandboxOptions:
    """Every secret file of the workspace masked, but those a person approved this
    command to see (a ToolError when they cannot all be known: nothing runs). Their
    content in git's objects stays out whatever a person approved (`git_view`)."""
    options = ctx.sandbox
    masked = secret_files.to_mask(ctx.workspace, options.secret_paths, options.secrets_visible)
    return dataclasses.replace(options, masked_files=masked)


def _judge(ctx: ToolContext, effect: Effect) -> str:
    """The handler's note; a refusal to apply is a note too, so the output is kept."""
    if ctx.effect_handler is None:
        return NO_HANDLER_NOTE
    try:
        return ctx.effect_handler(effect)
    except ToolError as exc:
        return f"note: nothing the command changed was applied: {exc}"


def format_result(result: processes.CommandResult, timeout: float) -> str:
    """`exit code: N` (or the timeout) on the first line, then the merged stdout and stderr."""
    if result.timed_out:
        head = f"timed out after {timeout:g} s; process group killed"
    else:
        head = f"exit code: {_describe_exit(result.exit_code)}"
    parts = [head, result.output.decode("utf-8", errors="replace")]
    if result.truncated:
        parts.append(
            f"[output truncated at {processes.OUTPUT_LIMIT // (1024 * 1024)} MB of "
            f"{result.total_bytes} bytes; redirect it to a file and read that with "
            "read_file or search_codebase]"
        )
    return "\n".join(part.rstrip("\n") for part in parts if part)


def _describe_exit(code: int | None) -> str:
    if code is None or code >= 0:
        return str(code)
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = f"signal {-code}"
    return f"{code} (killed by {name})"
