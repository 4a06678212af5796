"""Children that cannot outlive the process that started them (`manage.py up`).

Whatever ends `up` — Ctrl-C, SIGTERM, a closed terminal, SIGKILL, the OOM killer — every
process it started ends within seconds:

* each child leads a process group of its own (Celery's pool and its embedded beat, a
  sandboxed command, sit in it too): stopping a child is SIGTERM to it, then to what it
  left of its group, then SIGKILL to the whole group after a grace;
* each child asks the kernel for SIGTERM when `up` dies (PR_SET_PDEATHSIG), before it
  execs, so even a `up` killed outright tells its children at once;
* a watchdog, a small process of its own, holds the read end of a pipe that only `up`
  writes to: when `up` is gone the pipe closes, and the watchdog stops every group `up`
  registered (SIGTERM, then SIGKILL after a grace) and removes the files they leave
  behind (the embedded Redis's socket). `up` releases a group once it stopped it itself.

Pure Python, no Django: the watchdog runs as `python -m tools_app.core.supervision`.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # where `python -m tools_app…` imports from
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
GRACE_SECONDS = 8.0  # from SIGTERM to SIGKILL
_libc = ctypes.CDLL(None, use_errno=True)  # loaded before any fork: the child only calls it

Child = subprocess.Popen[bytes]


def die_with_parent(signum: int = signal.SIGTERM) -> Callable[[], None]:
    """A `preexec_fn`: the child gets `signum` when this thread's process dies. A parent
    already gone before the request (the race the kernel leaves) makes the child quit."""
    parent = os.getpid()

    def request() -> None:
        _libc.prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)

    return request


def spawn(command: Sequence[str], **options: object) -> Child:
    """`command` as a child that leads its own process group and dies with its parent."""
    return subprocess.Popen(  # type: ignore[call-overload, no-any-return]
        list(command),
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=die_with_parent(),  # `up` starts no threads: safe between fork and exec
        **options,
    )


def group_alive(pgid: int) -> bool:
    return _process_alive(-pgid)


def signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def stop_groups(
    pgids: Iterable[int], grace: float = GRACE_SECONDS, reap: Callable[[], None] = lambda: None
) -> None:
    """SIGTERM each group's leader (Celery stops its own pool and beat), and the rest of a
    group once its leader is gone; after `grace`, SIGKILL every group still alive. `reap`
    collects the caller's own exited children (a zombie leader keeps its group)."""
    groups = list(pgids)
    for pgid in groups:
        _signal_process(pgid, signal.SIGTERM)
    groups = _await_groups(groups, grace, reap)
    for pgid in groups:
        signal_group(pgid, signal.SIGKILL)
    _await_groups(groups, 2.0, reap)


def _await_groups(groups: list[int], timeout: float, reap: Callable[[], None]) -> list[int]:
    """The groups still alive after waiting up to `timeout` for them to end; a group whose
    leader has gone gets SIGTERM for what it left behind."""
    deadline = time.monotonic() + timeout
    orphaned: set[int] = set()
    while True:
        reap()
        groups = [pgid for pgid in groups if group_alive(pgid)]
        for pgid in set(groups) - orphaned:
            if not _process_alive(pgid):
                orphaned.add(pgid)
                signal_group(pgid, signal.SIGTERM)
        if not groups or time.monotonic() > deadline:
            return groups
        time.sleep(0.05)


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _signal_process(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signum)


class Watchdog:
    """The process that stops `up`'s children when `up` cannot (see the module's doc)."""

    def __init__(self, leftovers: Sequence[Path] = (), grace: float = GRACE_SECONDS) -> None:
        read, write = os.pipe()  # neither end is inherited by later children
        command = [sys.executable, "-m", "tools_app.core.supervision", str(grace)]
        self.process = subprocess.Popen(
            [*command, *map(str, leftovers)], stdin=read, start_new_session=True, cwd=ROOT
        )
        os.close(read)
        self._pipe = os.fdopen(write, "w", buffering=1)

    def watch(self, child: Child) -> Child:
        self._tell(f"+{child.pid}")
        return child

    def release(self, child: Child) -> None:
        self._tell(f"-{child.pid}")

    def close(self) -> None:
        """Nothing left to watch: the watchdog exits (stopping what is still registered)."""
        with contextlib.suppress(OSError):
            self._pipe.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=GRACE_SECONDS + 2)

    def _tell(self, line: str) -> None:
        with contextlib.suppress(OSError):  # a watchdog gone: pdeathsig still holds
            self._pipe.write(line + "\n")


def watch(lines: Iterable[str], grace: float, leftovers: Sequence[Path]) -> None:
    """The watchdog's life: follow the registrations until the pipe closes, then stop
    what is still registered and remove the leftovers if it had anything to stop."""
    groups: dict[int, None] = {}  # in order of registration
    for line in lines:
        pgid = int(line[1:])
        if line.startswith("+"):
            groups[pgid] = None
        else:
            groups.pop(pgid, None)
    alive = [pgid for pgid in groups if group_alive(pgid)]
    if not alive:
        return
    stop_groups(reversed(alive), grace)
    for path in leftovers:
        path.unlink(missing_ok=True)


def main(argv: Sequence[str]) -> None:
    for signum in (signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)  # a terminal's signals end `up`, not this
    watch(sys.stdin, float(argv[0]), [Path(path) for path in argv[1:]])


if __name__ == "__main__":
    main(sys.argv[1:])


class Supervisor:
    """The children of one `up`: started dying with it, watched by a Watchdog, stopped in
    the reverse order of their start (the services first, then what they need)."""

    def __init__(self, leftovers: Sequence[Path] = ()) -> None:
        self.services: list[Child] = []
        self.infrastructure: list[Child] = []  # Redis: stopped after the services
        self.watchdog = Watchdog(leftovers)

    def start(self, command: Sequence[str], **options: object) -> Child:
        return self.adopt(spawn(command, **options))

    def adopt(self, child: Child, *, infrastructure: bool = False) -> Child:
        (self.infrastructure if infrastructure else self.services).append(child)
        return self.watchdog.watch(child)

    def first_exit(self) -> Child | None:
        """A child that has exited, if any."""
        return next((c for c in self.services + self.infrastructure if c.poll() is not None), None)

    def stop(self) -> None:
        for wave in (self.services, self.infrastructure):
            stop_groups([child.pid for child in reversed(wave)], reap=partial(_reap, wave))
            for child in wave:
                self.watchdog.release(child)
        self.watchdog.close()


def _reap(children: Iterable[Child]) -> None:
    for child in children:
        child.poll()
