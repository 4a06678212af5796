"""`manage.py up` brings the whole stack up, says so honestly and quietly, and whatever
ends it (Ctrl-C, SIGTERM, SIGKILL, its terminal closing) takes every process it started
down within seconds, leaving the port and the Redis socket free for the next `up`."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pty
import re
import select
import signal
import socket
import sqlite3
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
GONE_WITHIN = 15  # seconds: the supervisor's grace (8 s) and a margin


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def port_free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


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


def survivors(pids: list[int]) -> list[str]:
    """The processes among `pids` still running (a zombie has no command line)."""
    return [line for pid in pids if (line := command_line(pid))]


def up_env(var: Path, **extra: str) -> dict[str, str]:
    own = {"REDIS_URL", "DATABASE_URL", "DJANGO_SETTINGS_MODULE"}  # `up` as a user runs it
    env = {key: value for key, value in os.environ.items() if key not in own}
    return env | {"AGENTWEB_VAR": str(var), "DJANGO_DEBUG": "0"} | extra


class Up:
    """`manage.py up` on `port`, its output read line by line as it comes (from pipes, or
    from a pty that is its controlling terminal); `at_running` records whether the port
    answered at the moment the line saying it runs was read."""

    def __init__(self, env: dict[str, str], port: int, terminal: bool = False) -> None:
        self.port = port
        self.lines: list[str] = []
        self.errors: list[str] = []
        self.at_running: bool | None = None
        self.hung_up = threading.Event()
        command = [sys.executable, "manage.py", "up", "--port", str(port), "--concurrency", "1"]
        if terminal:
            self.master, slave = pty.openpty()
            self.process = subprocess.Popen(
                command, cwd=ROOT, env=env, stdin=slave, stdout=slave, stderr=slave,
                start_new_session=True, preexec_fn=_take_terminal,
            )  # fmt: skip
            os.close(slave)
            self.reader = threading.Thread(target=self._read_terminal, daemon=True)
            self.reader.start()
            return
        else:
            self.process = subprocess.Popen(
                command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                start_new_session=True,
            )  # fmt: skip
            assert self.process.stdout and self.process.stderr
            streams = [(self.process.stdout, self.lines), (self.process.stderr, self.errors)]
        for stream, into in streams:
            threading.Thread(target=self._read, args=(stream, into), daemon=True).start()

    def _read(self, stream: object, into: list[str]) -> None:
        with contextlib.suppress(OSError, ValueError):
            for raw in stream:  # type: ignore[attr-defined]
                self._add(raw.decode(errors="replace").rstrip("\r\n"), into)

    def _add(self, line: str, into: list[str]) -> None:
        if "is running at" in line and self.at_running is None:
            self.at_running = answers(self.port)
        into.append(line)

    def _read_terminal(self) -> None:
        """Never blocked in read(): a blocked read would keep the master open past close."""
        pending = b""
        while not self.hung_up.is_set():
            if not select.select([self.master], [], [], 0.1)[0]:
                continue
            try:
                pending += os.read(self.master, 65536)
            except OSError:
                return
            *complete, pending = pending.split(b"\n")
            for raw in complete:
                self._add(raw.decode(errors="replace").rstrip("\r"), self.lines)

    def hang_up(self) -> None:
        """Close the terminal, as closing its window does: the kernel sends SIGHUP."""
        self.hung_up.set()
        self.reader.join()
        os.close(self.master)

    def wait_running(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while not any("is running at" in line for line in self.lines):
            assert self.process.poll() is None, self.output()
            assert time.monotonic() < deadline, self.output()
            time.sleep(0.1)

    def started(self) -> list[int]:
        return descendants(self.process.pid)

    def output(self) -> str:
        return "\n".join([*self.lines, "--- stderr ---", *self.errors])

    def kill(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.process.pid, signum)


def _take_terminal() -> None:
    """In the child, after setsid: the pty on stdin becomes its controlling terminal, so
    closing the master hangs it up (SIGHUP), as closing a terminal window does."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def assert_all_gone(up: Up, pids: list[int], socket_path: Path) -> None:
    deadline = time.monotonic() + GONE_WITHIN
    while time.monotonic() < deadline and (survivors(pids) or up.process.poll() is None):
        time.sleep(0.1)
    assert survivors(pids) == [], up.output()
    assert up.process.poll() is not None
    assert port_free(up.port)
    assert not socket_path.exists()


