"""Many gateway waits held at once on one web process, on PostgreSQL and Redis (issue 32, 7).

Starts daphne alone (the hook is judged and held in the request: no worker) on a
PostgreSQL database of its own (`bench_held_waits_PID` at `--postgres`, dropped after) and
a Redis database number of its own (`--redis`, flushed before and after). Then, from this
process, with plain asyncio sockets (one connection per hook, as Claude Code's http hooks):

(a) N Claude Code `PreToolUse` events that need a person (a `Write` to `.env`, spread over
    50 agent sessions, sent 100 at a time), all held at once (`AGENTWEB_HOOK_WAIT_SECONDS`
    large): daphne's RSS before and with all held, per held wait; the Redis
    subscriptions they use;
(b) while all are held, 50 concurrent agents each sending allowed `ls` hooks: p50/p99,
    and the most connections daphne held on PostgreSQL (pg_stat_activity, sampled);
(c) while all are held, K of them decided one after another through the REST API
    (`POST /api/tool-calls/{id}/decision`, a review token): decision sent → the hook's
    answer received, p50/p99;
(d) errors: hooks not answered 200, allowed calls not `allow`, internal-error denials,
    "too many clients" in daphne's log (all must be 0).

`--root DIR` runs another checkout (a clean clone of an earlier commit) with this
script's client, so a before and an after see the same load.

Run: .venv/bin/python benchmarks/bench_held_waits.py [--quick] [--waits 500] [--root DIR]
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import _common  # noqa: F401 - puts the project root on sys.path
import httpx
import psycopg
from _common import ROOT, emit, loadavg, markdown_table, parser
from _common import summary as _summary
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
SESSIONS = 50
AGENTS = 50
BATCH = 100  # held hooks sent at once: 5,000 at once would measure the listen backlog and
# the pool's timeout (requests queue for a connection while daphne stores ~50 calls/s)
PREFIX = "benchheld"


def event(session: str, tool: str, tool_input: dict[str, Any], use: str) -> dict[str, Any]:
    return {
        "session_id": session,
        "cwd": "/home/olga/project",
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": use,
        "permission_mode": "default",
    }


def held_event(index: int) -> dict[str, Any]:
    body = {"file_path": ".env", "content": f"KEY={index}\n"}
    return event(f"bench-held-{index % SESSIONS}", "Write", body, f"toolu_held_{index}")


def ls_event(agent: int, index: int) -> dict[str, Any]:
    # Sessions of their own: a new tool use in a session whose call waits ends that wait.
    return event(f"bench-ls-{agent}", "Bash", {"command": "ls -la"}, f"toolu_ls_{agent}_{index}")


# --- the stack: a database, a Redis number, daphne ----------------------------------------


class Web:
    """daphne on a fresh PostgreSQL database and Redis number, its log in a file."""

    def __init__(self, root: Path, tmp: Path, postgres: str, redis: str) -> None:
        self.root, self.postgres, self.redis = root, postgres, redis
        self.name = f"bench_held_waits_{os.getpid()}"
        self.port = free_port()
        self.log = tmp / "daphne.log"
        self.env = _env(tmp / "var", f"{postgres}/{self.name}", redis)
        self.process: subprocess.Popen[bytes] | None = None
        self.monitor: psycopg.Connection[Any] | None = None

    def create(self) -> dict[str, str]:
        with psycopg.connect(f"{self.postgres}/postgres", autocommit=True) as pg:
            pg.execute(f'CREATE DATABASE "{self.name}"')
        _redis(self.redis, "FLUSHDB")
        manage = [sys.executable, "manage.py"]
        subprocess.run([*manage, "migrate", "-v0"], cwd=self.root, env=self.env, check=True)
        shell = subprocess.run([*manage, "shell", "-c", USERS], cwd=self.root, env=self.env,
                               check=True, capture_output=True, text=True)  # fmt: skip
        tokens: dict[str, str] = json.loads(shell.stdout.strip().splitlines()[-1])
        return tokens

    def start(self) -> None:
        command = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port),
                   "agentweb.asgi:application"]  # fmt: skip
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                command, cwd=self.root, env=self.env, stdin=subprocess.DEVNULL,
                stdout=log, stderr=log, start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/healthz", timeout=2, trust_env=False).is_success:
                    return
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("daphne did not start:\n" + self.tail())
            time.sleep(0.2)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""

    def rss_mib(self) -> float:
        assert self.process is not None
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError("no VmRSS")

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

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()

    def drop(self) -> None:
        if self.monitor is not None:
            self.monitor.close()
        with psycopg.connect(f"{self.postgres}/postgres", autocommit=True) as pg:
            pg.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
        _redis(self.redis, "FLUSHDB")


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


def _redis(url: str, *command: str) -> str:
    host_port, _, number = url.removeprefix("redis://").partition("/")
    host, _, port = host_port.partition(":")
    found = subprocess.run(["redis-cli", "-h", host, "-p", port or "6379", "-n", number or "0",
                            *command], check=True, capture_output=True, text=True)  # fmt: skip
    return found.stdout


def subscriptions() -> int:
    """Redis pub/sub channels of this benchmark's prefix (channels are server-wide)."""
    return len(_redis("redis://127.0.0.1:6379/0", "PUBSUB", "CHANNELS", f"{PREFIX}*").split())


