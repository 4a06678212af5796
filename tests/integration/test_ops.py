"""Operators' endpoints through the real stack: daphne, a Celery worker and a Redis that
these tests own (a private unix socket, never the machine's Redis), so that they can stop
it. `/readyz` fails within seconds of Redis or every tool worker stopping and recovers
after; `/metrics` moves by exact values as a scripted session runs."""

from __future__ import annotations

import json
import socket
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from subprocess import Popen
from typing import Any

import httpx
import pytest
from django.contrib.auth.models import User
from prometheus_client.parser import text_string_to_metric_families

from tests.browser.server import Daphne, free_port
from tests.helpers import Worker
from tests.integration.agent_helpers import done, script, tool, wait_status
from tools_app import services
from tools_app.live import redis_server
from tools_app.models import ToolCall

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.sandbox,
]

TOKEN = "metrics-token-for-tests"
Series = dict[tuple[str, frozenset[tuple[str, str]]], float]


@dataclass
class Ops:
    """A stack of its own: Redis on a private socket, one tool worker, daphne."""

    env: dict[str, str]
    folder: Path
    redis: Popen[bytes]
    worker: Worker
    web: Daphne
    last_readiness: dict[str, Any] = field(default_factory=dict)

    @property
    def socket(self) -> Path:
        return self.folder / "redis.sock"

    def start_redis(self) -> None:
        self.redis = redis_server.start_embedded(self.socket, self.folder)

    def stop_redis(self) -> None:
        self.redis.terminate()
        self.redis.wait(timeout=10)

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return httpx.get(f"{self.web.url}{path}", timeout=10, **kwargs)

    def api(self, token: str) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"}
        return httpx.Client(base_url=f"{self.web.url}/api", headers=headers, timeout=30)

    def series(self) -> Series:
        answer = self.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
        assert answer.status_code == 200, answer.text
        found: Series = {}
        for family in text_string_to_metric_families(answer.text):
            for sample in family.samples:
                found[(sample.name, frozenset(sample.labels.items()))] = sample.value
        return found


@pytest.fixture(scope="module")
def ops(services_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ops]:
    folder = tmp_path_factory.mktemp("ops")
    redis = redis_server.start_embedded(folder / "redis.sock", folder)
    env = {
        **services_env,
        "REDIS_URL": f"unix://{folder / 'redis.sock'}",
        "PROMETHEUS_MULTIPROC_DIR": str(folder / "metrics"),
        "AGENTWEB_METRICS_TOKEN": TOKEN,
    }
    queue = env["AGENTWEB_QUEUE"]
    queues = f"{queue},{env['AGENTWEB_WORKER_QUEUE']},{queue}.notify"
    worker = Worker(env, queues, folder / "worker.log")
    worker.start()
    web = Daphne(env, folder / "daphne.log")
    web.start()
    stack = Ops(env, folder, redis, worker, web)
    yield stack
    web.stop()
    worker.stop()
    stack.stop_redis()


def value(series: Series, name: str, **labels: str) -> float:
    return series.get((name, frozenset(labels.items())), 0.0)


def readiness(ops: Ops) -> tuple[int, dict[str, Any]]:
    answer = ops.get("/readyz")
    return answer.status_code, answer.json()


