"""Commands are writes: what a command changed is applied only as far as the policy
allows, and what waits for a person is applied exactly as shown. Judged by the files
and git afterwards, not by verdicts."""

from __future__ import annotations

import io
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from tests.unit.helpers import requires_cow
from tools_app import services
from tools_app.core.tools import cow_probe
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


def test_an_effect_with_a_protected_path_waits_whole_for_its_own_decision(
    session: AgentSession, workspace: Path, reviewer: User
) -> None:
    ran = run_script(
        session, "echo hi > notes.txt; echo TOKEN=1 > package.json; echo x > Dockerfile"
    )
    assert ran.status == "succeeded"
    assert not (workspace / "notes.txt").exists()  # one change: nothing applies before
    assert (workspace / "package.json").read_text() == '{"name": "demo"}\n'
    assert not (workspace / "Dockerfile").exists()
    [held] = held_calls(session)
    assert held.status == "awaiting_approval"
    assert held.preview["files"] == ["Dockerfile", "notes.txt", "package.json"]
    assert "+TOKEN=1" in held.preview["diff"]
    assert "+hi" in held.preview["diff"]
    assert f"tool call {held.pk}" in ran.result

    assert decide(held, reviewer).status == "succeeded"
    assert (workspace / "package.json").read_text() == "TOKEN=1\n"
    assert (workspace / "Dockerfile").read_text() == "x\n"
    assert (workspace / "notes.txt").read_text() == "hi\n"


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
    assert not (workspace / "ok.txt").exists()  # refused whole, not in part


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
        ("find . -type f -delete", []),  # it deletes .git's files too: refused whole
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

    from tools_app.core.tools import cow_probe

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for program in ("git", "bash", "sh", "echo", "cat", "sleep"):
        found = shutil.which(program)
        if found:
            (bin_dir / program).symlink_to(found)
    monkeypatch.setenv("PATH", str(bin_dir))
    cow_probe.forget_probe()
    yield
    monkeypatch.undo()
    cow_probe.forget_probe()


@pytest.mark.usefixtures("host_without_sandbox")
def test_without_a_sandbox_every_command_waits_for_a_person(
    session: AgentSession, workspace: Path
) -> None:
    call = command(session, "(sleep 1; echo late > late.txt) & echo started > f.txt")
    assert (call.status, call.rule) == ("awaiting_approval", "builtin:no-sandbox")
    assert "unsandboxed" in call.reason
    assert cow_probe.cow_unavailable_reason() == "unshare or bwrap is not on PATH"
    assert call.preview["sandboxed"] is False
    assert not (workspace / "f.txt").exists()
    assert not (workspace / "late.txt").exists()


