"""Workspace path resolution (every tool path goes through `resolve_path`) and the
bubblewrap runner that every agent command goes through."""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from tools_app.tools.base import SandboxOptions, ToolError


class PathOutsideWorkspace(ToolError):
    """A path that resolves outside the session's workspace."""


def resolve_path(workspace: Path, path: str, *, argument: str = "path") -> Path:
    """Resolve `path` inside `workspace`, following symlinks, or raise.

    Relative paths are relative to the workspace; absolute paths are accepted only
    inside it. Containment is compared by path components, so a sibling
    `/ws-evil` of `/ws` is outside.
    """
    if "\x00" in path:
        raise ToolError(f"`{argument}` contains a NUL byte; pass a plain file path.")
    if path.strip() == "":
        raise ToolError(f"`{argument}` is empty; pass a path relative to the workspace.")
    root = Path(os.path.realpath(workspace))
    candidate = Path(path).expanduser() if path.startswith("~") else Path(path)
    if not candidate.is_absolute():
        candidate = root / candidate
    resolved = Path(os.path.realpath(candidate))
    if not is_within(resolved, root):
        raise PathOutsideWorkspace(
            f"`{argument}` {path!r} is outside the workspace; use a path inside it "
            "(relative paths are relative to the workspace root)."
        )
    return resolved


def is_within(path: Path, root: Path) -> bool:
    """True when `path` is `root` or below it, compared component by component."""
    return path.parts[: len(root.parts)] == root.parts


def relative_to_workspace(workspace: Path, resolved: Path) -> str:
    """The workspace-relative POSIX form of an already resolved path ('.' for the root)."""
    root = Path(os.path.realpath(workspace))
    rel = resolved.relative_to(root).as_posix()
    return rel or "."


def is_inside_git_dir(workspace: Path, resolved: Path) -> bool:
    """True when a resolved path is a `.git` directory or anything below one."""
    root = Path(os.path.realpath(workspace))
    return ".git" in resolved.relative_to(root).parts


# --- Protected path matching ---------------------------------------------------------


def matches_protected(rel_path: str, patterns: Iterable[str]) -> bool:
    """True when a workspace-relative path is covered by a gitignore-style pattern.

    A pattern without a slash matches a name at any depth (`.env` covers `sub/.env`
    but not `.envrc`); one with a slash is anchored at the workspace root
    (`.github/**`, `/config/prod.yml`). A pattern that matches a directory covers
    everything below it, as in gitignore.
    """
    parts = [p for p in rel_path.split("/") if p not in ("", ".")]
    if not parts:
        return False
    names, paths = protected_matchers(tuple(patterns))
    if names is not None and any(names.fullmatch(part) for part in parts):
        return True
    return paths is not None and paths.match("/".join(parts)) is not None


@functools.lru_cache(maxsize=64)
def protected_matchers(
    patterns: tuple[str, ...],
) -> tuple[re.Pattern[str] | None, re.Pattern[str] | None]:
    """(name regex, path regex): a walk matches each name once and each path once.

    A component whose name fullmatches the first is protected with all below it; a
    relative path that the second matches (with `re.match`) is protected likewise.
    """
    names, paths = [], []
    for pattern in patterns:
        stripped = pattern.strip().rstrip("/")
        if not stripped or stripped.startswith("#"):
            continue
        if "/" in stripped:
            paths.append(f"(?:{_glob_regex(stripped.lstrip('/')).pattern})(?:/|$)")
        else:
            names.append(f"(?:{_glob_regex(stripped).pattern})")
    return (
        re.compile("|".join(names)) if names else None,
        re.compile("|".join(paths)) if paths else None,
    )


