"""The copy-on-write sandbox, checked on the filesystem: what a command can reach, what
its effect holds, and what applying it writes. Canaries only, never real system paths."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import wait_gone
from tests.unit.helpers import requires_cow
from tools_app.core.tools.base import SandboxOptions
from tools_app.core.tools.effect import Effect, EffectEntry
from tools_app.core.tools.effect_apply import (
    apply_effect,
    drop_held_effect,
    hold_effect,
    load_held_effect,
)
from tools_app.core.tools.effect_reader import file_sha256, read_effect
from tools_app.core.tools.errors import ToolError
from tools_app.core.tools.overlay import CowRun, build_cow_command, make_scratch, run_copy_on_write

pytestmark = [pytest.mark.sandbox, requires_cow]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A small workspace with a canary subtree, and a canary dir outside it."""
    workspace = tmp_path / "ws"
    (workspace / "canary" / "deep").mkdir(parents=True)
    (workspace / "canary" / "deep" / "keep.txt").write_text("keep\n")
    (workspace / "canary" / "top.txt").write_text("top\n")
    (workspace / "config").mkdir()
    (workspace / "config" / ".env").write_text("SECRET=1\n")
    (workspace / "a.txt").write_text("a\n")
    (tmp_path / "outside").mkdir()
    return workspace


@pytest.fixture
def cow() -> Iterator[list[CowRun]]:
    runs: list[CowRun] = []
    yield runs
    for run in runs:
        run.cleanup()


def _run(runs: list[CowRun], ws: Path, command: str, timeout: float = 30) -> CowRun:
    run = run_copy_on_write(ws, ["bash", "-c", command], SandboxOptions(), timeout=timeout)
    runs.append(run)
    return run


def _out(run: CowRun) -> str:
    return run.result.output.decode()


def _tree(root: Path) -> dict[str, str]:
    """Every path below root with its content (files), target (links) or 'dir'."""
    found = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            found[rel] = "-> " + os.readlink(path)
        elif path.is_dir():
            found[rel] = "dir"
        else:
            found[rel] = path.read_text(errors="replace")
    return found


def _paths(effect: Effect) -> dict[str, str]:
    return {e.path: e.kind for e in effect.entries}


def _apply_all(ws: Path, effect: Effect) -> list[str]:
    return apply_effect(ws, effect.only({e.path for e in effect.entries}))


# --- root never leaks ----------------------------------------------------------------------


def test_root_gets_no_capabilities_and_cannot_remount(ws: Path, cow: list[CowRun]) -> None:
    canary = ws.parent / "outside" / "pwned"
    run = _run(cow, ws, f"mount -o remount,rw,bind / && echo pwned > {canary}; id")
    assert run.result.exit_code == 0 and "uid=65534" in _out(run)
    assert not canary.exists()
    caps = _run(cow, ws, "grep CapEff /proc/self/status; id -u")
    assert _out(caps).split() == ["CapEff:", "0000000000000000", "65534"]
    failed = _run(cow, ws, "mount -t tmpfs none /tmp")
    assert failed.result.exit_code != 0


def test_nothing_outside_the_workspace_view_is_writable(ws: Path, cow: list[CowRun]) -> None:
    outside = ws.parent / "outside"
    command = f"for d in / /usr /etc /tmp/.. {outside}; do touch $d/agentweb-canary; done; true"
    _run(cow, ws, command)
    assert not (outside / "agentweb-canary").exists()
    assert not Path("/usr/agentweb-canary").exists() and not Path("/etc/agentweb-canary").exists()


# --- every write goes to the effect -------------------------------------------------------------


