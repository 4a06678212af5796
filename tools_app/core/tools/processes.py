"""Running an agent's command: a scrubbed environment, bounded output, a reaped group.

`tools/overlay.py` wraps a command in its copy-on-write sandbox and runs it through
`run_process`; where that sandbox cannot work, `run_plain` runs it as a plain process
(the policy then asks a person first). The path helpers are in `tools/paths.py`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

__all__ = [
    "DEFAULT_TIMEOUT",
    "OUTPUT_LIMIT",
    "CommandResult",
    "run_plain",
    "run_process",
    "scrubbed_env",
]

SANDBOX_HOME = "/tmp/home"
# Seconds a command may run when it names no timeout (run_command's default, a skill's
# command tool's, a probe's CPU limit): the one place this is written.
DEFAULT_TIMEOUT = 120.0

# --- Environment ---------------------------------------------------------------------

_ENV_ALLOW = ("PATH", "LANG", "LANGUAGE", "TERM", "TZ", "USER", "LOGNAME")
_DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"


def scrubbed_env(home: str) -> dict[str, str]:
    """The environment a command gets: an allowlist, never the worker's secrets.

    Starting from an allowlist (not a denylist) means a new `*_TOKEN` or `DATABASE_URL`
    in the worker's environment can never leak into an agent's command.
    """
    env = {k: v for k, v in os.environ.items() if k in _ENV_ALLOW or k.startswith("LC_")}
    env.setdefault("PATH", _DEFAULT_PATH)
    env.setdefault("LANG", "C.UTF-8")
    env.update({"HOME": home, "CI": "1", "PAGER": "cat", "TMPDIR": "/tmp"})
    return env


# --- Running -------------------------------------------------------------------------

OUTPUT_LIMIT = 10 * 1024 * 1024
KILL_GRACE_SECONDS = 5.0
STOP_POLL_SECONDS = 1.0
_CHUNK = 64 * 1024


@dataclass(frozen=True)
class CommandResult:
    """What a finished command left: its status and at most OUTPUT_LIMIT bytes of output."""

    exit_code: int | None
    output: bytes
    total_bytes: int
    timed_out: bool
    sandboxed: bool

    @property
    def truncated(self) -> bool:
        return self.total_bytes > len(self.output)


class _Collector:
    """Reads a pipe to the end but keeps only the first `limit` bytes, then closes it.

    Only this thread closes the pipe: a straggler outside the command's group may keep it
    open after the command is done, and a pipe closed under a blocked read frees its fd
    number while the read goes on; the next read would then take whatever file or socket
    of the process got that number."""

    def __init__(self, stream: IO[bytes], limit: int) -> None:
        self.buffer = bytearray()
        self.total = 0
        self._stream = stream
        self._fd = stream.fileno()
        self._limit = limit
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()

    def _drain(self) -> None:
        try:
            while chunk := self._read():
                with self._lock:
                    self.total += len(chunk)
                    room = self._limit - len(self.buffer)
                    if room > 0:
                        self.buffer += chunk[:room]
        finally:
            self._stream.close()

    def _read(self) -> bytes:
        try:
            return os.read(self._fd, _CHUNK)
        except OSError:  # the output ends there
            return b""

    def result(self) -> tuple[bytes, int]:
        with self._lock:
            return bytes(self.buffer), self.total


def run_process(
    cmd: Sequence[str],
    *,
    cwd: str,
    env: dict[str, str],
    timeout: float,
    sandboxed: bool,
    should_stop: Callable[[], bool] | None = None,
    kill_grace: float = KILL_GRACE_SECONDS,
    stdin: bytes | None = None,
    pass_fds: Sequence[int] = (),
) -> CommandResult:
    """Run `cmd` in its own session and always reap its process group.

    `stdin` is given through an unlinked temporary file, so a command that never reads
    it cannot block on a full pipe.

    On timeout the group gets SIGTERM, then SIGKILL after `kill_grace` seconds; after a
    normal exit, leftover background processes of the group are killed too, so a
    command can neither outlive its call nor keep the output pipe open. Returns only
    once no process of the group is left running.
    """
    with _stdin_file(stdin) as source:
        proc = subprocess.Popen(
            list(cmd),
            cwd=cwd,
            env=env,
            stdin=source,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            pass_fds=tuple(pass_fds),
        )
    assert proc.stdout is not None
    collector = _Collector(proc.stdout, OUTPUT_LIMIT)
    timed_out = _wait_or_kill(proc, timeout, should_stop, kill_grace)
    _kill_group(proc.pid, signal.SIGKILL)
    _wait_group_gone(proc.pid, kill_grace)
    collector.thread.join(timeout=kill_grace)  # a straggler may hold the pipe: not waited for
    output, total = collector.result()
    return CommandResult(proc.returncode, output, total, timed_out, sandboxed)


@contextlib.contextmanager
def _stdin_file(data: bytes | None) -> Iterator[IO[bytes] | int]:
    if data is None:
        yield subprocess.DEVNULL
        return
    with tempfile.TemporaryFile() as source:
        source.write(data)
        source.seek(0)
        yield source


def run_plain(
    workspace: Path,
    argv: Sequence[str],
    *,
    timeout: float,
    should_stop: Callable[[], bool] | None = None,
    kill_grace: float = KILL_GRACE_SECONDS,
    stdin: bytes | None = None,
    extra_env: Mapping[str, str] | None = None,
) -> CommandResult:
    """Run `argv` in the workspace as a plain process: no sandbox, a private HOME.

    Only for hosts where the copy-on-write sandbox cannot work; the policy makes every
    such command wait for a person.
    """
    with tempfile.TemporaryDirectory(prefix="agentweb-home-") as home:
        return run_process(
            argv,
            cwd=os.path.realpath(workspace),
            env={**scrubbed_env(home), **(extra_env or {})},
            timeout=timeout,
            sandboxed=False,
            should_stop=should_stop,
            kill_grace=kill_grace,
            stdin=stdin,
        )


def _wait_or_kill(
    proc: subprocess.Popen[bytes],
    timeout: float,
    should_stop: Callable[[], bool] | None,
    kill_grace: float,
) -> bool:
    """Wait for the command; on timeout terminate its group, then kill it. True if killed.

    Asked to stop (its session was cancelled), the group is killed at once.
    """
    deadline = time.monotonic() + timeout
    while (remaining := deadline - time.monotonic()) > 0:
        try:
            proc.wait(timeout=min(remaining, STOP_POLL_SECONDS))
            return False
        except subprocess.TimeoutExpired:
            if should_stop is not None and should_stop():
                _kill_group(proc.pid, signal.SIGKILL)
                proc.wait()
                return False
    _kill_group(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + kill_grace
    while time.monotonic() < deadline and _group_alive(proc):
        time.sleep(0.05)
    _kill_group(proc.pid, signal.SIGKILL)
    proc.wait()
    return True


def _group_alive(proc: subprocess.Popen[bytes]) -> bool:
    """True while any process of the command's group is still running."""
    proc.poll()
    try:
        os.killpg(proc.pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _wait_group_gone(pgid: int, limit: float) -> None:
    """Wait (at most `limit` s) until no live process of group `pgid` is left.

    The copy-on-write run's namespace init is in the group: once it is gone, every
    process of the command's PID namespace is gone, so nothing writes the upper layer
    while it is read. Zombies count as gone: they run nothing.
    """
    deadline = time.monotonic() + limit
    while _group_members_running(pgid) and time.monotonic() < deadline:
        time.sleep(0.01)


def _group_members_running(pgid: int) -> bool:
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False


def _kill_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
