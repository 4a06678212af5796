"""Codex CLI's `apply_patch` envelope, read so the gateway can judge it as agentweb's tools.

Codex sends an edit as `apply_patch` with `{"command": PATCH}`, PATCH in its own format:

    *** Begin Patch
    *** Add File: path          (then every line prefixed with +)
    *** Update File: path       (optionally *** Move to: other; then @@ hunks of " ", -, + lines)
    *** Delete File: path
    *** End Patch

`read_patch` returns the files it touches, each with what the gateway needs: a new
file's content, or an update's single hunk as old and new text. Pure, no Django.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = ["FileChange", "PatchError", "read_patch"]

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
