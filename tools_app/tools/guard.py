"""Protected paths after a command that no person approved.

bubblewrap binds only paths that exist read-only, so a command could still create a
protected file that was not there (`.github/workflows/x.yml` in a repository without
one), or swap a protected file's parent directory for another. Around every such
command the protected files are recorded, then what the command created is removed
and what it changed is put back, and the result says so. This also protects hosts
where bubblewrap is missing.
"""

from __future__ import annotations

import os
import re
import shutil
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tools_app.tools import sandbox

WALK_LIMIT = 200_000
# Above this, protected files are only watched by size and mtime, not kept to restore.
KEEP_LIMIT = 16 * 1024 * 1024
SKIP_DIRS = frozenset({".git", "node_modules"})


@dataclass
class ProtectedState:
    """Protected files found in a workspace: their bytes (None when too big to keep)."""

    files: dict[str, bytes | None] = field(default_factory=dict)
    stamps: dict[str, tuple[int, int]] = field(default_factory=dict)


def record(workspace: Path, patterns: Sequence[str]) -> ProtectedState:
    state = ProtectedState()
    if not patterns:
        return state
    kept = 0
    for rel, path in _protected_files(workspace, patterns):
        stat = path.lstat()
        state.stamps[rel] = (stat.st_size, stat.st_mtime_ns)
        keep = kept + stat.st_size <= KEEP_LIMIT
        state.files[rel] = path.read_bytes() if keep and path.is_file() else None
        kept += stat.st_size if keep else 0
    return state


def undo_unapproved_changes(
    workspace: Path, patterns: Sequence[str], before: ProtectedState
) -> list[str]:
    """Remove protected files the command created, restore those it changed; say which."""
    if not patterns:
        return []
    notes: list[str] = []
    found, complete = _walk(workspace, patterns)
    after = dict(found)
    for rel, path in after.items():
        if rel not in before.stamps:
            _remove(path)
            notes.append(f"removed {rel}, a protected path the command created")
        elif _changed(path, rel, before):
            notes.append(_restore(workspace, rel, before))
    for rel in before.stamps.keys() - after.keys():
        notes.append(_restore(workspace, rel, before))
    if not complete:
        notes.append(f"only the first {WALK_LIMIT} entries of the workspace were checked")
    return notes


def _protected_files(workspace: Path, patterns: Sequence[str]) -> list[tuple[str, Path]]:
    return _walk(workspace, patterns)[0]


def _walk(workspace: Path, patterns: Sequence[str]) -> tuple[list[tuple[str, Path]], bool]:
    """(relative path, path) of every file or link under a protected pattern, and whether
    the whole workspace was walked.

    Plain strings and one name match per entry: this runs twice around every command.
    """
    names, paths = sandbox.protected_matchers(tuple(patterns))
    root = os.path.realpath(workspace)
    found: list[tuple[str, Path]] = []
    # (directory, its path relative to the root, whether a protected pattern covers it)
    queue: deque[tuple[str, str, bool]] = deque([(root, "", False)])
    seen = 0
    while queue and seen < WALK_LIMIT:
        directory, prefix, covered = queue.popleft()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            rel = prefix + entry.name
            hit = covered or _matches(names, paths, entry.name, rel)
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in SKIP_DIRS:
                    queue.append((entry.path, rel + "/", hit))
            elif hit:
                found.append((rel, Path(entry.path)))
    return found, not queue


def _matches(
    names: re.Pattern[str] | None, paths: re.Pattern[str] | None, name: str, rel: str
) -> bool:
    return bool((names and names.fullmatch(name)) or (paths and paths.match(rel)))


def _changed(path: Path, rel: str, before: ProtectedState) -> bool:
    stat = path.lstat()
    if (stat.st_size, stat.st_mtime_ns) != before.stamps[rel]:
        return True
    kept = before.files.get(rel)
    return kept is not None and path.is_file() and path.read_bytes() != kept


def _restore(workspace: Path, rel: str, before: ProtectedState) -> str:
    kept = before.files.get(rel)
    if kept is None:
        return f"{rel} (protected) was changed and is too large to restore; check it"
    target = Path(os.path.realpath(workspace)) / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove(target)
    target.write_bytes(kept)
    return f"restored {rel}, a protected path the command changed"


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