# --- the client: one connection per hook ---------------------------------------------------


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


class Client:
    """An asyncio loop in a thread holding the N waits; records when each is answered."""

    def __init__(self, port: int, token: str) -> None:
        self.port, self.token = port, token
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.answered: dict[str, tuple[float, int, dict[str, Any]]] = {}
        self.failures: list[str] = []
        self.tasks: set[asyncio.Task[None]] = set()  # asyncio keeps weak references only

    def run(self, coroutine: Any, timeout: float | None = None) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def hold(self, indexes: range) -> None:
        """Send the held events of `indexes`, each over its own connection."""

        async def one(index: int) -> None:
            use = f"toolu_held_{index}"
            try:
                status, answer = await post(self.port, self.token, held_event(index))
            except OSError as exc:
                self.failures.append(f"{use}: {exc!r}")
                return
            self.answered[use] = (time.perf_counter(), status, answer)

        async def send() -> None:
            for index in indexes:
                self.tasks.add(self.loop.create_task(one(index)))

        self.run(send())

    def allowed(self, agents: int, each: int) -> dict[str, Any]:
        """`agents` concurrent agents, each sending `each` allowed `ls` hooks in turn."""
        times: list[float] = []
        bad: list[str] = []

        async def agent(number: int) -> None:
            for index in range(each):
                start = time.perf_counter()
                try:
                    status, answer = await post(self.port, self.token, ls_event(number, index))
                except OSError as exc:
                    bad.append(repr(exc))
                    continue
                times.append((time.perf_counter() - start) * 1000)
                decision, reason = verdict(answer)
                if status != 200 or decision != "allow":
                    bad.append(f"{status} {decision}: {reason[:160]}")

        async def all_agents() -> float:
            start = time.perf_counter()
            await asyncio.gather(*(agent(n) for n in range(agents)))
            return time.perf_counter() - start

        seconds = self.run(all_agents())
        return {"ms": summary(times), "per_s": len(times) / seconds, "bad": bad}

    def close(self) -> None:
        async def cancel_all() -> None:
            for task in self.tasks:
                task.cancel()
            await asyncio.gather(*self.tasks, return_exceptions=True)

        self.run(cancel_all(), timeout=60)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)


# --- the measurement -------------------------------------------------------------------


def summary(values: list[float]) -> dict[str, float]:
    return _summary(values) if values else {"n": 0}


def wait_for(condition: Any, timeout: float, what: str) -> float:
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > timeout:
            raise RuntimeError(f"not within {timeout:g} s: {what}")
        time.sleep(0.1)
    return time.monotonic() - start


def awaiting(web: Web) -> int:
    rows = web.sql("SELECT count(*) FROM tools_app_toolcall WHERE status = 'awaiting_approval'")
    return int(rows[0][0])


def settled(web: Web, client: Client) -> int:
    """Held hooks stored and waiting, or answered, or lost: none is still on its way."""
    return awaiting(web) + len(client.answered) + len(client.failures)