@pytest.mark.timeout(240)
def test_the_first_run_serves_everything_says_so_quietly_and_ctrl_c_stops_it(
    tmp_path: Path,
) -> None:
    var = tmp_path / "var"
    up = Up(up_env(var), free_port())
    try:
        up.wait_running()
        assert up.at_running is True  # "running at" only once the port answers
        base = f"http://127.0.0.1:{up.port}"
        login = httpx.get(f"{base}/login/", timeout=10)
        assert login.status_code == 200
        assert "Secure" not in login.headers.get("set-cookie", "")
        assert httpx.get(f"{base}/static/admin/css/base.css").status_code == 200
        assert httpx.get(f"{base}/api/sessions").status_code == 401
        workers = {line for pid in up.started() if "celery" in (line := command_line(pid))}
        tool_worker = [line for line in workers if "--beat" in line]
        assert tool_worker and ".notify" not in tool_worker[0]  # its slots: tool calls only
        assert any("--queues agentweb.notify " in line for line in workers)  # deliveries'
        assert demo_call_waits(var / "agentweb.sqlite3")
        time.sleep(10)  # the sweep runs every 5 s: none of it shows
        assert_quiet_start(up, base)
        assert_docs_offline(base, password(up.lines))
    finally:
        pids = up.started()
        up.kill(signal.SIGINT)
    assert_all_gone(up, pids, var / "redis.sock")


def assert_quiet_start(up: Up, base: str) -> None:
    """Up to the password block under 40 lines, the block last; no banner, no warning."""
    lines, everything = up.lines, "\n".join(up.lines + up.errors)
    block = [n for n, line in enumerate(lines) if line.startswith("=" * 20)]
    assert len(block) == 2 and block[1] == len(lines) - 1, up.output()
    assert block[0] < 40
    assert "python manage.py changepassword admin" in "\n".join(lines[block[0] :])
    assert f"agentweb is running at {base}/" in everything
    assert "Demo: session 1" in everything
    for noise in ("[tasks]", "-------------- ", "superuser privileges", "SecurityWarning",
                  "sweep", "Starting server", "HTTP/2", "ready."):  # fmt: skip
        assert noise not in everything, up.output()


def password(lines: list[str]) -> str:
    found = [line.split()[-1] for line in lines if line.strip().startswith("password ")]
    assert len(found) == 1
    return found[0]


def assert_docs_offline(base: str, secret: str) -> None:
    """/api/docs (behind login) loads Swagger UI from this server only, and it is served."""
    with httpx.Client(base_url=base, timeout=20) as client:
        client.get("/login/")
        client.post(
            "/login/",
            data={"username": "admin", "password": secret,
                  "csrfmiddlewaretoken": client.cookies["csrftoken"]},
        )  # fmt: skip
        docs = client.get("/api/docs")
        assert docs.status_code == 200 and "swagger-ui" in docs.text
        assets = re.findall(r'(?:src|href)="([^"]+)"', docs.text)
        assert assets and all(asset.startswith("/static/") for asset in assets), assets
        kinds = {asset.rsplit(".", 1)[-1] for asset in assets}
        assert {"js", "css"} <= kinds
        for asset in assets:
            served = client.get(asset)
            assert served.status_code == 200, asset
            kind = {"js": "javascript", "css": "css"}.get(asset.rsplit(".", 1)[-1], "")
            assert kind in served.headers["content-type"], asset


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, int]]:
    """One AGENTWEB_VAR, migrated, and one port that every `up` of these tests takes in
    turn: each finds the port and the socket its predecessor left free."""
    var = tmp_path_factory.mktemp("up") / "var"
    env = up_env(var, DJANGO_SETTINGS_MODULE="agentweb.settings")
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True
    )
    yield var, free_port()


