"""What a reviewer reads: escaped, hidden characters visible, diffs numbered and coloured."""

from __future__ import annotations

import html
import re

import pytest

from tools_app.core import rendering
from tools_app.core.rendering import highlight_diff, highlight_lines, lexer_for, parse_diff, reveal

HIDDEN = [
    "\u202a", "\u202b", "\u202c", "\u202d", "\u202e",  # bidi embeddings and overrides
    "\u2066", "\u2067", "\u2068", "\u2069",  # bidi isolates
    "\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u2060", "\ufeff",  # zero width
    "\x1b", "\x00", "\x07", "\x08", "\r", "\x7f", "\x9b",  # controls, ANSI's ESC and CSI
]  # fmt: skip


def text_of(markup: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


@pytest.mark.parametrize("char", HIDDEN, ids=lambda c: f"U+{ord(c):04X}")
def test_each_hidden_character_becomes_a_visible_marker(char: str) -> None:
    shown = reveal(f"ok{char}ok")
    assert char not in shown
    assert '<mark class="hidden-char"' in shown
    assert f"U+{ord(char):04X}" in shown
    assert rendering.hidden_count(f"a{char}b{char}") == 2


def test_a_right_to_left_override_is_named_where_it_hides_text() -> None:
    shown = reveal("access = 'user\u202e \u2066// admin\u2069 \u2066'")
    assert text_of(shown) == "access = 'user<U+202E> <U+2066>// admin<U+2069> <U+2066>'"


def test_ansi_escape_sequences_are_shown_not_obeyed() -> None:
    assert text_of(reveal("\x1b[2K\x1b[1Aok")) == "<ESC>[2K<ESC>[1Aok"
    assert text_of(reveal("line\r\n")) == "line<CR>\n"


def test_html_is_escaped_and_ordinary_text_left_alone() -> None:
    assert reveal('<script>alert("x")</script>') == (
        "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"
    )
    assert reveal("tabs\tand\nnewlines, émoji 🙂, 中文") == "tabs\tand\nnewlines, émoji 🙂, 中文"
    assert rendering.hidden_count("plain text\n") == 0


def test_highlighting_colours_python_and_keeps_every_character() -> None:
    lines = ["def greet(name):", '    """Say it\u202e."""', "    return f'<b>{name}</b>'"]
    shown = highlight_lines(lines, lexer_for("src/app.py"))
    assert len(shown) == 3
    assert '<span class="tok-k">def</span>' in shown[0]
    assert "tok-s" in shown[1] and "&lt;U+202E&gt;" in shown[1]
    assert "<b>" not in shown[2] and "&lt;b&gt;" in shown[2]
    assert [text_of(line) for line in shown] == [
        "def greet(name):",
        '    """Say it<U+202E>."""',
        "    return f'<b>{name}</b>'",
    ]


def test_a_file_without_a_known_language_is_shown_plain() -> None:
    assert highlight_lines(["KEY=<new>"], lexer_for(".env")) == ["KEY=&lt;new&gt;"]


GIT_DIFF = """\
diff --git a/src/app.py b/src/app.py
index 1111111..2222222 100644
--- a/src/app.py
+++ b/src/app.py
@@ -1,3 +1,3 @@
 def greet(name):
-    return 'hi'
+    return 'hello'
 x = 1
diff --git a/new.txt b/new.txt
new file mode 100644
--- /dev/null
+++ b/new.txt
@@ -0,0 +1,2 @@
+one
+two
\\ No newline at end of file
"""


def test_a_git_diff_is_parsed_per_file_with_line_numbers_and_counts() -> None:
    app, new = parse_diff(GIT_DIFF)
    assert (app.path, app.added, app.removed) == ("src/app.py", 1, 1)
    assert [(line.kind, line.old, line.new) for line in app.lines] == [
        ("hunk", None, None),
        ("ctx", 1, 1),
        ("del", 2, None),
        ("add", None, 2),
        ("ctx", 3, 3),
    ]
    assert (new.path, new.added, new.removed) == ("new.txt", 2, 0)
    assert [line.kind for line in new.lines] == ["hunk", "add", "add", "meta"]


def test_a_difflib_diff_without_a_git_header_is_one_file() -> None:
    (only,) = parse_diff("--- a/.env\n+++ b/.env\n@@ -1 +1 @@\n-SECRET=shh\n+KEY=new\n")
    assert (only.path, only.added, only.removed) == (".env", 1, 1)


def test_each_side_of_a_diff_is_highlighted_in_its_language() -> None:
    (app, _) = highlight_diff(parse_diff(GIT_DIFF))
    assert '<span class="tok-k">def</span>' in app.lines[1].html
    assert all(line.html for line in app.lines)
    assert text_of(app.lines[3].html) == "    return 'hello'"


def test_deletions_and_additions_pair_up_side_by_side() -> None:
    (app, _) = parse_diff(GIT_DIFF)
    rows = rendering.split_rows(app.lines)
    assert [(r.left and r.left.kind, r.right and r.right.kind) for r in rows] == [
        ("hunk", "hunk"),
        ("ctx", "ctx"),
        ("del", "add"),
        ("ctx", "ctx"),
    ]
    lone = rendering.split_rows(parse_diff("@@ -1,2 +1 @@\n-a\n-b\n+c\n")[0].lines)
    assert [(r.left and r.left.text, r.right and r.right.text) for r in lone[1:]] == [
        ("a", "c"),
        ("b", None),
    ]


def test_a_large_file_starts_folded() -> None:
    body = "".join(f"+line {n}\n" for n in range(rendering.FOLD_LINES + 1))
    (big,) = parse_diff(f"--- /dev/null\n+++ b/big.txt\n@@ -0,0 +1 @@\n{body}")
    assert big.folded
    assert not parse_diff(GIT_DIFF)[0].folded
