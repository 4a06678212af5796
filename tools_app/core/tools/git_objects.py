"""Git plumbing for the sandbox's object store: which blobs are secret, which objects are
reachable, and a store that holds the one set without the other.

`tools/git_view.py` decides when a store is built and where a command sees it. This
module only asks git (hardened, as `git_runner` runs it, pinned to one git directory)
and writes files:

* a blob is *secret* when, in any commit reachable from a ref, a reflog entry or the
  stash, or in the index, it sits at a path that the policy's `secret_paths` cover;
  `git log --raw -m --root` lists every blob each commit adds or changes against each of
  its parents, so a blob at a secret path shows up in the commit that put it there,
  deleted files and merges included;
* a *filtered store* holds every reachable object but the secret blobs, packed by
  `git pack-objects` (which never copies an object it was not given, and recomputes a
  delta whose base it was not given), plus, under each secret blob's name, a loose
  placeholder blob: git reads it where the content would be (`git show`, `git diff`,
  `git log -p`, `git archive`), so those commands keep working and print the
  placeholder instead of the secret. `git fsck` reports the hash mismatch.
"""

from __future__ import annotations

import os
import subprocess
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tools_app.core.tools.git_runner import HARDENING, git_env
from tools_app.core.tools.paths import protected_match

__all__ = [
    "PLACEHOLDER",
    "GitObjectsError",
    "Reachable",
    "local_object_count",
    "reachable",
    "secret_blobs",
    "write_store",
]

PLACEHOLDER = (
    b"[agentweb: withheld. This file matches the policy's secret_paths; commands never "
    b"read its content from git's objects.]\n"
)
BUILD_TIMEOUT = 600.0
_BLOB_MODES = ("100", "120")  # regular files and symlinks; not gitlinks (160000)


class GitObjectsError(RuntimeError):
    """Git could not answer (a corrupt or partial repository, a timeout)."""


@dataclass(frozen=True)
class Reachable:
    """Every object reachable from refs, reflogs and the index, and the path each was
    first seen at (None for commits, tags and root trees)."""

    objects: dict[str, str | None]


def run(git_dir: Path, args: Sequence[str], *, stdin: bytes | None = None) -> bytes:
    """One hardened git command on `git_dir` (no work tree: nothing of it is read)."""
    env = git_env({"GIT_DIR": str(git_dir), "GIT_NO_REPLACE_OBJECTS": "1"})
    try:
        done = subprocess.run(
            ["git", *HARDENING, *args],
            cwd=git_dir,
            env=env,
            input=stdin if stdin is not None else b"",
            capture_output=True,
            timeout=BUILD_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise GitObjectsError(f"git {args[0]} took over {BUILD_TIMEOUT:g} s") from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", errors="replace").strip()[:500]
        raise GitObjectsError(f"git {args[0]} failed: {message}")
    return done.stdout


def secret_blobs(git_dir: Path, patterns: Sequence[str], prefixes: Sequence[str]) -> set[str]:
    """The blobs found at a secret path anywhere in the history or the index.

    A path is matched as it is in the repository and with each of `prefixes` (where
    the repository's work tree lies in the workspace: `lib/sub/` for a submodule).
    """
    found: set[str] = set()
    history = run(git_dir, [*_HISTORY_RAW, "--all", "--reflog"])
    for oids, path in _raw_entries(history):
        if _is_secret(path, patterns, prefixes):
            found.update(oids)
    for oid, path in _index_entries(git_dir):
        if _is_secret(path, patterns, prefixes):
            found.add(oid)
    return found


# Every blob each commit adds, changes or deletes, against each parent (-m), a root
# commit's too; one path per entry (no rename pairs); NUL-separated.
_HISTORY_RAW = (
    "log", "-z", "--raw", "-m", "--root", "--no-renames", "--no-abbrev", "--format=",
    "--no-ext-diff", "--no-textconv", "--ignore-missing",
)  # fmt: skip


def _raw_entries(output: bytes) -> Iterable[tuple[list[str], str]]:
    tokens = output.split(b"\0")
    for i, token in enumerate(tokens[:-1]):
        meta = token.lstrip(b"\n")
        if not meta.startswith(b":"):
            continue
        fields = meta[1:].decode("ascii", errors="replace").split()
        if len(fields) < 5:
            continue
        modes, oids = fields[:2], fields[2:4]
        blobs = [oid for mode, oid in zip(modes, oids, strict=True) if mode.startswith(_BLOB_MODES)]
        yield [oid for oid in blobs if oid.strip("0")], _path(tokens[i + 1])


def _index_entries(git_dir: Path) -> Iterable[tuple[str, str]]:
    if not (git_dir / "index").is_file():
        return
    listing = run(git_dir, ["--work-tree", str(git_dir), "ls-files", "-s", "-z"])
    for record in listing.split(b"\0"):
        meta, _, path = record.partition(b"\t")
        fields = meta.decode("ascii", errors="replace").split()
        if len(fields) == 3 and fields[0].startswith(_BLOB_MODES):
            yield fields[1], _path(path)


def _path(raw: bytes) -> str:
    return raw.decode("utf-8", errors="surrogateescape")


def _is_secret(path: str, patterns: Sequence[str], prefixes: Sequence[str]) -> bool:
    return any(protected_match(patterns, prefix + path) for prefix in ("", *prefixes))


def reachable(git_dir: Path) -> Reachable:
    """Every object the refs (all of them, the stash's too), every reflog entry and the
    index reach: what a filtered store holds, the secret blobs aside."""
    listing = run(git_dir, ["rev-list", "--objects", "--all", "--reflog", "--indexed-objects"])
    objects: dict[str, str | None] = {}
    for line in listing.split(b"\n"):
        oid, _, path = line.partition(b" ")
        text = oid.decode("ascii", errors="replace")
        if len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text):
            objects[text] = _path(path) if path else None
    return Reachable(objects)


def local_object_count(git_dir: Path) -> int | None:
    """How many objects the repository's own store holds; None when it cannot be known
    to hold only objects (alternates, garbage files, a partial clone's promisor packs)."""
    objects = git_dir / "objects"
    if (objects / "info" / "alternates").exists() or _has_promisor(objects / "pack"):
        return None
    counts: dict[str, int] = {}
    for line in run(git_dir, ["count-objects", "-v"]).decode().splitlines():
        key, _, value = line.partition(":")
        if value.strip().isdigit():
            counts[key.strip()] = int(value)
    if counts.get("garbage", 1) or counts.get("size-garbage", 1):
        return None
    return counts.get("count", 0) + counts.get("in-pack", 0)


def _has_promisor(pack_dir: Path) -> bool:
    try:
        return any(name.endswith(".promisor") for name in os.listdir(pack_dir))
    except OSError:
        return False


def write_store(git_dir: Path, dest: Path, keep: Iterable[str], secrets: Iterable[str]) -> None:
    """An object directory at `dest`: the `keep` objects in one pack, and a placeholder
    loose blob under each of `secrets`' names."""
    (dest / "pack").mkdir(parents=True)
    wanted = "".join(f"{oid}\n" for oid in keep).encode()
    if wanted:
        run(git_dir, ["pack-objects", "-q", str(dest / "pack" / "pack")], stdin=wanted)
    body = zlib.compress(b"blob %d\0" % len(PLACEHOLDER) + PLACEHOLDER)
    for oid in secrets:
        (dest / oid[:2]).mkdir(exist_ok=True)
        (dest / oid[:2] / oid[2:]).write_bytes(body)
