"""Which files of a workspace match the policy's `secret_paths`: the sandbox masks them.

Walking the tree for every command would cost O(tree) per call, so the list is kept in
an index: one bounded walk when it is first needed (`.git` skipped, symlinks never
followed), then updated by agentweb's own writes, which are the only writes a workspace
gets (`write_file`/`edit_file`, applied command effects: `note_changed`; a branch switch
starts afresh: `forget`). An index older than `MAX_AGE_SECONDS` is walked again, which
bounds how long an edit made by hand outside agentweb can go unseen.

The index is keyed by the patterns (a changed policy gets a walk of its own) and kept
in a file per workspace under `AGENTWEB_VAR/secret-index/`, so that every worker
process of the host shares it; commands never see that directory.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import stat
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from tools_app.core.tools.effect_reader import real_parents
from tools_app.core.tools.errors import ToolError
from tools_app.core.tools.paths import protected_match

MAX_ENTRIES = 500_000  # directory entries one walk may visit
MAX_SECRET_FILES = 1_000  # files one command may have masked
MAX_AGE_SECONDS = 300.0
_KEPT_KEYS = 4

_memory: dict[str, dict[str, Any]] = {}


def secret_files(
    workspace: Path, patterns: Iterable[str], *, strict: bool = True
) -> tuple[str, ...]:
    """Every regular file of the workspace that a pattern covers, workspace-relative.

    Raises ToolError when they cannot all be known (the workspace is too large to walk,
    or holds more secret files than a command can have masked): failing closed. Not
    `strict`: those found so far.
    """
    usable = tuple(sorted({p.strip() for p in patterns if p.strip()}))
    if not usable:
        return ()
    root = Path(os.path.realpath(workspace))
    key = hashlib.sha256("\n".join(usable).encode()).hexdigest()[:16]
    with _index(root) as index:
        entry = index.get(key)
        if entry is None or _stale(root, entry):
            entry = _walk(root, usable)
            index[key] = entry
            _trim(index)
    if entry["problem"] and strict:
        raise ToolError(f"{entry['problem']}; commands cannot run with every secret file hidden.")
    return tuple(entry["files"])


def to_mask(
    workspace: Path, patterns: Iterable[str], visible: Iterable[str] = ()
) -> tuple[str, ...]:
    """The secret files a command must see as empty: all of them but `visible`, each
    checked to still be a regular file under real directories (a stale entry would make
    the sandbox create the file it masks)."""
    root = Path(os.path.realpath(workspace))
    shown = set(visible)
    return tuple(
        rel for rel in secret_files(root, patterns) if rel not in shown and _regular(root, rel)
    )


def covered(workspace: Path, patterns: Iterable[str], named: Iterable[str]) -> list[str]:
    """The secret files that the workspace-relative paths `named` are, or hold."""
    files = secret_files(workspace, patterns)
    wanted = {n.strip("/") for n in named}
    if "." in wanted or "" in wanted:
        return list(files)
    return [f for f in files if any(f == n or f.startswith(n + "/") for n in wanted)]


def note_changed(workspace: Path, paths: Iterable[str]) -> None:
    """Bring the index up to date after agentweb wrote, created or deleted `paths`."""
    root = Path(os.path.realpath(workspace))
    changed = [p.strip("/") for p in paths if p.strip("/")]
    if not changed:
        return
    gone = set(changed)
    with _index(root, create=False) as index:
        for entry in index.values():
            files = {f for f in entry["files"] if not _at_or_below(f, gone) or _regular(root, f)}
            files.update(rel for rel in changed if _secret_file(root, rel, entry["patterns"]))
            entry["files"] = sorted(files)
            if len(files) > MAX_SECRET_FILES:
                entry["problem"] = _too_many()


def forget(workspace: Path) -> None:
    """Drop the index (a branch switch changed files wholesale): the next use walks."""
    root = Path(os.path.realpath(workspace))
    with _index(root, create=False) as index:
        index.clear()


# --- the walk -----------------------------------------------------------------------------


def _walk(root: Path, patterns: tuple[str, ...]) -> dict[str, Any]:
    files, problem = _scan(root, "", patterns)
    return {
        "patterns": list(patterns),
        "files": files,
        "problem": problem,
        "walked_at": time.time(),
        "root": _identity(root),
    }


def _stale(root: Path, entry: dict[str, Any]) -> bool:
    """Too old, or walked on another directory that had this path (a new clone)."""
    too_old = time.time() - float(entry.get("walked_at", 0)) > MAX_AGE_SECONDS
    return too_old or entry.get("root") != _identity(root)


def _identity(root: Path) -> list[int]:
    try:
        st = os.stat(root)
    except OSError:
        return []
    return [st.st_dev, st.st_ino]


def _scan(root: Path, start: str, patterns: tuple[str, ...]) -> tuple[list[str], str]:
    """Iteratively list the matching regular files below `root/start` (never into .git)."""
    found: list[str] = []
    stack, seen = [start], 0
    while stack:
        rel_dir = stack.pop()
        try:
            entries = list(os.scandir(root / rel_dir if rel_dir else root))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if seen > MAX_ENTRIES:
                return found, f"the workspace has over {MAX_ENTRIES} files to look through"
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            if entry.is_dir(follow_symlinks=False):
                if entry.name != ".git":
                    stack.append(rel)
            elif entry.is_file(follow_symlinks=False) and protected_match(patterns, rel):
                found.append(rel)
                if len(found) > MAX_SECRET_FILES:
                    return found, _too_many()
    return sorted(found), ""


def _too_many() -> str:
    return f"the workspace has over {MAX_SECRET_FILES} files matching secret_paths"


def _at_or_below(rel: str, paths: set[str]) -> bool:
    """True when `rel` or one of its parent directories is in `paths`."""
    parts = rel.split("/")
    return any("/".join(parts[:n]) in paths for n in range(1, len(parts) + 1))


def _secret_file(root: Path, rel: str, patterns: list[str]) -> bool:
    """`rel` is now a regular file that a pattern covers. (What a write puts in a new
    directory is listed path by path: an effect names every file it creates.)"""
    if ".git" in rel.split("/") or not protected_match(patterns, rel):
        return False
    return _regular(root, rel)


def _regular(root: Path, rel: str) -> bool:
    try:
        return real_parents(root, rel) and stat.S_ISREG(os.lstat(root / rel).st_mode)
    except OSError:
        return False


# --- where the index is kept -----------------------------------------------------------


def index_dir() -> Path:
    """`AGENTWEB_VAR/secret-index`: outside every workspace and hidden from commands
    (the sandbox masks AGENTWEB_VAR), shared by the worker processes of a host."""
    source = Path(__file__).resolve().parents[3]
    return Path(os.environ.get("AGENTWEB_VAR") or source / "var") / "secret-index"


@contextlib.contextmanager
def _index(root: Path, *, create: bool = True) -> Iterator[dict[str, Any]]:
    """The workspace's index, locked against the other worker processes while it is
    read and changed; in this process only when the index directory cannot be used.
    Not `create`: a workspace without an index gets none (nothing to update)."""
    path = index_dir() / (hashlib.sha256(str(root).encode()).hexdigest()[:32] + ".json")
    if not create and not path.exists():
        yield _memory.setdefault(str(root), {})
        return
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        handle = open(path, "a+", encoding="utf-8")  # noqa: SIM115
    except OSError:
        yield _memory.setdefault(str(root), {})
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        index = _parsed(handle.read())
        before = json.dumps(index, sort_keys=True)
        yield index
        after = json.dumps(index, sort_keys=True)
        if after != before:
            handle.seek(0)
            handle.truncate()
            handle.write(after)


def _parsed(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text) if text else {}
    except ValueError:
        return {}  # a write cut short: walked again
    return data if isinstance(data, dict) else {}


def _trim(index: dict[str, Any]) -> None:
    """Keep the indexes of the few pattern sets most recently walked."""
    by_age = sorted(index, key=lambda k: float(index[k].get("walked_at", 0)), reverse=True)
    for key in by_age[_KEPT_KEYS:]:
        del index[key]
