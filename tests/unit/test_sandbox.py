"""The bubblewrap runner: what a command may write, read and reach."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from tests.unit.conftest_tools import call, git, make_ctx, make_workspace, requires_bwrap, snapshot
from tools_app.tools.base import ToolContext
from tools_app.tools.sandbox import (
    SandboxOptions,
    build_command,
    matches_protected,
    read_only_paths,
)
from tools_app.tools.shell import EROFS_NOTE

# --- the protected-path matcher (pure) -------------------------------------------------


@pytest.mark.parametrize(
    ("path", "patterns", "expected"),
    [
        (".env", [".env"], True),
        ("sub/.env", [".env"], True),
        (".envrc", [".env"], False),
        (".env.local", [".env*"], True),
        ("sub/.env.local", [".env*"], True),
        (".github/workflows/ci.yml", [".github/**"], True),
        ("x/.github/workflows/ci.yml", [".github/**"], False),
        (".github", [".github/"], True),
        ("config/prod.yml", ["/config/prod.yml"], True),
        ("a/config/prod.yml", ["config/prod.yml"], False),
        ("secrets/a/b.txt", ["secrets"], True),
        ("deep/x/key.pem", ["*.pem"], True),
        ("src/a.py", ["**/a.py"], True),
        ("package.json", ["package.json"], True),
        ("package.json.bak", ["package.json"], False),
        ("a/b.txt", [], False),
        ("a/b.txt", ["", "# comment"], False),
    ],
)
def test_matches_protected(path: str, patterns: list[str], expected: bool) -> None:
    assert matches_protected(path, patterns) is expected


def test_read_only_paths_finds_every_git_dir_and_protected_file(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    for rel in (".git/config", "sub/.git/config", "node_modules/x/.git/config", "a/.env"):
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text("x")
    (ws / ".envrc").write_text("x")
    (ws / "dangling.env").symlink_to(ws / "missing")
    found = read_only_paths(ws, (".env", "*.env"))
    root = Path(os.path.realpath(ws))
    assert found == [root / ".git", root / "a" / ".env", root / "sub" / ".git"]


def test_build_command_shape(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    (ws / ".git").mkdir()
    root = os.path.realpath(ws)
    cmd = build_command(ws, ["bash", "-c", "true"], SandboxOptions())
    joined = " ".join(cmd)
    assert "--ro-bind / /" in joined and "--tmpfs /tmp" in joined
    assert f"--bind {root} {root}" in joined and f"--ro-bind {root}/.git {root}/.git" in joined
    assert "--unshare-all" in cmd and "--share-net" not in cmd
    assert cmd[-4:] == ["--", "bash", "-c", "true"]
    approved = build_command(ws, ["true"], SandboxOptions(approved=True))
    assert "--share-net" in approved and f"{root}/.git" not in " ".join(approved)
    assert "--share-net" in build_command(ws, ["true"], SandboxOptions(network=True))


# --- real commands under bwrap ---------------------------------------------------------


def _repo(tmp_path: Path) -> Path:
    ws = make_workspace(tmp_path)
    git(ws, "init", "-q")
    (ws / ".env").write_text("SECRET=1\n")
    (ws / "package.json").write_text("{}\n")
    return ws


def _ctx(ws: Path, **options: bool) -> ToolContext:
    return make_ctx(ws, protected_paths=(".env", "package.json"), **options)


@pytest.mark.sandbox
@requires_bwrap
def test_a_protected_file_cannot_be_written(tmp_path: Path) -> None:
    ws = _repo(tmp_path)
    before = snapshot(ws / ".env")
    out = call(_ctx(ws), "run_command", {"command": "echo pwned > .env"})
    assert out.startswith("exit code: 1") and "Read-only file system" in out
    assert out.endswith(EROFS_NOTE)
    assert snapshot(ws / ".env") == before


@pytest.mark.sandbox
@requires_bwrap
def test_a_protected_file_cannot_be_removed_or_renamed(tmp_path: Path) -> None:
    ws = _repo(tmp_path)
    before = snapshot(ws / ".env")
    call(_ctx(ws), "run_command", {"command": "rm -f .env; mv .env x"})
    assert snapshot(ws / ".env") == before


@pytest.mark.sandbox
@requires_bwrap
def test_git_config_cannot_be_written(tmp_path: Path) -> None:
    ws = _repo(tmp_path)
    before = snapshot(ws / ".git" / "config")
    command = "echo '[core]' >> .git/config; echo x > .git/hooks/pre-commit"
    out = call(_ctx(ws), "run_command", {"command": command})
    assert "Read-only file system" in out and EROFS_NOTE in out
    assert snapshot(ws / ".git" / "config") == before
    assert not (ws / ".git" / "hooks" / "pre-commit").exists()


@pytest.mark.sandbox
@requires_bwrap
def test_the_workspace_is_writable(tmp_path: Path) -> None:
    ws = _repo(tmp_path)
    out = call(_ctx(ws), "run_command", {"command": "mkdir -p src && echo ok > src/a.txt"})
    assert out == "exit code: 0"
    assert (ws / "src" / "a.txt").read_text() == "ok\n"


@pytest.mark.sandbox
@requires_bwrap
def test_tmp_is_private(tmp_path: Path) -> None:
    ws = _repo(tmp_path)
    name = f"agentweb-private-{os.getpid()}"
    out = call(_ctx(ws), "run_command", {"command": f"echo x > /tmp/{name} && ls /tmp"})
    assert out.startswith("exit code: 0")
    assert not Path("/tmp", name).exists()


@pytest.mark.sandbox
@requires_bwrap
def test_the_rest_of_the_host_is_read_only(tmp_path: Path) -> None:
    ws = _repo(tmp_path)
    outside = tmp_path / "ws-evil" / "secret.txt"
    before = snapshot(outside)
    out = call(_ctx(ws), "run_command", {"command": f"echo x >> {outside}; touch /usr/x"})
    assert "Read-only file system" in out or "No such file" in out
    assert snapshot(outside) == before


@pytest.mark.sandbox
@requires_bwrap
def test_the_workers_home_is_hidden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY\n")
    monkeypatch.setenv("HOME", str(home))
    ws = _repo(tmp_path)
    out = call(_ctx(ws), "run_command", {"command": f"cat {home}/.ssh/id_rsa"})
    assert "PRIVATE KEY" not in out and out.startswith("exit code: 1")


@pytest.mark.sandbox
@requires_bwrap
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
@requires_bwrap
def test_network_is_off_by_default_and_on_when_approved(tmp_path: Path) -> None:
    ws = _repo(tmp_path)
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        denied = call(_ctx(ws), "run_command", {"command": _connect_command(port)})
        assert not denied.startswith("exit code: 0") and "up" not in denied.splitlines()
        allowed = call(_ctx(ws, approved=True), "run_command", {"command": _connect_command(port)})
        assert allowed == "exit code: 0\nup"
        net = call(_ctx(ws, network=True), "run_command", {"command": _connect_command(port)})
        assert net == "exit code: 0\nup"


@pytest.mark.sandbox
@requires_bwrap
def test_approved_commands_may_write_protected_files_and_git(tmp_path: Path) -> None:
    ws = _repo(tmp_path)
    command = "echo '{\"a\": 1}' > package.json && git config user.name Approved"
    out = call(_ctx(ws, approved=True), "run_command", {"command": command})
    assert out == "exit code: 0"
    assert (ws / "package.json").read_text() == '{"a": 1}\n'
    assert "Approved" in (ws / ".git" / "config").read_text()


@pytest.mark.sandbox
@requires_bwrap
def test_no_erofs_note_when_the_command_succeeds_or_was_approved(tmp_path: Path) -> None:
    ws = _repo(tmp_path)
    ok = call(_ctx(ws), "run_command", {"command": "echo x > .env; true"})
    assert ok.startswith("exit code: 0") and EROFS_NOTE not in ok


def _guarded_ctx(ws: Path) -> ToolContext:
    return make_ctx(ws, protected_paths=(".env", ".github/**", "package.json"))


def test_a_command_cannot_create_a_protected_file_that_did_not_exist(tmp_path: Path) -> None:
    ws = _repo(tmp_path)
    command = "mkdir -p .github/workflows && echo 'on: push' > .github/workflows/x.yml"
    out = call(_guarded_ctx(ws), "run_command", {"command": command})
    assert not (ws / ".github" / "workflows" / "x.yml").exists()
    assert "removed .github/workflows/x.yml" in out
    assert "write_file" in out


def test_a_protected_file_swapped_by_renaming_its_parent_is_put_back(tmp_path: Path) -> None:
    """With or without bubblewrap: bwrap binds sub/.env read-only, but sub can be renamed."""
    ws = _repo(tmp_path)
    (ws / "sub").mkdir()
    (ws / "sub" / ".env").write_text("SECRET=1\n")
    command = "mv sub other && mkdir sub && echo SECRET=evil > sub/.env"
    out = call(_guarded_ctx(ws), "run_command", {"command": command})
    assert (ws / "sub" / ".env").read_text() == "SECRET=1\n"
    assert "restored sub/.env" in out


def test_an_approved_command_may_create_protected_files(tmp_path: Path) -> None:
    ws = _repo(tmp_path)
    ctx = make_ctx(ws, protected_paths=(".env",), approved=True)
    call(ctx, "run_command", {"command": "echo A=1 > .env"})
    assert (ws / ".env").read_text() == "A=1\n"
