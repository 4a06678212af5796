"""The stack bench_held_waits.py measures: a PostgreSQL database and a Redis number of
its own, one or more daphne processes on them, and (for several) a round-robin proxy
in front (`_round_robin.py`, or Debian's nginx as `deploy/nginx.conf` sets it up); plus
the client's one-connection-per-hook POST."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg
from bench_api import free_port

USERS = """
import json
from django.contrib.auth.models import Group, User
from tools_app import services
operator = User.objects.create_user("olga")
reviewer = User.objects.create_user("rita")
reviewer.groups.add(Group.objects.get_or_create(name="reviewers")[0])
print(json.dumps({
    "agent": services.api_token_create(user=operator, scope="agent"),
    "review": services.api_token_create(user=reviewer, scope="review"),
}))
"""
PREFIX = "benchheld"
HERE = Path(__file__).resolve().parent


class Database:
    """A PostgreSQL database and a Redis number of this run's own; the env that uses them."""

    def __init__(self, root: Path, tmp: Path, postgres: str, redis: str) -> None:
        self.root, self.postgres, self.redis = root, postgres, redis
        self.name = f"bench_held_waits_{os.getpid()}"
        self.env = _env(tmp / "var", f"{postgres}/{self.name}", redis)
        self.monitor: psycopg.Connection[Any] | None = None

    def create(self) -> dict[str, str]:
        """Migrated, with an operator and a reviewer; their agent and review tokens."""
        with psycopg.connect(f"{self.postgres}/postgres", autocommit=True) as pg:
            pg.execute(f'CREATE DATABASE "{self.name}"')
        redis_command(self.redis, "FLUSHDB")
        manage = [sys.executable, "manage.py"]
        subprocess.run([*manage, "migrate", "-v0"], cwd=self.root, env=self.env, check=True)
        shell = subprocess.run([*manage, "shell", "-c", USERS], cwd=self.root, env=self.env,
                               check=True, capture_output=True, text=True)  # fmt: skip
        self.sql("SELECT 1")  # the monitor's connection, opened before any load
        tokens: dict[str, str] = json.loads(shell.stdout.strip().splitlines()[-1])
        return tokens

    def sql(self, query: str) -> list[tuple[Any, ...]]:
        """One connection, opened before the load: PostgreSQL may have none left later."""
        if self.monitor is None:
            self.monitor = psycopg.connect(f"{self.postgres}/{self.name}", autocommit=True)
        return self.monitor.execute(query).fetchall()

    def connections(self) -> int:
        """PostgreSQL connections to this database other than this script's one."""
        rows = self.sql(
            "SELECT count(*) - 1 FROM pg_stat_activity WHERE datname = current_database()"
        )
        return int(rows[0][0])

    def awaiting(self) -> int:
        rows = self.sql(
            "SELECT count(*) FROM tools_app_toolcall WHERE status = 'awaiting_approval'"
        )
        return int(rows[0][0])

    def drop(self) -> None:
        if self.monitor is not None:
            self.monitor.close()
        with psycopg.connect(f"{self.postgres}/postgres", autocommit=True) as pg:
            pg.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
        redis_command(self.redis, "FLUSHDB")


class Web:
    """One daphne process on the database, its log in a file."""

    def __init__(
        self, root: Path, env: dict[str, str], log: Path, listener: socket.socket | None = None
    ) -> None:
        """`listener`: a listening socket for daphne to take (`--fd`) instead of binding."""
        self.root, self.env, self.log, self.listener = root, env, log, listener
        self.port = listener.getsockname()[1] if listener is not None else free_port()
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        where = ["-b", "127.0.0.1", "-p", str(self.port)]
        passed: tuple[int, ...] = ()
        if self.listener is not None:
            passed = (self.listener.fileno(),)
            where = ["--fd", str(passed[0])]
        command = [sys.executable, "-m", "daphne", *where, "agentweb.asgi:application"]
        self.process = _spawn(command, self.root, self.env, self.log, passed)
        wait_until_healthy(f"http://127.0.0.1:{self.port}", self.process, self.tail)

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""

    def status(self, field: str) -> int:
        """A /proc/PID/status figure (VmRSS in KiB, Threads)."""
        assert self.process is not None
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
        raise RuntimeError(f"no {field}")

    def rss_mib(self) -> float:
        return self.status("VmRSS") / 1024

    def cpu_seconds(self) -> float:
        """User + system CPU time of the process so far."""
        assert self.process is not None
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        stop(self.process)


class Proxy:
    """`_round_robin.py` on a port of its own, in front of the web processes."""

    def __init__(self, webs: list[Web]) -> None:
        self.port = free_port()
        command = [sys.executable, str(HERE / "_round_robin.py"), str(self.port),
                   *(str(web.port) for web in webs)]  # fmt: skip
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, start_new_session=True)
        assert self.process.stdout is not None
        if self.process.stdout.readline().strip() != b"ready":
            raise RuntimeError("the round-robin proxy did not start")

    def stop(self) -> None:
        stop(self.process)


NGINX_CONF = """
worker_processes 1;
pid {work}/nginx.pid;
error_log {work}/nginx-error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {work}/body;
    proxy_temp_path {work}/proxy;
    upstream agentweb {{
        least_conn;
{servers}
        keepalive 32;
    }}
    server {{
        listen 127.0.0.1:{port};
        client_max_body_size 10m;
        proxy_http_version 1.1;
        proxy_set_header Host $host;
        proxy_set_header Connection "";
        proxy_buffering off;
        proxy_request_buffering off;
        proxy_read_timeout 3600s;
        location / {{ proxy_pass http://agentweb; }}
    }}
}}
"""