@functools.lru_cache(maxsize=512)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    """Translate a gitignore glob: `*` and `?` stay within a component, `**` crosses them."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("/**", i) and i + 3 == len(pattern):
            out.append("(?:/.*)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 2 :]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1 : end].replace("\\", "\\\\")
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out))


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


# --- Bubblewrap ----------------------------------------------------------------------

_WALK_LIMIT = 200_000
_SKIP_DIRS = frozenset({"node_modules"})
SANDBOX_HOME = "/tmp/home"


@functools.cache
def bwrap_available() -> bool:
    """True when bubblewrap is installed AND can create the namespaces it needs.

    In many containers user namespaces are off and `bwrap` exits with an error; the
    probe runs once per process with the same isolation flags that commands use.
    """
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return False
    probe = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs"]
    probe += ["/tmp", "--unshare-all", "--new-session", "--die-with-parent", "true"]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=15, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def build_command(workspace: Path, argv: Sequence[str], options: SandboxOptions) -> list[str]:
    """The bwrap command line that runs `argv` in `workspace`.

    The whole host is read-only, /tmp is private, the workspace is writable except for
    `.git` and protected paths (unless a reviewer approved the command), and there is
    no network unless the policy or an approval grants it.
    """
    root = os.path.realpath(workspace)
    cmd = [shutil.which("bwrap") or "bwrap", "--ro-bind", "/", "/", "--dev", "/dev"]
    cmd += ["--proc", "/proc", "--tmpfs", "/tmp", "--dir", SANDBOX_HOME]
    for hidden in _hidden_dirs(Path(root)):
        cmd += ["--tmpfs", str(hidden)]
    cmd += ["--bind", root, root]
    if not options.approved:
        for path in read_only_paths(Path(root), options.protected_paths):
            cmd += ["--ro-bind", str(path), str(path)]
    cmd += ["--unshare-all"]
    if options.network or options.approved:
        cmd += ["--share-net"]
    cmd += ["--new-session", "--die-with-parent", "--chdir", root, "--", *argv]
    return cmd


def read_only_paths(root: Path, patterns: Sequence[str]) -> list[Path]:
    """Every `.git` and every existing protected path in the workspace, shallowest first.

    Walked breadth-first without following symlinks, skipping `node_modules`, so that a
    huge tree cannot hide the top-level `.git` behind the walk limit.
    """
    found: list[Path] = []
    queue: deque[Path] = deque([root])
    seen = 0
    while queue and seen < _WALK_LIMIT:
        try:
            entries = sorted(os.scandir(queue.popleft()), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            seen += 1
            rel = Path(entry.path).relative_to(root).as_posix()
            if entry.name == ".git" or matches_protected(rel, patterns):
                found.extend(_bindable(root, Path(entry.path)))
            elif entry.is_dir(follow_symlinks=False) and entry.name not in _SKIP_DIRS:
                queue.append(Path(entry.path))
    return found


def _bindable(root: Path, path: Path) -> list[Path]:
    """The real path to re-bind read-only, if it exists inside the workspace."""
    real = Path(os.path.realpath(path))
    if real.exists() and is_within(real, root) and real != root:
        return [real]
    return []


def _hidden_dirs(root: Path) -> list[Path]:
    """Host directories a command must not even read: secrets and other sessions.

    The worker's HOME (credentials such as ~/.ssh or a gh token) and agentweb's runtime
    data (database, embedded Redis socket, other sessions' workspaces) are covered by
    empty tmpfs mounts; the session's own workspace is bound back on top afterwards.
    """
    candidates = [os.environ.get("HOME", ""), os.environ.get("AGENTWEB_WORKSPACES", "")]
    candidates.append(os.environ.get("AGENTWEB_VAR", str(Path(__file__).parents[2] / "var")))
    needed = [Path(os.path.realpath(p)) for p in (sys.prefix, sys.base_prefix)]
    hidden: list[Path] = []
    for candidate in filter(None, candidates):
        real = Path(os.path.realpath(candidate))
        if real in (Path("/"), root) or not real.is_dir():
            continue
        if any(is_within(n, real) for n in needed) or is_within(real, root):
            continue
        hidden.append(real)
    return sorted(set(hidden), key=lambda p: len(p.parts))


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
    """Reads a pipe to the end but keeps only the first `limit` bytes."""

    def __init__(self, stream: IO[bytes], limit: int) -> None:
        self.buffer = bytearray()
        self.total = 0
        self._fd = stream.fileno()
        self._limit = limit
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()

    def _drain(self) -> None:
        while chunk := self._read():
            with self._lock:
                self.total += len(chunk)
                room = self._limit - len(self.buffer)
                if room > 0:
                    self.buffer += chunk[:room]

    def _read(self) -> bytes:
        try:
            return os.read(self._fd, _CHUNK)
        except OSError:  # the pipe was closed under a straggler that kept it open
            return b""

    def result(self) -> tuple[bytes, int]:
        with self._lock:
            return bytes(self.buffer), self.total


def run_sandboxed(
    workspace: Path,
    argv: Sequence[str],
    options: SandboxOptions,
    *,
    timeout: float,
    on_start: Callable[[int], None] | None = None,
    use_sandbox: bool | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> CommandResult:
    """Run `argv` in the workspace, in its own session, and always reap its process group.

    Under bubblewrap when it works (`use_sandbox=None`), else as a plain process. On
    timeout the group gets SIGTERM, then SIGKILL after a grace period; after a normal
    exit, leftover background processes of the group are killed too, so a command
    can neither outlive its call nor keep the output pipe open.
    """
    sandboxed = bwrap_available() if use_sandbox is None else use_sandbox
    with tempfile.TemporaryDirectory(prefix="agentweb-home-") as home:
        env = scrubbed_env(SANDBOX_HOME if sandboxed else home)
        root = os.path.realpath(workspace)
        cmd = build_command(Path(root), argv, options) if sandboxed else list(argv)
        proc = subprocess.Popen(
            cmd,
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        assert proc.stdout is not None
        collector = _Collector(proc.stdout, OUTPUT_LIMIT)
        if on_start is not None:
            on_start(proc.pid)
        timed_out = _wait_or_kill(proc, timeout, should_stop)
        _kill_group(proc.pid, signal.SIGKILL)
        collector.thread.join(timeout=KILL_GRACE_SECONDS)
        output, total = collector.result()
        proc.stdout.close()
    return CommandResult(proc.returncode, output, total, timed_out, sandboxed)


def _wait_or_kill(
    proc: subprocess.Popen[bytes], timeout: float, should_stop: Callable[[], bool] | None
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
    deadline = time.monotonic() + KILL_GRACE_SECONDS
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


def _kill_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
