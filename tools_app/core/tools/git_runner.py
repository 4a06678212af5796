"""Hardened git execution, the repository handle, and `commit_preview`.

Git is a code-execution channel: a repository's config can name hooks, an fsmonitor,
pagers, external diff and textconv programs, clean/smudge filters, credential helpers and
ssh commands, and a checkout, status or diff will run them. Every git process agentweb
starts goes through `_execute`, which:

* passes `HARDENING` (`-c` options that switch each of those off; child git processes,
  a local `receive-pack` included, inherit them through GIT_CONFIG_PARAMETERS);
* neutralises every filter driver the repository's config defines (`filter_overrides`);
  the driver names come from the config, not from `.gitattributes`, because only a
  configured driver has a command to run, whichever attributes file names it;
* builds the environment from scratch (`git_env`): no inherited GIT_* variable, no
  system or global config, a private empty HOME, no prompts, no pager, no editor;
* pins GIT_DIR and GIT_WORK_TREE to the workspace, so neither `core.worktree` nor a
  missing `.git` can make git work on another directory.

GitPython is used where it adds something: `open_repo` gives a `git.Repo` (branch and
HEAD state are read in-process, without running git) whose command wrapper
`HardenedGit` sends every command, `repo.git.push(...)` included, through `_execute`.
GitPython's own `Git.execute` starts from `os.environ` and cannot unset inherited
variables, so it is replaced rather than configured with `update_environment`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import git as gitpython

from tools_app.core.tools.errors import ToolError
from tools_app.core.tools.git_env import git_env as git_env  # re-exported: callers build on it
from tools_app.core.tools.git_env import private_home
from tools_app.core.tools.paths import (
    is_inside_git_dir,
    protected_match,
    relative_to_workspace,
    resolve_path,
)

GIT_TIMEOUT = 120.0
MAX_PREVIEW_DIFF = 5 * 1024 * 1024
# Repository config must never make git run code, prompt, or hide changes.
HARDENING = (
    "--no-pager",
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.fsmonitor=false",
    "-c", "diff.external=",
    "-c", "core.pager=cat",
    "-c", "core.askPass=",
    "-c", "core.sshCommand=ssh",
    "-c", "credential.helper=",
    "-c", "protocol.ext.allow=never",
    "-c", "commit.gpgSign=false",
    "-c", "tag.gpgSign=false",
    "-c", "push.gpgSign=false",
    "-c", "log.showSignature=false",
    "-c", "submodule.recurse=false",
    "-c", "push.recurseSubmodules=no",
    "-c", "diff.ignoreSubmodules=dirty",
    "-c", "gc.auto=0",
    "-c", "maintenance.auto=false",
    "-c", "color.ui=false",
    "-c", "column.ui=never",
    "-c", "diff.noprefix=false",
    "-c", "diff.mnemonicPrefix=false",
    "-c", "diff.relative=false",
    "-c", "core.quotePath=true",
)  # fmt: skip
# Options for every command that may print a diff: no external diff, no textconv.
NO_DIFF_PROGRAMS = ("--no-ext-diff", "--no-textconv", "--no-color")


@dataclass(frozen=True)
class CommitPreview:
    """The diff a commit would record, its stat, its changed lines and its files.

    `tree` is the tree object the commit would record and `base` the commit it would
    follow (None in a repository without commits): `git_commit` records exactly this
    tree on exactly this base, so what a reviewer saw is what is committed.
    """

    diff: str
    stat: str
    changed_lines: int
    files: list[str]
    tree: str
    base: str | None
    # Secret files the commit records whose content diff and stat leave out.
    left_out: list[str] = field(default_factory=list)


def run_git(workspace: Path, args: list[str], env: dict[str, str] | None = None) -> str:
    """Run one hardened git command in the workspace; a failure becomes a ToolError."""
    done = _execute(workspace, args, env=env)
    if done.returncode != 0:
        raise ToolError(f"git {args[0]} failed: {_text(done.stderr).strip()}")
    return _text(done.stdout)


def git_output(workspace: Path, args: list[str]) -> str | None:
    """Stdout of a hardened git command, or None when it fails (a missing ref or key)."""
    done = _execute(workspace, args)
    return _text(done.stdout) if done.returncode == 0 else None


def git_succeeds(workspace: Path, args: list[str], env: dict[str, str] | None = None) -> bool:
    """Whether a hardened git command exits 0 (for `--quiet`/`--verify` style checks)."""
    return _execute(workspace, args, env=env).returncode == 0


def _execute(
    workspace: Path,
    args: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    config: Sequence[tuple[str, str]] = (),
    timeout: float = GIT_TIMEOUT,
) -> subprocess.CompletedProcess[bytes]:
    """The one place a git process starts: hardened options, scrubbed env, pinned repo."""
    root = Path(os.path.realpath(workspace))
    full_env = _repo_env(root, env or git_env())
    pairs = [*filter_overrides(root, full_env), *config]
    full_env.update(config_env(pairs))
    try:
        return subprocess.run(
            ["git", *HARDENING, *args],
            cwd=root,
            env=full_env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ToolError(f"git {args[0]} took longer than {timeout:g} s.") from None


def _repo_env(root: Path, env: dict[str, str]) -> dict[str, str]:
    """Pin git to the workspace's own repository (no discovery upwards, no core.worktree)."""
    if not (root / ".git").exists():
        raise ToolError(
            "The workspace is not a git repository (no .git at its root); "
            "run `git init` with run_command first."
        )
    pinned = dict(env)
    pinned.setdefault("GIT_DIR", str(root / ".git"))
    pinned.setdefault("GIT_WORK_TREE", str(root))
    return pinned


