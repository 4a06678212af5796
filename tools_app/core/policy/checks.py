"""The built-in checks, one small class each, like Django's password validators.

Each has a `name` (the verdict's `rule`) and `evaluate(context) -> Verdict | None`;
None means "not my concern". engine.py applies them in the documented order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar
from urllib.parse import urlsplit

from tools_app.core.policy.context import CallContext
from tools_app.core.policy.dangerous import dangerous_reason
from tools_app.core.policy.patterns import compile_pattern, first_match
from tools_app.core.policy.risky_commands import (
    APPROVE,
    builtin_approval_reason,
    policy_approval_reason,
)
from tools_app.core.policy.targets import secret_targets, write_targets
from tools_app.core.policy.types import Verdict, VerdictKind
from tools_app.core.tools.catalogue import FILE_WRITE_TOOLS, is_skill_tool, is_upstream_tool
from tools_app.core.tools.errors import ToolError
from tools_app.core.tools.netguard import check_target, host_allowed, parse_target
from tools_app.core.tools.paths import in_git_dir, protected_match
from tools_app.core.tools.processes import DEFAULT_TIMEOUT


class Check:
    """A built-in check; subclasses set `name`, `verdict` and implement `reason`."""

    name: ClassVar[str] = ""
    verdict: ClassVar[VerdictKind] = "deny"

    def reason(self, context: CallContext) -> str | None:
        raise NotImplementedError

    def evaluate(self, context: CallContext) -> Verdict | None:
        reason = self.reason(context)
        return Verdict(self.verdict, reason, self.name) if reason else None


# --- 1. invariants ---------------------------------------------------------------------


class BadArguments(Check):
    name = "invariant:bad-arguments"

    def reason(self, context: CallContext) -> str | None:
        if context.tool == "run_command" and context.command is None:
            return "run_command needs `command` as a string"
        if context.tool in FILE_WRITE_TOOLS and not isinstance(context.args.get("path"), str):
            return f"{context.tool} needs `path` as a string"
        return None


class OutsideWorkspace(Check):
    name = "invariant:outside-workspace"

    def reason(self, context: CallContext) -> str | None:
        try:
            context.paths  # noqa: B018 - resolving is the check
        except ToolError as exc:
            return str(exc)
        except (TypeError, ValueError, OSError) as exc:
            return f"a path argument cannot be resolved ({exc}); pass a path inside the workspace"
        return None


class GitDirWrite(Check):
    name = "invariant:git-dir"

    def reason(self, context: CallContext) -> str | None:
        if context.tool not in FILE_WRITE_TOOLS:
            return None
        path = context.paths.get("path", ("",))[0]
        if in_git_dir(path):
            return f"{context.tool} may not write inside a .git directory ({path})"
        return None


# --- 3. built-in denies ----------------------------------------------------------------


class BlockedCommand(Check):
    name = "builtin:blocked-command"

    def reason(self, context: CallContext) -> str | None:
        analysis, command = context.analysis, context.command
        if analysis is None or command is None:
            return None
        hit = first_match(context.policy.blocked_commands, analysis)
        if hit:
            return f"`{hit[1]}` matches the blocked command `{hit[0]}`"
        for pattern in context.policy.blocked_commands:
            if compile_pattern(pattern) is None and pattern.strip() and pattern in command:
                return f"contains the blocked command `{pattern}`"
        return None


class DangerousCommand(Check):
    name = "builtin:dangerous-command"

    def reason(self, context: CallContext) -> str | None:
        if context.analysis is None:
            return None
        reason = dangerous_reason(context.analysis)
        return f"{reason}; this command is never run" if reason else None


class MaxDiffLines(Check):
    name = "builtin:max-diff-lines"

    def reason(self, context: CallContext) -> str | None:
        lines = context.call.changed_lines
        if context.tool not in FILE_WRITE_TOOLS or lines is None:
            return None
        total = context.counters.total_changed_lines + lines
        limit = context.policy.max_diff_lines
        if total > limit:
            return (
                f"this change of {lines} lines would bring the session to {total} changed "
                f"lines, over the limit of {limit} (max_diff_lines)"
            )
        return None


def web_target_problem(url: str, allow_hosts: Sequence[str] = ()) -> str | None:
    """Why a web_fetch target may not be fetched, or None: scheme, then the SSRF checks
    (every resolved address public, unless `web_allow_hosts` names the host)."""
    scheme = urlsplit(url).scheme.lower()
    if scheme not in {"http", "https"}:
        return f"web_fetch only fetches http:// and https:// URLs, not {scheme or 'this'}:"
    return check_target(url, allow_hosts)


class WebTarget(Check):
    name = "builtin:web-target"

    def reason(self, context: CallContext) -> str | None:
        if context.tool != "web_fetch":
            return None
        url = context.args.get("url")
        if not isinstance(url, str):
            return "web_fetch needs a URL"
        return web_target_problem(url, context.policy.web_allow_hosts)


class SkillHttpTarget(Check):
    """A skill's http tool reaches only a host the policy names (web_allow_hosts or
    web_write_hosts), and only past the same SSRF checks as web_fetch."""

    name = "builtin:skill-http-target"

    def reason(self, context: CallContext) -> str | None:
        executor = context.call.executor
        if not executor or executor.get("kind") != "http":
            return None
        url = str(executor.get("url", ""))
        policy = context.policy
        try:
            target = parse_target(url)
        except ValueError as exc:
            return f"{context.tool} calls {url}, which cannot be used: {exc}"
        if not host_allowed(target, (*policy.web_allow_hosts, *policy.web_write_hosts)):
            return (
                f"{context.tool} calls {target.host}, which the policy does not allow-list; "
                "an admin may add it to web_allow_hosts or web_write_hosts"
            )
        return check_target(url, policy.web_allow_hosts)


# --- 5. built-in approvals ---------------------------------------------------------------


class ApprovalCheck(Check):
    verdict = "require_approval"


class ProtectedPath(ApprovalCheck):
    name = "builtin:protected-path"

    def reason(self, context: CallContext) -> str | None:
        if context.tool not in FILE_WRITE_TOOLS:
            return None
        path = context.paths.get("path", ("",))[0]
        pattern = protected_match(context.policy.protected_paths, path)
        if pattern:
            return (
                f"{context.tool} changes the protected path {path} (pattern `{pattern}`){APPROVE}"
            )
        return None


class SecretRead(ApprovalCheck):
    name = "builtin:secret-path"

    def reason(self, context: CallContext) -> str | None:
        if context.tool != "read_file":
            return None
        path = context.paths.get("path", ("",))[0]
        pattern = protected_match(context.policy.secret_paths, path)
        if pattern:
            return f"read_file reads {path}, which may hold secrets (pattern `{pattern}`){APPROVE}"
        return None


class CommandNamesSecret(ApprovalCheck):
    """A command runs with every secret file masked (empty); one that names a secret
    path asks a person to let it see that file, instead of running blind."""

    name = "builtin:command-secret"

    def reason(self, context: CallContext) -> str | None:
        hit = command_secret(context)
        if hit is None:
            return None
        text, path, pattern = hit
        return (
            f"`{text}` names {path}, which may hold secrets (pattern `{pattern}`); commands "
            f"see secret files as empty unless a person lets this one see them{APPROVE}"
        )


def command_secret(context: CallContext) -> tuple[str, str, str] | None:
    """(command text, path, pattern) of the first secret path the command names."""
    if context.analysis is None:
        return None
    found = secret_targets(context.analysis, context.call.workspace, context.policy.secret_paths)
    return found[0] if found else None


class WebWrite(ApprovalCheck):
    name = "builtin:web-write"

    def reason(self, context: CallContext) -> str | None:
        if context.tool != "web_fetch":
            return None
        method = str(context.args.get("method", "GET")).upper()
        has_body = context.args.get("body") is not None
        if method in {"GET", "HEAD"} and not has_body:
            return None
        host = (urlsplit(str(context.args.get("url", ""))).hostname or "").lower()
        allowed = {h.lower().rstrip(".") for h in context.policy.web_write_hosts}
        if host.rstrip(".") in allowed:
            return None
        what = f"a {method} request" + (" with a body" if has_body else "")
        return f"web_fetch sends {what} to {host or 'this host'}, which can carry data out{APPROVE}"


class CommandWritesProtected(ApprovalCheck):
    name = "builtin:protected-path"

    def reason(self, context: CallContext) -> str | None:
        if context.analysis is None:
            return None
        protected = context.policy.protected_paths
        for text, path in write_targets(context.analysis, context.call.workspace):
            if in_git_dir(path):
                return f"`{text}` writes into .git ({path}){APPROVE}"
            pattern = protected_match(protected, path)
            if pattern:
                return (
                    f"`{text}` writes to the protected path {path} (pattern `{pattern}`){APPROVE}"
                )
        return None


class ApprovalCommand(ApprovalCheck):
    name = "builtin:approval-command"

    def reason(self, context: CallContext) -> str | None:
        if context.analysis is None:
            return None
        return builtin_approval_reason(context.analysis) or policy_approval_reason(
            context.policy.approval_commands, context.analysis
        )


class OpaqueCommand(ApprovalCheck):
    name = "builtin:opaque-command"

    def reason(self, context: CallContext) -> str | None:
        if context.analysis is None or not context.analysis.opaque:
            return None
        return f"the command {'; '.join(context.analysis.opaque)}{APPROVE}"


class LongCommand(ApprovalCheck):
    """A command may ask for up to an hour; past the policy's limit a person agrees first
    (a long run holds a worker slot and CPU the whole time)."""

    name = "builtin:command-timeout"

    def reason(self, context: CallContext) -> str | None:
        if context.tool != "run_command":
            return None
        timeout = context.args.get("timeout", DEFAULT_TIMEOUT)
        limit = context.policy.command_timeout_limit
        if isinstance(timeout, int | float) and timeout > limit:
            return (
                f"the command asks for a timeout of {timeout:g} s, over the policy's "
                f"{limit} s (command_timeout_limit){APPROVE}"
            )
        return None


class RequireApprovalAbove(ApprovalCheck):
    name = "builtin:require-approval-above"

    def reason(self, context: CallContext) -> str | None:
        if context.tool not in FILE_WRITE_TOOLS:
            return None
        lines = context.call.changed_lines
        if lines is None:
            return f"the lines this {context.tool} changes could not be counted{APPROVE}"
        since = context.counters.changed_since_approval + lines
        limit = context.policy.require_approval_above
        if since > limit:
            return (
                f"{since} lines changed since the last approval, including this change of "
                f"{lines}, is over {limit} (require_approval_above){APPROVE}"
            )
        return None


class CommitSize(ApprovalCheck):
    name = "builtin:require-approval-above"

    def reason(self, context: CallContext) -> str | None:
        if context.tool != "git_commit":
            return None
        lines = context.call.changed_lines
        limit = context.policy.require_approval_above
        if lines is None:
            return f"the size of this commit could not be computed{APPROVE}"
        if lines > limit:
            return (
                f"this commit changes {lines} lines, over {limit} (require_approval_above){APPROVE}"
            )
        return None


class PullRequestNeedsApproval(ApprovalCheck):
    name = "builtin:pull-request"

    def reason(self, context: CallContext) -> str | None:
        if context.tool == "create_pull_request":
            return f"a pull request changes remote state{APPROVE}"
        return None


class SkillToolNeedsApproval(ApprovalCheck):
    """A skill tool runs what its author defined: a person approves each call unless an
    admin's rule allows it by name (`release.changelog_entry`, `release.*`)."""

    name = "builtin:skill-tool"

    def reason(self, context: CallContext) -> str | None:
        if not is_skill_tool(context.tool):
            return None
        kind = (context.call.executor or {}).get("kind", "no")
        return f"skill tool: {context.tool} runs its skill's {kind} executor{APPROVE}"


