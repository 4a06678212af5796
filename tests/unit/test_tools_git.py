"""commit_preview: what a git_commit would record, with the real index untouched."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.helpers import git, git_repo, make_workspace, snapshot
from tools_app.core.tools.errors import ToolError
from tools_app.core.tools.git_runner import commit_preview


def _changes(ws: Path) -> None:
    (ws / "README.md").write_text("hello\nworld\n")
    (ws / "new.py").write_text("a = 1\nb = 2\n")
    (ws / "ignored.log").write_text("noise\n")
    (ws / ".gitignore").write_text("*.log\n")


def test_preview_of_everything_includes_untracked_files(tmp_path: Path) -> None:
    ws = git_repo(tmp_path)
    _changes(ws)
    index = snapshot(ws / ".git" / "index")
    preview = commit_preview(ws, None)
    assert preview.files == [".gitignore", "README.md", "new.py"]
    assert preview.changed_lines == 1 + 1 + 2
    assert "+++ b/new.py" in preview.diff and "+world" in preview.diff
    assert "ignored.log" not in preview.diff
    assert "3 files changed" in preview.stat
    assert snapshot(ws / ".git" / "index") == index
    assert git(ws, "status", "--porcelain") == " M README.md\n?? .gitignore\n?? new.py\n"


def test_preview_of_given_files_only(tmp_path: Path) -> None:
    ws = git_repo(tmp_path)
    _changes(ws)
    preview = commit_preview(ws, ["new.py"])
    assert preview.files == ["new.py"] and preview.changed_lines == 2
    assert "README.md" not in preview.diff


def test_preview_counts_deletions(tmp_path: Path) -> None:
    ws = git_repo(tmp_path)
    (ws / "README.md").unlink()
    preview = commit_preview(ws, None)
    assert preview.files == ["README.md"] and preview.changed_lines == 1
    assert "deleted file mode" in preview.diff


def test_preview_in_a_repository_without_commits(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    git(ws, "init", "-q")
    (ws / "a.txt").write_text("1\n2\n")
    preview = commit_preview(ws, None)
    assert preview.files == ["a.txt"] and preview.changed_lines == 2
    assert not (ws / ".git" / "index").exists()


def test_nothing_to_commit_is_an_empty_preview(tmp_path: Path) -> None:
    preview = commit_preview(git_repo(tmp_path), None)
    assert (preview.diff, preview.changed_lines, preview.files) == ("", 0, [])


def test_repository_config_cannot_run_code_or_hide_the_diff(tmp_path: Path) -> None:
    ws = git_repo(tmp_path)
    hook = tmp_path / "hook.sh"
    hook.write_text(f"#!/bin/sh\ntouch {tmp_path}/ran\n")
    hook.chmod(0o755)
    git(ws, "config", "diff.external", str(hook))
    git(ws, "config", "core.pager", str(hook))
    git(ws, "config", "diff.noprefix", "true")
    (ws / "README.md").write_text("changed\n")
    preview = commit_preview(ws, None)
    assert "--- a/README.md" in preview.diff
    assert not (tmp_path / "ran").exists()


def test_inherited_git_variables_are_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = git_repo(tmp_path)
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(tmp_path / "other-index"))
    (ws / "README.md").write_text("x\n")
    assert commit_preview(ws, None).files == ["README.md"]


@pytest.mark.parametrize(
    ("files", "match"),
    [
        (["../ws-evil/secret.txt"], "outside the workspace"),
        ([".git/config"], r"inside \.git"),
        (["missing.txt"], "did not match"),
    ],
)
def test_bad_files_are_refused(tmp_path: Path, files: list[str], match: str) -> None:
    ws = git_repo(tmp_path)
    with pytest.raises(ToolError, match=match):
        commit_preview(ws, files)
