"""Read-only discovery tools: search_codebase (ripgrep) and list_files."""

from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Annotated

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from tools_app.core.tools.base import MAX_COMMAND_CHARS, MAX_PATH_CHARS, ToolArgs, ToolContext
from tools_app.core.tools.errors import ToolError
from tools_app.core.tools.files import drop_default
from tools_app.core.tools.paths import protected_match, relative_to_workspace, resolve_path

SEARCH_TIMEOUT = 60.0
COUNT_LIMIT = 100_000
LIST_LIMIT = 5000
HIDDEN_NAMES = frozenset({".git", "node_modules"})


class SearchCodebaseArgs(ToolArgs):
    pattern: str = Field(
        min_length=1,
        max_length=MAX_COMMAND_CHARS,
        description="Regex pattern to search for (ripgrep syntax).",
    )
    path: str = Field(
        default=".",
        max_length=MAX_PATH_CHARS,
        description="Directory (or file) to search in (default: the workspace root).",
    )
    include: Annotated[str, Field(max_length=MAX_PATH_CHARS)] | SkipJsonSchema[None] = Field(
        default=None,
        description='Glob pattern to filter files (e.g., "*.ts").',
        json_schema_extra=drop_default,
    )
    max_results: int = Field(default=50, ge=1, description="Maximum results to return.")


class ListFilesArgs(ToolArgs):
    path: str = Field(
        max_length=MAX_PATH_CHARS,
        description="Directory path (relative to the workspace; '.' is the root).",
    )
    recursive: bool = Field(default=False, description="Include subdirectories.")
    pattern: Annotated[str, Field(max_length=MAX_PATH_CHARS)] | SkipJsonSchema[None] = Field(
        default=None,
        description='Glob pattern on file names to filter (e.g., "*.ts").',
        json_schema_extra=drop_default,
    )


# --- search_codebase -----------------------------------------------------------------


def rg_binary() -> str:
    """The ripgrep that the `ripgrep` wheel installs next to the interpreter, else PATH's."""
    bundled = Path(sys.executable).parent / "rg"
    if bundled.is_file():
        return str(bundled)
    found = shutil.which("rg")
    if found is None:
        raise ToolError("ripgrep (rg) is not installed; search_codebase cannot run here.")
    return found


def search_codebase(ctx: ToolContext, args: SearchCodebaseArgs) -> str:
    """Matching lines as `path:line:text`, relative to the workspace, at most max_results."""
    resolved = resolve_path(ctx.workspace, args.path)
    if not resolved.exists():
        raise ToolError(f"`path` {args.path} does not exist; use list_files to find a directory.")
    rel = relative_to_workspace(ctx.workspace, resolved)
    cmd = [rg_binary(), "--no-config", "--line-number", "--with-filename", "--no-heading"]
    cmd += ["--color=never", "--no-follow", "--hidden", "--max-columns=500", "--null"]
    cmd += ["--max-columns-preview", "--glob=!.git", "--glob=!node_modules"]
    secrets = ctx.sandbox.secret_paths
    cmd += [f"--glob=!{pattern}" for pattern in secrets]
    if args.include and "/" not in args.include and ":" not in args.include:
        # A file type, not a --glob: a --glob overrides .gitignore, a type only narrows.
        cmd += [f"--type-add=agentwebinclude:{args.include}", "--type=agentwebinclude"]
    cmd += [f"--regexp={args.pattern}", "--", rel]
    wanted = _ResultFilter(args.include, secrets)
    shown, more, stderr, code = _run_rg(cmd, Path(os.path.realpath(ctx.workspace)), args, wanted)
    if code == 2 and not shown:
        raise _rg_error(stderr)
    if not shown:
        return f"No matches for {args.pattern!r} in {rel}"
    if more:
        bound = "more than " if more >= COUNT_LIMIT else ""
        shown.append(
            f"[{bound}{more} more matches not shown; narrow the pattern or raise max_results]"
        )
    return "\n".join(shown)


