"""The filtered git object store (issue 30): what it costs to build, and per command.

Two repositories that track a `.env` (so a filtered store is needed): agentweb's own
history (a full clone of this repository) and the installed Django package committed
in 10 commits, then packed (`git gc`, as a clone is). For each: the first build (cold
cache), a rebuild after one more commit, the per-command check on a warm cache, and
`true` run as run_command runs it (secret files masked) with and without the store
mounted, interleaved round by round. Also the clean verdict of a repository that never
tracked a secret. Medians in ms.

Pure: no Django settings, no database. Run: .venv/bin/python benchmarks/bench_git_view.py
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _common
from _common import emit, loadavg, markdown_table, parser, summary

from tools_app.core.policy.defaults import DEFAULT_SECRET_PATHS
from tools_app.core.tools import git_view, secret_files
from tools_app.core.tools.base import SandboxOptions
from tools_app.core.tools.cow_probe import cow_available
from tools_app.core.tools.overlay import run_copy_on_write

ARGV = ["true"]


def git(ws: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=B", "-c", "user.email=b@example.com", "-c", "gc.auto=0", *args],
        cwd=ws, check=True, capture_output=True,
    )  # fmt: skip


def with_secret(ws: Path) -> Path:
    (ws / ".env").write_text("API_KEY=sk_live_bench_0123456789abcdef\n")
    git(ws, "add", "-f", ".env")
    git(ws, "commit", "-qm", "track a secret")
    return ws


def own_history(base: Path) -> Path:
    ws = base / "own"
    subprocess.run(["git", "clone", "-q", "--no-local", str(_common.ROOT), str(ws)], check=True)
    return with_secret(ws)


def django_tree(base: Path, commits: int) -> Path:
    import django

    ws = base / "django"
    shutil.copytree(Path(django.__path__[0]), ws / "django")
    git(ws, "init", "-q")
    files = sorted(p for p in (ws / "django").rglob("*") if p.is_file())
    for n in range(commits):
        git(ws, "add", *[str(p.relative_to(ws)) for p in files[n::commits]])
        git(ws, "commit", "-qm", f"part {n}")
    with_secret(ws)
    git(ws, "gc", "-q")  # packed, as a clone is
    return ws


def clean_repo(base: Path) -> Path:
    ws = base / "clean"
    subprocess.run(["git", "clone", "-q", "--no-local", str(_common.ROOT), str(ws)], check=True)
    return ws


def timed(action: Callable[[], object]) -> float:
    start = time.perf_counter_ns()
    action()
    return (time.perf_counter_ns() - start) / 1e6


def check(ws: Path) -> tuple[git_view.ObjectView, ...]:
    with git_view.object_views(ws, DEFAULT_SECRET_PATHS) as views:
        return views


def cold_build(ws: Path) -> float:
    shutil.rmtree(git_view.views_dir(), ignore_errors=True)
    return timed(lambda: check(ws))


def run_true(ws: Path, *, views: bool) -> None:
    masked = secret_files.to_mask(ws, DEFAULT_SECRET_PATHS)
    options = SandboxOptions(secret_paths=DEFAULT_SECRET_PATHS, masked_files=masked)
    with git_view.object_views(ws, DEFAULT_SECRET_PATHS if views else ()) as held:
        assert bool(held) == views
        options = dataclasses.replace(options, object_views=held)
        with run_copy_on_write(ws, ARGV, options, timeout=30) as run:
            assert run.result.exit_code == 0, run.result.output


def per_command(ws: Path, rounds: int) -> dict[str, dict[str, float]]:
    """`true` without and with the store, alternating, after a warm-up of each."""
    samples: dict[str, list[float]] = {"without": [], "with": [], "check": []}
    run_true(ws, views=False)
    run_true(ws, views=True)
    for _ in range(rounds):
        samples["without"].append(timed(lambda: run_true(ws, views=False)))
        samples["with"].append(timed(lambda: run_true(ws, views=True)))
        samples["check"].append(timed(lambda: check(ws)))
    return {name: summary(values) for name, values in samples.items()}


def rebuild_after_commit(ws: Path, rounds: int) -> dict[str, float]:
    samples = []
    for n in range(rounds):
        (ws / "bench-note.txt").write_text(f"{n}\n")
        git(ws, "add", "bench-note.txt")
        git(ws, "commit", "-qm", f"note {n}")
        samples.append(timed(lambda: check(ws)))
    return summary(samples)


def store_size(ws: Path) -> dict[str, Any]:
    views = check(ws)
    store = views[0].store
    packed = sum(p.stat().st_size for p in (store / "pack").iterdir())
    real = sum(p.stat().st_size for p in (ws / ".git" / "objects").rglob("*") if p.is_file())
    count = subprocess.run(
        ["git", "rev-list", "--objects", "--all", "--reflog", "--indexed-objects"],
        cwd=ws, check=True, capture_output=True,
    ).stdout.count(b"\n")  # fmt: skip
    return {"objects": count, "store_mb": packed / 1e6, "real_mb": real / 1e6}


def measure_repo(ws: Path, rounds: int) -> dict[str, Any]:
    builds = [cold_build(ws) for _ in range(max(3, rounds // 5))]
    row: dict[str, Any] = {"first_build": summary(builds), **store_size(ws)}
    row["per_command"] = per_command(ws, rounds)
    row["rebuild"] = rebuild_after_commit(ws, max(3, rounds // 5))
    return row


def main() -> None:
    options = parser(__doc__.splitlines()[0]).parse_args()
    if not cow_available():
        raise SystemExit("the copy-on-write sandbox does not work on this machine")
    rounds = 5 if options.quick else 30
    results: dict[str, Any] = {"rounds": rounds, "load_before": loadavg(), "repos": {}}
    with tempfile.TemporaryDirectory(prefix="bench-git-view-") as tmp:
        base = Path(tmp)
        os.environ["AGENTWEB_VAR"] = str(base / "var")
        repos = [("agentweb's history", own_history(base))]
        if not options.quick:
            repos.append(("Django package, 10 commits", django_tree(base, 10)))
        for label, ws in repos:
            results["repos"][label] = measure_repo(ws, rounds)
        clean = clean_repo(base)
        results["clean"] = {
            "verdict": summary([cold_build(clean) for _ in range(3)]),
            "check": summary([timed(lambda: check(clean)) for _ in range(rounds)]),
        }
    results["load_after"] = loadavg()
    emit("bench_git_view", results, tables(results), options.json)


def tables(results: dict[str, Any]) -> list[str]:
    rows = []
    for label, row in results["repos"].items():
        cmd = row["per_command"]
        rows.append([
            label, row["objects"], f"{row['real_mb']:.1f} / {row['store_mb']:.1f}",
            row["first_build"]["median"], row["rebuild"]["median"], cmd["check"]["median"],
            cmd["without"]["median"], cmd["with"]["median"],
            cmd["with"]["median"] - cmd["without"]["median"], cmd["with"]["p99"],
        ])  # fmt: skip
    table = markdown_table(
        ["repository", "objects", "store MB (real / filtered)", "first build ms",
         "rebuild after a commit ms", "warm check ms", "`true` without ms", "`true` with ms",
         "difference ms", "with p99 ms"],
        rows,
    )  # fmt: skip
    clean = results["clean"]
    note = (
        f"A clone of agentweb that never tracked a secret: the clean verdict (cold) "
        f"{clean['verdict']['median']:.0f} ms once, then {clean['check']['median']:.2f} ms "
        "per command, nothing mounted."
    )
    load = f"load before {results['load_before']}, after {results['load_after']}"
    return [f"median of {results['rounds']} rounds ({load})\n\n{table}\n\n{note}"]


if __name__ == "__main__":
    main()
