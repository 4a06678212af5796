"""Run a command copy-on-write: the workspace is an overlay's lower layer, never written.

Debian's bubblewrap (0.8) has no `--overlay`, and the kernel's overlayfs can be mounted
inside an unprivileged user + mount namespace (kernel >= 5.11), so the overlay is
mounted in a namespace step of its own (`unshare`), and bubblewrap runs inside it:

    unshare --user --map-root-user --mount --pid --fork --kill-child
      sh -c 'mount -t overlay …  merged' && exec bwrap --unshare-user --uid 65534 …
        --cap-drop ALL --unshare-all --bind merged <workspace> … -- bash -c COMMAND

The command runs as uid 65534 with no capabilities (also when the worker is root), in
its own PID namespace (when it exits, everything it started dies before the upper
layer is read), and sees a minimal system: read-only OS directories, its workspace
view at the workspace's own path, a private /tmp and HOME. Its effect is read from the
upper layer by `tools/effect_reader.py`; `tools/effect_apply.py` applies and holds it.
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType

from tools_app.tools import sandbox
from tools_app.tools.base import SandboxOptions
from tools_app.tools.effect import Effect
from tools_app.tools.effect_apply import (
    apply_effect,
    drop_held_effect,
    hold_effect,
    load_held_effect,
)
from tools_app.tools.effect_reader import read_effect
from tools_app.tools.paths import is_within

__all__ = [
    "CowRun",
    "apply_effect",
    "build_cow_command",
    "cow_available",
    "drop_held_effect",
    "hidden_paths",
    "hold_effect",
    "load_held_effect",
    "make_scratch",
    "readonly_paths",
    "remove_scratch",
    "run_copy_on_write",
]

READONLY_PATHS_ENV = "AGENTWEB_SANDBOX_READONLY_PATHS"
SANDBOX_UID = "65534"
# The OS's program and library directories; symlinks (merged /usr) are recreated as such.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
# Mounts the overlay from the scratch dir (relative paths: no escaping of the workspace
# path in mount options), then runs bubblewrap. This shell is PID 1 of the namespace:
# SIGTERM from outside reaches it only through a handler, which kills everything at once.
_MOUNT_SCRIPT = (
    'cd "$1" && mount -t overlay overlay '
    "-o lowerdir=lower,upperdir=upper,workdir=work,userxattr merged || exit 125; "
    # A background job's stdin is /dev/null unless redirected: keep the caller's (fd 3).
    'shift; exec 3<&0; trap "kill -KILL -1; exit 143" TERM INT HUP; "$@" <&3 3<&- & wait $!'
)


class CowRun:
    """A finished copy-on-write run: its result, its effect, and the scratch to clean up.

    The effect's blobs live in the scratch dir: apply or hold them before `cleanup()`.
    """

    def __init__(self, result: sandbox.CommandResult, effect: Effect, scratch: Path) -> None:
        self.result = result
        self.effect = effect
        self.scratch = scratch

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
    kill_grace: float = sandbox.KILL_GRACE_SECONDS,
    stdin: bytes | None = None,
    extra_env: Mapping[str, str] | None = None,
) -> CowRun:
    """Run `argv` on a copy-on-write view of `workspace`; the workspace stays untouched.

    `extra_env` joins the scrubbed environment (a skill tool's arguments); `stdin` is fed
    to the command.
    """
    root = Path(os.path.realpath(workspace))
    scratch = make_scratch(root)
    try:
        result = sandbox.run_process(
            build_cow_command(root, argv, options, scratch),
            cwd=str(scratch),
            env={**sandbox.scrubbed_env(sandbox.SANDBOX_HOME), **(extra_env or {})},
            timeout=timeout,
            sandboxed=True,
            should_stop=should_stop,
            kill_grace=kill_grace,
            stdin=stdin,
        )
        effect = read_effect(root, scratch / "upper")
    except BaseException:
        remove_scratch(scratch)
        raise
    return CowRun(result, effect, scratch)


def remove_scratch(scratch: Path) -> None:
    """Remove a scratch dir (overlay leaves `work/work` mode 0000: made removable first)."""
    _make_removable(scratch)
    shutil.rmtree(scratch, ignore_errors=True)


def make_scratch(root: Path) -> Path:
    """A private scratch dir (lower link, upper, work, merged) outside the workspace."""
    scratch = Path(tempfile.mkdtemp(prefix="agentweb-cow-"))
    if is_within(scratch, root):
        shutil.rmtree(scratch)
        raise RuntimeError(f"the scratch dir {scratch} would be inside the workspace")
    for name in ("upper", "work", "merged"):
        (scratch / name).mkdir()
    (scratch / "lower").symlink_to(root)
    return scratch


def build_cow_command(
    workspace: Path, argv: Sequence[str], options: SandboxOptions, scratch: Path
) -> list[str]:
    """The full command line: unshare + overlay mount, then bubblewrap, then `argv`.

    `scratch` must hold `lower` (a symlink to the workspace), `upper`, `work` and
    `merged` (see `make_scratch`). Plain argv, no Python: an unprivileged test runs it.
    """
    root = os.path.realpath(workspace)
    unshare = shutil.which("unshare") or "/usr/bin/unshare"
    cmd = [unshare, "--user", "--map-root-user", "--mount", "--pid", "--fork", "--kill-child"]
    cmd += ["sh", "-c", _MOUNT_SCRIPT, "agentweb-cow", str(scratch)]
    return cmd + bwrap_args(Path(root), scratch / "merged", options) + ["--", *argv]


def bwrap_args(root: Path, merged: Path, options: SandboxOptions) -> list[str]:
    """bubblewrap: unprivileged uid, no capabilities, a minimal system, the merged view."""
    cmd = [shutil.which("bwrap") or "/usr/bin/bwrap", "--unshare-user"]
    cmd += ["--uid", SANDBOX_UID, "--gid", SANDBOX_UID, "--cap-drop", "ALL", "--unshare-all"]
    if options.network or options.approved:
        cmd += ["--share-net"]
    cmd += ["--new-session", "--die-with-parent"]
    cmd += [*_system_args(), "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    cmd += ["--dir", sandbox.SANDBOX_HOME]
    for path in readonly_paths():
        cmd += ["--ro-bind-try", str(path), str(path)]
    cmd += _mask_args(root)
    cmd += ["--bind", str(merged), str(root), *secret_mask_args(root, merged, options)]
    return [*cmd, "--chdir", str(root)]


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
    source = Path(__file__).resolve().parents[2]
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


def _make_removable(scratch: Path) -> None:
    """Overlay leaves `work/work` mode 0000; give the owner rights so rmtree can go in."""
    for dirpath, dirnames, _ in os.walk(scratch):
        for name in dirnames:
            path = os.path.join(dirpath, name)
            try:
                mode = os.lstat(path).st_mode
                if stat.S_ISDIR(mode):
                    os.chmod(path, stat.S_IMODE(mode) | stat.S_IRWXU)
            except OSError:
                continue


@functools.cache
def cow_available() -> bool:
    """True when unshare, an overlay mount and bubblewrap all work here (probed once)."""
    if not (shutil.which("unshare") and shutil.which("bwrap")):
        return False
    with tempfile.TemporaryDirectory(prefix="agentweb-probe-") as tmp:
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        (workspace / "probe").write_text("x")
        try:
            with run_copy_on_write(
                workspace, ["sh", "-c", "echo y > probe"], SandboxOptions(), timeout=30
            ) as run:
                changed = [e.path for e in run.effect.entries]
                return run.result.exit_code == 0 and changed == ["probe"]
        except Exception:  # any failure means: not available, commands need a person
            return False
