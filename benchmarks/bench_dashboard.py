"""The reviewer dashboard of issue 16, against `manage.py up` (SQLite, embedded Redis).

1. Commit of a call that needs approval → a connected `/ws/approvals/` client receives
   its `tool_call.awaiting_approval` event, with 1, 50 and 200 reviewer clients
   connected at once (`bench_latency.Inbox`, one reader thread per socket, all with the
   same logged-in reviewer's session cookie). The commit time is the event's
   `created_at` (read with the ORM, on the stack's clock, which is this machine's);
   every client's receive time counts, one sample per client per call. The same from
   the POST's answer time (when this process had the 201; the policy is evaluated by
   the Celery worker after that) is shown too.
   The calls: a `write_file` to `.env`, POSTed through the REST API on one session.
2. `/sessions/` with 10,000 sessions (bulk_create through the ORM on the stack's SQLite
   file, created by the operator): the render time of the first page and of a page
   reached by cursor (median of N GETs with httpx, logged in as the reviewer), and the
   query count of each, counted in this process with `CaptureQueriesContext` while
   `django.test.Client` renders the view against the same database. Also taken with
   the few sessions there are before the bulk insert, for comparison.

`--quick`: 1 and 10 clients, 500 sessions, few rounds (a smoke run, not figures).

Run: .venv/bin/python benchmarks/bench_dashboard.py [--quick]
"""

from __future__ import annotations

import contextlib
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _common  # noqa: F401 - puts the project root on sys.path
import httpx
from _common import emit, markdown_table, parser, summary
from bench_api import Stack, client, free_port, make_repo, setup_django, stack_env, start_sessions
from bench_latency import Inbox, load

PASSWORD = "bench-password-16"


def login(url: str) -> httpx.Client:
    """A browser logged in as the reviewer `rita`."""
    browser = httpx.Client(base_url=url, trust_env=False, timeout=60)
    browser.get("/login/")
    form = {"username": "rita", "password": PASSWORD,
            "csrfmiddlewaretoken": browser.cookies["csrftoken"]}  # fmt: skip
    browser.post("/login/", data=form)
    if "sessionid" not in browser.cookies:
        raise RuntimeError("the reviewer could not log in")
    return browser


def cookie_of(browser: httpx.Client) -> str:
    return "; ".join(f"{k}={v}" for k, v in browser.cookies.items())


# --- 1. commit → event on /ws/approvals/ ------------------------------------------------


def created_at(call_id: int) -> float:
    """The wall-clock time the call's `awaiting_approval` event was stored."""
    from tools_app.models import Event

    event = Event.objects.filter(type="tool_call.awaiting_approval", data__tool_call=call_id)
    return event.get().created_at.timestamp()


def fan_out(
    http: httpx.Client, session: int, cookie: str, port: int, clients: int, rounds: int
) -> dict[str, Any]:
    inboxes = [Inbox(port, cookie) for _ in range(clients)]
    # perf_counter (what Inbox notes) → wall clock, measured once, same machine.
    offset = time.time() - time.perf_counter()
    from_commit: list[float] = []
    from_answer: list[float] = []
    try:
        time.sleep(0.5)  # every consumer has joined its group
        for round_ in range(rounds + 1):
            body = {"tool": "write_file", "args": {"path": ".env", "content": f"S={round_}\n"}}
            answer = http.post(f"/api/sessions/{session}/tool-calls", json=body)
            answered = time.perf_counter()
            answer.raise_for_status()
            call = int(answer.json()["id"])
            arrivals = [inbox.arrival(call) for inbox in inboxes]
            if round_ == 0:
                continue  # warm-up
            committed = created_at(call)
            from_commit += [(at + offset - committed) * 1000 for at in arrivals]
            from_answer += [(at - answered) * 1000 for at in arrivals]
            time.sleep(0.02)
    finally:
        for inbox in inboxes:
            with contextlib.suppress(OSError):
                inbox.sock.close()
    return {
        "clients": clients,
        "calls": rounds,
        "from_created_at_ms": summary(from_commit),
        "from_post_answer_ms": summary(from_answer),
        "last_client_median_ms": statistics.median(
            max(from_commit[i : i + clients]) for i in range(0, len(from_commit), clients)
        ),
    }


# --- 2. /sessions/ with many sessions ----------------------------------------------------


