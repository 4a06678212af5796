"""A command never runs as the host's root, and runs within bounds: checked from the host.

Every probe of the host changes nothing even where it succeeds: a file opened for
writing and closed, a chmod to the mode the node already has, a read.
"""

from __future__ import annotations

import os
import stat
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.helpers import requires_cow
from tools_app.core.tools import sandbox_user
from tools_app.core.tools.base import SandboxOptions
from tools_app.core.tools.overlay import (
    CowRun,
    build_cow_command,
    make_scratch,
    remove_scratch,
    run_copy_on_write,
    sweep_stale_scratch,
)
from tools_app.core.tools.trees import remove_tree

pytestmark = [pytest.mark.sandbox, requires_cow]

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="the root worker's chain needs root")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "owned-by-root.txt").write_text("root's file\n")
    return workspace


@pytest.fixture
def cow() -> Iterator[list[CowRun]]:
    runs: list[CowRun] = []
    yield runs
    for run in runs:
        run.cleanup()


def _run(runs: list[CowRun], ws: Path, command: str, **kwargs: object) -> str:
    run = run_copy_on_write(ws, ["bash", "-c", command], SandboxOptions(), timeout=60, **kwargs)  # type: ignore[arg-type]
    runs.append(run)
    return run.result.output.decode(errors="replace")


def _host_uids_of(marker: str) -> list[list[int]]:
    """The real, effective, saved and filesystem uids of every host process whose command
    line holds `marker`."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = Path(entry.path, "cmdline").read_bytes()
            status = Path(entry.path, "status").read_text()
        except OSError:
            continue
        if marker.encode() in cmdline and b"bwrap" not in cmdline and b"unshare" not in cmdline:
            line = next(x for x in status.splitlines() if x.startswith("Uid:"))
            found.append([int(n) for n in line.split()[1:]])
    return found


# --- never host root ---------------------------------------------------------------------


@as_root
def test_a_running_command_is_not_uid_0_on_the_host(ws: Path, cow: list[CowRun]) -> None:
    """Seen from the host's /proc while it runs, not from inside."""
    marker = f"agentweb-probe-{uuid.uuid4().hex}"
    stop = threading.Event()
    seen: list[list[list[int]]] = []

    def watch() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not seen:
            if uids := _host_uids_of(marker):
                seen.append(uids)
            time.sleep(0.02)
        stop.set()

    watcher = threading.Thread(target=watch)
    watcher.start()
    _run(cow, ws, f"sleep 20; : {marker}", should_stop=stop.is_set)
    watcher.join()
    uid, _ = sandbox_user.sandbox_ids()
    assert seen, "the command never showed up in the host's /proc"
    assert all(ids == [uid] * 4 for ids in seen[0]), seen
    assert uid != 0


@as_root
def test_root_owned_host_files_stay_out_of_reach(ws: Path, cow: list[CowRun]) -> None:
    full_mode = stat.S_IMODE(os.stat("/dev/full").st_mode)
    out = _run(
        cow,
        ws,
        "id -u; (: >> /proc/sys/kernel/core_pattern) 2>&1 || echo core_pattern-refused; "
        f"chmod {full_mode:o} /dev/full 2>&1 || echo chmod-refused; "
        "cat /etc/shadow 2>&1 || echo shadow-refused; "
        "(: >> /proc/sysrq-trigger) 2>&1 || echo sysrq-refused",
    )
    assert out.splitlines()[0] == "65534"
    for refused in ("core_pattern-refused", "chmod-refused", "shadow-refused", "sysrq-refused"):
        assert refused in out, out
    assert "root:" not in out
    assert stat.S_IMODE(os.stat("/dev/full").st_mode) == full_mode


@as_root
def test_root_owned_workspace_files_are_editable_and_stay_root_owned_on_disk(
    ws: Path, cow: list[CowRun]
) -> None:
    """The idmapped lower layer: the command may change root's files in its view; the
    workspace itself is untouched and keeps its owner."""
    target = ws / "owned-by-root.txt"
    run = run_copy_on_write(
        ws, ["bash", "-c", "echo changed >> owned-by-root.txt && touch new.txt"],
        SandboxOptions(), timeout=60,
    )  # fmt: skip
    cow.append(run)
    assert run.result.exit_code == 0, run.result.output
    assert {e.path for e in run.effect.entries} == {"owned-by-root.txt", "new.txt"}
    assert target.read_text() == "root's file\n" and os.stat(target).st_uid == 0
    uid, _ = sandbox_user.sandbox_ids()
    assert os.stat(run.scratch / "upper" / "new.txt").st_uid == uid


