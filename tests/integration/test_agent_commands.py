"""`run_agent` and `demo`: the command line's way into the runtime (tasks in this
process: `eager`)."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from tests.integration.agent_helpers import done, script, tool
from tools_app.models import AgentSession, ToolCall

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.eager,
]


def run(name: str, *args: str) -> tuple[dict[str, Any], str]:
    """Run a command; its last stdout line (JSON) and its stderr."""
    out, err = StringIO(), StringIO()
    call_command(name, *args, stdout=out, stderr=err)
    return json.loads(out.getvalue().strip().splitlines()[-1]), err.getvalue()


def test_run_agent_follows_a_session_to_its_end(workspace: Path, tmp_path: Path) -> None:
    steps = [
        tool("edit_file", path="README.md", old_string="# Title", new_string="# Calc"),
        done("Renamed the title.", ("README.md",)),
    ]
    model = script(tmp_path, steps)
    args = ("--repo", str(workspace), "--task", "rename", "--model", model, "--timeout", "60")
    line, log = run("run_agent", *args)
    session = AgentSession.objects.get()
    assert line == {"session": session.pk, "status": "done"}
    assert session.summary == "Renamed the title."
    assert session.creator is not None and session.creator.username == "agentweb-cli"
    assert Path(session.workspace, "README.md").read_text().startswith("# Calc\n")
    assert f"session {session.pk} started" in log
    assert "session done: Renamed the title." in log


def test_run_agent_makes_a_relative_script_path_absolute(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script(tmp_path, [done("ok")], name="relative.json")
    monkeypatch.chdir(tmp_path)
    line, _ = run(
        "run_agent", "--repo", str(workspace), "--task", "t", "--model", "script:relative.json"
    )
    assert line["status"] == "done"
    assert AgentSession.objects.get().model == f"script:{(tmp_path / 'relative.json').resolve()}"


def test_run_agent_names_a_bad_model(workspace: Path) -> None:
    for model, words in (("gpt-4.1", "'gpt-4.1'"), ("ollama:llama3", "'ollama'")):
        with pytest.raises(CommandError, match=words) as raised:
            run("run_agent", "--repo", str(workspace), "--task", "t", "--model", model)
        assert "valid forms" in str(raised.value)
    assert not AgentSession.objects.exists()


def test_the_demo_reaches_the_protected_write_and_waits(tmp_path: Path, settings: Any) -> None:
    settings.AGENTWEB_VAR = tmp_path
    line, log = run("demo", "--timeout", "90")
    session = AgentSession.objects.get()
    assert line == {"session": session.pk, "status": "waiting"}
    waiting = ToolCall.objects.get(session=session, status="awaiting_approval")
    assert (waiting.tool, waiting.args["path"]) == ("write_file", ".github/workflows/ci.yml")
    statuses = dict(ToolCall.objects.filter(session=session).values_list("tool", "status"))
    assert statuses["edit_file"] == "succeeded"
    denied = ToolCall.objects.get(session=session, args__command="rm -rf /")
    assert denied.status == "denied"
    tests = ToolCall.objects.filter(session=session, args__command="python3 -m unittest -q")
    first, second = tests.order_by("pk")
    assert first.status == "failed" or "FAILED" in first.result  # test_empty fails
    assert second.status == "succeeded" and "OK" in second.result
    assert "approvals" in log
