"""Session workspaces: a fresh, hardened git clone of the session's repository."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from tools_app.core.tools.git_runner import HARDENING, git_env

CLONE_TIMEOUT = 600
# `ext::` and other transports run commands; only these reach git here.
ALLOWED_PROTOCOLS = "file:git:http:https:ssh"
URL_FORMS = re.compile(r"^(https?|ssh|git|file)://[^\s]+$|^[\w.-]+@[\w.-]+:[^\s]+$")


class WorkspaceError(Exception):
    """A repository that cannot be cloned; the message says why."""


def check_repo(repo: str, local_roots: Sequence[Path] = ()) -> str:
    """The repository argument as git should see it, or WorkspaceError naming the problem.

    With `local_roots`, a local repository (a path or a file:// URL) must lie under one
    of them: an operator may not clone whatever repository the server can read.
    """
    repo = repo.strip()
    if not repo or repo.startswith("-") or "\x00" in repo:
        raise WorkspaceError("`repo` must be a local path or a git URL.")
    if repo.startswith("file://"):
        _check_local(Path(repo.removeprefix("file://")), repo, local_roots)
    if "://" in repo or re.match(r"^[\w.-]+@[\w.-]+:", repo):
        if not URL_FORMS.match(repo):
            raise WorkspaceError(
                f"`repo` {repo!r} is not a supported git URL (https, http, ssh, git, file)."
            )
        return repo
    path = _check_local(Path(repo).expanduser(), repo, local_roots)
    if not path.is_dir():
        raise WorkspaceError(f"`repo` {repo!r} is not a directory on the server.")
    if not _is_git_repository(path):
        raise WorkspaceError(f"`repo` {repo!r} is not a git repository.")
    return str(path)


def _check_local(path: Path, repo: str, local_roots: Sequence[Path]) -> Path:
    resolved = path.resolve()
    roots = [root.resolve() for root in local_roots]
    if roots and not any(resolved.is_relative_to(root) for root in roots):
        allowed = ", ".join(str(root) for root in roots)
        raise WorkspaceError(
            f"`repo` {repo!r} is outside the directories sessions may clone from ({allowed})."
        )
    return resolved


def clone(repo: str, destination: Path) -> None:
    """Clone `repo` into `destination` (which must not exist); nothing is left on failure."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    env = git_env({"GIT_ALLOW_PROTOCOL": ALLOWED_PROTOCOLS})
    command = ["git", *HARDENING, "clone", "--quiet", "--", repo, str(destination)]
    try:
        done = subprocess.run(
            command, env=env, stdin=subprocess.DEVNULL, capture_output=True,
            timeout=CLONE_TIMEOUT, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        shutil.rmtree(destination, ignore_errors=True)
        raise WorkspaceError(f"Cloning {repo} took longer than {CLONE_TIMEOUT} s.") from None
    if done.returncode != 0:
        shutil.rmtree(destination, ignore_errors=True)
        message = done.stderr.decode("utf-8", errors="replace").strip()
        raise WorkspaceError(f"Cloning {repo} failed: {message}")


def _is_git_repository(path: Path) -> bool:
    done = subprocess.run(
        ["git", *HARDENING, "-C", str(path), "rev-parse", "--git-dir"],
        env=git_env(), stdin=subprocess.DEVNULL, capture_output=True, timeout=30, check=False,
    )  # fmt: skip
    return done.returncode == 0
