"""Every command in README.md and docs/getting-started.md works as written (issue 33): on a
fresh clone, with `bin/agentweb up` running as `make run` starts it, each `sh` block of a
file runs in order in one bash (so a token made in one block serves the next), and every
command exits 0. Blocks marked `console`, `text` or `json` are illustrations, not run.

The clone's venv does not `pip install` (minutes): its site-packages holds a .pth naming
the clone first, then the main .venv's site-packages, which is only read."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.test_up import assert_all_gone, descendants, free_port

ROOT = Path(__file__).resolve().parents[2]
RUNNABLE = re.compile(r"^```sh\n(.*?)^```$", re.MULTILINE | re.DOTALL)
DOCUMENTED = "127.0.0.1:8000"  # the address the docs print, replaced by the test's port
PAGES = ("README.md", "docs/getting-started.md")


def users_environment() -> dict[str, str]:
    """The environment of a shell a person opens: none of the test run's own settings."""
    ours = ("AGENTWEB_", "DJANGO_", "REDIS_URL", "DATABASE_URL", "PROMETHEUS_MULTIPROC_DIR")
    return {key: value for key, value in os.environ.items() if not key.startswith(ours)}


def borrowed_venv(clone: Path) -> None:
    """`.venv` for the clone, its packages those of the running interpreter's venv."""
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(clone / ".venv")], check=True)
    python = clone / ".venv" / "bin" / "python"
    own = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    main = sysconfig.get_paths()["purelib"]
    (Path(own) / "agentweb-docs-test.pth").write_text(f"{clone}\n{main}\n")
    # search_codebase runs the rg the ripgrep wheel puts next to the interpreter.
    (clone / ".venv" / "bin" / "rg").symlink_to(Path(sys.executable).parent / "rg")


class Stack:
    """`bin/agentweb up` in the clone on a free port, its output in a file."""

    def __init__(self, clone: Path) -> None:
        self.port = free_port()
        self.log = clone / "up.log"
        command = ["bin/agentweb", "up", "--port", str(self.port), "--concurrency", "1"]
        env = users_environment() | {"AGENTWEB_DEMO": "0"}  # the README runs the demo itself
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                command, cwd=clone, env=env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_running(self, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while "is running at" not in self.output():
            assert self.process.poll() is None, self.output()
            assert time.monotonic() < deadline, self.output()
            time.sleep(0.2)


@pytest.fixture(scope="module")
def running_clone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Stack]]:
    """A fresh clone of this repository with its stack up, as after `make run`."""
    clone = tmp_path_factory.mktemp("docs") / "agentweb"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    borrowed_venv(clone)
    stack = Stack(clone)
    try:
        stack.wait_running()
        yield clone, stack
    finally:
        pids = descendants(stack.process.pid)
        stack.process.send_signal(signal.SIGINT)  # Ctrl-C
        assert_all_gone(stack, pids, clone / "var" / "redis.sock")  # type: ignore[arg-type]
        shutil.rmtree(clone.parent, ignore_errors=True)


def script(page: str, port: int) -> str:
    blocks = RUNNABLE.findall((ROOT / page).read_text())
    assert blocks, f"{page} has no sh block"
    body = "".join(blocks).replace(DOCUMENTED, f"127.0.0.1:{port}")
    return "set -euxo pipefail\n" + body


def start_page(page: str, clone: Path, port: int) -> tuple[subprocess.Popen[bytes], Path]:
    """The page's commands, as a person pastes them into a shell in the clone; what they
    print (each command traced first) goes to a file: two pipes read in turn could fill."""
    log = clone / f"{Path(page).stem}.log"
    with log.open("wb") as output:
        run = subprocess.Popen(
            ["bash", "-c", script(page, port)], cwd=clone, env=users_environment(),
            stdout=output, stderr=subprocess.STDOUT,
        )  # fmt: skip
    return run, log


@pytest.mark.timeout(420)
def test_every_command_of_the_readme_and_getting_started_exits_0(
    running_clone: tuple[Path, Stack],
) -> None:
    """The two pages run side by side (their commands are mostly Django starting up)."""
    clone, stack = running_clone
    runs = {page: start_page(page, clone, stack.port) for page in PAGES}
    for page, (run, log) in runs.items():
        run.wait(timeout=300)
        trace, server = log.read_text(errors="replace")[-3000:], stack.output()[-3000:]
        assert run.returncode == 0, f"{page}: the last command traced failed\n{trace}\n{server}"


def test_bin_agentweb_without_a_venv_says_to_run_make_run(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    shutil.copy(ROOT / "bin" / "agentweb", tmp_path / "bin" / "agentweb")
    ran = subprocess.run([tmp_path / "bin" / "agentweb", "help"], capture_output=True, text=True)
    assert ran.returncode == 1
    assert "run 'make run'" in ran.stderr and "Traceback" not in ran.stderr