class _ResultFilter:
    """Keeps a result line when its file matches `include` and is not a secret.

    rg already applies both; checking each line again with agentweb's own matcher means
    an explicit `path` naming a secret file, or an `include` spelled to match one, never
    shows its contents.
    """

    def __init__(self, include: str | None, secrets: tuple[str, ...]) -> None:
        self.include = (include,) if include else ()
        self.secrets = secrets

    def __call__(self, path: str) -> bool:
        if self.secrets and protected_match(self.secrets, path) is not None:
            return False
        return not self.include or protected_match(self.include, path) is not None


def _run_rg(
    cmd: list[str], cwd: Path, args: SearchCodebaseArgs, wanted: _ResultFilter
) -> tuple[list[str], int, str, int]:
    """First max_results lines, how many more there were (counted up to a bound), stderr."""
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    timer = threading.Timer(SEARCH_TIMEOUT, proc.kill)
    timer.start()
    assert proc.stdout is not None and proc.stderr is not None
    shown: list[str] = []
    more = 0
    try:
        for raw in proc.stdout:
            path, _, rest = raw.decode("utf-8", errors="replace").rstrip("\n").partition("\0")
            path = _strip_dot(path)
            if not wanted(path):
                continue
            if len(shown) < args.max_results:
                shown.append(f"{path}:{rest}")
            else:
                more += 1
                if more >= COUNT_LIMIT:
                    proc.kill()
                    break
        stderr = proc.stderr.read(64 * 1024).decode("utf-8", errors="replace")
    finally:
        timer.cancel()
        code = proc.wait()
    return shown, more, stderr, code


def _strip_dot(line: str) -> str:
    return line[2:] if line.startswith("./") else line


def _rg_error(stderr: str) -> ToolError:
    message = stderr.strip()
    if "regex parse error" in message or "error parsing" in message or "literal" in message:
        return ToolError(f"`pattern` is not a valid regular expression: {message}")
    return ToolError(f"search_codebase failed: {message or 'ripgrep exited with an error'}")


# --- list_files ----------------------------------------------------------------------


def list_files(ctx: ToolContext, args: ListFilesArgs) -> str:
    """A sorted listing (directories end in `/`) without node_modules/ and .git/."""
    resolved = resolve_path(ctx.workspace, args.path)
    if not resolved.exists():
        raise ToolError(f"Directory not found: {args.path}; list '.' to see the workspace root.")
    if not resolved.is_dir():
        raise ToolError(f"{args.path} is a file, not a directory; use read_file to read it.")
    root = Path(os.path.realpath(ctx.workspace))
    entries, capped = _walk(resolved, root, args)
    where = relative_to_workspace(ctx.workspace, resolved)
    if not entries:
        suffix = f" matching {args.pattern!r}" if args.pattern else ""
        return f"No files{suffix} in {where}"
    if capped:
        entries.append(
            f"[listing capped at {LIST_LIMIT} entries; list a subdirectory or pass a pattern]"
        )
    return "\n".join(entries)


def _walk(start: Path, root: Path, args: ListFilesArgs) -> tuple[list[str], bool]:
    """Sorted pre-order; symlinked directories are listed but never entered, so loops end."""
    found: list[str] = []
    visited: set[tuple[int, int]] = set()
    stack = [iter(_children(start, visited))]
    while stack:
        entry = next(stack[-1], None)
        if entry is None:
            stack.pop()
            continue
        is_dir = _is_dir(entry)
        if args.pattern is None or fnmatch.fnmatchcase(entry.name, args.pattern):
            rel = Path(entry.path).relative_to(root).as_posix()
            found.append(rel + "/" if is_dir else rel)
            if len(found) >= LIST_LIMIT:
                return found, True
        if args.recursive and is_dir and not entry.is_symlink():
            stack.append(iter(_children(Path(entry.path), visited)))
    return found, False


def _children(directory: Path, visited: set[tuple[int, int]]) -> list[os.DirEntry[str]]:
    """A directory's entries by name, minus node_modules/.git; nothing on a second visit."""
    try:
        info = directory.stat()
        if (info.st_dev, info.st_ino) in visited:
            return []
        visited.add((info.st_dev, info.st_ino))
        with os.scandir(directory) as scan:
            entries = [e for e in scan if e.name not in HIDDEN_NAMES]
    except OSError:
        return []
    return sorted(entries, key=lambda e: e.name)


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False
