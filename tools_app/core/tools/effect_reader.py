"""Read an overlay's upper layer into an `Effect`: only the upper layer is walked.

What overlayfs leaves in the upper layer: copied-up or new files, new dirs, symlinks,
whiteouts (a char device 0/0) for deleted paths, and opaque dirs (xattr
`*.overlay.opaque`) that hide everything below them in the lower layer. The cost
follows the size of the change; only an opaque dir lists its lower counterpart.
Reading is iterative and bounded (entries, depth, path length, file and total size):
past a bound it stops, and the effect says which bound refuses it whole.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import posixpath
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from tools_app.core.tools.effect import Effect, EffectEntry

_HEX64 = re.compile("[0-9a-f]{64}")

OPAQUE_XATTRS = ("user.overlay.opaque", "trusted.overlay.opaque")
_CHUNK = 1024 * 1024
# Bounds on one effect: past any of them reading stops and the whole effect is refused,
# so a command cannot make the worker hash 100,000 files, walk 1,100 levels, or copy a
# sparse 100 GB file into the effects store.
MAX_ENTRIES = 20_000  # names read (upper layer and the lower names of opaque dirs)
MAX_DEPTH = 64  # directories below the workspace root
MAX_PATH_BYTES = 1024
MAX_FILE_BYTES = 100 * 1024 * 1024  # apparent size: a sparse file counts in full
MAX_EFFECT_BYTES = 512 * 1024 * 1024  # all files of the upper layer together
FILE_MODE, EXEC_MODE, DIR_MODE = 0o644, 0o755, 0o755


class _Bound(Exception):
    """A bound was crossed: the message says which, for the agent and a reviewer."""


@dataclass
class _Walk:
    root: Path
    upper: Path
    entries: list[EffectEntry] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)
    files: list[tuple[str, os.stat_result]] = field(default_factory=list)
    names: int = 0
    size: int = 0


def read_effect(workspace: Path, upper: Path) -> Effect:
    """Every change in `upper` against `workspace` (the lower layer), sorted by path.

    Without recursion; a crossed bound stops the walk and yields an empty effect whose
    `bound` says why. Files are hashed only once every bound is known to hold.
    """
    walk = _Walk(root=Path(os.path.realpath(workspace)), upper=upper)
    pending = [""]
    try:
        while pending:
            pending += _read_dir(walk, pending.pop())
    except _Bound as exc:
        return Effect(entries=(), refused=(), blobs=upper, bound=str(exc))
    for rel, st in walk.files:
        _hash_file(walk, rel, st)
    entries = tuple(sorted(walk.entries, key=lambda e: e.path))
    return Effect(entries=entries, refused=tuple(sorted(walk.refused)), blobs=upper)


def _read_dir(walk: _Walk, rel_dir: str) -> list[str]:
    """Read one directory of the upper layer; the subdirectories still to read."""
    upper_dir = walk.upper / rel_dir if rel_dir else walk.upper
    _ensure_access(upper_dir, stat.S_IRWXU)
    names = set()
    subdirs: list[str] = []
    with os.scandir(upper_dir) as listing:
        found = sorted(listing, key=lambda e: e.name)
    _count(walk, len(found))
    for entry in found:
        names.add(entry.name)
        rel = posixpath.join(rel_dir, entry.name) if rel_dir else entry.name
        if _read_entry(walk, rel):
            subdirs.append(rel)
    if rel_dir and _is_opaque(upper_dir):
        for name in _lower_names(walk, rel_dir):
            if name not in names:
                _deleted(walk, posixpath.join(rel_dir, name))
    return subdirs


def _count(walk: _Walk, names: int) -> None:
    walk.names += names
    if walk.names > MAX_ENTRIES:
        raise _Bound(f"the command changed more than {MAX_ENTRIES} paths")


def _check_path(rel: str) -> None:
    if rel.count("/") >= MAX_DEPTH:
        raise _Bound(f"{rel[:80]}… is deeper than {MAX_DEPTH} directories")
    if len(rel.encode("utf-8", "surrogateescape")) > MAX_PATH_BYTES:
        raise _Bound(f"{rel[:80]}… is longer than {MAX_PATH_BYTES} bytes")


def _read_entry(walk: _Walk, rel: str) -> bool:
    """Record one upper-layer name; True when it is a directory to read too."""
    _check_path(rel)
    path = walk.upper / rel
    st = os.lstat(path)
    mode = st.st_mode
    if stat.S_ISCHR(mode) and st.st_rdev == 0:
        _deleted(walk, rel)
    elif stat.S_ISDIR(mode):
        before = describe(walk.root, rel)
        if before != "dir":
            walk.entries.append(EffectEntry(rel, "dir", before, mode=DIR_MODE))
        return True
    elif stat.S_ISREG(mode):
        _read_file(walk, rel, st)
    elif stat.S_ISLNK(mode):
        _read_symlink(walk, rel)
    else:
        walk.refused.append((rel, f"a {_kind_name(mode)} cannot be applied"))
    return False


def _read_file(walk: _Walk, rel: str, st: os.stat_result) -> None:
    if st.st_nlink > 1:
        walk.refused.append((rel, "a hard link cannot be applied"))
        return
    if st.st_mode & (stat.S_ISUID | stat.S_ISGID):
        walk.refused.append((rel, "setuid/setgid bits cannot be applied"))
        return
    _check_size(walk, rel, st.st_size)
    walk.files.append((rel, st))


def _hash_file(walk: _Walk, rel: str, st: os.stat_result) -> None:
    _ensure_access(walk.upper / rel, stat.S_IRUSR)
    digest = file_sha256(walk.upper / rel)
    before = describe(walk.root, rel)
    old_mode = _lower_mode(walk.root, rel) if before and _HEX64.fullmatch(before) else None
    executable = bool(st.st_mode & 0o111)
    if before == digest and old_mode is not None and bool(old_mode & 0o111) == executable:
        return  # copied up, but neither content nor the executable bit changed
    mode = file_mode(executable=executable, before=old_mode)
    walk.entries.append(EffectEntry(rel, "file", before, mode=mode, sha256=digest, size=st.st_size))


def _check_size(walk: _Walk, rel: str, size: int) -> None:
    if size > MAX_FILE_BYTES:
        raise _Bound(f"{rel} is {size} bytes, over the limit of {MAX_FILE_BYTES} per file")
    walk.size += size
    if walk.size > MAX_EFFECT_BYTES:
        raise _Bound(f"the command wrote more than {MAX_EFFECT_BYTES} bytes of files")


def file_mode(*, executable: bool, before: int | None) -> int:
    """The mode a changed file gets: only the executable bit follows the command.

    A new file is 0644 or 0755; a changed one keeps who may read it (0600 stays
    private) but its owner may always read and write it and nobody else may write.
    """
    base = FILE_MODE if before is None else (before & 0o644) | 0o600
    return base | ((base & 0o444) >> 2) if executable else base


def _lower_mode(root: Path, rel: str) -> int | None:
    try:
        return stat.S_IMODE(os.lstat(root / rel).st_mode)
    except OSError:
        return None


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


def _lower_names(walk: _Walk, rel_dir: str) -> list[str]:
    """The names an opaque dir hides in the lower layer (they count towards the bound)."""
    if describe(walk.root, rel_dir) != "dir":
        return []
    names: list[str] = []
    with os.scandir(walk.root / rel_dir) as entries:
        for entry in entries:
            names.append(entry.name)
            _count(walk, 1)
    return sorted(names)


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
