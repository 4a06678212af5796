"""Commands are writes: what a command changed is applied only as far as the policy
allows, and what waits for a person is applied exactly as shown. Judged by the files
and git afterwards, not by verdicts."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from django.contrib.auth.models import User

from tests.unit.helpers import requires_cow
from tools_app import services
from tools_app.models import AgentSession, Policy, ToolCall

pytestmark = [pytest.mark.django_db, requires_cow]


@pytest.fixture
def session(workspace: Path) -> AgentSession:
    return AgentSession.objects.create(
        task="build it",
        repo=str(workspace),
        workspace=str(workspace),
        status=AgentSession.Status.RUNNING,
        policy=Policy.objects.get(name="default"),
    )


def command(session: AgentSession, text: str) -> ToolCall:
    return services.tool_call_run_in_process(
        session=session, tool="run_command", args={"command": text}
    )


def run_script(session: AgentSession, body: str) -> ToolCall:
    """A script the analysis cannot see into: only its effect tells what it did."""
    Path(session.workspace, "gen.sh").write_text(body)
    return command(session, "bash gen.sh")


def held_calls(session: AgentSession) -> list[ToolCall]:
    return list(session.tool_calls.filter(tool="apply_command_effect").order_by("id"))


def decide(call: ToolCall, user: User, decision: str = "approve") -> ToolCall:
    services.tool_call_decide(call=call, user=user, scope="session", decision=decision)
    if decision == "approve":  # the worker's part, in this process
        return services.tool_call_execute(tool_call_id=call.pk)
    return ToolCall.objects.get(pk=call.pk)


def git_status(workspace: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(workspace), "status", "--porcelain"], capture_output=True, text=True
    )
    return done.stdout


def test_plain_changes_apply_and_protected_ones_wait_for_their_own_decision(
    session: AgentSession, workspace: Path, reviewer: User
) -> None:
    ran = run_script(
        session, "echo hi > notes.txt; echo TOKEN=1 > package.json; echo x > Dockerfile"
    )
    assert ran.status == "succeeded"
    assert (workspace / "notes.txt").read_text() == "hi\n"
    assert (workspace / "package.json").read_text() == '{"name": "demo"}\n'
    assert not (workspace / "Dockerfile").exists()
    [held] = held_calls(session)
    assert held.status == "awaiting_approval"
    assert held.preview["files"] == ["Dockerfile", "package.json"]
    assert "+TOKEN=1" in held.preview["diff"]
    assert f"tool call {held.pk}" in ran.result

    assert decide(held, reviewer).status == "succeeded"
    assert (workspace / "package.json").read_text() == "TOKEN=1\n"
    assert (workspace / "Dockerfile").read_text() == "x\n"


def test_a_denied_effect_never_reaches_the_workspace(
    session: AgentSession, workspace: Path, reviewer: User
) -> None:
    run_script(session, "echo TOKEN=1 > package.json")
    [held] = held_calls(session)
    assert decide(held, reviewer, "deny").status == "denied"
    assert (workspace / "package.json").read_text() == '{"name": "demo"}\n'


def test_a_command_never_writes_git_even_when_approved(
    session: AgentSession, workspace: Path, reviewer: User
) -> None:
    hook = workspace / ".git" / "hooks" / "pre-commit"
    text = "python3 -c \"open('.git/hooks/pre-commit','w').write('evil')\"; echo ok > ok.txt"
    waiting = command(session, text)
    assert waiting.status == "awaiting_approval"  # inline code: a person first
    done = decide(waiting, reviewer)
    assert done.status == "succeeded"
    assert "commands never change .git" in done.result
    assert not hook.exists()
    assert (workspace / "ok.txt").read_text() == "ok\n"


def test_an_approved_command_still_shows_its_protected_changes(
    session: AgentSession, workspace: Path, reviewer: User
) -> None:
    text = "python3 -c \"open('.npmrc','w').write('script-shell=./sh')\""
    done = decide(command(session, text), reviewer)
    assert done.status == "succeeded"
    assert not (workspace / ".npmrc").exists()
    [held] = held_calls(session)
    assert "+script-shell=./sh" in held.preview["diff"]


def test_lines_a_command_writes_count_like_a_write(session: AgentSession, workspace: Path) -> None:
    ran = command(session, "seq 1 5000 > gen.txt")
    assert "max_diff_lines" in ran.result
    assert not (workspace / "gen.txt").exists()
    session.refresh_from_db()
    assert session.total_changed_lines == 0
    command(session, "seq 1 30 > small.txt")
    session.refresh_from_db()
    assert session.total_changed_lines == 30
    assert (workspace / "small.txt").exists()


def test_over_the_approval_threshold_the_whole_effect_waits(
    session: AgentSession, workspace: Path, reviewer: User
) -> None:
    command(session, "seq 1 250 > big.txt")
    assert not (workspace / "big.txt").exists()
    [held] = held_calls(session)
    assert held.changed_lines == 250
    decide(held, reviewer)
    assert len((workspace / "big.txt").read_text().splitlines()) == 250
    session.refresh_from_db()
    assert (session.total_changed_lines, session.changed_since_approval) == (250, 0)


def test_ignored_files_count_no_lines(session: AgentSession, workspace: Path) -> None:
    (workspace / ".gitignore").write_text("build/\n")
    command(session, "mkdir -p build && seq 1 5000 > build/out.txt")
    assert len((workspace / "build" / "out.txt").read_text().splitlines()) == 5000
    session.refresh_from_db()
    assert session.total_changed_lines == 0


@pytest.mark.parametrize(
    ("spelling", "gone"),
    [
        ("rm -rf src README.md", ["README.md", "src/app.py"]),
        ("find . -type f -delete", ["README.md", "src/app.py"]),
        ("git clean -fdx; git checkout -- .", []),
    ],
)
def test_deletions_apply_or_wait_but_never_touch_git(
    session: AgentSession, workspace: Path, spelling: str, gone: list[str]
) -> None:
    git_before = {p: p.read_bytes() for p in (workspace / ".git").rglob("*") if p.is_file()}
    call = command(session, spelling)
    git_after = {p: p.read_bytes() for p in (workspace / ".git").rglob("*") if p.is_file()}
    assert git_after == git_before
    assert (workspace / ".env").read_text() == "SECRET=shh\n"  # protected: never unseen
    assert (workspace / "package.json").exists()
    if call.status == "awaiting_approval":  # a person first: nothing ran
        assert git_status(workspace) == ""
    else:
        assert call.status == "succeeded"
        assert all(not (workspace / path).exists() for path in gone), call.result


def test_an_effect_is_not_applied_over_a_file_changed_since(
    session: AgentSession, workspace: Path, reviewer: User
) -> None:
    run_script(session, "echo TOKEN=1 > package.json")
    [held] = held_calls(session)
    (workspace / "package.json").write_text("EDITED=1\n")
    done = decide(held, reviewer)
    assert done.status == "failed"
    assert (workspace / "package.json").read_text() == "EDITED=1\n"


@pytest.fixture
def host_without_sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A PATH with git and the shells but neither unshare nor bubblewrap."""
    import shutil

    from tools_app.tools import overlay

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for program in ("git", "bash", "sh", "echo", "cat", "sleep"):
        found = shutil.which(program)
        if found:
            (bin_dir / program).symlink_to(found)
    monkeypatch.setenv("PATH", str(bin_dir))
    overlay.cow_available.cache_clear()
    yield
    monkeypatch.undo()
    overlay.cow_available.cache_clear()


