"""Gate mode against a second red team (8 December): spellings whose words the proof
misread, and a repository whose own config, attributes and ignore files try to make a
proven command run a program or print a secret. Each hostile setup is shown to work on
the command as the agent sent it, and to do nothing on the command as agentweb narrows
it; the scratch project is looked at afterwards, not the verdict alone."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.unit.gate_scratch import AWS, CANARY_TEXT, CREDENTIALS, KEY, SECRET, Scratch
from tools_app.core.gate import Fence, prove_command
from tools_app.core.policy.defaults import DEFAULT_PROTECTED_PATHS, DEFAULT_SECRET_PATHS

ROOT = "/home/alice/project"
FENCE = Fence(ROOT, DEFAULT_PROTECTED_PATHS, DEFAULT_SECRET_PATHS)

REFUSED = [
    # git takes these values attached only: the next word is an operand or an option
    ("git log -1 --pretty --output=x --format=tformat:x", "`git log --output`"),
    ("git log --pretty --output=.git/config", "`git log --output`"),
    ("git show --pretty HEAD:.env", "`REV:PATH`"),
    ("git show --word-diff :.env", "`REV:PATH`"),
    ("git show -U 7fcc", "names an object by its id"),
    ("git show --unified 7fcc", "names an object by its id"),
    ("git log --format --output=x", "`git log --output`"),
    # `git describe`'s spelling names any object, blobs included
    ("git show x-gad55712", "names an object by its id"),
    ("git diff v1-3-g0123abc", "names an object by its id"),
    # prints the staged diff, unnarrowed
    ("git status -v", "`git status -v`"),
    ("git status --verbose", "`git status --verbose`"),
    # GNU tail's old `+Nf` spelling follows the file forever
    ("tail +f README.md", "`tail +f`"),
    ("tail +1f README.md", "`tail +1f`"),
    ("head +5 README.md", "`head +5`"),
    # a signature check runs gpg (`gpg.program` may be the repository's)
    ("git log --format=%GS", "runs gpg"),
    ("git show --pretty=format:%GK", "runs gpg"),
    ("git log --format=%+GS", "runs gpg"),
    ("git log '--format=% G?'", "runs gpg"),
    # a backreference makes a backtracking matcher take forever
    ("grep -E '(.*)(.*)\\2\\1x' README.md", "a backreference"),
    ("grep -e '\\(a\\)\\1' README.md", "a backreference"),
    ("find . -regex '.*\\(.*\\)\\1z'", "a backreference"),
    ("git log --grep='\\(.*\\)\\1'", "a backreference"),
]


@pytest.mark.parametrize(("command", "reason"), REFUSED)
def test_the_red_team_s_spellings_are_refused_naming_why(command: str, reason: str) -> None:
    proof = prove_command(command, ROOT, FENCE)
    assert not proof.proven, proof
    assert reason in proof.reason, proof.reason


@pytest.mark.parametrize(
    "command", ["git log -U3", "git show --pretty=oneline", "git diff --unified=2", "git log -1"]
)
def test_attached_values_still_read(command: str) -> None:
    assert prove_command(command, ROOT, FENCE).proven


def narrowed(scratch: Scratch, command: str) -> str:
    fence = Fence(str(scratch.project), DEFAULT_PROTECTED_PATHS, DEFAULT_SECRET_PATHS)
    proof = prove_command(command, str(scratch.project), fence)
    assert proof.proven, proof.reason
    assert proof.narrowed, "a command gate mode must harden was left as sent"
    return proof.narrowed


def git_config(scratch: Scratch, *settings: str) -> None:
    for setting in settings:
        key, _, value = setting.partition("=")
        subprocess.run(["git", "-C", str(scratch.project), "config", key, value], check=True)


def ran(scratch: Scratch) -> Path:
    """The file the hostile program writes when it runs (outside the project)."""
    return scratch.root / "PWNED"


@pytest.mark.parametrize(
    ("command", "settings", "attributes"),
    [
        ("git status --short", ["core.fsmonitor=touch {pwned}; false"], ""),
        ("git diff --stat", ["core.fsmonitor=touch {pwned}; false"], ""),
        ("git ls-files -m", ["core.fsmonitor=touch {pwned}; false"], ""),
        ("git diff", ["diff.external=touch {pwned}; false"], ""),
        ("git diff", ["diff.evil.textconv=touch {pwned}; cat"], "*.py diff=evil\n"),
        ("git log -p -1", ["diff.evil.textconv=touch {pwned}; cat"], "*.md diff=evil\n"),
        ("git diff", ["diff.evil.command=touch {pwned}; false"], "*.py diff=evil\n"),
        ("git blame README.md", ["diff.evil.textconv=touch {pwned}; cat"], "*.md diff=evil\n"),
        ("git status --short", ["core.hooksPath={hooks}"], ""),
    ],
)
def test_a_repository_s_own_config_runs_nothing_through_a_proven_git(
    scratch: Scratch, command: str, settings: list[str], attributes: str
) -> None:
    hooks = scratch.root / "hooks"
    hooks.mkdir()
    hook = hooks / "post-index-change"
    hook.write_text(f"#!/bin/sh\ntouch {ran(scratch)}\n")
    hook.chmod(0o755)
    values = {"pwned": str(ran(scratch)), "hooks": str(hooks)}
    git_config(scratch, *(s.format(**values) for s in settings))
    if attributes:
        (scratch.project / ".git/info/attributes").write_text(attributes)
    (scratch.project / "README.md").write_text("# Demo, changed\n")
    later = (scratch.project / "aws_credentials.txt").stat().st_mtime + 60
    os.utime(scratch.project / "aws_credentials.txt", (later, later))  # git status refreshes
    scratch.run(command)
    assert ran(scratch).exists(), "the hostile setup did not run on the command as sent"
    ran(scratch).unlink()
    scratch.run(narrowed(scratch, command))
    assert not ran(scratch).exists(), f"{command} ran the repository's program"


def test_a_repository_s_ignore_file_brings_no_secret_or_git_file_back_to_rg(
    scratch: Scratch,
) -> None:
    (scratch.project / ".ignore").write_text("!.env\n!.git/\n")
    git_config(scratch, f"remote.origin.url=https://user:{CREDENTIALS}@example.invalid/r")
    scratch.before = scratch.snapshot()
    for command, leaked in (
        ("rg -e SECRET -- .", SECRET),
        ("rg canary -- .", None),
        ("rg -i url", CREDENTIALS),
    ):
        if leaked is not None:
            assert leaked in scratch.run(command), command
        output = scratch.run(narrowed(scratch, command))
        assert scratch.harm(output) == [], (command, output)


def plant_links(scratch: Scratch) -> None:
    """What a cloned repository or an approved command could leave in the project."""
    project = scratch.project
    (scratch.home / ".ssh/config").write_text(f"IdentityFile {KEY}\n")
    (project / "notes.txt").symlink_to(".env")
    (project / "keys").symlink_to(scratch.home / ".ssh")
    (project / "docs").mkdir()
    (project / "docs/readme.txt").symlink_to(scratch.home / ".aws/credentials")
    (project / "zero.txt").symlink_to("/dev/zero")
    os.mkfifo(project / "pipe.txt")
    scratch.before = scratch.snapshot()


@pytest.mark.parametrize(
    ("command", "as_sent"),
    [
        ("cat notes.txt", SECRET),
        ("grep -a SECRET notes.txt", SECRET),
        ("cd keys && cat config", KEY),
        ("rg -e KEY keys", KEY),
        ("ls -la keys/", "id_rsa"),
        ("cat docs/readme.txt", AWS),
        ("cat src/../keys/config", KEY),
        ("wc -c zero.txt", "hangs"),
        ("cat pipe.txt", "hangs"),
    ],
)
def test_a_link_or_a_special_file_in_the_project_stops_a_proven_command(
    scratch: Scratch, command: str, as_sent: str
) -> None:
    """The proof reads names; the command it narrows first checks, on the agent's machine,
    that no path it walks through is a symbolic link or a device, FIFO or socket."""
    plant_links(scratch)
    if as_sent == "hangs":
        with pytest.raises(subprocess.TimeoutExpired):
            scratch.run(command, timeout=2)
    else:
        assert as_sent in scratch.run(command), "the planted link did not work as sent"
    output = scratch.run(narrowed(scratch, command), timeout=5)
    assert scratch.harm(output) == [], output
    assert "is a symbolic link or a special file" in output, output
    assert "id_rsa" not in output


def test_plain_files_and_directories_pass_the_check(scratch: Scratch) -> None:
    plant_links(scratch)
    output = scratch.run(narrowed(scratch, "cat README.md && cd src && wc -l app.py"))
    assert "# Demo" in output and "2 app.py" in output, output
    assert scratch.harm(output) == []


@pytest.mark.parametrize("shell", ["bash", "zsh", "sh"])
def test_the_check_is_the_same_in_the_agents_shells(scratch: Scratch, shell: str) -> None:
    """Claude Code runs commands in the user's shell (zsh on a Mac), Codex in bash or sh."""
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed here")
    plant_links(scratch)

    def run(command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [shell, "-c", narrowed(scratch, command)], cwd=scratch.project,
            capture_output=True, text=True, timeout=10, check=False,
        )  # fmt: skip

    plain, linked = run("cat README.md"), run("cat notes.txt")
    assert (plain.returncode, plain.stdout) == (0, "# Demo\nfoo in the readme\n")
    assert linked.returncode != 0 and SECRET not in linked.stdout + linked.stderr
    assert "notes.txt is a symbolic link or a special file" in linked.stderr


