"""Who a sandboxed command runs as on the host, and the limits it runs under.

A command must never run as the host's root, even when the worker does. A process that
is uid 0 on the host owns every root-owned inode it can see, capabilities or not:
`/proc/sys/kernel/core_pattern`, `/dev/full`, `/etc/shadow`. A user namespace does not
change that when the namespace's root *is* host root (`unshare --map-root-user` run by
root). So a root worker hands the whole chain to a dedicated unprivileged uid
(`AGENTWEB_SANDBOX_UID`), and only the overlay mount itself is made as root.

The workspace's files belong to the worker (root), and a non-root uid could not
change them through the overlay. The overlay's lower layer is therefore an *idmapped*
mount of the workspace (Linux 5.19+, open_tree + mount_setattr): through it, files
owned by host root appear owned by the sandbox uid, while the files on disk stay as
they are. No uid in any namespace of the chain maps to host uid 0.

A worker that is not root already is an unprivileged uid: its chain runs as itself.
"""

from __future__ import annotations

import ctypes
import logging
import math
import os
import platform
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from tools_app.core.tools.effect_reader import MAX_FILE_BYTES

logger = logging.getLogger(__name__)

SANDBOX_UID_ENV = "AGENTWEB_SANDBOX_UID"
SANDBOX_GID_ENV = "AGENTWEB_SANDBOX_GID"
# Outside Debian's system (0-999), user (1000-59999) and reserved (60000-64999 global
# allocations, 65534 nobody) ranges: a uid nothing else on the host runs as.
DEFAULT_SANDBOX_UID = 65533

_LIMIT_ENVS = {
    "processes": ("AGENTWEB_SANDBOX_MAX_PROCESSES", 256),
    "memory_mb": ("AGENTWEB_SANDBOX_MAX_MEMORY_MB", 2048),
    "tmp_mb": ("AGENTWEB_SANDBOX_TMP_MB", 512),
}
_MB = 1024 * 1024


class SandboxUserError(RuntimeError):
    """The unprivileged chain cannot be set up here (no idmapped mounts, a bad setting)."""


# --- who ---------------------------------------------------------------------------------


def worker_is_root() -> bool:
    return os.geteuid() == 0


def sandbox_ids() -> tuple[int, int]:
    """(uid, gid) the command chain runs as on the host: never 0.

    A root worker uses `AGENTWEB_SANDBOX_UID`/`_GID` (default 65533); any other worker
    its own ids.
    """
    if not worker_is_root():
        return os.geteuid(), os.getegid()
    uid = _id_setting(SANDBOX_UID_ENV, DEFAULT_SANDBOX_UID)
    return uid, _id_setting(SANDBOX_GID_ENV, uid)


