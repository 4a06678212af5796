"""Bounds on what one command may change (issue 21, finding 5), tried as an attacker would
through the real sandbox, then checked on disk: the workspace, the held-effects store
under AGENTWEB_VAR/effects, leftover scratch dirs in /tmp, and the worker's memory."""

from __future__ import annotations

import os
import resource
import secrets
import stat
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from tests.unit.helpers import requires_cow
from tools_app import services
from tools_app.core.tools import effect_reader
from tools_app.models import AgentSession, Policy, ToolCall

pytestmark = [pytest.mark.django_db, requires_cow]


@pytest.fixture
def store(tmp_path: Path, settings: Any) -> Path:
    """The held-effects store, private to the test."""
    settings.AGENTWEB_VAR = tmp_path / "var"
    return tmp_path / "var" / "effects"


@pytest.fixture
def session(workspace: Path, store: Path) -> AgentSession:
    return AgentSession.objects.create(
        task="build it",
        repo=str(workspace),
        workspace=str(workspace),
        status=AgentSession.Status.RUNNING,
        policy=Policy.objects.get(name="default"),
    )


def run_script(session: AgentSession, body: str) -> ToolCall:
    """A script the analysis cannot see into: only its effect tells what it did."""
    Path(session.workspace, "gen.sh").write_text(body)
    return services.tool_call_run_in_process(
        session=session, tool="run_command", args={"command": "bash gen.sh"}
    )


def stored_files(store: Path) -> list[Path]:
    return [p for p in store.rglob("*") if p.is_file()] if store.exists() else []


def scratch_dirs_holding(name: str) -> list[Path]:
    """Scratch dirs (of any test running on this host) whose upper layer holds `name`."""
    return list(Path(tempfile.gettempdir()).glob(f"agentweb-cow-*/upper/{name}"))


def peak_rss_kb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def test_a_sparse_file_past_the_size_bound_is_refused_without_reading_or_keeping_it(
    session: AgentSession, workspace: Path, store: Path
) -> None:
    """The kernel lets a file grow one byte past the bound (RLIMIT_FSIZE); the effect
    reader then refuses the whole effect by its apparent size, reading nothing."""
    (workspace / ".gitignore").write_text("*.bin\n")  # ignored: it would count no lines
    name = f".env.{secrets.token_hex(4)}.bin"  # protected: it would be held
    before = peak_rss_kb()
    size = effect_reader.MAX_FILE_BYTES + 1
    ran = run_script(session, f"truncate -s {size} {name}; echo hi > notes.txt")
    assert f"over the limit of {effect_reader.MAX_FILE_BYTES} per file" in ran.result
    assert "nothing the command changed was applied" in ran.result
    assert not (workspace / name).exists()
    assert not (workspace / "notes.txt").exists()
    assert stored_files(store) == []
    assert peak_rss_kb() - before < 100 * 1024
    assert scratch_dirs_holding(name) == []


@pytest.mark.parametrize("size", ["1G", "100G"])
def test_a_huge_file_is_never_made(
    session: AgentSession, workspace: Path, store: Path, size: str
) -> None:
    """`truncate -s 1G` is stopped by the kernel (SIGXFSZ): no huge file anywhere."""
    before = peak_rss_kb()
    ran = run_script(session, f"truncate -s {size} data.bin; ls -s data.bin")
    assert "File size limit exceeded" in ran.result
    assert not (workspace / "data.bin").exists() or (workspace / "data.bin").stat().st_size == 0
    assert all(path.stat().st_size == 0 for path in stored_files(store) if path.name == "data.bin")
    assert peak_rss_kb() - before < 100 * 1024
    assert scratch_dirs_holding("data.bin") == []


def test_a_large_file_under_the_size_bound_is_counted_streaming(
    session: AgentSession, workspace: Path, store: Path
) -> None:
    before = peak_rss_kb()
    ran = run_script(session, "truncate -s 60M data.txt")
    assert "max_diff_lines" in ran.result
    assert not (workspace / "data.txt").exists()
    assert stored_files(store) == []
    assert peak_rss_kb() - before < 50 * 1024
    session.refresh_from_db()
    assert session.total_changed_lines == 0


