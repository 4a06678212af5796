"""Sandbox overhead: `true` as a plain process, under the old plain bwrap sandbox, and
copy-on-write (unshare + overlay + bwrap, effect read, scratch removed), also with the
workspace's secret files masked as run_command masks them (index read, one bind each).

On an empty workspace, a 7k-entry one and a 200k-entry one (20k with `--quick`): the
copy-on-write cost must follow the size of the change, not of the tree. Medians in ms,
with the ratios, and the machine's load (/proc/loadavg) before and after.

Pure: no Django settings, no database. Run: .venv/bin/python benchmarks/bench_sandbox.py
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _common  # noqa: F401 - puts the project root on sys.path
from _common import emit, markdown_table, parser, summary

from tools_app.core.policy.defaults import DEFAULT_SECRET_PATHS
from tools_app.core.tools import processes, secret_files
from tools_app.core.tools.base import SandboxOptions
from tools_app.core.tools.cow_probe import cow_available
from tools_app.core.tools.overlay import run_copy_on_write

ARGV = ["true"]


def old_build_command(workspace: Path, argv: list[str]) -> list[str]:
    """The bwrap command line before copy-on-write (its tree walks left out)."""
    root = os.path.realpath(workspace)
    cmd = [shutil.which("bwrap") or "bwrap", "--ro-bind", "/", "/", "--dev", "/dev"]
    cmd += ["--proc", "/proc", "--tmpfs", "/tmp", "--dir", processes.SANDBOX_HOME]
    cmd += ["--bind", root, root, "--unshare-all", "--new-session", "--die-with-parent"]
    return [*cmd, "--chdir", root, "--", *argv]


def run_plain(workspace: Path) -> None:
    assert processes.run_plain(workspace, ARGV, timeout=30).exit_code == 0


def run_old(workspace: Path) -> None:
    env = processes.scrubbed_env(processes.SANDBOX_HOME)
    cmd = old_build_command(workspace, ARGV)
    result = processes.run_process(cmd, cwd=str(workspace), env=env, timeout=30, sandboxed=True)
    assert result.exit_code == 0


def run_cow(workspace: Path) -> None:
    with run_copy_on_write(workspace, ARGV, SandboxOptions(), timeout=30) as run:
        assert run.result.exit_code == 0 and run.effect.entries == ()


def run_cow_masked(workspace: Path) -> None:
    masked = secret_files.to_mask(workspace, DEFAULT_SECRET_PATHS)
    assert masked
    options = SandboxOptions(masked_files=masked)
    with run_copy_on_write(workspace, ARGV, options, timeout=30) as run:
        assert run.result.exit_code == 0 and run.effect.entries == ()


def first_walk(workspace: Path) -> float:
    """ms of the one walk that builds a workspace's secret-file index."""
    secret_files.forget(workspace)
    start = time.perf_counter_ns()
    secret_files.secret_files(workspace, DEFAULT_SECRET_PATHS)
    return (time.perf_counter_ns() - start) / 1e6


def make_tree(root: Path, entries: int) -> Path:
    """A workspace with `entries` empty files, 1,000 to a directory, and a `.env`."""
    root.mkdir()
    (root / ".env").write_text("SECRET=x\n")
    for start in range(0, entries, 1000):
        sub = root / f"d{start // 1000:04d}"
        sub.mkdir()
        fd = os.open(sub, os.O_RDONLY)
        for n in range(min(1000, entries - start)):
            os.close(os.open(f"f{n:04d}", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
        os.close(fd)
    return root


def tree_dir() -> str | None:
    """tmpfs for the trees when there is one: 200k creates on a busy disk take ~40 s.

    Only the lower layer lives there; the upper layer stays in the scratch dir under /tmp.
    """
    return "/dev/shm" if os.access("/dev/shm", os.W_OK) else None


def measure(runner: Callable[[Path], None], workspace: Path, rounds: int) -> dict[str, float]:
    samples = []
    runner(workspace)  # warm up
    for _ in range(rounds):
        start = time.perf_counter_ns()
        runner(workspace)
        samples.append((time.perf_counter_ns() - start) / 1e6)
    return summary(samples)


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> None:
    options = parser(__doc__.splitlines()[0]).parse_args()
    if not cow_available():
        raise SystemExit("the copy-on-write sandbox does not work on this machine")
    rounds, big = (5, 20_000) if options.quick else (30, 200_000)
    results: dict[str, Any] = {"rounds": rounds, "load_before": loadavg(), "trees": {}}
    runners = (("plain", run_plain), ("old", run_old), ("cow", run_cow), ("masked", run_cow_masked))
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-", dir=tree_dir()) as tmp:
        os.environ["AGENTWEB_VAR"] = tmp  # the secret-file index lives here
        for label, entries in (("empty", 0), ("7k entries", 7_000), (f"{big // 1000}k", big)):
            workspace = make_tree(Path(tmp) / f"ws{entries}", entries)
            row = {name: measure(runner, workspace, rounds) for name, runner in runners}
            row["walk_ms"] = first_walk(workspace)
            results["trees"][label] = row
    results["load_after"] = loadavg()
    emit("bench_sandbox", results, tables(results), options.json)


def tables(results: dict[str, Any]) -> list[str]:
    rows = [
        [label, row["plain"]["median"], row["old"]["median"], row["cow"]["median"],
         f"{row['cow']['median'] / row['old']['median']:.2f}x", row["cow"]["p99"],
         row["masked"]["median"], row["masked"]["p99"], row["walk_ms"]]
        for label, row in results["trees"].items()
    ]  # fmt: skip
    table = markdown_table(
        ["workspace", "plain ms", "old bwrap ms", "copy-on-write ms", "cow / old", "cow p99 ms",
         "cow + secrets masked ms", "masked p99 ms", "index walk ms (once)"],
        rows,
    )  # fmt: skip
    load = f"load before {results['load_before']}, after {results['load_after']}"
    return [f"`true`, median of {results['rounds']} rounds ({load})\n\n" + table]


if __name__ == "__main__":
    main()
