"""Helpers for the tool tests: workspaces, a lax effect handler, one call as the engine runs it."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from tools_app.core.tools.base import SandboxOptions, ToolContext
from tools_app.core.tools.cow_probe import cow_available, cow_unavailable_reason
from tools_app.core.tools.effect import Effect
from tools_app.core.tools.effect_apply import apply_effect
from tools_app.core.tools.forge import Proposal, PullRequestRef
from tools_app.core.tools.paths import in_git_dir
from tools_app.core.tools.registry import get_tool, validate_args

requires_cow = pytest.mark.skipif(
    not cow_available(),
    reason="the copy-on-write sandbox does not work here: it needs unshare, an overlay "
    "mount in a user namespace and bubblewrap (apt-get install bubblewrap; user "
    f"namespaces must be allowed); {cow_unavailable_reason()}",
)


def apply_outside_git(workspace: Path) -> Callable[[Effect], str]:
    """An effect handler that applies everything not inside `.git` (no policy)."""

    def handler(effect: Effect) -> str:
        kept = {e.path for e in effect.entries if not in_git_dir(e.path)}
        notes = apply_effect(workspace, effect.only(kept))
        refused = [f"{path}: {why}" for path, why in effect.refused]
        lines = ["applied: " + "; ".join(notes)] if notes else []
        return "\n".join(lines + (["refused: " + "; ".join(refused)] if refused else []))

    return handler


def make_workspace(tmp_path: Path) -> Path:
    """A workspace `ws` with a sibling `ws-evil`, so prefix tricks can be tried."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "ws-evil").mkdir()
    (tmp_path / "ws-evil" / "secret.txt").write_text("evil\n")
    return workspace


def make_ctx(workspace: Path, **sandbox: Any) -> ToolContext:
    """A context whose commands' effects are applied outside `.git`, as a lax policy would."""
    return ToolContext(
        workspace=workspace,
        sandbox=SandboxOptions(**sandbox),
        effect_handler=apply_outside_git(workspace),
    )


def call(ctx: ToolContext, name: str, args: dict[str, Any]) -> str:
    """Validate and run one call, as the engine does."""
    return get_tool(name).run(ctx, validate_args(name, args))


def snapshot(path: Path) -> tuple[bytes, int]:
    """Bytes and mtime: what must not change when a write is refused."""
    return path.read_bytes(), os.stat(path).st_mtime_ns


def git(workspace: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=T", "-c", "user.email=t@example.com", *args],
        cwd=workspace,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def git_repo(tmp_path: Path) -> Path:
    """A workspace that is a git repository with one commit."""
    workspace = make_workspace(tmp_path)
    git(workspace, "init", "-q", "-b", "main")
    (workspace / "README.md").write_text("hello\n")
    git(workspace, "add", "README.md")
    git(workspace, "commit", "-q", "-m", "init")
    return workspace


class MemoryStore:
    """The LocalPullRequestStore protocol, in memory."""

    def __init__(self) -> None:
        self.created: list[dict[str, Any]] = []

    def find(self, repo_key: str, head: str) -> PullRequestRef | None:
        for number, pr in enumerate(self.created, start=1):
            if pr["repo_key"] == repo_key and pr["head"] == head:
                return PullRequestRef(f"http://agentweb.test/prs/{number}", number)
        return None

    def create(self, repo_key: str, proposal: Proposal) -> PullRequestRef:
        self.created.append({"repo_key": repo_key, **asdict(proposal)})
        number = len(self.created)
        return PullRequestRef(f"http://agentweb.test/prs/{number}", number)
