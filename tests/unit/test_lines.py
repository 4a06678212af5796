"""Changed lines are counted by content: every line ending counts, and so does size."""

from __future__ import annotations

import io

import pytest

from tools_app.core.tools.lines import (
    LINE_BYTES,
    MAX_EXACT_BYTES,
    changed_lines,
    changed_lines_bytes,
    changed_lines_files,
    counted_lines,
    split_lines,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("a", ["a"]),
        ("a\nb", ["a\n", "b"]),
        ("a\nb\n", ["a\n", "b\n"]),
        ("a\rb\r", ["a\r", "b\r"]),
        ("a\r\nb\r\n", ["a\r\n", "b\r\n"]),
        ("a\r\rb", ["a\r", "\r", "b"]),
        ("a\n\r\nb", ["a\n", "\r\n", "b"]),
    ],
)
def test_every_line_ending_ends_a_line_and_is_kept(text: str, expected: list[str]) -> None:
    assert split_lines(text) == expected
    assert "".join(split_lines(text)) == text


def test_identical_content_changes_nothing() -> None:
    text = "".join(f"line {n}\n" for n in range(1000))
    assert changed_lines(text, text) == 0
    assert changed_lines_bytes(text.encode(), text.encode()) == 0


def test_one_edited_line_counts_as_one_removed_and_one_added() -> None:
    before = "a\nb\nc\n"
    assert changed_lines(before, "a\nB\nc\n") == 2


def test_a_crlf_file_with_one_edit_counts_two() -> None:
    before = "".join(f"line {n}\r\n" for n in range(100))
    after = before.replace("line 50\r\n", "line fifty\r\n")
    assert changed_lines(before, after) == 2


def test_statements_separated_by_carriage_returns_alone_count_one_each() -> None:
    program = "\r".join(f"x{n} = {n}" for n in range(3000))
    assert 3000 <= changed_lines(None, program) <= 3001
    assert changed_lines("", program) == changed_lines(None, program)


def test_a_single_long_line_counts_by_its_size() -> None:
    minified = "x" * 100_000
    assert changed_lines(None, minified) >= 500
    assert changed_lines(None, minified) == 100_000 // LINE_BYTES


def test_a_long_line_counts_by_utf8_bytes_not_characters() -> None:
    assert counted_lines("é" * 200) == 2
    assert counted_lines("e" * 200) == 1
    assert counted_lines("e" * 201 + "\n") == 2


def test_editing_a_long_line_counts_the_whole_line_twice() -> None:
    before = "x" * 10_000 + "\n"
    assert changed_lines(before, "y" + before[1:]) == 2 * (10_000 // LINE_BYTES)


def test_a_new_file_counts_its_lines_and_a_deleted_file_too() -> None:
    assert changed_lines(None, "a\nb\nc\n") == 3
    assert changed_lines("a\nb\nc\n", None) == 3
    assert changed_lines(None, None) == 0


def test_adding_a_missing_final_newline_changes_the_last_line() -> None:
    assert changed_lines("a\nb", "a\nb\n") == 2


def test_insertions_in_the_middle_count_only_what_was_inserted() -> None:
    before = "".join(f"{n}\n" for n in range(100))
    after = before.replace("50\n", "50\nnew\nnewer\n")
    assert changed_lines(before, after) == 2


def test_a_ten_thousand_line_file_with_one_change_is_counted_exactly() -> None:
    before = "".join(f"statement_{n} = compute({n})\n" for n in range(10_000))
    after = before.replace("statement_5000 =", "statement_5000 :=")
    assert changed_lines(before, after) == 2


def test_a_repetitive_file_is_not_undercounted() -> None:
    before = "".join("}\n" for _ in range(5_000))
    after = "".join("z\n" if n % 3 == 0 else "}\n" for n in range(5_000))
    assert changed_lines(before, after) >= 2 * 1667


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        (None, b"\0" * 1000, 5),
        (None, b"\0", 1),
        (b"\0old", b"\0" * 401, 3),
        (b"\xff\xfe" * 500, None, 5),
        (b"text\n", b"\0binary", 1),
    ],
)
def test_binary_content_counts_by_size(
    before: bytes | None, after: bytes | None, expected: int
) -> None:
    assert changed_lines_bytes(before, after) == expected


def test_text_bytes_are_counted_as_text() -> None:
    assert changed_lines_bytes(b"a\r\nb\r\n", "a\r\nb\u00e9\r\n".encode()) == 2
    assert changed_lines_bytes(None, b"a\rb\rc") == 3


def test_scattered_edits_in_ten_thousand_lines_of_code_are_counted_exactly() -> None:
    before = [
        "\n" if n % 7 == 0 else "}\n" if n % 11 == 0 else f"    x_{n} = call({n})\n"
        for n in range(10_000)
    ]
    after = [f"changed {n}\n" if n % 50 == 0 else line for n, line in enumerate(before)]
    assert changed_lines("".join(before), "".join(after)) == 400


# --- Files too large to read whole --------------------------------------------------------


def _big(lines: int, ending: str = "\n") -> bytes:
    return "".join(f"line number {n}{ending}" for n in range(lines)).encode()


def _count(before: bytes | None, after: bytes | None, limit: int = 10**9) -> int:
    old = io.BytesIO(before) if before is not None else None
    new = io.BytesIO(after) if after is not None else None
    return changed_lines_files(old, new, limit=limit)


def test_small_files_are_counted_exactly_as_bytes_are() -> None:
    before, after = b"a\nb\nc\n", b"a\nB\nc\nd\n"
    assert _count(before, after) == changed_lines_bytes(before, after) == 3
    assert _count(None, after) == 4
    assert _count(before, None) == 3


def test_one_edit_in_a_file_past_the_exact_size_counts_the_edited_line_twice() -> None:
    before = _big(300_000)
    assert len(before) > MAX_EXACT_BYTES
    after = before.replace(b"line number 150000\n", b"line number 150000 edited\n")
    assert _count(before, after) == 2
    assert _count(before, before + b"tail\n") == 1


def test_a_new_large_file_counts_every_line_and_every_ending_kind() -> None:
    for ending in ("\n", "\r", "\r\n"):
        assert _count(None, _big(200_000, ending)) == 200_000


def test_a_crlf_split_between_two_chunks_is_one_ending() -> None:
    line = b"x" * (256 * 1024 - 1) + b"\r\n"  # the \r ends the first chunk
    content = line + b"y\n" * (MAX_EXACT_BYTES // 2)
    expected = -(-(256 * 1024 - 1) // LINE_BYTES) + MAX_EXACT_BYTES // 2
    assert _count(None, content) == expected


def test_streaming_stops_soon_after_the_limit() -> None:
    handle = io.BytesIO(b"\n" * (50 * 1024 * 1024))
    assert changed_lines_files(None, handle, limit=500) == 501
    assert handle.tell() <= 1024 * 1024  # one chunk read, not 50 MB


def test_one_huge_line_stops_at_the_limit_too() -> None:
    handle = io.BytesIO(bytes(64 * 1024 * 1024))  # what `truncate -s 64M` reads as
    assert changed_lines_files(None, handle, limit=500) > 500
    assert handle.tell() <= 1024 * 1024


def test_one_byte_changed_in_a_huge_minified_line_counts_the_whole_line_twice() -> None:
    before = b"x" * 3_000_000 + b"\n"
    after = before[:1_500_000] + b"y" + before[1_500_001:]
    assert _count(before, after) == 2 * (3_000_000 // LINE_BYTES)
    assert _count(before, after, limit=500) > 500
