"""The copy-on-write runner seen through run_command: what a command may change, read
and reach. The effect handler of these tests applies everything outside `.git`."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from tests.unit.helpers import call, git, make_ctx, make_workspace, requires_cow, snapshot
from tools_app.core.tools.base import SandboxOptions, ToolContext
from tools_app.core.tools.overlay import build_cow_command, make_scratch
from tools_app.core.tools.shell import NO_HOSTS_NOTE

# --- the command line (pure) -----------------------------------------------------------


def test_the_command_line_mounts_an_overlay_then_drops_to_an_unprivileged_uid(
    tmp_path: Path,
) -> None:
    ws = make_workspace(tmp_path)
    root = os.path.realpath(ws)
    scratch = make_scratch(Path(root))
    try:
        cmd = build_cow_command(ws, ["bash", "-c", "true"], SandboxOptions(), scratch)
    finally:
        os.unlink(scratch / "lower")
        for name in ("upper", "work", "merged"):
            (scratch / name).rmdir()
        scratch.rmdir()
    joined = " ".join(cmd)
    assert cmd[1:6] == ["--user", "--map-root-user", "--mount", "--pid", "--fork"]
    assert "mount -t overlay" in joined and "--uid 65534 --gid 65534 --cap-drop ALL" in joined
    assert f"--bind {scratch}/merged {root}" in joined and "--tmpfs /tmp" in joined
    assert "--ro-bind / /" not in joined and "--share-net" not in cmd
    assert cmd[-4:] == ["--", "bash", "-c", "true"]
    approved = build_cow_command(ws, ["true"], SandboxOptions(approved=True), scratch)
    assert "--share-net" not in approved
    assert "--share-net" not in build_cow_command(
        ws, ["true"], SandboxOptions(network=True), scratch
    )


# --- real commands ---------------------------------------------------------------------


def _repo(tmp_path: Path) -> Path:
    ws = make_workspace(tmp_path)
    git(ws, "init", "-q")
    (ws / ".env").write_text("SECRET=1\n")
    (ws / "package.json").write_text("{}\n")
    return ws


def _ctx(ws: Path, **options: bool) -> ToolContext:
    return make_ctx(ws, protected_paths=(".env", "package.json"), **options)


@pytest.mark.sandbox
@requires_cow
def test_the_workspace_changes_only_through_the_effect(tmp_path: Path) -> None:
    ws = _repo(tmp_path)
    out = call(_ctx(ws), "run_command", {"command": "mkdir -p src && echo ok > src/a.txt"})
    assert out == "exit code: 0\napplied: created directory src; created src/a.txt (3 bytes)"
    assert (ws / "src" / "a.txt").read_text() == "ok\n"


@pytest.mark.sandbox
@requires_cow
def test_git_changes_are_never_applied_by_the_handler(tmp_path: Path) -> None:
    ws = _repo(tmp_path)
    before = snapshot(ws / ".git" / "config")
    command = "echo '[core]' >> .git/config; echo x > .git/hooks/pre-commit"
    out = call(_ctx(ws), "run_command", {"command": command})
    assert out == "exit code: 0"
    assert snapshot(ws / ".git" / "config") == before
    assert not (ws / ".git" / "hooks" / "pre-commit").exists()


@pytest.mark.sandbox
@requires_cow
def test_the_rest_of_the_host_is_not_even_visible(tmp_path: Path) -> None:
    ws = _repo(tmp_path)
    outside = tmp_path / "ws-evil" / "secret.txt"
    before = snapshot(outside)
    out = call(_ctx(ws), "run_command", {"command": f"cat {outside}; echo x >> {outside}"})
    assert "evil" not in out.splitlines() and "No such file" in out
    out = call(_ctx(ws), "run_command", {"command": "touch /usr/agentweb-x"})
    assert "Read-only file system" in out or "Permission denied" in out
    assert snapshot(outside) == before and not Path("/usr/agentweb-x").exists()


@pytest.mark.sandbox
@requires_cow
def test_tmp_is_private(tmp_path: Path) -> None:
    ws = _repo(tmp_path)
    name = f"agentweb-private-{os.getpid()}"
    out = call(_ctx(ws), "run_command", {"command": f"echo x > /tmp/{name} && ls /tmp"})
    assert out.startswith("exit code: 0")
    assert not Path("/tmp", name).exists()


@pytest.mark.sandbox
@requires_cow
def test_the_rest_of_the_host_is_read_only(tmp_path: Path) -> None:
    ws = _repo(tmp_path)
    outside = tmp_path / "ws-evil" / "secret.txt"
    before = snapshot(outside)
    out = call(_ctx(ws), "run_command", {"command": f"echo x >> {outside}; touch /usr/x"})
    assert "Read-only file system" in out or "No such file" in out
    assert snapshot(outside) == before


@pytest.mark.sandbox
@requires_cow
def test_the_workers_home_is_hidden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY\n")
    monkeypatch.setenv("HOME", str(home))
    ws = _repo(tmp_path)
    out = call(_ctx(ws), "run_command", {"command": f"cat {home}/.ssh/id_rsa"})
    assert "PRIVATE KEY" not in out and out.startswith("exit code: 1")


@pytest.mark.sandbox
@requires_cow
def test_agentwebs_runtime_data_is_hidden_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default AGENTWEB_VAR (the project's var/: database, Redis socket) is unreadable."""
    monkeypatch.delenv("AGENTWEB_VAR", raising=False)
    var = Path(__file__).resolve().parents[2] / "var"
    var.mkdir(exist_ok=True)
    marker = var / f"sandbox-test-{os.getpid()}"
    marker.write_text("DATABASE SECRET\n")
    try:
        out = call(_ctx(_repo(tmp_path)), "run_command", {"command": f"cat {marker}"})
    finally:
        marker.unlink()
    assert "DATABASE SECRET" not in out and out.startswith("exit code: 1")


def _connect_command(port: int) -> str:
    code = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3); print('up')"
    return f'python3 -c "{code}"'


@pytest.mark.sandbox
@requires_cow
def test_a_command_never_shares_the_workers_network(tmp_path: Path) -> None:
    """Approved or granted network, a command without a grant of hosts reaches nothing
    of the worker's network, and its output says so."""
    ws = _repo(tmp_path)
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        denied = call(_ctx(ws), "run_command", {"command": _connect_command(port)})
        assert not denied.startswith("exit code: 0") and "up" not in denied.splitlines()
        for meant in ({"approved": True}, {"network": True}):
            out = call(_ctx(ws, **meant), "run_command", {"command": _connect_command(port)})
            assert not out.startswith("exit code: 0") and "up" not in out.splitlines()
            assert out.endswith(NO_HOSTS_NOTE)
