"""The egress proxy's cost: a connection's setup through it versus direct, for plain HTTP
and for HTTPS by CONNECT, and the throughput of a large download.

A sandboxed command reaches the proxy through socat (127.0.0.1:3128 inside, a unix
socket outside); here socat runs on the host with the same arguments, so the path is
the command's without the sandbox's start. Each round opens a connection, sends one
request and reads the whole answer: direct to the server, through the proxy's socket
itself, and through socat then the proxy. The server is on 127.0.0.1, pinned for the
proxy by the tests' allowance (AGENTWEB_EGRESS_TEST_HOSTS). Medians in ms, the added
cost and the ratios; throughput in MB/s.

Pure: no Django settings, no database. Run: .venv/bin/python benchmarks/bench_egress.py
"""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _common  # noqa: F401 - puts the project root on sys.path
from _common import emit, loadavg, markdown_table, parser, summary

from tools_app.core.egress import ca, proxy, sandbox
from tools_app.core.egress.grant import EgressGrant
from tools_app.core.tools.base import SandboxOptions
from tools_app.core.tools.cow_probe import cow_available
from tools_app.core.tools.overlay import run_copy_on_write

SMALL = b"x" * 512


def serve(tls: ssl.SSLContext | None, body_size: int) -> int:
    """A server on 127.0.0.1 answering every request with `body_size` bytes, then closing."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=256)
    body = SMALL if body_size <= len(SMALL) else b"y" * body_size
    head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"

    def answer(conn: socket.socket) -> None:
        try:
            if tls is not None:
                conn = tls.wrap_socket(conn, server_side=True)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            conn.sendall(head.encode() + body)
        except OSError:
            pass
        finally:
            conn.close()

    def loop() -> None:
        while True:
            conn, _ = listener.accept()
            threading.Thread(target=answer, args=(conn,), daemon=True).start()

    threading.Thread(target=loop, daemon=True).start()
    return int(listener.getsockname()[1])


def read_all(sock: socket.socket) -> int:
    total = 0
    while chunk := sock.recv(262144):
        total += len(chunk)
    return total


def http_direct(port: int) -> Callable[[], int]:
    def once() -> int:
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: plain.bench\r\nConnection: close\r\n\r\n")
            return read_all(sock)

    return once


def http_proxied(connect: Callable[[], socket.socket]) -> Callable[[], int]:
    def once() -> int:
        with connect() as sock:
            sock.sendall(b"GET http://plain.bench/ HTTP/1.1\r\nConnection: close\r\n\r\n")
            return read_all(sock)

    return once


def tls_client() -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # the figure is the proxy's cost, not trust
    return context


def https_direct(port: int) -> Callable[[], int]:
    context = tls_client()

    def once() -> int:
        raw = socket.create_connection(("127.0.0.1", port))
        with context.wrap_socket(raw, server_hostname="tls.bench") as sock:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: tls.bench\r\nConnection: close\r\n\r\n")
            return read_all(sock)

    return once


def https_proxied(connect: Callable[[], socket.socket]) -> Callable[[], int]:
    context = tls_client()

    def once() -> int:
        raw = connect()
        raw.sendall(b"CONNECT tls.bench:443 HTTP/1.1\r\n\r\n")
        reply = b""
        while b"\r\n\r\n" not in reply:
            reply += raw.recv(4096)
        assert reply.startswith(b"HTTP/1.1 200"), reply
        with context.wrap_socket(raw, server_hostname="tls.bench") as sock:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: tls.bench\r\nConnection: close\r\n\r\n")
            return read_all(sock)

    return once


def unix_connect(path: Path) -> Callable[[], socket.socket]:
    def connect() -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(str(path))
        return sock

    return connect


def tcp_connect(port: int) -> Callable[[], socket.socket]:
    return lambda: socket.create_connection(("127.0.0.1", port))


def start_socat(path: Path) -> tuple[subprocess.Popen[bytes], int]:
    """socat as the sandbox runs it, on a free port of the host."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    bridge = subprocess.Popen(
        [shutil.which("socat") or "socat", *sandbox.SOCAT_OPTIONS,
         f"TCP-LISTEN:{port},bind=127.0.0.1,fork,reuseaddr", f"UNIX-CONNECT:{path}"],
    )  # fmt: skip
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port)).close()
            return bridge, port
        except OSError:
            time.sleep(0.01)
    raise SystemExit("socat did not start")


def measure(runs: dict[str, Callable[[], int]], rounds: int) -> dict[str, dict[str, float]]:
    """ms per round of each series, interleaved so that the machine's drift hits all."""
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for once in runs.values():
        once()  # warm up
    for _ in range(rounds):
        for name, once in runs.items():
            start = time.perf_counter_ns()
            once()
            samples[name].append((time.perf_counter_ns() - start) / 1e6)
    return {name: summary(values) for name, values in samples.items()}


# The large download's server: a process of its own, so that its copies do not share
# the proxy's interpreter lock (in production the server is elsewhere).
_LARGE_SERVER = """
import socket, sys, threading
size = int(sys.argv[1])
listener = socket.create_server(("127.0.0.1", 0))
print(listener.getsockname()[1], flush=True)
block = b"y" * 262144
def answer(conn):
    while b"\\r\\n\\r\\n" not in conn.recv(65536):
        pass
    head = f"HTTP/1.1 200 OK\\r\\nContent-Length: {size}\\r\\nConnection: close\\r\\n\\r\\n"
    conn.sendall(head.encode())
    for _ in range(size // len(block)):
        conn.sendall(block)
    conn.close()
while True:
    threading.Thread(target=answer, args=(listener.accept()[0],), daemon=True).start()
"""


