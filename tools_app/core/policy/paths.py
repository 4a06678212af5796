"""Workspace paths as the policy sees them: a tool's path and a command's write target.

Protected-path matching itself lives in `tools_app.core.tools.paths` (one matcher for the
file tools, the policy and the sandbox); the policy imports it from there.
"""

from __future__ import annotations

import posixpath
from pathlib import Path

from tools_app.core.tools.errors import ToolError
from tools_app.core.tools.paths import (
    is_within,
    relative_to_workspace,
    resolve_path,
    workspace_root,
)


def workspace_relative(workspace: Path, path: str, *, argument: str = "path") -> str:
    """A tool's path as the workspace-relative POSIX path rules match (raises if outside)."""
    return relative_to_workspace(workspace, resolve_path(workspace, path, argument=argument))


def command_target(workspace: Path, cwd: str, target: str) -> str | None:
    """Where a command's write target lands, relative to the workspace; None if outside.

    `cwd` is the workspace-relative directory the command runs in (after `cd`).
    Symlinks are followed like the sandbox does; a path that cannot be resolved
    is judged by its spelling.
    """
    if not target or target.startswith("&") or "\x00" in target:
        return None
    joined = target if target.startswith(("/", "~")) else posixpath.join(cwd, target)
    try:
        return workspace_relative(workspace, joined, argument="target")
    except ToolError:
        pass
    root = workspace_root(workspace)
    lexical = Path(posixpath.normpath(str(root / joined)))
    if not target.startswith(("/", "~")) and is_within(lexical, root):
        return relative_to_workspace(workspace, lexical)
    return None
