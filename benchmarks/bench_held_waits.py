"""Many gateway waits held at once on PostgreSQL and Redis (issue 32, 7).

Starts daphne alone (the hook is judged and held in the request: no worker) on a
PostgreSQL database of its own (`bench_held_waits_PID` at `--postgres`, dropped after) and
a Redis database number of its own (`--redis`, flushed before and after); `--webs 2`
starts two daphne processes on them behind one address, a small asyncio round-robin TCP
proxy (`_round_robin.py`: there is no nginx, Caddy or HAProxy here), so that the waits
spread over both and decisions go through either. Then, from this process, with plain
asyncio sockets (one connection per hook, as Claude Code's http hooks):

(a) N Claude Code `PreToolUse` events that need a person (a `Write` to `.env`, spread over
    50 agent sessions, sent 100 at a time), all held at once (`AGENTWEB_HOOK_WAIT_SECONDS`
    large): each daphne's RSS and threads before and with all held, per held wait; the
    Redis subscriptions they use; the CPU the web processes spend holding them (10 s);
(b) while all are held, 50 concurrent agents each sending allowed `ls` hooks: p50/p99,
    and the most connections daphne held on PostgreSQL (pg_stat_activity, sampled);
(c) while all are held, K of them decided one after another through the REST API
    (`POST /api/tool-calls/{id}/decision`, a review token): decision sent → the hook's
    answer received, p50/p99;
(d) errors: hooks not answered 200, allowed calls not `allow`, internal-error denials,
    "too many clients" in daphne's log (all must be 0).

`--root DIR` runs another checkout (a clean clone of an earlier commit) with this
script's client, so a before and an after see the same load. `--profile FILE` records
where the first daphne holds the GIL during (b) (py-spy, collapsed stacks).

Run: .venv/bin/python benchmarks/bench_held_waits.py [--quick] [--waits 500] [--webs 2]
[--root DIR] [--profile FILE]
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
import shutil
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
from _held_stack import Database, Proxy, Web, post, py_spy, subscriptions, verdict

SESSIONS = 50
AGENTS = 50
BATCH = 100  # held hooks sent at once: 5,000 at once would measure the listen backlog and
# the pool's timeout (requests queue for a connection while daphne stores ~50 calls/s)
IDLE_CPU_SECONDS = 10  # the window in which the web processes' CPU is measured, all held


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


class Stack:
    """The database, `webs` daphne processes and, for more than one, the proxy."""

    def __init__(self, root: Path, tmp: Path, postgres: str, redis: str, webs: int) -> None:
        self.db = Database(root, tmp, postgres, redis)
        self.webs = [Web(root, self.db.env, tmp / f"daphne-{n}.log") for n in range(webs)]
        self.proxy: Proxy | None = None

    def start(self) -> dict[str, str]:
        tokens = self.db.create()
        for web in self.webs:
            web.start()
        if len(self.webs) > 1:
            self.proxy = Proxy(self.webs)
        return tokens

    @property
    def port(self) -> int:
        return self.proxy.port if self.proxy is not None else self.webs[0].port

    def logs(self) -> str:
        return "".join(web.log.read_text(errors="replace") for web in self.webs if web.log.exists())

    def stop(self) -> None:
        if self.proxy is not None:
            self.proxy.stop()
        for web in self.webs:
            web.stop()
        self.db.drop()


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


def settled(stack: Stack, client: Client) -> int:
    """Held hooks stored and waiting, or answered, or lost: none is still on its way."""
    return stack.db.awaiting() + len(client.answered) + len(client.failures)


def hold_all(stack: Stack, client: Client, waits: int) -> float:
    """Send the held hooks a batch at a time, each stored before the next; seconds."""
    start = time.monotonic()
    for batch in range(0, waits, BATCH):
        sent = min(waits, batch + BATCH)
        client.hold(range(batch, sent))
        with contextlib.suppress(RuntimeError):
            wait_for(lambda n=sent: settled(stack, client) >= n, 120, f"{sent} held calls")
    return time.monotonic() - start


def held_figures(stack: Stack, idle_rss: list[float], held: int) -> dict[str, Any]:
    """Each web process's memory and threads with all held; their CPU over a quiet while."""
    time.sleep(3)  # the last ones subscribe after they are stored
    cpu = [web.cpu_seconds() for web in stack.webs]
    time.sleep(IDLE_CPU_SECONDS)
    cpu = [web.cpu_seconds() - before for web, before in zip(stack.webs, cpu, strict=True)]
    held_rss = [web.rss_mib() for web in stack.webs]
    return {
        "idle_rss_mib": idle_rss,
        "held_rss_mib": held_rss,
        "kib_per_wait": (sum(held_rss) - sum(idle_rss)) * 1024 / max(held, 1),
        "threads": [web.status("Threads") for web in stack.webs],
        "idle_cpu_percent": [100 * seconds / IDLE_CPU_SECONDS for seconds in cpu],
        "redis": subscriptions(),
    }


def allowed_under_load(
    stack: Stack, client: Client, each: int, profile: Path | None
) -> dict[str, Any]:
    """50 agents' allowed hooks with all held, the most connections seen meanwhile."""
    peak = [stack.db.connections()]
    sampling = threading.Event()

    def sample() -> None:
        while not sampling.wait(0.2):
            with contextlib.suppress(psycopg.Error):
                peak.append(stack.db.connections())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    spy = None
    if profile is not None and stack.webs[0].process is not None:
        spy = py_spy(stack.webs[0].process.pid, 30, profile)
    allowed = client.allowed(AGENTS, each)
    sampling.set()
    sampler.join()
    if spy is not None:
        spy.wait()
    return allowed | {"pg_connections_max": max(peak)}