def large_server(size: int) -> tuple[subprocess.Popen[str], int]:
    server = subprocess.Popen(
        [sys.executable, "-c", _LARGE_SERVER, str(size)], stdout=subprocess.PIPE, text=True
    )
    assert server.stdout is not None
    return server, int(server.stdout.readline())


def throughput(url: str, proxy_port: int | None) -> float:
    """MB/s of curl's download of `url` (best of three), direct or through the proxy."""
    via = ["--proxy", f"http://127.0.0.1:{proxy_port}"] if proxy_port else ["--noproxy", "*"]
    best = 0.0
    for _ in range(3):
        speed = subprocess.run(
            ["curl", "-sS", "-o", "/dev/null", "-w", "%{speed_download}", *via, url],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        best = max(best, float(speed) / (1024 * 1024))
    return best


def proxy_lifetime(directory: Path, grant: EgressGrant, rounds: int) -> dict[str, float]:
    """ms to start a run's proxy and stop it (what a command with a grant pays once)."""
    samples = []
    for n in range(rounds):
        start = time.perf_counter_ns()
        with proxy.serving(grant, directory / f"life{n}.sock"):
            pass
        samples.append((time.perf_counter_ns() - start) / 1e6)
    return summary(samples)


def sandbox_start(directory: Path, grant: EgressGrant, rounds: int) -> dict[str, Any]:
    """ms of `true` copy-on-write without a grant and with one (proxy, socat, its wait)."""
    if not cow_available():
        return {}
    workspace = directory / "ws"
    workspace.mkdir()
    series: dict[str, list[float]] = {"no grant": [], "grant": []}
    for _ in range(rounds + 1):
        for name, egress in (("no grant", None), ("grant", grant)):
            start = time.perf_counter_ns()
            options = SandboxOptions(egress=egress)
            with run_copy_on_write(workspace, ["true"], options, timeout=30) as run:
                assert run.result.exit_code == 0, run.result.output
            series[name].append((time.perf_counter_ns() - start) / 1e6)
    return {name: summary(values[1:]) for name, values in series.items()}


def main() -> None:
    options = parser(__doc__.splitlines()[0]).parse_args()
    rounds, big = (30, 16 * 1024 * 1024) if options.quick else (400, 256 * 1024 * 1024)
    results: dict[str, Any] = {"rounds": rounds, "download_bytes": big, "load_before": loadavg()}
    with tempfile.TemporaryDirectory(prefix="bench-egress-") as tmp:
        tls = ca.authority(Path(tmp) / "ca").server_context("tls.bench")
        plain, secure = serve(None, 0), serve(tls, 0)
        server, large = large_server(big)
        os.environ["AGENTWEB_EGRESS_TEST_HOSTS"] = (
            f"plain.bench=127.0.0.1:{plain},tls.bench=127.0.0.1:{secure},"
            f"large.bench=127.0.0.1:{large}"
        )
        grant = EgressGrant(hosts=("plain.bench", "tls.bench", "large.bench"))
        path = Path(tmp) / "egress.sock"
        with proxy.serving(grant, path):
            bridge, port = start_socat(path)
            try:
                results["http"] = measure(
                    {"direct": http_direct(plain), "proxy": http_proxied(unix_connect(path)),
                     "socat + proxy": http_proxied(tcp_connect(port))},
                    rounds,
                )  # fmt: skip
                results["connect"] = measure(
                    {"direct": https_direct(secure), "proxy": https_proxied(unix_connect(path)),
                     "socat + proxy": https_proxied(tcp_connect(port))},
                    rounds,
                )  # fmt: skip
                results["lifetime"] = proxy_lifetime(Path(tmp), grant, rounds)
                results["sandbox"] = sandbox_start(Path(tmp), grant, max(5, rounds // 20))
                results["throughput"] = {
                    "direct": throughput(f"http://127.0.0.1:{large}/", None),
                    "socat + proxy": throughput("http://large.bench/", port),
                }
            finally:
                for process in (bridge, server):
                    process.terminate()
                    process.wait()
    results["load_after"] = loadavg()
    emit("bench_egress", results, tables(results), options.json)


def tables(results: dict[str, Any]) -> list[str]:
    rows = []
    for kind, label in (("http", "HTTP (absolute URL)"), ("connect", "HTTPS (CONNECT + TLS)")):
        series = results[kind]
        direct = series["direct"]["median"]
        for name in ("proxy", "socat + proxy"):
            median = series[name]["median"]
            rows.append([label, name, direct, median, median - direct, f"{median / direct:.2f}x",
                         series[name]["p99"]])  # fmt: skip
    setup = markdown_table(
        ["connection", "through", "direct ms", "through ms", "added ms", "ratio", "p99 ms"], rows
    )
    speed = results["throughput"]
    size = results["download_bytes"] // (1024 * 1024)
    flow = markdown_table(
        ["download (curl)", "direct MB/s", "socat + proxy MB/s", "ratio"],
        [[f"{size} MB over HTTP", speed["direct"], speed["socat + proxy"],
          f"{speed['socat + proxy'] / speed['direct']:.2f}x"]],
    )  # fmt: skip
    life = results["lifetime"]
    once = [["start + stop a run's proxy", life["median"], life["p99"]]]
    if results["sandbox"]:
        for name, row in results["sandbox"].items():
            once.append([f"`true` copy-on-write, {name}", row["median"], row["p99"]])
    per_run = markdown_table(["once per command", "median ms", "p99 ms"], once)
    load = (
        f"{results['rounds']} rounds; load before {results['load_before']}, "
        f"after {results['load_after']}"
    )
    return [setup, flow, per_run, load]


if __name__ == "__main__":
    main()
