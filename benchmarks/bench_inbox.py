"""The approvals inbox with 5,000 calls waiting: time to the first byte and bytes of
`/approvals/`, and of the next page's fragment, now and (`--before REF`) at an earlier
commit, interleaved round by round.

The calls, bulk-created in one session on a fresh SQLite database, are in turn a 3-line
`write_file` to a protected file, a `run_command` and a 12-line `edit_file` of a Python
module, each with its preview (a diff, or the parsed command). Each tree is served
by its own daphne (`AGENTWEB_CHANNEL_LAYER=memory`: no Redis, no worker; the pages do
not need them) on that same database; a reviewer logged in with httpx GETs the page,
alternating between the trees so that the machine's load falls on both alike. The time
to the first byte is until the response's headers arrived (Django renders the whole page
before it sends them); the total is until the last byte. Medians and p99 in ms.

`--quick`: 500 calls, 3 rounds (a smoke run, not figures).
Run: .venv/bin/python benchmarks/bench_inbox.py [--before 9232ed3] [--quick]
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import _common
import httpx
from _common import emit, markdown_table, parser, summary
from bench_api import free_port, stack_env

PASSWORD = "bench-password-23"


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


DIFF = "".join(f"+line {n}: value = compute({n}, scale=2)  # {n * 7}\n" for n in range(12))


def kind(n: int) -> dict[str, Any]:
    """The n-th waiting call: in turn a 3-line write to a protected file, a command and a
    12-line edit of a Python module."""
    if n % 3 == 0:
        content = f"KEY={n}\nDEBUG=0\nURL=https://example.com/{n}\n"
        diff = f"--- /dev/null\n+++ b/.env.{n}\n@@ -0,0 +1,3 @@\n" + "".join(
            f"+{line}\n" for line in content.splitlines()
        )
        return {"tool": "write_file", "args": {"path": f".env.{n}", "content": content},
                "preview": {"path": f".env.{n}", "changed_lines": 3, "diff": diff}}  # fmt: skip
    if n % 3 == 1:
        command = f"pip install requests=={n}.0"
        part = {"program": "pip", "text": command, "why": ["pip install needs a person"]}
        return {"tool": "run_command", "args": {"command": command},
                "preview": {"command": command, "parts": [part], "timeout": 120}}  # fmt: skip
    path = f"src/module_{n}.py"
    diff = f"--- a/{path}\n+++ b/{path}\n@@ -0,0 +1,12 @@\n{DIFF}"
    return {"tool": "edit_file",
            "args": {"path": path, "old_string": "", "new_string": DIFF.replace("+", "")},
            "preview": {"path": path, "changed_lines": 12, "diff": diff}}  # fmt: skip


def setup(env: dict[str, str], calls: int) -> None:
    """Migrate the benchmark's database; a reviewer `rita`; `calls` waiting writes."""
    os.environ.update({k: env[k] for k in ("AGENTWEB_VAR", "DATABASE_URL",
                                          "DJANGO_SETTINGS_MODULE", "DJANGO_DEBUG")})  # fmt: skip
    import django

    django.setup()
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from django.db import connection
    from django.utils import timezone

    from tools_app.models import AgentSession, Policy, ToolCall

    call_command("migrate", interactive=False, verbosity=0)
    olga = User.objects.create_user("olga")
    rita = User.objects.create_user("rita", password=PASSWORD)
    rita.groups.add(Group.objects.get_or_create(name="reviewers")[0])
    session = AgentSession.objects.create(
        task="tidy the modules", repo="/nowhere", workspace="", creator=olga,
        status=AgentSession.Status.WAITING, policy=Policy.objects.get(name="default"),
    )  # fmt: skip
    expires = timezone.now() + timedelta(days=1)
    ToolCall.objects.bulk_create(
        ToolCall(
            session=session,
            status=ToolCall.Status.AWAITING_APPROVAL,
            expires_at=expires,
            verdict="require_approval",
            reason="a person decides",
            rule="bench",
            **kind(n),
        )
        for n in range(calls)
    )
    connection.close()


@contextlib.contextmanager
def daphne(root: Path, env: dict[str, str], log: Path) -> Iterator[str]:
    """The tree at `root` served on a free port of 127.0.0.1; yields its URL."""
    with served(root, env, log) as (url, _):
        yield url