def killed(signum: int) -> str:
    return signal.Signals(signum).name


# SIGINT (Ctrl-C) ends the first-run test above, with the same checks.
@pytest.mark.timeout(120)
@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP], ids=killed)
def test_nothing_up_started_outlives_it(migrated: tuple[Path, int], signum: int) -> None:
    """SIGHUP is its terminal closing: `up` runs on a pty whose master is closed. The
    SIGTERM run also logs in JSON (`assert_json_log_lines`): one stack started, not two."""
    var, port = migrated
    terminal = signum == signal.SIGHUP
    json_logs = signum == signal.SIGTERM
    webs = 2 if signum == signal.SIGKILL else 1  # AGENTWEB_WEB_PROCESSES: one port, two
    env = up_env(var, AGENTWEB_DEMO="0", AGENTWEB_WEB_PROCESSES=str(webs))
    up = Up(env | (JSON_LOGS if json_logs else {}), port, terminal)
    try:
        up.wait_running()
        deadline = time.monotonic() + 60  # the tool worker forks its pool and beat: wait
        while len(pids := up.started()) < 6 + webs and time.monotonic() < deadline:
            time.sleep(0.2)
        lines = [command_line(pid) for pid in pids]
        for role in ("redis-server", "--beat", "notify@", "daphne", "tools_app.core.supervision"):
            assert any(role in line for line in lines), (role, lines)
        assert len(pids) >= 6 + webs, lines  # the tool worker's pool process and its beat too
        daphnes = [pid for pid in pids if "daphne" in command_line(pid)]
        assert len(daphnes) == webs, lines
        assert_webs_share_the_port(up, daphnes)
        if json_logs:
            assert_json_log_lines(up)
    finally:
        pids = up.started()
        if terminal:
            up.hang_up()
        else:
            up.kill(signum)
    assert_all_gone(up, pids, var / "redis.sock")


def assert_webs_share_the_port(up: Up, webs: list[int]) -> None:
    """Each daphne process holds some of 24 connections kept open to `up`'s one port."""
    with contextlib.ExitStack() as kept:
        clients = [kept.enter_context(httpx.Client(timeout=10)) for _ in range(24)]
        for client in clients:
            assert client.get(f"http://127.0.0.1:{up.port}/healthz").status_code == 200
        held = [len(established(pid, up.port)) for pid in webs]
    assert sum(held) == 24 and all(held), held


def established(pid: int, port: int) -> set[int]:
    """The inodes of the connections `pid` holds on its listening `port` (from /proc)."""
    own = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            if (target := os.readlink(fd)).startswith("socket:["):
                own.add(int(target[8:-1]))
    found = set()
    for table in ("tcp", "tcp6"):
        for row in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = row.split()
            local_port = int(fields[1].rsplit(":", 1)[1], 16)
            if local_port == port and fields[3] == "01" and int(fields[9]) in own:
                found.add(int(fields[9]))
    return found


# Every log line of daphne, the workers and the clock one JSON object; the libraries'
# INFO lines asked for, so that there is something to read.
JSON_LOGS = {
    "AGENTWEB_LOG_FORMAT": "json",
    "AGENTWEB_LOG_LEVEL": "DEBUG",
    "AGENTWEB_LIBRARY_LOG_LEVEL": "INFO",
}


def assert_json_log_lines(up: Up) -> None:
    """AGENTWEB_LOG_FORMAT=json: every line each process logged, up to a sweep, parses."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not _loggers(up) >= {"celery", "daphne", "agentweb"}:
        time.sleep(0.2)
    assert _loggers(up) >= {"celery", "daphne", "agentweb"}, up.output()
    entries = [json.loads(line) for line in list(up.errors) if line.strip()]
    assert all({"time", "level", "logger", "message"} <= entry.keys() for entry in entries)


def _loggers(up: Up) -> set[str]:
    entries = [json.loads(line) for line in list(up.errors) if line.strip()]
    return {entry["logger"].split(".")[0] for entry in entries}


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
