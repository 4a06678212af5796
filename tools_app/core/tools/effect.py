"""What a command changed in its copy-on-write view of the workspace: its *effect*.

A command never writes the workspace itself. It runs on an overlay whose upper layer
collects every change; once the command and all its processes are gone, the upper
layer is read into an `Effect`: one `EffectEntry` per changed path. The engine judges
the effect like a write (`.git` never, protected paths wait for a person, changed
lines count) and applies exactly the entries it lets through with `apply_effect`.

This module defines the data; `tools/overlay.py` produces it and applies it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

EntryKind = Literal["file", "symlink", "dir", "delete"]


@dataclass(frozen=True)
class EffectEntry:
    """One changed path, as it is after the command.

    `kind` is what the path became: a regular `file` (with `sha256` of its bytes and
    its permission bits in `mode`: 0644 or 0755, 0600/0700 when it was private
    before, since only the executable bit follows the command), a `symlink` (to
    `target`, which stays inside the workspace), a new `dir` (0755), or `delete` (the
    path is gone). `before` describes the path before the command: None when it did
    not exist, `"dir"`, `"symlink:<target>"`, or the sha256 of a regular file.
    Applying refuses an entry whose path no longer matches `before`, so a decision
    applies exactly the delta it was shown.
    """

    path: str
    kind: EntryKind
    before: str | None
    mode: int | None = None
    sha256: str | None = None
    size: int | None = None
    target: str | None = None


@dataclass(frozen=True)
class Effect:
    """Every change a command made, and what it tried that can never be applied.

    `blobs` is the directory holding the new contents of `file` entries, each at its
    workspace-relative path (the overlay's upper layer, or a held copy of it).
    `refused` lists (path, why) for what cannot be expressed safely: device nodes,
    fifos and sockets, setuid/setgid bits, hard links, symlinks leading outside.
    `bound` says which bound the change crossed (too many entries, too deep, too
    large); reading stopped there, so `entries` is empty and nothing may apply.
    """

    entries: tuple[EffectEntry, ...]
    refused: tuple[tuple[str, str], ...]
    blobs: Path
    bound: str = ""

    def digest(self) -> str:
        """SHA-256 of the entries and refusals: what an approval of this effect binds to."""
        data: dict[str, Any] = {
            "entries": [asdict(e) for e in self.entries],
            "refused": self.refused,
        }
        if self.bound:
            data["bound"] = self.bound
        canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()

    def only(self, paths: set[str]) -> Effect:
        """The same effect restricted to `paths` (refusals dropped: they never apply)."""
        kept = tuple(e for e in self.entries if e.path in paths)
        return Effect(entries=kept, refused=(), blobs=self.blobs)

    def to_dict(self) -> dict[str, Any]:
        return {
            "entries": [asdict(e) for e in self.entries],
            "refused": [list(item) for item in self.refused],
            "blobs": str(self.blobs),
            "bound": self.bound,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Effect:
        entries = tuple(EffectEntry(**item) for item in data["entries"])
        refused = tuple((str(path), str(why)) for path, why in data["refused"])
        bound = str(data.get("bound", ""))
        return cls(entries=entries, refused=refused, blobs=Path(data["blobs"]), bound=bound)