def test_writes_land_in_the_effect_and_apply_writes_them(ws: Path, cow: list[CowRun]) -> None:
    before = _tree(ws)
    run = _run(cow, ws, "echo new > b.txt; echo changed > a.txt; mkdir -p n/m; echo x > n/m/c")
    assert _tree(ws) == before
    assert _paths(run.effect) == {
        "a.txt": "file",
        "b.txt": "file",
        "n": "dir",
        "n/m": "dir",
        "n/m/c": "file",
    }
    a = next(e for e in run.effect.entries if e.path == "a.txt")
    assert a.before == file_sha256(ws / "a.txt") and a.size == len("changed\n")
    _apply_all(ws, run.effect)
    assert (ws / "a.txt").read_text() == "changed\n" and (ws / "n/m/c").read_text() == "x\n"


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf canary",
        "X=canary; rm -rf $X",
        "find canary -delete",
        "python3 -c 'import shutil; shutil.rmtree(\"canary\")'",
        "cd canary && rm -rf ./* && cd .. && rmdir canary",
        "mv canary /tmp/gone",
    ],
)
def test_each_spelling_of_deletion_is_an_effect(ws: Path, cow: list[CowRun], command: str) -> None:
    before = _tree(ws)
    run = _run(cow, ws, command)
    assert _tree(ws) == before, "the workspace changed before any decision"
    assert _paths(run.effect) == {"canary": "delete"}
    _apply_all(ws, run.effect)
    assert not (ws / "canary").exists() and (ws / "a.txt").exists()


def test_deleting_the_whole_root_deletes_only_the_view(ws: Path, cow: list[CowRun]) -> None:
    before = _tree(ws)
    outside = ws.parent / "outside" / "keep"
    outside.write_text("keep\n")
    run = _run(cow, ws, "X=/; rm -rf --no-preserve-root $X 2>/dev/null; ls -A")
    assert _tree(ws) == before and outside.read_text() == "keep\n"
    assert _paths(run.effect) == {"a.txt": "delete", "canary": "delete", "config": "delete"}


def test_a_replaced_directory_deletes_what_the_new_one_lacks(ws: Path, cow: list[CowRun]) -> None:
    run = _run(cow, ws, "rm -rf canary && mkdir canary && echo n > canary/new.txt")
    assert _paths(run.effect) == {
        "canary/deep": "delete",
        "canary/new.txt": "file",
        "canary/top.txt": "delete",
    }
    _apply_all(ws, run.effect)
    assert _tree(ws / "canary") == {"new.txt": "n\n"}


def test_renames_are_a_delete_and_a_create(ws: Path, cow: list[CowRun]) -> None:
    run = _run(cow, ws, "mv a.txt b.txt && mv canary moved")
    kinds = _paths(run.effect)
    assert kinds["a.txt"] == "delete" and kinds["b.txt"] == "file"
    assert kinds["canary"] == "delete" and kinds["moved"] == "dir"
    _apply_all(ws, run.effect)
    assert (ws / "b.txt").read_text() == "a\n" and (ws / "moved/deep/keep.txt").exists()


def test_a_mode_change_is_a_file_entry_and_an_unchanged_copy_up_is_nothing(
    ws: Path, cow: list[CowRun]
) -> None:
    run = _run(cow, ws, "chmod 755 a.txt && touch config/.env")
    entry = run.effect.entries[0]
    assert [e.path for e in run.effect.entries] == ["a.txt"]
    assert entry.kind == "file" and entry.mode == 0o755 and entry.sha256 == entry.before
    _apply_all(ws, run.effect)
    assert (ws / "a.txt").stat().st_mode & 0o777 == 0o755


def test_symlinks_inside_are_kept_and_outside_refused(ws: Path, cow: list[CowRun]) -> None:
    command = "ln -s a.txt in && ln -s ../a.txt canary/up && ln -s /etc abs && ln -s ../.. rel"
    run = _run(cow, ws, command + " && ln -s canary/up/.. sneaky")
    assert _paths(run.effect) == {"canary/up": "symlink", "in": "symlink"}
    assert {path for path, _ in run.effect.refused} == {"abs", "rel", "sneaky"}


