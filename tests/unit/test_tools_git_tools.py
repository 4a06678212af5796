"""git_status, git_diff, git_log, git_branch and git_commit, on real repositories."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.unit.helpers import call, git, git_repo, make_workspace
from tools_app.core import engine
from tools_app.core.tools.base import ToolContext
from tools_app.core.tools.errors import ToolError
from tools_app.core.tools.git_runner import commit_preview


def ctx_for(ws: Path, **kw: Any) -> ToolContext:
    return ToolContext(workspace=ws, **kw)


def head_message(ws: Path) -> str:
    return git(ws, "log", "-1", "--format=%B")


# --- git_status -----------------------------------------------------------------------


def test_status_says_clean_when_nothing_changed(tmp_path: Path) -> None:
    assert call(ctx_for(git_repo(tmp_path)), "git_status", {}) == "Working tree clean"


def test_status_is_git_status_short(tmp_path: Path) -> None:
    ws = git_repo(tmp_path)
    (ws / "README.md").write_text("changed\n")
    (ws / "new.py").write_text("x = 1\n")
    assert call(ctx_for(ws), "git_status", {}) == " M README.md\n?? new.py\n"


def test_status_refuses_arguments(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="unexpected argument `staged`"):
        call(ctx_for(git_repo(tmp_path)), "git_status", {"staged": True})


def test_a_workspace_without_git_says_how_to_make_one(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    with pytest.raises(ToolError, match=r"not a git repository.*git init"):
        call(ctx_for(ws), "git_status", {})


def test_a_parent_repository_is_never_used(tmp_path: Path) -> None:
    outer = git_repo(tmp_path)
    inner = outer / "sub"
    inner.mkdir()
    with pytest.raises(ToolError, match="not a git repository"):
        call(ctx_for(inner), "git_log", {})


# --- git_diff -------------------------------------------------------------------------


def test_diff_shows_unstaged_changes_only(tmp_path: Path) -> None:
    ws = git_repo(tmp_path)
    (ws / "README.md").write_text("world\n")
    (ws / "untracked.txt").write_text("u\n")
    out = call(ctx_for(ws), "git_diff", {})
    assert "-hello\n+world\n" in out and "untracked.txt" not in out
    assert call(ctx_for(ws), "git_diff", {"staged": True}) == "No staged changes."


def test_diff_staged_shows_the_index(tmp_path: Path) -> None:
    ws = git_repo(tmp_path)
    (ws / "README.md").write_text("world\n")
    git(ws, "add", "README.md")
    assert "+world" in call(ctx_for(ws), "git_diff", {"staged": True})
    assert call(ctx_for(ws), "git_diff", {}).startswith("No unstaged changes")


def test_diff_rejects_a_non_boolean(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="`staged` must be true or false"):
        call(ctx_for(git_repo(tmp_path)), "git_diff", {"staged": "yes"})


# --- git_log --------------------------------------------------------------------------


def _three_commits(ws: Path) -> None:
    for i in (1, 2):
        (ws / f"f{i}.txt").write_text(f"{i}\n")
        git(ws, "add", ".")
        git(ws, "commit", "-q", "-m", f"commit {i}")


def test_log_defaults_to_ten_one_line_commits(tmp_path: Path) -> None:
    ws = git_repo(tmp_path)
    _three_commits(ws)
    lines = call(ctx_for(ws), "git_log", {}).splitlines()
    assert [line.split(" ", 1)[1] for line in lines] == ["commit 2", "commit 1", "init"]


def test_log_count_and_full_format(tmp_path: Path) -> None:
    ws = git_repo(tmp_path)
    _three_commits(ws)
    assert len(call(ctx_for(ws), "git_log", {"count": 2}).splitlines()) == 2
    full = call(ctx_for(ws), "git_log", {"count": 1, "oneline": False})
    assert full.startswith("commit ") and "Author: T <t@example.com>" in full
    messages = [line.strip() for line in full.splitlines() if line.startswith("    ")]
    assert messages == ["commit 2"]


@pytest.mark.parametrize(
    ("count", "match"),
    [(0, "positive integer"), (501, "at most 500"), (2.5, "integer"), (True, "integer")],
)
def test_log_count_must_be_a_sensible_integer(tmp_path: Path, count: object, match: str) -> None:
    with pytest.raises(ToolError, match=match):
        call(ctx_for(git_repo(tmp_path)), "git_log", {"count": count})


def test_log_of_a_repository_without_commits(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    git(ws, "init", "-q")
    assert call(ctx_for(ws), "git_log", {}) == "No commits yet."


# --- git_branch -----------------------------------------------------------------------


def test_branch_create_switches_to_the_new_branch(tmp_path: Path) -> None:
    ws = git_repo(tmp_path)
    out = call(ctx_for(ws), "git_branch", {"action": "create", "name": "feature/x"})
    assert out == "Created branch 'feature/x' and switched to it."
    assert git(ws, "symbolic-ref", "--short", "HEAD") == "feature/x\n"


def test_branch_list_marks_the_current_one(tmp_path: Path) -> None:
    ws = git_repo(tmp_path)
    git(ws, "branch", "other")
    assert call(ctx_for(ws), "git_branch", {"action": "list"}) == "* main\n  other\n"


def test_branch_switch(tmp_path: Path) -> None:
    ws = git_repo(tmp_path)
    git(ws, "branch", "other")
    assert call(ctx_for(ws), "git_branch", {"action": "switch", "name": "other"}) == (
        "Switched to branch 'other'."
    )
    assert git(ws, "symbolic-ref", "--short", "HEAD") == "other\n"


def test_branch_switch_to_a_missing_branch_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="does not exist; see the branches with action list"):
        call(ctx_for(git_repo(tmp_path)), "git_branch", {"action": "switch", "name": "nope"})


def test_branch_create_of_an_existing_branch_is_refused(tmp_path: Path) -> None:
    ws = git_repo(tmp_path)
    with pytest.raises(ToolError, match="already exists; switch to it"):
        call(ctx_for(ws), "git_branch", {"action": "create", "name": "main"})


@pytest.mark.parametrize("action", ["create", "switch"])
def test_branch_name_is_required_for_create_and_switch(tmp_path: Path, action: str) -> None:
    with pytest.raises(ToolError, match=f"`name` is required for action {action}"):
        call(ctx_for(git_repo(tmp_path)), "git_branch", {"action": action})


@pytest.mark.parametrize("name", ["-x", "a..b", "bad name", "x.lock", "@{-1}", "HEAD", ""])
def test_bad_branch_names_are_refused_before_git_runs(tmp_path: Path, name: str) -> None:
    ws = git_repo(tmp_path)
    with pytest.raises(ToolError, match=r"Invalid arguments for git_branch: `name`"):
        call(ctx_for(ws), "git_branch", {"action": "create", "name": name})
    assert git(ws, "branch", "--list") == "* main\n"


def test_branch_action_must_be_one_of_three(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="`action` must be one of 'create', 'switch', 'list'"):
        call(ctx_for(git_repo(tmp_path)), "git_branch", {"action": "delete", "name": "x"})


# --- git_commit -----------------------------------------------------------------------


def test_commit_of_everything_includes_untracked_files(tmp_path: Path) -> None:
    ws = git_repo(tmp_path)
    (ws / "README.md").write_text("hello\nworld\n")
    (ws / "new.py").write_text("a = 1\nb = 2\n")
    out = call(ctx_for(ws), "git_commit", {"message": "Add new.py"})
    short = git(ws, "rev-parse", "--short", "HEAD").strip()
    assert out == f"[main {short}] Add new.py\n 2 files changed, 3 insertions(+)"
    assert git(ws, "status", "--porcelain") == ""
    assert git(ws, "show", "--name-only", "--format=", "HEAD") == "README.md\nnew.py\n"


def test_commit_of_given_files_only(tmp_path: Path) -> None:
    ws = git_repo(tmp_path)
    (ws / "README.md").write_text("changed\n")
    (ws / "a.txt").write_text("a\n")
    (ws / "b.txt").write_text("b\n")
    out = call(ctx_for(ws), "git_commit", {"message": "Only a", "files": ["a.txt"]})
    assert "1 file changed, 1 insertion(+)" in out
    assert git(ws, "show", "--name-only", "--format=", "HEAD") == "a.txt\n"
    assert git(ws, "status", "--porcelain") == " M README.md\n?? b.txt\n"


def test_commit_of_given_files_leaves_other_staged_changes_out(tmp_path: Path) -> None:
    """As its preview shows: `files` means those files, whatever else is staged."""
    ws = git_repo(tmp_path)
    (ws / "README.md").write_text("staged earlier\n")
    git(ws, "add", "README.md")
    (ws / "a.txt").write_text("a\n")
    assert commit_preview(ws, ["a.txt"]).files == ["a.txt"]
    call(ctx_for(ws), "git_commit", {"message": "Only a", "files": ["a.txt"]})
    assert git(ws, "show", "--name-only", "--format=", "HEAD") == "a.txt\n"
    assert git(ws, "status", "--porcelain") == "M  README.md\n"


def test_commit_records_a_deletion_of_a_given_file(tmp_path: Path) -> None:
    ws = git_repo(tmp_path)
    (ws / "README.md").unlink()
    out = call(ctx_for(ws), "git_commit", {"message": "Remove", "files": ["README.md"]})
    assert "1 deletion(-)" in out
    assert git(ws, "ls-files") == ""


def test_first_commit_of_a_new_repository(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    git(ws, "init", "-q", "-b", "main")
    (ws / "a.txt").write_text("1\n")
    out = call(ctx_for(ws), "git_commit", {"message": "First"})
    assert out.startswith("[main (root-commit) ") and "1 file changed" in out


def test_nothing_to_commit_is_a_clear_error(tmp_path: Path) -> None:
    ws = git_repo(tmp_path)
    with pytest.raises(ToolError, match="Nothing to commit: the working tree has no changes"):
        call(ctx_for(ws), "git_commit", {"message": "x"})
    (ws / "other.txt").write_text("o\n")
    with pytest.raises(ToolError, match="Nothing to commit: the given files have no changes"):
        call(ctx_for(ws), "git_commit", {"message": "x", "files": ["README.md"]})


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ({"message": ""}, "`message` must be a non-empty string"),
        ({"message": "   "}, "`message` is blank"),
        ({}, "missing required argument `message`"),
        ({"message": "m", "files": ["../ws-evil/secret.txt"]}, "outside the workspace"),
        ({"message": "m", "files": [".git/config"]}, r"inside \.git"),
        ({"message": "m", "files": ["missing.txt"]}, "did not match"),
    ],
)
def test_commit_errors(tmp_path: Path, args: dict[str, Any], match: str) -> None:
    ws = git_repo(tmp_path)
    (ws / "README.md").write_text("changed\n")
    with pytest.raises(ToolError, match=match):
        call(ctx_for(ws), "git_commit", args)
    assert git(ws, "rev-list", "--count", "HEAD") == "1\n"


def test_identity_comes_from_the_context_not_any_git_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = git_repo(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = Global Person\n\temail = g@example.com\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Env Person")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "env@example.com")
    git(ws, "config", "user.name", "Repo Person")
    git(ws, "config", "user.email", "repo@example.com")
    (ws / "a.txt").write_text("a\n")
    ctx = ctx_for(ws, git_author=("Agent Smith", "agent@agentweb.test"))
    call(ctx, "git_commit", {"message": "Who"})
    who = git(ws, "log", "-1", "--format=%an|%ae|%cn|%ce")
    assert who == "Agent Smith|agent@agentweb.test|Agent Smith|agent@agentweb.test\n"


def test_default_identity_is_agentweb(tmp_path: Path) -> None:
    ws = git_repo(tmp_path)
    (ws / "a.txt").write_text("a\n")
    call(ctx_for(ws), "git_commit", {"message": "m"})
    assert git(ws, "log", "-1", "--format=%an <%ae>") == "agentweb <agentweb@localhost>\n"


def test_session_trailer(tmp_path: Path) -> None:
    ws = git_repo(tmp_path)
    (ws / "a.txt").write_text("a\n")
    call(ctx_for(ws, session_id=42), "git_commit", {"message": "Subject\n\nBody text."})
    assert head_message(ws) == "Subject\n\nBody text.\n\nAgentweb-Session: 42\n\n"
    trailers = git(ws, "log", "-1", "--format=%(trailers:key=Agentweb-Session,valueonly)")
    assert trailers.strip() == "42"


def test_session_trailer_joins_an_existing_trailer_block(tmp_path: Path) -> None:
    ws = git_repo(tmp_path)
    (ws / "a.txt").write_text("a\n")
    message = "Subject\n\nCo-authored-by: A <a@example.com>"
    call(ctx_for(ws, session_id=7), "git_commit", {"message": message})
    assert head_message(ws) == f"{message}\nAgentweb-Session: 7\n\n"


def test_no_trailer_without_a_session(tmp_path: Path) -> None:
    ws = git_repo(tmp_path)
    (ws / "a.txt").write_text("a\n")
    call(ctx_for(ws), "git_commit", {"message": "# not a comment"})
    assert head_message(ws) == "# not a comment\n\n"


def test_commit_on_a_detached_head(tmp_path: Path) -> None:
    ws = git_repo(tmp_path)
    git(ws, "checkout", "-q", "--detach")
    (ws / "a.txt").write_text("a\n")
    assert call(ctx_for(ws), "git_commit", {"message": "m"}).startswith("[detached HEAD ")


# --- registry -------------------------------------------------------------------------


def test_read_only_git_tools_are_cached_and_git_writers_clear_the_cache(tmp_path: Path) -> None:
    for name in ("git_status", "git_diff", "git_log"):
        assert engine.cache_key(name, {}, tmp_path) is not None, name
    for name in ("git_commit", "git_branch", "create_pull_request"):
        assert engine.cache_key(name, {}, tmp_path) is None, name
        assert engine.invalidation_for(name, {}, tmp_path).everything, name
