"""What a reviewer reads: diffs parsed and highlighted, hidden characters made visible.

Pure text in, escaped HTML out: no database, no request. Every string that reaches the
page goes through `reveal`, which escapes it and replaces the characters an agent could
use to hide something (bidi overrides, zero-width characters, ANSI and other control
characters) with a visible marker, so a reviewer sees what would really be written.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from functools import cache
from html import escape

from pygments.lexer import Lexer
from pygments.lexers import TextLexer, get_lexer_for_filename
from pygments.token import Comment, Keyword, Name, Number, Operator, String, _TokenType
from pygments.util import ClassNotFound

# Bidi embeddings, overrides and isolates; zero-width and invisible formatting
# characters; C0 and C1 controls (ESC starts ANSI sequences) except tab and newline.
_HIDDEN = re.compile(
    "[\u202a-\u202e\u2066-\u2069\u200b-\u200f\u2060-\u2064\ufeff\u061c\u00ad"
    "\x00-\x08\x0b-\x1f\x7f-\x9f]"
)
_NAMES = {"\x1b": "ESC", "\r": "CR", "\x00": "NUL", "\x7f": "DEL", "\x0b": "VT", "\x0c": "FF"}
HIGHLIGHT_LIMIT = 20_000  # lines; beyond this a diff is shown without colours
FOLD_LINES = 300  # a file with more changed lines than this starts folded


def hidden_count(text: str) -> int:
    """How many hidden characters `text` holds (the card warns when there are any)."""
    return len(_HIDDEN.findall(text))


def reveal(text: str) -> str:
    """`text` as escaped HTML, each hidden character replaced by a visible marker."""
    out: list[str] = []
    last = 0
    for match in _HIDDEN.finditer(text):
        out.append(escape(text[last : match.start()], quote=True))
        out.append(_marker(match.group(0)))
        last = match.end()
    out.append(escape(text[last:], quote=True))
    return "".join(out)


def spelled(text: str) -> str:
    """`text` with each hidden character spelled `<U+202E>` as plain text, for the places
    markup cannot go (a page's title, a row's name in the admin); escape it as usual."""
    return _HIDDEN.sub(lambda match: f"<{_label(match.group(0))}>", text)


def _label(char: str) -> str:
    return _NAMES.get(char, f"U+{ord(char):04X}")


def _marker(char: str) -> str:
    code = f"U+{ord(char):04X}"
    title = unicodedata.name(char, "control character")
    return f'<mark class="hidden-char" title="{code} {escape(title)}">&lt;{_label(char)}&gt;</mark>'


# --- highlighting ----------------------------------------------------------------------

# Token families and the short classes inbox.css colours, most specific first.
_CLASSES: tuple[tuple[_TokenType, str], ...] = (
    (Comment, "c"),
    (String, "s"),
    (Number, "m"),
    (Keyword, "k"),
    (Name.Function, "nf"),
    (Name.Class, "nf"),
    (Name.Builtin, "nb"),
    (Name.Decorator, "nb"),
    (Name.Tag, "k"),
    (Name.Attribute, "nb"),
    (Name.Variable, "nb"),
    (Operator, "o"),
)


def lexer_for(path: str) -> Lexer:
    """The language lexer for a file name; plain text when none fits."""
    try:
        return get_lexer_for_filename(path, stripnl=False, ensurenl=False, stripall=False)
    except ClassNotFound:
        return TextLexer(stripnl=False, ensurenl=False)


def highlight_lines(lines: list[str], lexer: Lexer) -> list[str]:
    """Each line as revealed HTML with token spans; lexed together so that multi-line
    strings and comments keep their colour. Falls back to plain when the lexer would
    change the text."""
    plain = [reveal(line) for line in lines]
    if not lines or len(lines) > HIGHLIGHT_LIMIT or isinstance(lexer, TextLexer):
        return plain
    source = "\n".join(lines) + "\n"
    out: list[list[str]] = [[]]
    seen: list[str] = []
    for token, value in lexer.get_tokens(source):
        seen.append(value)
        css = _css_class(token)
        for index, piece in enumerate(value.split("\n")):
            if index:
                out.append([])
            if piece:
                html = reveal(piece)
                out[-1].append(f'<span class="tok-{css}">{html}</span>' if css else html)
    if "".join(seen) != source:
        return plain
    return ["".join(parts) for parts in out[: len(lines)]]


@cache
def _css_class(token: _TokenType) -> str:
    """Cached: a page of diffs asks for the same few token types thousands of times."""
    for family, css in _CLASSES:
        if token in family:
            return css
    return ""


# --- diffs -----------------------------------------------------------------------------

_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@(.*)$")


@dataclass
class DiffLine:
    kind: str  # "add", "del", "ctx", "hunk" or "meta" (a `\ No newline` note)
    text: str
    old: int | None = None
    new: int | None = None
    html: str = ""


@dataclass
class DiffFile:
    path: str
    header: list[str] = field(default_factory=list)
    lines: list[DiffLine] = field(default_factory=list)
    added: int = 0
    removed: int = 0

    @property
    def folded(self) -> bool:
        return self.added + self.removed > FOLD_LINES


def parse_diff(text: str) -> list[DiffFile]:
    """A unified diff (git's or difflib's) as files of numbered lines."""
    files: list[DiffFile] = []
    old = new = 0
    for raw in text.splitlines():
        if raw.startswith("diff --git ") or (raw.startswith("--- ") and _starts_file(files)):
            files.append(DiffFile(path=_path_from(raw)))
        if not files:
            files.append(DiffFile(path=""))
        current = files[-1]
        hunk = _HUNK.match(raw)
        if hunk:
            old, new = int(hunk.group(1)), int(hunk.group(2))
            current.lines.append(DiffLine("hunk", raw))
        elif not current.lines:
            current.header.append(raw)
            if raw.startswith("+++ "):
                current.path = _strip_prefix(raw[4:]) or current.path
        else:
            old, new = _add_line(current, raw, old, new)
    return files


def _starts_file(files: list[DiffFile]) -> bool:
    """A `---` line opens a new file unless the current one is still in its header."""
    return not files or bool(files[-1].lines)


def _path_from(raw: str) -> str:
    if raw.startswith("diff --git "):
        return _strip_prefix(raw.split(" b/", 1)[-1]) if " b/" in raw else raw[11:]
    return _strip_prefix(raw[4:])


def _strip_prefix(path: str) -> str:
    path = path.split("\t", 1)[0].strip()
    if path == "/dev/null":
        return ""
    return path[2:] if path[:2] in {"a/", "b/"} else path


def _add_line(current: DiffFile, raw: str, old: int, new: int) -> tuple[int, int]:
    sign, body = raw[:1], raw[1:]
    if sign == "+":
        current.lines.append(DiffLine("add", body, new=new))
        current.added += 1
        return old, new + 1
    if sign == "-":
        current.lines.append(DiffLine("del", body, old=old))
        current.removed += 1
        return old + 1, new
    if sign == "\\":
        current.lines.append(DiffLine("meta", raw))
        return old, new
    current.lines.append(DiffLine("ctx", body, old=old, new=new))
    return old + 1, new + 1


def highlight_diff(files: list[DiffFile]) -> list[DiffFile]:
    """Fill each line's `html`: the old side and the new side are lexed separately, in
    the file's language, so a line reads as it does in its file."""
    for diff_file in files:
        lexer = lexer_for(diff_file.path)
        for keep in ("del", "add"):
            side = [line for line in diff_file.lines if line.kind in {"ctx", keep}]
            for line, html in zip(
                side, highlight_lines([x.text for x in side], lexer), strict=True
            ):
                if line.kind == keep or keep == "del":
                    line.html = html
        for line in diff_file.lines:
            if line.kind in {"hunk", "meta"}:
                line.html = reveal(line.text)
    return files


@dataclass
class SplitRow:
    """One row of the side-by-side view: a left line, a right line, either may be None."""

    left: DiffLine | None
    right: DiffLine | None


def split_rows(lines: list[DiffLine]) -> list[SplitRow]:
    """Deleted and added runs side by side; context and hunk headers span both sides."""
    rows: list[SplitRow] = []
    dels: list[DiffLine] = []
    adds: list[DiffLine] = []

    def flush() -> None:
        for index in range(max(len(dels), len(adds))):
            left = dels[index] if index < len(dels) else None
            right = adds[index] if index < len(adds) else None
            rows.append(SplitRow(left, right))
        dels.clear()
        adds.clear()

    for line in lines:
        if line.kind == "del":
            if adds:
                flush()
            dels.append(line)
        elif line.kind == "add":
            adds.append(line)
        else:
            flush()
            rows.append(SplitRow(line, line))
    flush()
    return rows