class UpstreamToolNeedsApproval(ApprovalCheck):
    """A third-party MCP server's tool waits for a person unless its pinned definition
    says that it only reads (`readOnlyHint`, and neither `destructiveHint` nor
    `openWorldHint`) or a rule allows it by name (`mcp.git.*`). Annotations are the
    server's word about itself: they may let a call pass where no rule speaks, and are
    never read before an admin's rule."""

    name = "builtin:mcp-tool"
    HINTS: ClassVar[tuple[tuple[str, str], ...]] = (
        ("destructiveHint", "may destroy data"),
        ("openWorldHint", "reaches the world outside"),
    )

    def reason(self, context: CallContext) -> str | None:
        if not is_upstream_tool(context.tool):
            return None
        executor = context.call.executor or {}
        hints = executor.get("annotations") or {}
        said = [why for key, why in self.HINTS if hints.get(key) is True]
        if hints.get("readOnlyHint") is True and not said:
            return None
        if not said:
            return f"MCP tool {context.tool}: its server does not say it only reads{APPROVE}"
        return f"MCP tool {context.tool}: its server says it {' and '.join(said)}{APPROVE}"


INVARIANTS: tuple[Check, ...] = (BadArguments(), OutsideWorkspace(), GitDirWrite())
BUILTIN_DENIES: tuple[Check, ...] = (
    BlockedCommand(),
    DangerousCommand(),
    MaxDiffLines(),
    WebTarget(),
    SkillHttpTarget(),
)
BUILTIN_APPROVALS: tuple[Check, ...] = (
    ProtectedPath(),
    SecretRead(),
    WebWrite(),
    CommandWritesProtected(),
    CommandNamesSecret(),
    ApprovalCommand(),
    RequireApprovalAbove(),
    CommitSize(),
    PullRequestNeedsApproval(),
    OpaqueCommand(),
    LongCommand(),
    SkillToolNeedsApproval(),
    UpstreamToolNeedsApproval(),
)
