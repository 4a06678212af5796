"""Secrets stay hidden from commands, through the whole path an agent's call takes:
policy, approval, sandbox, effect and the result the agent reads. Each attack is judged
by the agent's result text, the workspace on disk and git afterwards."""

from __future__ import annotations

import json
import subprocess
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

from tests.helpers import files_holding, git
from tests.unit.helpers import requires_cow
from tools_app import services
from tools_app.models import AgentSession, Policy, ToolCall

pytestmark = [pytest.mark.django_db, requires_cow]

SECRET = "sk_live_abc123xyz"


@pytest.fixture
def tracked(workspace: Path) -> Path:
    """The workspace's `.env` holds a live key, committed (git's objects hold it too)."""
    (workspace / ".env").write_text(f"SECRET={SECRET}\n")
    git(workspace, "-c", "user.email=t@example.com", "-c", "user.name=T", "commit", "-qam", "key")
    return workspace


@pytest.fixture
def session(tracked: Path) -> AgentSession:
    return session_on(tracked, Policy.objects.get(name="default"))


@pytest.fixture
def lax_session(tracked: Path) -> AgentSession:
    """A policy whose admin allowed every command by rule: only the sandbox is left."""
    policy = services.policy_import(
        data={"name": "lax", "rules": [{"tool": "run_command", "decision": "allow"}]}
    )
    return session_on(tracked, policy)


def session_on(workspace: Path, policy: Policy) -> AgentSession:
    return AgentSession.objects.create(
        task="work",
        repo=str(workspace),
        workspace=str(workspace),
        status=AgentSession.Status.RUNNING,
        policy=policy,
    )


def tool(session: AgentSession, name: str, **args: object) -> ToolCall:
    return services.tool_call_run_in_process(session=session, tool=name, args=args)


def command(session: AgentSession, text: str) -> ToolCall:
    return tool(session, "run_command", command=text)


def approve(call: ToolCall, user: User) -> ToolCall:
    services.tool_call_decide(call=call, user=user, scope="session", decision="approve")
    return services.tool_call_execute(tool_call_id=call.pk)


@pytest.mark.parametrize(
    "attack",
    ["cat .env", "grep -r sk_live .", "base64 .env", "cp .env docs.txt", "cat ./.e*"],
)
def test_an_allowed_command_never_shows_a_secret_file(
    attack: str, lax_session: AgentSession, tracked: Path
) -> None:
    call = command(lax_session, attack)
    assert call.status == "succeeded"
    assert SECRET not in call.result
    assert files_holding(tracked, SECRET) == [".env"]
    read = tool(lax_session, "read_file", path="docs.txt")
    assert SECRET not in read.result


def test_a_copy_of_the_secret_is_an_empty_file(lax_session: AgentSession, tracked: Path) -> None:
    command(lax_session, "cp .env docs.txt")
    assert (tracked / "docs.txt").read_bytes() == b""
    assert (tracked / ".env").read_text() == f"SECRET={SECRET}\n"


def test_git_show_of_a_tracked_secret_prints_a_placeholder(session: AgentSession) -> None:
    """The sandbox's object store holds a placeholder where the secret blob was."""
    call = command(session, "git show HEAD:.env")
    assert call.status == "succeeded"
    assert SECRET not in call.result
    assert "[agentweb: withheld." in call.result


@pytest.mark.parametrize(
    "transform",
    ["| rev", "| base64", "| tr a-z A-Z", "| cut -c1-12", "| cut -c13-", "| fold -w 4", "| od -c"],
)
def test_no_transform_of_a_tracked_secret_gets_past_the_sandbox(
    transform: str, lax_session: AgentSession
) -> None:
    """Issue 30's six transforms, through the whole engine: nothing of the value."""
    call = command(lax_session, f"git show HEAD:.env {transform}")
    assert call.status == "succeeded"
    for piece in (SECRET[:8], SECRET[8:], "abc123", "xyz"):
        for text in (call.result, call.result[::-1], call.result.lower()):
            assert piece not in "".join(text.split()).replace("\\n", "")


def test_a_command_naming_the_secret_waits_and_once_approved_sees_it(
    session: AgentSession, reviewer: User
) -> None:
    call = command(session, "grep -c sk_live .env")
    assert (call.status, call.rule) == ("awaiting_approval", "builtin:command-secret")
    assert call.preview["secrets_visible"] == [".env"]
    assert call.result == ""
    done = approve(call, reviewer)
    assert done.status == "succeeded"
    assert done.result.splitlines()[1] == "1"  # the command read the real file


def test_an_approved_command_sees_only_the_secrets_its_card_named(
    session: AgentSession, tracked: Path, reviewer: User
) -> None:
    (tracked / "deploy.key").write_text("KEYBYTES-0123456789\n")
    call = command(session, "cat .env; cat deploy.key; echo end")
    assert sorted(call.preview["secrets_visible"]) == [".env", "deploy.key"]
    other = command(session, "npm install && cat README.md deploy.key")
    assert other.status == "awaiting_approval"
    assert other.preview["secrets_visible"] == ["deploy.key"]
    ran = approve(other, reviewer)
    assert "KEYBYTES" in ran.result and SECRET not in ran.result


def test_a_secret_written_through_agentweb_is_hidden_from_the_next_command(
    lax_session: AgentSession, tracked: Path, reviewer: User
) -> None:
    command(lax_session, "true")  # the index exists before the write
    write = tool(
        lax_session, "write_file", path="prod/.env.production", content="TOKEN=tok_998877\n"
    )
    if write.status == "awaiting_approval":
        write = approve(write, reviewer)
    assert write.status == "succeeded"
    call = command(lax_session, "cat prod/.env.production; grep -r tok_ .")
    assert "tok_998877" not in call.result


