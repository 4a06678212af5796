"""File tools: read_file, write_file, edit_file, and the change plan behind previews."""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import os
import stat
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Annotated, Any

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from tools_app.core.tools import lines, secret_files
from tools_app.core.tools.base import MAX_PATH_CHARS, MAX_TEXT_CHARS, ToolArgs, ToolContext
from tools_app.core.tools.errors import ToolError
from tools_app.core.tools.paths import is_inside_git_dir, relative_to_workspace, resolve_path

MAX_LINES = 2000
MAX_OUTPUT_BYTES = 256 * 1024
BINARY_SNIFF_BYTES = 8192
NEW_FILE_MODE = 0o644


def drop_default(schema: dict[str, Any]) -> None:
    """Keep `"default": null` out of the JSON Schema a model reads for optional fields."""
    schema.pop("default", None)


class ReadFileArgs(ToolArgs):
    path: str = Field(
        max_length=MAX_PATH_CHARS,
        description="Absolute or relative file path (relative to the workspace).",
    )
    offset: Annotated[int, Field(ge=1)] | SkipJsonSchema[None] = Field(
        default=None,
        description="Start reading from this line (1-based). Default: 1.",
        json_schema_extra=drop_default,
    )
    limit: Annotated[int, Field(ge=1)] | SkipJsonSchema[None] = Field(
        default=None,
        description=f"Maximum number of lines to read (at most {MAX_LINES} per call).",
        json_schema_extra=drop_default,
    )


class WriteFileArgs(ToolArgs):
    path: str = Field(
        max_length=MAX_PATH_CHARS,
        description="File path to write (parent directories are created).",
    )
    content: str = Field(
        max_length=MAX_TEXT_CHARS,
        description=f"Full file content: UTF-8 text, at most {MAX_TEXT_CHARS:,} characters.",
    )


class EditFileArgs(ToolArgs):
    path: str = Field(max_length=MAX_PATH_CHARS, description="File path to edit.")
    old_string: str = Field(
        max_length=MAX_TEXT_CHARS,
        description="Exact string to find; it must occur exactly once in the file, "
        "including whitespace and indentation.",
    )
    new_string: str = Field(
        max_length=MAX_TEXT_CHARS,
        description="Replacement string; must differ from old_string.",
    )


# --- read_file -----------------------------------------------------------------------


def read_file(ctx: ToolContext, args: ReadFileArgs) -> str:
    """Numbered lines (`N | text`), paged so that one call stays readable for a model."""
    resolved = _existing_file(ctx, args.path, tool="read_file")
    start = args.offset or 1
    limit = min(args.limit or MAX_LINES, MAX_LINES)
    with resolved.open("rb") as handle:
        if _looks_binary(handle.read(BINARY_SNIFF_BYTES)):
            raise _binary_error(args.path, "read_file only reads text")
        handle.seek(0)
        shown, last, total = _numbered_window(handle, start, limit, args.path)
    if total == 0:
        return f"{args.path} is empty (0 lines)."
    if start > total:
        raise ToolError(
            f"offset {start} is past the end of {args.path}, which has {total} lines; "
            f"use an offset between 1 and {total}."
        )
    if last < total:
        shown.append(
            f"[showing lines {start}-{last} of {total}; "
            f"call read_file with offset={last + 1} to read on]"
        )
    return "\n".join(shown)


def _numbered_window(
    handle: IO[bytes], start: int, limit: int, shown_path: str
) -> tuple[list[str], int, int]:
    """Lines start..start+limit-1 formatted, within the byte budget; also the total count."""
    shown: list[str] = []
    budget = MAX_OUTPUT_BYTES
    last = start - 1
    total = 0
    for number, raw, cut in _lines(handle):
        total = number
        if number < start or len(shown) >= limit or budget <= 0:
            continue
        try:
            text = raw.decode("utf-8").removesuffix("\n").removesuffix("\r")
        except UnicodeDecodeError:
            raise _binary_error(shown_path, "read_file only reads text") from None
        line = f"{number} | {text}" + (f" … [line cut at {cut} bytes]" if cut else "")
        size = len(line.encode()) + 1
        if size > budget and shown:
            budget = 0
            continue
        shown.append(line[:budget])
        budget -= size
        last = number
    return shown, last, total


def _lines(handle: IO[bytes], max_line: int = MAX_OUTPUT_BYTES) -> Iterator[tuple[int, bytes, int]]:
    """Yield (number, first bytes of the line, cut length or 0) with bounded memory."""
    number = 0
    while raw := handle.readline(max_line):
        number += 1
        cut = 0
        if not raw.endswith(b"\n"):
            while rest := handle.readline(max_line):
                cut = cut or max_line
                if rest.endswith(b"\n"):
                    break
        yield number, raw, cut


