"""Apply an `Effect` to the workspace, or hold its bytes until a person decides.

Applying checks every entry against its `before` first and changes nothing when one
no longer matches: a decision applies exactly the delta it was shown. Writing never
follows a symlink: each parent is opened as a real directory with O_NOFOLLOW from the
workspace root down, so a command that swapped `config/` for a link to somewhere else
cannot make its effect land there.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tools_app.core.tools import secret_files
from tools_app.core.tools.effect import Effect, EffectEntry
from tools_app.core.tools.effect_reader import (
    DIR_MODE,
    MAX_EFFECT_BYTES,
    describe,
    file_sha256,
    real_parents,
)
from tools_app.core.tools.errors import ToolError
from tools_app.core.tools.paths import in_git_dir
from tools_app.core.tools.trees import remove_tree, remove_tree_at

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
_CHUNK = 1024 * 1024
MANIFEST = "manifest.json"
_HEX64 = re.compile("[0-9a-f]{64}")


def apply_effect(workspace: Path, effect: Effect) -> list[str]:
    """Apply every entry of `effect` (all checked first); a short note per entry."""
    root = Path(os.path.realpath(workspace))
    new_dirs = {e.path for e in effect.entries if e.kind == "dir"}
    for entry in effect.entries:
        _check(root, entry, new_dirs)
    notes = []
    for entry in effect.entries:
        _apply_entry(root, entry, effect.blobs)
        notes.append(_note(entry))
    for entry in reversed(effect.entries):  # deepest first: a 0500 dir is filled first
        if entry.kind == "dir":
            _set_dir_mode(root, entry)
    secret_files.note_changed(root, [e.path for e in effect.entries])
    return notes


def _check(root: Path, entry: EffectEntry, new_dirs: set[str]) -> None:
    rel = entry.path
    parts = rel.split("/")
    if not rel or rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ToolError(f"{rel!r} is not a plain workspace-relative path; nothing was applied.")
    if in_git_dir(rel):
        raise ToolError(f"{rel}: changes inside .git are never applied; nothing was applied.")
    if _symlinked_parent(root, rel, new_dirs):
        raise ToolError(f"{rel}: a parent directory is a symlink; nothing was applied.")
    if describe(root, rel) != entry.before:
        raise ToolError(
            f"{rel} changed since the command ran; nothing was applied. "
            "Run the command again to see its effect on the current files."
        )


def _symlinked_parent(root: Path, rel: str, new_dirs: set[str]) -> bool:
    """True when a parent of `rel` is a symlink that this effect does not replace."""
    parts = rel.split("/")[:-1]
    for n in range(1, len(parts) + 1):
        prefix = "/".join(parts[:n])
        if prefix in new_dirs:
            return False  # replaced by a real directory before `rel` is written
        if os.path.islink(root / prefix):
            return True
    return False


def _apply_entry(root: Path, entry: EffectEntry, blobs: Path) -> None:
    parts = entry.path.split("/")
    with _open_dir(root, parts[:-1], create=True) as parent:
        name = parts[-1]
        if entry.kind == "delete":
            _remove(parent, name)
        elif entry.kind == "dir":
            _remove(parent, name)
            os.mkdir(name, 0o700, dir_fd=parent)
        elif entry.kind == "symlink":
            assert entry.target is not None
            _remove(parent, name)
            os.symlink(entry.target, name, dir_fd=parent)
        else:
            _write_file(parent, name, entry, blobs)


def _set_dir_mode(root: Path, entry: EffectEntry) -> None:
    with _open_dir(root, entry.path.split("/"), create=False) as fd:
        os.fchmod(fd, DIR_MODE)


def _file_mode(mode: int | None) -> int:
    """Never world-writable, never unreadable to its owner, whatever a manifest says."""
    return ((mode if mode is not None else 0o644) | 0o600) & 0o755


@contextlib.contextmanager
def _open_dir(root: Path, parts: list[str], *, create: bool) -> Iterator[int]:
    """A fd of root/parts, each component opened as a real directory (never a link)."""
    fd = os.open(root, _DIR_FLAGS)
    try:
        for part in parts:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                raise ToolError(f"{part!r} is not a real directory; nothing more applied.") from exc
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def _remove(parent: int, name: str) -> None:
    """Remove `name` (a whole tree for a directory) without following a symlink."""
    try:
        st = os.lstat(name, dir_fd=parent)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        remove_tree_at(parent, name)
    else:
        os.unlink(name, dir_fd=parent)


def _write_file(parent: int, name: str, entry: EffectEntry, blobs: Path) -> None:
    """Write the blob to a temp file beside `name`, then rename it over (atomic)."""
    mode = _file_mode(entry.mode)
    tmp = f".{name}.agentweb-{secrets.token_hex(6)}.tmp"
    with _open_blob(blobs, entry.path) as source:
        fd = os.open(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=parent
        )
        try:
            with os.fdopen(fd, "wb", closefd=False) as out:
                shutil.copyfileobj(source, out, _CHUNK)
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISDIR(os.lstat(name, dir_fd=parent).st_mode):
            remove_tree_at(parent, name)
    os.replace(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)


@contextlib.contextmanager
def _open_blob(blobs: Path, rel: str) -> Iterator[Any]:
    parts = rel.split("/")
    with _open_dir(blobs, parts[:-1], create=False) as parent:
        fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW, dir_fd=parent)
        with os.fdopen(fd, "rb") as handle:
            yield handle


def _note(entry: EffectEntry) -> str:
    if entry.kind == "delete":
        return f"deleted {entry.path}"
    if entry.kind == "dir":
        return f"created directory {entry.path}"
    if entry.kind == "symlink":
        return f"linked {entry.path} -> {entry.target}"
    verb = "created" if entry.before is None else "wrote"
    return f"{verb} {entry.path} ({entry.size} bytes)"


# --- Holding an effect until a decision --------------------------------------------------


def hold_effect(effect: Effect, store: Path) -> Effect:
    """Copy the effect's new file contents to `store/<digest>/` and point `blobs` there.

    A person may decide minutes later, after the upper layer is gone; the held copy is
    exactly what they are shown. The reader bounds every file and the total; this
    checks again, so the store never takes more than MAX_EFFECT_BYTES for one effect.
    """
    size = sum(e.size or 0 for e in effect.entries if e.kind == "file")
    if size > MAX_EFFECT_BYTES:
        raise ToolError(f"the effect holds {size} bytes, over {MAX_EFFECT_BYTES}; not kept.")
    digest = effect.digest()
    held = store / digest
    blobs = held / "blobs"
    blobs.mkdir(parents=True, exist_ok=True)
    for entry in effect.entries:
        if entry.kind != "file":
            continue
        target = blobs / entry.path
        target.parent.mkdir(parents=True, exist_ok=True)
        with _open_blob(effect.blobs, entry.path) as source, open(target, "wb") as out:
            shutil.copyfileobj(source, out, _CHUNK)
    result = Effect(entries=effect.entries, refused=effect.refused, blobs=blobs)
    (held / MANIFEST).write_text(json.dumps(result.to_dict(), sort_keys=True))
    return result


def load_held_effect(store: Path, digest: str) -> Effect:
    """The held effect `digest`, its manifest and every blob verified, or ToolError."""
    if not _HEX64.fullmatch(digest):
        raise ToolError(f"{digest!r} is not an effect digest; not applied.")
    held = store / digest
    try:
        data = json.loads((held / MANIFEST).read_text())
        effect = Effect.from_dict(data)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ToolError(f"the held effect {digest} cannot be read: {exc}") from exc
    effect = Effect(entries=effect.entries, refused=effect.refused, blobs=held / "blobs")
    if effect.digest() != digest:
        raise ToolError(f"the held effect {digest} does not match its manifest; not applied.")
    for entry in effect.entries:
        if entry.kind == "file" and _blob_sha256(effect.blobs, entry.path) != entry.sha256:
            raise ToolError(f"the held content of {entry.path} was altered; not applied.")
    return effect


def _blob_sha256(blobs: Path, rel: str) -> str | None:
    try:
        if not real_parents(blobs, rel):
            return None
        return file_sha256(blobs / rel)
    except OSError:
        return None


def drop_held_effect(store: Path, digest: str) -> None:
    """Forget a held effect (after it was applied or denied)."""
    if not _HEX64.fullmatch(digest):
        raise ToolError(f"{digest!r} is not an effect digest.")
    remove_tree(store / digest, ignore_errors=True)
