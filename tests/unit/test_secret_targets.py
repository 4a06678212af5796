"""A command's secret paths are resolved once per judgment (`targets.one_judgment`): the
preview and the checks share them, and the next judgment looks at the filesystem again,
so a symlink made after one call was judged is seen when the next is."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tools_app.core import engine
from tools_app.core.policy.defaults import DEFAULT_POLICY
from tools_app.core.policy.loader import policy_from_dict
from tools_app.core.policy.targets import one_judgment, secret_targets
from tools_app.core.policy.types import SessionCounters
from tools_app.core.shell.commands import analyse_command
from tools_app.core.tools.registry import get_tool

POLICY = policy_from_dict(DEFAULT_POLICY)
PATTERNS = (".env",)


def workspace_with_notes(tmp_path: Path) -> Path:
    (tmp_path / ".env").write_text("TOKEN=x\n")
    (tmp_path / "notes").write_text("plain\n")
    return tmp_path


def relink_notes_to_env(workspace: Path) -> None:
    (workspace / "notes").unlink()
    (workspace / "notes").symlink_to(workspace / ".env")


def test_within_one_judgment_the_paths_are_resolved_once(tmp_path: Path) -> None:
    workspace = workspace_with_notes(tmp_path)
    analysis = analyse_command("cat notes")
    with one_judgment():
        assert secret_targets(analysis, workspace, PATTERNS) == ()
        relink_notes_to_env(workspace)
        assert secret_targets(analysis, workspace, PATTERNS) == ()  # the first answer
        assert secret_targets(analysis, workspace, (".en?",)) != ()  # other patterns: asked
    found = secret_targets(analysis, workspace, PATTERNS)  # outside: the filesystem now
    assert [(path, pattern) for _, path, pattern in found] == [(".env", ".env")]


def test_each_judgment_sees_the_filesystem_as_it_is_then(tmp_path: Path) -> None:
    workspace = workspace_with_notes(tmp_path)
    run_command = get_tool("run_command")
    args = {"command": "cat notes"}
    first = engine.prepare(POLICY, run_command, args, workspace, SessionCounters())
    assert first.verdict is not None and first.verdict.rule != "builtin:command-secret"
    relink_notes_to_env(workspace)
    second = engine.prepare(POLICY, run_command, args, workspace, SessionCounters())
    assert second.verdict is not None and second.verdict.rule == "builtin:command-secret"
    assert second.status == "awaiting_approval"


def test_a_workspace_s_own_path_is_resolved_once_per_judgment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each word is resolved; the workspace behind them once. A workspace reached by a
    symlink that moves between judgments is followed to where it points then."""
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    (first / "notes").write_text("plain\n")
    second.mkdir()
    workspace_with_notes(second)
    relink_notes_to_env(second)  # in the second, `notes` is the secret
    workspace = tmp_path / "workspace"
    workspace.symlink_to(first)
    analysis = analyse_command("cat notes a b c")
    resolved: list[str] = []
    real_realpath = os.path.realpath

    def counted(path: Any, **kwargs: Any) -> str:
        resolved.append(os.fspath(path))
        return real_realpath(path, **kwargs)

    monkeypatch.setattr(os.path, "realpath", counted)
    with one_judgment():
        assert secret_targets(analysis, workspace, PATTERNS) == ()
    assert resolved.count(str(workspace)) == 1
    assert len(resolved) == 1 + 5  # the workspace, then each word (`cat` too)
    workspace.unlink()
    workspace.symlink_to(second)
    with one_judgment():
        found = secret_targets(analysis, workspace, PATTERNS)
    assert [(path, pattern) for _, path, pattern in found] == [(".env", ".env")]
