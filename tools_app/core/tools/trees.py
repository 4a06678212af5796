"""Walk and remove directory trees of any depth without recursion or one fd per level.

A command can leave a tree 1,100 directories deep in its upper layer (a loop of
`mkdir d; cd d`). Python 3.11's `shutil.rmtree` and `os.walk` recurse, so such a tree
crashes them with RecursionError; keeping a file descriptor per level would run out of
descriptors instead. Here one directory is open at a time: going down opens a child
(never through a symlink), going back up opens `..` and checks that it is the very
directory that was left, so a tree moved meanwhile is never removed in the wrong place.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


def remove_tree(path: Path, *, ignore_errors: bool = False) -> None:
    """Remove `path` (a file, a symlink or a whole tree) without following symlinks."""
    try:
        parent = os.open(path.parent, _DIR_FLAGS)
    except OSError:
        if ignore_errors:
            return
        raise
    try:
        remove_tree_at(parent, path.name)
    except OSError:
        if not ignore_errors:
            raise
    finally:
        os.close(parent)


def remove_tree_at(parent: int, name: str) -> None:
    """Remove `name` inside the directory `parent` (a fd), a whole tree for a directory.

    Directories made unreadable (mode 0000, as overlayfs leaves `work/work`) are given
    their owner's rights back first.
    """
    try:
        st = os.lstat(name, dir_fd=parent)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(name, dir_fd=parent)
        return
    fd = _open_child(parent, name)
    try:
        _empty(fd)
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=parent)


@dataclass
class _Level:
    """One directory on the way down: how to get back, and the subdirectories left."""

    identity: tuple[int, int]
    name: str = ""
    subdirs: list[str] = field(default_factory=list)


def _empty(top: int) -> None:
    """Delete everything inside the directory `top` (the fd stays that directory's)."""
    fd = os.dup(top)
    levels = [_Level(_identity(fd), subdirs=_clear_files(fd))]
    try:
        while levels:
            level = levels[-1]
            if level.subdirs:
                name = level.subdirs.pop()
                child = _open_child(fd, name)
                os.close(fd)
                fd = child
                levels.append(_Level(_identity(fd), name, _clear_files(fd)))
                continue
            levels.pop()
            if levels:
                fd = _up(fd, levels[-1].identity)
                os.rmdir(level.name, dir_fd=fd)
    finally:
        os.close(fd)


def _clear_files(fd: int) -> list[str]:
    """Unlink every non-directory in `fd`; the names of its subdirectories."""
    subdirs: list[str] = []
    for entry in _entries(fd):
        if entry.is_dir(follow_symlinks=False):
            subdirs.append(entry.name)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.name, dir_fd=fd)
    return subdirs


def _entries(fd: int) -> list[os.DirEntry[str]]:
    with os.scandir(fd) as listing:
        return list(listing)


def _open_child(parent: int, name: str) -> int:
    """Open `name` in `parent` as a real directory, restoring its owner's rights if needed."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent)
    except PermissionError:
        mode = os.lstat(name, dir_fd=parent).st_mode
        if not stat.S_ISDIR(mode):
            raise
        os.chmod(name, stat.S_IMODE(mode) | stat.S_IRWXU, dir_fd=parent)
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
    _ensure_owner_rights(fd)
    return fd


def _ensure_owner_rights(fd: int) -> None:
    mode = stat.S_IMODE(os.fstat(fd).st_mode)
    if mode & stat.S_IRWXU != stat.S_IRWXU:
        os.fchmod(fd, mode | stat.S_IRWXU)


def _up(fd: int, expected: tuple[int, int]) -> int:
    """The parent of `fd` (closed), which must be the directory the walk came from."""
    parent = os.open("..", _DIR_FLAGS, dir_fd=fd)
    if _identity(parent) != expected:
        os.close(parent)
        raise OSError("a directory was moved while its tree was being removed")
    os.close(fd)
    return parent


def _identity(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


def walk_files(root: Path, *, limit: int) -> Iterator[str]:
    """Every non-directory below `root` (symlinks to directories included), relative to
    it, depth first without recursion; stops after `limit` names (the caller counts).

    An unreadable directory raises OSError: a caller deciding what a removal takes
    with it must not mistake "could not look" for "nothing there".
    """
    pending = [""]
    produced = 0
    while pending:
        rel = pending.pop()
        with os.scandir(root / rel if rel else root) as listing:
            entries = list(listing)
        for entry in entries:
            child = f"{rel}/{entry.name}" if rel else entry.name
            if entry.is_dir(follow_symlinks=False):
                pending.append(child)
                continue
            yield child
            produced += 1
            if produced >= limit:
                return