@requires_cow
def test_a_failed_sandbox_probe_is_tried_again_later_without_holding_anyone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A probe that failed by chance (at a worker's start, say) is not its answer for the
    process's life: after PROBE_RETRY_SECONDS the sandbox is probed again and found. The
    probe tried again runs on a thread of its own: whoever asks (a judged call, a worker's
    heartbeat on its timer) gets the last answer at once meanwhile. The log says why
    commands wait for a person, and when they no longer do."""
    monkeypatch.setenv("PATH", str(tmp_path))  # neither unshare nor bubblewrap
    cow_probe.forget_probe()
    try:
        assert not cow_probe.cow_available()  # the first probe, here: failed
        monkeypatch.undo()  # the tools are back
        assert not cow_probe.cow_available()  # kept for PROBE_RETRY_SECONDS
        assert cow_probe.cow_unavailable_reason() == "unshare or bwrap is not on PATH"
        monkeypatch.setattr(cow_probe, "PROBE_RETRY_SECONDS", 0.0)
        started = time.monotonic()
        assert not cow_probe.cow_available()  # the last answer; a thread probes
        assert time.monotonic() - started < 0.5
        deadline = time.monotonic() + 60
        while not cow_probe.cow_available():
            assert time.monotonic() < deadline, "the probe tried again never found it"
            time.sleep(0.1)
        assert cow_probe.cow_unavailable_reason() == ""
        said = [r.getMessage() for r in caplog.records if r.name == cow_probe.__name__]
        assert said == [
            "the copy-on-write sandbox does not work in this process (unshare or bwrap is not "
            "on PATH): every command waits for a person; it is probed again in 30 s",
            "the copy-on-write sandbox works again: commands run sandboxed",
        ]
    finally:
        cow_probe.forget_probe()


@pytest.fixture
def locked_temp_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """TMPDIR as `mktemp -d` makes it: mode 0700, root's alone (the worker is root)."""
    import tempfile

    from tools_app.core.tools import cow_probe, sandbox_user

    if not sandbox_user.worker_is_root():
        pytest.skip("only a root worker hands its commands to another uid")
    locked = Path(tempfile.mkdtemp(prefix="locked-tmp-"))
    monkeypatch.setenv("TMPDIR", str(locked))
    monkeypatch.setattr(tempfile, "tempdir", str(locked))
    cow_probe.forget_probe()
    yield locked
    monkeypatch.undo()
    cow_probe.forget_probe()
    shutil.rmtree(locked)


def test_a_temp_dir_the_sandbox_cannot_enter_is_named_as_the_cause(
    session: AgentSession, workspace: Path, locked_temp_dir: Path
) -> None:
    """Every command still waits for a person (failing closed), and the reason, the
    system check and `cow_unavailable_reason()` all name the temp dir, not bubblewrap."""
    call = command(session, "echo started > f.txt")
    assert (call.status, call.rule) == ("awaiting_approval", "builtin:no-sandbox")
    cause = f"cannot enter {locked_temp_dir} (mode 700, owner uid 0)"
    assert cause in call.reason and "set TMPDIR" in call.reason, call.reason
    assert "bubblewrap" not in call.reason and not (workspace / "f.txt").exists()
    assert cause in cow_probe.cow_unavailable_reason()
    out = io.StringIO()
    call_command("check", stdout=out, stderr=out)
    assert "agentweb.W001" in out.getvalue() and cause in out.getvalue(), out.getvalue()


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


# --- An effect is one change (issue 21, finding 3) ----------------------------------------


def test_moving_a_protected_file_waits_whole_and_nothing_lands_under_the_new_name(
    session: AgentSession, workspace: Path, reviewer: User
) -> None:
    """The issue's `mv .env moved.env` (a secret is masked now: it cannot move at all),
    with package.json, which is protected and not secret."""
    ran = run_script(session, "mv package.json moved.json")
    assert not (workspace / "moved.json").exists()
    assert (workspace / "package.json").read_text() == '{"name": "demo"}\n'
    [held] = held_calls(session)
    assert held.preview["files"] == ["moved.json", "package.json"]
    assert '-{"name": "demo"}' in held.preview["diff"]
    assert '+{"name": "demo"}' in held.preview["diff"]
    assert "nothing the command changed is in the workspace yet" in ran.result

    decide(held, reviewer)
    assert not (workspace / "package.json").exists()
    assert (workspace / "moved.json").read_text() == '{"name": "demo"}\n'


def test_a_denied_move_leaves_both_names_as_they_were(
    session: AgentSession, workspace: Path, reviewer: User
) -> None:
    run_script(session, "mv package.json moved.json")
    [held] = held_calls(session)
    decide(held, reviewer, "deny")
    assert (workspace / "package.json").read_text() == '{"name": "demo"}\n'
    assert not (workspace / "moved.json").exists()


def test_a_secret_cannot_be_moved_to_an_unprotected_name(
    session: AgentSession, workspace: Path
) -> None:
    ran = run_script(session, "mv .env moved.env; cat moved.env .env")
    assert "shh" not in ran.result
    assert (workspace / ".env").read_text() == "SECRET=shh\n"
    assert not (workspace / "moved.env").exists()
    assert held_calls(session) == []


def test_a_device_node_refuses_the_whole_effect(session: AgentSession, workspace: Path) -> None:
    ran = run_script(session, "echo hi > notes.txt; mkfifo pipe")
    assert "nothing the command changed was applied" in ran.result
    assert "pipe: a fifo cannot be applied" in ran.result
    assert not (workspace / "notes.txt").exists()
    assert not (workspace / "pipe").exists()
    assert held_calls(session) == []


def test_git_status_beside_a_change_does_not_refuse_it(
    session: AgentSession, workspace: Path
) -> None:
    """`git status` rewrites .git/index (its stat cache) in the view: that is no change."""
    index = (workspace / ".git" / "index").read_bytes()
    ran = run_script(session, "echo hi > notes.txt; git status; git diff")
    assert (workspace / "notes.txt").read_text() == "hi\n", ran.result
    assert "nothing the command changed was applied" not in ran.result
    assert (workspace / ".git" / "index").read_bytes() == index


def test_staging_in_a_command_refuses_the_whole_effect(
    session: AgentSession, workspace: Path
) -> None:
    index = (workspace / ".git" / "index").read_bytes()
    ran = run_script(session, "echo hi > notes.txt; git rm -q --cached README.md")
    assert "commands never change .git" in ran.result
    assert ".git/index" in ran.result
    assert not (workspace / "notes.txt").exists()
    assert (workspace / ".git" / "index").read_bytes() == index
    assert git_status(workspace) == "?? gen.sh\n"


# --- Counting cannot be steered (issue 21, finding 4) -------------------------------------


def test_ignoring_tracked_files_first_does_not_hide_their_lines(
    session: AgentSession, workspace: Path
) -> None:
    """Add `src/` to .gitignore, then write 50,000 lines into tracked src/app.py and take
    the line out again in the same command: the lines count, nothing applies."""
    first = run_script(session, "echo src/ >> .gitignore")
    assert (workspace / ".gitignore").read_text() == "src/\n", first.result
    ran = run_script(session, "seq 1 50000 > src/app.py; : > .gitignore")
    assert "max_diff_lines" in ran.result
    assert (workspace / "src" / "app.py").read_text().startswith("def greet")
    assert (workspace / ".gitignore").read_text() == "src/\n"
    session.refresh_from_db()
    assert session.total_changed_lines == 1  # the .gitignore line, nothing more


def test_ignoring_tracked_files_within_one_command_does_not_hide_their_lines(
    session: AgentSession, workspace: Path
) -> None:
    ran = run_script(session, "echo src/ >> .gitignore; seq 1 50000 > src/app.py; rm .gitignore")
    assert "max_diff_lines" in ran.result
    assert (workspace / "src" / "app.py").read_text().startswith("def greet")
    assert not (workspace / ".gitignore").exists()
    session.refresh_from_db()
    assert session.total_changed_lines == 0


def test_a_tracked_file_under_an_ignored_directory_counts_towards_approval(
    session: AgentSession, workspace: Path
) -> None:
    (workspace / ".gitignore").write_text("src/\n")
    run_script(session, "seq 1 300 > src/app.py")
    assert (workspace / "src" / "app.py").read_text().startswith("def greet")
    [held] = held_calls(session)
    assert held.changed_lines >= 300
    assert "require_approval_above" in held.reason


def test_deleting_the_index_refuses_the_whole_effect(
    session: AgentSession, workspace: Path
) -> None:
    ran = run_script(session, "echo hi > notes.txt; rm .git/index")
    assert "commands never change .git" in ran.result
    assert not (workspace / "notes.txt").exists()
    assert (workspace / ".git" / "index").exists()


def test_cancelling_the_session_drops_the_effect_it_held(
    session: AgentSession, workspace: Path, settings: Any, tmp_path: Path
) -> None:
    """A held effect nobody will apply leaves no bytes under AGENTWEB_VAR/effects, whether
    it was denied, expired or, as here, cancelled with its session."""
    settings.AGENTWEB_VAR = tmp_path / "var"
    store = tmp_path / "var" / "effects"
    run_script(session, "echo TOKEN=1 > package.json")
    [held] = held_calls(session)
    assert [p for p in store.rglob("*") if p.is_file()]
    services.session_cancel(session=session)
    held.refresh_from_db()
    assert held.status == "cancelled"
    assert [p for p in store.rglob("*") if p.is_file()] == []
    assert (workspace / "package.json").read_text() == '{"name": "demo"}\n'
