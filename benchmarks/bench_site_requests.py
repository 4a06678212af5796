"""What one request through the site's Django chain costs daphne: pages and the REST API.

Starts daphne alone (`python -m daphne agentweb.asgi:application`, as `up` and `serve
web` run it, access log off) on a private `AGENTWEB_VAR` with SQLite, a user with a
password and an agent token. From this process, over one kept connection, each URL is
asked `--requests` times one after another (after 50 to warm), and daphne's CPU for them
is read from /proc: its CPU per request, and the median and p99 answer time. The hook
URLs' lean handler (a 404 under `/api/hooks/`) is the floor beside them.

`--root DIR` runs another checkout (a clean clone of an earlier commit) with this
script's client, so a before and an after see the same requests.

Run: .venv/bin/python benchmarks/bench_site_requests.py [--quick] [--requests 400]
[--root DIR]
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import _common  # noqa: F401 - puts the project root on sys.path
import httpx
from _common import ROOT, emit, loadavg, markdown_table, parser, summary

PASSWORD = "a-long-password"
USERS = f"""
from django.contrib.auth.models import User
from tools_app.services.tokens import api_token_create
user = User.objects.create_user("bench", password="{PASSWORD}")
print(api_token_create(user=user, scope="agent"))
"""
# (label, path, how it is asked: "anonymous", "signed in" with the session cookie, "token")
URLS = [
    ("the hooks' lean handler, a 404 (the floor)", "/api/hooks/nothing-here", "anonymous"),
    ("/healthz", "/healthz", "anonymous"),
    ("the login page", "/login/", "anonymous"),
    ("the sessions page, signed in", "/sessions/", "signed in"),
    ("REST: GET /api/sessions", "/api/sessions", "token"),
    ("REST, an async view: GET /api/tool-calls/N (none)", "/api/tool-calls/999999", "token"),
]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Site:
    """daphne on a private AGENTWEB_VAR of `root`, its database migrated and a user made."""

    def __init__(self, root: Path, tmp: Path) -> None:
        self.root, self.port = root, free_port()
        env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
        self.env = env | {"AGENTWEB_VAR": str(tmp), "DJANGO_DEBUG": "0",
                          "DJANGO_SETTINGS_MODULE": "agentweb.settings"}  # fmt: skip
        python = str(root / ".venv" / "bin" / "python")
        subprocess.run([python, "manage.py", "migrate", "-v0"], cwd=root, env=self.env, check=True)
        made = subprocess.run([python, "manage.py", "shell", "-c", USERS], cwd=root,
                              env=self.env, check=True, capture_output=True, text=True)  # fmt: skip
        self.token = made.stdout.strip().splitlines()[-1]
        command = [python, "-m", "daphne", "-v", "0", "-b", "127.0.0.1", "-p", str(self.port),
                   "agentweb.asgi:application"]  # fmt: skip
        self.process = subprocess.Popen(
            command, cwd=root, env=self.env, start_new_session=True,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,  # the 404s' log lines
        )  # fmt: skip
        self.url = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.2)
        raise RuntimeError("daphne did not start")

    def stop(self) -> None:
        os.killpg(self.process.pid, signal.SIGTERM)
        self.process.wait(timeout=20)


def signed_in(client: httpx.Client) -> None:
    page = client.get("/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token, "no CSRF token on the login page"
    form = {"username": "bench", "password": PASSWORD, "csrfmiddlewaretoken": token.group(1)}
    assert client.post("/login/", data=form).status_code == 302, "the sign-in failed"


def measure(site: Site, path: str, how: str, requests: int) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {site.token}"} if how == "token" else {}
    with httpx.Client(base_url=site.url, headers=headers, timeout=30) as client:
        if how == "signed in":
            signed_in(client)
        status = 0
        for _ in range(50):
            status = client.get(path).status_code
        times = []
        before = cpu_seconds(site.process.pid)
        for _ in range(requests):
            started = time.perf_counter()
            client.get(path)
            times.append((time.perf_counter() - started) * 1000)
        spent = cpu_seconds(site.process.pid) - before
    return {"status": status, "cpu_ms": 1000 * spent / requests, **summary(times)}


def main() -> None:
    options = parser(__doc__.splitlines()[0])
    options.add_argument("--requests", type=int, default=400)
    options.add_argument("--root", type=Path, default=ROOT)
    args = options.parse_args()
    requests = 100 if args.quick else args.requests
    root = args.root.resolve()
    commit = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()  # fmt: skip
    tmp = Path(tempfile.mkdtemp(prefix="bench_site_"))
    site = Site(root, tmp)
    try:
        results = {label: measure(site, path, how, requests) for label, path, how in URLS}
    finally:
        site.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    rows = [[label, r["status"], r["cpu_ms"], r["median"], r["p99"]]
            for label, r in results.items()]  # fmt: skip
    table = markdown_table(
        [f"{commit}, {requests} requests each (load {loadavg()})", "status",
         "daphne CPU ms/request", "median ms", "p99 ms"], rows,
    )  # fmt: skip
    emit("site_requests", {"commit": commit, "results": results}, [table], args.json)


if __name__ == "__main__":
    main()
