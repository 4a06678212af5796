"""The real Claude Code CLI, headless, for the tests that drive it (tests/agents, and the
browser's gateway tests): where `make test` installs it, and how a test runs it against a
fake Anthropic API with a settings file. Plain code, no fixtures."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.agents.common import WAIT_SECONDS
from tests.agents.fake_anthropic import FakeAnthropic
from tests.helpers import ROOT
from tools_app.core.gateway.agent_settings import claude_code_settings

CLAUDE = ROOT / ".cache/npm-agents/node_modules/@anthropic-ai/claude-code/bin/claude.exe"

needs_claude = pytest.mark.skipif(
    not CLAUDE.exists(), reason=f"Claude Code is not installed at {CLAUDE}: `make test` "
    "installs it from npm (skipped where npm is unreachable)",
)  # fmt: skip


def run_claude(
    project: Path,
    url: str,
    token: str,
    fake: FakeAnthropic,
    *,
    settings: dict[str, Any] | None = None,
    args: tuple[str, ...] = (),
    wrapper: tuple[str, ...] = (),
) -> subprocess.Popen[bytes]:
    """`claude -p … --output-format json --settings FILE ARGS` in `project`, in the
    background (behind `wrapper`, a command that ends by running its arguments); the
    settings default to what `hook_settings claude-code` prints (`{}`: no hooks)."""
    path = project.parent / "settings.json"
    hooks = claude_code_settings(url, WAIT_SECONDS) if settings is None else settings
    path.write_text(json.dumps(hooks))
    env = {
        **os.environ,
        "ANTHROPIC_BASE_URL": fake.url,
        "ANTHROPIC_API_KEY": "sk-ant-fake",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "HOME": str(project.parent),
        "AGENTWEB_TOKEN": token,
        "AGENTWEB_URL": url,
        "PYTHONPATH": str(ROOT),
    }
    command = [str(CLAUDE), "-p", "do the task", "--output-format", "json", "--settings", str(path)]
    return subprocess.Popen(
        [*wrapper, *command, *args], cwd=project, env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip


def finished(process: subprocess.Popen[bytes]) -> dict[str, Any]:
    """Claude Code's JSON answer, once it has ended well."""
    out, err = process.communicate(timeout=180)
    assert process.returncode == 0, err.decode()[-2000:]
    return json.loads(out)  # type: ignore[no-any-return]
