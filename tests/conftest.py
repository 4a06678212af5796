"""Shared fixtures: a real git workspace and the people who use agentweb."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest


def git(workspace: Path, *args: str) -> str:
    result = subprocess.run(
        ["git", "-C", str(workspace), *args], check=True, capture_output=True, text=True
    )
    return result.stdout


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A git repository with one commit: a README, a module, a .env and a manifest."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "README.md").write_text("# Title\n\nA small project.\n")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("def greet(name):\n    return f'hello {name}'\n")
    (root / ".env").write_text("SECRET=shh\n")
    (root / "package.json").write_text('{"name": "demo"}\n')
    git(root, "init", "-q", "-b", "main")
    git(root, "-c", "user.email=t@example.com", "-c", "user.name=T", "add", "-A")
    git(root, "-c", "user.email=t@example.com", "-c", "user.name=T", "commit", "-q", "-m", "init")
    return root
