"""Changed lines counted by content, so that neither line endings nor size hide a change.

`max_diff_lines` and `require_approval_above` are only as good as the count they
compare against. A file whose statements are separated by `\\r` alone is one line to
`str.split("\\n")`, and a minified 100 KB line is one line to every diff; both would let
a large change through as a small one. Here `\\r\\n`, `\\r` and `\\n` each end a line, and
a line weighs one per started `LINE_BYTES` bytes of its UTF-8 content.
"""

from __future__ import annotations

import difflib
import io
import re
from collections.abc import Sequence
from typing import BinaryIO

LINE_BYTES = 200
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")
_ENDING = re.compile(r"(?:\r\n|\r|\n)$")
# SequenceMatcher without its junk heuristic finds the smallest diff but takes seconds
# on a few hundred repetitive lines (13 s on 10k lines of code with scattered edits).
# Past this many line pairs the heuristic is used: lines that fill over 1% of the
# longer side are only matched next to other matches, which may count more changed
# lines than the minimum (on measured code, none more), never fewer than the edit.
_EXACT_PAIRS = 40_000


def split_lines(text: str) -> list[str]:
    """The lines of `text` with their endings kept, so that joining them gives `text`."""
    return _LINE.findall(text)


def line_weight(line: str) -> int:
    """How many lines `line` counts for: one per started LINE_BYTES bytes, at least one."""
    content = _ENDING.sub("", line)
    size = len(content) if content.isascii() else len(content.encode("utf-8"))
    return max(1, -(-size // LINE_BYTES))


def counted_lines(text: str | None) -> int:
    """The weight of a whole text: what creating or deleting it changes."""
    return _weigh(split_lines(text)) if text else 0


def changed_lines(before: str | None, after: str | None) -> int:
    """Added plus removed lines, as a unified diff would count them, weighted by size.

    `before` None is a new file and `after` None a deleted one.
    """
    if before == after:
        return 0
    old, new = split_lines(before or ""), split_lines(after or "")
    start = _common_prefix(old, new)
    end = _common_suffix(old, new, start)
    old_middle, new_middle = old[start : len(old) - end], new[start : len(new) - end]
    if not old_middle or not new_middle:
        return _weigh(old_middle) + _weigh(new_middle)
    return _diff_weight(old_middle, new_middle)


def _common_prefix(old: Sequence[str], new: Sequence[str]) -> int:
    limit = min(len(old), len(new))
    count = 0
    while count < limit and old[count] == new[count]:
        count += 1
    return count


def _common_suffix(old: Sequence[str], new: Sequence[str], prefix: int) -> int:
    limit = min(len(old), len(new)) - prefix
    count = 0
    while count < limit and old[-1 - count] == new[-1 - count]:
        count += 1
    return count


def _diff_weight(old: list[str], new: list[str]) -> int:
    exact = len(old) * len(new) <= _EXACT_PAIRS
    shorter, longer = sorted((old, new), key=len)
    matcher = difflib.SequenceMatcher(None, shorter, longer, autojunk=not exact)
    total = 0
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            total += _weigh(shorter[i1:i2]) + _weigh(longer[j1:j2])
    return total


def _weigh(lines: Sequence[str]) -> int:
    return sum(line_weight(line) for line in lines)


def is_binary(data: bytes) -> bool:
    """NUL bytes or bytes that are not UTF-8: not text a line count means anything for."""
    if b"\0" in data:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def changed_lines_bytes(before: bytes | None, after: bytes | None) -> int:
    """changed_lines for file contents; binary content counts one line per LINE_BYTES.

    A binary change counts by the size of the new content (of the old one when the
    file is deleted), at least one line.
    """
    if before == after:
        return 0
    if any(side is not None and is_binary(side) for side in (before, after)):
        size = len(after) if after is not None else len(before or b"")
        return max(1, -(-size // LINE_BYTES))
    return changed_lines(_text(before), _text(after))


def _text(data: bytes | None) -> str | None:
    return data.decode("utf-8") if data is not None else None


# --- Files too large to hold in memory ----------------------------------------------------

# Up to this size per side a change is counted exactly (both sides read, then diffed);
# past it, the files are streamed: their common start and end are skipped and what lies
# between is weighed line by line as it goes by, stopping once the count passes `limit`.
MAX_EXACT_BYTES = 2 * 1024 * 1024
_STREAM_CHUNK = 256 * 1024
_ENDINGS = re.compile(rb"\r\n|\r|\n")


def changed_lines_files(before: BinaryIO | None, after: BinaryIO | None, *, limit: int) -> int:
    """changed_lines_bytes for two open files, never reading a large one whole.

    None is a side that does not exist. Past MAX_EXACT_BYTES the count is an upper
    bound of the exact one (a change counts at least what it edits), and counting stops
    once it is over `limit`: the caller only needs to know that it is over.
    """
    old_size, new_size = _size(before), _size(after)
    if old_size <= MAX_EXACT_BYTES and new_size <= MAX_EXACT_BYTES:
        old = before.read() if before is not None else None
        new = after.read() if after is not None else None
        return changed_lines_bytes(old, new)
    reach = (limit + 1) * LINE_BYTES  # past this, one line is over the limit anyway
    prefix = _common_prefix_bytes(before, after, min(old_size, new_size))
    suffix = _common_suffix_bytes(before, after, old_size, new_size, prefix)
    if before is not None and after is not None:
        # Whole lines, as a diff shows them: back to the start of the first changed line,
        # on to the end of the last one (the common parts are the same on both sides).
        prefix = _line_start(before, prefix, reach)
        suffix -= _to_line_end(before, after, old_size - suffix, new_size - suffix, suffix, reach)
    total = _weigh_range(before, prefix, old_size - suffix, limit)
    return total + _weigh_range(after, prefix, new_size - suffix, limit - total)


def _size(handle: BinaryIO | None) -> int:
    if handle is None:
        return 0
    return handle.seek(0, io.SEEK_END) - handle.seek(0)


def _common_prefix_bytes(before: BinaryIO | None, after: BinaryIO | None, most: int) -> int:
    if before is None or after is None:
        return 0
    before.seek(0)
    after.seek(0)
    done = 0
    while done < most:
        step = min(_STREAM_CHUNK, most - done)
        old, new = before.read(step), after.read(step)
        if old != new or len(old) < step:
            return done + _first_difference(old, new)
        done += step
    return done


def _common_suffix_bytes(
    before: BinaryIO | None, after: BinaryIO | None, old_size: int, new_size: int, prefix: int
) -> int:
    if before is None or after is None:
        return 0
    most = min(old_size, new_size) - prefix
    done = 0
    while done < most:
        step = min(_STREAM_CHUNK, most - done)
        before.seek(old_size - done - step)
        after.seek(new_size - done - step)
        old, new = before.read(step), after.read(step)
        if old != new:
            return done + _first_difference(old[::-1], new[::-1])
        done += step
    return done


def _line_start(handle: BinaryIO, position: int, reach: int) -> int:
    """The start of the line holding `position` (looking back at most `reach` bytes)."""
    start = position
    while start > 0 and position - start < reach:
        step = min(_STREAM_CHUNK, start)
        handle.seek(start - step)
        data = handle.read(step)
        found = max(data.rfind(b"\n"), data.rfind(b"\r"))
        if found >= 0:
            return start - step + found + 1
        start -= step
    return start


def _to_line_end(
    before: BinaryIO, after: BinaryIO, old_end: int, new_end: int, common: int, reach: int
) -> int:
    """How many bytes of the common suffix finish the last changed line (0 when the
    changed part ends with a line ending on both sides)."""
    if _ends_line(before, old_end) and _ends_line(after, new_end):
        return 0
    done = 0
    before.seek(old_end)
    while done < common and done < reach:
        data = before.read(min(_STREAM_CHUNK, common - done))
        if not data:
            break
        found = _ENDINGS.search(data)
        if found:
            return done + found.end()
        done += len(data)
    return min(done, common)


def _ends_line(handle: BinaryIO, end: int) -> bool:
    if end == 0:
        return True
    handle.seek(end - 1)
    return handle.read(1) in (b"\n", b"\r")


def _first_difference(old: bytes, new: bytes) -> int:
    for index, (a, b) in enumerate(zip(old, new, strict=False)):
        if a != b:
            return index
    return min(len(old), len(new))


def _weigh_range(handle: BinaryIO | None, start: int, end: int, limit: int) -> int:
    """The weight of bytes [start, end) as lines (see line_weight), stopping past `limit`."""
    if handle is None or end <= start or limit < 0:
        return 0
    handle.seek(start)
    total, current, skip_lf, left = 0, 0, False, end - start
    while left > 0 and total <= limit:
        chunk = handle.read(min(_STREAM_CHUNK, left))
        if not chunk:
            break
        left -= len(chunk)
        if skip_lf and chunk.startswith(b"\n"):
            chunk = chunk[1:]  # the \n of a \r\n split between two chunks
        position = 0
        for ending in _ENDINGS.finditer(chunk):
            total += max(1, -(-(current + ending.start() - position) // LINE_BYTES))
            current, position = 0, ending.end()
            if total > limit:
                return total
        current += len(chunk) - position
        if total + current // LINE_BYTES > limit:
            return total + current // LINE_BYTES  # one long line: over already
        skip_lf = chunk.endswith(b"\r")
    return total + (max(1, -(-current // LINE_BYTES)) if current else 0)