def filter_overrides(root: Path, env: dict[str, str]) -> list[tuple[str, str]]:
    """Config pairs that empty every filter driver the repository config defines.

    An empty clean/smudge/process command means "no filter" to git, and
    `required=false` keeps a filtered file from failing the command.
    """
    listing = subprocess.run(
        ["git", *HARDENING, "config", "--null", "--get-regexp", r"^filter\."],
        cwd=root, env=env, stdin=subprocess.DEVNULL, capture_output=True,
        timeout=GIT_TIMEOUT, check=False,
    )  # fmt: skip
    names: list[str] = []
    for record in _text(listing.stdout).split("\0"):
        key = record.split("\n", 1)[0]
        driver, dot, _ = key[len("filter.") :].rpartition(".")
        if dot and driver and driver not in names:
            names.append(driver)
    return [
        (f"filter.{name}.{var}", value)
        for name in names
        for var, value in (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false"))
    ]


def config_env(pairs: Sequence[tuple[str, str]]) -> dict[str, str]:
    """Config as GIT_CONFIG_COUNT/KEY/VALUE variables: any subsection name survives
    (a `-c` option would split at its first `=`), and values stay out of argv."""
    env = {"GIT_CONFIG_COUNT": str(len(pairs))} if pairs else {}
    for i, (key, value) in enumerate(pairs):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    return env


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


# --- GitPython ------------------------------------------------------------------------


class HardenedGit(gitpython.Git):
    """GitPython's command wrapper, executing through `_execute`.

    `config` holds extra config pairs for this wrapper's commands (a push's auth header);
    they travel in the environment, never in argv or in an error message. `extra_env`
    adds variables (GIT_ALLOW_PROTOCOL for a push) to the scrubbed environment; GitPython's
    `update_environment` is not used because Repo() fills it from inherited GIT_* variables.
    """

    def __init__(self, workspace: str | Path) -> None:
        super().__init__(workspace)
        self.workspace = Path(workspace)
        self.config: list[tuple[str, str]] = []
        self.extra_env: dict[str, str] = {}
        self.timeout = GIT_TIMEOUT

    def execute(self, command: Any, *args: Any, **kwargs: Any) -> Any:
        """Run GitPython's built command (its `git` prefix dropped) and return stdout."""
        argv = [str(part) for part in command][1:]
        env = git_env(self.extra_env)
        done = _execute(self.workspace, argv, env=env, config=self.config, timeout=self.timeout)
        if done.returncode != 0:
            raise gitpython.GitCommandError(["git", *argv[:1]], done.returncode, done.stderr)
        return _text(done.stdout).rstrip("\n")


class HardenedRepo(gitpython.Repo):
    """A `git.Repo` whose commands are hardened. Only refs are read through it (in-process);
    its object database is never used, so its `cat-file` processes never start."""

    GitCommandWrapperType = HardenedGit  # type: ignore[assignment]

    def __init__(self, workspace: Path) -> None:
        super().__init__(workspace)
        # Repo.__init__ may take its working tree from core.worktree or GIT_WORK_TREE;
        # commands run in the workspace itself.
        self.hardened_git = HardenedGit(workspace)
        self.git = self.hardened_git


def open_repo(workspace: Path) -> HardenedRepo:
    """The workspace's repository, or a ToolError saying how to make one."""
    root = Path(os.path.realpath(workspace))
    if not (root / ".git").exists():
        _repo_env(root, {})  # raises the explanatory error
    try:
        return HardenedRepo(root)
    except (gitpython.InvalidGitRepositoryError, gitpython.NoSuchPathError):
        raise ToolError(
            "The workspace's .git is not a usable git repository; "
            "inspect it with run_command (`git status`)."
        ) from None


def current_branch(repo: HardenedRepo) -> str | None:
    """The checked-out branch, or None on a detached HEAD."""
    if repo.head.is_detached:
        return None
    return repo.active_branch.name


def check_branch_name(name: str, argument: str = "name") -> str:
    """`name` when it is a valid branch name (git check-ref-format --branch), else why not.

    Runs outside any repository (an empty directory of our own), so it can check a name
    before a call reaches a workspace; `@{-N}` shorthands are refused, not expanded.
    """
    if name.startswith("-") or "@{" in name or name == "HEAD" or not name.strip():
        raise ToolError(f"`{argument}` {name!r} is not a valid branch name; {_NAME_HINT}")
    home = private_home()
    env = git_env({"GIT_CEILING_DIRECTORIES": os.path.dirname(home)})
    done = subprocess.run(
        ["git", *HARDENING, "check-ref-format", "--branch", name],
        cwd=home, env=env, stdin=subprocess.DEVNULL, capture_output=True,
        timeout=GIT_TIMEOUT, check=False,
    )  # fmt: skip
    if done.returncode != 0 or _text(done.stdout).strip() != name:
        raise ToolError(f"`{argument}` {name!r} is not a valid branch name; {_NAME_HINT}")
    return name


_NAME_HINT = (
    "use letters, digits, '-', '_', '.' and '/' (no spaces, no '..', not starting "
    "with '-'), e.g. feature/add-login."
)


# --- commit_preview ---------------------------------------------------------------------


def commit_preview(
    workspace: Path, files: list[str] | None, secret_paths: Sequence[str] = ()
) -> CommitPreview:
    """What `git_commit` would record: the given files' changes, or every change.

    Untracked files count (a commit of everything includes them). The changes are
    staged into a scratch index, so the real index is never touched. With `files`,
    the scratch index starts from HEAD, as `git commit --only` does: changes staged
    earlier for other paths are not part of that commit. Files matching `secret_paths`
    are named but their content is left out of the diff and the stat.
    """
    paths = repo_paths(workspace, files)
    head = head_commit(workspace)
    with tempfile.TemporaryDirectory(prefix="agentweb-index-") as scratch:
        env = git_env({"GIT_INDEX_FILE": str(Path(scratch) / "index")})
        base = head or empty_tree(workspace)
        _seed_index(workspace, env, base if paths else None)
        run_git(workspace, ["add", "-A", "--", *(paths or ["."])], env)
        tree = run_git(workspace, ["write-tree"], env).strip()
    # The diff of two trees: it cannot depend on any index or stat data.
    trees = ["diff-tree", "-r", "-M", *NO_DIFF_PROGRAMS]
    left_out = secret_changes(workspace, [*trees, base, tree], secret_paths)
    diff = diff_without(workspace, [*trees, "-p", base, tree], left_out)
    stat = diff_without(workspace, [*trees, "--stat", base, tree], left_out)
    if left_out:
        stat += left_out_note(left_out) + "\n"
    numstat = run_git(workspace, [*trees, "--numstat", "-z", base, tree, "--"])
    changed, changed_files = _parse_numstat(numstat)
    return CommitPreview(cap_diff(diff), stat, changed, changed_files, tree, head, left_out)


def secret_changes(workspace: Path, diff_args: list[str], patterns: Sequence[str]) -> list[str]:
    """The paths a diff (`diff_args`, no pathspec) would show that match `patterns`."""
    if not patterns:
        return []
    names = run_git(workspace, [*diff_args, "--name-only", "-z", "--no-renames", "--"])
    return sorted({n for n in names.split("\0") if n and protected_match(patterns, n)})


def diff_without(workspace: Path, diff_args: list[str], left_out: Sequence[str]) -> str:
    """`git <diff_args>` with the paths `left_out` excluded (exact paths, no globbing)."""
    if not left_out:
        return run_git(workspace, [*diff_args, "--"])
    env = git_env()
    del env["GIT_LITERAL_PATHSPECS"]  # the exclusions are magic pathspecs, each literal
    specs = [":(top)", *(f":(top,exclude,literal){path}" for path in left_out)]
    return run_git(workspace, [*diff_args, "--", *specs], env)


def left_out_note(left_out: Sequence[str]) -> str:
    """What a diff says when secret files were left out of it (their names only)."""
    if not left_out:
        return ""
    files = "file" if len(left_out) == 1 else "files"
    return f"[{len(left_out)} secret {files} left out: {', '.join(left_out)}]"


def tracked_secrets(workspace: Path, patterns: Sequence[str]) -> list[str]:
    """The tracked files matching `patterns`: they are in git's objects, which every
    command and git tool can read, so no sandbox can hide them. None outside a repo."""
    root = Path(os.path.realpath(workspace))
    if not patterns or not (root / ".git").exists():
        return []
    names = git_output(root, ["ls-files", "-z", "--cached"]) or ""
    return sorted({n for n in names.split("\0") if n and protected_match(patterns, n)})


def tracked_secrets_note(paths: Sequence[str], shown: int = 10) -> str:
    """A sentence for a person: which secret paths the repository tracks."""
    if not paths:
        return ""
    listed = ", ".join(paths[:shown]) + (
        f" and {len(paths) - shown} more" if len(paths) > shown else ""
    )
    return (
        f"This repository tracks {len(paths)} secret path{'s' if len(paths) > 1 else ''} "
        f"({listed}): what git has recorded stays readable to every command and git tool; "
        "the sandbox cannot hide it. Rotate those secrets and remove them from the history."
    )


def cap_diff(diff: str) -> str:
    if len(diff) > MAX_PREVIEW_DIFF:
        return diff[:MAX_PREVIEW_DIFF] + "\n[diff truncated at 5 MB]\n"
    return diff


def _seed_index(workspace: Path, env: dict[str, str], tree: str | None) -> None:
    """Fill the scratch index: from a tree (HEAD), or as a copy of the real index.

    The copy keeps the index file's modification time: git treats an entry whose file
    changed in the same second as the index was written as "racy" and compares its
    content, and a copy stamped "now" would hide such a same-size change.
    """
    if tree is not None:
        run_git(workspace, ["read-tree", tree], env)
        return
    index = Path(run_git(workspace, ["rev-parse", "--git-path", "index"]).strip())
    if not index.is_absolute():
        index = Path(os.path.realpath(workspace)) / index
    if index.is_file():
        shutil.copy2(index, env["GIT_INDEX_FILE"])


def repo_paths(workspace: Path, files: list[str] | None) -> list[str]:
    """Workspace-relative paths, each checked to be inside the workspace and not in .git."""
    paths: list[str] = []
    for name in files or []:
        resolved = resolve_path(workspace, name, argument="files")
        if is_inside_git_dir(workspace, resolved):
            raise ToolError(f"{name} is inside .git; commit files of the working tree.")
        paths.append(relative_to_workspace(workspace, resolved))
    return paths


def head_commit(workspace: Path) -> str | None:
    """HEAD's commit id, or None in a repository without commits."""
    out = git_output(workspace, ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"])
    return out.strip() if out else None


def empty_tree(workspace: Path) -> str:
    """The id of the empty tree (what a first commit is compared with)."""
    return run_git(workspace, ["hash-object", "-t", "tree", os.devnull]).strip()


def _parse_numstat(numstat: str) -> tuple[int, list[str]]:
    """Sum added + removed lines; a binary file counts as one changed line."""
    changed = 0
    files: list[str] = []
    records = numstat.split("\0")
    i = 0
    while i < len(records) and records[i]:
        added, removed, path = records[i].split("\t", 2)
        if path == "":  # a rename: the old and new paths follow as separate records
            path = records[i + 2]
            i += 2
        changed += 1 if added == "-" else int(added) + int(removed)
        files.append(path)
        i += 1
    return changed, files


def ignored_paths(workspace: Path, paths: Sequence[str]) -> set[str]:
    """Which of `paths` git ignores (they count no changed lines); none outside a repo.

    Asked of the workspace, so the ignore rules are those from before a command (its
    own `.gitignore` edits sit in its upper layer), and a path git tracks is never
    ignored, whatever the ignore files say: `src/` added to `.gitignore` does not make
    50,000 lines written into tracked files under `src/` count none. The paths may not
    exist yet (a command's effect), so each parent directory is asked about as a
    directory (`build/`), or a pattern such as `build/` would never match.
    """
    if not (Path(os.path.realpath(workspace)) / ".git").exists():
        return set()
    asked = sorted({*paths, *(p for path in paths for p in _parent_dirs(path))})
    ignored: set[str] = set()
    env = git_env()
    del env["GIT_LITERAL_PATHSPECS"]  # check-ignore refuses it; it reads plain paths anyway
    for start in range(0, len(asked), 500):
        chunk = asked[start : start + 500]
        # One path a line; an unusual name comes back quoted and so counts (the safe side).
        done = _execute(workspace, ["check-ignore", "--no-index", "--", *chunk], env=env)
        ignored.update(filter(None, _text(done.stdout).split("\n")))
    candidates = [p for p in paths if p in ignored or any(d in ignored for d in _parent_dirs(p))]
    return set(candidates) - _tracked(workspace, candidates)


def _tracked(workspace: Path, paths: Sequence[str]) -> set[str]:
    """Which of `paths` are in the index (literal pathspecs: no globbing)."""
    tracked: set[str] = set()
    for start in range(0, len(paths), 500):
        chunk = list(paths[start : start + 500])
        done = _execute(workspace, ["ls-files", "-z", "--cached", "--", *chunk])
        if done.returncode != 0:
            return set(paths)  # cannot tell: count them all (the safe side)
        tracked.update(filter(None, _text(done.stdout).split("\0")))
    return tracked


def _parent_dirs(path: str) -> list[str]:
    parts = path.split("/")[:-1]
    return ["/".join(parts[: i + 1]) + "/" for i in range(len(parts))]
