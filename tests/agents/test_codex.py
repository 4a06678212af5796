"""The real Codex CLI, headless, governed by a live agentweb through `agentweb-hook codex`.

Codex (npm `@openai/codex`, installed by `make test` into `.cache/npm-agents`) talks to a
scripted fake of the OpenAI Responses API on 127.0.0.1 (a custom model provider in a
temporary CODEX_HOME) and runs the hooks `python manage.py hook_settings codex` prints, as its
`hooks.json`, against daphne with the test database and Redis. Codex runs a user's
hooks only once they are trusted; `--dangerously-bypass-hook-trust` stands for that
trust here. Every outcome is checked on disk.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from tests.agents.common import awaiting_call, hook_env, printed_settings
from tests.agents.fake_openai import FakeOpenAI
from tests.browser.server import free_port
from tests.helpers import ROOT
from tools_app import services
from tools_app.models import ToolCall

CODEX = ROOT / ".cache/npm-agents/node_modules/@openai/codex/bin/codex.js"
# The native program, from the optional package of this platform (`npm` may skip it).
NATIVE = sorted(CODEX.parents[2].glob("codex-*/vendor/*/bin/codex"))

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.skipif(
        not (CODEX.exists() and NATIVE), reason=f"Codex CLI is not installed at {CODEX} "
        "(with its native program for this platform): `make test` "
        "installs it from npm (skipped where npm is unreachable)",
    ),
]  # fmt: skip


# The fake model's metadata (Codex has none for an unknown model offline): with it Codex
# offers its freeform `apply_patch` tool beside `exec_command`.
MODEL = {
    "slug": "gpt-fake", "display_name": "fake", "description": "a scripted fake",
    "apply_patch_tool_type": "freeform", "shell_type": "shell_command",
    "visibility": "list", "supported_in_api": True, "priority": 1,
    "input_modalities": ["text"], "truncation_policy": {"mode": "tokens", "limit": 10000},
    "supports_parallel_tool_calls": False, "context_window": 100000,
    "supported_reasoning_levels": [], "default_reasoning_level": None,
    "base_instructions": "You are a scripted fake.", "support_verbosity": False,
    "experimental_supported_tools": [],
}  # fmt: skip


def codex_config(fake_url: str, catalog: Path) -> str:
    """A custom provider on the fake, nothing else reaching out."""
    return f"""
model = "gpt-fake"
model_provider = "fake"
model_catalog_json = "{catalog}"
check_for_update_on_startup = false

[model_providers.fake]
name = "fake"
base_url = "{fake_url}/v1"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[otel]
exporter = "none"