def until(check: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, f"not within {timeout:g} s: {what}"
        time.sleep(0.1)
    return found


def ready(ops: Ops) -> bool:
    status, body = readiness(ops)
    ops.last_readiness = body  # what a wait that times out reports
    return status == 200


def until_ready(ops: Ops, timeout: float, what: str) -> None:
    try:
        until(lambda: ready(ops), timeout, what)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; /readyz said {ops.last_readiness}") from None


def failing(ops: Ops, check: str) -> dict[str, Any] | None:
    status, body = readiness(ops)
    return body if status == 503 and not body["checks"][check]["ok"] else None


def test_metrics_move_by_exact_values_as_a_scripted_session_runs(
    ops: Ops, creator: User, reviewer: User, workspace: Path, tmp_path: Path
) -> None:
    until_ready(ops, 60, "ready")
    before = ops.series()
    plan = script(
        tmp_path,
        [
            tool("read_file", path="README.md"),
            tool("run_command", command="seq 1 5000 > gen.txt"),  # over 500 lines: refused
            tool("write_file", path="package.json", content="{}\n"),  # protected: a person
            done(),
        ],
    )
    alice = ops.api(services.api_token_create(user=creator, scope="agent"))
    rita = ops.api(services.api_token_create(user=reviewer, scope="review"))
    started = alice.post("/sessions", json={"task": "t", "repo": str(workspace), "model": plan})
    assert started.status_code == 201, started.text
    session_id = started.json()["id"]
    waiting = until(
        lambda: ToolCall.objects.filter(session_id=session_id, status="awaiting_approval").first(),
        60,
        "the write waiting for a person",
    )
    during = ops.series()
    assert (
        value(during, "agentweb_tool_calls_waiting")
        == value(before, "agentweb_tool_calls_waiting") + 1
    )

    held = rita.get(f"/tool-calls/{waiting.pk}", params={"wait": 0.3}).json()
    assert held["status"] == "awaiting_approval"
    denied = rita.post(f"/tool-calls/{waiting.pk}/decision", json={"decision": "deny"})
    assert denied.status_code == 200, denied.text
    assert rita.get(f"/tool-calls/{waiting.pk}", params={"wait": 5}).json()["status"] == "denied"
    assert wait_status(session_id).status == "done"
    ops.worker.wait_idle()
    hook_tool = hook_round_trip(ops, alice)
    after = ops.series()

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    ended = Counter(
        [
            ("read_file", "allow", "succeeded"),
            ("run_command", "allow", "succeeded"),
            ("write_file", "require_approval", "denied"),
            (hook_tool, "allow", "succeeded"),  # the gateway's Bash: run_command too
        ]
    )
    for (name, verdict, status), times in ended.items():
        labels = {"tool": name, "verdict": verdict, "status": status}
        assert moved("agentweb_tool_calls_total", **labels) == times, labels
    assert moved("agentweb_sandbox_refusals_total") == 1
    assert moved("agentweb_decision_wait_seconds_count", decision="deny") == 1
    assert moved("agentweb_decision_wait_seconds_sum", decision="deny") > 0
    assert moved("agentweb_wait_seconds_count", final="no") == 1
    assert moved("agentweb_wait_seconds_count", final="yes") == 1
    assert moved("agentweb_wait_seconds_sum", final="no") >= 0.3
    assert moved("agentweb_hook_seconds_count", answer="allow") == 1
    assert moved("agentweb_hook_seconds_count", answer="none") == 1  # the PostToolUse
    assert value(after, "agentweb_tool_calls_waiting") == value(
        before, "agentweb_tool_calls_waiting"
    )
    assert value(after, "agentweb_tool_workers_live") == 1
    assert value(after, "agentweb_queue_depth", queue=queue(ops)) == 0
    assert value(after, "agentweb_deliveries_failed") == 0


def hook_round_trip(ops: Ops, alice: httpx.Client) -> str:
    """Alice's Claude Code runs `ls` through the hook: allowed, then reported done."""
    event = {
        "session_id": "cc-ops", "cwd": "/home/alice/project", "tool_name": "Bash",
        "tool_input": {"command": "ls"}, "tool_use_id": "toolu_ops", "permission_mode": "default",
    }  # fmt: skip
    pre = alice.post("/hooks/claude-code", json={**event, "hook_event_name": "PreToolUse"})
    assert pre.json()["hookSpecificOutput"]["permissionDecision"] == "allow", pre.text
    post = {**event, "hook_event_name": "PostToolUse", "tool_response": {"stdout": "a\n"}}
    assert alice.post("/hooks/claude-code", json=post).status_code == 200
    call = ToolCall.objects.get(tool_use_id="toolu_ops")
    assert call.status == "succeeded", call.status
    return call.tool


def test_a_posts_body_is_read_by_agentweb_not_first_by_the_web_servers_twisted(
    ops: Ops, creator: User
) -> None:
    """twisted parsed a POST form of its own before daphne handed Django the body
    (`ops/daphne_requests.py`): a hook event labelled multipart that it could not parse got
    its bare 400, which Claude Code takes for a non-blocking error, and the tool ran. Now
    agentweb reads it and denies it, saying why."""
    token = services.api_token_create(user=creator, scope="agent")
    multipart = "multipart/form-data; boundary=x"
    headers = {"Authorization": f"Bearer {token}", "Content-Type": multipart}
    hook = f"{ops.web.url}/api/hooks/claude-code"
    answer = httpx.post(hook, content=b"not a part", headers=headers, timeout=30)
    assert answer.status_code == 200, answer.text
    decision = answer.json()["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny"
    assert "not valid JSON" in decision["permissionDecisionReason"], decision
    assert not ToolCall.objects.exists()


def test_readyz_fails_within_seconds_of_every_worker_or_redis_stopping_and_recovers(
    ops: Ops, creator: User, workspace: Path
) -> None:
    until_ready(ops, 60, "ready once the worker beats")
    assert readiness(ops)[1] == {
        "ready": True,
        "checks": {name: {"ok": True} for name in ("database", "redis", "workers", "sandbox")},
    }

    ops.worker.kill()  # SIGKILL: no goodbye, its heartbeat just stops
    body = until(lambda: failing(ops, "workers"), 15, "/readyz failing without a worker")
    assert body["checks"]["workers"] == {"ok": False, "reason": "no live tool worker"}
    assert body["checks"]["database"] == body["checks"]["redis"] == {"ok": True}
    queued = queue_depth_while_nobody_consumes(ops, creator, workspace)
    assert queued == 1

    ops.worker.start()
    until_ready(ops, 60, "/readyz ready again with the worker back")
    until(lambda: value(ops.series(), "agentweb_queue_depth", queue=queue(ops)) == 0, 30, "drained")

    ops.stop_redis()
    body = until(lambda: failing(ops, "redis"), 10, "/readyz failing without Redis")
    assert body["checks"]["redis"] == {"ok": False, "reason": "Redis does not answer"}
    assert body["checks"]["database"] == {"ok": True}
    assert ops.get("/healthz").json() == {"alive": True}  # alive, only not ready
    says_nothing_of_the_installation(ops)

    ops.start_redis()
    until_ready(ops, 90, "/readyz ready again once Redis is back")


def queue(ops: Ops) -> str:
    return ops.env["AGENTWEB_QUEUE"]


def queue_depth_while_nobody_consumes(ops: Ops, creator: User, repo: Path) -> float:
    """A session started with no worker: its clone task waits in the main queue."""
    before = value(ops.series(), "agentweb_queue_depth", queue=queue(ops))
    token = services.api_token_create(user=creator, scope="agent")
    with ops.api(token) as alice:
        answer = alice.post("/sessions", json={"task": "look", "repo": str(repo)})
    assert answer.status_code == 201, answer.text
    assert value(ops.series(), "agentweb_tool_workers_live") == 0
    return value(ops.series(), "agentweb_queue_depth", queue=queue(ops)) - before


def says_nothing_of_the_installation(ops: Ops) -> None:
    text = ops.get("/readyz").text + ops.get("/healthz").text
    for secret in (str(ops.folder), socket.gethostname(), "unix://", "redis.sock", "celery@"):
        assert secret not in text


def test_metrics_need_the_token_and_probes_keep_the_host_check(ops: Ops) -> None:
    assert ops.get("/metrics").status_code == 401
    wrong = ops.get("/metrics", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401
    assert ops.get("/healthz", headers={"Host": "evil.example"}).status_code == 400
    assert json.loads(ops.get("/healthz").text) == {"alive": True}


def test_metrics_are_off_without_a_token(client: Any, settings: Any) -> None:
    settings.AGENTWEB_METRICS_TOKEN = ""
    assert client.get("/metrics", headers={"Authorization": "Bearer "}).status_code == 404


def test_a_worker_serves_its_hosts_metrics_on_the_metrics_address(ops: Ops, tmp_path: Path) -> None:
    """AGENTWEB_METRICS_ADDRESS: scraped off the site, from a tool worker, without a token."""
    address = f"127.0.0.1:{free_port()}"
    env = {**ops.env, "AGENTWEB_METRICS_ADDRESS": address, "AGENTWEB_METRICS_TOKEN": ""}
    second = Worker(env, ops.worker.queues, tmp_path / "second.log")
    second.start()
    try:
        text = httpx.get(f"http://{address}/metrics", timeout=10).text
    finally:
        second.stop()
    found = {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples}
    assert found["agentweb_tool_workers_live"] == 1  # both are celery@<host>: one node name
    assert "agentweb_tool_calls_waiting" in found
