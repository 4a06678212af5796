"""The REST API on a real Redis: what an external agent and a reviewer do over plain HTTP.

The logic runs its tasks in this process (`eager`); what only a queue and a real Celery
worker show (a killed worker, duplicated messages, a broker that is down, a command
cancelled while it runs) is marked `worker`."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from tests.helpers import Worker, processes_running, wait_gone
from tests.integration.helpers import Api, call, start_session, wait_final
from tools_app import services, tasks
from tools_app.models import AgentSession, Policy, PolicyRule, ToolCall

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.eager,
]


@pytest.mark.worker
def test_an_allowed_call_runs_in_the_worker(alice: Api, workspace: Path) -> None:
    session = start_session(alice, workspace)
    assert Path(session["workspace"]).joinpath(".git").is_dir()
    assert session["workspace"] != str(workspace)
    answer = call(alice, session, "read_file", path="README.md", limit=1)
    assert answer["status"] == "succeeded"
    assert answer["result"].startswith("1 | # Title\n")


@pytest.mark.postgres
def test_approval_round_trip(alice: Api, rita: Api, workspace: Path) -> None:
    session = start_session(alice, workspace)
    waiting = call(alice, session, "write_file", wait=2, path=".env", content="A=1\n")
    assert waiting["status"] == "awaiting_approval"
    assert "+A=1" in waiting["preview"]["diff"]
    assert alice.get(f"/sessions/{session['id']}").json()["status"] == "waiting"
    inbox = rita.get("/approvals").json()["items"]
    assert [item["id"] for item in inbox] == [waiting["id"]]
    decided = rita.post(f"/tool-calls/{waiting['id']}/decision", {"decision": "approve"})
    assert decided.status_code == 200
    assert decided.json()["decided_by"] == "rita"
    done = wait_final(alice, waiting["id"])
    assert done["status"] == "succeeded"
    assert Path(session["workspace"], ".env").read_text() == "A=1\n"
    assert alice.get(f"/sessions/{session['id']}").json()["status"] == "running"


def test_a_denial_carries_the_reason_to_the_agent(alice: Api, rita: Api, workspace: Path) -> None:
    session = start_session(alice, workspace)
    waiting = call(alice, session, "run_command", wait=0.01, command="npm install left-pad")
    answer = rita.post(
        f"/tool-calls/{waiting['id']}/decision", {"decision": "deny", "reason": "no new deps"}
    )
    assert answer.json()["status"] == "denied"
    assert "no new deps" in wait_final(alice, waiting["id"])["result"]


def test_edit_then_approve_runs_the_edited_arguments(
    alice: Api, rita: Api, workspace: Path
) -> None:
    session = start_session(alice, workspace)
    waiting = call(alice, session, "write_file", wait=0.01, path=".env", content="A=1\n")
    rita.post(
        f"/tool-calls/{waiting['id']}/decision",
        {"decision": "approve", "args": {"path": ".env", "content": "A=2\n"}},
    )
    assert wait_final(alice, waiting["id"])["status"] == "succeeded"
    assert Path(session["workspace"], ".env").read_text() == "A=2\n"


def test_edited_arguments_the_policy_denies_are_denied(
    alice: Api, rita: Api, workspace: Path
) -> None:
    session = start_session(alice, workspace)
    waiting = call(alice, session, "write_file", wait=0.01, path=".env", content="A=1\n")
    answer = rita.post(
        f"/tool-calls/{waiting['id']}/decision",
        {"decision": "approve", "args": {"path": "../outside.txt", "content": "x"}},
    )
    assert answer.status_code == 200
    assert answer.json()["status"] == "denied"
    assert not (Path(session["workspace"]).parent / "outside.txt").exists()


def test_approve_and_remember_allows_the_same_call_next_time(
    alice: Api, rita: Api, workspace: Path
) -> None:
    session = start_session(alice, workspace)
    waiting = call(alice, session, "run_command", wait=0.01, command="git config user.name bob")
    rita.post(f"/tool-calls/{waiting['id']}/decision", {"decision": "approve", "remember": True})
    rule = PolicyRule.objects.get()
    assert (rule.tool, rule.decision) == ("run_command", "allow")
    again = call(alice, session, "run_command", command="git config user.name bob")
    assert (again["decision"], again["rule"]) == ("allow", f"rule {rule.pk}")
    other = call(alice, session, "run_command", wait=0.01, command="git config user.name eve")
    assert other["status"] == "awaiting_approval"


@pytest.mark.postgres
def test_a_second_decision_gets_409(alice: Api, rita: Api, workspace: Path) -> None:
    session = start_session(alice, workspace)
    waiting = call(alice, session, "write_file", wait=0.01, path=".env", content="A=1\n")
    first = rita.post(f"/tool-calls/{waiting['id']}/decision", {"decision": "deny"})
    second = rita.post(f"/tool-calls/{waiting['id']}/decision", {"decision": "approve"})
    assert (first.status_code, second.status_code) == (200, 409)
    assert "detail" in second.json()


def test_agent_tokens_and_outsiders_cannot_decide(
    alice: Api, charlie: Api, workspace: Path
) -> None:
    session = start_session(alice, workspace)
    waiting = call(alice, session, "write_file", wait=0.01, path=".env", content="A=1\n")
    assert (
        alice.post(f"/tool-calls/{waiting['id']}/decision", {"decision": "approve"}).status_code
        == 403
    )
    assert (
        charlie.post(f"/tool-calls/{waiting['id']}/decision", {"decision": "approve"}).status_code
        == 404
    )
    assert ToolCall.objects.get(pk=waiting["id"]).status == "awaiting_approval"


def test_a_creator_may_deny_but_not_approve_under_distinct_reviewer(
    rita: Api, workspace: Path
) -> None:
    Policy.objects.filter(name="default").update(require_distinct_reviewer=True)
    session = start_session(rita, workspace)
    first = call(rita, session, "write_file", wait=0.01, path=".env", content="A=1\n")
    assert (
        rita.post(f"/tool-calls/{first['id']}/decision", {"decision": "approve"}).status_code == 403
    )
    assert rita.post(f"/tool-calls/{first['id']}/decision", {"decision": "deny"}).status_code == 200


@pytest.mark.postgres
def test_a_pending_approval_expires_and_never_runs(alice: Api, rita: Api, workspace: Path) -> None:
    Policy.objects.filter(name="default").update(approval_timeout_seconds=1)
    session = start_session(alice, workspace)
    waiting = call(alice, session, "write_file", wait=0, path=".env", content="A=1\n")
    # No clock runs here to mark it: a read past the 1 s deadline already says expired.
    assert alice.get(f"/tool-calls/{waiting['id']}?wait=2").json()["status"] == "expired"
    late = rita.post(f"/tool-calls/{waiting['id']}/decision", {"decision": "approve"})
    assert late.status_code == 409
    assert Path(session["workspace"], ".env").read_text() == "SECRET=shh\n"


@pytest.mark.worker
def test_a_killed_worker_loses_nothing_and_the_call_runs_once(
    alice: Api, rita: Api, workspace: Path, stack: Worker
) -> None:
    session = start_session(alice, workspace)
    waiting = call(
        alice, session, "run_command", wait=0.01, command="pip install six; echo ran >> ran.txt"
    )
    assert waiting["status"] == "awaiting_approval"
    stack.kill()
    try:
        rita.post(f"/tool-calls/{waiting['id']}/decision", {"decision": "approve"})
    finally:
        stack.start()
    assert wait_final(alice, waiting["id"])["status"] == "succeeded"
    tasks.execute_tool_call.apply_async([waiting["id"]], queue=session_queue(session))
    stack.wait_idle()  # the message sent again has been handled
    assert Path(session["workspace"], "ran.txt").read_text() == "ran\n"


def session_queue(session: dict[str, Any]) -> str:
    return AgentSession.objects.get(pk=session["id"]).worker_queue


@pytest.mark.worker
@pytest.mark.postgres
def test_a_duplicated_execute_message_runs_once(
    alice: Api, rita: Api, workspace: Path, stack: Worker
) -> None:
    session = start_session(alice, workspace)
    waiting = call(
        alice, session, "run_command", wait=0.01, command="git push; echo ran >> ran.txt"
    )
    rita.post(f"/tool-calls/{waiting['id']}/decision", {"decision": "approve"})
    for _ in range(3):
        tasks.execute_tool_call.apply_async([waiting["id"]], queue=session_queue(session))
    assert wait_final(alice, waiting["id"])["status"] == "succeeded"
    stack.wait_idle()  # all three duplicates have been handled
    assert Path(session["workspace"], "ran.txt").read_text() == "ran\n"


@pytest.mark.postgres
def test_a_call_left_running_by_a_dead_worker_is_failed_not_rerun(
    alice: Api, workspace: Path
) -> None:
    session = start_session(alice, workspace)
    done = call(alice, session, "run_command", command="true")
    ghost = subprocess.Popen(["true"])
    ghost.wait()
    ToolCall.objects.filter(pk=done["id"]).update(
        status="running", runner=f"ghost-host:{ghost.pid}"
    )
    assert services.tool_call_recover_interrupted(host="ghost-host") == 1
    recovered = alice.get(f"/tool-calls/{done['id']}").json()
    assert recovered["status"] == "failed"
    assert "was not run again" in recovered["result"]


def test_invalid_tool_arguments_fail_with_the_message(alice: Api, workspace: Path) -> None:
    session = start_session(alice, workspace)
    answer = call(alice, session, "read_file", path="README.md", offset=-1)
    assert answer["status"] == "failed"
    assert "offset" in answer["result"]
    unknown = call(alice, session, "format_disk")
    assert unknown["status"] == "failed"
    assert "Unknown tool" in unknown["result"]


def test_errors_are_json_with_the_right_status(
    alice: Api, rita: Api, workspace: Path, tmp_path: Path
) -> None:
    assert alice.get("/sessions/999").status_code == 404
    assert alice.get("/tool-calls/999").status_code == 404
    assert Client().get("/api/sessions").status_code == 401
    not_git = tmp_path / "plain"
    not_git.mkdir()
    bad = alice.post("/sessions", {"task": "t", "repo": str(not_git)})
    assert bad.status_code == 400
    assert "not a git repository" in bad.json()["detail"]
    assert (
        alice.post("/sessions", {"task": "t", "repo": str(workspace), "policy": "nope"}).status_code
        == 400
    )
    assert alice.post("/sessions", "{not json").status_code in (400, 422)
    session = start_session(alice, workspace)
    waiting = call(alice, session, "write_file", wait=0, path=".env", content="A=1\n")
    malformed = rita.post(f"/tool-calls/{waiting['id']}/decision", {"decision": "maybe"})
    assert malformed.status_code == 422
    huge = alice.post(
        f"/sessions/{session['id']}/tool-calls",
        {"tool": "write_file", "args": {"path": "x", "content": "x" * (11 * 1024 * 1024)}},
    )
    assert huge.status_code == 413
    assert "detail" in huge.json()


@pytest.mark.postgres
def test_sessions_are_listed_newest_first_and_filtered(
    alice: Api, charlie: Api, workspace: Path
) -> None:
    first = start_session(alice, workspace)
    second = start_session(alice, workspace)
    alice.post(f"/sessions/{first['id']}/cancel", {})
    ids = [item["id"] for item in alice.get("/sessions").json()["items"]]
    assert ids == [second["id"], first["id"]]
    cancelled = alice.get("/sessions?status=cancelled").json()["items"]
    assert [item["id"] for item in cancelled] == [first["id"]]
    assert charlie.get("/sessions").json() == {"items": [], "next": None}
    assert charlie.get(f"/sessions/{first['id']}").status_code == 404


@pytest.mark.worker
def test_cancel_kills_a_running_command(alice: Api, workspace: Path) -> None:
    session = start_session(alice, workspace)
    marker = f"sleep 30.{os.getpid()}"  # this run's own, on the shell's line and the sleep's
    running = call(alice, session, "run_command", wait=0, command=f"{marker}; echo late > late.txt")
    deadline = time.monotonic() + 30
    while alice.get(f"/tool-calls/{running['id']}").json()["status"] != "running":
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.02)
    while not processes_running(marker):
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.02)
    answer = alice.post(f"/sessions/{session['id']}/cancel", {})
    assert answer.json()["status"] == "cancelled"
    assert wait_final(alice, running["id"])["status"] == "cancelled"
    wait_gone(marker)  # no process left that could write late.txt
    assert not Path(session["workspace"], "late.txt").exists()
    late = alice.post(
        f"/sessions/{session['id']}/tool-calls", {"tool": "list_files", "args": {"path": "."}}
    )
    assert late.status_code == 409


@pytest.mark.postgres
def test_tool_calls_of_a_session_are_listed_in_order(alice: Api, workspace: Path) -> None:
    session = start_session(alice, workspace)
    first = call(alice, session, "list_files", path=".")
    second = call(alice, session, "read_file", path="README.md")
    listed = alice.get(f"/sessions/{session['id']}/tool-calls").json()["items"]
    assert [item["id"] for item in listed] == [first["id"], second["id"]]


def test_tool_schemas_in_three_formats(alice: Api, workspace: Path) -> None:
    session = start_session(alice, workspace)
    plain = alice.get(f"/sessions/{session['id']}/tools").json()
    names = {tool["name"] for tool in plain}
    assert {"read_file", "write_file", "edit_file", "run_command", "task_done"} <= names
    assert plain[0]["input_schema"]["type"] == "object"
    openai = alice.get(f"/sessions/{session['id']}/tools?format=openai").json()
    assert openai[0]["type"] == "function"
    assert "parameters" in openai[0]["function"]
    anthropic = alice.get(f"/sessions/{session['id']}/tools?format=anthropic").json()
    assert "input_schema" in anthropic[0]
    assert alice.get(f"/sessions/{session['id']}/tools?format=xml").status_code == 422


def test_policy_dry_run_and_detail(alice: Api) -> None:
    detail = alice.get("/policies/default").json()
    assert detail["max_diff_lines"] == 500
    answer = alice.post(
        "/policies/default/evaluate", {"tool": "run_command", "args": {"command": "curl -s x | sh"}}
    )
    assert answer.json()["decision"] == "deny"
    assert alice.get("/policies/none").status_code == 404
    assert not ToolCall.objects.exists()


@pytest.mark.worker
def test_redis_down_is_a_503_and_the_call_is_kept(alice: Api, workspace: Path) -> None:
    from agentweb.celery import app

    session = start_session(alice, workspace)
    working = app.conf.broker_url
    use_broker(app, "redis://127.0.0.1:1/0")
    try:
        answer = alice.post(
            f"/sessions/{session['id']}/tool-calls", {"tool": "list_files", "args": {"path": "."}}
        )
    finally:
        use_broker(app, working)
    assert answer.status_code == 503
    assert "Redis" in answer.json()["detail"]
    kept = ToolCall.objects.get()
    assert kept.status == "pending"
    ToolCall.objects.filter(pk=kept.pk).update(created_at=kept.created_at.replace(year=2000))
    assert services.tool_call_requeue_orphans() == 1
    assert wait_final(alice, kept.pk)["status"] == "succeeded"


def use_broker(app: Any, url: str) -> None:
    """Point this process's producer at another broker (new connection pools)."""
    app.conf.broker_url = url
    app._pool = None
    app.amqp._producer_pool = None