@as_root
def test_a_namespace_is_taken_only_once_both_its_maps_are_written() -> None:
    """`unshare --map-root-user` writes the uid map, then the gid map; a namespace taken
    between the two has no gid map, and every idmapped mount through it failed with
    EINVAL for the life of the process (a CI run's flake, 7 December)."""
    holder = subprocess.Popen(["unshare", "--user", "sleep", "30"])
    try:
        alive = lambda: holder.poll() is None  # noqa: E731
        uid_map, gid_map = Path(f"/proc/{holder.pid}/uid_map"), Path(f"/proc/{holder.pid}/gid_map")
        deadline = time.monotonic() + 5
        while uid_map.read_text().split() != [] and time.monotonic() < deadline:
            time.sleep(0.01)  # until it has unshared: its own namespace, no map yet
        uid_map.write_text("0 65533 1\n")
        with pytest.raises(sandbox_user.SandboxUserError, match="uid 65533 and gid 65534"):
            sandbox_user._wait_for_maps(holder.pid, 65533, 65534, alive=alive, seconds=0.2)
        Path(f"/proc/{holder.pid}/setgroups").write_text("deny")
        gid_map.write_text("0 65534 1\n")
        sandbox_user._wait_for_maps(holder.pid, 65533, 65534, alive=alive, seconds=5)
    finally:
        holder.kill()
        holder.wait()


@as_root
def test_a_kept_namespace_fd_closed_by_other_code_is_made_again(
    ws: Path, cow: list[CowRun], caplog: pytest.LogCaptureFixture
) -> None:
    """Another part of the process closing the kept namespace's fd number (a double close)
    and a file taking that number: the next command still runs, through a new namespace,
    and the log says so (before, every sandbox of the process failed with EINVAL)."""
    assert "ok" in _run(cow, ws, "echo ok")
    kept = sandbox_user._idmap_userns()
    taker = os.open(ws.parent / "takes-the-number", os.O_WRONLY | os.O_CREAT, 0o600)
    os.dup2(taker, kept)  # the stray close, and a file taking the number at once
    try:
        assert not sandbox_user.kept_userns_intact()
        command = "echo changed >> owned-by-root.txt && cat owned-by-root.txt"
        assert "changed" in _run(cow, ws, command)
    finally:
        os.close(taker)
        os.close(kept)
    assert sandbox_user.kept_userns_intact()
    assert f"(fd {kept}) was closed by other code" in caplog.text
    assert (ws / "owned-by-root.txt").read_text() == "root's file\n"


@as_root
def test_the_workspace_mount_does_not_leak_into_the_command(ws: Path, cow: list[CowRun]) -> None:
    """The idmapped mount would let the sandbox uid write the real workspace: its
    descriptor is closed before the command starts (3 is `ls`'s own handle)."""
    out = _run(cow, ws, "ls /proc/self/fd")
    assert set(out.split()) <= {"0", "1", "2", "3"}, out


@as_root
def test_an_unprivileged_worker_s_commands_reach_nothing_of_root_either() -> None:
    """The chain a worker that is not root runs (its own user namespace), started as
    `nobody`: the same probes fail, and what the command creates is nobody's on disk."""
    base = Path(tempfile.mkdtemp(prefix="agentweb-nobody-"))
    ws = base / "ws"
    ws.mkdir()
    scratch = make_scratch(ws)
    try:
        os.chmod(base, 0o755)
        for path in (ws, scratch, scratch / "upper", scratch / "work", scratch / "merged"):
            os.chown(path, 65534, 65534)
        full_mode = stat.S_IMODE(os.stat("/dev/full").st_mode)
        probes = (
            "(: >> /proc/sys/kernel/core_pattern) 2>/dev/null || echo core_pattern-refused; "
            f"chmod {full_mode:o} /dev/full 2>/dev/null || echo chmod-refused; "
            "cat /etc/shadow 2>/dev/null || echo shadow-refused; touch new.txt"
        )
        cmd = build_cow_command(ws, ["bash", "-c", probes], SandboxOptions(), scratch)
        done = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", *cmd],
            cwd=scratch, capture_output=True, text=True, timeout=60, check=False,
            env={"PATH": "/usr/bin:/bin", "HOME": "/tmp/home"},
        )  # fmt: skip
        said = done.stdout.split()
        assert said == ["core_pattern-refused", "chmod-refused", "shadow-refused"], done.stderr
        assert os.stat(scratch / "upper" / "new.txt").st_uid == 65534
        assert stat.S_IMODE(os.stat("/dev/full").st_mode) == full_mode
    finally:
        remove_tree(base, ignore_errors=True)
        remove_scratch(scratch)


