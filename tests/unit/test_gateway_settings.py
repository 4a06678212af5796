"""The hook configuration `hook_settings` prints: every hook fails closed."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.helpers import ROOT
from tools_app.core.gateway_settings import claude_code_settings, command_hook_settings


def test_claude_code_settings_block_on_failure_and_outwait_agentweb() -> None:
    settings = claude_code_settings("http://agentweb.example:8000/", 3300)
    assert set(settings["hooks"]) == {"PreToolUse", "PostToolUse", "PostToolUseFailure"}
    for groups in settings["hooks"].values():
        [hook] = groups[0]["hooks"]
        assert groups[0]["matcher"] == "*"
        assert hook["url"] == "http://agentweb.example:8000/api/hooks/claude-code"
        assert hook["headers"] == {"Authorization": "Bearer $AGENTWEB_TOKEN"}
        assert hook["allowedEnvVars"] == ["AGENTWEB_TOKEN"]
        assert (hook["onFailure"], hook["timeout"] > 3300) == ("block", True)


def test_managed_settings_force_the_hooks() -> None:
    managed = claude_code_settings("http://a:1", 10, managed=True)
    assert managed["allowManagedHooksOnly"] is True
    assert managed["allowedHttpHookUrls"] == ["http://a:1/api/hooks/claude-code"]


def test_gemini_and_codex_run_the_command_hook() -> None:
    gemini = command_hook_settings("gemini", 3300)
    assert set(gemini["hooks"]) == {"BeforeTool", "AfterTool"}
    assert gemini["hooks"]["BeforeTool"][0]["hooks"][0]["command"] == "agentweb-hook gemini"
    assert gemini["hooks"]["BeforeTool"][0]["hooks"][0]["timeout"] == 3600 * 1000  # ms
    codex = command_hook_settings("codex", 3300)
    assert codex["hooks"]["PreToolUse"][0]["hooks"][0]["command"] == "agentweb-hook codex"


def hook(agent: str, stdin: bytes, **env: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "agentweb_hook", agent], input=stdin, capture_output=True,
        cwd=ROOT, env={"PATH": "/usr/bin:/bin", **env}, timeout=60, check=False,
    )  # fmt: skip


def test_the_command_hook_exits_2_on_any_failure() -> None:
    event = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash"}).encode()
    assert hook("claude-code", event).returncode == 2  # no AGENTWEB_URL
    no_token = hook("claude-code", event, AGENTWEB_URL="http://127.0.0.1:9")
    assert (no_token.returncode, b"AGENTWEB_TOKEN" in no_token.stderr) == (2, True)
    down = hook("claude-code", event, AGENTWEB_URL="http://127.0.0.1:9", AGENTWEB_TOKEN="t")
    assert (down.returncode, b"did not answer" in down.stderr) == (2, True)
    assert (
        hook("claude-code", b"not json", AGENTWEB_URL="http://x", AGENTWEB_TOKEN="t").returncode
        == 2
    )
    assert hook("nobody", event).returncode == 2
