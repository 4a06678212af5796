"""Tool calls through the services: records, cache, changed-line totals, fail-closed policy."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth.models import User

from tests.unit.helpers import requires_cow
from tools_app import services
from tools_app.models import AgentSession, CachedResult, Decision, Policy, PolicyRule, ToolCall
from tools_app.services.tool_calls import tool_context

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(workspace: Path) -> AgentSession:
    return AgentSession.objects.create(
        task="tidy up",
        repo=str(workspace),
        workspace=str(workspace),
        status=AgentSession.Status.RUNNING,
        policy=Policy.objects.get(name="default"),
    )


def submit(session: AgentSession, tool: str, **args: object) -> ToolCall:
    return services.tool_call_run_in_process(session=session, tool=tool, args=args)


def test_a_second_read_is_answered_from_the_cache(session: AgentSession) -> None:
    first = submit(session, "read_file", path="README.md")
    second = submit(session, "read_file", path="README.md")
    assert (first.from_cache, second.from_cache) == (False, True)
    assert second.result == first.result


def test_writing_a_file_makes_its_reads_and_enclosing_listings_stale(
    session: AgentSession, workspace: Path
) -> None:
    submit(session, "read_file", path="src/app.py")
    submit(session, "read_file", path="README.md")
    submit(session, "list_files", path="src")
    submit(session, "list_files", path=".", recursive=True)
    submit(session, "write_file", path="src/new.py", content="x = 1\n")
    assert set(CachedResult.objects.values_list("tool", "scope")) == {
        ("read_file", "src/app.py"),
        ("read_file", "README.md"),
    }
    listing = submit(session, "list_files", path="src")
    assert not listing.from_cache
    assert "new.py" in listing.result


def test_an_edit_is_seen_by_the_next_read(session: AgentSession) -> None:
    submit(session, "read_file", path="src/app.py")
    edit = submit(session, "edit_file", path="src/app.py", old_string="hello", new_string="hi")
    assert edit.status == "succeeded"
    again = submit(session, "read_file", path="src/app.py")
    assert not again.from_cache
    assert "hi {name}" in again.result


def test_a_command_makes_the_whole_cache_stale(session: AgentSession) -> None:
    submit(session, "read_file", path="README.md")
    command = submit(session, "run_command", command="echo changed > README.md")
    assert command.status == "succeeded", command.result
    assert not CachedResult.objects.exists()
    assert "changed" in submit(session, "read_file", path="README.md").result


def test_changed_lines_add_up_and_a_write_over_the_total_is_denied(
    session: AgentSession, workspace: Path
) -> None:
    Policy.objects.filter(name="default").update(max_diff_lines=10, require_approval_above=100)
    session.refresh_from_db()
    submit(session, "write_file", path="a.txt", content="1\n2\n3\n4\n5\n6\n")
    session.refresh_from_db()
    assert session.total_changed_lines == 6
    denied = submit(session, "write_file", path="b.txt", content="1\n2\n3\n4\n5\n")
    assert denied.status == "denied"
    assert denied.rule == "builtin:max-diff-lines"
    assert not (workspace / "b.txt").exists()


def test_lines_since_the_last_approval_over_the_threshold_need_approval(
    session: AgentSession, workspace: Path
) -> None:
    Policy.objects.filter(name="default").update(require_approval_above=5)
    session.refresh_from_db()
    assert submit(session, "write_file", path="a.txt", content="1\n2\n3\n").status == "succeeded"
    waiting = submit(session, "write_file", path="b.txt", content="1\n2\n3\n")
    assert waiting.status == "awaiting_approval"
    assert waiting.rule == "builtin:require-approval-above"
    assert not (workspace / "b.txt").exists()
    session.refresh_from_db()
    assert session.status == AgentSession.Status.WAITING


def test_a_policy_that_cannot_load_denies_everything(session: AgentSession) -> None:
    PolicyRule.objects.create(
        policy=session.policy, tool="read_file", args={"path": "re:("}, decision="allow"
    )
    call = submit(session, "read_file", path="README.md")
    assert call.status == "denied"
    assert call.rule == "policy-error"
    assert "cannot be loaded" in call.reason


@pytest.mark.postgres
def test_execution_refuses_arguments_that_changed_after_approval(
    session: AgentSession, workspace: Path
) -> None:
    call = submit(session, "write_file", path=".env", content="A=1\n")
    assert call.status == "awaiting_approval"
    ToolCall.objects.filter(pk=call.pk).update(
        status="approved", args={"path": ".env", "content": "A=2\n"}
    )
    ran = services.tool_call_execute(tool_call_id=call.pk)
    assert ran.status == "failed"
    assert "changed after they were approved" in ran.result
    assert (workspace / ".env").read_text() == "SECRET=shh\n"


def approve_by_hand(call: ToolCall, reviewer: User) -> None:
    """What a reviewer's approval leaves behind: the call approved and their Decision row."""
    ToolCall.objects.filter(pk=call.pk).update(status="approved")
    Decision.objects.create(tool_call=call, user=reviewer, decision=Decision.Choice.APPROVE)


