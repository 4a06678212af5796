"""Run a command copy-on-write: the workspace is an overlay's lower layer, never written.

Debian's bubblewrap (0.8) has no `--overlay`, so the overlay is mounted in a namespace
step of its own (`unshare`), and bubblewrap runs inside it. A worker that is not root
mounts it in a user namespace of its own:

    unshare --user --map-root-user --mount --pid --fork --kill-child
      sh -c 'mount -t overlay …  merged' && exec prlimit … bwrap --unshare-user --uid 65534 …
        --cap-drop ALL --unshare-all --bind merged <workspace> … -- bash -c COMMAND

A root worker must not do that: the namespace's root would be host root. It mounts the
overlay as itself in a mount namespace only, its lower layer an idmapped view of the
workspace (`tools/sandbox_user.py`), then drops to the sandbox uid before anything of
the command runs:

    unshare --mount --pid --fork --kill-child
      sh -c 'mount -t overlay … lowerdir=/proc/self/fd/N …' && exec setpriv --reuid=UID …
        prlimit … bwrap --unshare-user --uid 65534 … -- bash -c COMMAND

Either way the command runs as uid 65534 inside, an unprivileged uid on the host, with
no capabilities, under limits (processes, memory, CPU, file size, /tmp), in its own PID
namespace (when it exits, everything it started dies before the upper layer is read),
and sees a minimal system: read-only OS directories and kernel knobs, its workspace view
at the workspace's own path, a private /tmp and HOME. Its effect is read from the upper
layer by `tools/effect_reader.py`; `tools/effect_apply.py` applies and holds it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType

from tools_app.core.egress import sandbox as egress_sandbox
from tools_app.core.egress.grant import Connection
from tools_app.core.tools import processes, sandbox_user
from tools_app.core.tools.base import SandboxOptions
from tools_app.core.tools.effect import Effect
from tools_app.core.tools.effect_reader import read_effect
from tools_app.core.tools.errors import ToolError
from tools_app.core.tools.paths import is_within
from tools_app.core.tools.trees import remove_tree

__all__ = [
    "CowRun",
    "build_cow_command",
    "hidden_paths",
    "make_scratch",
    "readonly_paths",
    "remove_scratch",
    "run_copy_on_write",
    "sweep_stale_scratch",
]

READONLY_PATHS_ENV = "AGENTWEB_SANDBOX_READONLY_PATHS"
SANDBOX_UID = "65534"
# The OS's program and library directories; symlinks (merged /usr) are recreated as such.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
# Runs what follows the mount: this shell is PID 1 of the namespace, so SIGTERM from
# outside reaches it only through a handler, which kills everything at once. A
# background job's stdin is /dev/null unless redirected: keep the caller's (fd 9).
_RUN_TAIL = 'exec 9<&0; trap "kill -KILL -1; exit 143" TERM INT HUP; "$@" <&9 9<&- & wait $!'
# After the workspace's overlay, each filtered object store (`tools/git_view.py`) over
# its object directory: an overlay of its own (lower: the store, upper: `gvN/upper` in
# the scratch dir), so git can still write objects inside the command. Arguments: a
# count, then that many (lowerdir, workspace-relative target) pairs; a lowerdir that is
# a passed descriptor is closed once its overlay holds it.
_VIEWS = (
    'n=$1; shift; i=0; while [ "$i" -lt "$n" ]; do '
    'mount -t overlay overlay -o "lowerdir=$1,upperdir=gv$i/upper,workdir=gv$i/work,{opts}" '
    '"merged/$2" || exit 125; '
    'case $1 in /proc/self/fd/*) eval "exec ${{1#/proc/self/fd/}}<&-";; esac; '
    "shift 2; i=$((i+1)); done; "
)
# Mounts the overlay from the scratch dir (relative paths: no escaping of the workspace
# path in mount options), then the object stores, then runs bubblewrap.
_MOUNT_SCRIPT = (
    'cd "$1" && mount -t overlay overlay '
    "-o lowerdir=lower,upperdir=upper,workdir=work,userxattr merged || exit 125; "
    "shift; " + _VIEWS.format(opts="userxattr") + _RUN_TAIL
)
# As root: the lower layer is the idmapped workspace mount open on fd $2, closed as soon
# as the overlay holds it (through it the sandbox uid could write the real workspace).
# No redirect_dir or metacopy: every change must be whole in the upper layer.
_ROOT_MOUNT_SCRIPT = (
    'cd "$1" && mount -t overlay overlay -o "lowerdir=/proc/self/fd/$2,upperdir=upper,'
    'workdir=work,redirect_dir=off,metacopy=off" merged || exit 125; '
    'eval "exec $2<&-"; shift 2; ' + _VIEWS.format(opts="redirect_dir=off,metacopy=off") + _RUN_TAIL
)
# Kernel knobs a command must never write, even where file modes would let it.
_PROC_READONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs")


class CowRun:
    """A finished copy-on-write run: result, effect, connections, and the scratch to clean up.

    The effect's blobs live in the scratch dir: apply or hold them before `cleanup()`.
    """

    def __init__(
        self,
        result: processes.CommandResult,
        effect: Effect,
        scratch: Path,
        connections: tuple[Connection, ...] = (),
    ) -> None:
        self.result = result
        self.effect = effect
        self.scratch = scratch
        self.connections = connections

    def cleanup(self) -> None:
        """Remove the scratch dir: lower link, upper, work and merged."""
        remove_scratch(self.scratch)

    def __enter__(self) -> CowRun:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.cleanup()


def run_copy_on_write(
    workspace: Path,
    argv: Sequence[str],
    options: SandboxOptions,
    *,
    timeout: float,
    should_stop: Callable[[], bool] | None = None,
    kill_grace: float = processes.KILL_GRACE_SECONDS,
    stdin: bytes | None = None,
    extra_env: Mapping[str, str] | None = None,
) -> CowRun:
    """Run `argv` on a copy-on-write view of `workspace`; the workspace stays untouched.

    `extra_env` joins the scrubbed environment (a skill tool's arguments); `stdin` is fed
    to the command.
    """
    root = Path(os.path.realpath(workspace))
    scratch = make_scratch(root)
    fds: list[int] = []
    try:
        if sandbox_user.worker_is_root():
            fds.append(_idmapped(root))
        views = _view_layers(scratch, options, fds)
        bounds = sandbox_user.limits(timeout)
        lower_fd = fds[0] if sandbox_user.worker_is_root() else None
        env = {**processes.scrubbed_env(processes.SANDBOX_HOME), **(extra_env or {})}
        with egress_sandbox.proxy_for_run(scratch, options.egress) as egress:
            result = processes.run_process(
                build_cow_command(
                    root, argv, options, scratch, lower_fd=lower_fd, bounds=bounds, views=views
                ),
                cwd=str(scratch),
                env=egress_sandbox.environment(options.egress, env),
                timeout=timeout,
                sandboxed=True,
                should_stop=should_stop,
                kill_grace=kill_grace,
                stdin=stdin,
                pass_fds=fds,
            )
        effect = read_effect(root, scratch / "upper")
    except BaseException:
        remove_scratch(scratch)
        raise
    finally:
        for fd in fds:
            os.close(fd)
    return CowRun(result, effect, scratch, egress.connections if egress else ())


def _view_layers(scratch: Path, options: SandboxOptions, fds: list[int]) -> list[tuple[str, str]]:
    """(lowerdir, target) of each filtered object store: `gvN/{upper,work}` made in the
    scratch dir; the lower layer is a link to the store, or for a root worker an idmapped
    mount of it (its files then belong to the sandbox uid in the view), added to `fds`."""
    layers: list[tuple[str, str]] = []
    for i, view in enumerate(options.object_views):
        base = scratch / f"gv{i}"
        for path in (base, base / "upper", base / "work"):
            path.mkdir()
            if sandbox_user.worker_is_root():
                os.chown(path, *sandbox_user.sandbox_ids())
        if sandbox_user.worker_is_root():
            fds.append(_idmapped(view.store))
            layers.append((f"/proc/self/fd/{fds[-1]}", view.objects))
        else:
            (base / "lower").symlink_to(view.store)
            layers.append((f"gv{i}/lower", view.objects))
    return layers


def _idmapped(root: Path) -> int:
    try:
        return sandbox_user.idmapped_workspace(str(root))
    except sandbox_user.SandboxUserError as exc:
        raise ToolError(
            f"the command did not run: its sandbox cannot be set up here ({exc}); "
            "nothing was changed"
        ) from None


def remove_scratch(scratch: Path) -> None:
    """Remove a scratch dir however deep (overlay leaves `work/work` mode 0000)."""
    remove_tree(scratch, ignore_errors=True)


SCRATCH_PREFIX = "agentweb-cow-"


def make_scratch(root: Path) -> Path:
    """A private scratch dir (lower link, upper, work, merged) outside the workspace.

    Named after this process (`agentweb-cow-<pid>-…`), so a sweep can tell the scratch of
    a dead worker from a live one's. A root worker gives it to the sandbox uid: the
    command creates its files in `upper` and bubblewrap, already unprivileged, binds
    `merged`.
    """
    scratch = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-"))
    if is_within(scratch, root):
        shutil.rmtree(scratch)
        raise RuntimeError(f"the scratch dir {scratch} would be inside the workspace")
    for name in ("upper", "work", "merged"):
        (scratch / name).mkdir()
    (scratch / "lower").symlink_to(root)
    if sandbox_user.worker_is_root():
        uid, gid = sandbox_user.sandbox_ids()
        for path in (scratch, scratch / "upper", scratch / "work", scratch / "merged"):
            os.chown(path, uid, gid)
    return scratch


def sweep_stale_scratch(base: Path | None = None) -> int:
    """Remove the scratch dirs of worker processes that are gone; how many were removed.

    A scratch is removed whatever happens to its command, but a worker killed in the
    middle leaves one behind: a starting worker sweeps them (never a live process's).
    """
    removed = 0
    for entry in os.scandir(base or tempfile.gettempdir()):
        pid = _scratch_owner(entry.name)
        if pid is None or not entry.is_dir(follow_symlinks=False) or _alive(pid):
            continue
        remove_scratch(Path(entry.path))
        removed += 1
    return removed


def _scratch_owner(name: str) -> int | None:
    if not name.startswith(SCRATCH_PREFIX):
        return None
    pid = name[len(SCRATCH_PREFIX) :].split("-", 1)[0]
    return int(pid) if pid.isdigit() else None


def _alive(pid: int) -> bool:
    return pid == os.getpid() or os.path.exists(f"/proc/{pid}")


def build_cow_command(
    workspace: Path,
    argv: Sequence[str],
    options: SandboxOptions,
    scratch: Path,
    *,
    lower_fd: int | None = None,
    bounds: sandbox_user.Limits | None = None,
    views: Sequence[tuple[str, str]] = (),
) -> list[str]:
    """The full command line: unshare + overlay mount, limits, bubblewrap, then `argv`.

    `scratch` must hold `lower` (a symlink to the workspace), `upper`, `work` and
    `merged` (see `make_scratch`). With `lower_fd` (a root worker's idmapped workspace,
    `sandbox_user.idmapped_workspace`) the overlay is mounted as root in a mount
    namespace and everything after it runs as the sandbox uid. `views` are the
    (lowerdir, workspace-relative object directory) pairs of the filtered object stores
    mounted over the view next (`_view_layers`). Plain argv, no Python: an unprivileged
    test runs it.
    """
    root = os.path.realpath(workspace)
    unshare = shutil.which("unshare") or "/usr/bin/unshare"
    # A command line built without its own limits (a probe, a test's argv): the default.
    bounds = bounds or sandbox_user.limits(processes.DEFAULT_TIMEOUT)
    if lower_fd is None:
        cmd = [unshare, "--user", "--map-root-user", "--mount", "--pid", "--fork", "--kill-child"]
        cmd += ["sh", "-c", _MOUNT_SCRIPT, "agentweb-cow", str(scratch)]
    else:
        cmd = [unshare, "--mount", "--propagation", "private", "--pid", "--fork", "--kill-child"]
        # bash, not sh: dash cannot close a descriptor above 9.
        cmd += ["bash", "-c", _ROOT_MOUNT_SCRIPT, "agentweb-cow", str(scratch), str(lower_fd)]
    cmd += [str(len(views)), *(part for view in views for part in view)]
    if lower_fd is not None:
        cmd += sandbox_user.setpriv_args()
    cmd += sandbox_user.prlimit_args(bounds)
    argv = egress_sandbox.wrapped_argv(argv, options.egress)
    return cmd + bwrap_args(Path(root), scratch / "merged", options, bounds) + ["--", *argv]


def bwrap_args(
    root: Path, merged: Path, options: SandboxOptions, bounds: sandbox_user.Limits | None = None
) -> list[str]:
    """bubblewrap: unprivileged uid, no capabilities, a minimal system, the merged view.

    `/dev` is bubblewrap's own (null, zero, full, random, urandom, tty and the pty
    multiplexer, bound from the host's nodes the sandbox uid does not own), the kernel
    knobs under /proc are read-only, and the private /tmp is a tmpfs of bounded size.
    """
    bounds = bounds or sandbox_user.limits(processes.DEFAULT_TIMEOUT)
    cmd = [shutil.which("bwrap") or "/usr/bin/bwrap", "--unshare-user"]
    # --unshare-all: a network namespace of its own, with only `lo`; never the worker's.
    cmd += ["--uid", SANDBOX_UID, "--gid", SANDBOX_UID, "--cap-drop", "ALL", "--unshare-all"]
    cmd += ["--new-session", "--die-with-parent"]
    cmd += [*_system_args(), "--dev", "/dev", "--proc", "/proc"]
    for knob in _PROC_READONLY:
        cmd += ["--ro-bind-try", knob, knob]
    cmd += ["--size", str(bounds.tmp_mb * 1024 * 1024), "--tmpfs", "/tmp"]
    cmd += ["--dir", processes.SANDBOX_HOME]
    for path in readonly_paths():
        cmd += ["--ro-bind-try", str(path), str(path)]
    if options.egress is not None:
        cmd += egress_sandbox.bind_args(merged.parent, options.egress)
    cmd += _mask_args(root)
    cmd += ["--bind", str(merged), str(root), *secret_mask_args(root, merged, options)]
    return [*cmd, *git_state_mask_args(root, options), "--chdir", str(root)]


# Git state that holds file content outside the object store: rerere's recorded
# conflicts and the patches of an `am` or a stopped rebase.
GIT_CONTENT_STATE = ("rr-cache", "rebase-apply", "rebase-merge")


def git_state_mask_args(root: Path, options: SandboxOptions) -> list[str]:
    """An empty tmpfs over each content-holding state directory of a repository whose
    objects are filtered (`tools/git_view.py`): what the store leaves out stays out."""
    out: list[str] = []
    for view in options.object_views:
        git_dir = root / view.objects.rsplit("/", 1)[0]
        for name in GIT_CONTENT_STATE:
            if (git_dir / name).is_dir() and not (git_dir / name).is_symlink():
                out += ["--tmpfs", str(git_dir / name)]
    return out


def secret_mask_args(root: Path, merged: Path, options: SandboxOptions) -> list[str]:
    """Each masked secret file of the workspace view shown as an empty, read-only file.

    Bound after the workspace, on top of it: a read finds nothing, and a write, a
    delete or a rename of the file fails (a read-only mount point), so nothing of it
    reaches the upper layer or the effect. The empty file is the scratch dir's own
    (`/dev/null` would show as a device that cannot be opened).
    """
    if not options.masked_files:
        return []
    empty = merged.parent / "empty"
    empty.touch(mode=0o444, exist_ok=True)
    out: list[str] = []
    for rel in options.masked_files:
        out += ["--ro-bind", str(empty), str(root / rel)]
    return out


def _system_args() -> list[str]:
    out: list[str] = []
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            out += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            out += ["--ro-bind", path, path]
    return out


def readonly_paths() -> list[Path]:
    """Extra read-only paths (a toolchain under /opt): `AGENTWEB_SANDBOX_READONLY_PATHS`.

    Colon-separated absolute paths; the one place that reads them, so that a setting
    can feed it.
    """
    raw = os.environ.get(READONLY_PATHS_ENV, "")
    return [Path(p) for p in raw.split(":") if p.startswith("/") and p != "/"]


def hidden_paths() -> list[Path]:
    """What a command must never read: agentweb's source and data, secrets, homes.

    The sandbox shows only the OS's directories, so these are invisible already unless
    they lie inside one of those (or an extra read-only path): then they are masked.
    """
    source = Path(__file__).resolve().parents[3]
    var = os.environ.get("AGENTWEB_VAR") or str(source / "var")
    raw = [str(source), str(source / ".env"), var, os.environ.get("AGENTWEB_WORKSPACES", "")]
    raw += [os.environ.get("HOME", ""), "/root", "/home", _sqlite_file()]
    return sorted({Path(os.path.realpath(p)) for p in raw if p and p != "/"})


def _sqlite_file() -> str:
    url = os.environ.get("DATABASE_URL", "")
    if url.startswith("sqlite:///"):
        return url[len("sqlite://") :].split("?", 1)[0]
    return ""


def _mask_args(root: Path) -> list[str]:
    visible = [Path(os.path.realpath(p)) for p in SYSTEM_DIRS] + readonly_paths()
    out: list[str] = []
    for hidden in hidden_paths():
        if not any(is_within(hidden, v) for v in visible):
            continue  # not mounted at all; the workspace is bound on top of any mask
        if os.path.isdir(hidden):
            out += ["--tmpfs", str(hidden)]
        elif os.path.lexists(hidden):
            out += ["--ro-bind", "/dev/null", str(hidden)]
    return out
