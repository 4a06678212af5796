"""Helpers shared by the unit and integration suites: git in a workspace, a Celery worker.

Plain functions and classes only, importable before Django is set up."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def git(workspace: str | Path, *args: str) -> str:
    """Run git in `workspace` and return its output; a failing git fails the test."""
    result = subprocess.run(
        ["git", "-C", str(workspace), *args], check=True, capture_output=True, text=True
    )
    return result.stdout


class Worker:
    """A real `celery worker` subprocess on the test database and Redis."""

    def __init__(self, env: dict[str, str], queues: str, log: Path, concurrency: int = 4) -> None:
        self.env, self.queues, self.log, self.concurrency = env, queues, log, concurrency
        self.process: Any = None

    def start(self) -> None:
        command = [
            sys.executable, "-m", "celery", "-A", "agentweb", "worker",
            "--pool", "threads", "--concurrency", str(self.concurrency), "--queues", self.queues,
            "--loglevel", "INFO", "--without-heartbeat", "--without-mingle", "--without-gossip",
        ]  # fmt: skip
        handle = self.log.open("ab")
        env = {**self.env, "AGENTWEB_LIBRARY_LOG_LEVEL": "INFO"}  # Celery's line per task:
        # how the tests know the worker is ready and idle
        self.process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=handle, stderr=handle, start_new_session=True
        )
        self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 120  # a machine under load takes a minute to start one
        while b"ready." not in self.log.read_bytes():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("celery worker did not start:\n" + self.log.read_text()[-3000:])
            time.sleep(0.1)
        self.log.write_bytes(b"")

    def wait_idle(self, timeout: float = 60) -> None:
        """Return once nothing is left for this worker: its queues in Redis are empty and
        every task it received has ended (succeeded, raised, retried) — twice in a row, a
        poll apart. What a task still in flight would do has then been done."""
        import redis

        client = redis.Redis.from_url(self.env["REDIS_URL"])
        deadline = time.monotonic() + timeout
        calm = 0
        try:
            while calm < 2:
                queued = sum(client.llen(queue) for queue in self.queues.split(","))
                calm = calm + 1 if queued == 0 and not self.running() else 0
                assert time.monotonic() < deadline, f"worker busy: {self.running()}"
                time.sleep(0.05)
        finally:
            client.close()

    def running(self) -> set[str]:
        """The ids of the tasks this worker received and has not ended."""
        text = self.log.read_text(errors="replace")
        received = set(re.findall(r"\[([0-9a-f-]{36})\] received", text))
        ended = set(re.findall(r"\[([0-9a-f-]{36})\] (?:succeeded|raised|retry|failed)", text))
        return received - ended

    def kill(self) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()


def processes_running(text: str) -> bool:
    """Whether any process on this machine has `text` in its command line."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if text.encode() in cmdline.read_bytes().replace(b"\0", b" "):
                return True
        except OSError:
            continue
    return False


def wait_gone(text: str, timeout: float = 30) -> None:
    """Until no process has `text` in its command line (polled every 50 ms): a command
    whose line holds `text` can then do nothing more."""
    deadline = time.monotonic() + timeout
    while processes_running(text):
        assert time.monotonic() < deadline, f"a process running {text!r} is still alive"
        time.sleep(0.05)


def files_holding(workspace: Path, text: str) -> list[str]:
    """Every file outside .git whose bytes contain `text`."""
    found = []
    for path in workspace.rglob("*"):
        if ".git" in path.relative_to(workspace).parts or not path.is_file():
            continue
        if text.encode() in path.read_bytes():
            found.append(path.relative_to(workspace).as_posix())
    return sorted(found)
