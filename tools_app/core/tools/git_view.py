"""What a sandboxed command sees of git's object store: never a secret file's content.

A tracked `.env` is masked in the work tree, but its content also sits in
`.git/objects`, loose or packed, in every commit that held it, deleted since or not, in
the stash and in unreachable objects a preview or a reset left behind. Redacting a
command's output cannot keep it in: `git show HEAD:.env | rev`, `base64`, `od -c` or a
few lines of Python reading a pack return it in a form no redaction knows. So the
boundary is the store the command sees (design (a) of issue 30), not its output:

* A repository whose store holds exactly the objects its refs, reflogs and index reach,
  none of them a blob ever found at a secret path, is shown as it is (*clean*; nothing
  mounted, nothing copied).
* Any other repository is shown a *filtered store*, built outside the sandbox by
  `tools/git_objects.py`: every reachable object but the secret blobs, packed, with a
  placeholder blob under each secret blob's name, so `git status`, `git log`,
  `git diff` and `git show` keep working and print the placeholder where the secret
  was. Unreachable objects are never in it (`git fsck --lost-found` finds nothing).
  It is mounted over `.git/objects` (`tools/overlay.py`) as the lower layer of an
  overlay of its own, so git may still write objects inside one command; nothing of the
  real store is reachable underneath (the mount is locked in the sandbox's namespace).
* If git cannot build it (a corrupt or partial repository, a timeout), the command sees
  an empty store: git fails there, the secret stays in.

The same holds for each submodule's git directory under `.git/modules`, and for a
`.git` file pointing inside the workspace. A store is built once per state of the
repository's refs, reflogs and index (and, for a clean verdict, of its object
directories: a preview can write a loose blob without moving a ref), kept under
`AGENTWEB_VAR/git-views/`, and shared by the worker processes of a host; a command holds
its store's generation (a shared lock) while it runs, so a rebuild never removes a
store under a running command. What this does not cover: bare repositories and other
repositories nested in the work tree (their own `.git/objects`), and the hash of a
secret blob, which trees and the index must keep (a short, guessable secret can be
found from it).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import secrets
import shutil
import stat
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools_app.core.tools import git_objects
from tools_app.core.tools.effect_reader import real_parents
from tools_app.core.tools.paths import is_within

__all__ = ["ObjectView", "object_views", "views_dir"]

log = logging.getLogger(__name__)

MAX_MODULES = 200  # submodule git dirs looked at per workspace
_STATE_FILES = ("HEAD", "packed-refs", "index", "shallow")
_STATE_DIRS = ("refs", "logs", "worktrees")
_TRY_EXCLUSIVE = fcntl.LOCK_EX | fcntl.LOCK_NB
RACY_NS = 100_000_000  # a clean verdict on a store written this recently is not kept


@dataclass(frozen=True)
class ObjectView:
    """A filtered store (`store`) to be shown at the workspace-relative object
    directory `objects` (`.git/objects`, `.git/modules/lib/objects`)."""

    objects: str
    store: Path


@contextlib.contextmanager
def object_views(workspace: Path, patterns: Sequence[str]) -> Iterator[tuple[ObjectView, ...]]:
    """The filtered stores a command on `workspace` must see, held until it ends.

    None when the policy names no secret paths, or the workspace has no git directory.
    """
    usable = tuple(sorted({p.strip() for p in patterns if p.strip()}))
    root = Path(os.path.realpath(workspace))
    with contextlib.ExitStack() as held:
        views: list[ObjectView] = []
        for git_dir, prefixes in _git_dirs(root) if usable else []:
            store = held.enter_context(_store_for(root, git_dir, prefixes, usable))
            if store is not None:
                views.append(ObjectView(str((git_dir / "objects").relative_to(root)), store))
        yield tuple(views)


# --- which git directories ------------------------------------------------------------------


def _git_dirs(root: Path) -> list[tuple[Path, tuple[str, ...]]]:
    """The workspace's git directory and its submodules', each with where its work tree
    lies in the workspace (a prefix for matching secret paths)."""
    main = _main_git_dir(root)
    if main is None:
        return []
    found: list[tuple[Path, tuple[str, ...]]] = [(main, ("",))]
    stack = [main / "modules"]
    while stack and len(found) <= MAX_MODULES:
        current = stack.pop()
        if not _real_dir(root, current):
            continue
        for entry in sorted(os.scandir(current), key=lambda e: e.name):
            path = Path(entry.path)
            if _real_dir(root, path / "objects"):  # a submodule's git dir
                found.append((path, _work_tree_prefixes(root, path)))
                stack.append(path / "modules")
            elif entry.is_dir(follow_symlinks=False):  # a part of a submodule's name
                stack.append(path)
    return [(d, p) for d, p in found if _real_dir(root, d / "objects")]


def _main_git_dir(root: Path) -> Path | None:
    """`.git`, or the directory a `.git` file names when it lies in the workspace (one
    outside is not mounted in the sandbox at all)."""
    dot_git = root / ".git"
    if _real_dir(root, dot_git):
        return dot_git
    try:
        if not stat.S_ISREG(os.lstat(dot_git).st_mode):
            return None
        first = dot_git.read_text(errors="replace").splitlines()[0]
    except (OSError, IndexError):
        return None
    if not first.startswith("gitdir:"):
        return None
    target = Path(os.path.realpath(root / first[len("gitdir:") :].strip()))
    return target if is_within(target, root) and target != root else None


def _work_tree_prefixes(root: Path, git_dir: Path) -> tuple[str, ...]:
    """Where a submodule's files are in the workspace (its `core.worktree`), as a path
    prefix; paths are also matched as they are in the submodule ("")."""
    try:
        config = (git_dir / "config").read_text(errors="replace")
    except OSError:
        return ("",)
    for line in config.splitlines():
        key, _, value = line.strip().partition("=")
        if key.strip().lower() == "worktree" and value.strip():
            tree = Path(os.path.realpath(git_dir / value.strip()))
            if is_within(tree, root) and tree != root:
                return ("", tree.relative_to(root).as_posix() + "/")
    return ("",)


def _real_dir(root: Path, path: Path) -> bool:
    """A directory reached through real directories only (no symlink on the way)."""
    try:
        rel = path.relative_to(root).as_posix()
        return real_parents(root, rel) and stat.S_ISDIR(os.lstat(path).st_mode)
    except (OSError, ValueError):
        return False


# --- the cache ------------------------------------------------------------------------------


def views_dir() -> Path:
    """`AGENTWEB_VAR/git-views`: outside every workspace, hidden from commands."""
    source = Path(__file__).resolve().parents[3]
    return Path(os.environ.get("AGENTWEB_VAR") or source / "var") / "git-views"


@contextlib.contextmanager
def _store_for(
    root: Path, git_dir: Path, prefixes: tuple[str, ...], patterns: tuple[str, ...]
) -> Iterator[Path | None]:
    """The current store of one git directory (None: clean, shown as it is), built when
    its state changed, and held (a shared lock) until the command ends."""
    key = hashlib.sha256(f"{git_dir}\n{patterns}".encode()).hexdigest()[:32]
    home = views_dir() / key
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    with _locked(home / "lock", fcntl.LOCK_EX):
        state = _state(home)
        refs = _refs_state(git_dir)
        if not _current(home, state, refs, git_dir):
            state = _build(home, git_dir, prefixes, patterns, refs)
            _sweep(home, keep=state.get("generation"))
            _sweep_orphans(home)
        generation = state.get("generation")
        if not generation:
            yield None
            return
        hold = _locked(home / f"{generation}.lock", fcntl.LOCK_SH)
        hold.__enter__()
    try:
        yield home / generation
    finally:
        hold.__exit__(None, None, None)


def _current(home: Path, state: dict[str, Any], refs: str, git_dir: Path) -> bool:
    if state.get("refs") != refs:
        return False
    if state.get("kind") == "clean":
        return state.get("objects") == _objects_state(git_dir)
    return bool(state.get("generation")) and (home / state["generation"]).is_dir()


def _build(
    home: Path,
    git_dir: Path,
    prefixes: tuple[str, ...],
    patterns: tuple[str, ...],
    refs: str,
) -> dict[str, Any]:
    """Judge the repository and, unless it is clean, write a new generation."""
    started = time.time_ns()
    objects = _objects_state(git_dir)  # before git looks: a later write makes it stale
    state: dict[str, Any] = {"git_dir": str(git_dir), "refs": refs, "objects": objects}
    generation = f"gen-{secrets.token_hex(8)}"
    scratch = home / f"tmp-{generation}"
    try:
        found = git_objects.secret_blobs(git_dir, patterns, prefixes)
        listing = git_objects.reachable(git_dir).objects
        if not found and git_objects.local_object_count(git_dir) == len(listing):
            state["kind"] = "clean"
            if _newest_write(git_dir) > started - RACY_NS:
                state["objects"] = "racy"  # judged again next time, as git's racy index
        else:
            keep = [oid for oid in listing if oid not in found]
            git_objects.write_store(git_dir, scratch, keep, sorted(found))
            state.update(kind="filtered", secret_blobs=len(found))
    except (git_objects.GitObjectsError, OSError) as exc:
        log.warning("git view of %s: %s; commands see no objects", git_dir, exc)
        shutil.rmtree(scratch, ignore_errors=True)
        (scratch / "pack").mkdir(parents=True)
        state["kind"] = "empty"
    if state["kind"] != "clean":
        scratch.rename(home / generation)
        state["generation"] = generation
    (home / "state.json").write_text(json.dumps(state))
    return state


def _state(home: Path) -> dict[str, Any]:
    try:
        data = json.loads((home / "state.json").read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _sweep(home: Path, *, keep: str | None) -> None:
    """Remove the generations no command holds any more (and any build cut short)."""
    for entry in os.scandir(home):
        if entry.name.startswith("tmp-"):
            shutil.rmtree(entry.path, ignore_errors=True)
        if not entry.name.startswith("gen-") or not entry.is_dir() or entry.name == keep:
            continue
        lock = home / f"{entry.name}.lock"
        with contextlib.suppress(BlockingIOError), _locked(lock, _TRY_EXCLUSIVE):
            shutil.rmtree(entry.path, ignore_errors=True)
            os.unlink(lock)


def _sweep_orphans(current: Path) -> None:
    """Remove the stores of git directories that are gone (a finished session's
    workspace), unless a command holds one; run when a store is built, which is rare."""
    for home in current.parent.iterdir():
        git_dir = _state(home).get("git_dir")
        if home == current or not git_dir or os.path.isdir(git_dir):
            continue
        with contextlib.suppress(BlockingIOError), _locked(home / "lock", _TRY_EXCLUSIVE):
            _sweep(home, keep=None)
            if not any(name.startswith("gen-") for name in os.listdir(home)):
                shutil.rmtree(home, ignore_errors=True)


@contextlib.contextmanager
def _locked(path: Path, mode: int) -> Iterator[None]:
    with open(path, "a+b") as handle:
        fcntl.flock(handle, mode)
        yield


# --- what changes a view ------------------------------------------------------------------


def _refs_state(git_dir: Path) -> str:
    """A digest of what decides reachability: HEAD, refs, packed refs, reflogs, the
    index (staged blobs), worktrees, a shallow file."""
    parts = [_stamp(git_dir / name) for name in _STATE_FILES]
    for name in _STATE_DIRS:
        parts += _tree_stamps(git_dir / name)
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _objects_state(git_dir: Path) -> str:
    """A digest of the object directories: any object written changes one of them
    (unless within the same clock tick as the digest: see RACY_NS)."""
    parts = [_stamp(path) for path in _object_dirs(git_dir)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _object_dirs(git_dir: Path) -> list[Path]:
    objects = git_dir / "objects"
    names = ["", "pack", "info", "info/alternates", *(f"{i:02x}" for i in range(256))]
    return [objects / name for name in names]


def _newest_write(git_dir: Path) -> int:
    """The latest change time (ns) of an object directory: a file system's timestamps
    are a clock tick coarse, so a write in the tick a digest was taken may not show."""
    newest = 0
    for path in _object_dirs(git_dir):
        with contextlib.suppress(OSError):
            st = os.lstat(path)
            newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
    return newest


def _tree_stamps(top: Path) -> list[str]:
    out: list[str] = []
    stack = [top]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                stack.append(Path(entry.path))
            out.append(_stamp(Path(entry.path)))
    return sorted(out)


def _stamp(path: Path) -> str:
    try:
        st = os.lstat(path)
    except OSError:
        return f"{path}:-"
    return f"{path}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"