def add_sessions(total: int) -> int:
    from django.contrib.auth.models import User
    from django.db import connection

    from tools_app.models import AgentSession

    template = AgentSession.objects.order_by("id").first()
    assert template is not None
    operator = User.objects.get(username="olga")
    missing = total - AgentSession.objects.count()
    statuses = ["done", "failed", "cancelled", "running", "waiting"]
    AgentSession.objects.bulk_create(
        [
            AgentSession(
                task=f"bench session {i}: fix the flaky test",
                repo=template.repo,
                workspace="",
                status=statuses[i % len(statuses)],
                policy_id=template.policy_id,
                creator=operator,
            )
            for i in range(missing)
        ],
        batch_size=1000,
    )
    connection.close()
    return AgentSession.objects.count()


def list_page(browser: httpx.Client, total: int, gets: int) -> dict[str, Any]:
    from django.contrib.auth.models import User
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from tools_app.models import AgentSession
    from tools_app.selectors.pagination import cursor_encode

    ids = list(AgentSession.objects.order_by("-id").values_list("id", flat=True))
    middle = ids[len(ids) // 2]
    paths = {"first page": "/sessions/", "by cursor": f"/sessions/?cursor={cursor_encode(middle)}"}
    found: dict[str, Any] = {"sessions": total}
    inproc = Client()
    inproc.force_login(User.objects.get(username="rita"))
    for label, path in paths.items():
        page = browser.get(path)
        page.raise_for_status()
        if label == "first page" and total > 60 and not re.search(r'rel="next"', page.text):
            raise RuntimeError("the first page has no link to older sessions")
        times = []
        for _ in range(gets):
            start = time.perf_counter()
            browser.get(path).raise_for_status()
            times.append((time.perf_counter() - start) * 1000)
        with CaptureQueriesContext(connection) as queries:
            rendered = inproc.get(path)
        assert rendered.status_code == 200, rendered.status_code
        found[label] = {"http_ms": summary(times), "queries": len(queries)}
    return found


# --- the run --------------------------------------------------------------------------


def measure(tmp: Path, quick: bool) -> dict[str, Any]:
    var = tmp / "var"
    var.mkdir()
    env = stack_env(var)
    tokens = setup_django(env)
    from django.contrib.auth.models import User
    from django.test.utils import setup_test_environment

    setup_test_environment()  # `testserver` is an allowed host for django.test.Client
    rita = User.objects.get(username="rita")
    rita.set_password(PASSWORD)
    rita.save()
    stack = Stack(var, free_port(), 2, env)
    results: dict[str, Any] = {"load_before": load()}
    try:
        stack.start(tokens["agent"])
        with client(stack.url, tokens["agent"]) as http:
            session = start_sessions(http, make_repo(tmp, 10), 1)[0]
            browser = login(stack.url)
            cookie = cookie_of(browser)
            counts = [(1, 10), (10, 10)] if quick else [(1, 100), (50, 50), (200, 30)]
            results["fan_out"] = [
                fan_out(http, session, cookie, stack.port, clients, rounds)
                for clients, rounds in counts
            ]
            gets = 10 if quick else 50
            results["list"] = [list_page(browser, add_sessions(1), gets)]
            results["list"].append(list_page(browser, add_sessions(500 if quick else 10_000), gets))
            browser.close()
        results["load_after"] = load()
    except BaseException:
        print(stack.tail(), file=sys.stderr)
        raise
    finally:
        results["leftover_processes"] = stack.stop()
    return results


def tables(results: dict[str, Any]) -> list[str]:
    fan = [
        [r["clients"], r["calls"], r["from_created_at_ms"]["median"],
         r["from_created_at_ms"]["p99"], r["last_client_median_ms"],
         r["from_post_answer_ms"]["median"], r["from_post_answer_ms"]["p99"]]
        for r in results["fan_out"]
    ]  # fmt: skip
    pages = [
        [r["sessions"], label, r[label]["http_ms"]["n"], r[label]["http_ms"]["median"],
         r[label]["http_ms"]["p99"], r[label]["queries"]]
        for r in results["list"] for label in ("first page", "by cursor")
    ]  # fmt: skip
    head = f"load average {results['load_before']} → {results['load_after']}"
    return [
        "Awaiting-approval call committed → event received on /ws/approvals/, ms, every "
        f"client's receive time one sample; {head}\n\n"
        + markdown_table(
            [
                "clients",
                "calls",
                "from created_at p50",
                "p99",
                "last client p50",
                "from POST answer p50",
                "p99",
            ],
            fan,
        ),
        "/sessions/ as the reviewer: GET over HTTP (ms) and queries when rendered in-process\n\n"
        + markdown_table(["sessions", "page", "GETs", "median ms", "p99 ms", "queries"], pages),
    ]


def main() -> None:
    options = parser(__doc__.splitlines()[0]).parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-dashboard-"))
    try:
        results = measure(tmp, options.quick)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    emit("bench_dashboard", results, tables(results), options.json)


if __name__ == "__main__":
    main()