def _looks_binary(head: bytes) -> bool:
    """A NUL byte, or bytes that are not UTF-8 (allowing a character cut at the end)."""
    if b"\x00" in head:
        return True
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as error:
        return error.start < len(head) - 3
    return False


def _binary_error(path: str, what: str) -> ToolError:
    return ToolError(f"{path} is a binary file; {what}.")


def _existing_file(ctx: ToolContext, path: str, *, tool: str) -> Path:
    resolved = resolve_path(ctx.workspace, path)
    if not resolved.exists():
        hint = (
            "use write_file to create it"
            if tool == "edit_file"
            else "use list_files or search_codebase to find the right path"
        )
        raise ToolError(f"File not found: {path}; {hint}.")
    if resolved.is_dir():
        raise ToolError(f"{path} is a directory; use list_files to see what it contains.")
    if not stat.S_ISREG(resolved.stat().st_mode):
        raise ToolError(f"{path} is not a regular file (a device, socket or pipe).")
    return resolved


# --- planning and writing ------------------------------------------------------------


@dataclass(frozen=True)
class FileChange:
    """What a write or edit would do, computed before it runs.

    The preview a reviewer approves and the bytes that get written come from the same
    plan; `before_sha256` lets the write refuse if the file changed in between.
    """

    path: str
    before: str | None
    after: str
    diff: str
    changed_lines: int
    abs_path: Path
    before_sha256: str | None


_PLAN_MODELS: dict[str, type[WriteFileArgs] | type[EditFileArgs]] = {
    "write_file": WriteFileArgs,
    "edit_file": EditFileArgs,
}


def plan_file_change(
    ctx: ToolContext, tool_name: str, args: WriteFileArgs | EditFileArgs | Mapping[str, Any]
) -> FileChange:
    """Validate a write_file/edit_file call and compute its result and diff, writing nothing."""
    model = _PLAN_MODELS.get(tool_name)
    if model is None:
        raise ToolError(f"{tool_name} does not change files; only write_file and edit_file do.")
    parsed = model.model_validate(args) if isinstance(args, Mapping) else args
    if not isinstance(parsed, model):
        raise ToolError(f"Arguments for {tool_name} must be {model.__name__}.")
    resolved = _writable_path(ctx, parsed.path)
    rel = relative_to_workspace(ctx.workspace, resolved)
    if isinstance(parsed, EditFileArgs):
        before_bytes, before = _current_text(ctx, parsed.path, for_edit=True)
        after = _edited(before or "", parsed)
    else:
        before_bytes, before = _current_text(ctx, parsed.path, for_edit=False)
        after = parsed.content
    if _unencodable(after):
        raise ToolError("The new content is not valid UTF-8 text; file tools write text only.")
    diff, _ = unified_diff(rel, before, after, existed=before_bytes is not None)
    # Counted by content: \r and \r\n end lines too, and a long line counts by its size.
    changed = lines.changed_lines_bytes(before_bytes, after.encode("utf-8"))
    digest = None if before_bytes is None else hashlib.sha256(before_bytes).hexdigest()
    return FileChange(rel, before, after, diff, changed, resolved, digest)


def _unencodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _writable_path(ctx: ToolContext, path: str) -> Path:
    resolved = resolve_path(ctx.workspace, path)
    if is_inside_git_dir(ctx.workspace, resolved):
        raise ToolError(
            f"{path} is inside a .git directory; file tools never write there. "
            "Use the git tools (git_commit, git_branch) instead."
        )
    if resolved.is_dir():
        raise ToolError(f"{path} is a directory; pass the path of a file inside it.")
    return resolved


def _current_text(
    ctx: ToolContext, path: str, *, for_edit: bool
) -> tuple[bytes | None, str | None]:
    """The file's bytes and text; (None, None) for a new file; text None when binary."""
    resolved = resolve_path(ctx.workspace, path)
    if not resolved.exists() and not for_edit:
        return None, None
    resolved = _existing_file(ctx, path, tool="edit_file" if for_edit else "write_file")
    data = resolved.read_bytes()
    try:
        text = None if b"\x00" in data else data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is None and for_edit:
        raise _binary_error(path, "edit_file only edits text; use write_file to replace it")
    return data, text


