"""A hostile repository: its config names hooks, an fsmonitor, a pager, an external diff,
a textconv driver, clean/smudge/process filters, ssh and credential programs and a
receive-pack command. No git tool may run any of them, and results stay correct."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.unit.helpers import MemoryStore, call, git, git_repo
from tools_app.core.tools.base import ToolContext
from tools_app.core.tools.forge import ForgeSettings
from tools_app.core.tools.git_runner import commit_preview, run_git
from tools_app.core.tools.pull_requests import CreatePullRequestArgs, pull_request_preview

HOOKS = (
    "pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "pre-push",
    "post-checkout", "reference-transaction", "pre-auto-gc", "post-index-change",
    "pre-receive", "update", "post-receive", "post-update",
)  # fmt: skip


@dataclass
class Hostile:
    ws: Path
    marks: Path
    origin: Path

    def ran(self) -> list[str]:
        return sorted(p.name for p in self.marks.iterdir())


def _script(tmp_path: Path, marks: Path, name: str, tail: str = "cat") -> str:
    path = tmp_path / "bin" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(f'#!/bin/sh\ntouch "{marks}/{name}"\n{tail}\n')
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def hostile(tmp_path: Path) -> Hostile:
    ws = git_repo(tmp_path)
    (ws / ".gitattributes").write_text("*.txt filter=evil diff=tc\n*.dat filter=proc\n")
    (ws / "notes.txt").write_text("one\n")
    git(ws, "add", ".")
    git(ws, "commit", "-q", "-m", "attributes")
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True)
    git(ws, "remote", "add", "origin", str(origin))
    git(ws, "push", "-q", "origin", "main")
    marks = tmp_path / "marks"
    marks.mkdir()
    _arm(tmp_path, ws, origin, marks)
    return Hostile(ws, marks, origin)


def _arm(tmp_path: Path, ws: Path, origin: Path, marks: Path) -> None:
    """Point every command-running setting of both repositories at a marker script."""
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for hook in HOOKS:
        (hooks / hook).write_text(f'#!/bin/sh\ntouch "{marks}/hook-{hook}"\n')
        (hooks / hook).chmod(0o755)
        (origin / "hooks" / hook).write_text(f'#!/bin/sh\ntouch "{marks}/origin-{hook}"\n')
        (origin / "hooks" / hook).chmod(0o755)

    def s(name: str, tail: str = "cat") -> str:
        return _script(tmp_path, marks, name, tail)

    settings = {
        "core.hooksPath": str(hooks),
        "core.fsmonitor": s("fsmonitor", "exit 1"),
        "core.pager": s("pager"),
        "core.sshCommand": s("ssh"),
        "core.askPass": s("askpass", "echo secret"),
        "credential.helper": s("credential"),
        "diff.external": s("external-diff"),
        "diff.tc.textconv": s("textconv"),
        "diff.tc.command": s("diff-driver"),
        "filter.evil.clean": s("clean"),
        "filter.evil.smudge": s("smudge"),
        "filter.evil.required": "true",
        "filter.proc.process": s("process", "exit 1"),
        "log.showSignature": "true",
        "gpg.program": s("gpg"),
        "commit.gpgSign": "true",
        "remote.origin.receivepack": s("receive-pack", 'exec git-receive-pack "$@"'),
        "include.path": str(tmp_path / "included.config"),
    }
    for key, value in settings.items():
        git(ws, "config", key, value)
    # A filter defined in an included file is neutralised too.
    (tmp_path / "included.config").write_text(f'[filter "inc"]\n\tclean = {s("inc-clean")}\n')
    (ws / ".gitattributes").write_text(
        "*.txt filter=evil diff=tc\n*.dat filter=proc\n*.inc filter=inc\n"
    )


def test_read_tools_run_nothing_and_stay_correct(hostile: Hostile) -> None:
    ws = hostile.ws
    ctx = ToolContext(workspace=ws)
    (ws / "notes.txt").write_text("one\ntwo\n")
    (ws / "data.dat").write_text("d\n")
    (ws / "x.inc").write_text("i\n")
    assert call(ctx, "git_status", {}) == " M .gitattributes\n M notes.txt\n?? data.dat\n?? x.inc\n"
    diff = call(ctx, "git_diff", {})
    assert "--- a/notes.txt\n+++ b/notes.txt" in diff and "+two" in diff
    assert call(ctx, "git_diff", {"staged": True}) == "No staged changes."
    assert call(ctx, "git_log", {}).splitlines()[0].endswith(" attributes")
    assert "Author: T <t@example.com>" in call(ctx, "git_log", {"oneline": False})
    preview = commit_preview(ws, None)
    assert preview.files == [".gitattributes", "data.dat", "notes.txt", "x.inc"]
    assert hostile.ran() == []


def test_writing_tools_run_nothing_and_stay_correct(hostile: Hostile) -> None:
    ws = hostile.ws
    ctx = ToolContext(workspace=ws, session_id=3)
    assert call(ctx, "git_branch", {"action": "create", "name": "feat"}).startswith("Created")
    (ws / "notes.txt").write_text("one\ntwo\n")
    (ws / "data.dat").write_text("d\n")
    (ws / "x.inc").write_text("i\n")
    out = call(ctx, "git_commit", {"message": "Change notes"})
    assert "4 files changed" in out
    assert run_git(ws, ["show", "HEAD:notes.txt"]) == "one\ntwo\n"
    assert call(ctx, "git_branch", {"action": "switch", "name": "main"}).startswith("Switched")
    assert (ws / "notes.txt").read_text() == "one\n"
    assert call(ctx, "git_branch", {"action": "list"}) == "  feat\n* main\n"
    call(ctx, "git_branch", {"action": "switch", "name": "feat"})
    assert hostile.ran() == []


def test_pull_request_preview_and_push_run_nothing(hostile: Hostile) -> None:
    ws = hostile.ws
    store = MemoryStore()
    ctx = ToolContext(workspace=ws, forge=ForgeSettings(local_pull_requests=store))
    call(ctx, "git_branch", {"action": "create", "name": "feat"})
    (ws / "notes.txt").write_text("one\ntwo\n")
    call(ctx, "git_commit", {"message": "Change notes"})
    preview = pull_request_preview(ctx, CreatePullRequestArgs(title="Notes"))
    assert "+two" in preview["diff"] and preview["commits"][0]["subject"] == "Change notes"
    out = call(ctx, "create_pull_request", {"title": "Notes"})
    assert out == "Pull request #1: http://agentweb.test/prs/1"
    pushed = subprocess.run(
        ["git", "--git-dir", str(hostile.origin), "rev-parse", "feat"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert pushed == run_git(ws, ["rev-parse", "HEAD"])
    assert hostile.ran() == []


def test_inherited_git_environment_is_ignored(
    hostile: Hostile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in {
        "GIT_DIR": str(tmp_path / "elsewhere"),
        "GIT_WORK_TREE": str(tmp_path),
        "GIT_INDEX_FILE": str(tmp_path / "other-index"),
        "GIT_EXTERNAL_DIFF": str(tmp_path / "bin" / "external-diff"),
        "GIT_CONFIG_PARAMETERS": "'core.hookspath'='/nonexistent'",
        "GIT_SSH_COMMAND": str(tmp_path / "bin" / "ssh"),
        "GIT_PAGER": str(tmp_path / "bin" / "pager"),
    }.items():
        monkeypatch.setenv(name, value)
    ws = hostile.ws
    (ws / "notes.txt").write_text("changed\n")
    ctx = ToolContext(workspace=ws)
    assert "+changed" in call(ctx, "git_diff", {})
    call(ctx, "git_commit", {"message": "m", "files": ["notes.txt"]})
    assert hostile.ran() == []


def test_a_filter_whose_name_has_an_equals_sign_is_neutralised(tmp_path: Path) -> None:
    """Overrides travel as GIT_CONFIG_KEY/VALUE pairs, which a `-c` option could not carry."""
    ws = git_repo(tmp_path)
    marks = tmp_path / "marks"
    marks.mkdir()
    git(ws, "config", "filter.a=b.clean", _script(tmp_path, marks, "odd-clean"))
    (ws / ".gitattributes").write_text("*.txt filter=a=b\n")
    (ws / "x.txt").write_text("x\n")
    call(ToolContext(workspace=ws), "git_commit", {"message": "m"})
    assert run_git(ws, ["show", "HEAD:x.txt"]) == "x\n"
    assert list(marks.iterdir()) == []


def test_git_home_is_made_once_per_installation_or_removed_at_exit(tmp_path: Path) -> None:
    """With Django, git's empty HOME is AGENTWEB_VAR/git-home, the same for every process;
    a script without Django gets a temporary one that is gone when it exits."""
    script = (
        "import os, sys\n"
        "if sys.argv[1] == 'django':\n"
        "    import django; django.setup()\n"
        "from tools_app.core.tools import git_runner\n"
        "home = git_runner.git_env()['HOME']\n"
        "git_runner.check_branch_name('feature/x')\n"
        "print(home, os.listdir(home))\n"
    )
    env = {**os.environ, "AGENTWEB_VAR": str(tmp_path / "var")}
    root = Path(__file__).resolve().parents[2]
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", script, "django"], cwd=root, env=env,
                              capture_output=True, text=True, check=True)  # fmt: skip
        assert done.stdout.strip() == f"{tmp_path / 'var' / 'git-home'} []", done.stderr
    done = subprocess.run([sys.executable, "-c", script, "plain"], cwd=root, env=env,
                          capture_output=True, text=True, check=True)  # fmt: skip
    home = done.stdout.split()[0]
    assert Path(home).name.startswith("agentweb-git-home-") and not Path(home).exists()
