"""The sandbox a stdio MCP server runs in: bubblewrap with the rules of a command's
(`tools/overlay.py`): an unprivileged uid with no capabilities, new namespaces of every
kind, the OS's directories read-only, a private /tmp and HOME, and nothing of
agentweb's source, data or anyone's home. What it may see besides is named by its
entry: its scratch folder (read-write, its working directory), the paths its
installation needs (read-only) and the folders it works on (read-write).

Its network namespace has only `lo`. A server whose entry names hosts reaches them, and
nothing else, through agentweb's egress proxy (`core/egress/`: its socket bound into the
sandbox, bridged to `127.0.0.1:3128`, the proxy variables set), as a command does.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from tools_app.core.egress import sandbox as egress_sandbox
from tools_app.core.egress.grant import EgressGrant
from tools_app.core.tools import overlay, processes, sandbox_user
from tools_app.core.tools.paths import is_within


def sandboxed_argv(
    command: Sequence[str],
    *,
    scratch: Path,
    readonly: Sequence[str] = (),
    writable: Sequence[str] = (),
    egress: EgressGrant | None = None,
    egress_dir: Path | None = None,
) -> list[str]:
    """`command` inside bubblewrap, its working directory `scratch`; with `egress`, the
    proxy's socket (in `egress_dir`) bound in and bridged before the command starts."""
    bwrap = shutil.which("bwrap") or "/usr/bin/bwrap"
    cmd = sandbox_user.setpriv_args() if sandbox_user.worker_is_root() else []
    cmd += [bwrap, "--unshare-user", "--uid", overlay.SANDBOX_UID, "--gid", overlay.SANDBOX_UID]
    cmd += ["--cap-drop", "ALL", "--unshare-all", "--new-session", "--die-with-parent"]
    cmd += [*_system_args(), "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    cmd += ["--dir", processes.SANDBOX_HOME]
    for path in [*overlay.readonly_paths(), *readonly]:
        cmd += ["--ro-bind-try", str(path), str(path)]
    for path in [str(scratch), *writable]:
        cmd += ["--bind", str(path), str(path)]
    cmd += _masks([*readonly, *writable])
    if egress is not None and egress_dir is not None:
        cmd += egress_sandbox.bind_args(egress_dir, egress)
    argv = egress_sandbox.wrapped_argv(command, egress)
    return [*cmd, "--chdir", str(scratch), "--", *argv]


def path_problem(path: str) -> str | None:
    """Why `path` cannot be shown to a server, or None."""
    if not path.startswith("/") or path == "/":
        return f"{path!r}: name an absolute folder or file other than /"
    if not os.path.exists(path):
        return f"{path!r} does not exist"
    return None


def _system_args() -> list[str]:
    out: list[str] = []
    for path in overlay.SYSTEM_DIRS:
        if os.path.islink(path):
            out += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            out += ["--ro-bind", path, path]
    return out


def _masks(bound: Sequence[str]) -> list[str]:
    """agentweb's own hidden paths that lie inside what is shown, hidden again; the
    bound path itself stays (an admin named it)."""
    visible = [Path(os.path.realpath(p)) for p in [*overlay.SYSTEM_DIRS, *bound]]
    out: list[str] = []
    for hidden in overlay.hidden_paths():
        inside = [v for v in visible if is_within(hidden, v) and hidden != v]
        if not inside:
            continue
        if os.path.isdir(hidden):
            out += ["--tmpfs", str(hidden)]
        elif os.path.lexists(hidden):
            out += ["--ro-bind", "/dev/null", str(hidden)]
    return out