DEEP = {
    # one mkdir -p: 1,100 levels, a 2,200-byte path
    "mkdir -p": "mkdir -p {top}/$(printf 'd/%.0s' $(seq 1100)) && echo deep > {top}/d/f",
    # level by level with 50-byte names: 55,000 bytes deep, far past PATH_MAX
    "a loop": (
        'cd {top} 2>/dev/null || mkdir {top} && cd {top} && python3 -c "import os\n'
        "for _ in range(1100): os.mkdir('x' * 50); os.chdir('x' * 50)\n"
        "open('bottom.txt', 'w').write('deep')\""
    ),
}


@pytest.mark.parametrize("how", DEEP)
def test_a_directory_1100_levels_deep_is_refused_and_its_scratch_removed(
    session: AgentSession, workspace: Path, how: str
) -> None:
    top = f"deep-{secrets.token_hex(4)}"
    ran = run_script(session, DEEP[how].format(top=top) + "; echo exit=$?")
    assert "exit=0" in ran.result  # the command itself got to the bottom
    assert "nothing the command changed was applied" in ran.result
    assert "longer than" in ran.result or "deeper than" in ran.result
    assert not (workspace / top).exists()
    assert scratch_dirs_holding(top) == []


def test_a_command_creating_tens_of_thousands_of_files_is_refused_quickly(
    session: AgentSession, workspace: Path
) -> None:
    top = f"many-{secrets.token_hex(4)}"
    started = time.monotonic()
    ran = run_script(session, f"mkdir {top} && cd {top} && seq 1 25000 | xargs touch")
    assert time.monotonic() - started < 30
    assert f"more than {effect_reader.MAX_ENTRIES} paths" in ran.result
    assert not (workspace / top).exists()
    assert scratch_dirs_holding(top) == []


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_only_the_executable_bit_of_a_file_follows_the_command(
    session: AgentSession, workspace: Path
) -> None:
    (workspace / "Makefile").write_text("all:\n")
    (workspace / "run.sh").write_text("echo run\n")
    (workspace / "Makefile").chmod(0o644)
    (workspace / "run.sh").chmod(0o644)
    ran = run_script(
        session,
        "chmod 000 Makefile; chmod 777 run.sh src; mkdir open closed; echo x > open/f; "
        "echo y > closed/g; echo z > private; chmod 777 open open/f; chmod 000 private; "
        "chmod 000 closed/g closed",
    )
    assert ran.status == "succeeded", ran.result
    assert "Makefile" not in ran.result  # a mode change other than x is no change
    assert mode(workspace / "Makefile") == 0o644
    assert mode(workspace / "run.sh") == 0o755
    assert mode(workspace / "src") == 0o755
    assert (mode(workspace / "open"), mode(workspace / "open" / "f")) == (0o755, 0o755)
    assert (mode(workspace / "closed"), mode(workspace / "closed" / "g")) == (0o755, 0o644)
    assert mode(workspace / "private") == 0o644
    assert (workspace / "closed" / "g").read_text() == "y\n"


def test_a_private_file_stays_private_when_a_command_changes_it(
    session: AgentSession, workspace: Path
) -> None:
    (workspace / "notes.txt").write_text("a\n")
    (workspace / "notes.txt").chmod(0o600)
    run_script(session, "echo b >> notes.txt; chmod 666 notes.txt")
    assert (workspace / "notes.txt").read_text() == "a\nb\n"
    assert mode(workspace / "notes.txt") == 0o600


def test_a_denied_effect_leaves_nothing_in_the_store(
    session: AgentSession, workspace: Path, store: Path, reviewer: User
) -> None:
    run_script(session, "mkdir -p .github/a/b/c && echo on: push > .github/a/b/c/ci.yml")
    [held] = session.tool_calls.filter(tool="apply_command_effect")
    assert len(stored_files(store)) == 2  # the manifest and the one blob
    services.tool_call_decide(call=held, user=reviewer, scope="session", decision="deny")
    assert stored_files(store) == []
    assert list(store.iterdir()) == []
    assert not (workspace / ".github").exists()
