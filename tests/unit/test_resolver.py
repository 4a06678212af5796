"""Every tool path goes through resolve_path: inside the workspace or refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.unit.helpers import make_workspace
from tools_app.core.tools.errors import ToolError
from tools_app.core.tools.paths import (
    PathOutsideWorkspace,
    is_inside_git_dir,
    is_within,
    relative_to_workspace,
    resolve_path,
)


def test_relative_path_resolves_under_the_workspace(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    assert resolve_path(ws, "src/a.py") == Path(os.path.realpath(ws)) / "src" / "a.py"


def test_absolute_path_inside_is_accepted(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    target = ws / "a.txt"
    assert resolve_path(ws, str(target)) == Path(os.path.realpath(target))


def test_absolute_path_outside_is_refused(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    with pytest.raises(PathOutsideWorkspace, match="outside the workspace"):
        resolve_path(ws, "/etc/passwd")


def test_dotdot_escape_is_refused(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    with pytest.raises(PathOutsideWorkspace):
        resolve_path(ws, "sub/../../ws-evil/secret.txt")


def test_dotdot_that_stays_inside_is_accepted(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    assert resolve_path(ws, "a/../b.txt") == Path(os.path.realpath(ws)) / "b.txt"


def test_symlink_pointing_out_is_refused(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    (ws / "link").symlink_to(tmp_path / "ws-evil")
    with pytest.raises(PathOutsideWorkspace):
        resolve_path(ws, "link/secret.txt")


def test_sibling_with_the_same_prefix_is_outside(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    with pytest.raises(PathOutsideWorkspace):
        resolve_path(ws, str(tmp_path / "ws-evil" / "secret.txt"))
    assert not is_within(tmp_path / "ws-evil", tmp_path / "ws")


def test_nul_byte_and_empty_path_are_refused(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    with pytest.raises(ToolError, match="NUL"):
        resolve_path(ws, "a\x00b")
    with pytest.raises(ToolError, match="empty"):
        resolve_path(ws, "  ")


def test_relative_form_and_git_dir_detection(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    root = Path(os.path.realpath(ws))
    assert relative_to_workspace(ws, root) == "."
    assert relative_to_workspace(ws, root / "a" / "b.txt") == "a/b.txt"
    assert is_inside_git_dir(ws, root / ".git" / "config")
    assert is_inside_git_dir(ws, root / "sub" / ".git")
    assert not is_inside_git_dir(ws, root / ".github" / "x.yml")
