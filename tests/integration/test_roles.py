"""agentweb on PostgreSQL and Redis, one process per role as the systemd units start them
(deploy/systemd): two web processes, two tool workers (two "hosts", each with its own
queue), one notification worker and the clock. Calls go through both web processes; a
worker killed during a command, a web process killed while a hook waits and a second
clock lose nothing and run nothing twice."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import PROCESS_SLOT
from tests.helpers import git, processes_running, wait_gone
from tests.integration.test_mcp_web_processes import mcp_close, mcp_open, mcp_tools_status
from tests.integration.test_up import descendants, free_port

ROOT = Path(__file__).resolve().parents[2]
POSTGRES = os.environ.get("AGENTWEB_TEST_POSTGRES", "postgres://postgres@127.0.0.1:5432")
# A Redis database of this test process's own (1 up, by its slot: the suite's are 9 up):
# the hosts' queues have the same names in every cluster, and two test processes may
# each start one (`--dist load` can split this module), where one cluster's workers took
# the other's calls and each flushed the other's queues.
REDIS = os.environ.get("AGENTWEB_TEST_ROLES_REDIS", f"redis://127.0.0.1:6379/{1 + PROCESS_SLOT}")
NAME = f"agentweb_roles_{os.getpid()}"

pytestmark = pytest.mark.timeout(180)


class Role:
    """One unit's process: `manage.py serve ROLE ...` with the unit's environment."""

    def __init__(self, name: str, args: list[str], env: dict[str, str], logs: Path) -> None:
        self.name, self.args, self.env, self.log = name, args, env, logs / f"{name}.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> Role:
        handle = self.log.open("ab")
        env = {**self.env, "AGENTWEB_LIBRARY_LOG_LEVEL": "INFO"}  # Celery's "ready." line
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "serve", *self.args],
            cwd=ROOT, env=env, stdout=handle, stderr=handle, start_new_session=True,
        )  # fmt: skip
        return self

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def ready(self) -> bool:
        return "ready." in self.text()

    def pids(self) -> list[int]:
        assert self.process is not None
        return [self.process.pid, *descendants(self.process.pid)]

    def kill(self) -> None:
        """SIGKILL to every process of the unit, as systemd kills its cgroup."""
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        assert self.process is not None
        self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()


def wait_for(check: Callable[[], Any], what: str, timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.2)
    return found


def manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def sql(query: str, *params: Any) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(f"{POSTGRES}/{NAME}", autocommit=True) as connection:
        return connection.execute(query, params).fetchall()


def answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code < 500
    except httpx.HTTPError:
        return False


class Cluster:
    def __init__(self, env: dict[str, str], logs: Path, workspace: Path) -> None:
        self.env, self.logs, self.workspace = env, logs, workspace
        self.ports = [free_port(), free_port()]
        self.roles: dict[str, Role] = {}
        self.agent = self.review = ""

    def role(self, name: str, *args: str, **env: str) -> Role:
        self.roles[name] = Role(name, list(args), {**self.env, **env}, self.logs).start()
        return self.roles[name]

    def web(self, index: int) -> str:
        return f"http://127.0.0.1:{self.ports[index]}"

    def serving(self, index: int) -> bool:
        return answers(self.web(index) + "/login/")

    def api(self, index: int, method: str, path: str, token: str = "", **kw: Any) -> Any:
        headers = {"Authorization": f"Bearer {token or self.agent}"}
        answer = httpx.request(method, self.web(index) + path, headers=headers, timeout=60, **kw)
        assert answer.status_code < 300, answer.text
        return answer.json()

    def session(self, index: int, policy: str = "default") -> int:
        body = {"task": "roles", "repo": str(self.workspace), "policy": policy}
        session_id = int(self.api(index, "POST", "/api/sessions", json=body)["id"])
        path = f"/api/sessions/{session_id}"
        wait_for(lambda: self.api(index, "GET", path)["status"] == "running", "the clone")
        return session_id

    def call(self, index: int, session_id: int, tool: str, wait: int = 0, **args: Any) -> Any:
        path = f"/api/sessions/{session_id}/tool-calls" + (f"?wait={wait}" if wait else "")
        return self.api(index, "POST", path, json={"tool": tool, "args": args})

    def final(self, index: int, call_id: int) -> Any:
        return self.api(index, "GET", f"/api/tool-calls/{call_id}?wait=30")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    psycopg = pytest.importorskip("psycopg")
    redis = pytest.importorskip("redis")
    try:
        with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True, connect_timeout=3) as pg:
            pg.execute(f"DROP DATABASE IF EXISTS {NAME} WITH (FORCE)")
            pg.execute(f"CREATE DATABASE {NAME}")
    except psycopg.OperationalError as exc:
        pytest.skip(f"no PostgreSQL at {POSTGRES}: {exc}")
    broker = redis.Redis.from_url(REDIS, socket_connect_timeout=2)
    try:
        broker.flushdb()
    except redis.RedisError as exc:
        pytest.skip(f"no Redis at {REDIS}: {exc}")
    root = tmp_path_factory.mktemp("roles")
    try:
        yield from _run(root)
    finally:
        broker.flushdb()
        with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as pg:
            pg.execute(f"DROP DATABASE IF EXISTS {NAME} WITH (FORCE)")


def _env(root: Path) -> dict[str, str]:
    """The settings every host reads (deploy/agentweb.env), for this test's own database,
    Redis database, queues and channel prefix."""
    own = {"DJANGO_SETTINGS_MODULE", "REDIS_URL", "DATABASE_URL"}
    return {
        **{key: value for key, value in os.environ.items() if key not in own},
        "DATABASE_URL": f"{POSTGRES}/{NAME}",
        "REDIS_URL": REDIS,
        "DJANGO_SECRET_KEY": "roles-test-" + "k" * 50,
        "AGENTWEB_VAR": str(root / "var"),
        "AGENTWEB_WORKSPACES": str(root / "workspaces"),
        "AGENTWEB_QUEUE": NAME,
        "AGENTWEB_CHANNEL_PREFIX": NAME,
        "AGENTWEB_DEMO": "0",
        "AGENTWEB_CONCURRENCY": "2",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
    }


def _run(root: Path) -> Iterator[Cluster]:
    workspace = root / "repo"
    workspace.mkdir()
    (workspace / "README.md").write_text("# roles\n")
    (workspace / "NOTES.md").write_text("notes\n")
    git(workspace, "init", "-q", "-b", "main")
    git(workspace, "-c", "user.email=t@e.x", "-c", "user.name=T", "add", "-A")
    git(workspace, "-c", "user.email=t@e.x", "-c", "user.name=T", "commit", "-qm", "init")
    (root / "logs").mkdir()
    cluster = Cluster(_env(root), root / "logs", workspace)
    manage(cluster.env, "migrate", "--noinput")
    for index in (0, 1):
        cluster.role(f"web{index}", "web", "--port", str(cluster.ports[index]))
    cluster.role("worker-a", "worker", AGENTWEB_WORKER_QUEUE="host.a")
    cluster.role("worker-b", "worker", AGENTWEB_WORKER_QUEUE="host.b")
    cluster.role("notify", "notify")
    cluster.role("clock", "clock")
    try:
        _people(cluster, root)
        for index in (0, 1):
            wait_for(partial(cluster.serving, index), f"web {index}", 60)
        for name in ("worker-a", "worker-b", "notify"):
            wait_for(cluster.roles[name].ready, name, 60)
        yield cluster
    finally:
        for role in cluster.roles.values():
            role.stop()


def _people(cluster: Cluster, root: Path) -> None:
    env = {**cluster.env, "DJANGO_SUPERUSER_PASSWORD": "roles-admin-pw"}
    manage(
        env, "createsuperuser", "--noinput", "--username", "admin", "--email", "admin@example.com"
    )
    cluster.agent = manage(env, "create_api_token", "admin").split()[-1]
    cluster.review = manage(env, "create_api_token", "admin", "--scope", "review").split()[-1]
    rule = {"tool": "read_file", "args": {"path": "*.md"}, "decision": "require_approval"}
    policy = {"name": "quick", "approval_timeout_seconds": 3, "rules": [{**rule, "reason": "ask"}]}
    (root / "quick.json").write_text(json.dumps(policy))
    manage(cluster.env, "import_policy", str(root / "quick.json"))


def test_calls_through_both_web_processes_run_on_the_sessions_host(cluster: Cluster) -> None:
    session_id = cluster.session(0)
    first = cluster.call(1, session_id, "read_file", wait=30, path="README.md")
    second = cluster.call(0, session_id, "list_files", wait=30, path=".")
    assert (first["status"], second["status"]) == ("succeeded", "succeeded")
    assert "# roles" in json.dumps(first["result"])
    (queue,) = sql("SELECT worker_queue FROM tools_app_agentsession WHERE id = %s", session_id)
    assert queue[0] in ("host.a", "host.b")


def test_a_worker_killed_during_a_command_fails_the_call_and_never_runs_it_again(
    cluster: Cluster,
) -> None:
    session_id = cluster.session(1)
    marker = f"sleep 27.{os.getpid()}"
    call = cluster.call(1, session_id, "run_command", command=f"echo x >> counter.txt; {marker}")
    wait_for(lambda: processes_running(marker), "the command to run")
    (host,) = [
        name
        for name in ("worker-a", "worker-b")
        if any(marker in _cmdline(pid) for pid in cluster.roles[name].pids())
    ]
    cluster.roles[host].kill()
    wait_gone(marker, timeout=10)  # SIGKILL lands as each process next runs, not at os.kill
    failed = cluster.final(0, call["id"])  # recovered by the other worker's sweep
    assert failed["status"] == "failed" and "was not run again" in failed["result"], failed
    restarted = cluster.role(
        host, "worker", AGENTWEB_WORKER_QUEUE=cluster.roles[host].env["AGENTWEB_WORKER_QUEUE"]
    )  # as Restart=always does
    wait_for(restarted.ready, "the restarted worker", 60)
    after = cluster.call(0, session_id, "run_command", wait=30, command="echo y > after.txt")
    assert after["status"] == "succeeded", after
    workspace = Path(cluster.api(0, "GET", f"/api/sessions/{session_id}")["workspace"])
    assert not (workspace / "counter.txt").exists()  # killed, never run again
    assert (workspace / "after.txt").read_text() == "y\n"
    assert cluster.api(0, "GET", f"/api/tool-calls/{call['id']}")["status"] == "failed"


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _hook(cluster: Cluster, index: int, body: dict[str, Any], out: list[Any]) -> None:
    headers = {"Authorization": f"Bearer {cluster.agent}"}
    url = cluster.web(index) + "/api/hooks/claude-code"
    try:
        out.append(httpx.post(url, json=body, headers=headers, timeout=60).json())
    except httpx.HTTPError as exc:
        out.append(exc)


def test_a_hook_retried_on_the_other_web_process_joins_its_call_and_gets_the_decision(
    cluster: Cluster,
) -> None:
    body = {
        "session_id": f"cc-roles-{os.getpid()}",
        "cwd": "/home/alice/project",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "make deploy"},
        "tool_use_id": "toolu_roles_1",
    }
    first: list[Any] = []
    threading.Thread(target=_hook, args=(cluster, 0, body, first), daemon=True).start()

    def inbox() -> list[Any]:
        return list(cluster.api(1, "GET", "/api/approvals", cluster.review)["items"])

    (held,) = wait_for(inbox, "the hook's call in the inbox")
    cluster.roles["web0"].kill()
    wait_for(lambda: first, "the first hook request to end")
    assert isinstance(first[0], httpx.HTTPError)  # its web process died under it
    retry: list[Any] = []
    threading.Thread(target=_hook, args=(cluster, 1, body, retry), daemon=True).start()
    time.sleep(1)  # the retry reaches web 1 and is held (nothing to poll: it only waits)
    assert [item["id"] for item in inbox()] == [held["id"]]
    decision = {"decision": "approve"}
    path = f"/api/tool-calls/{held['id']}/decision"
    cluster.api(1, "POST", path, cluster.review, json=decision)
    answer = wait_for(lambda: retry, "the retried hook's answer")[0]
    assert answer["hookSpecificOutput"]["permissionDecision"] == "allow", answer
    calls = sql("SELECT count(*) FROM tools_app_toolcall WHERE tool_use_id = %s", "toolu_roles_1")
    assert calls == [(1,)]
    restarted = cluster.role("web0", "web", "--port", str(cluster.ports[0]))
    wait_for(partial(cluster.serving, 0), "web 0 again", 60)
    assert restarted.process is not None


def test_an_mcp_session_opened_on_one_web_process_is_served_and_closed_by_the_other(
    cluster: Cluster,
) -> None:
    urls = [cluster.web(index) + "/mcp" for index in (0, 1)]
    key = mcp_open(urls[0], cluster.agent)
    assert [mcp_tools_status(url, cluster.agent, key) for url in urls * 2] == [200] * 4
    assert sql("SELECT count(*) FROM tools_app_mcpconnection WHERE session_key = %s", key) == [(1,)]
    assert mcp_close(urls[1], cluster.agent, key) == 200
    assert [mcp_tools_status(url, cluster.agent, key) for url in urls] == [404, 404]


def test_a_second_clock_stands_by_and_no_sweep_runs_twice(cluster: Cluster) -> None:
    second = cluster.role("clock-2", "clock")
    wait_for(lambda: "stands by" in second.text(), "the second clock standing by", 60)
    session_id = cluster.session(0, policy="quick")
    call = cluster.call(1, session_id, "read_file", path="NOTES.md")  # a person's, in 3 s
    assert cluster.final(0, call["id"])["status"] == "expired"  # by the sweep, every 5 s
    assert "Sending due task" not in second.text()
    cluster.roles["clock"].stop()  # the first clock goes: the second takes over at once
    wait_for(lambda: "holds the clock lock" in second.text(), "the second clock taking over")
    later = cluster.call(1, session_id, "read_file", path="README.md")
    assert cluster.final(0, later["id"])["status"] == "expired"
    query = (
        "SELECT data->>'tool_call', count(*) FROM tools_app_event WHERE session_id = %s "
        "AND type = 'tool_call.expired' GROUP BY 1"
    )
    expiries = wait_for(lambda: len(rows := sql(query, session_id)) == 2 and rows, "2 expiries")
    assert sorted(count for _, count in expiries) == [1, 1], expiries