def test_git_stays_in_the_session_s_directory_and_its_repository(scratch: Scratch) -> None:
    """A repository whose config moves its work tree (`core.worktree`) or a directory
    inside a bigger repository (a dotfiles home) would let git read outside; a
    blame.ignoreRevsFile prints a file's first line; a directory named like a secret
    holds secrets too; CDPATH takes `cd` elsewhere."""
    kube = scratch.home / ".kube"
    kube.mkdir()
    (kube / "config").write_text(f"token: {CANARY_TEXT}\n")
    project = scratch.project
    (project / "deploy/.env").mkdir(parents=True)
    (project / "deploy/.env/prod").write_text("A=1\n")
    subprocess.run(["git", "-C", str(project), "add", "deploy"], check=True)
    (project / "deploy/.env/prod").write_text(f"A={SECRET}\n")
    git_config(scratch, f"blame.ignoreRevsFile={scratch.home}/.ssh/id_rsa")
    scratch.before = scratch.snapshot()
    for command in ("git diff deploy", "git blame README.md", "git log -p -1"):
        output = scratch.run(narrowed(scratch, command))
        assert scratch.harm(output) == [], (command, output)
    assert KEY in scratch.run("git blame README.md")
    git_config(scratch, f"core.worktree={scratch.home}")
    scratch.before = scratch.snapshot()
    assert "kube" in scratch.run("git status --short --untracked-files=all")
    output = scratch.run(narrowed(scratch, "git status --short --untracked-files=all"))
    assert ".kube" not in output and scratch.harm(output) == [], output


