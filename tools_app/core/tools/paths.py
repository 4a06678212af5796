"""Workspace paths, one module for the file tools, the policy and the sandbox.

Every tool path is resolved with `resolve_path` (symlinks followed, containment compared
by path components); `.git` is detected with `is_inside_git_dir` / `in_git_dir`; and
protected-path patterns are matched by `protected_match`, the one matcher. It follows
.gitignore, which admins already know: a pattern without a slash (`.env`, `*.pem`)
matches that name at any depth; one with a slash (`.github/**`, `/Dockerfile`,
`config/secrets.yml`) is anchored to the workspace root; `*` and `?` stay within one
segment and `**` spans any number of them. A pattern that matches a directory covers
everything below it, and `dir/**` covers `dir` itself too: protecting what is in a
directory must also protect the directory from being deleted or replaced as a whole.
Negation (`!`) is not supported.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from pathlib import Path

from tools_app.core.tools.errors import ToolError


class PathOutsideWorkspace(ToolError):
    """A path that resolves outside the session's workspace."""


_roots: ContextVar[dict[Path, Path] | None] = ContextVar("workspace_roots_kept", default=None)


@contextmanager
def workspace_roots_kept() -> Iterator[None]:
    """Within, a workspace's own real path is found once: judging a command resolves each
    of its words, and each resolution resolved the workspace again (two of every three
    `realpath` calls). The words themselves are resolved every time."""
    token = _roots.set({})
    try:
        yield
    finally:
        _roots.reset(token)


def workspace_root(workspace: Path) -> Path:
    """The workspace's real path (symlinks followed)."""
    kept = _roots.get()
    if kept is None:
        return Path(os.path.realpath(workspace))
    found = kept.get(workspace)
    if found is None:
        found = kept[workspace] = Path(os.path.realpath(workspace))
    return found


def resolve_path(workspace: Path, path: str, *, argument: str = "path") -> Path:
    """Resolve `path` inside `workspace`, following symlinks, or raise.

    Relative paths are relative to the workspace; absolute paths are accepted only
    inside it. Containment is compared by path components, so a sibling
    `/ws-evil` of `/ws` is outside.
    """
    if "\x00" in path:
        raise ToolError(f"`{argument}` contains a NUL byte; pass a plain file path.")
    if path.strip() == "":
        raise ToolError(f"`{argument}` is empty; pass a path relative to the workspace.")
    root = workspace_root(workspace)
    candidate = Path(path).expanduser() if path.startswith("~") else Path(path)
    if not candidate.is_absolute():
        candidate = root / candidate
    resolved = Path(os.path.realpath(candidate))
    if not is_within(resolved, root):
        raise PathOutsideWorkspace(
            f"`{argument}` {path!r} is outside the workspace; use a path inside it "
            "(relative paths are relative to the workspace root)."
        )
    return resolved


def is_within(path: Path, root: Path) -> bool:
    """True when `path` is `root` or below it, compared component by component."""
    return path.parts[: len(root.parts)] == root.parts


def relative_to_workspace(workspace: Path, resolved: Path) -> str:
    """The workspace-relative POSIX form of an already resolved path ('.' for the root)."""
    root = workspace_root(workspace)
    rel = resolved.relative_to(root).as_posix()
    return rel or "."


def is_inside_git_dir(workspace: Path, resolved: Path) -> bool:
    """True when a resolved path is a `.git` directory or anything below one."""
    root = workspace_root(workspace)
    return in_git_dir(resolved.relative_to(root).as_posix())


def in_git_dir(relative: str) -> bool:
    """True for `.git` and anything below any `.git` directory (workspace-relative)."""
    return ".git" in relative.split("/")


# --- Protected path patterns -----------------------------------------------------------


def protected_match(patterns: Iterable[str], relative: str) -> str | None:
    """The first protected-path pattern matching a workspace-relative path, or None.

    Blank patterns and `#` comments are skipped; the workspace root itself is never
    protected.
    """
    path = "/".join(p for p in relative.split("/") if p not in ("", "."))
    if not path:
        return None
    for pattern in patterns:
        if _usable(pattern) and compile_pattern(pattern).fullmatch(path):
            return pattern
    return None


def _usable(pattern: str) -> bool:
    stripped = pattern.strip()
    return bool(stripped) and not stripped.startswith("#") and stripped.strip("/") != ""


@lru_cache(maxsize=1024)
def compile_pattern(pattern: str) -> re.Pattern[str]:
    """The regex a workspace-relative path must fullmatch to be covered by `pattern`."""
    body = pattern.strip().rstrip("/")
    anchored = "/" in body
    segments = body.lstrip("/").split("/")
    while len(segments) > 1 and segments[-1] == "**":
        segments.pop()  # `dir/**` covers `dir` and below, exactly as `dir` does
    if segments == ["**"]:
        return re.compile(".+")
    parts: list[str] = []
    for n, segment in enumerate(segments):
        last = n == len(segments) - 1
        if segment == "**":
            parts.append("(?:.*/)?")
        else:
            parts.append(_segment_regex(segment) + ("" if last else "/"))
    prefix = "" if anchored else "(?:.*/)?"
    return re.compile(prefix + "".join(parts) + "(?:/.*)?", re.DOTALL)


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
        elif char == "[" and (end := segment.find("]", i + 2)) != -1:
            body = segment[i + 1 : end].replace("\\", "\\\\")
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
            i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def pattern_problem(pattern: str) -> str | None:
    """Why a protected-path pattern is not usable, or None."""
    if not pattern.strip():
        return "is empty"
    if pattern.startswith("!"):
        return "negation (!) is not supported; list only the paths to protect"
    try:
        compile_pattern(pattern)
    except re.error as exc:
        return f"is not a valid pattern: {exc.msg}"
    return None