@pytest.mark.postgres
def test_an_approved_call_runs_exactly_once(
    session: AgentSession, workspace: Path, reviewer: User
) -> None:
    call = submit(session, "write_file", path=".env", content="A=1\n")
    approve_by_hand(call, reviewer)
    first = services.tool_call_execute(tool_call_id=call.pk)
    (workspace / ".env").write_text("changed by hand\n")
    second = services.tool_call_execute(tool_call_id=call.pk)
    assert first.status == second.status == "succeeded"
    assert (workspace / ".env").read_text() == "changed by hand\n"
    session.refresh_from_db()
    assert session.changed_since_approval == 0
    assert session.total_changed_lines == 2


def test_only_a_persons_decision_row_counts_as_their_approval(
    session: AgentSession, workspace: Path
) -> None:
    """A call the policy sent to a person, approved without any person's Decision row,
    is not treated as approved by a person: its lines still count since the last real
    approval, and its sandbox is not widened."""
    call = submit(session, "write_file", path=".env", content="A=1\n")
    assert call.verdict == "require_approval"
    ToolCall.objects.filter(pk=call.pk).update(status="approved")
    call.refresh_from_db()
    assert not tool_context(session, call).sandbox.approved
    ran = services.tool_call_execute(tool_call_id=call.pk)
    assert ran.status == "succeeded"
    assert (workspace / ".env").read_text() == "A=1\n"
    session.refresh_from_db()
    assert session.changed_since_approval == 2


def test_invalid_arguments_are_recorded_as_failed(session: AgentSession) -> None:
    call = submit(session, "read_file", path="README.md", offset=0)
    assert call.status == "failed"
    assert "offset" in call.result
    assert call.rule == "validation"


def test_git_status_is_cached_until_a_write_changes_the_tree(session: AgentSession) -> None:
    first = submit(session, "git_status")
    assert not first.from_cache
    assert submit(session, "git_status").from_cache
    log = submit(session, "git_log", count=1)
    submit(session, "write_file", path="new.txt", content="x\n")
    after = submit(session, "git_status")
    assert not after.from_cache
    assert "new.txt" in after.result
    assert submit(session, "git_log", count=1).from_cache
    assert log.status == "succeeded"


def test_a_commit_makes_the_log_stale(session: AgentSession) -> None:
    submit(session, "git_log", count=1)
    submit(session, "write_file", path="new.txt", content="x\n")
    commit = submit(session, "git_commit", message="Add new.txt")
    assert commit.status == "succeeded", commit.result
    log = submit(session, "git_log", count=1)
    assert not log.from_cache
    assert "Add new.txt" in log.result


def test_without_bubblewrap_the_system_check_warns(tmp_path: Path) -> None:
    """A PATH that has git but no bwrap: commands would run unsandboxed, and `check` says so."""
    root = Path(__file__).resolve().parents[2]
    only_git = tmp_path / "bin"
    only_git.mkdir()
    (only_git / "git").symlink_to(shutil.which("git") or "/usr/bin/git")
    env = {**os.environ, "PATH": str(only_git), "AGENTWEB_VAR": str(tmp_path / "var")}
    done = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=root, env=env, capture_output=True, text=True
    )
    assert "agentweb.W001" in done.stderr + done.stdout
    assert "unsandboxed" in done.stderr + done.stdout


@requires_cow
def test_the_system_check_says_which_host_uid_commands_run_as(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "AGENTWEB_VAR": str(tmp_path / "var"), "AGENTWEB_SANDBOX_UID": "61234"}
    check = [sys.executable, "manage.py", "check"]
    done = subprocess.run(check, cwd=root, env=env, capture_output=True, text=True)
    said = done.stderr + done.stdout
    assert "agentweb.I001" in said
    if os.geteuid() == 0:
        assert "commands run as host uid 61234" in said and "never as root" in said
    else:
        assert f"commands run as host uid {os.geteuid()}" in said
    env["AGENTWEB_SANDBOX_UID"] = "0"
    done = subprocess.run(check, cwd=root, env=env, capture_output=True, text=True)
    if os.geteuid() == 0:
        assert "agentweb.E001" in done.stderr and "AGENTWEB_SANDBOX_UID='0'" in done.stderr


@pytest.mark.postgres
def test_a_remembered_rule_matches_exactly_those_arguments_lists_and_numbers_too(
    session: AgentSession,
) -> None:
    from django.contrib.auth.models import User

    args = {"summary": "done [1/2] *", "files_changed": ["a.py", "b*.py"]}
    rule = services.policy_rule_remember(
        policy=session.policy, tool="task_done", args=args, user=User.objects.create_user("rita")
    )
    session.policy.refresh_from_db()

    def decided_by(**call_args: object) -> str:
        decision = services.policy_evaluate(
            policy=session.policy, tool="task_done", args=call_args,
            workspace=Path(session.workspace), counters=services.session_counters(session),
        )  # fmt: skip
        return decision.rule

    assert decided_by(**args) == f"rule {rule.pk}"
    assert decided_by(summary="done [1/2] x", files_changed=["a.py"]) != f"rule {rule.pk}"
    assert decided_by(summary=args["summary"], files_changed=["c.py"]) != f"rule {rule.pk}"