def _id_setting(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or not 0 < int(raw) < 2**32 - 1:
        raise SandboxUserError(f"{name}={raw!r}: expected a uid above 0 (a plain number)")
    return int(raw)


def describe_user() -> str:
    """One line for `manage.py check`: which host uid commands run as, and why."""
    uid, gid = sandbox_ids()
    if worker_is_root():
        return (
            f"commands run as host uid {uid} (gid {gid}), never as root: the worker is root, "
            f"so its sandbox drops to {SANDBOX_UID_ENV}"
        )
    return f"commands run as host uid {uid} (gid {gid}), the worker's own"


def setpriv_args() -> list[str]:
    """Drop from root to the sandbox uid: no supplementary groups, no capabilities."""
    uid, gid = sandbox_ids()
    return [
        "setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups",
        "--inh-caps=-all", "--bounding-set=-all", "--",
    ]  # fmt: skip


# --- limits ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Limits:
    """What one command may use. Crossing one makes the command fail, as the kernel says
    (EAGAIN on fork, ENOMEM, EFBIG, SIGXCPU, ENOSPC in /tmp)."""

    processes: int
    memory_mb: int
    tmp_mb: int
    cpu_seconds: int
    # One byte past the effect reader's bound: a file that grows past it is refused
    # whole by the reader, and cannot grow further on the host's disk.
    file_bytes: int = MAX_FILE_BYTES + 1


def limits(timeout: float) -> Limits:
    """The limits from the environment; CPU time follows the command's own timeout."""
    values = {key: _limit_setting(name, default) for key, (name, default) in _LIMIT_ENVS.items()}
    return Limits(cpu_seconds=max(1, math.ceil(timeout)), **values)


def _limit_setting(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or int(raw) < 1:
        raise SandboxUserError(f"{name}={raw!r}: expected a whole number above 0")
    return int(raw)


def prlimit_args(bounds: Limits) -> list[str]:
    """prlimit for the command: processes (per host uid), data memory, CPU seconds, the
    size of any one file it writes, and no core dumps (they would land in the view).

    The process limit counts every process of the host uid: for a root worker that is
    the sandbox uid alone; any other worker shares its uid with the command, so its own
    processes are added to the allowance.
    """
    nproc = bounds.processes
    if not worker_is_root():
        nproc += _processes_of(os.geteuid())
    return [
        "prlimit", f"--nproc={nproc}", f"--data={bounds.memory_mb * _MB}",
        f"--cpu={bounds.cpu_seconds}", f"--fsize={bounds.file_bytes}", "--core=0", "--",
    ]  # fmt: skip


def _processes_of(uid: int) -> int:
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                count += entry.stat().st_uid == uid
            except OSError:
                continue
    return count


# --- the idmapped lower layer --------------------------------------------------------------

# Syscall numbers of the new mount API: the same on every architecture Linux has added
# them to since 5.2 (the common table), x86_64 and aarch64 included.
_SYS_OPEN_TREE = 428
_SYS_MOUNT_SETATTR = 442
_OPEN_TREE_CLONE = 1
_O_CLOEXEC = 0o2000000
_AT_EMPTY_PATH = 0x1000
_AT_FDCWD = -100
_MOUNT_ATTR_IDMAP = 0x00100000


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


def idmapped_workspace(workspace: str) -> int:
    """A detached mount of `workspace` where host root's files appear as the sandbox uid's.

    Returns its fd (close-on-exec; pass it explicitly). Only a root worker can make it.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    flags = _OPEN_TREE_CLONE | _O_CLOEXEC
    fd = int(libc.syscall(_SYS_OPEN_TREE, _AT_FDCWD, os.fsencode(workspace), flags))
    if fd < 0:
        raise SandboxUserError(f"open_tree({workspace}): {os.strerror(ctypes.get_errno())}")
    attr = _MountAttr(_MOUNT_ATTR_IDMAP, 0, 0, _idmap_userns())
    done = libc.syscall(
        _SYS_MOUNT_SETATTR, fd, b"", _AT_EMPTY_PATH, ctypes.byref(attr), ctypes.sizeof(attr)
    )
    if done < 0:
        error = os.strerror(ctypes.get_errno())
        os.close(fd)
        raise SandboxUserError(f"idmapping {workspace} for the sandbox uid: {error}")
    return fd


# The namespace made for idmapping, kept open for the life of the process.
_kept: dict[str, tuple[int, str]] = {}
_kept_lock = threading.Lock()


def _idmap_userns() -> int:
    """A user namespace whose root is the sandbox uid (uid_map `0 UID 1`), kept open.

    Made once per process by the sandbox uid itself with `unshare --map-root-user`; the
    namespace lives on through this fd after its one process is gone. The fd is checked
    before each use: a double close elsewhere in the process (a library closing a number
    it no longer owns) once left it pointing at another file, and every sandbox of that
    process failed with EINVAL until it ended. Such a fd is made again, and said so.
    """
    with _kept_lock:
        kept = _kept.get("userns")
        if kept is not None and kept_userns_intact():
            return kept[0]
        if kept is not None:
            logger.warning(
                "the user namespace kept for idmapped mounts (fd %d) was closed by other "
                "code in this process (it is now %s); making a new one",
                kept[0],
                _fd_target(kept[0]) or "closed",
            )
        fd = _new_idmap_userns()
        _kept["userns"] = (fd, _fd_target(fd))
        return fd


def kept_userns_intact() -> bool:
    """Whether the namespace fd kept by `_idmap_userns` (if any) still is that namespace."""
    kept = _kept.get("userns")
    return kept is None or _fd_target(kept[0]) == kept[1]


def _fd_target(fd: int) -> str:
    """What the fd is (`user:[4026532…]` for a namespace), '' when it is closed."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


def _new_idmap_userns() -> int:
    if platform.system() != "Linux":
        raise SandboxUserError("idmapped mounts need Linux")
    uid, gid = sandbox_ids()
    holder = subprocess.Popen(
        [*setpriv_args(), "unshare", "--user", "--map-root-user", "sleep", "30"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for_maps(holder.pid, uid, gid, alive=lambda: holder.poll() is None)
        return os.open(f"/proc/{holder.pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        holder.kill()
        holder.wait()


def _wait_for_maps(
    pid: int, uid: int, gid: int, *, alive: Callable[[], bool], seconds: float = 5
) -> None:
    """Until `unshare` has written both maps of its namespace: the uid map first, then
    the gid map. A namespace taken between the two (its holder killed at once) has no
    gid map, and every idmapped mount through it fails with EINVAL, for the life of the
    process: the flake of a CI run (7 December)."""
    wanted = {"uid_map": ["0", str(uid), "1"], "gid_map": ["0", str(gid), "1"]}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if all(_map_of(pid, name) == expected for name, expected in wanted.items()):
            return
        if not alive():
            break
        time.sleep(0.002)
    raise SandboxUserError(f"could not make a user namespace for uid {uid} and gid {gid}")


def _map_of(pid: int, name: str) -> list[str]:
    try:
        with open(f"/proc/{pid}/{name}") as found:
            return found.read().split()
    except OSError:
        return []
