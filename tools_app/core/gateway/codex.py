"""Codex CLI: its `apply_patch` read, so the gateway can judge it as agentweb's tools.

Codex sends Claude Code's PreToolUse shape itself (`agentweb-hook codex` passes it on and
reads the answer back), its shell tool as `Bash` with `{"command"}`: only its patch tool
is its own to map. It sends an edit as `apply_patch` with `{"command": PATCH}`, PATCH
in its own format:

    *** Begin Patch
    *** Add File: path          (then every line prefixed with +)
    *** Update File: path       (optionally *** Move to: other; then @@ hunks of " ", -, + lines)
    *** Delete File: path
    *** End Patch

`read_patch` returns the files it touches, each with what the gateway needs: a new
file's content, or an update's single hunk as old and new text. Pure, no Django.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from tools_app.core.gateway.native import (
    NATIVE_PREFIX,
    Agent,
    Mapped,
    NativeTool,
    string_of,
    workspace_path,
)
from tools_app.core.tools.jsonsafe import storable_args

__all__ = ["AGENT", "FileChange", "PatchError", "read_patch"]

Action = Literal["add", "update", "delete"]
HEADERS: dict[str, Action] = {
    "*** Add File: ": "add",
    "*** Update File: ": "update",
    "*** Delete File: ": "delete",
}


class PatchError(ValueError):
    """The text is not a patch in Codex's format; the message says where."""


@dataclass
class FileChange:
    action: Action
    path: str
    moved_to: str = ""
    added: list[str] = field(default_factory=list)  # an added file's lines
    hunks: list[tuple[list[str], list[str]]] = field(default_factory=list)  # (old, new) lines

    @property
    def content(self) -> str:
        return "".join(f"{line}\n" for line in self.added)


def read_patch(text: str) -> list[FileChange]:
    lines = text.strip("\n").split("\n")
    if len(lines) < 2 or lines[0].strip() != "*** Begin Patch":
        raise PatchError("it does not start with `*** Begin Patch`")
    if lines[-1].strip() != "*** End Patch":
        raise PatchError("it does not end with `*** End Patch`")
    changes: list[FileChange] = []
    for number, line in enumerate(lines[1:-1], start=2):
        header = next((h for h in HEADERS if line.startswith(h)), None)
        if header is not None:
            changes.append(FileChange(HEADERS[header], line[len(header) :].strip()))
        elif not changes:
            raise PatchError(f"line {number} comes before any `*** Add/Update/Delete File:`")
        else:
            _body_line(changes[-1], line, number)
    if not changes:
        raise PatchError("it changes no file")
    return changes


def _body_line(change: FileChange, line: str, number: int) -> None:
    if change.action == "add":
        if not line.startswith("+"):
            raise PatchError(f"line {number}: an added file's lines start with +")
        change.added.append(line[1:])
    elif change.action == "delete":
        raise PatchError(f"line {number}: a deleted file has no lines")
    elif line.startswith("*** Move to: "):
        change.moved_to = line[len("*** Move to: ") :].strip()
    elif line.startswith("@@") or not change.hunks:
        change.hunks.append(([], []))
        if not line.startswith("@@"):
            _hunk_line(change, line, number)
    elif line != "*** End of File":
        _hunk_line(change, line, number)


def _hunk_line(change: FileChange, line: str, number: int) -> None:
    old, new = change.hunks[-1]
    kind, rest = line[:1], line[1:]
    if kind == " " or line == "":
        old.append(rest)
        new.append(rest)
    elif kind == "-":
        old.append(rest)
    elif kind == "+":
        new.append(rest)
    else:
        raise PatchError(f"line {number}: a hunk's lines start with a space, - or +")


# --- the patch as agentweb's tools -----------------------------------------------------


def _apply_patch(native: Mapping[str, Any], cwd: str) -> Mapped:
    """One added file is a `write_file`, one file's single hunk an `edit_file`; any other
    patch (several files, a deletion, a move) goes to a person, naming what it does."""
    text = str(string_of(native, "command"))
    as_is = Mapped(f"{NATIVE_PREFIX}apply_patch", storable_args(dict(native)), "unknown")
    try:
        changes = read_patch(text)
    except PatchError as exc:
        return replace(as_is, notes=(f"not read as a patch: {exc}",))
    if len(changes) == 1:
        change = changes[0]
        path = workspace_path(change.path, cwd)
        if change.action == "add":
            return Mapped("write_file", {"path": path, "content": change.content}, "core")
        if change.action == "update" and not change.moved_to and len(change.hunks) == 1:
            old, new = change.hunks[0]
            args = {"path": path, "old_string": "\n".join(old), "new_string": "\n".join(new)}
            return Mapped("edit_file", args, "core")
    moves = {c.path: f" (to {c.moved_to})" if c.moved_to else "" for c in changes}
    return replace(as_is, notes=tuple(f"{c.action}s {c.path}{moves[c.path]}" for c in changes))


AGENT = Agent("codex", {"apply_patch": NativeTool(f"{NATIVE_PREFIX}apply_patch", _apply_patch)})
