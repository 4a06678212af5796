"""Allowed hooks from 50 agents at once, on SQLite and on PostgreSQL (issue 32).

Starts daphne alone (an allowed hook is judged and answered in the request: no worker),
once on a SQLite file of its own and once on a PostgreSQL database of its own
(`bench_hook_load_PID` at `--postgres`, dropped after), with a Redis database number of
its own (`--redis`, flushed before and after). From this process, with plain asyncio
sockets, Claude Code `PreToolUse` events of an allowed `ls -la`, each agent in a session of
its own, sent as Claude Code's http hooks send them (`--client kept+ran`, the default):
each agent keeps its connection open from one hook to the next (the pinned Claude Code
sends all of a session's hooks over one, HTTP/1.1 keep-alive), and each allowed
`PreToolUse` is followed by its `PostToolUse` (not timed). `--client per-hook` opens a
connection per hook, as this benchmark did until 7 December; `kept` and `per-hook` alone
leave the `PostToolUse` out.

(a) one at a time: one agent, each hook sent when the last is answered;
(a') 5 agents at an agent's pace (as (c)): hooks that find the server idle, each on its
    own, as one agent's do, where (a)'s follow each other hot;
(b) 50 agents closed loop: each sends its next hook as soon as its last is answered (the
    most the process can answer: answers/s);
(c) 50 agents at an agent's pace: each sends one hook a second (open loop, each interval
    jittered ±50%), whether or not its last was answered.

For each: p50/p99 of the `PreToolUse` answer time (and, with `+ran`, of the
`PostToolUse`'s: the agent waits for both), answers/s, how many were not `allow`,
daphne's CPU per answered `PreToolUse` (its `PostToolUse`'s included, with `+ran`), and the
most database connections daphne held (sampled every 50 ms:
PostgreSQL's pg_stat_activity; for SQLite, daphne's open descriptors of the database file).

`--root DIR` runs another checkout (a clean clone of an earlier commit) with this
script's client, so a before and an after see the same load. `--webs 2` starts two
daphne processes on the same database behind one address: Debian's nginx as
`deploy/nginx.conf` sets it up (`--proxy nginx`, the default for more than one; `apt-get
install nginx-light`), or `_held_stack`'s round-robin proxy in Python (`--proxy python`);
CPU and connections are then both processes' together (the proxy's not counted).
`--proxy nginx` with one web process puts it behind nginx as `deploy/` does.
`--proxy reuseport` puts no proxy in front: each process takes a listening socket of its
own on one port (SO_REUSEPORT; daphne `--fd`), and the kernel spreads the connections.

`--profile PATH` records the first web process with py-spy (where it holds the interpreter
lock; `PY_SPY_RATE` samples a second, 50 by default) from (a) into (b), as collapsed
stacks in PATH-sqlite.raw and PATH-postgres.raw.

Run: .venv/bin/python benchmarks/bench_hook_load.py [--quick] [--seconds 15]
[--databases sqlite,postgres] [--client kept+ran|kept|per-hook+ran|per-hook]
[--root DIR] [--at-once N] [--webs N]
[--proxy nginx|python|reuseport|none] [--profile PATH]
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import _common  # noqa: F401 - puts the project root on sys.path
from _common import ROOT, emit, loadavg, markdown_table, parser, summary
from _held_stack import (
    USERS,
    Database,
    Nginx,
    Proxy,
    Web,
    post,
    py_spy,
    redis_command,
    verdict,
)

AGENTS = 50
IDLE_AGENTS = 5  # (a'): hooks that find the server idle, as one agent's do
PACE_SECONDS = 1.0  # an agent's pace in (a') and (c): one tool use a second
SAMPLE_SECONDS = 0.05
CLIENTS = ("kept+ran", "kept", "per-hook+ran", "per-hook")


class SqliteDatabase:
    """A SQLite file of this run's own; the env that uses it (the Redis as PostgreSQL's)."""

    def __init__(self, root: Path, tmp: Path, redis: str) -> None:
        self.root, self.redis = root, redis
        self.file = tmp / "var" / "agentweb.sqlite3"
        self.file.parent.mkdir(parents=True, exist_ok=True)
        self.env = Database(root, tmp, "postgres://unused", redis).env | {
            "DATABASE_URL": f"sqlite:///{self.file}"
        }
        self.pids: list[int] = []

    def create(self) -> dict[str, str]:
        redis_command(self.redis, "FLUSHDB")
        return _migrate_and_tokens(self.root, self.env)

    def connections(self) -> int:
        """The web processes' open descriptors of the database file: one per SQLite
        connection."""
        count = 0
        for pid in self.pids:
            with contextlib.suppress(FileNotFoundError):
                for fd in os.scandir(f"/proc/{pid}/fd"):
                    with contextlib.suppress(OSError):
                        count += os.readlink(fd.path) == str(self.file)
        return count

    def drop(self) -> None:
        redis_command(self.redis, "FLUSHDB")


class PostgresDatabase(Database):
    """`_held_stack`'s database under this script's name."""

    def __init__(self, root: Path, tmp: Path, postgres: str, redis: str) -> None:
        super().__init__(root, tmp, postgres, redis)
        self.name = f"bench_hook_load_{os.getpid()}"
        self.env = self.env | {"DATABASE_URL": f"{postgres}/{self.name}"}
        self.pids: list[int] = []


def _migrate_and_tokens(root: Path, env: dict[str, str]) -> dict[str, str]:
    """Migrated, with an operator and a reviewer; their agent and review tokens."""
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v0"], cwd=root, env=env, check=True)
    shell = subprocess.run([*manage, "shell", "-c", USERS], cwd=root, env=env, check=True,
                           capture_output=True, text=True)  # fmt: skip
    tokens: dict[str, str] = json.loads(shell.stdout.strip().splitlines()[-1])
    return tokens


def ls_event(phase: str, agent: int, index: int) -> dict[str, Any]:
    return {
        "session_id": f"bench-load-{phase}-{agent}",
        "cwd": "/home/olga/project",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "ls -la"},
        "tool_use_id": f"toolu_{phase}_{agent}_{index}",
        "permission_mode": "default",
    }


def ls_ran(phase: str, agent: int, index: int) -> dict[str, Any]:
    """The PostToolUse Claude Code sends once the allowed `ls -la` ran."""
    ran = ls_event(phase, agent, index) | {"hook_event_name": "PostToolUse"}
    return ran | {"tool_response": {"stdout": "total 0\n", "stderr": "", "interrupted": False}}


class KeptConnections:
    """Each agent's connections, kept open from one hook to the next as Claude Code keeps
    its hooks' (one for all of a session's hooks, checked with the pinned Claude Code;
    another only while the first still waits for an answer)."""

    def __init__(self, port: int, token: str) -> None:
        self.port, self.token = port, token
        self.idle: dict[int, list[tuple[asyncio.StreamReader, asyncio.StreamWriter]]] = {}

    async def post(self, agent: int, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        idle = self.idle.setdefault(agent, [])
        reader, writer = (
            idle.pop()
            if idle
            else await asyncio.open_connection("127.0.0.1", self.port, limit=1 << 20)
        )
        try:
            answer = await _exchange(reader, writer, self.port, self.token, body)
        except BaseException:
            writer.close()
            raise
        idle.append((reader, writer))
        return answer

    def close(self) -> None:
        for idle in self.idle.values():
            for _, writer in idle:
                writer.close()


async def _exchange(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    port: int,
    token: str,
    body: dict[str, Any],
) -> tuple[int, dict[str, Any]]:
    """One hook over a kept connection (HTTP/1.1 keep-alive); (HTTP status, JSON answer)."""
    data = json.dumps(body).encode()
    writer.write(
        f"POST /api/hooks/claude-code HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\n\r\n".encode()
        + data
    )
    await writer.drain()
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").lower()
    status = int(head.split(" ", 2)[1])
    if "transfer-encoding: chunked" in head:
        payload = b""
        while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
            payload += (await reader.readexactly(size + 2))[:-2]
        await reader.readuntil(b"\r\n")  # the last chunk's end
    else:
        length = int(head.split("content-length:", 1)[1].split("\r\n", 1)[0])
        payload = await reader.readexactly(length)
    return status, json.loads(payload or b"{}")


class Phase:
    """One load shape's answers: times, verdicts, and the connections seen meanwhile. The
    time is the PreToolUse's; with `ran`, each allowed one is followed (untimed) by its
    PostToolUse, on the same connection, as Claude Code sends it."""

    def __init__(self, port: int, token: str, name: str, client: str = "kept+ran") -> None:
        self.port, self.token, self.name = port, token, name
        self.kept = KeptConnections(port, token) if client.startswith("kept") else None
        self.ran = client.endswith("+ran")
        self.ms: list[float] = []
        self.ran_ms: list[float] = []  # each PostToolUse's answer time
        self.not_allowed: list[str] = []

    async def send(self, agent: int, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if self.kept is None:
            return await post(self.port, self.token, body)  # a connection of its own
        return await self.kept.post(agent, body)

    async def hook(self, agent: int, index: int) -> None:
        start = time.perf_counter()
        status, answer = await self.send(agent, ls_event(self.name, agent, index))
        self.ms.append((time.perf_counter() - start) * 1000)
        decision, reason = verdict(answer)
        if status != 200 or decision != "allow":
            self.not_allowed.append(f"{status} {decision}: {reason[:160]}")
        elif self.ran:
            start = time.perf_counter()
            status, answer = await self.send(agent, ls_ran(self.name, agent, index))
            self.ran_ms.append((time.perf_counter() - start) * 1000)
            if status != 200 or answer != {}:
                self.not_allowed.append(f"PostToolUse {status}: {str(answer)[:160]}")

    def close(self) -> None:
        if self.kept is not None:
            self.kept.close()


async def closed_loop(phase: Phase, agents: int, seconds: float) -> None:
    """Each agent sends its next hook as soon as the last is answered."""
    deadline = time.monotonic() + seconds

    async def agent(number: int) -> None:
        index = 0
        while time.monotonic() < deadline:
            index += 1
            await phase.hook(number, index)

    await asyncio.gather(*(agent(n) for n in range(agents)))


async def open_loop(phase: Phase, agents: int, seconds: float) -> None:  # (a') and (c)
    """Each agent sends one hook a second (±50%), whether or not its last was answered."""
    deadline = time.monotonic() + seconds
    rng = random.Random(32)
    sent: list[asyncio.Task[None]] = []

    async def agent(number: int) -> None:
        await asyncio.sleep(rng.uniform(0, PACE_SECONDS))
        index = 0
        while time.monotonic() < deadline:
            index += 1
            sent.append(asyncio.ensure_future(phase.hook(number, index)))
            await asyncio.sleep(PACE_SECONDS * rng.uniform(0.5, 1.5))

    await asyncio.gather(*(agent(n) for n in range(agents)))
    await asyncio.gather(*sent)


class Sampler:
    """The most database connections daphne held, read in a thread every 50 ms."""

    def __init__(self, db: Any) -> None:
        self.db, self.most = db, 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stopping.wait(SAMPLE_SECONDS):
            self.most = max(self.most, self.db.connections())

    def __enter__(self) -> Sampler:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.thread.join()
        self.most = max(self.most, self.db.connections())


class Webs:
    """`count` daphne processes on the database and a proxy in front, unless `proxy` is
    "none" (one process): nginx (`proxy="nginx"`) or `_held_stack`'s round robin in Python;
    or no proxy at all, each process on a socket of its own on one port (`"reuseport"`:
    SO_REUSEPORT, the kernel spreads the connections)."""

    def __init__(self, root: Path, db: Any, work: Path, count: int, proxy: str = "none") -> None:
        self.db, self.work, self.kind = db, work, proxy
        listeners: list[socket.socket | None] = [None] * count
        if proxy == "reuseport":
            listeners = [*_reuseport_listeners(count)]
        self.webs = [
            Web(root, db.env, work / f"daphne-{n}.log", listener)
            for n, listener in enumerate(listeners)
        ]
        self.proxy: Proxy | Nginx | None = None

    def start(self) -> None:
        for web in self.webs:
            web.start()
            assert web.process is not None
            self.db.pids.append(web.process.pid)
        if self.kind in ("nginx", "python"):
            self.proxy = (
                Nginx(self.webs, self.work / "nginx") if self.kind == "nginx" else Proxy(self.webs)
            )

    @property
    def port(self) -> int:
        return self.proxy.port if self.proxy is not None else self.webs[0].port

    def cpu_seconds(self) -> float:
        return sum(web.cpu_seconds() for web in self.webs)

    def tail(self) -> str:
        return "".join(web.tail() for web in self.webs)

    def stop(self) -> None:
        if self.proxy is not None:
            self.proxy.stop()
        for web in self.webs:
            web.stop()
            if web.listener is not None:
                web.listener.close()


def _reuseport_listeners(count: int) -> list[socket.socket]:
    """`count` listening sockets on one free port of 127.0.0.1."""
    listeners: list[socket.socket] = []
    for _ in range(count):
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        listener.bind(("127.0.0.1", listeners[0].getsockname()[1] if listeners else 0))
        listener.listen(1024)
        listeners.append(listener)
    return listeners


def run_phase(webs: Webs, db: Any, token: str, name: str, load: Any, client: str) -> dict[str, Any]:
    phase = Phase(webs.port, token, name, client)
    cpu, start = webs.cpu_seconds(), time.monotonic()
    with Sampler(db) as sampler:
        asyncio.run(_closing(phase, load))
    elapsed, cpu_used = time.monotonic() - start, webs.cpu_seconds() - cpu
    return {
        "ms": summary(phase.ms),
        "ran_ms": summary(phase.ran_ms) if phase.ran_ms else None,
        "answers_per_s": len(phase.ms) / elapsed,
        "cpu_ms_per_hook": cpu_used * 1000 / max(1, len(phase.ms)),
        "not_allowed": len(phase.not_allowed),
        "not_allowed_examples": sorted(set(phase.not_allowed))[:3],
        "connections_most": sampler.most,
        "load": loadavg(),
    }


def measure_one(kind: str, root: Path, tmp: Path, options: Any) -> dict[str, Any]:
    work = tmp / kind
    if kind == "sqlite":
        db: Any = SqliteDatabase(root, work, options.redis)
    else:
        db = PostgresDatabase(root, work, options.postgres, options.redis)
    if options.at_once:
        db.env["AGENTWEB_HOOKS_AT_ONCE"] = str(options.at_once)
    web = Webs(root, db, work, options.webs, options.proxy)
    try:
        tokens = db.create()
        web.start()
        token, seconds = tokens["agent"], options.seconds
        single = 30 if options.quick else 200
        warm = run_phase(web, db, token, "warm", lambda p: closed_loop(p, AGENTS, 2),
                         options.client)  # fmt: skip
        shapes = {
            "one_at_a_time": ("one", lambda p: _count(p, single)),
            "idle_pace": ("idle", lambda p: open_loop(p, IDLE_AGENTS, seconds)),
            "closed_loop": ("closed", lambda p: closed_loop(p, AGENTS, seconds)),
            "agent_pace": ("pace", lambda p: open_loop(p, AGENTS, seconds)),
        }
        if options.profile:  # py-spy on the (first) web process through the closed loop
            pid = web.webs[0].process.pid  # type: ignore[union-attr]
            out = options.profile.with_name(f"{options.profile.stem}-{kind}.raw")
            recording = py_spy(pid, seconds, out)
        results: dict[str, Any] = {
            key: run_phase(web, db, token, *shape, options.client) for key, shape in shapes.items()
        }
        if options.profile:
            recording.wait()
        results["warm_up_not_allowed"] = warm["not_allowed"]
        results["internal_errors_logged"] = web.tail().count("the hook endpoint failed")
    except BaseException:
        print(web.tail(), file=sys.stderr)
        raise
    finally:
        web.stop()
        db.drop()
    return results


async def _closing(phase: Phase, load: Any) -> None:
    try:
        await load(phase)
    finally:
        phase.close()


async def _count(phase: Phase, count: int) -> None:
    for index in range(count):
        await phase.hook(0, index)


def main() -> None:
    options = parser(__doc__.splitlines()[0])
    options.add_argument("--seconds", type=float, default=15, help="each of (b) and (c)")
    options.add_argument("--databases", default="sqlite,postgres")
    options.add_argument("--at-once", type=int, help="AGENTWEB_HOOKS_AT_ONCE (default: its)")
    options.add_argument("--webs", type=int, default=1, help="web processes behind one address")
    options.add_argument("--proxy", choices=("nginx", "python", "reuseport", "none"),
                         help="in front of the web processes (default: none for one, "
                         "nginx for more; reuseport: none, one port)")  # fmt: skip
    options.add_argument("--client", choices=CLIENTS, default="kept+ran",
                         help="kept: each agent keeps its connection, as Claude Code "
                         "(per-hook: one a hook); +ran: each allowed PreToolUse followed "
                         "by its PostToolUse, as Claude Code sends it")  # fmt: skip
    options.add_argument("--root", type=Path, default=ROOT, help="the checkout to run")
    options.add_argument("--profile", type=Path, help="py-spy raw stacks of (b) to PATH-db.raw")
    options.add_argument("--postgres", default="postgres://postgres@127.0.0.1:5432")
    options.add_argument("--redis", default="redis://127.0.0.1:6379/12")
    args = options.parse_args()
    if args.quick:
        args.seconds = min(args.seconds, 4)
    if args.proxy is None:
        args.proxy = "none" if args.webs == 1 else "nginx"
    if args.webs > 1 and args.proxy == "none":
        options.error("--webs 2 or more needs one address (--proxy nginx, python or reuseport)")
    tmp = Path(tempfile.mkdtemp(prefix="bench-hook-load-"))
    root = args.root.resolve()
    webs = f"{args.webs} web" + ("s" if args.webs > 1 else "")
    webs += {"none": "", "reuseport": ", SO_REUSEPORT"}.get(args.proxy, f" behind {args.proxy}")
    webs += f", {args.client}"
    results: dict[str, Any] = {"root": str(root), "commit": _commit(root), "webs": webs}
    try:
        for kind in args.databases.split(","):
            results[kind] = measure_one(kind, root, tmp, args)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    emit("bench_hook_load", results, tables(results), args.json)


def _commit(root: Path) -> str:
    def git(*args: str) -> str:
        found = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
        return found.stdout.strip()

    dirty = git("status", "--porcelain", "--untracked-files=no")
    return git("rev-parse", "--short", "HEAD") + ("+" if dirty else "")  # +: uncommitted changes


PHASES = (
    ("one_at_a_time", "(a) one at a time"),
    ("idle_pace", f"(a') {IDLE_AGENTS} agents, one hook/s each"),
    ("closed_loop", f"(b) {AGENTS} agents, closed loop"),
    ("agent_pace", f"(c) {AGENTS} agents, one hook/s each"),
)


def tables(results: dict[str, Any]) -> list[str]:
    rows = []
    for kind in ("sqlite", "postgres"):
        if kind not in results:
            continue
        for key, label in PHASES:
            r = results[kind][key]
            ran = r.get("ran_ms")
            rows.append([
                f"{kind} {results['commit']}, {results['webs']}", label, r["ms"]["n"],
                r["ms"]["median"],
                r["ms"]["p99"], f"{ran['median']:.3g} / {ran['p99']:.3g}" if ran else "-",
                r["answers_per_s"], r["cpu_ms_per_hook"], r["not_allowed"],
                r["connections_most"], r["load"],
            ])  # fmt: skip
    headers = ["database, commit", "load shape", "hooks", "p50 ms", "p99 ms",
               "PostToolUse p50 / p99 ms", "answers/s",
               "daphne CPU ms/hook", "not allowed", "DB connections (most)",
               "load avg"]  # fmt: skip
    return [markdown_table(headers, rows)]


if __name__ == "__main__":
    main()
