"""search_codebase (ripgrep) and list_files on real trees."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.helpers import call, make_ctx, make_workspace
from tools_app.core.tools.errors import ToolError


def _tree(tmp_path: Path) -> Path:
    ws = make_workspace(tmp_path)
    files = {
        "src/app.ts": "const needle = 1;\n",
        "src/util.py": "needle = 2\nother\n",
        "README.md": "no match here\n",
        "node_modules/lib/index.ts": "needle in node_modules\n",
        ".git/config": "needle in git\n",
        ".github/ci.yml": "needle: hidden dir\n",
    }
    for rel, text in files.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    return ws


def test_search_returns_relative_path_line_and_text(tmp_path: Path) -> None:
    ws = _tree(tmp_path)
    out = call(make_ctx(ws), "search_codebase", {"pattern": "needle"})
    assert sorted(out.splitlines()) == [
        ".github/ci.yml:1:needle: hidden dir",
        "src/app.ts:1:const needle = 1;",
        "src/util.py:1:needle = 2",
    ]


def test_search_in_a_subdirectory_and_with_include(tmp_path: Path) -> None:
    ws = _tree(tmp_path)
    ctx = make_ctx(ws)
    out = call(ctx, "search_codebase", {"pattern": "needle", "path": "src", "include": "*.ts"})
    assert out == "src/app.ts:1:const needle = 1;"


def test_max_results_caps_and_counts_the_rest(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    (ws / "many.txt").write_text("hit\n" * 30)
    out = call(make_ctx(ws), "search_codebase", {"pattern": "hit", "max_results": 5}).splitlines()
    assert out[:5] == [f"many.txt:{n}:hit" for n in range(1, 6)]
    assert out[5] == "[25 more matches not shown; narrow the pattern or raise max_results]"


def test_no_matches(tmp_path: Path) -> None:
    ws = _tree(tmp_path)
    out = call(make_ctx(ws), "search_codebase", {"pattern": "zzz_absent"})
    assert out == "No matches for 'zzz_absent' in ."


def test_invalid_regex_is_a_clear_error(tmp_path: Path) -> None:
    ws = _tree(tmp_path)
    with pytest.raises(ToolError, match="`pattern` is not a valid regular expression"):
        call(make_ctx(ws), "search_codebase", {"pattern": "(unclosed"})


def test_ripgrep_dialect_is_accepted(tmp_path: Path) -> None:
    ws = _tree(tmp_path)
    out = call(
        make_ctx(ws), "search_codebase", {"pattern": r"^needle\s=\s[[:digit:]]$", "path": "src"}
    )
    assert out == "src/util.py:1:needle = 2"


def test_a_pattern_that_looks_like_an_option_is_a_pattern(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    (ws / "a.txt").write_text("run --pre=sh here\n")
    (ws / "payload").write_text("#!/bin/sh\ntouch pwned\n")
    out = call(make_ctx(ws), "search_codebase", {"pattern": "--pre=sh"})
    assert out == "a.txt:1:run --pre=sh here"
    assert not (ws / "pwned").exists()


def test_a_path_that_looks_like_an_option_is_a_path(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    (ws / "-x").mkdir()
    (ws / "-x" / "f.txt").write_text("found\n")
    out = call(make_ctx(ws), "search_codebase", {"pattern": "found", "path": "-x"})
    assert out == "-x/f.txt:1:found"


def test_search_path_must_exist_and_stay_inside(tmp_path: Path) -> None:
    ws = _tree(tmp_path)
    with pytest.raises(ToolError, match="does not exist"):
        call(make_ctx(ws), "search_codebase", {"pattern": "x", "path": "nope"})
    with pytest.raises(ToolError, match="outside the workspace"):
        call(make_ctx(ws), "search_codebase", {"pattern": "evil", "path": "../ws-evil"})


def test_ripgrep_config_from_the_environment_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = _tree(tmp_path)
    config = tmp_path / "rgrc"
    config.write_text("--files\n")
    monkeypatch.setenv("RIPGREP_CONFIG_PATH", str(config))
    out = call(make_ctx(ws), "search_codebase", {"pattern": "needle", "path": "src"})
    assert "src/util.py:1:needle = 2" in out


# --- list_files -------------------------------------------------------------------------


def test_list_files_top_level_sorted_with_directory_slashes(tmp_path: Path) -> None:
    ws = _tree(tmp_path)
    out = call(make_ctx(ws), "list_files", {"path": "."})
    assert out.splitlines() == [".github/", "README.md", "src/"]


def test_list_files_recursive_hides_node_modules_and_git(tmp_path: Path) -> None:
    ws = _tree(tmp_path)
    out = call(make_ctx(ws), "list_files", {"path": ".", "recursive": True})
    assert out.splitlines() == [
        ".github/",
        ".github/ci.yml",
        "README.md",
        "src/",
        "src/app.ts",
        "src/util.py",
    ]


def test_list_files_pattern_filters_names(tmp_path: Path) -> None:
    ws = _tree(tmp_path)
    out = call(make_ctx(ws), "list_files", {"path": ".", "recursive": True, "pattern": "*.ts"})
    assert out == "src/app.ts"
    none = call(make_ctx(ws), "list_files", {"path": "src", "pattern": "*.rs"})
    assert none == "No files matching '*.rs' in src"


def test_list_files_terminates_on_symlink_loops(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    (ws / "a").mkdir()
    (ws / "a" / "loop").symlink_to(ws / "a")
    (ws / "a" / "up").symlink_to("..")
    out = call(make_ctx(ws), "list_files", {"path": ".", "recursive": True})
    assert out.splitlines() == ["a/", "a/loop/", "a/up/"]


def test_list_files_caps_huge_listings(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    for n in range(5100):
        (ws / f"f{n:05}").touch()
    lines = call(make_ctx(ws), "list_files", {"path": "."}).splitlines()
    assert len(lines) == 5001
    assert lines[-1].startswith("[listing capped at 5000 entries")


def test_list_files_errors(tmp_path: Path) -> None:
    ws = _tree(tmp_path)
    with pytest.raises(ToolError, match="Directory not found"):
        call(make_ctx(ws), "list_files", {"path": "nope"})
    with pytest.raises(ToolError, match="is a file, not a directory; use read_file"):
        call(make_ctx(ws), "list_files", {"path": "README.md"})
    with pytest.raises(ToolError, match="outside the workspace"):
        call(make_ctx(ws), "list_files", {"path": "/"})
