"""`manage.py up` brings the whole stack up on 127.0.0.1 and Ctrl-C takes it all down."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def descendants(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(stat[1]) == pid:
            found.append(int(entry.name))
    return found + [grand for child in found for grand in descendants(child)]


def command_line(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def wait_for(url: str, process: subprocess.Popen[bytes], timeout: float = 90) -> httpx.Response:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, "manage.py up exited early"
        try:
            return httpx.get(url, timeout=2)
        except httpx.HTTPError:
            time.sleep(0.3)
    raise AssertionError(f"{url} never answered")


@pytest.mark.timeout(180)
def test_up_serves_everything_and_ctrl_c_stops_it(tmp_path: Path) -> None:
    port = free_port()
    own = {"REDIS_URL", "DATABASE_URL", "DJANGO_SETTINGS_MODULE"}  # `up` as a user runs it
    env = {key: value for key, value in os.environ.items() if key not in own}
    env.update(AGENTWEB_VAR=str(tmp_path / "var"), DJANGO_DEBUG="0")
    log = (tmp_path / "up.log").open("wb")
    up = subprocess.Popen(
        [sys.executable, "manage.py", "up", "--port", str(port), "--concurrency", "1"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        login = wait_for(f"http://127.0.0.1:{port}/login/", up)
        assert login.status_code == 200
        assert "Secure" not in login.headers.get("set-cookie", "")
        css = httpx.get(f"http://127.0.0.1:{port}/static/admin/css/base.css")
        assert css.status_code == 200
        api = httpx.get(f"http://127.0.0.1:{port}/api/sessions")
        assert api.status_code == 401
        children = descendants(up.pid)
        workers = {line for pid in children if "celery" in (line := command_line(pid))}
        tool_worker = [line for line in workers if "--beat" in line]
        assert tool_worker and ".notify" not in tool_worker[0]  # its slots: tool calls only
        assert any("--queues agentweb.notify " in line for line in workers)  # deliveries'
        output = (tmp_path / "up.log").read_text()
        assert "username 'admin', password '" in output
        assert f"http://127.0.0.1:{port}/" in output
        assert "Demo: session 1" in output
        assert demo_call_waits(tmp_path / "var" / "agentweb.sqlite3")
    finally:
        children = descendants(up.pid)
        up.send_signal(signal.SIGINT)
        up.wait(timeout=60)
    deadline = time.monotonic() + 10  # SIGINT reaches the children a moment after `up` exits
    while time.monotonic() < deadline and survivors(children):
        time.sleep(0.05)
    assert survivors(children) == []


def survivors(children: list[int]) -> list[int]:
    return [pid for pid in children if Path(f"/proc/{pid}").exists() and command_line(pid)]


def demo_call_waits(database: Path) -> str:
    """The demo's scripted agent gets as far as its first call that needs a person."""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        with contextlib.closing(sqlite3.connect(database, timeout=10)) as db:
            row = db.execute(
                "SELECT tool FROM tools_app_toolcall WHERE status = 'awaiting_approval'"
            ).fetchone()
        if row:
            return str(row[0])
        time.sleep(0.5)
    return ""