def measure(web: Web, tokens: dict[str, str], waits: int, decide: int, each: int) -> dict[str, Any]:
    client = Client(web.port, tokens["agent"])
    try:
        warm = client.allowed(AGENTS // 5, 2)  # sessions and connections made, code loaded
        idle_rss = web.rss_mib()
        start = time.monotonic()
        for batch in range(0, waits, BATCH):  # each batch stored before the next is sent
            sent = min(waits, batch + BATCH)
            client.hold(range(batch, sent))
            with contextlib.suppress(RuntimeError):
                wait_for(lambda n=sent: settled(web, client) >= n, 120, f"{sent} held calls")
        stored_s = time.monotonic() - start
        held_now = awaiting(web)
        time.sleep(3)  # the last ones subscribe after they are stored
        held_rss = web.rss_mib()
        subscribed = subscriptions()
        peak = [web.connections()]
        sampling = threading.Event()

        def sample() -> None:
            while not sampling.wait(0.2):
                with contextlib.suppress(psycopg.Error):
                    peak.append(web.connections())

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        allowed = client.allowed(AGENTS, each)
        sampling.set()
        sampler.join()
        decided = decide_some(web, tokens["review"], client, decide)
        early = [use for use, (_, _, a) in client.answered.items() if use not in decided["uses"]]
        return {
            "waits": waits,
            "held": held_now,
            "stored_s": stored_s,
            "client_failures": client.failures[:5],
            "client_failure_count": len(client.failures),
            "answered_early": len(early),
            "answered_early_sample": [verdict(client.answered[u][2])[1][:160] for u in early[:3]],
            "idle_rss_mib": idle_rss,
            "held_rss_mib": held_rss,
            "kib_per_wait": (held_rss - idle_rss) * 1024 / max(held_now, 1),
            "redis_channels": subscribed,
            "allowed_ms": allowed["ms"],
            "allowed_per_s": allowed["per_s"],
            "allowed_bad": len(allowed["bad"]) + len(warm["bad"]),
            "allowed_bad_sample": (warm["bad"] + allowed["bad"])[:3],
            "internal_errors": sum("internal error" in b for b in warm["bad"] + allowed["bad"]),
            "pg_connections_max": max(peak),
            "decided_ms": decided["ms"],
            "decision_request_ms": decided["request_ms"],
            "decided_not_allowed": decided["bad"],
            "too_many_clients": web.log.read_text(errors="replace").count("too many clients"),
        }
    finally:
        client.close()


def decide_some(web: Web, token: str, client: Client, count: int) -> dict[str, Any]:
    """Approve `count` held calls one after another; decision sent → hook answered (ms)."""
    rows = web.sql(
        "SELECT id, tool_use_id FROM tools_app_toolcall WHERE status = 'awaiting_approval' "
        f"ORDER BY id DESC LIMIT {count}"
    )
    latencies, requests, bad, uses = [], [], 0, set()
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=web.url, headers=headers, timeout=60, trust_env=False) as review:
        for call_id, use in rows:
            uses.add(use)
            start = time.perf_counter()
            answer = review.post(
                f"/api/tool-calls/{call_id}/decision", json={"decision": "approve"}
            )
            requests.append((time.perf_counter() - start) * 1000)
            if answer.status_code != 200:  # "too many clients", before the pool
                bad += 1
                continue
            deadline = time.monotonic() + 30
            while use not in client.answered and time.monotonic() < deadline:
                time.sleep(0.0005)
            if use not in client.answered:
                bad += 1
                continue
            at, status, body = client.answered[use]
            latencies.append((at - start) * 1000)
            bad += status != 200 or verdict(body)[0] != "allow"
    return {"ms": summary(latencies), "request_ms": summary(requests), "bad": bad, "uses": uses}


def main() -> None:
    options = parser(__doc__.splitlines()[0])
    options.add_argument("--waits", type=int, default=500)
    options.add_argument("--root", type=Path, default=ROOT, help="the checkout to run")
    options.add_argument("--postgres", default="postgres://postgres@127.0.0.1:5432")
    options.add_argument("--redis", default="redis://127.0.0.1:6379/13")
    args = options.parse_args()
    waits, decide, each = (50, 10, 4) if args.quick else (args.waits, 50, 20)
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # daphne inherits it too
    tmp = Path(tempfile.mkdtemp(prefix="bench-held-"))
    web = Web(args.root.resolve(), tmp, args.postgres, args.redis)
    try:
        tokens = web.create()
        web.sql("SELECT 1")
        web.start()
        results = measure(web, tokens, waits, decide, each)
        results |= {"root": str(args.root), "commit": _commit(args.root), "load": loadavg()}
    except BaseException:
        print(web.tail(), file=sys.stderr)
        raise
    finally:
        web.stop()
        web.drop()
        shutil.rmtree(tmp, ignore_errors=True)
    emit("bench_held_waits", results, tables(results), args.json)


def _commit(root: Path) -> str:
    found = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                           capture_output=True, text=True)  # fmt: skip
    return found.stdout.strip()


def tables(r: dict[str, Any]) -> list[str]:
    rows = [
        ["held waits (asked / awaiting approval)", f"{r['waits']} / {r['held']}"],
        ["time to store and hold them all (s)", r["stored_s"]],
        ["daphne RSS idle → all held (MiB)", f"{r['idle_rss_mib']:.0f} → {r['held_rss_mib']:.0f}"],
        ["daphne RSS per held wait (KiB)", r["kib_per_wait"]],
        ["Redis pub/sub channels while held", r["redis_channels"]],
        ["decision → hook answer p50 / p99 (ms)", _pair(r["decided_ms"])],
        ["decision request p50 / p99 (ms)", _pair(r["decision_request_ms"])],
        [f"allowed `ls`, {AGENTS} agents: p50 / p99 (ms)", _pair(r["allowed_ms"])],
        ["allowed `ls` answers/s", r["allowed_per_s"]],
        ["PostgreSQL connections of daphne (most seen)", r["pg_connections_max"]],
        ["allowed hooks not allowed", r["allowed_bad"]],
        ["of which internal errors", r["internal_errors"]],
        ["'too many clients' in daphne's log", r["too_many_clients"]],
        ["held hooks answered before a decision", r["answered_early"]],
        ["hooks that lost their connection", r["client_failure_count"]],
    ]
    return [markdown_table(["figure", f"{r['commit']} (load {r['load']})"], rows)]


def _pair(series: dict[str, float]) -> str:
    return f"{series['median']:.1f} / {series['p99']:.1f}" if series["n"] else "-"


if __name__ == "__main__":
    main()
