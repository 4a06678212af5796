"""Whether this host's copy-on-write sandbox works: probed by running one command in it.

A process probes when first asked and keeps a success for its life. A failure (tried
PROBE_ATTEMPTS times) is its answer for `PROBE_RETRY_SECONDS`, then the sandbox is probed
again, on a thread of its own while callers keep the last answer: a chance failure at a
worker's start (the process limit reached, say) must not leave it holding every command
for a person, and its heartbeat reporting no sandbox, for the rest of its life. Without
the sandbox, an allowed command waits for a person (`core/engine.py`); the log says why.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from tools_app.core.tools import sandbox_user
from tools_app.core.tools.base import SandboxOptions
from tools_app.core.tools.overlay import SCRATCH_PREFIX, run_copy_on_write

logger = logging.getLogger(__name__)

# A probe that fails by chance must not leave a process unsandboxed: it is tried again
# after a pause.
PROBE_ATTEMPTS = 3
PROBE_PAUSE_SECONDS = 0.5
PROBE_RETRY_SECONDS = 30.0  # a failed probe's answer is kept this long


@dataclass
class _Probe:
    works: bool = False
    failure: str = ""
    failed_at: float | None = None
    generation: int = 0  # `forget_probe` starts a new one; an older retry's answer is dropped


_probe = _Probe()
_retrying = threading.Lock()


def cow_available() -> bool:
    """True when unshare, an overlay mount and bubblewrap all work here. The first ask
    probes (PROBE_ATTEMPTS tries); a success is kept for the process's life. A failure is the
    answer until `PROBE_RETRY_SECONDS` pass, then a probe runs again on a thread of its
    own while callers keep the last answer: a judged call or a worker's heartbeat is
    never held up to a minute by a probe. Why it failed: `cow_unavailable_reason()`."""
    if _probe.works:
        return True
    if _probe.failed_at is None:
        _store(_probe_failure(), _probe.generation)
    elif time.monotonic() - _probe.failed_at >= PROBE_RETRY_SECONDS:
        _retry_in_the_background()
    return _probe.works


def _retry_in_the_background() -> None:
    if _retrying.acquire(blocking=False):  # one retry at a time
        threading.Thread(target=_retry, name="agentweb-sandbox-probe", daemon=True).start()


def _retry() -> None:
    try:
        generation = _probe.generation
        _store(_probe_failure(), generation)
    finally:
        _retrying.release()


def _store(failure: str, generation: int) -> None:
    if generation != _probe.generation:
        return  # forgotten meanwhile: the host's tools changed under this probe
    failed_before = _probe.failed_at is not None
    _probe.works, _probe.failure = not failure, failure
    _probe.failed_at = time.monotonic() if failure else None
    if failure:
        logger.warning(
            "the copy-on-write sandbox does not work in this process (%s): every command "
            "waits for a person; it is probed again in %d s",
            failure,
            PROBE_RETRY_SECONDS,
        )
    elif failed_before:
        logger.warning("the copy-on-write sandbox works again: commands run sandboxed")


def forget_probe() -> None:
    """The next `cow_available()` probes again (a test that changed the host's tools)."""
    _probe.works, _probe.failure, _probe.failed_at = False, "", None
    _probe.generation += 1


def _probe_failure() -> str:
    if not (shutil.which("unshare") and shutil.which("bwrap")):
        return "unshare or bwrap is not on PATH"
    failure = ""
    for attempt in range(PROBE_ATTEMPTS):
        if attempt:
            time.sleep(PROBE_PAUSE_SECONDS)
        failure = _probe_once()
        if not failure:
            return ""
    return scratch_problem() or failure


def cow_unavailable_reason() -> str:
    """Why this host has no copy-on-write sandbox, in words an operator can act on ("" when
    it has one): for the system check, a held command's reason and a readiness probe."""
    return "" if cow_available() else _probe.failure


def scratch_problem(base: Path | None = None) -> str:
    """Why the sandbox's uid cannot reach the temp dir that holds every command's scratch
    ("" when it can): `TMPDIR` made by `mktemp -d` is mode 0700, root's alone."""
    folder = Path(base or tempfile.gettempdir()).resolve()
    uid, gid = sandbox_user.sandbox_ids()
    for step in [*reversed(folder.parents), folder]:
        try:
            info = step.stat()
        except OSError as error:
            return f"the temp dir {folder} cannot be read: {error}"
        if not _may_enter(info, uid, gid):
            where = "" if step == folder else f", on the way to the temp dir {folder}"
            return (
                f"the sandbox's uid {uid} cannot enter {step} (mode {info.st_mode & 0o7777:o}, "
                f"owner uid {info.st_uid}){where}, where every command's scratch directory "
                "is made; set TMPDIR to a directory it can enter (/tmp), or let it pass "
                "(chmod o+x)"
            )
    return ""


def _may_enter(info: os.stat_result, uid: int, gid: int) -> bool:
    if uid == 0:
        return True
    if info.st_uid == uid:
        return bool(info.st_mode & stat.S_IXUSR)
    if info.st_gid == gid:
        return bool(info.st_mode & stat.S_IXGRP)
    return bool(info.st_mode & stat.S_IXOTH)


def _probe_once() -> str:
    """ "" when a command runs in the copy-on-write sandbox and its one change is seen."""
    # Named as a scratch of this process: a worker killed while it probes leaves it to the
    # next worker's sweep of dead processes' scratch (sweep_stale_scratch).
    with tempfile.TemporaryDirectory(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-probe-") as tmp:
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        (workspace / "probe").write_text("x")
        try:
            with run_copy_on_write(
                workspace, ["sh", "-c", "echo y > probe"], SandboxOptions(), timeout=30
            ) as run:
                changed = [e.path for e in run.effect.entries]
                if run.result.exit_code == 0 and changed == ["probe"]:
                    return ""
                return f"the probe command exited {run.result.exit_code}, changed {changed}"
        except Exception as exc:  # any failure means: not available, commands need a person
            return f"the probe failed: {type(exc).__name__}: {exc}"[:500]
