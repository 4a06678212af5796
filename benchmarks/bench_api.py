"""The whole stack: tool calls through the REST API and a real Celery worker.

Starts `manage.py up` (embedded Redis on a unix socket, SQLite, a Celery worker with
beat, daphne on a free 127.0.0.1 port) with a private `AGENTWEB_VAR`, then measures
from this process with httpx:

(a) allowed read_file calls, `POST /api/sessions/{id}/tool-calls?wait=30`: N sequential,
    and N shared by K concurrent clients (threads): calls/s, median and p99 latency, and
    where the time goes (from the ToolCall timestamps: queue + evaluation, execution,
    and the rest, which is the API: receive, enqueue, and the `?wait` polling);
(b) decision → execution start (ToolCall.decided_at → started_at) with 1, 10 and 100
    sessions each holding a write_file to `.env` (needs approval), approved one after
    another through `POST /api/tool-calls/{id}/decision` with a review token.

The timestamps are read with the Django ORM in this process, on the same SQLite file.
Everything it starts is stopped at the end (SIGINT to `up`, which stops its children),
and it checks that none of those processes is left.

Run: .venv/bin/python benchmarks/bench_api.py [--quick] [--concurrency 4]
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import _common  # noqa: F401 - puts the project root on sys.path
import httpx
from _common import ROOT, emit, markdown_table, parser, summary

STACK_START_TIMEOUT = 90.0
WAIT = 30


# --- the stack ----------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def stack_env(var: Path) -> dict[str, str]:
    """This machine's environment minus anything that points at another database or Redis."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTWEB_", "DJANGO_"))}
    for key in ("DATABASE_URL", "REDIS_URL", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        env.pop(key, None)
        env.pop(key.lower(), None)
    env |= {
        "AGENTWEB_VAR": str(var),
        "DATABASE_URL": f"sqlite:///{var / 'agentweb.sqlite3'}",
        "DJANGO_SETTINGS_MODULE": "agentweb.settings",
        "DJANGO_DEBUG": "0",
        "AGENTWEB_LOG_LEVEL": "WARNING",
        "AGENTWEB_LIBRARY_LOG_LEVEL": "INFO",  # Celery's `succeeded in` lines: bench_runtime's
        "NO_PROXY": "127.0.0.1,localhost",
    }
    return env


def setup_django(env: dict[str, str]) -> dict[str, str]:
    """Point this process at the stack's database, migrate it, and make the two roles.

    Returns the tokens: `agent` (an operator's agent token) and `review` (a reviewer's).
    """
    os.environ.update({k: env[k] for k in ("AGENTWEB_VAR", "DATABASE_URL",
                                          "DJANGO_SETTINGS_MODULE", "DJANGO_DEBUG")})  # fmt: skip
    os.environ.pop("REDIS_URL", None)
    import django

    django.setup()
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from django.db import connection

    from tools_app import services

    call_command("migrate", interactive=False, verbosity=0)
    operator = User.objects.create_user("olga")
    reviewer = User.objects.create_user("rita")
    reviewer.groups.add(Group.objects.get_or_create(name="reviewers")[0])
    tokens = {
        "agent": services.api_token_create(user=operator, scope="agent"),
        "review": services.api_token_create(user=reviewer, scope="review"),
    }
    connection.close()
    return tokens


def descendants(root: int) -> set[int]:
    """Every live process below `root`, from /proc (children started in new sessions too)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                stat = (entry / "stat").read_text()
                parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found: set[int] = set()
    frontier = [root]
    while frontier:
        pid = frontier.pop()
        children = [child for child, parent in parents.items() if parent == pid]
        found.update(children)
        frontier += children
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


class Stack:
    """`manage.py up` in its own process group, its log in a file."""

    def __init__(
        self, var: Path, port: int, concurrency: int, env: dict[str, str], root: Path = ROOT
    ) -> None:
        self.var, self.port, self.env, self.root = var, port, env, root
        self.concurrency = concurrency
        self.log = var.parent / "up.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.seen: set[int] = set()

    def start(self, token: str) -> None:
        command = [sys.executable, "manage.py", "up", "--port", str(self.port),
                   "--concurrency", str(self.concurrency)]  # fmt: skip
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                command, cwd=self.root, env=self.env, stdin=subprocess.DEVNULL,
                stdout=log, stderr=log, start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + STACK_START_TIMEOUT
        with client(self.url, token) as http:
            while True:
                if self.process.poll() is not None:
                    raise RuntimeError("manage.py up exited:\n" + self.tail())
                with contextlib.suppress(httpx.HTTPError):
                    if http.get("/api/sessions").status_code == 200:
                        return
                if time.monotonic() > deadline:
                    raise RuntimeError("the stack did not answer in time:\n" + self.tail())
                time.sleep(0.2)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""

    def note_processes(self) -> None:
        if self.process is not None:
            self.seen |= descendants(self.process.pid)

    def stop(self) -> list[int]:
        """SIGINT to `up` (Ctrl-C), then make sure nothing it started is left; returns
        the pids that had to be killed."""
        if self.process is None:
            return []
        self.note_processes()
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(timeout=40)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        left = sorted(pid for pid in self.seen if alive(pid))
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return left


@contextlib.contextmanager
def client(base_url: str, token: str) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(
        base_url=base_url, headers=headers, timeout=WAIT + 30, trust_env=False
    ) as http:
        yield http


def make_repo(root: Path, files: int) -> Path:
    """A small git repository: `files` one-line text files, a README and a `.env`."""
    repo = root / "repo"
    (repo / "files").mkdir(parents=True)
    for i in range(files):
        (repo / "files" / f"f{i:04d}.txt").write_text(f"line one of file {i}\nline two\n")
    (repo / "README.md").write_text("# bench\n")
    (repo / ".env").write_text("SECRET=1\n")
    git = ["git", "-C", str(repo), "-c", "user.email=b@example.com", "-c", "user.name=bench"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "init"], check=True)
    return repo


# --- measurements ---------------------------------------------------------------------------


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.05)


def start_sessions(http: httpx.Client, repo: Path, count: int) -> list[int]:
    """`count` sessions for an external agent; returns once all are cloned (running)."""
    from tools_app.models import AgentSession

    ids = []
    for i in range(count):
        answer = http.post("/api/sessions", json={"task": f"bench {i}", "repo": str(repo)})
        answer.raise_for_status()
        ids.append(answer.json()["id"])
    wait_until(
        lambda: AgentSession.objects.filter(pk__in=ids, status="running").count() == len(ids),
        60 + count,
        f"{count} sessions to be cloned",
    )
    return ids


class Files:
    """Distinct file names, so that no read is answered from the session's cache."""

    def __init__(self) -> None:
        self.next, self.lock = 0, threading.Lock()

    def take(self) -> str:
        with self.lock:
            self.next += 1
            return f"files/f{self.next - 1:04d}.txt"


def read_calls(
    url: str, token: str, session: int, files: Files, total: int, clients: int
) -> dict[str, Any]:
    """`total` read_file calls shared by `clients` threads; latencies in ms, call ids."""
    latencies: list[float] = []
    ids: list[int] = []
    failures: list[str] = []
    remaining = iter(range(total))
    lock = threading.Lock()

    def worker() -> None:
        with client(url, token) as http:
            while True:
                with lock:
                    if next(remaining, None) is None:
                        return
                body = {"tool": "read_file", "args": {"path": files.take()}}
                start = time.perf_counter()
                answer = http.post(f"/api/sessions/{session}/tool-calls?wait={WAIT}", json=body)
                elapsed = (time.perf_counter() - start) * 1000
                data = answer.json()
                with lock:
                    latencies.append(elapsed)
                    ids.append(data.get("id", 0))
                    if data.get("status") != "succeeded":
                        failures.append(f"{answer.status_code} {str(data)[:200]}")

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - start
    if failures:
        raise RuntimeError(f"{len(failures)} calls did not succeed, e.g. {failures[0]}")
    return {"calls": total, "clients": clients, "wall_s": wall, "per_s": total / wall,
            "latency_ms": summary(latencies), "phases_ms": phases(ids, latencies)}  # fmt: skip


def phases(ids: list[int], latencies: list[float]) -> dict[str, Any]:
    """Medians of where each call's time went, from its timestamps (ms)."""
    from tools_app.models import ToolCall

    rows = {c.pk: c for c in ToolCall.objects.filter(pk__in=ids)}
    queue, run, api = [], [], []
    for call_id, latency in zip(ids, latencies, strict=True):
        call = rows[call_id]
        assert call.decided_at and call.started_at and call.finished_at
        queue.append((call.started_at - call.created_at).total_seconds() * 1000)
        run.append((call.finished_at - call.started_at).total_seconds() * 1000)
        api.append(latency - (call.finished_at - call.created_at).total_seconds() * 1000)
    return {"stored_to_started": summary(queue), "started_to_finished": summary(run),
            "api_rest": summary(api)}  # fmt: skip


def approvals(
    http: httpx.Client, review: httpx.Client, repo: Path, count: int, rounds: int
) -> dict[str, Any]:
    """`count` sessions each with one call awaiting approval, approved one after another by
    a reviewer; `rounds` times over (the same sessions). Returns decided→started in ms."""
    sessions = start_sessions(http, repo, count)
    gaps: list[float] = []
    decide_ms: list[float] = []
    for round_ in range(rounds):
        ids = [post_protected_write(http, session, round_) for session in sessions]
        gaps += approve_all(review, ids, decide_ms)
    return {"sessions": count, "rounds": rounds, "decided_to_started_ms": summary(gaps),
            "decision_request_ms": summary(decide_ms)}  # fmt: skip


def post_protected_write(http: httpx.Client, session: int, round_: int) -> int:
    body = {"tool": "write_file", "args": {"path": ".env", "content": f"SECRET={round_}\n"}}
    answer = http.post(f"/api/sessions/{session}/tool-calls", json=body)
    answer.raise_for_status()
    return int(answer.json()["id"])


def approve_all(review: httpx.Client, ids: list[int], decide_ms: list[float]) -> list[float]:
    """Wait until every call awaits approval, approve each, wait until all ran."""
    from tools_app.models import ToolCall

    count = len(ids)
    waiting = ToolCall.objects.filter(pk__in=ids, status="awaiting_approval")
    wait_until(lambda: waiting.count() == count, 60 + count, "calls to await approval")
    for call_id in ids:
        start = time.perf_counter()
        answer = review.post(f"/api/tool-calls/{call_id}/decision", json={"decision": "approve"})
        decide_ms.append((time.perf_counter() - start) * 1000)
        answer.raise_for_status()
    done = ToolCall.objects.filter(pk__in=ids, status__in=ToolCall.FINAL_STATUSES)
    wait_until(lambda: done.count() == count, 60 + count, "approved calls to finish")
    calls = list(ToolCall.objects.filter(pk__in=ids))
    bad = [c for c in calls if c.status != "succeeded" or not c.started_at or not c.decided_at]
    if bad:
        raise RuntimeError(f"{len(bad)} approved calls did not succeed: {bad[0].result[:200]}")
    return [(c.started_at - c.decided_at).total_seconds() * 1000 for c in calls]  # type: ignore[operator]


def publish_cost(var: Path, count: int) -> dict[str, Any]:
    """What publishing one event to its two groups (session, approvals) costs (ms): with
    one `async_to_sync` hop for both group_sends (until issue 14), one hop per group
    (before that), and on one long-lived event loop (tools_app/publisher.py, now)."""
    import asyncio

    from asgiref.sync import async_to_sync
    from channels_redis.core import RedisChannelLayer

    layer = RedisChannelLayer(hosts=[f"unix://{var / 'redis.sock'}"])
    message = {"type": "session.event", "event": {"type": "bench", "seq": 0}}
    groups = ("bench.nobody", "bench.approvals")

    async def send_both() -> None:
        for group in groups:
            await layer.group_send(group, message)

    def hop_per_group() -> None:
        for group in groups:
            async_to_sync(layer.group_send)(group, message)

    samples: dict[str, list[float]] = {"one_hop_ms": [], "hop_per_group_ms": []}
    for _ in range(count):  # interleaved, so that noise spreads evenly
        for name, run in (
            ("one_hop_ms", async_to_sync(send_both)),
            ("hop_per_group_ms", hop_per_group),
        ):
            start = time.perf_counter()
            run()
            samples[name].append((time.perf_counter() - start) * 1000)

    async def one_loop() -> list[float]:
        found = []
        for _ in range(count):
            start = time.perf_counter()
            await send_both()
            found.append((time.perf_counter() - start) * 1000)
        return found

    samples["one_loop_ms"] = asyncio.run(one_loop())
    return {name: summary(values) for name, values in samples.items()}


def measure(stack: Stack, tokens: dict[str, str], repo: Path, quick: bool) -> dict[str, Any]:
    sequential, concurrent, clients = (30, 40, (4,)) if quick else (200, 400, (4, 16))
    # (sessions awaiting approval at once, rounds): at least 20 samples where cheap.
    waiting_sessions = ((1, 5), (10, 1)) if quick else ((1, 20), (10, 3), (100, 1))
    files = Files()
    results: dict[str, Any] = {"concurrency": stack.concurrency, "throughput": [],
                               "approval": []}  # fmt: skip
    with client(stack.url, tokens["agent"]) as http, client(stack.url, tokens["review"]) as review:
        session = start_sessions(http, repo, 1)[0]
        read_calls(stack.url, tokens["agent"], session, files, 10, 1)  # warm up the worker
        stack.note_processes()
        results["throughput"].append(
            read_calls(stack.url, tokens["agent"], session, files, sequential, 1)
        )
        for k in clients:
            results["throughput"].append(
                read_calls(stack.url, tokens["agent"], session, files, concurrent, k)
            )
        for count, rounds in waiting_sessions:
            results["approval"].append(approvals(http, review, repo, count, rounds))
    results["publish"] = publish_cost(stack.var, 50 if quick else 300)
    return results


def main() -> None:
    arguments = parser(__doc__.splitlines()[0])
    arguments.add_argument(
        "--concurrency", type=int, default=int(os.environ.get("AGENTWEB_CONCURRENCY", "4")),
        help="Celery worker processes (`up --concurrency`, default AGENTWEB_CONCURRENCY or 4)",
    )  # fmt: skip
    options = arguments.parse_args()
    if shutil.which("git") is None:
        sys.exit("bench_api needs git (to make the repository the sessions clone)")
    tmp = Path(tempfile.mkdtemp(prefix="bench-api-"))
    stack: Stack | None = None
    try:
        var = tmp / "var"
        env = stack_env(var)
        repo = make_repo(tmp, 1100)
        tokens = setup_django(env)
        stack = Stack(var, free_port(), options.concurrency, env)
        stack.start(tokens["agent"])
        results = measure(stack, tokens, repo, options.quick)
    except BaseException:
        if stack is not None:
            print(stack.tail(), file=sys.stderr)
        raise
    finally:
        left = stack.stop() if stack is not None else []
        shutil.rmtree(tmp, ignore_errors=True)
        if left:
            print(f"warning: killed {len(left)} processes left after `up` stopped: {left}",
                  file=sys.stderr)  # fmt: skip
    results["leftover_processes"] = left
    emit("bench_api", results, tables(results), options.json)


def tables(results: dict[str, Any]) -> list[str]:
    rows = []
    for run in results["throughput"]:
        lat, ph = run["latency_ms"], run["phases_ms"]
        rows.append(
            [f"{run['clients']} client{'s' if run['clients'] > 1 else ''}", run["calls"],
             run["per_s"], lat["median"], lat["p99"], ph["stored_to_started"]["median"],
             ph["started_to_finished"]["median"], ph["api_rest"]["median"]]
        )  # fmt: skip
    first = markdown_table(
        ["read_file via API + worker", "calls", "calls/s", "median ms", "p99 ms",
         "stored→started ms", "started→finished ms", "rest (API, polling) ms"],
        rows,
    )  # fmt: skip
    second = markdown_table(
        ["sessions awaiting approval", "approvals", "decided→started median ms", "p99 ms",
         "decision request median ms"],
        [
            [run["sessions"], run["decided_to_started_ms"]["n"],
             run["decided_to_started_ms"]["median"],
             run["decided_to_started_ms"]["p99"], run["decision_request_ms"]["median"]]
            for run in results["approval"]
        ],
    )  # fmt: skip
    publish = results["publish"]
    third = markdown_table(
        ["publishing one event to its two groups", "median ms", "p99 ms"],
        [
            [label, publish[key]["median"], publish[key]["p99"]]
            for label, key in (
                ("one async_to_sync hop for both group_sends (until issue 14)", "one_hop_ms"),
                ("one async_to_sync hop per group (before that)", "hop_per_group_ms"),
                ("both on one long-lived event loop (events.publish now)", "one_loop_ms"),
            )
        ],
    )
    worker = f"Celery prefork concurrency {results['concurrency']}"
    return [
        f"Allowed tool calls through the API and the worker ({worker}; medians of phases)"
        "\n\n" + first,
        "Approval to execution: ToolCall.decided_at → started_at\n\n" + second,
        "Event publishing (the stack's embedded Redis, unix socket)\n\n" + third,
    ]


if __name__ == "__main__":
    main()
