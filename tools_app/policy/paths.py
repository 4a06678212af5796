"""Protected-path patterns, matched the way .gitignore matches.

Admins already know gitignore: a pattern without a slash (`.env`, `*.pem`,
`requirements*.txt`) matches that name at any depth; a pattern with a slash
(`.github/**`, `/Dockerfile`, `config/secrets.yml`) is anchored to the workspace root;
`*` and `?` stay within one path segment and `**` spans any number of them. A pattern
that matches a directory protects everything below it. Negation (`!`) is not supported.
"""

from __future__ import annotations

import os
import posixpath
import re
from functools import lru_cache
from pathlib import Path

from tools_app.tools.base import ToolError
from tools_app.tools.sandbox import is_within, relative_to_workspace, resolve_path


def _segment_regex(segment: str) -> str:
    """One path segment of a glob as a regex: `*` and `?` never cross `/`."""
    out: list[str] = []
    i = 0
    while i < len(segment):
        char = segment[i]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = segment.find("]", i + 2)
            if end == -1:
                out.append(re.escape(char))
            else:
                body = segment[i + 1 : end].replace("\\", "\\\\")
                out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
                i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


@lru_cache(maxsize=1024)
def _compile(pattern: str) -> re.Pattern[str]:
    body = pattern.strip().rstrip("/")
    anchored = "/" in body
    segments = body.lstrip("/").split("/")
    parts: list[str] = []
    for n, segment in enumerate(segments):
        last = n == len(segments) - 1
        if segment == "**":
            parts.append(".*" if last else "(?:.*/)?")
        else:
            parts.append(_segment_regex(segment) + ("" if last else "/"))
    prefix = "" if anchored else "(?:.*/)?"
    return re.compile(prefix + "".join(parts) + "(?:/.*)?")


def protected_match(patterns: tuple[str, ...], relative: str) -> str | None:
    """The first protected-path pattern matching a workspace-relative path, or None."""
    path = relative.lstrip("/")
    if path in {"", "."}:
        return None
    for pattern in patterns:
        if pattern.strip() and _compile(pattern).fullmatch(path):
            return pattern
    return None


def pattern_problem(pattern: str) -> str | None:
    """Why a protected-path pattern is not usable, or None."""
    if not pattern.strip():
        return "is empty"
    if pattern.startswith("!"):
        return "negation (!) is not supported; list only the paths to protect"
    try:
        _compile(pattern)
    except re.error as exc:
        return f"is not a valid pattern: {exc.msg}"
    return None


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
    root = Path(os.path.realpath(workspace))
    joined = target if target.startswith(("/", "~")) else posixpath.join(cwd, target)
    try:
        return workspace_relative(workspace, joined, argument="target")
    except ToolError:
        pass
    lexical = Path(posixpath.normpath(str(root / joined)))
    if not target.startswith(("/", "~")) and is_within(lexical, root):
        return relative_to_workspace(workspace, lexical)
    return None


def in_git_dir(relative: str) -> bool:
    """True for `.git` and anything below any `.git` directory."""
    return ".git" in relative.split("/")
