"""Read an overlay's upper layer into an `Effect`: only the upper layer is walked.

What overlayfs leaves in the upper layer: copied-up or new files, new dirs, symlinks,
whiteouts (a char device 0/0) for deleted paths, and opaque dirs (xattr
`*.overlay.opaque`) that hide everything below them in the lower layer. The cost
follows the size of the change; only an opaque dir lists its lower counterpart.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import posixpath
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tools_app.tools.effect import Effect, EffectEntry

OPAQUE_XATTRS = ("user.overlay.opaque", "trusted.overlay.opaque")
_CHUNK = 1024 * 1024


@dataclass
class _Walk:
    root: Path
    upper: Path
    entries: list[EffectEntry] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)


def read_effect(workspace: Path, upper: Path) -> Effect:
    """Every change in `upper` against `workspace` (the lower layer), sorted by path."""
    walk = _Walk(root=Path(os.path.realpath(workspace)), upper=upper)
    _read_dir(walk, "")
    entries = tuple(sorted(walk.entries, key=lambda e: e.path))
    return Effect(entries=entries, refused=tuple(sorted(walk.refused)), blobs=upper)


def _read_dir(walk: _Walk, rel_dir: str) -> None:
    upper_dir = walk.upper / rel_dir if rel_dir else walk.upper
    _ensure_access(upper_dir, stat.S_IRWXU)
    names = set()
    for entry in sorted(os.scandir(upper_dir), key=lambda e: e.name):
        names.add(entry.name)
        _read_entry(walk, posixpath.join(rel_dir, entry.name) if rel_dir else entry.name)
    if rel_dir and _is_opaque(upper_dir):
        for name in _lower_names(walk.root, rel_dir):
            if name not in names:
                _deleted(walk, posixpath.join(rel_dir, name))


def _read_entry(walk: _Walk, rel: str) -> None:
    path = walk.upper / rel
    st = os.lstat(path)
    mode = st.st_mode
    if stat.S_ISCHR(mode) and st.st_rdev == 0:
        _deleted(walk, rel)
    elif stat.S_ISDIR(mode):
        before = describe(walk.root, rel)
        if before != "dir":
            walk.entries.append(EffectEntry(rel, "dir", before, mode=stat.S_IMODE(mode) & 0o777))
        _read_dir(walk, rel)
    elif stat.S_ISREG(mode):
        _read_file(walk, rel, st)
    elif stat.S_ISLNK(mode):
        _read_symlink(walk, rel)
    else:
        walk.refused.append((rel, f"a {_kind_name(mode)} cannot be applied"))


def _read_file(walk: _Walk, rel: str, st: os.stat_result) -> None:
    if st.st_nlink > 1:
        walk.refused.append((rel, "a hard link cannot be applied"))
        return
    if st.st_mode & (stat.S_ISUID | stat.S_ISGID):
        walk.refused.append((rel, "setuid/setgid bits cannot be applied"))
        return
    mode = stat.S_IMODE(st.st_mode) & 0o777
    _ensure_access(walk.upper / rel, stat.S_IRUSR)
    digest = file_sha256(walk.upper / rel)
    before = describe(walk.root, rel)
    if before == digest and stat.S_IMODE(os.lstat(walk.root / rel).st_mode) & 0o777 == mode:
        return  # copied up, but neither content nor mode changed
    walk.entries.append(EffectEntry(rel, "file", before, mode=mode, sha256=digest, size=st.st_size))


def _read_symlink(walk: _Walk, rel: str) -> None:
    target = os.readlink(walk.upper / rel)
    if not symlink_stays_inside(rel, target):
        walk.refused.append((rel, f"a symlink to {target!r} leads outside the workspace"))
        return
    before = describe(walk.root, rel)
    if before != f"symlink:{target}":
        walk.entries.append(EffectEntry(rel, "symlink", before, target=target))


def symlink_stays_inside(rel: str, target: str) -> bool:
    """True when a link at `rel` to `target` stays inside the workspace.

    Relative targets only, and `..` only at the start: `sub/up -> ..` is fine, but
    `x -> sub/up/..` is refused, since `..` after a name that is itself a link climbs
    from wherever that link points, which the spelling does not show.
    """
    if not target or "\x00" in target or posixpath.isabs(target):
        return False
    parts = [p for p in target.split("/") if p not in ("", ".")]
    names = list(itertools.dropwhile(lambda p: p == "..", parts))
    if ".." in names:
        return False
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(rel), target))
    return joined != ".." and not joined.startswith("../")


def _deleted(walk: _Walk, rel: str) -> None:
    before = describe(walk.root, rel)
    if before is not None:
        walk.entries.append(EffectEntry(rel, "delete", before))


def describe(root: Path, rel: str) -> str | None:
    """`root/rel` as `EffectEntry.before` records it, never following any symlink.

    A path whose parent is not a real directory (missing, a file, a symlink) does not
    exist in the workspace: what lies behind a symlinked parent is not the workspace's.
    """
    if not real_parents(root, rel):
        return None
    path = root / rel
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISDIR(st.st_mode):
        return "dir"
    if stat.S_ISLNK(st.st_mode):
        return "symlink:" + os.readlink(path)
    if stat.S_ISREG(st.st_mode):
        return file_sha256(path)
    return f"special:{stat.S_IFMT(st.st_mode):o}"


def real_parents(root: Path, rel: str) -> bool:
    """True when every parent directory of `rel` below `root` is a real directory."""
    current = root
    for part in rel.split("/")[:-1]:
        current = current / part
        try:
            if not stat.S_ISDIR(os.lstat(current).st_mode):
                return False
        except OSError:
            return False
    return True


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _is_opaque(path: Path) -> bool:
    for name in OPAQUE_XATTRS:
        try:
            if os.getxattr(path, name, follow_symlinks=False) == b"y":
                return True
        except OSError:
            continue
    return False


def _lower_names(root: Path, rel_dir: str) -> Iterator[str]:
    if describe(root, rel_dir) == "dir":
        with os.scandir(root / rel_dir) as entries:
            yield from sorted(e.name for e in entries)


def _ensure_access(path: Path, bits: int) -> None:
    """Let the worker read what the sandboxed uid made unreadable (it owns the layer)."""
    mode = os.lstat(path).st_mode
    if stat.S_IMODE(mode) & bits != bits and os.geteuid() != 0:
        os.chmod(path, stat.S_IMODE(mode) | bits)


def _kind_name(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISBLK(mode) or stat.S_ISCHR(mode):
        return "device node"
    return "special file"