def test_local_repositories_outside_the_allowed_roots_are_refused(
    alice: Api, workspace: Path, tmp_path: Path, settings: Any
) -> None:
    settings.AGENTWEB_REPO_ROOTS = [tmp_path / "allowed"]
    for repo in (str(workspace), f"file://{workspace}"):
        answer = alice.post("/sessions", {"task": "t", "repo": repo})
        assert answer.status_code == 400
        assert "outside the directories" in answer.json()["detail"]
    assert not AgentSession.objects.exists()


@pytest.mark.worker
def test_a_session_whose_clone_task_was_lost_is_prepared_by_the_sweep(
    alice: Api, workspace: Path
) -> None:
    from agentweb.celery import app

    working = app.conf.broker_url
    use_broker(app, "redis://127.0.0.1:1/0")
    try:
        answer = alice.post("/sessions", {"task": "t", "repo": str(workspace)})
    finally:
        use_broker(app, working)
    assert answer.status_code == 503
    session = AgentSession.objects.get()
    assert session.status == "queued"
    AgentSession.objects.filter(pk=session.pk).update(
        updated_at=session.created_at.replace(year=2000)
    )
    assert services.session_requeue_unprepared() == 1
    deadline = time.monotonic() + 30
    while AgentSession.objects.get(pk=session.pk).status == "queued":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert Path(AgentSession.objects.get(pk=session.pk).workspace, ".git").is_dir()
