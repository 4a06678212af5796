"""The real Claude Code CLI, headless, governed by a live agentweb through its hooks.

Claude Code (npm `@anthropic-ai/claude-code`, installed by `make test` into
`.cache/npm-agents`) talks to a scripted fake of the Anthropic API on 127.0.0.1 and runs
with the settings `hook_settings claude-code` prints, against daphne on a free port with
the test database and Redis. Every outcome is checked on disk, not in an answer.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from tests.agents.claude import finished, needs_claude, run_claude
from tests.agents.common import WAIT_SECONDS, awaiting_call
from tests.agents.fake_anthropic import FakeAnthropic
from tests.browser.server import free_port
from tools_app import services
from tools_app.models import ToolCall

pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True), needs_claude]


def test_an_allowed_ls_runs_and_post_tool_use_is_recorded(
    agentweb: str, token: str, project: Path
) -> None:
    with FakeAnthropic("Bash", {"command": "ls", "description": "list files"}) as fake:
        finished(run_claude(project, agentweb, token, fake))
        assert "README.md" in " ".join(fake.tool_results())
    call = ToolCall.objects.get()
    assert (call.tool, call.native_tool, call.status) == ("run_command", "Bash", "succeeded")
    assert "README.md" in call.result
    assert call.session.cwd == str(project)


def test_a_write_of_env_waits_is_approved_and_lands_on_disk(
    agentweb: str, token: str, project: Path, rita: User
) -> None:
    write = {"file_path": str(project / ".env"), "content": "API_KEY=approved\n"}
    with FakeAnthropic("Write", write) as fake:
        process = run_claude(project, agentweb, token, fake)
        call = awaiting_call()
        assert not (project / ".env").exists()  # held while a person decides
        services.tool_call_decide(call=call, user=rita, scope="session", decision="approve")
        finished(process)
    assert (project / ".env").read_text() == "API_KEY=approved\n"
    call.refresh_from_db()
    assert call.status == "succeeded"


def test_a_dangerous_command_is_denied_and_the_model_reads_why(
    agentweb: str, token: str, project: Path
) -> None:
    with FakeAnthropic("Bash", {"command": "mkfs.ext4 /dev/agentweb-none"}) as fake:
        finished(run_claude(project, agentweb, token, fake))
        results = " ".join(fake.tool_results())
    assert "formats or wipes a disk" in results
    assert ToolCall.objects.get().status == "denied"


def test_edit_then_approve_runs_the_edited_command(
    agentweb: str, token: str, project: Path, rita: User
) -> None:
    with FakeAnthropic("Bash", {"command": "echo one > out.txt"}) as fake:
        process = run_claude(project, agentweb, token, fake)
        call = awaiting_call()
        services.tool_call_decide(
            call=call, user=rita, scope="session", decision="approve",
            args={"command": "echo two > out.txt"},
        )  # fmt: skip
        finished(process)
    assert (project / "out.txt").read_text() == "two\n"


def test_a_bad_token_is_blocked(agentweb: str, project: Path) -> None:
    write = {"file_path": str(project / "x.txt"), "content": "x\n"}
    with FakeAnthropic("Write", write) as fake:
        finished(run_claude(project, agentweb, "aw_wrong", fake))
        assert "bearer token is not valid" in " ".join(fake.tool_results())
    assert not (project / "x.txt").exists()


def test_agentweb_stopped_blocks_the_tool(token: str, project: Path) -> None:
    write = {"file_path": str(project / "x.txt"), "content": "x\n"}
    nobody = f"http://127.0.0.1:{free_port()}"
    with FakeAnthropic("Write", write) as fake:
        finished(run_claude(project, nobody, token, fake))
    assert not (project / "x.txt").exists()


def command_hook_settings() -> dict[str, Any]:
    hook = {"type": "command", "command": f"{sys.executable} -m agentweb_hook claude-code"}
    groups = [{"matcher": "*", "hooks": [{**hook, "timeout": WAIT_SECONDS + 60}]}]
    return {"hooks": {"PreToolUse": groups, "PostToolUse": groups}}


def test_the_agentweb_hook_command_governs_claude_code_too(
    agentweb: str, token: str, project: Path
) -> None:
    with FakeAnthropic("Bash", {"command": "ls"}) as fake:
        finished(run_claude(project, agentweb, token, fake, settings=command_hook_settings()))
        assert "README.md" in " ".join(fake.tool_results())
    assert ToolCall.objects.get().status == "succeeded"
    with FakeAnthropic("Bash", {"command": "mkfs.ext4 /dev/agentweb-none"}) as fake:
        finished(run_claude(project, agentweb, token, fake, settings=command_hook_settings()))
        assert "formats or wipes a disk" in " ".join(fake.tool_results())