@pytest.mark.usefixtures("host_without_sandbox")
def test_without_a_sandbox_every_command_waits_for_a_person(
    session: AgentSession, workspace: Path
) -> None:
    call = command(session, "(sleep 1; echo late > late.txt) & echo started > f.txt")
    assert (call.status, call.rule) == ("awaiting_approval", "builtin:no-sandbox")
    assert "unsandboxed" in call.reason
    assert call.preview["sandboxed"] is False
    assert not (workspace / "f.txt").exists()
    assert not (workspace / "late.txt").exists()


def test_lines_ending_in_carriage_returns_count_one_by_one(session: AgentSession) -> None:
    content = "\r".join(f"x{n} = {n}" for n in range(3000))
    call = services.tool_call_run_in_process(
        session=session, tool="write_file", args={"path": "flat.py", "content": content}
    )
    assert (call.status, call.rule) == ("denied", "builtin:max-diff-lines")
    assert call.changed_lines >= 3000
    assert not Path(session.workspace, "flat.py").exists()


def test_an_agent_cannot_apply_a_held_effect_itself(session: AgentSession, workspace: Path) -> None:
    run_script(session, "echo TOKEN=1 > package.json")
    [held] = held_calls(session)
    forged = services.tool_call_run_in_process(
        session=session, tool="apply_command_effect", args=held.args
    )
    assert forged.status == "failed"
    assert "Unknown tool" in forged.result
    assert (workspace / "package.json").read_text() == '{"name": "demo"}\n'
    assert ToolCall.objects.get(pk=held.pk).status == "awaiting_approval"


def test_removing_a_directory_that_holds_a_protected_file_waits(
    session: AgentSession, workspace: Path, reviewer: User
) -> None:
    (workspace / "config").mkdir()
    (workspace / "config" / "Dockerfile").write_text("FROM keep\n")
    (workspace / "config" / "app.ini").write_text("a = 1\n")
    run_script(session, "rm -rf config")
    assert (workspace / "config" / "Dockerfile").read_text() == "FROM keep\n"
    [held] = held_calls(session)
    assert held.preview["files"] == ["config"]
    assert "deleted directory config/" in held.preview["diff"]
    decide(held, reviewer)
    assert not (workspace / "config").exists()


def test_removing_a_directory_counts_the_lines_it_held(
    session: AgentSession, workspace: Path
) -> None:
    (workspace / "lib").mkdir()
    (workspace / "lib" / "big.py").write_text("x = 1\n" * 600)
    ran = run_script(session, "rm -rf lib")
    assert "max_diff_lines" in ran.result
    assert (workspace / "lib" / "big.py").exists()


def test_removing_a_directory_with_a_nested_repository_never_applies(
    session: AgentSession, workspace: Path
) -> None:
    nested = workspace / "vendor" / "lib"
    nested.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(nested)], check=True)
    ran = run_script(session, "rm -rf vendor")
    assert "commands never change .git" in ran.result
    assert (nested / ".git" / "HEAD").exists()
