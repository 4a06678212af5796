"""Prometheus metrics: events counted where they happen, state read when scraped.

Events (a call ending, a person deciding, a held answer returning) are prometheus-client
counters and histograms in its multiprocess mode: every process of a host writes its
own file under AGENTWEB_METRICS_DIR and a scrape sums them, so the web's hook latencies
and the workers' finished calls come out of one `/metrics`. A dead process's file is
kept (its counts are still part of the totals; removing it would make them go back);
`up` empties the folder when it starts. State (calls waiting now, deliveries failed,
queue depth, live workers) is read from the database and Redis at scrape time, the
truth whichever process changed it. Recording costs no SQL statement.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import DatabaseError, close_old_connections, transaction
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector

from tools_app.models import ToolCall
from tools_app.ops import workers
from tools_app.selectors import ops as ops_selectors

Status = ToolCall.Status

# Seconds: a machine's answer (a hook allowed at once) up to a person's hour.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600)
DECISION_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 24 * 3600)

TOOL_CALLS = Counter(
    "agentweb_tool_calls",
    "Tool calls that reached a final status, by tool, the policy's verdict and that status.",
    ["tool", "verdict", "status"],
)
DECISION_SECONDS = Histogram(
    "agentweb_decision_wait_seconds",
    "From a call's arrival to a person's decision on it, for calls that waited for one.",
    ["decision"],
    buckets=DECISION_BUCKETS,
)
HOOK_SECONDS = Histogram(
    "agentweb_hook_seconds",
    "How long the gateway's hook endpoint took to answer, by its answer (allow, deny, none).",
    ["answer"],
    buckets=LATENCY_BUCKETS,
)
WAIT_SECONDS = Histogram(
    "agentweb_wait_seconds",
    "How long a REST `?wait=` request was held, by whether the call was final by then.",
    ["final"],
    buckets=LATENCY_BUCKETS,
)
SANDBOX_REFUSALS = Counter(
    "agentweb_sandbox_refusals",
    "Commands whose effect the sandbox refused whole (nothing they changed was applied).",
)

DECISIONS = {"decide_approve": "approve", "decide_deny": "deny"}


def tool_call_moved(call: ToolCall, move: str) -> None:
    """Count what a lifecycle move means, once its transaction commits (a move rolled
    back never happened)."""
    if call.status in ToolCall.FINAL_STATUSES:
        labels = (call.tool, call.verdict or "none", call.status)
        refused = call.outcome == ToolCall.Outcome.REFUSED
        transaction.on_commit(lambda: _finished(labels, refused=refused))
    if move in DECISIONS and call.created_at is not None and call.decided_at is not None:
        waited = max(0.0, (call.decided_at - call.created_at).total_seconds())
        decision = DECISIONS[move]
        transaction.on_commit(lambda: DECISION_SECONDS.labels(decision).observe(waited))


def _finished(labels: tuple[str, str, str], *, refused: bool) -> None:
    TOOL_CALLS.labels(*labels).inc()
    if refused:
        SANDBOX_REFUSALS.inc()


def hook_answered(answer: dict[str, Any], seconds: float) -> None:
    kind = answer.get("hookSpecificOutput", {}).get("permissionDecision") or "none"
    HOOK_SECONDS.labels(kind).observe(seconds)


def wait_answered(answer: dict[str, Any], seconds: float) -> None:
    final = "yes" if answer.get("status") in ToolCall.FINAL_STATUSES else "no"
    WAIT_SECONDS.labels(final).observe(seconds)


class StateCollector:
    """The gauges read at scrape time: from the database and Redis, not from a process."""

    def collect(self) -> Iterator[Metric]:
        yield from _database_gauges()
        yield from _redis_gauges()


def _database_gauges() -> Iterator[Metric]:
    close_old_connections()  # a worker's metrics thread has no request cycle to do it
    try:
        waiting, failed = ops_selectors.tool_calls_waiting(), ops_selectors.deliveries_failed()
    except DatabaseError:
        return  # the database is down: nothing to read (/readyz says so)
    yield _gauge(
        "agentweb_tool_calls_waiting", "Tool calls awaiting a person's decision now.", waiting
    )
    yield _gauge(
        "agentweb_deliveries_failed",
        "Notification deliveries that failed for good (every retry spent).",
        failed,
    )


def _redis_gauges() -> Iterator[Metric]:
    try:
        seen = workers.queue_depths()
    except workers.RedisDown:
        return  # Redis is down: no queue to read (/readyz says so)
    yield _gauge(
        "agentweb_tool_workers_live", "Tool workers whose heartbeat is current.", seen.workers
    )
    depth = GaugeMetricFamily(
        "agentweb_queue_depth", "Tasks waiting in a Celery queue.", labels=["queue"]
    )
    for queue, count in sorted(seen.depths.items()):
        depth.add_metric([queue], count)
    yield depth


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


def registry() -> CollectorRegistry:
    """Every process's counts (the multiprocess files) and the state gauges."""
    found = CollectorRegistry()
    MultiProcessCollector(found)  # type: ignore[no-untyped-call]
    found.register(StateCollector())
    return found


def counts_reset() -> None:
    """Start counting afresh (`up`, before its processes start): the files of processes
    that are gone would otherwise add to the new ones' for ever."""
    for path in Path(settings.AGENTWEB_METRICS_DIR).glob("*.db"):
        path.unlink(missing_ok=True)


def exposition() -> bytes:
    return generate_latest(registry())