@contextlib.contextmanager
def served(root: Path, env: dict[str, str], log: Path) -> Iterator[tuple[str, int]]:
    """The tree at `root` served by daphne on a free port of 127.0.0.1: its URL and pid."""
    port = free_port()
    command = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
               "agentweb.asgi:application"]  # fmt: skip
    with log.open("ab") as out:
        process = subprocess.Popen(
            command, cwd=root, env=env, stdout=out, stderr=out, start_new_session=True
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while not _answers(url):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"daphne in {root} did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.2)
        yield url, process.pid
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:  # still rendering a page of 5,000 cards
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _answers(url: str) -> bool:
    with contextlib.suppress(httpx.HTTPError):
        return httpx.get(f"{url}/login/", timeout=2, trust_env=False).status_code == 200
    return False


def login(url: str) -> httpx.Client:
    browser = httpx.Client(base_url=url, trust_env=False, timeout=900)
    browser.get("/login/")
    form = {"username": "rita", "password": PASSWORD,
            "csrfmiddlewaretoken": browser.cookies["csrftoken"]}  # fmt: skip
    browser.post("/login/", data=form)
    if "sessionid" not in browser.cookies:
        raise RuntimeError(f"the reviewer could not log in at {url}")
    return browser


def get(browser: httpx.Client, path: str) -> tuple[float, float, int]:
    """(ms to the first byte, ms to the last, bytes) of one GET."""
    start = time.perf_counter()
    with browser.stream("GET", path) as answer:
        first = time.perf_counter()
        size = sum(len(chunk) for chunk in answer.iter_bytes())
        last = time.perf_counter()
    if answer.status_code != 200:
        raise RuntimeError(f"GET {path} answered {answer.status_code}")
    return (first - start) * 1000, (last - start) * 1000, size


def next_page(browser: httpx.Client) -> str | None:
    """The fragment of the page after the first, if this tree pages the inbox."""
    marker = 'id="cards-more" class="cards-more" data-next="'
    html = browser.get("/approvals/").text
    if marker not in html:
        return None
    before = html.split(marker, 1)[1].split('"', 1)[0]
    return f"/approvals/cards/?before={before}" if before else None


def measure(browsers: dict[str, httpx.Client], rounds: int) -> dict[str, Any]:
    samples: dict[str, dict[str, list[float]]] = {}
    pages = {label: {"page": "/approvals/"} for label in browsers}
    for label, browser in browsers.items():
        following = next_page(browser)
        if following:
            pages[label]["next page"] = following
    for _ in range(rounds):
        for label, browser in browsers.items():
            for what, path in pages[label].items():
                first, last, size = get(browser, path)
                row = samples.setdefault(f"{label}: {what}", {"first": [], "last": [], "bytes": []})
                row["first"].append(first)
                row["last"].append(last)
                row["bytes"].append(size)
    return {
        key: {
            "first_byte_ms": summary(row["first"]),
            "total_ms": summary(row["last"]),
            "bytes": row["bytes"][-1],
        }
        for key, row in samples.items()
    }


def main() -> None:
    arguments = parser(__doc__.splitlines()[0])
    arguments.add_argument("--before", metavar="REF", help="also serve this commit's tree")
    arguments.add_argument("--rounds", type=int, help="rounds (default 5, 3 with --quick)")
    options = arguments.parse_args()
    calls, rounds = (500, 3) if options.quick else (5_000, 5)
    rounds = options.rounds or rounds
    tmp = Path(tempfile.mkdtemp(prefix="bench-inbox-"))
    env = stack_env(tmp / "var") | {"AGENTWEB_CHANNEL_LAYER": "memory"}
    (tmp / "var").mkdir()
    setup(env, calls)
    trees = {"now": _common.ROOT}
    git = ["git", "-C", str(_common.ROOT), "worktree"]
    if options.before:
        trees[options.before] = tmp / "before"
        subprocess.run([*git, "add", "-q", "--detach", str(trees[options.before]),
                        options.before], check=True)  # fmt: skip
    results: dict[str, Any] = {"calls": calls, "rounds": rounds, "load_before": loadavg()}
    try:
        with contextlib.ExitStack() as stack:
            urls = {label: stack.enter_context(daphne(root, env, tmp / f"{label}.log"))
                    for label, root in trees.items()}  # fmt: skip
            browsers = {label: login(url) for label, url in urls.items()}
            for browser in browsers.values():
                stack.callback(browser.close)
            for browser in browsers.values():
                get(browser, "/sessions/")  # warm up: base templates, connections
            results["gets"] = measure(browsers, rounds)
    finally:
        if options.before:
            subprocess.run([*git, "remove", "--force", str(trees[options.before])], check=False)
    results["load_after"] = loadavg()
    emit("bench_inbox", results, tables(results), options.json)


def tables(results: dict[str, Any]) -> list[str]:
    rows = [
        [what, row["first_byte_ms"]["median"], row["first_byte_ms"]["p99"],
         row["total_ms"]["median"], f"{row['bytes'] / 1e6:.2f} MB" if row["bytes"] > 1e6
         else f"{row['bytes'] / 1e3:.1f} kB"]
        for what, row in results["gets"].items()
    ]  # fmt: skip
    head = ["GET", "first byte ms (median)", "first byte p99", "last byte ms", "size"]
    load = f"load before {results['load_before']}, after {results['load_after']}"
    return [
        f"The inbox with {results['calls']:,} calls waiting, median of {results['rounds']} "
        f"interleaved rounds ({load})\n\n" + markdown_table(head, rows)
    ]


if __name__ == "__main__":
    main()
