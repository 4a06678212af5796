"""run_command: exit codes, output, timeouts that kill the whole group, a scrubbed env."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest

from tests.helpers import wait_gone
from tests.unit.helpers import call, make_ctx, make_workspace, requires_cow
from tools_app.core.tools.base import SandboxOptions, ToolContext
from tools_app.core.tools.effect import Effect
from tools_app.core.tools.errors import ToolError
from tools_app.core.tools.overlay import run_copy_on_write
from tools_app.core.tools.processes import OUTPUT_LIMIT, run_plain
from tools_app.core.tools.shell import NO_HANDLER_NOTE, format_result

MODES = [
    pytest.param(False, id="plain"),
    pytest.param(True, id="copy-on-write", marks=[pytest.mark.sandbox, requires_cow]),
]


KILL_GRACE = 0.2  # not the real 5 s: a test of a timeout need not sleep through it


def _run(ws: Path, command: str, sandboxed: bool, timeout: float = 30) -> str:
    argv = ["bash", "-c", command]
    if not sandboxed:
        return format_result(run_plain(ws, argv, timeout=timeout, kill_grace=KILL_GRACE), timeout)
    options = SandboxOptions()
    with run_copy_on_write(ws, argv, options, timeout=timeout, kill_grace=KILL_GRACE) as run:
        return format_result(run.result, timeout)


@pytest.mark.parametrize("sandboxed", MODES)
def test_exit_code_and_output(tmp_path: Path, sandboxed: bool) -> None:
    ws = make_workspace(tmp_path)
    assert _run(ws, "echo hello", sandboxed) == "exit code: 0\nhello"
    assert _run(ws, "echo oops >&2; exit 3", sandboxed) == "exit code: 3\noops"


@pytest.mark.parametrize("sandboxed", MODES)
def test_runs_in_the_workspace_with_stdin_closed(tmp_path: Path, sandboxed: bool) -> None:
    ws = make_workspace(tmp_path)
    out = _run(ws, "pwd; cat; echo done", sandboxed)
    assert out == f"exit code: 0\n{os.path.realpath(ws)}\ndone"


def test_run_command_through_the_registry(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    out = call(make_ctx(ws), "run_command", {"command": "echo a; echo b >&2; false"})
    assert out == "exit code: 1\na\nb"


@requires_cow
@pytest.mark.sandbox
def test_without_an_effect_handler_nothing_is_applied(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    out = call(ToolContext(workspace=ws), "run_command", {"command": "echo x > new.txt"})
    assert out == "exit code: 0\n" + NO_HANDLER_NOTE
    assert not (ws / "new.txt").exists()


@pytest.mark.parametrize("sandboxed", MODES)
def test_timeout_kills_a_group_that_ignores_sigterm(tmp_path: Path, sandboxed: bool) -> None:
    ws = make_workspace(tmp_path)
    marker = f"1000{os.getpid()}{int(sandboxed)}"
    command = f'sleep {marker}1 & trap "" TERM; echo started; sleep {marker}2'
    began = time.monotonic()
    out = _run(ws, command, sandboxed, timeout=1)
    elapsed = time.monotonic() - began
    assert out.startswith("timed out after 1 s; process group killed\nstarted")
    assert elapsed < 1 + KILL_GRACE + 3
    wait_gone(f"sleep {marker}1", timeout=2)  # a survivor would sleep for 1000+ s
    wait_gone(f"sleep {marker}2", timeout=2)


@pytest.mark.parametrize("sandboxed", MODES)
def test_background_leftovers_do_not_outlive_the_command(tmp_path: Path, sandboxed: bool) -> None:
    ws = make_workspace(tmp_path)
    marker = f"2000{os.getpid()}{int(sandboxed)}"
    began = time.monotonic()
    out = _run(ws, f"sleep {marker} & echo bye", sandboxed)
    assert out == "exit code: 0\nbye"
    assert time.monotonic() - began < 10
    wait_gone(f"sleep {marker}", timeout=2)  # a survivor would sleep for 2000+ s


def test_a_straggler_holding_the_output_never_makes_it_read_another_file(tmp_path: Path) -> None:
    """A process that left the command's group (setsid) keeps the output pipe open and
    writes to it after the command is done. The pipe's fd number stays the reader's until
    the end: before, it was closed under the blocked read, the next pipe of the process
    took the number, and the late write made the reader take that pipe's data."""
    ws = make_workspace(tmp_path)
    pause = f"sleep 1.{os.getpid()}"  # about a second, and a mark on the straggler's line
    command = f"(setsid sh -c '{pause}; echo late; {pause}' &) ; echo started"
    assert _run(ws, command, sandboxed=False) == "exit code: 0\nstarted"
    pairs = [socket.socketpair() for _ in range(8)]  # one of them gets a freed fd number
    try:
        for one, other in pairs:  # each end has a byte to read, whichever got the number
            one.send(b"x")
            other.send(b"y")
        wait_gone(pause)  # it wrote, paused, and ended
        taken = [(_pending(one), _pending(other)) for one, other in pairs]
        assert taken == [(b"y", b"x")] * len(pairs), "the output's reader took another's data"
    finally:
        for ends in pairs:
            for end in ends:
                end.close()


def _pending(end: socket.socket) -> bytes:
    end.setblocking(False)
    try:
        return end.recv(16)
    except BlockingIOError:
        return b""


def test_output_is_truncated_at_10_mb(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    out = call(make_ctx(ws), "run_command", {"command": "yes | head -c 20000000"})
    assert out.startswith("exit code: 0\ny\ny\n")
    assert len(out) < OUTPUT_LIMIT + 1000
    assert out.endswith(
        "[output truncated at 10 MB of 20000000 bytes; redirect it to a file and read that "
        "with read_file or search_codebase]"
    )


def test_environment_is_scrubbed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("FAKE_API_KEY", "DJANGO_SECRET_KEY", "GITHUB_TOKEN", "DATABASE_URL"):
        monkeypatch.setenv(name, "leak-me-" + name)
    monkeypatch.setenv("GIT_DIR", "/elsewhere")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "leak-me-aws")
    ws = make_workspace(tmp_path)
    out = call(make_ctx(ws), "run_command", {"command": "env"})
    assert "leak-me" not in out and "GIT_DIR" not in out
    assert "CI=1" in out and "PATH=" in out and "HOME=" in out


def test_home_is_not_the_workers_home(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    out = call(make_ctx(ws), "run_command", {"command": 'echo "$HOME"'})
    assert out.splitlines()[1] != os.environ.get("HOME")


def test_killed_by_a_signal_is_described(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    out = _run(ws, "kill -9 $$", False)
    assert out.startswith("exit code: -9 (killed by SIGKILL)")


@requires_cow
@pytest.mark.sandbox
def test_a_refusal_to_apply_keeps_the_output(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)

    def refuse(effect: Effect) -> str:
        raise ToolError("a.txt changed since the command ran")

    ctx = ToolContext(workspace=ws, effect_handler=refuse)
    out = call(ctx, "run_command", {"command": "echo hi; echo x > a.txt"})
    assert out.startswith("exit code: 0\nhi\nnote: nothing the command changed was applied")
    assert not (ws / "a.txt").exists()
