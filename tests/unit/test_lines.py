"""Changed lines are counted by content: every line ending counts, and so does size."""

from __future__ import annotations

import time

import pytest

from tools_app.tools.lines import (
    LINE_BYTES,
    changed_lines,
    changed_lines_bytes,
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


def test_a_ten_thousand_line_file_with_one_change_is_counted_quickly() -> None:
    before = "".join(f"statement_{n} = compute({n})\n" for n in range(10_000))
    after = before.replace("statement_5000 =", "statement_5000 :=")
    started = time.perf_counter()
    assert changed_lines(before, after) == 2
    assert time.perf_counter() - started < 0.05


def test_a_repetitive_file_stays_fast_and_is_not_undercounted() -> None:
    before = "".join("}\n" for _ in range(5_000))
    after = "".join("z\n" if n % 3 == 0 else "}\n" for n in range(5_000))
    started = time.perf_counter()
    assert changed_lines(before, after) >= 2 * 1667
    assert time.perf_counter() - started < 1


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


def test_scattered_edits_in_ten_thousand_lines_of_code_are_counted_exactly_and_quickly() -> None:
    before = [
        "\n" if n % 7 == 0 else "}\n" if n % 11 == 0 else f"    x_{n} = call({n})\n"
        for n in range(10_000)
    ]
    after = [f"changed {n}\n" if n % 50 == 0 else line for n, line in enumerate(before)]
    started = time.perf_counter()
    assert changed_lines("".join(before), "".join(after)) == 400
    assert time.perf_counter() - started < 1