def test_every_result_loses_the_known_secret_values(
    lax_session: AgentSession, tracked: Path
) -> None:
    (tracked / "notes.txt").write_text(f"pasted by hand: {SECRET}\n")
    for call in [
        tool(lax_session, "read_file", path="notes.txt"),
        tool(lax_session, "search_codebase", pattern="sk_live"),
        command(lax_session, "cat notes.txt"),
        tool(lax_session, "git_status"),
    ]:
        assert SECRET not in call.result, call.tool
    assert "[redacted]" in tool(lax_session, "read_file", path="notes.txt").result


def test_git_diff_leaves_a_changed_tracked_secret_out_and_says_so(
    session: AgentSession, tracked: Path
) -> None:
    (tracked / ".env").write_text("SECRET=sk_live_rotated999\n")
    (tracked / "README.md").write_text("# changed\n")
    call = tool(session, "git_diff")
    assert call.status == "succeeded"
    assert "rotated999" not in call.result and SECRET not in call.result
    assert "1 secret file left out: .env" in call.result
    assert "+# changed" in call.result


def test_the_session_page_flags_a_repository_that_tracks_a_secret(
    session: AgentSession, superuser: User
) -> None:
    client = Client()
    client.force_login(superuser)
    page = client.get(f"/sessions/{session.pk}/").content.decode()
    assert "Tracked secrets" in page and ".env" in page


def test_the_session_page_says_nothing_when_no_secret_is_tracked(
    tmp_path: Path, superuser: User
) -> None:
    root = tmp_path / "clean"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".env").write_text("A=untracked-value\n")
    clean = session_on(root, Policy.objects.get(name="default"))
    client = Client()
    client.force_login(superuser)
    assert "Tracked secrets" not in client.get(f"/sessions/{clean.pk}/").content.decode()


def test_the_policy_dry_run_notes_a_tracked_secret(tracked: Path) -> None:
    out = StringIO()
    args = ["--workspace", str(tracked), "read_file", '{"path": "README.md"}']
    call_command("evaluate_policy", *args, stdout=out)
    answer = json.loads(out.getvalue().strip().splitlines()[-1])
    assert answer["decision"] == "allow"
    assert ".env" in answer["note"] and "tracks" in answer["note"]


def test_the_evaluate_api_notes_a_tracked_secret_for_a_session(
    session: AgentSession, superuser: User
) -> None:
    client = Client()
    client.force_login(superuser)
    response = client.post(
        "/api/policies/default/evaluate",
        {"tool": "run_command", "args": {"command": "cat .env"}, "session": session.pk},
        content_type="application/json",
    )
    answer = response.json()
    assert (answer["decision"], answer["rule"]) == ("require_approval", "builtin:command-secret")
    assert ".env" in answer["note"]


def test_a_workspace_on_a_worker_host_is_still_flagged_on_the_web_host(
    tracked: Path, superuser: User, tmp_path: Path, settings: Any
) -> None:
    """The worker host that clones the repository records what it tracks; a web host
    without the workspace (another machine) says so from that record."""
    settings.AGENTWEB_WORKSPACES = tmp_path / "workspaces"
    started = services.session_start(user=superuser, task="tidy", repo=str(tracked))
    session = services.session_prepare(session_id=started.pk, queue="host.worker-1")
    assert session.status == "running" and session.tracked_secrets == [".env"]
    Path(session.workspace).rename(tmp_path / "on-the-worker-host")  # not on this web host
    client = Client()
    client.force_login(superuser)
    page = client.get(f"/sessions/{session.pk}/").content.decode()
    assert "Tracked secrets" in page and ".env" in page
    body = {"tool": "read_file", "args": {"path": "README.md"}, "session": session.pk}
    response = client.post("/api/policies/default/evaluate", body, content_type="application/json")
    assert ".env" in response.json()["note"]
    other = Policy.objects.create(name="other")  # recorded for its own policy only
    response = client.post("/api/policies/other/evaluate", body, content_type="application/json")
    assert other.pk and response.json()["note"] is None


def test_a_commit_recording_a_secret_file_waits_for_a_person(
    session: AgentSession, tracked: Path
) -> None:
    (tracked / ".env").write_text("SECRET=sk_live_rotated999\n")
    call = tool(session, "git_commit", message="rotate")
    assert (call.status, call.rule) == ("awaiting_approval", "builtin:commit-secret")
    assert "rotated999" not in json.dumps(call.preview)
    assert call.preview["secrets_left_out"] == [".env"]
    head = subprocess.run(
        ["git", "-C", str(tracked), "show", "HEAD:.env"], capture_output=True, text=True
    )
    assert head.stdout == f"SECRET={SECRET}\n"  # nothing committed


def test_trying_a_call_on_a_session_in_the_admin_notes_a_tracked_secret(
    session: AgentSession, admin_client: Client
) -> None:
    policy = Policy.objects.get(name="default")
    url = f"/admin/tools_app/policy/{policy.pk}/try/"
    args = '{"command": "cat .env"}'
    page = admin_client.post(url, {"tool": "run_command", "args": args, "session": session.pk})
    text = page.content.decode()
    assert "builtin:command-secret" in text
    assert 'class="tracked-secrets"' in text and ".env" in text
    missing = admin_client.post(url, {"tool": "run_command", "args": args, "session": 999999})
    assert "There is no session 999999" in missing.content.decode()
