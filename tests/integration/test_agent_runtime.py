"""The agent runtime end to end: scripted models, checked on the stored conversation, the
workspace and the session. Turns and calls run in this process (`eager`); what needs a
real Celery worker (a wait that holds no slot and its continuation, a cancel while a
command runs, a session busy in the worker) is marked `worker`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import Worker, processes_running
from tests.integration.agent_helpers import (
    assert_paired,
    done,
    messages,
    results,
    script,
    start_agent,
    tool,
    wait_for,
    wait_status,
)
from tests.integration.helpers import Api
from tools_app import services
from tools_app.models import AgentMessage, AgentSession, Event, Policy, ToolCall
from tools_app.runtime import prompts

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.eager,
]

CI = ".github/workflows/ci.yml"


def test_a_scripted_session_reads_edits_and_finishes(
    alice: Api, workspace: Path, tmp_path: Path
) -> None:
    model = script(
        tmp_path,
        [
            {"say": "Reading first."},
            tool("read_file", path="src/app.py"),
            tool("list_files", path="."),
            tool("edit_file", path="src/app.py", old_string="hello", new_string="Hello"),
            done("Capitalised the greeting.", ("src/app.py",)),
        ],
    )
    session_id = start_agent(alice, workspace, model)
    session = wait_status(session_id)
    assert (session.status, session.summary) == ("done", "Capitalised the greeting.")
    assert session.files_changed == ["src/app.py"]
    assert "Hello {name}" in Path(session.workspace, "src/app.py").read_text()
    assert "hello {name}" in (workspace / "src/app.py").read_text()  # the origin is untouched
    conversation = messages(session_id)
    assert [m["role"] for m in conversation] == ["user"] + ["assistant", "tool_results"] * 3 + [
        "assistant"
    ]
    assert conversation[1]["content"] == "Reading first."
    assert_paired(conversation)
    assert "def greet" in results(session_id)[0]["content"]
    assert session.iterations == 4
    replies = AgentMessage.objects.filter(session_id=session_id, role="assistant")
    assert all(reply.tokens_in > 0 and reply.tokens_out > 0 for reply in replies)
    assert session.tokens_in == sum(reply.tokens_in for reply in replies)
    assert session.tokens_out == sum(reply.tokens_out for reply in replies)
    calls = ToolCall.objects.filter(session_id=session_id).order_by("pk")
    assert [(c.agent_key, c.tool, c.status) for c in calls] == [
        ("1:0", "read_file", "succeeded"),
        ("3:0", "list_files", "succeeded"),
        ("5:0", "edit_file", "succeeded"),
        ("7:0", "task_done", "succeeded"),
    ]
    assert session.system_prompt.endswith("fix the bug\n")


@pytest.mark.worker
def test_a_session_waits_for_an_approval_and_then_goes_on(
    alice: Api, rita: Api, workspace: Path, tmp_path: Path, stack: Worker
) -> None:
    model = script(
        tmp_path,
        [tool("write_file", path=CI, content="name: ci\n"), done("Added CI.", (CI,))],
    )
    session_id = start_agent(alice, workspace, model)
    session = wait_status(session_id, "waiting")
    waiting = ToolCall.objects.get(session_id=session_id)
    assert (waiting.status, waiting.agent_key) == ("awaiting_approval", "1:0")
    stack.wait_idle()  # the worker holds no task (no slot) while the session waits
    assert AgentMessage.objects.filter(session_id=session_id).count() == 2
    assert AgentSession.objects.get(pk=session_id).turn_runner == ""
    answer = rita.post(f"/tool-calls/{waiting.pk}/decision", {"decision": "approve"})
    assert answer.status_code == 200, answer.content
    session = wait_status(session_id)
    assert (session.status, session.summary) == ("done", "Added CI.")
    assert Path(session.workspace, CI).read_text() == "name: ci\n"
    assert_paired(messages(session_id))
    assert results(session_id)[0]["is_error"] is False


def test_a_reviewers_edit_is_what_runs_and_the_model_is_told(
    alice: Api, rita: Api, workspace: Path, tmp_path: Path
) -> None:
    model = script(
        tmp_path,
        [tool("write_file", path=CI, content="name: ci\n"), done("Added CI.", (CI,))],
    )
    session_id = start_agent(alice, workspace, model)
    wait_status(session_id, "waiting")
    waiting = ToolCall.objects.get(session_id=session_id)
    edited = {"path": CI, "content": "name: reviewed\n"}
    rita.post(f"/tool-calls/{waiting.pk}/decision", {"decision": "approve", "args": edited})
    session = wait_status(session_id)
    assert session.status == "done"
    assert Path(session.workspace, CI).read_text() == "name: reviewed\n"
    told = results(session_id)[0]["content"]
    assert told.startswith("A reviewer edited your arguments before approving; what ran: ")
    assert "name: reviewed" in told


def test_a_reviewers_reason_for_a_denial_reaches_the_model(
    alice: Api, rita: Api, workspace: Path, tmp_path: Path
) -> None:
    model = script(
        tmp_path,
        [tool("write_file", path=CI, content="name: ci\n"), done("Gave up on CI.")],
    )
    session_id = start_agent(alice, workspace, model)
    wait_status(session_id, "waiting")
    waiting = ToolCall.objects.get(session_id=session_id)
    rita.post(
        f"/tool-calls/{waiting.pk}/decision",
        {"decision": "deny", "reason": "CI changes go through the platform team"},
    )
    session = wait_status(session_id)
    assert session.status == "done"
    denied = results(session_id)[0]
    assert denied["is_error"] is True
    assert "CI changes go through the platform team" in denied["content"]
    assert not Path(session.workspace, CI).exists()


def test_an_expired_approval_is_told_to_the_model_which_goes_on(
    alice: Api, workspace: Path, tmp_path: Path
) -> None:
    Policy.objects.filter(name="default").update(approval_timeout_seconds=1)
    model = script(tmp_path, [tool("write_file", path=CI, content="x\n"), done("No CI then.")])
    session_id = start_agent(alice, workspace, model)
    wait_status(session_id, "waiting")
    waiting = ToolCall.objects.get(session_id=session_id)
    wait_for(lambda: services.tool_call_expire_overdue(), what="the approval to be overdue")
    session = wait_status(session_id)
    assert (session.status, session.summary) == ("done", "No CI then.")
    waiting.refresh_from_db()
    assert waiting.status == "expired"
    expired = results(session_id)[0]
    assert expired["is_error"] and expired["content"] == waiting.result
    assert "approval deadline" in expired["content"]
    assert not Path(session.workspace, CI).exists()


def test_an_unknown_tool_and_bad_arguments_are_told_to_the_model(
    alice: Api, workspace: Path, tmp_path: Path
) -> None:
    model = script(
        tmp_path,
        [
            tool("teleport", to="prod"),
            tool("read_file", path=5, limit="many"),
            tool("run_command", command="rm -rf /"),
            done(),
        ],
    )
    session_id = start_agent(alice, workspace, model)
    assert wait_status(session_id).status == "done"
    unknown, invalid, dangerous = results(session_id)
    refused = ToolCall.objects.get(session_id=session_id, tool="run_command")
    assert refused.status == "denied" and dangerous["is_error"]
    assert dangerous["content"].startswith(f"Denied by the policy ({refused.rule}): ")
    assert unknown["is_error"] and "Unknown tool 'teleport'" in unknown["content"]
    for name in ("read_file", "write_file", "run_command", "spawn_subagent", "task_done"):
        assert name in unknown["content"]
    assert not ToolCall.objects.filter(session_id=session_id, tool="teleport").exists()
    failed = ToolCall.objects.get(session_id=session_id, tool="read_file")
    assert failed.status == "failed"
    assert invalid["is_error"] and invalid["content"] == f"Error: {failed.result}"
    assert "path" in failed.result


# --- limits -------------------------------------------------------------------------------


def test_a_session_stops_after_its_iterations(
    alice: Api, workspace: Path, tmp_path: Path, settings: Any
) -> None:
    settings.AGENTWEB_MAX_ITERATIONS = 3
    steps = [tool("list_files", path=folder) for folder in (".", "src", ".", "src", ".")]
    session_id = start_agent(alice, workspace, script(tmp_path, steps))
    session = wait_status(session_id)
    assert session.status == "failed"
    assert session.summary == (
        "Stopped: the agent used all 3 of its model turns without calling task_done."
    )
    assert session.iterations == 3
    assert AgentMessage.objects.filter(session_id=session_id, role="assistant").count() == 3
    assert ToolCall.objects.filter(session_id=session_id).count() == 3


def test_a_session_stops_at_its_token_budget(
    alice: Api, workspace: Path, tmp_path: Path, settings: Any
) -> None:
    settings.AGENTWEB_TOKEN_BUDGET = 100
    steps = [tool("read_file", path="README.md"), tool("read_file", path="src/app.py"), done()]
    session_id = start_agent(alice, workspace, script(tmp_path, steps))
    session = wait_status(session_id)
    assert session.status == "failed"
    used = session.tokens_in + session.tokens_out
    assert used > 100
    assert session.summary == f"Stopped: the session used {used} tokens; its budget is 100."
    assert AgentMessage.objects.filter(session_id=session_id, role="assistant").count() == 1


def test_the_same_call_three_times_gets_a_nudge(
    alice: Api, workspace: Path, tmp_path: Path
) -> None:
    steps = [tool("read_file", path="README.md")] * 3 + [done()]
    session_id = start_agent(alice, workspace, script(tmp_path, steps))
    assert wait_status(session_id).status == "done"
    first, second, third = results(session_id)
    nudge = prompts.REPEAT_NUDGE.format(count=3, window=6)
    assert first["content"] == second["content"]
    assert third["content"] == first["content"] + nudge
    assert ToolCall.objects.filter(session_id=session_id, tool="read_file").count() == 3


def test_text_without_a_tool_call_is_nudged_once_then_fails(
    alice: Api, workspace: Path, tmp_path: Path
) -> None:
    session_id = start_agent(alice, workspace, script(tmp_path, [{"say": "Looks fine to me."}]))
    session = wait_status(session_id)
    assert session.status == "failed"
    conversation = messages(session_id)
    assert [m["role"] for m in conversation] == ["user", "assistant", "user", "assistant"]
    assert conversation[1]["content"] == "Looks fine to me."
    assert conversation[2]["content"] == prompts.TEXT_ONLY_NUDGE
    assert session.summary.startswith("The agent stopped without calling task_done.")
    assert conversation[3]["content"] in session.summary
    assert not ToolCall.objects.filter(session_id=session_id).exists()


def test_a_script_that_cannot_be_read_fails_the_session_with_its_reason(
    alice: Api, workspace: Path, tmp_path: Path
) -> None:
    missing = tmp_path / "nowhere.json"
    session = wait_status(start_agent(alice, workspace, f"script:{missing}"))
    assert session.status == "failed"
    assert session.summary == f"The model provider failed: script {missing}: no such file"
    assert not AgentMessage.objects.filter(session_id=session.pk, role="assistant").exists()


def test_a_bad_model_spec_is_refused_and_nothing_is_stored(alice: Api, workspace: Path) -> None:
    for model, words in (
        ("gpt-4", "'gpt-4'"),
        ("mystery:thing", "mystery"),
        ("script:", "lacks a path"),
    ):
        answer = alice.post("/sessions", {"task": "t", "repo": str(workspace), "model": model})
        assert answer.status_code == 400, answer.content
        assert "model" in answer.json()["detail"]
        assert words in answer.json()["detail"]
    assert not AgentSession.objects.exists()
    assert not Event.objects.exists()


# --- cancel -------------------------------------------------------------------------------


@pytest.mark.worker
def test_cancel_during_a_command_kills_it_and_stops_the_agent(
    alice: Api, workspace: Path, tmp_path: Path, stack: Worker
) -> None:
    marker = f"sleep 29.{os.getpid()}"  # this run's own: no other test run has it
    steps = [tool("run_command", command=f"{marker} && touch after.txt"), done("never")]
    session_id = start_agent(alice, workspace, script(tmp_path, steps))
    running = wait_for(
        lambda: ToolCall.objects.filter(session_id=session_id, status="running").first(),
        what="the command to run",
    )
    wait_for(lambda: processes_running(marker), what="the sleep to start")
    answer = alice.post(f"/sessions/{session_id}/cancel", {})
    assert answer.status_code == 200 and answer.json()["status"] == "cancelled"
    wait_for(lambda: not processes_running(marker), what="the command to be killed")
    running.refresh_from_db()
    assert running.status == "cancelled"
    session = AgentSession.objects.get(pk=session_id)
    assert (session.status, session.summary) == ("cancelled", "cancelled")
    count = AgentMessage.objects.filter(session_id=session_id).count()
    stack.wait_idle()  # a turn task still in flight would have added a message or a call
    assert AgentMessage.objects.filter(session_id=session_id).count() == count == 2
    assert ToolCall.objects.filter(session_id=session_id).count() == 1
    assert not Path(session.workspace, "after.txt").exists()


@pytest.mark.worker
def test_a_session_run_by_its_model_takes_no_calls_over_the_api(
    alice: Api, workspace: Path, tmp_path: Path
) -> None:
    """Its calls come from its model only: an API client cannot slip one in between."""
    model = script(tmp_path, [tool("run_command", command="sleep 20")])
    session_id = start_agent(alice, workspace, model)
    answer = alice.post(
        f"/sessions/{session_id}/tool-calls",
        {"tool": "write_file", "args": {"path": "x.txt", "content": "x"}},
    )
    assert answer.status_code == 409
    assert "agent loop" in answer.json()["detail"]
    assert alice.post(f"/sessions/{session_id}/cancel", {}).status_code == 200
    session = wait_status(session_id)
    assert not ToolCall.objects.filter(session_id=session_id, tool="write_file").exists()
    assert not (Path(session.workspace) / "x.txt").exists()
