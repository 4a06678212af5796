"""The git tools of the reference: git_status, git_diff, git_log, git_branch, git_commit.

Every command goes through `git_runner._execute` (hardened; see tools/git_runner.py). git_status,
git_diff and git_log only read; git_commit and git_branch (create, switch) change git
state (what that makes stale is in `tools/catalogue.py`).
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

from tools_app.core.tools import git_runner, secret_files
from tools_app.core.tools.base import (
    MAX_COMMAND_CHARS,
    MAX_NAME_CHARS,
    MAX_PATH_CHARS,
    ToolArgs,
    ToolContext,
)
from tools_app.core.tools.errors import ToolError
from tools_app.core.tools.files import drop_default

MAX_LOG_COUNT = 500
TRAILER_KEY = "Agentweb-Session"
_TRAILER_LINE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*: ")


class GitStatusArgs(ToolArgs):
    pass


class GitDiffArgs(ToolArgs):
    staged: bool = Field(default=False, description="Show only staged changes (default: false).")


class GitLogArgs(ToolArgs):
    count: Annotated[int, Field(ge=1, le=MAX_LOG_COUNT)] = Field(
        default=10, description=f"Number of commits (default: 10, at most {MAX_LOG_COUNT})."
    )
    oneline: bool = Field(default=True, description="One-line format (default: true).")


class GitBranchArgs(ToolArgs):
    action: Literal["create", "switch", "list"] = Field(
        description="Branch operation: create (and switch to it), switch, or list."
    )
    name: Annotated[str, Field(max_length=MAX_NAME_CHARS)] | SkipJsonSchema[None] = Field(
        default=None,
        description="Branch name (required for create/switch).",
        json_schema_extra=drop_default,
    )

    @field_validator("name")
    @classmethod
    def _valid_name(cls, name: str | None) -> str | None:
        if name is None:
            return None
        try:
            return git_runner.check_branch_name(name)
        except ToolError as error:
            raise ValueError(str(error)) from None

    @model_validator(mode="after")
    def _name_when_needed(self) -> GitBranchArgs:
        if self.action != "list" and self.name is None:
            raise ValueError(f"`name` is required for action {self.action}; give the branch name.")
        return self


class GitCommitArgs(ToolArgs):
    message: str = Field(min_length=1, max_length=MAX_COMMAND_CHARS, description="Commit message.")
    files: list[Annotated[str, Field(max_length=MAX_PATH_CHARS)]] | SkipJsonSchema[None] = Field(
        default=None,
        description="Specific files to stage and commit (default: all changed files, "
        "untracked ones included).",
        json_schema_extra=drop_default,
    )


# --- read-only tools --------------------------------------------------------------------


def git_status(ctx: ToolContext, args: GitStatusArgs) -> str:
    """`git status --short`; dirty submodule work trees are not scanned (that would run
    git with the submodule's own config)."""
    out = git_runner.run_git(ctx.workspace, ["status", "--short", "--ignore-submodules=dirty"])
    return out if out.strip() else "Working tree clean"


def git_diff(ctx: ToolContext, args: GitDiffArgs) -> str:
    """`git diff` or `git diff --staged`, with no external diff or textconv program.

    Changed files matching the policy's `secret_paths` are left out, and named."""
    staged = ["--staged"] if args.staged else []
    command = ["diff", *staged, *git_runner.NO_DIFF_PROGRAMS, "--ignore-submodules=dirty"]
    left_out = git_runner.secret_changes(ctx.workspace, command, ctx.sandbox.secret_paths)
    out = git_runner.diff_without(ctx.workspace, command, left_out)
    note = git_runner.left_out_note(left_out)
    if out:
        return git_runner.cap_diff(out) + (f"\n{note}" if note else "")
    if note:
        return f"No other changes. {note}"
    if args.staged:
        return "No staged changes."
    return "No unstaged changes (untracked files are not part of git diff; see git_status)."


def git_log(ctx: ToolContext, args: GitLogArgs) -> str:
    """The last `count` commits of HEAD."""
    if git_runner.head_commit(ctx.workspace) is None:
        return "No commits yet."
    form = ["--oneline", "--no-decorate"] if args.oneline else []
    return git_runner.run_git(
        ctx.workspace, ["log", f"--max-count={args.count}", *form, "--no-show-signature"]
    )


# --- git_branch -------------------------------------------------------------------------


def git_branch(ctx: ToolContext, args: GitBranchArgs) -> str:
    """create: a new branch at HEAD, checked out (work continues there); switch; list."""
    if args.action == "list":
        return (
            git_runner.run_git(ctx.workspace, ["branch", "--list", "--no-color"])
            or "No branches yet."
        )
    name = git_runner.check_branch_name(args.name or "")
    exists = git_runner.git_succeeds(
        ctx.workspace, ["show-ref", "--verify", "--quiet", _head(name)]
    )
    if args.action == "create":
        if exists:
            raise ToolError(
                f"Branch {name!r} already exists; switch to it with action switch, "
                "or pick another name."
            )
        git_runner.run_git(ctx.workspace, ["switch", "--create", name])
        return f"Created branch '{name}' and switched to it."
    if not exists and not _remote_branch(ctx.workspace, name):
        raise ToolError(
            f"Branch {name!r} does not exist; see the branches with action list, "
            "or create it with action create."
        )
    git_runner.run_git(ctx.workspace, ["switch", name])
    secret_files.forget(ctx.workspace)  # the branch's files replace the old ones
    return f"Switched to branch '{name}'."


def _head(name: str) -> str:
    return f"refs/heads/{name}"


def _remote_branch(workspace: Path, name: str) -> bool:
    """`origin/<name>` exists: switch then creates a local branch that tracks it."""
    ref = f"refs/remotes/origin/{name}"
    return git_runner.git_succeeds(workspace, ["show-ref", "--verify", "--quiet", ref])


# --- git_commit -------------------------------------------------------------------------


def git_commit(ctx: ToolContext, args: GitCommitArgs) -> str:
    """Commit the given files' changes (or every change, untracked files included).

    Records exactly the tree its preview showed, on the commit the preview was made
    on (`ctx.preview_state`; without one, a preview made now): changes made after the
    preview stay in the working tree, uncommitted. With `files`, changes staged earlier
    for other paths stay staged, as with `git commit --only`. Author and committer come
    from the context, and the session id goes into a trailer written here (not
    `--trailer`, which would run the repository's `trailer.*.command` programs).
    """
    message = args.message.strip()
    if not message:
        raise ToolError("`message` is blank; describe the change in the commit message.")
    paths = git_runner.repo_paths(ctx.workspace, args.files)
    tree, base = _previewed_tree(ctx, args.files)
    if git_runner.head_commit(ctx.workspace) != base:
        raise ToolError(
            "HEAD moved since this commit was previewed (another commit or a branch switch); "
            "nothing was committed. Call git_commit again for a fresh preview."
        )
    if tree == _tree_of(ctx.workspace, base):
        raise ToolError(
            "Nothing to commit: " + ("the given files have" if paths else "the working tree has")
            + " no changes. Check git_status; write or edit files first."
        )  # fmt: skip
    commit = _commit_tree(ctx, tree, base, _with_trailer(_cleaned(message), ctx.session_id))
    old = base or "0" * 40
    git_runner.run_git(
        ctx.workspace, ["update-ref", "-m", "commit (agentweb)", "HEAD", commit, old]
    )
    # The index follows the commit for the committed paths; the working tree is untouched.
    git_runner.run_git(ctx.workspace, ["reset", "--quiet", commit, "--", *(paths or ["."])])
    return _summary(ctx.workspace, message, base is None)


def _previewed_tree(ctx: ToolContext, files: list[str] | None) -> tuple[str, str | None]:
    state = ctx.preview_state
    if state is None or not isinstance(state.get("tree"), str):
        preview = git_runner.commit_preview(ctx.workspace, files)
        return preview.tree, preview.base
    base = state.get("base")
    return str(state["tree"]), str(base) if base else None


def _tree_of(workspace: Path, commit: str | None) -> str:
    if commit is None:
        return git_runner.empty_tree(workspace)
    return git_runner.run_git(workspace, ["rev-parse", "--verify", f"{commit}^{{tree}}"]).strip()


def _commit_tree(ctx: ToolContext, tree: str, base: str | None, message: str) -> str:
    with tempfile.NamedTemporaryFile("w", prefix="agentweb-msg-", encoding="utf-8") as handle:
        handle.write(message)
        handle.flush()
        parent = ["-p", base] if base else []
        command = ["commit-tree", "--no-gpg-sign", *parent, "-F", handle.name, tree]
        return git_runner.run_git(ctx.workspace, command, _identity_env(ctx.git_author)).strip()


def _cleaned(message: str) -> str:
    """`git commit --cleanup=whitespace`: no trailing spaces, no runs of blank lines."""
    lines = [line.rstrip() for line in message.strip().splitlines()]
    kept = [line for i, line in enumerate(lines) if line or (i and lines[i - 1])]
    return "\n".join(kept)


def _with_trailer(message: str, session_id: int | None) -> str:
    """The message with `Agentweb-Session: <id>` in its trailer block."""
    if session_id is None:
        return message + "\n"
    last = message.rsplit("\n\n", 1)[-1].splitlines()
    in_block = "\n\n" in message and all(_TRAILER_LINE.match(line) for line in last)
    separator = "\n" if in_block else "\n\n"
    return f"{message}{separator}{TRAILER_KEY}: {session_id}\n"


def _identity_env(author: tuple[str, str]) -> dict[str, str]:
    name, email = author
    return git_runner.git_env(
        {
            "GIT_AUTHOR_NAME": name,
            "GIT_AUTHOR_EMAIL": email,
            "GIT_COMMITTER_NAME": name,
            "GIT_COMMITTER_EMAIL": email,
        }
    )


def _summary(workspace: Path, message: str, root_commit: bool) -> str:
    """`[branch 1a2b3c4] subject` and the shortstat, as git commit prints them."""
    branch = git_runner.git_output(workspace, ["symbolic-ref", "--quiet", "--short", "HEAD"])
    branch = branch.strip() if branch else "detached HEAD"
    short = git_runner.run_git(workspace, ["rev-parse", "--short", "HEAD"]).strip()
    stat = git_runner.run_git(
        workspace, ["diff-tree", "--root", "--no-commit-id", "--shortstat", "-M", "HEAD"]
    )
    root = " (root-commit)" if root_commit else ""
    subject = message.splitlines()[0]
    return f"[{branch}{root} {short}] {subject}\n{stat.rstrip()}"