def measure(stack: Stack, tokens: dict[str, str], options: Any) -> dict[str, Any]:
    waits, decide, each = (50, 10, 4) if options.quick else (options.waits, 50, 20)
    client = Client(stack.port, tokens["agent"])
    try:
        warm = client.allowed(AGENTS // 5, 2)  # sessions and connections made, code loaded
        idle_rss = [web.rss_mib() for web in stack.webs]
        stored_s = hold_all(stack, client, waits)
        held_now = stack.db.awaiting()
        figures = held_figures(stack, idle_rss, held_now)
        allowed = allowed_under_load(stack, client, each, options.profile)
        decided = decide_some(stack, tokens["review"], client, decide)
        early = [use for use in client.answered if use not in decided["uses"]]
        bad = warm["bad"] + allowed["bad"]
        return figures | {
            "waits": waits,
            "webs": len(stack.webs),
            "held": held_now,
            "stored_s": stored_s,
            "client_failures": client.failures[:5],
            "client_failure_count": len(client.failures),
            "answered_early": len(early),
            "answered_early_sample": [verdict(client.answered[u][2])[1][:160] for u in early[:3]],
            "allowed_ms": allowed["ms"],
            "allowed_per_s": allowed["per_s"],
            "allowed_bad": len(bad),
            "allowed_bad_sample": bad[:3],
            "internal_errors": sum("internal error" in b for b in bad),
            "pg_connections_max": allowed["pg_connections_max"],
            "decided_ms": decided["ms"],
            "decision_request_ms": decided["request_ms"],
            "decided_not_allowed": decided["bad"],
            "too_many_clients": stack.logs().count("too many clients"),
        }
    finally:
        client.close()


def decide_some(stack: Stack, token: str, client: Client, count: int) -> dict[str, Any]:
    """Approve `count` held calls one after another, through the one address (with two
    web processes, through either); decision sent → hook answered (ms)."""
    rows = stack.db.sql(
        "SELECT id, tool_use_id FROM tools_app_toolcall WHERE status = 'awaiting_approval' "
        f"ORDER BY id DESC LIMIT {count}"
    )
    latencies, requests, bad, uses = [], [], 0, set()
    headers = {"Authorization": f"Bearer {token}"}
    url = f"http://127.0.0.1:{stack.port}"
    with httpx.Client(base_url=url, headers=headers, timeout=60, trust_env=False) as review:
        for call_id, use in rows:
            uses.add(use)
            start = time.perf_counter()
            answer = review.post(
                f"/api/tool-calls/{call_id}/decision",
                json={"decision": "approve"},
                headers={"Connection": "close"},  # a new connection: the proxy's next turn
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
    options.add_argument("--webs", type=int, default=1, help="web processes behind one address")
    options.add_argument("--root", type=Path, default=ROOT, help="the checkout to run")
    options.add_argument("--profile", type=Path, help="py-spy's collapsed stacks of (b) here")
    options.add_argument("--postgres", default="postgres://postgres@127.0.0.1:5432")
    options.add_argument("--redis", default="redis://127.0.0.1:6379/13")
    args = options.parse_args()
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # daphne inherits it too
    tmp = Path(tempfile.mkdtemp(prefix="bench-held-"))
    stack = Stack(args.root.resolve(), tmp, args.postgres, args.redis, args.webs)
    try:
        tokens = stack.start()
        results = measure(stack, tokens, args)
        results |= {"root": str(args.root), "commit": _commit(args.root), "load": loadavg()}
    except BaseException:
        print(stack.logs()[-3000:], file=sys.stderr)
        raise
    finally:
        stack.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    emit("bench_held_waits", results, tables(results), args.json)


def _commit(root: Path) -> str:
    found = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                           capture_output=True, text=True)  # fmt: skip
    return found.stdout.strip()


def tables(r: dict[str, Any]) -> list[str]:
    each = " + ".join
    rows = [
        ["web processes", r["webs"]],
        ["held waits (asked / awaiting approval)", f"{r['waits']} / {r['held']}"],
        ["time to store and hold them all (s)", r["stored_s"]],
        ["daphne RSS idle → all held (MiB)", _each(r["idle_rss_mib"], r["held_rss_mib"])],
        ["daphne RSS per held wait (KiB)", r["kib_per_wait"]],
        ["daphne threads while all held", each(str(n) for n in r["threads"])],
        ["daphne CPU while all held, quiet (%)", each(f"{c:.0f}" for c in r["idle_cpu_percent"])],
        ["Redis pub/sub channels while held", r["redis"]["channels"]],
        ["Redis pub/sub connections", r["redis"]["pubsub_connections"]],
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


def _each(before: list[float], after: list[float]) -> str:
    return " + ".join(f"{b:.0f} → {a:.0f}" for b, a in zip(before, after, strict=True))


def _pair(series: dict[str, float]) -> str:
    return f"{series['median']:.1f} / {series['p99']:.1f}" if series["n"] else "-"


if __name__ == "__main__":
    main()
