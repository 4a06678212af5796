"""The hook configuration `hook_settings` prints: every hook fails closed."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from agentweb_hook import FORMATS
from tests.helpers import ROOT
from tools_app.core.gateway.agent_settings import (
    HOME_SECRETS,
    AgentSandbox,
    claude_code_sandbox,
    claude_code_settings,
    codex_sandbox_toml,
    command_hook_settings,
    gemini_sandbox,
    private_address,
)


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


@pytest.mark.parametrize(
    ("url", "private"),
    [
        ("http://10.20.0.2:8000", True),
        ("http://192.168.1.5", True),
        ("http://169.254.1.1", True),
        ("http://[fd00::5]:8000", True),
        ("http://127.0.0.1:8000", False),
        ("https://agentweb.example.com", False),
        ("http://agentweb.internal:8000", False),  # a name: what it resolves to is unknown
    ],
)
def test_a_private_address_is_one_claude_codes_http_hooks_cannot_reach(
    url: str, private: bool
) -> None:
    assert private_address(url) is private


def test_command_hooks_for_claude_code_carry_agentwebs_url_and_block_on_failure() -> None:
    settings = claude_code_settings(
        "http://10.20.0.2:8000", 3300, managed=True, policy="team", transport="command"
    )
    for groups in settings["hooks"].values():
        [hook] = groups[0]["hooks"]
        assert hook["type"] == "command" and hook["timeout"] > 3300
        assert hook["command"] == (
            "AGENTWEB_POLICY=team AGENTWEB_URL=http://10.20.0.2:8000 "
            "AGENTWEB_HOOK_TIMEOUT=3450 agentweb-hook claude-code || exit 2"
        )
    assert settings["allowManagedHooksOnly"] is True
    assert "allowedHttpHookUrls" not in settings


def test_gemini_and_codex_run_the_command_hook() -> None:
    gemini = command_hook_settings("gemini", 3300)
    assert set(gemini["hooks"]) == {"BeforeTool", "AfterTool"}
    [hook] = gemini["hooks"]["BeforeTool"][0]["hooks"]
    # agentweb-hook gives up before the CLI would kill it; `|| exit 2` blocks when it
    # cannot start at all (Codex would run the call).
    assert hook["command"] == "AGENTWEB_HOOK_TIMEOUT=3450 agentweb-hook gemini || exit 2"
    assert hook["timeout"] == 3600 * 1000  # ms
    codex = command_hook_settings("codex", 3300)
    assert set(codex["hooks"]) == {"PreToolUse", "PostToolUse"}
    [hook] = codex["hooks"]["PreToolUse"][0]["hooks"]
    assert hook["command"] == "AGENTWEB_HOOK_TIMEOUT=3450 agentweb-hook codex || exit 2"
    assert hook["timeout"] == 3600  # seconds


def pre(decision: str, **more: Any) -> dict[str, Any]:
    output = {"hookEventName": "PreToolUse", "permissionDecision": decision, **more}
    return {"hookSpecificOutput": output}


BASH = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}}
SHELL = {"hook_event_name": "BeforeTool", "tool_name": "run_shell_command",
         "tool_input": {"command": "ls"}}  # fmt: skip

ANSWERS: list[tuple[str, dict[str, Any], dict[str, Any], Any]] = [
    # Codex: silence runs the call; `allow` only with a changed input; deny with a reason.
    ("codex", pre("allow", updatedInput={"command": "ls"}), BASH, ""),
    (
        "codex",
        pre("allow", updatedInput={"command": "ls -a"}),
        BASH,
        pre("allow", updatedInput={"command": "ls -a"}),
    ),
    (
        "codex",
        pre("deny", permissionDecisionReason="no"),
        BASH,
        pre("deny", permissionDecisionReason="no"),
    ),
    ("codex", {}, {**BASH, "hook_event_name": "PostToolUse"}, ""),
    # Gemini: decision and reason; a changed input as hookSpecificOutput.tool_input.
    ("gemini", pre("allow", updatedInput={"command": "ls"}), SHELL, {"decision": "allow"}),
    (
        "gemini",
        pre("allow", updatedInput={"command": "ls -a"}, permissionDecisionReason="ok"),
        SHELL,
        {
            "decision": "allow",
            "reason": "ok",
            "hookSpecificOutput": {
                "hookEventName": "BeforeTool",
                "tool_input": {"command": "ls -a"},
            },
        },
    ),
    (
        "gemini",
        pre("deny", permissionDecisionReason="no"),
        SHELL,
        {"decision": "deny", "reason": "no"},
    ),
    ("gemini", {}, {**SHELL, "hook_event_name": "AfterTool"}, {}),
]


@pytest.mark.parametrize(("agent", "answer", "event", "printed"), ANSWERS)
def test_each_agent_gets_agentwebs_answer_in_its_own_format(
    agent: str, answer: dict[str, Any], event: dict[str, Any], printed: Any
) -> None:
    text, code = FORMATS[agent][1](answer, event)
    assert code == 0
    assert (json.loads(text) if text else "") == printed


def test_gemini_events_reach_agentweb_in_claude_codes_shape() -> None:
    to_agentweb = FORMATS["gemini"][0]
    before = to_agentweb({**SHELL, "session_id": "s", "timestamp": "t1"})
    assert (before["hook_event_name"], before["tool_name"]) == ("PreToolUse", "run_shell_command")
    assert before["tool_use_id"].startswith("gemini-")
    failed = to_agentweb(
        {**SHELL, "hook_event_name": "AfterTool", "session_id": "s", "timestamp": "t2",
         "tool_response": {"llmContent": "boom", "error": "exit 1"}}
    )  # fmt: skip
    assert failed["hook_event_name"] == "PostToolUseFailure"
    assert (failed["error"], failed["tool_response"]) == ("exit 1", "boom")
    assert failed["tool_use_id"] != before["tool_use_id"]  # found by its input instead


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


def test_a_policy_is_named_in_the_hook_url_and_the_command_hooks_environment() -> None:
    settings = claude_code_settings("http://a:1", 10, policy="strict ops", managed=True)
    [hook_entry] = settings["hooks"]["PreToolUse"][0]["hooks"]
    assert hook_entry["url"] == "http://a:1/api/hooks/claude-code?policy=strict+ops"
    assert settings["allowedHttpHookUrls"] == [hook_entry["url"]]
    [codex] = command_hook_settings("codex", 10, policy="strict ops")["hooks"]["PreToolUse"]
    assert codex["hooks"][0]["command"].startswith("AGENTWEB_POLICY='strict ops' ")


def test_the_command_hook_sends_agentweb_policy_as_the_urls_policy() -> None:
    seen: list[str] = []

    class Agentweb(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            seen.append(self.path)
            self.rfile.read(int(self.headers["Content-Length"]))
            body = json.dumps({"hookSpecificOutput": {"permissionDecision": "deny"}}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Agentweb)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}"
        event = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash"}).encode()
        env = {"AGENTWEB_URL": url, "AGENTWEB_TOKEN": "t", "AGENTWEB_POLICY": "a&b"}
        ran = hook("claude-code", event, **env)
        assert ran.returncode == 0, ran.stderr
    finally:
        server.shutdown()
    assert seen == ["/api/hooks/claude-code?policy=a%26b"]


FENCE = AgentSandbox(secret_paths=(".env", "*.pem", "config/secrets.yml", "/keys/", "!x"),
                     hosts=("pypi.org", "*.github.com"))  # fmt: skip


def test_claude_codes_sandbox_is_on_and_cannot_be_left() -> None:
    sandbox = claude_code_sandbox(FENCE)["sandbox"]
    assert (sandbox["enabled"], sandbox["failIfUnavailable"]) == (True, True)
    # the model's dangerouslyDisableSandbox is ignored; the hook still decides each command
    assert (sandbox["allowUnsandboxedCommands"], sandbox["autoAllowBashIfSandboxed"]) == (
        False, False
    )  # fmt: skip
    assert sandbox["credentials"] == {"envVars": [{"name": "AGENTWEB_TOKEN", "mode": "deny"}]}


def test_secret_patterns_become_read_rules_relative_to_the_project() -> None:
    deny = claude_code_sandbox(FENCE)["permissions"]["deny"]
    # `Edit(.git/**)` is the spelling that keeps .git unwritable even before it exists.
    assert deny[:5] == [
        "Edit(.git/**)", "Read(**/.env)", "Read(**/*.pem)", "Read(config/secrets.yml)",
        "Read(keys/**)",
    ]  # fmt: skip
    assert "Read(~/.ssh/**)" in deny and "Read(~/.netrc)" in deny
    assert not any("x)" in rule for rule in deny)  # a `!` exception cannot be a deny rule


def test_home_secrets_are_unreadable_in_the_sandbox() -> None:
    filesystem = claude_code_sandbox(AgentSandbox())["sandbox"]["filesystem"]
    assert filesystem["denyRead"] == [path.rstrip("/") for path in HOME_SECRETS]
    assert {"~/.ssh", "~/.aws", "~/.config/gcloud", "~/.kube", "~/.docker/config.json"} <= set(
        filesystem["denyRead"]
    )


def test_network_reaches_the_policys_hosts_and_agentweb_only() -> None:
    settings = claude_code_settings("https://agentweb.example:8443", 10, sandbox=FENCE)
    network = settings["sandbox"]["network"]
    # Claude Code sends its http hooks through the sandbox's proxy: agentweb is allowed too.
    assert network == {
        "allowedDomains": ["pypi.org", "*.github.com", "agentweb.example"],
        "strictAllowlist": True,
    }
    none = claude_code_sandbox(AgentSandbox())["sandbox"]["network"]
    assert none["allowedDomains"] == []


def test_managed_settings_keep_a_developer_from_loosening_the_sandbox() -> None:
    managed = claude_code_settings("http://a:1", 10, managed=True, sandbox=FENCE)
    assert managed["sandbox"]["network"]["allowManagedDomainsOnly"] is True
    assert managed["sandbox"]["filesystem"]["allowManagedReadPathsOnly"] is True
    assert managed["permissions"]["disableBypassPermissionsMode"] == "disable"
    assert managed["allowManagedHooksOnly"] is True
    assert "sandbox" not in claude_code_settings("http://a:1", 10)  # hooks alone on request


def test_codex_and_gemini_sandboxes_say_what_they_cannot_enforce() -> None:
    toml = codex_sandbox_toml(FENCE)
    assert 'sandbox_mode = "workspace-write"' in toml
    assert "network_access = false" in toml
    assert "Not enforced by Codex's sandbox" in toml and "*.pem" in toml
    requirements = codex_sandbox_toml(FENCE, managed=True)
    assert 'allowed_sandbox_modes = ["read-only", "workspace-write"]' in requirements
    gemini = gemini_sandbox()
    assert gemini == {
        "security": {"toolSandboxing": True},
        "tools": {"sandboxNetworkAccess": False},
    }
