"""read_file, write_file, edit_file and plan_file_change on real files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.unit.helpers import call, make_ctx, make_workspace, snapshot
from tools_app.core.tools.errors import ToolError
from tools_app.core.tools.files import apply_file_change, plan_file_change

# --- read_file ------------------------------------------------------------------------


def test_read_file_numbers_lines(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    (ws / "a.txt").write_text("alpha\nbeta\n")
    assert call(make_ctx(ws), "read_file", {"path": "a.txt"}) == "1 | alpha\n2 | beta"


def test_read_file_pages_with_offset_and_limit(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    (ws / "a.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    out = call(make_ctx(ws), "read_file", {"path": "a.txt", "offset": 4, "limit": 2})
    assert out.splitlines() == [
        "4 | line 4",
        "5 | line 5",
        "[showing lines 4-5 of 10; call read_file with offset=6 to read on]",
    ]


def test_read_file_caps_at_2000_lines_and_says_how_to_page_on(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    (ws / "big.txt").write_text("x\n" * 9000)
    lines = call(make_ctx(ws), "read_file", {"path": "big.txt"}).splitlines()
    assert len(lines) == 2001 and lines[1999] == "2000 | x"
    assert lines[-1] == "[showing lines 1-2000 of 9000; call read_file with offset=2001 to read on]"
    last = call(make_ctx(ws), "read_file", {"path": "big.txt", "offset": 8999})
    assert last == "8999 | x\n9000 | x"


def test_read_file_caps_output_at_256_kb(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    (ws / "wide.txt").write_text(("y" * 1000 + "\n") * 1000)
    out = call(make_ctx(ws), "read_file", {"path": "wide.txt"})
    assert len(out.encode()) <= 256 * 1024 + 200
    assert out.splitlines()[-1].startswith("[showing lines 1-")
    assert "of 1000; call read_file with offset=" in out


def test_read_file_cuts_a_single_huge_line(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    (ws / "one.txt").write_text("z" * 1_000_000 + "\nend\n")
    out = call(make_ctx(ws), "read_file", {"path": "one.txt"})
    assert len(out.encode()) <= 256 * 1024 + 200
    assert "[showing lines 1-1 of 2; call read_file with offset=2 to read on]" in out


def test_read_file_offset_past_the_end_names_the_length(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    (ws / "a.txt").write_text("1\n2\n3\n")
    with pytest.raises(ToolError, match=r"past the end of a\.txt, which has 3 lines"):
        call(make_ctx(ws), "read_file", {"path": "a.txt", "offset": 4})


def test_read_file_empty_file(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    (ws / "e.txt").write_text("")
    assert "empty" in call(make_ctx(ws), "read_file", {"path": "e.txt"})


@pytest.mark.parametrize("data", [b"abc\x00def", b"\xff\xfe\x00\x01 bytes", b"ok\n\xc3\x28\n"])
def test_read_file_refuses_binary(tmp_path: Path, data: bytes) -> None:
    ws = make_workspace(tmp_path)
    (ws / "b.bin").write_bytes(data)
    with pytest.raises(ToolError, match=r"b\.bin is a binary file; read_file only reads text"):
        call(make_ctx(ws), "read_file", {"path": "b.bin"})


def test_read_file_keeps_utf8_text(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    (ws / "u.txt").write_text("héllo wörld ✓\r\nnext\n", encoding="utf-8")
    assert call(make_ctx(ws), "read_file", {"path": "u.txt"}) == "1 | héllo wörld ✓\n2 | next"


def test_read_file_directory_suggests_list_files(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    (ws / "d").mkdir()
    with pytest.raises(ToolError, match="is a directory; use list_files"):
        call(make_ctx(ws), "read_file", {"path": "d"})


def test_read_file_missing_suggests_list_and_search(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    with pytest.raises(ToolError, match=r"File not found: nope\.txt; use list_files or search"):
        call(make_ctx(ws), "read_file", {"path": "nope.txt"})


def test_read_file_outside_the_workspace_is_refused(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    with pytest.raises(ToolError, match="outside the workspace"):
        call(make_ctx(ws), "read_file", {"path": "../ws-evil/secret.txt"})


def test_read_file_refuses_a_fifo_instead_of_hanging(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    os.mkfifo(ws / "pipe")
    with pytest.raises(ToolError, match="not a regular file"):
        call(make_ctx(ws), "read_file", {"path": "pipe"})


# --- write_file -----------------------------------------------------------------------


def test_write_file_creates_parents_and_counts_characters(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    out = call(make_ctx(ws), "write_file", {"path": "src/new/a.py", "content": "print('hé')\n"})
    assert out == "Wrote 12 characters to src/new/a.py"
    assert (ws / "src/new/a.py").read_text() == "print('hé')\n"
    assert oct((ws / "src/new/a.py").stat().st_mode & 0o777) == "0o644"


def test_write_file_overwrites_and_keeps_the_mode(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    script = ws / "run.sh"
    script.write_text("old\n")
    script.chmod(0o755)
    call(make_ctx(ws), "write_file", {"path": "run.sh", "content": "new\n"})
    assert script.read_text() == "new\n"
    assert script.stat().st_mode & 0o777 == 0o755
    assert [p.name for p in ws.iterdir()] == ["run.sh"]  # no temporary file left behind


def test_write_file_through_an_inner_symlink_writes_the_target(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    (ws / "real.txt").write_text("a\n")
    (ws / "alias.txt").symlink_to("real.txt")
    call(make_ctx(ws), "write_file", {"path": "alias.txt", "content": "b\n"})
    assert (ws / "real.txt").read_text() == "b\n"
    assert (ws / "alias.txt").is_symlink()


def _refused_write(tmp_path: Path, path: str, match: str) -> None:
    """A refused write leaves every file as it was (bytes and mtime)."""
    ws = make_workspace(tmp_path)
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / "link").symlink_to(tmp_path / "ws-evil")
    watched = [tmp_path / "ws-evil" / "secret.txt", ws / ".git" / "config"]
    before = [snapshot(p) for p in watched]
    listing = sorted(p.name for p in tmp_path.rglob("*"))
    with pytest.raises(ToolError, match=match):
        call(make_ctx(ws), "write_file", {"path": path, "content": "pwned\n"})
    assert [snapshot(p) for p in watched] == before
    assert sorted(p.name for p in tmp_path.rglob("*")) == listing


@pytest.mark.parametrize(
    ("path", "match"),
    [
        ("../ws-evil/secret.txt", "outside the workspace"),
        ("/etc/passwd-agentweb-test", "outside the workspace"),
        ("link/secret.txt", "outside the workspace"),
        ("{evil}/secret.txt", "outside the workspace"),
        ("a\x00b", "NUL byte"),
        (".git/config", r"inside a \.git directory"),
        (".git/hooks/pre-commit", r"inside a \.git directory"),
    ],
)
def test_write_file_refusals_change_nothing(tmp_path: Path, path: str, match: str) -> None:
    _refused_write(tmp_path, path.replace("{evil}", str(tmp_path / "ws-evil")), match)


def test_write_file_onto_a_directory_is_refused(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    (ws / "d").mkdir()
    with pytest.raises(ToolError, match="is a directory"):
        call(make_ctx(ws), "write_file", {"path": "d", "content": "x"})


# --- edit_file ------------------------------------------------------------------------


def test_edit_file_replaces_the_unique_match(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    (ws / "a.py").write_text("x = 1\ny = 2\n")
    out = call(
        make_ctx(ws), "edit_file", {"path": "a.py", "old_string": "y = 2", "new_string": "y = 3"}
    )
    assert out == "Edited a.py: replaced 1 occurrence (2 lines changed)"
    assert (ws / "a.py").read_text() == "x = 1\ny = 3\n"


def test_edit_file_keeps_crlf_and_the_rest_of_the_bytes(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    (ws / "w.txt").write_bytes(b"one\r\ntwo\r\n")
    call(make_ctx(ws), "edit_file", {"path": "w.txt", "old_string": "two", "new_string": "2"})
    assert (ws / "w.txt").read_bytes() == b"one\r\n2\r\n"


@pytest.mark.parametrize(
    ("old", "new", "match"),
    [
        ("nothere", "x", "was not found in a.py; read_file it"),
        ("dup", "x", "occurs 3 times in a.py; include more surrounding lines"),
        ("unique", "unique", "are the same; nothing would change"),
        ("", "x", "`old_string` is empty"),
    ],
)
def test_edit_file_refusals_change_nothing(tmp_path: Path, old: str, new: str, match: str) -> None:
    ws = make_workspace(tmp_path)
    target = ws / "a.py"
    target.write_text("dup\ndup\ndup\nunique\n")
    before = snapshot(target)
    with pytest.raises(ToolError, match=match):
        call(make_ctx(ws), "edit_file", {"path": "a.py", "old_string": old, "new_string": new})
    assert snapshot(target) == before


def test_edit_file_missing_file_suggests_write_file(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    with pytest.raises(ToolError, match=r"File not found: a\.py; use write_file to create it"):
        call(make_ctx(ws), "edit_file", {"path": "a.py", "old_string": "a", "new_string": "b"})
    assert not (ws / "a.py").exists()


@pytest.mark.parametrize(
    ("path", "match"),
    [
        ("../ws-evil/secret.txt", "outside the workspace"),
        ("link/secret.txt", "outside the workspace"),
        (".git/config", r"inside a \.git directory"),
        ("a\x00b", "NUL byte"),
    ],
)
def test_edit_file_path_refusals_change_nothing(tmp_path: Path, path: str, match: str) -> None:
    ws = make_workspace(tmp_path)
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("evil\n")
    (ws / "link").symlink_to(tmp_path / "ws-evil")
    watched = [tmp_path / "ws-evil" / "secret.txt", ws / ".git" / "config"]
    before = [snapshot(p) for p in watched]
    with pytest.raises(ToolError, match=match):
        call(make_ctx(ws), "edit_file", {"path": path, "old_string": "evil", "new_string": "ok"})
    assert [snapshot(p) for p in watched] == before


def test_edit_file_refuses_binary(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    (ws / "b.bin").write_bytes(b"a\x00b")
    before = snapshot(ws / "b.bin")
    with pytest.raises(ToolError, match="binary file; edit_file only edits text"):
        call(make_ctx(ws), "edit_file", {"path": "b.bin", "old_string": "a", "new_string": "c"})
    assert snapshot(ws / "b.bin") == before


# --- plan_file_change -----------------------------------------------------------------


def test_plan_for_a_new_file_diffs_against_dev_null(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    plan = plan_file_change(make_ctx(ws), "write_file", {"path": "n/a.txt", "content": "1\n2\n3"})
    assert plan.path == "n/a.txt" and plan.before is None and plan.after == "1\n2\n3"
    assert plan.changed_lines == 3
    assert plan.diff.startswith("--- /dev/null\n+++ b/n/a.txt\n@@ -0,0 +1,3 @@\n+1\n+2\n+3\n")
    assert plan.diff.endswith("+3\n\\ No newline at end of file\n")
    assert not (ws / "n").exists()  # planning writes nothing


def test_plan_for_an_edit_counts_added_and_removed_lines(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    (ws / "a.txt").write_text("a\nb\nc\n")
    args = {"path": "a.txt", "old_string": "b\n", "new_string": "B\nB2\n"}
    plan = plan_file_change(make_ctx(ws), "edit_file", args)
    assert plan.before == "a\nb\nc\n" and plan.after == "a\nB\nB2\nc\n"
    assert plan.changed_lines == 3
    assert "--- a/a.txt\n+++ b/a.txt\n" in plan.diff and "-b\n+B\n+B2\n" in plan.diff


def test_plan_runs_the_edit_validations(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    (ws / "a.txt").write_text("a\na\n")
    with pytest.raises(ToolError, match="occurs 2 times"):
        plan_file_change(
            make_ctx(ws), "edit_file", {"path": "a.txt", "old_string": "a", "new_string": "b"}
        )


def test_plan_refuses_other_tools(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="only write_file and edit_file"):
        plan_file_change(make_ctx(make_workspace(tmp_path)), "read_file", {"path": "a"})


def test_a_plan_is_not_applied_when_the_file_changed_since(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    (ws / "a.txt").write_text("a\n")
    plan = plan_file_change(make_ctx(ws), "write_file", {"path": "a.txt", "content": "b\n"})
    (ws / "a.txt").write_text("someone else\n")
    with pytest.raises(ToolError, match="changed since this call was planned"):
        apply_file_change(plan)
    assert (ws / "a.txt").read_text() == "someone else\n"


def test_applying_a_plan_writes_what_was_previewed(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    plan = plan_file_change(make_ctx(ws), "write_file", {"path": "a.txt", "content": "new\n"})
    assert apply_file_change(plan) == "Wrote 4 characters to a.txt"
    assert (ws / "a.txt").read_text() == plan.after