[features]
# else Codex looks up github.com and api.github.com at start (its plugin marketplace)
plugins = false
remote_plugin = false
plugin_sharing = false
"""


def run_codex(
    project: Path,
    url: str,
    token: str,
    fake: FakeOpenAI,
    hook_bin: Path,
    *,
    system_path: bool = False,
) -> subprocess.Popen[str]:
    """`codex exec` in `project` with the printed hooks, in the background."""
    home = project.parent / "codex-home"
    home.mkdir(exist_ok=True)
    (home / "models.json").write_text(json.dumps({"models": [MODEL]}))
    (home / "config.toml").write_text(codex_config(fake.url, home / "models.json"))
    (home / "hooks.json").write_text(json.dumps(printed_settings("codex", url)))
    env = {**hook_env(hook_bin, token), "CODEX_HOME": str(home), "HOME": str(home)}
    if system_path:  # nothing but the system's programs (no virtualenv's agentweb-hook)
        env["PATH"] = f"{hook_bin}:/usr/local/bin:/usr/bin:/bin"
    command = [
        "node", str(CODEX), "exec", "--dangerously-bypass-approvals-and-sandbox",
        "--dangerously-bypass-hook-trust", "--skip-git-repo-check", "do the task",
    ]  # fmt: skip
    return subprocess.Popen(
        command, cwd=project, env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def finished(process: subprocess.Popen[str]) -> str:
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err[-3000:]
    return out + err


def shell(command: str) -> dict[str, Any]:
    return {"cmd": command}


def test_an_allowed_ls_runs_and_is_recorded(
    agentweb: str, token: str, project: Path, hook_bin: Path
) -> None:
    with FakeOpenAI("exec_command", shell("ls")) as fake:
        finished(run_codex(project, agentweb, token, fake, hook_bin))
        assert "README.md" in " ".join(fake.tool_results())
    call = ToolCall.objects.get()
    assert (call.tool, call.native_tool, call.status) == ("run_command", "Bash", "succeeded")
    assert call.native_input == {"command": "ls"}
    assert "README.md" in call.result
    assert call.session.cwd == str(project)


def test_a_dangerous_command_is_denied_and_the_model_reads_why(
    agentweb: str, token: str, project: Path, hook_bin: Path
) -> None:
    canary = project.parent / "canary"
    canary.mkdir()
    (canary / "keep.txt").write_text("still here\n")
    with FakeOpenAI("exec_command", shell("rm -rf ../canary")) as fake:
        finished(run_codex(project, agentweb, token, fake, hook_bin))
        results = " ".join(fake.tool_results())
    assert (canary / "keep.txt").read_text() == "still here\n"
    call = ToolCall.objects.get()
    assert call.status == "denied"
    assert "above the workspace; this command is never run" in results


def test_a_write_waits_is_approved_and_lands_on_disk(
    agentweb: str, token: str, project: Path, hook_bin: Path, rita: User
) -> None:
    assert approved_env_write(agentweb, token, project, hook_bin, rita).status == "succeeded"


def approved_env_write(
    url: str, token: str, project: Path, hook_bin: Path, rita: User, *, system_path: bool = False
) -> ToolCall:
    """Codex writes .env: the call waits (nothing on disk), Rita approves, it lands."""
    with FakeOpenAI("exec_command", shell("printf 'API_KEY=approved\\n' > .env")) as fake:
        process = run_codex(project, url, token, fake, hook_bin, system_path=system_path)
        call = awaiting_call(process)
        assert not (project / ".env").exists()  # held while a person decides
        services.tool_call_decide(call=call, user=rita, scope="session", decision="approve")
        finished(process)
    assert (project / ".env").read_text() == "API_KEY=approved\n"
    call.refresh_from_db()
    return call


def test_edit_then_approve_runs_the_edited_command(
    agentweb: str, token: str, project: Path, hook_bin: Path, rita: User
) -> None:
    with FakeOpenAI("exec_command", shell("echo one > out.txt")) as fake:
        process = run_codex(project, agentweb, token, fake, hook_bin)
        call = awaiting_call(process)
        services.tool_call_decide(
            call=call, user=rita, scope="session", decision="approve",
            args={"command": "echo two > out.txt"},
        )  # fmt: skip
        finished(process)
    assert (project / "out.txt").read_text() == "two\n"


def patch(*lines: str) -> str:
    return "\n".join(["*** Begin Patch", *lines, "*** End Patch"])


def test_an_apply_patch_adding_a_file_is_judged_as_a_write_and_runs(
    agentweb: str, token: str, project: Path, hook_bin: Path
) -> None:
    with FakeOpenAI("apply_patch", patch("*** Add File: docs/notes.md", "+# Notes")) as fake:
        finished(run_codex(project, agentweb, token, fake, hook_bin))
    assert (project / "docs/notes.md").read_text() == "# Notes\n"
    call = ToolCall.objects.get()
    assert (call.native_tool, call.tool, call.status) == ("apply_patch", "write_file", "succeeded")
    assert call.args == {"path": "docs/notes.md", "content": "# Notes\n"}


def test_an_apply_patch_of_a_protected_file_waits_and_lands_when_approved(
    agentweb: str, token: str, project: Path, hook_bin: Path, rita: User
) -> None:
    workflow = patch("*** Add File: .github/workflows/ci.yml", "+on: push")
    with FakeOpenAI("apply_patch", workflow) as fake:
        process = run_codex(project, agentweb, token, fake, hook_bin)
        call = awaiting_call(process)
        assert not (project / ".github").exists()  # held while a person decides
        services.tool_call_decide(call=call, user=rita, scope="session", decision="approve")
        finished(process)
    assert (project / ".github/workflows/ci.yml").read_text() == "on: push\n"


def test_a_bad_token_is_blocked(agentweb: str, project: Path, hook_bin: Path) -> None:
    with FakeOpenAI("exec_command", shell("echo x > x.txt")) as fake:
        finished(run_codex(project, agentweb, "aw_wrong", fake, hook_bin))
        assert "bearer token is not valid" in " ".join(fake.tool_results())
    assert not (project / "x.txt").exists()


def test_agentweb_down_blocks_the_tool(token: str, project: Path, hook_bin: Path) -> None:
    nobody = f"http://127.0.0.1:{free_port()}"
    with FakeOpenAI("exec_command", shell("echo x > x.txt")) as fake:
        finished(run_codex(project, nobody, token, fake, hook_bin))
        assert "agentweb did not answer" in " ".join(fake.tool_results())
    assert not (project / "x.txt").exists()


def test_no_agentweb_hook_on_path_blocks_the_tool(
    token: str, project: Path, tmp_path: Path
) -> None:
    """Codex runs a call whose hook failed in any way but exit 2: the printed command
    exits 2 when `agentweb-hook` is not there."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    with FakeOpenAI("exec_command", shell("echo x > x.txt")) as fake:
        finished(run_codex(project, "http://127.0.0.1:9", token, fake, empty, system_path=True))
        assert "agentweb-hook: command not found" in " ".join(fake.tool_results())
    assert not (project / "x.txt").exists()