class Nginx:
    """Debian's nginx on a port of its own in front of the web processes, as
    `deploy/nginx.conf` sets it up (least connections, kept upstream connections, answers
    not buffered), without TLS."""

    def __init__(self, webs: list[Web], work: Path) -> None:
        binary = shutil.which("nginx") or "/usr/sbin/nginx"
        if not Path(binary).exists():
            raise RuntimeError("no nginx here: apt-get install nginx-light (or --proxy python)")
        self.port = free_port()
        work.mkdir(parents=True, exist_ok=True)
        servers = "\n".join(f"        server 127.0.0.1:{web.port};" for web in webs)
        conf = work / "nginx.conf"
        conf.write_text(NGINX_CONF.format(work=work, servers=servers, port=self.port))
        command = [binary, "-e", str(work / "nginx-error.log"), "-p", str(work), "-c", str(conf),
                   "-g", "daemon off;"]  # fmt: skip
        self.process = subprocess.Popen(command, start_new_session=True)
        deadline = time.monotonic() + 10
        while not _answers(self.port):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("nginx did not start: " + _tail(work / "nginx-error.log"))
            time.sleep(0.05)

    def stop(self) -> None:
        stop(self.process)


def _answers(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
        return True
    return False


def _tail(path: Path) -> str:
    return path.read_text(errors="replace")[-2000:] if path.exists() else ""


def _spawn(
    command: list[str], root: Path, env: dict[str, str], log: Path, passed: tuple[int, ...] = ()
) -> Any:
    with log.open("ab") as out:
        return subprocess.Popen(command, cwd=root, env=env, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=out, start_new_session=True,
                                pass_fds=passed)  # fmt: skip


def wait_until_healthy(url: str, process: Any, tail: Any) -> None:
    deadline = time.monotonic() + 60
    while True:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/healthz", timeout=2, trust_env=False).is_success:
                return
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("daphne did not start:\n" + tail())
        time.sleep(0.2)


def stop(process: Any) -> None:
    if process is not None and process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _env(var: Path, database: str, redis: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTWEB_", "DJANGO_"))}
    for key in ("DATABASE_URL", "REDIS_URL", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        env.pop(key, None)
        env.pop(key.lower(), None)
    return env | {
        "AGENTWEB_VAR": str(var),
        "DATABASE_URL": database,
        "REDIS_URL": redis,
        "AGENTWEB_CHANNEL_PREFIX": PREFIX,
        "AGENTWEB_HOOK_WAIT_SECONDS": "3000",
        "DJANGO_SETTINGS_MODULE": "agentweb.settings",
        "DJANGO_DEBUG": "0",
        "AGENTWEB_LOG_LEVEL": "WARNING",
        "NO_PROXY": "127.0.0.1,localhost",
    }


def redis_command(url: str, *command: str) -> str:
    host_port, _, number = url.removeprefix("redis://").partition("/")
    host, _, port = host_port.partition(":")
    found = subprocess.run(["redis-cli", "-h", host, "-p", port or "6379", "-n", number or "0",
                            *command], check=True, capture_output=True, text=True)  # fmt: skip
    return found.stdout


def subscriptions() -> dict[str, int]:
    """Redis pub/sub channels of this benchmark's prefix (channels are server-wide), and
    the pub/sub connections subscribed to any."""
    redis = "redis://127.0.0.1:6379/0"
    channels = len(redis_command(redis, "PUBSUB", "CHANNELS", f"{PREFIX}*").split())
    clients = redis_command(redis, "CLIENT", "LIST", "TYPE", "pubsub").splitlines()
    return {"channels": channels, "pubsub_connections": sum(" sub=0 " not in c for c in clients)}


async def post(port: int, token: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """One hook over its own connection; (HTTP status, JSON answer)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
    try:
        data = json.dumps(body).encode()
        writer.write(
            f"POST /api/hooks/claude-code HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode()
            + data
        )
        await writer.drain()
        raw = await reader.read()
    finally:
        writer.close()
    head, _, payload = raw.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1]) if head else 0
    if b"chunked" in head.lower():
        payload = _unchunk(payload)
    try:
        return status, json.loads(payload or b"{}")
    except ValueError:
        return status, {"raw": payload[:200].decode(errors="replace")}


def _unchunk(payload: bytes) -> bytes:
    out = b""
    while payload:
        size_line, _, rest = payload.partition(b"\r\n")
        size = int(size_line.split(b";")[0] or b"0", 16)
        if size == 0:
            break
        out, payload = out + rest[:size], rest[size + 2 :]
    return out


def verdict(answer: dict[str, Any]) -> tuple[str, str]:
    output = answer.get("hookSpecificOutput") or {}
    return output.get("permissionDecision", "?"), output.get("permissionDecisionReason", "")


def py_spy(pid: int, seconds: float, out: Path) -> subprocess.Popen[bytes]:
    """py-spy (from the dev extras, if installed) recording where `pid` holds the GIL, as
    collapsed stacks; started now, for `seconds`."""
    rate = os.environ.get("PY_SPY_RATE", "50")  # samples a second
    command = [str(Path(sys.executable).parent / "py-spy"), "record", "-p", str(pid), "--gil",
               "-r", rate, "-d", str(int(seconds)), "--format", "raw", "-o", str(out),
               "--nonblocking"]  # fmt: skip
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