def test_special_files_setuid_and_hard_links_are_refused(ws: Path, cow: list[CowRun]) -> None:
    command = (
        "mkfifo fifo; mknod dev c 1 3; cp a.txt suid && chmod u+s suid; ln a.txt hard; "
        "python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind(\"sock\")'"
    )
    run = _run(cow, ws, command)
    refused = dict(run.effect.refused)
    assert set(refused) == {"fifo", "suid", "hard", "a.txt", "sock"}
    assert "setuid" in refused["suid"] and "hard link" in refused["hard"]
    assert not {"fifo", "dev", "suid", "hard", "sock"} & set(_paths(run.effect))


def test_late_writers_die_with_the_command(ws: Path, cow: list[CowRun]) -> None:
    pause = f"sleep 1.{os.getpid()}"  # about a second, and a mark on the writer's line
    command = f"(setsid sh -c '{pause}; echo late > late.txt' &) ; echo started"
    run = _run(cow, ws, command)
    assert _out(run) == "started\n"
    wait_gone(pause)  # a surviving writer writes, then ends; a killed one never writes
    assert not (ws / "late.txt").exists()
    assert read_effect(ws, run.scratch / "upper").entries == ()


def test_after_a_timeout_nothing_writes_once_the_effect_is_read(
    ws: Path, cow: list[CowRun]
) -> None:
    pause = f"sleep 1.{os.getpid()}"  # about a second, and a mark on the writer's line
    command = (
        f'(setsid sh -c \'trap "" TERM; for i in 1 2 3 4 5 6 7 8 9; do {pause}; '
        "echo $i > late$i.txt; done' &); sleep 30"
    )
    began = time.monotonic()
    run = _run(cow, ws, command, timeout=1)
    assert run.result.timed_out and time.monotonic() - began < 1 + 5 + 2
    wait_gone(pause)  # a surviving writer writes once a second until it ends
    assert read_effect(ws, run.scratch / "upper") == run.effect
    assert not list(ws.glob("late*"))


# --- symlinked parents -------------------------------------------------------------------------


def test_a_directory_swapped_for_an_outside_link_is_never_written_through(
    ws: Path, cow: list[CowRun]
) -> None:
    outside = ws.parent / "outside"
    run = _run(cow, ws, f"mv config config.bak && ln -s {outside} config && echo x > config/.env")
    assert "config" in dict(run.effect.refused)
    _apply_all(ws, run.effect)
    assert list(outside.iterdir()) == []
    assert (ws / "config.bak" / ".env").read_text() == "SECRET=1\n"


def test_apply_refuses_to_write_through_a_symlinked_parent(ws: Path, cow: list[CowRun]) -> None:
    outside = ws.parent / "outside"
    run = _run(cow, ws, "echo evil > config/new.env")
    shutil.rmtree(ws / "config")
    (ws / "config").symlink_to(outside)
    with pytest.raises(ToolError, match="symlink"):
        _apply_all(ws, run.effect)
    assert list(outside.iterdir()) == []


# --- applying exactly what was shown -------------------------------------------------------------


def test_apply_refuses_a_file_changed_since_the_run_and_changes_nothing(
    ws: Path, cow: list[CowRun]
) -> None:
    run = _run(cow, ws, "echo one > b.txt; echo two > a.txt")
    (ws / "a.txt").write_text("edited meanwhile\n")
    with pytest.raises(ToolError, match=r"a\.txt changed since the command ran"):
        _apply_all(ws, run.effect)
    assert not (ws / "b.txt").exists()
    assert (ws / "a.txt").read_text() == "edited meanwhile\n"


def test_apply_never_writes_into_git(ws: Path) -> None:
    effect = Effect(entries=(EffectEntry(".git/hooks/x", "delete", "dir"),), refused=(), blobs=ws)
    with pytest.raises(ToolError, match=r"\.git"):
        apply_effect(ws, effect)


