"""The audit export of 20,000 entries under daphne: how much the web process grows while it
streams, and how soon its first byte comes; now and (`--before REF`) at an earlier commit.

The entries (decisions with a reason, a preview hash and details, as the API writes them)
are bulk-created in a fresh SQLite database. Each round starts a fresh daphne per tree
and format (`AGENTWEB_CHANNEL_LAYER=memory`: no Redis, no worker), warms it up with an
export that matches nothing, reads its resident set size (VmRSS), then GETs
`/api/audit/export` with a review token while a thread samples VmRSS every 2 ms. Growth
is the peak minus the warm size, in MB; the first byte is until the first byte of the
body (a response's headers leave before its body is read, so they would say nothing).

`--quick`: 2,000 entries, 1 round (a smoke run, not figures).
Run: .venv/bin/python benchmarks/bench_audit_export.py [--before REF] [--rounds N] [--quick]
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import _common
import httpx
from _common import emit, loadavg, markdown_table, parser, summary
from bench_api import stack_env
from bench_inbox import served

FORMATS = ("jsonl", "csv")


def setup(env: dict[str, str], entries: int) -> str:
    """Migrate the benchmark's database, add `entries` audit entries; an auditor's token."""
    os.environ.update({k: env[k] for k in ("AGENTWEB_VAR", "DATABASE_URL",
                                          "DJANGO_SETTINGS_MODULE", "DJANGO_DEBUG")})  # fmt: skip
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.db import connection

    from tools_app import services
    from tools_app.models import AuditEntry

    call_command("migrate", interactive=False, verbosity=0)
    token = services.api_token_create(user=User.objects.create_user("olga", is_staff=True),
                                      scope="review")  # fmt: skip
    AuditEntry.objects.bulk_create(
        (
            AuditEntry(
                actor_name=f"reviewer{i % 7}", via="api", action="decision",
                decision="approve" if i % 3 else "deny", object_type="tool_call",
                object_id=str(i), object_repr=f"tool call {i}: write_file", tool="write_file",
                session_ref=i // 10, tool_call_ref=i, policy_name="default",
                preview_hash="ab" * 32, reason="looks right to me " * 4,
                details={"status": "approved", "edited": i % 5 == 0},
            )
            for i in range(entries)
        ),
        batch_size=2_000,
    )  # fmt: skip
    connection.close()
    return token


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for {pid}")


class PeakRss:
    """The highest VmRSS of `pid` while the block runs, sampled every 2 ms."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self.running = pid, rss_mb(pid), True
        self.thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while self.running:
            self.peak = max(self.peak, rss_mb(self.pid))
            time.sleep(0.002)

    def __enter__(self) -> PeakRss:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.running = False
        self.thread.join()
        self.peak = max(self.peak, rss_mb(self.pid))


def export_once(url: str, pid: int, token: str, fmt: str) -> dict[str, float]:
    """One warm daphne's growth (MB) and first and last byte (ms) for the whole export."""
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=url, headers=headers, trust_env=False, timeout=600) as client:
        for _ in range(2):  # warm: imports, templates of errors, the connection, the token
            client.get(f"/api/audit/export?format={fmt}&person=nobody").raise_for_status()
        time.sleep(0.3)
        warm = rss_mb(pid)
        with PeakRss(pid) as rss:
            start = time.perf_counter()
            with client.stream("GET", f"/api/audit/export?format={fmt}") as answer:
                answer.raise_for_status()
                chunks = answer.iter_raw()
                size = len(next(chunks))
                first = time.perf_counter()
                size += sum(len(chunk) for chunk in chunks)
            last = time.perf_counter()
    return {"growth_mb": rss.peak - warm, "first_ms": (first - start) * 1000,
            "last_ms": (last - start) * 1000, "bytes": size}  # fmt: skip


def measure(trees: dict[str, Path], env: dict[str, str], token: str, rounds: int,
            tmp: Path) -> dict[str, Any]:  # fmt: skip
    samples: dict[str, dict[str, list[float]]] = {}
    for _ in range(rounds):
        for label, root in trees.items():
            for fmt in FORMATS:
                with served(root, env, tmp / f"{label}.log") as (url, pid):
                    once = export_once(url, pid, token, fmt)
                row = samples.setdefault(f"{label}: {fmt}", {})
                for key, value in once.items():
                    row.setdefault(key, []).append(value)
    return {
        key: {name: summary(values) for name, values in row.items()} for key, row in samples.items()
    }


def main() -> None:
    arguments = parser(__doc__.splitlines()[0])
    arguments.add_argument("--before", metavar="REF", help="also measure this commit's tree")
    arguments.add_argument("--rounds", type=int, help="rounds (default 5, 1 with --quick)")
    options = arguments.parse_args()
    entries, rounds = (2_000, 1) if options.quick else (20_000, 5)
    rounds = options.rounds or rounds
    tmp = Path(tempfile.mkdtemp(prefix="bench-audit-"))
    env = stack_env(tmp / "var") | {"AGENTWEB_CHANNEL_LAYER": "memory"}
    (tmp / "var").mkdir()
    token = setup(env, entries)
    trees = {"now": _common.ROOT}
    git = ["git", "-C", str(_common.ROOT), "worktree"]
    if options.before:
        trees[options.before] = tmp / "before"
        subprocess.run([*git, "add", "-q", "--detach", str(trees[options.before]),
                        options.before], check=True)  # fmt: skip
    results: dict[str, Any] = {"entries": entries, "rounds": rounds, "load_before": loadavg()}
    try:
        results["exports"] = measure(trees, env, token, rounds, tmp)
    finally:
        if options.before:
            subprocess.run([*git, "remove", "--force", str(trees[options.before])], check=False)
        subprocess.run(["rm", "-rf", str(tmp)], check=False)
    results["load_after"] = loadavg()
    emit("bench_audit_export", results, tables(results), options.json)


def tables(results: dict[str, Any]) -> list[str]:
    rows = [
        [what, row["growth_mb"]["median"], row["growth_mb"]["p99"], row["first_ms"]["median"],
         row["first_ms"]["p99"], row["last_ms"]["median"], f"{row['bytes']['median'] / 1e6:.1f}"]
        for what, row in results["exports"].items()
    ]  # fmt: skip
    head = ["export", "growth MB (median)", "growth MB (max)", "first byte ms (median)",
            "first byte ms (max)", "last byte ms (median)", "MB sent"]  # fmt: skip
    load = f"load before {results['load_before']}, after {results['load_after']}"
    return [
        f"The audit export of {results['entries']:,} entries, a fresh daphne each time, median "
        f"of {results['rounds']} rounds ({load})\n\n" + markdown_table(head, rows)
    ]


if __name__ == "__main__":
    main()
