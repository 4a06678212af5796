"""Git tools. `commit_preview` computes what a git_commit would record, for policy and
for the reviewer, without touching the repository's real index."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

# The module, not its names: sandbox imports tools.base, which loads this package.
from tools_app import sandbox
from tools_app.tools.base import ToolError

GIT_TIMEOUT = 120.0
MAX_PREVIEW_DIFF = 5 * 1024 * 1024
# Repository config must never make a preview run code or hide changes.
HARDENING = (
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.fsmonitor=false",
    "-c", "diff.external=",
    "-c", "core.pager=cat",
    "-c", "color.ui=false",
    "-c", "diff.noprefix=false",
    "-c", "diff.mnemonicPrefix=false",
    "-c", "diff.relative=false",
    "-c", "core.quotePath=true",
)  # fmt: skip


@dataclass(frozen=True)
class CommitPreview:
    """The diff a commit would record, its stat, its changed lines and its files."""

    diff: str
    stat: str
    changed_lines: int
    files: list[str]


def git_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """A minimal environment: nothing GIT_* is inherited, no prompts, no global config."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "HOME": tempfile.gettempdir(),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_LITERAL_PATHSPECS": "1",
    }
    env.update(extra or {})
    return env


def run_git(workspace: Path, args: list[str], env: dict[str, str] | None = None) -> str:
    """Run one hardened git command in the workspace; a failure becomes a ToolError."""
    try:
        done = subprocess.run(
            ["git", *HARDENING, *args],
            cwd=os.path.realpath(workspace),
            env=env or git_env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=GIT_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ToolError(f"git {args[0]} took longer than {GIT_TIMEOUT:g} s.") from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", errors="replace").strip()
        raise ToolError(f"git {args[0]} failed: {message}")
    return done.stdout.decode("utf-8", errors="replace")


def commit_preview(workspace: Path, files: list[str] | None) -> CommitPreview:
    """What `git_commit` would record: the given files' changes, or every change.

    Untracked files count (a commit of everything includes them). The changes are
    staged into a copy of the index, so the real index is never touched.
    """
    paths = _repo_paths(workspace, files)
    index = Path(run_git(workspace, ["rev-parse", "--git-path", "index"]).strip())
    if not index.is_absolute():
        index = Path(os.path.realpath(workspace)) / index
    with tempfile.TemporaryDirectory(prefix="agentweb-index-") as scratch:
        temp_index = Path(scratch) / "index"
        if index.is_file():
            shutil.copyfile(index, temp_index)
        env = git_env({"GIT_INDEX_FILE": str(temp_index)})
        run_git(workspace, ["add", "-A", "--", *(paths or ["."])], env)
        base = _base_commit(workspace, env)
        diff_args = ["diff", "--cached", "--no-ext-diff", "--no-textconv", "--no-color", base]
        diff = run_git(workspace, [*diff_args, "--"], env)
        stat = run_git(workspace, [*diff_args, "--stat", "--"], env)
        numstat = run_git(workspace, [*diff_args, "--numstat", "-z", "--"], env)
    changed, changed_files = _parse_numstat(numstat)
    if len(diff) > MAX_PREVIEW_DIFF:
        diff = diff[:MAX_PREVIEW_DIFF] + "\n[diff truncated at 5 MB]\n"
    return CommitPreview(diff, stat, changed, changed_files)


def _repo_paths(workspace: Path, files: list[str] | None) -> list[str]:
    """Workspace-relative paths, each checked to be inside the workspace and not in .git."""
    paths: list[str] = []
    for name in files or []:
        resolved = sandbox.resolve_path(workspace, name, argument="files")
        if sandbox.is_inside_git_dir(workspace, resolved):
            raise ToolError(f"{name} is inside .git; commit files of the working tree.")
        paths.append(sandbox.relative_to_workspace(workspace, resolved))
    return paths


def _base_commit(workspace: Path, env: dict[str, str]) -> str:
    """HEAD, or the empty tree in a repository without commits."""
    try:
        return run_git(workspace, ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"]).strip()
    except ToolError:
        empty = run_git(workspace, ["hash-object", "-t", "tree", os.devnull], env)
        return empty.strip()


def _parse_numstat(numstat: str) -> tuple[int, list[str]]:
    """Sum added + removed lines; a binary file counts as one changed line."""
    changed = 0
    files: list[str] = []
    records = numstat.split("\0")
    i = 0
    while i < len(records) and records[i]:
        added, removed, path = records[i].split("\t", 2)
        if path == "":  # a rename: the old and new paths follow as separate records
            path = records[i + 2]
            i += 2
        changed += 1 if added == "-" else int(added) + int(removed)
        files.append(path)
        i += 1
    return changed, files