def test_a_held_effect_survives_cleanup_and_applies_the_same_bytes(
    ws: Path, tmp_path: Path, cow: list[CowRun]
) -> None:
    store = tmp_path / "held"
    run = _run(cow, ws, "echo held > h.txt; rm a.txt")
    held = hold_effect(run.effect, store)
    run.cleanup()
    assert not run.scratch.exists()
    loaded = load_held_effect(store, run.effect.digest())
    assert loaded == held and loaded.digest() == run.effect.digest()
    _apply_all(ws, loaded)
    assert (ws / "h.txt").read_text() == "held\n" and not (ws / "a.txt").exists()
    drop_held_effect(store, run.effect.digest())
    assert not (store / run.effect.digest()).exists()


def test_a_tampered_held_blob_is_refused(ws: Path, tmp_path: Path, cow: list[CowRun]) -> None:
    store = tmp_path / "held"
    run = _run(cow, ws, "echo held > h.txt")
    held = hold_effect(run.effect, store)
    (held.blobs / "h.txt").write_text("swapped\n")
    with pytest.raises(ToolError, match="altered"):
        load_held_effect(store, run.effect.digest())


# --- a minimal visible system ------------------------------------------------------------------


@pytest.fixture
def public_dir() -> Iterator[Path]:
    """A directory anyone may read, as a shared toolchain is (pytest's tmp dirs are 0700,
    which the unprivileged uid of a root worker's commands cannot enter)."""
    folder = Path(tempfile.mkdtemp(prefix="agentweb-public-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder)


def test_secrets_outside_the_workspace_are_invisible(
    ws: Path, public_dir: Path, cow: list[CowRun], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Even under an extra read-only path, AGENTWEB_VAR and the database file are masked."""
    toolchain = public_dir / "toolchain"
    (toolchain / "var").mkdir(parents=True)
    (toolchain / "var" / "secret").write_text("VAR SECRET\n")
    (toolchain / "db.sqlite3").write_text("DB SECRET\n")
    (toolchain / "tool").write_text("TOOL OK\n")
    monkeypatch.setenv("AGENTWEB_SANDBOX_READONLY_PATHS", str(toolchain))
    monkeypatch.setenv("AGENTWEB_VAR", str(toolchain / "var"))
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{toolchain}/db.sqlite3")
    venv_python = os.path.realpath(sys.executable)
    command = (
        f"cd {toolchain}; cat tool var/secret db.sqlite3; ls /root /home; test -e {venv_python}"
    )
    run = _run(cow, ws, command + f" || echo no-venv; ls {Path(__file__).parents[2]}")
    out = _out(run)
    assert "TOOL OK" in out and "no-venv" in out
    assert "SECRET" not in out and "manage.py" not in out


# --- cost follows the change, not the tree -------------------------------------------------------


def _fast_tmp() -> str | None:
    """tmpfs when there is one: creating 200k files on a busy shared disk can take 40 s."""
    return "/dev/shm" if os.access("/dev/shm", os.W_OK) else None


def test_a_huge_workspace_yields_exactly_the_changed_files(cow: list[CowRun]) -> None:
    with tempfile.TemporaryDirectory(prefix="agentweb-huge-", dir=_fast_tmp()) as tmp:
        ws = Path(tmp)
        for d in range(200):
            (ws / "aaa" / f"{d:03d}").mkdir(parents=True)
            fd = os.open(ws / "aaa" / f"{d:03d}", os.O_RDONLY)
            for f in range(1000):
                os.close(os.open(f"{f:04d}", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
            os.close(fd)
        (ws / "services/api").mkdir(parents=True)
        (ws / "services/api/package.json").write_text("{}\n")
        began = time.monotonic()
        command = "echo '{\"x\":1}' > services/api/package.json; echo A=1 > services/api/.env"
        run = _run(cow, ws, command)
        assert time.monotonic() - began < 10
        assert _paths(run.effect) == {
            "services/api/.env": "file",
            "services/api/package.json": "file",
        }
        run.cleanup()


# --- the same, as an unprivileged worker -------------------------------------------------------


def _as_nobody(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    setpriv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
    return subprocess.run(
        setpriv + cmd,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": "/tmp/home"},
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="switching to uid 65534 needs root")
def test_an_unprivileged_worker_gets_the_same_sandbox() -> None:
    base = Path(tempfile.mkdtemp(prefix="agentweb-nobody-"))
    scratch = base / "not-yet"
    try:
        os.chmod(base, 0o755)
        ws = base / "ws"
        (ws / "canary").mkdir(parents=True)
        (ws / "canary" / "keep").write_text("keep\n")
        outside = base / "outside"
        outside.mkdir()
        for path in (ws, ws / "canary", ws / "canary" / "keep", outside):
            os.chown(path, 65534, 65534)
        scratch = make_scratch(ws)
        os.chown(scratch, 65534, 65534)
        for name in ("upper", "work", "merged"):
            os.chown(scratch / name, 65534, 65534)
        pause = f"sleep 1.{os.getpid()}"  # about a second, and a mark on the writer's line
        script = (
            "id -u; grep CapEff /proc/self/status; "
            "mount -t tmpfs x /tmp 2>/dev/null || echo nomount;"
            f"echo pwned > {outside}/pwned; rm -rf canary;"
            "python3 -c \"open('new.txt','w').write('py')\";"
            f"(setsid sh -c '{pause}; echo late > late.txt' &); echo done"
        )
        cmd = build_cow_command(ws, ["bash", "-c", script], SandboxOptions(), scratch)
        done = _as_nobody(cmd, scratch)
        assert done.stdout.split() == ["65534", "CapEff:", "0000000000000000", "nomount", "done"], (
            done.stdout + done.stderr
        )
        wait_gone(pause)  # a surviving writer writes, then ends
        assert list(outside.iterdir()) == [] and (ws / "canary" / "keep").exists()
        assert not (ws / "new.txt").exists() and not (ws / "late.txt").exists()
        effect = read_effect(ws, scratch / "upper")
        assert _paths(effect) == {"canary": "delete", "new.txt": "file"}
    finally:
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)


def test_other_workspaces_stay_hidden_even_under_a_visible_path(
    public_dir: Path, cow: list[CowRun], monkeypatch: pytest.MonkeyPatch
) -> None:
    visible = public_dir / "opt"
    (visible / "workspaces" / "mine").mkdir(parents=True)
    (visible / "workspaces" / "other").mkdir()
    (visible / "workspaces" / "other" / "secret").write_text("OTHER SESSION\n")
    monkeypatch.setenv("AGENTWEB_SANDBOX_READONLY_PATHS", str(visible))
    monkeypatch.setenv("AGENTWEB_WORKSPACES", str(visible / "workspaces"))
    mine = visible / "workspaces" / "mine"
    run = _run(cow, mine, "cat ../other/secret; ls ..; echo ok > mine.txt; pwd")
    assert "OTHER SESSION" not in _out(run) and "other" not in _out(run).split()
    assert _out(run).splitlines()[-1] == str(mine)
    assert _paths(run.effect) == {"mine.txt": "file"}


def test_a_held_effect_is_named_by_its_digest_only(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="not an effect digest"):
        load_held_effect(tmp_path, "../../etc")


def test_locking_the_workspace_root_does_not_stop_the_effect(ws: Path, cow: list[CowRun]) -> None:
    """Issue 12: `chmod 555 .` after writing once made the guard fail open."""
    command = (
        "python3 -c \"open('Dockerfile','w').write('FROM x'); "
        "open('.env.production','w').write('K=1')\"; mkdir -p ro/sub; "
        "echo f > ro/sub/f; chmod 500 ro/sub ro; chmod 555 ."
    )
    run = _run(cow, ws, command)
    assert {"Dockerfile", ".env.production", "ro/sub/f"} <= set(_paths(run.effect))
    _apply_all(ws, run.effect)
    assert (ws / "ro/sub/f").read_text() == "f\n"
    assert (ws / "ro").stat().st_mode & 0o777 == 0o755  # directories are always 0755
    assert ws.stat().st_mode & 0o777 == 0o755
    os.chmod(ws / "ro" / "sub", 0o700)
    os.chmod(ws / "ro", 0o700)