# --- bounds ----------------------------------------------------------------------------------


def test_a_fork_bomb_stops_at_the_process_limit(
    ws: Path, cow: list[CowRun], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTWEB_SANDBOX_MAX_PROCESSES", "20")
    script = (
        "import os, time\n"
        "n = 0\n"
        "for _ in range(200):\n"
        "    try:\n"
        "        pid = os.fork()\n"
        "    except OSError as exc:\n"
        "        print('refused after', n, exc.strerror)\n"
        "        break\n"
        "    if pid == 0:\n"
        "        time.sleep(5); os._exit(0)\n"
        "    n += 1\n"
        "else:\n"
        "    print('forked', n)\n"
    )
    for _ in range(BOMB_ATTEMPTS):
        out = _run(cow, ws, "/usr/bin/python3 -", stdin=script.encode())
        if not any(no_room in out for no_room in NO_ROOM_TO_START):
            break
        time.sleep(1)  # the limit left no room even for bubblewrap: see BOMB_ATTEMPTS
    assert "refused after" in out, out
    assert int(out.split("refused after")[1].split()[0]) < 40


# The process limit counts every process of the sandbox's host uid, and other test runs
# on this machine (the xdist workers, the PostgreSQL run beside) run sandboxed commands
# under that uid at the same time: with 20 of theirs alive, bubblewrap itself cannot
# start (it says so when making its namespace, or forking its pid 1). That is the limit
# working, but not the bomb this test watches: it tries again.
BOMB_ATTEMPTS = 20
NO_ROOM_TO_START = (  # bubblewrap's own words when it cannot start, at either step
    "Creating new namespace failed: Resource temporarily unavailable",
    "Can't fork for pid 1: Resource temporarily unavailable",
)


def test_memory_file_size_and_tmp_are_bounded(
    ws: Path, cow: list[CowRun], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTWEB_SANDBOX_MAX_MEMORY_MB", "200")
    monkeypatch.setenv("AGENTWEB_SANDBOX_TMP_MB", "4")
    out = _run(
        cow,
        ws,
        "/usr/bin/python3 -c 'bytearray(400 * 2**20)' 2>&1 | tail -1; "
        "truncate -s 1G sparse.bin 2>&1 || echo truncate-refused; "
        "head -c 8M /dev/zero > /tmp/fill 2>&1 || echo tmp-full; "
        "ulimit -t",
    )
    assert "MemoryError" in out
    assert "truncate-refused" in out and "tmp-full" in out
    assert out.split()[-1] == "60"  # CPU seconds follow the command's timeout
    assert not (ws / "sparse.bin").exists()


# --- scratch -------------------------------------------------------------------------------


def test_a_starting_worker_sweeps_only_dead_processes_scratch() -> None:
    with tempfile.TemporaryDirectory() as base:
        dead = Path(base, "agentweb-cow-999999999-abc")
        (dead / "upper").mkdir(parents=True)
        _dig(dead / "upper", 1100)  # deeper than Python's recursion limit
        live = Path(base, f"agentweb-cow-{os.getpid()}-abc")
        live.mkdir()
        other = Path(base, "unrelated")
        other.mkdir()
        assert sweep_stale_scratch(Path(base)) == 1
        assert not dead.exists() and live.exists() and other.exists()


def _dig(top: Path, depth: int) -> None:
    """`top/d/d/…/d`, `depth` levels, made one level at a time (makedirs recurses)."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = child
    os.close(fd)