def _edited(content: str, args: EditFileArgs) -> str:
    """Apply the one replacement, after the checks that make it unambiguous."""
    if args.old_string == "":
        raise ToolError("`old_string` is empty; pass the exact text to replace.")
    if args.old_string == args.new_string:
        raise ToolError("`old_string` and `new_string` are the same; nothing would change.")
    first = content.find(args.old_string)
    if first == -1:
        raise ToolError(
            f"`old_string` was not found in {args.path}; read_file it and copy the exact "
            "text, including whitespace and indentation."
        )
    if content.find(args.old_string, first + 1) != -1:
        count = max(content.count(args.old_string), 2)
        raise ToolError(
            f"`old_string` occurs {count} times in {args.path}; include more surrounding "
            "lines so that it matches exactly once."
        )
    end = first + len(args.old_string)
    return content[:first] + args.new_string + content[end:]


def unified_diff(rel: str, before: str | None, after: str, *, existed: bool) -> tuple[str, int]:
    """A git-style unified diff and its changed lines (added + removed)."""
    if existed and before is None:
        lines = len(_split_lines(after))
        return f"Binary file a/{rel} replaced by text b/{rel} ({lines} lines)\n", lines
    old = _split_lines(before or "")
    new = _split_lines(after)
    fromfile = f"a/{rel}" if existed else "/dev/null"
    out: list[str] = []
    changed = 0
    for index, line in enumerate(difflib.unified_diff(old, new, fromfile, f"b/{rel}")):
        if index >= 2 and line[:1] in ("+", "-"):
            changed += 1
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out), changed


def _split_lines(text: str) -> list[str]:
    """Split on newlines only (not on \\r, form feeds or U+2028), keeping the ends."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    return [*lines, parts[-1]] if parts[-1] else lines


def _missing(ctx: ToolContext, path: str) -> FileChange:
    """A stand-in change for a file whose edit no longer applies: only its hash counts."""
    resolved = resolve_path(ctx.workspace, path)
    rel = relative_to_workspace(ctx.workspace, resolved)
    data = resolved.read_bytes() if resolved.is_file() else None
    digest = None if data is None else hashlib.sha256(data).hexdigest()
    return FileChange(rel, None, "", "", 0, resolved, digest)


def apply_file_change(change: FileChange) -> str:
    """Write a planned change atomically, unless the file changed since it was planned."""
    current = change.abs_path.read_bytes() if change.abs_path.is_file() else None
    digest = None if current is None else hashlib.sha256(current).hexdigest()
    if digest != change.before_sha256:
        raise ToolError(
            f"{change.path} changed since this call was planned; read it again and retry."
        )
    atomic_write(change.abs_path, change.after)
    return f"Wrote {len(change.after)} characters to {change.path}"


def atomic_write(path: Path, content: str) -> None:
    """Write via a temporary file in the same directory and rename it over the target.

    A reader never sees half a file, a failed write leaves the old one intact, and an
    existing file keeps its permission bits.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise ToolError(f"Cannot create {path.name}: a parent path is a file.") from None
    mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else NEW_FILE_MODE
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise


def preview_state(change: FileChange) -> dict[str, Any]:
    """What a write's preview describes: the file's content hash (None: no file yet)."""
    return {"files": {change.path: change.before_sha256}}


def _check_previewed(ctx: ToolContext, change: FileChange) -> None:
    """Refuse to write over a file that changed since the reviewer saw the diff."""
    state = ctx.preview_state
    if state is None or not isinstance(state.get("files"), Mapping):
        return
    files = state["files"]
    if change.path not in files or files[change.path] != change.before_sha256:
        raise ToolError(
            f"{change.path} changed since this call was previewed (another call wrote it), "
            "so the approved change was not applied. Read the file again and send the "
            "change anew; it will be judged (and shown) against what the file is now."
        )


def write_file(ctx: ToolContext, args: WriteFileArgs) -> str:
    change = plan_file_change(ctx, "write_file", args)
    _check_previewed(ctx, change)
    done = apply_file_change(change)
    secret_files.note_changed(ctx.workspace, [change.path])
    return done


def edit_file(ctx: ToolContext, args: EditFileArgs) -> str:
    try:
        change = plan_file_change(ctx, "edit_file", args)
    except ToolError:
        if ctx.preview_state is not None:  # the text it replaces is gone: changed since
            _check_previewed(ctx, _missing(ctx, args.path))
        raise
    _check_previewed(ctx, change)
    apply_file_change(change)
    secret_files.note_changed(ctx.workspace, [change.path])
    return f"Edited {change.path}: replaced 1 occurrence ({change.changed_lines} lines changed)"
