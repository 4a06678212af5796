"""Known secret values taken out of what an agent reads: defence in depth.

The sandbox masks secret files and the git tools leave them out, but a secret can still
reach a result another way (a tracked `.env` that `git show` prints, a value copied into
an ordinary file by hand). Every result is therefore cleaned of the values the
workspace's secret files hold: the VALUE of `KEY=VALUE` (and `key: value`) lines, a
short file's whole content (a token file), and long unbroken lines (a key's base64).
Values shorter than `MIN_VALUE_CHARS` are ignored, so that `DEBUG=1` never turns every
"1" of a result into `[redacted]`.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path

REDACTED = "[redacted]"
MIN_VALUE_CHARS = 6
MAX_FILE_BYTES = 64 * 1024
MAX_TOTAL_BYTES = 1024 * 1024
SHORT_FILE_BYTES = 1024
_ASSIGNMENT = re.compile(r"^\s*(?:export\s+)?[A-Za-z_][A-Za-z0-9_.-]*\s*(?:=|:\s)\s*(.*?)\s*$")
_TOKEN_LINE = re.compile(r"^[A-Za-z0-9+/=_.:-]{16,}$")


def secret_values(workspace: Path, files: Iterable[str]) -> list[str]:
    """The values held by the workspace's secret `files`, longest first (at most
    MAX_TOTAL_BYTES read in all: this runs for every result)."""
    root = Path(os.path.realpath(workspace))
    values: set[str] = set()
    budget = MAX_TOTAL_BYTES
    for rel in files:
        text = _read(root / rel, min(budget, MAX_FILE_BYTES))
        if text is not None:
            values.update(values_in(text))
            budget -= len(text)
        if budget <= 0:
            break
    return sorted(values, key=lambda v: (-len(v), v))


def values_in(text: str) -> set[str]:
    """The secret-looking values of one file's text."""
    found: set[str] = set()
    stripped = text.strip()
    one_line = stripped and "\n" not in stripped and len(text) <= SHORT_FILE_BYTES
    if one_line and not _ASSIGNMENT.match(stripped):
        found.add(stripped)  # a token file
    for line in text.splitlines():
        match = _ASSIGNMENT.match(line)
        if match:
            found.add(_unquoted(match.group(1)))
        elif _TOKEN_LINE.match(line.strip()):
            found.add(line.strip())
    return {v for v in found if len(v) >= MIN_VALUE_CHARS}


def redact(text: str, values: Iterable[str]) -> str:
    """`text` with every value (longest first) replaced by `[redacted]`."""
    for value in values:
        if len(value) >= MIN_VALUE_CHARS and value in text:
            text = text.replace(value, REDACTED)
    return text


def _unquoted(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value.split(" #", 1)[0].strip()


def _read(path: Path, limit: int) -> str | None:
    """At most `limit` bytes of a regular file, never through a symlink."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = handle.read(limit)
    return data.decode("utf-8", errors="replace")
