"""The real Gemini CLI, headless, governed by a live agentweb through `agentweb-hook gemini`.

Gemini CLI (npm `@google/gemini-cli`, installed by `make test` into `.cache/npm-agents`)
talks to a scripted fake of the Gemini API on 127.0.0.1 (`GOOGLE_GEMINI_BASE_URL`, an
API key it never checks) and runs the hooks `python manage.py hook_settings gemini` prints, in the
settings.json of a temporary home, against daphne with the test database and Redis.
`--yolo` keeps Gemini's own confirmations out of the way: only agentweb gates. Every
outcome is checked on disk.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from tests.agents.common import awaiting_call, hook_env, printed_settings
from tests.agents.fake_gemini import FakeGemini
from tests.browser.server import free_port
from tests.helpers import ROOT
from tools_app import services
from tools_app.models import ToolCall

GEMINI = ROOT / ".cache/npm-agents/node_modules/@google/gemini-cli/bundle/gemini.js"

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.skipif(
        not GEMINI.exists(), reason=f"Gemini CLI is not installed at {GEMINI}: `make test` "
        "installs it from npm (skipped where npm is unreachable)",
    ),
]  # fmt: skip


def gemini_settings(url: str) -> dict[str, Any]:
    """The printed hooks, an API key's auth, and nothing reaching out."""
    return {
        **printed_settings("gemini", url),
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
    }


def run_gemini(
    project: Path, url: str, token: str, fake: FakeGemini, hook_bin: Path
) -> subprocess.Popen[str]:
    """`gemini -p … --yolo` in `project` with the printed hooks, in the background."""
    home = project.parent / "gemini-home"
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(gemini_settings(url)))
    env = {
        **hook_env(hook_bin, token),
        "HOME": str(home),
        "GOOGLE_GEMINI_BASE_URL": fake.url,
        "GEMINI_API_KEY": "fake-key",
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
    }
    command = ["node", str(GEMINI), "-m", "gemini-2.5-flash", "--yolo", "-p", "do the task"]
    return subprocess.Popen(
        command, cwd=project, env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def finished(process: subprocess.Popen[str]) -> str:
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err[-3000:]
    return out + err


def test_an_allowed_ls_runs_and_is_recorded(
    agentweb: str, token: str, project: Path, hook_bin: Path
) -> None:
    with FakeGemini("run_shell_command", {"command": "ls"}) as fake:
        finished(run_gemini(project, agentweb, token, fake, hook_bin))
        assert "README.md" in " ".join(fake.tool_results())
    call = ToolCall.objects.get()
    assert (call.tool, call.native_tool) == ("run_command", "run_shell_command")
    assert call.status == "succeeded"  # the AfterTool found its call without an id
    assert "README.md" in call.result
    assert call.session.cwd == str(project)


def test_a_dangerous_command_is_denied_and_the_model_reads_why(
    agentweb: str, token: str, project: Path, hook_bin: Path
) -> None:
    canary = project.parent / "canary"
    canary.mkdir()
    (canary / "keep.txt").write_text("still here\n")
    with FakeGemini("run_shell_command", {"command": "rm -rf ../canary"}) as fake:
        finished(run_gemini(project, agentweb, token, fake, hook_bin))
        results = " ".join(fake.tool_results())
    assert (canary / "keep.txt").read_text() == "still here\n"
    assert ToolCall.objects.get().status == "denied"
    assert "above the workspace; this command is never run" in results


def test_a_protected_write_waits_is_approved_and_lands_on_disk(
    agentweb: str, token: str, project: Path, hook_bin: Path, rita: User
) -> None:
    """A workflow file (`.github/**` is protected). Gemini itself refuses, in headless
    mode, to write `.env` or a build file such as package.json, whatever the hook says."""
    workflow = project / ".github/workflows/ci.yml"
    write = {"file_path": str(workflow), "content": "on: push\n"}
    with FakeGemini("write_file", write) as fake:
        process = run_gemini(project, agentweb, token, fake, hook_bin)
        call = awaiting_call(process)
        assert not workflow.exists()  # held while a person decides
        services.tool_call_decide(call=call, user=rita, scope="session", decision="approve")
        finished(process)
        assert "Successfully created" in " ".join(fake.tool_results())
    assert workflow.read_text() == "on: push\n"
    call.refresh_from_db()
    assert (call.tool, call.status) == ("write_file", "succeeded")


def test_edit_then_approve_runs_the_edited_command(
    agentweb: str, token: str, project: Path, hook_bin: Path, rita: User
) -> None:
    with FakeGemini("run_shell_command", {"command": "echo one > out.txt"}) as fake:
        process = run_gemini(project, agentweb, token, fake, hook_bin)
        call = awaiting_call(process)
        services.tool_call_decide(
            call=call, user=rita, scope="session", decision="approve",
            args={"command": "echo two > out.txt"},
        )  # fmt: skip
        finished(process)
    assert (project / "out.txt").read_text() == "two\n"


def test_a_bad_token_is_blocked(agentweb: str, project: Path, hook_bin: Path) -> None:
    write = {"file_path": str(project / "x.txt"), "content": "x\n"}
    with FakeGemini("write_file", write) as fake:
        finished(run_gemini(project, agentweb, "aw_wrong", fake, hook_bin))
        assert "bearer token is not valid" in " ".join(fake.tool_results())
    assert not (project / "x.txt").exists()


def test_agentweb_down_blocks_the_tool(token: str, project: Path, hook_bin: Path) -> None:
    write = {"file_path": str(project / "x.txt"), "content": "x\n"}
    nobody = f"http://127.0.0.1:{free_port()}"
    with FakeGemini("write_file", write) as fake:
        finished(run_gemini(project, nobody, token, fake, hook_bin))
        assert "agentweb did not answer" in " ".join(fake.tool_results())
    assert not (project / "x.txt").exists()
