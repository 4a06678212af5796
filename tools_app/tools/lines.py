"""Changed lines counted by content, so that neither line endings nor size hide a change.

`max_diff_lines` and `require_approval_above` are only as good as the count they
compare against. A file whose statements are separated by `\\r` alone is one line to
`str.split("\\n")`, and a minified 100 KB line is one line to every diff; both would let
a large change through as a small one. Here `\\r\\n`, `\\r` and `\\n` each end a line, and
a line weighs one per started `LINE_BYTES` bytes of its UTF-8 content.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

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