def test_a_directory_inside_a_bigger_repository_gives_git_nothing_outside(
    scratch: Scratch,
) -> None:
    home = scratch.home
    subprocess.run(["git", "-C", str(home), "init", "-q"], check=True)
    (home / "work").mkdir()
    (home / "work/notes.md").write_text("notes\n")
    fence = Fence(str(home / "work"), DEFAULT_PROTECTED_PATHS, DEFAULT_SECRET_PATHS)
    proof = prove_command("git status --short", str(home / "work"), fence)

    def run(command: str) -> str:
        done = subprocess.run(
            ["bash", "-c", command], cwd=home / "work", capture_output=True, text=True,
            env={"HOME": str(home), "PATH": "/usr/bin:/bin", "CDPATH": str(home)}, check=False,
        )  # fmt: skip
        return done.stdout + done.stderr

    assert ".ssh/" in run("git status --short")
    assert ".ssh" not in run(proof.narrowed)
    cd_away = prove_command("cd .ssh && cat known_hosts", str(home / "work"), fence)
    assert cd_away.proven
    (home / ".ssh/known_hosts").write_text(f"{KEY}\n")
    assert KEY in run("cd .ssh && cat known_hosts")  # CDPATH finds ~/.ssh
    assert KEY not in run(cd_away.narrowed)
