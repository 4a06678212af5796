"""One command's sandbox cost now against an earlier commit's, interleaved round by round.

`true` through `overlay.run_copy_on_write` (scratch made, namespaces, overlay, bubblewrap,
effect read, scratch removed) in this tree, and in a `git worktree` of `--before REF`
served by a child process of that tree, alternating: the machine's load falls on both
alike. Trees: empty, 7k entries and 200k entries (20k with `--quick`). Medians and p99 in
ms, with the load average before and after.

Pure: no Django settings, no database.
Run: .venv/bin/python benchmarks/bench_sandbox_before.py --before a8c9da2 [--quick]
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _common
from _common import emit, markdown_table, parser, summary
from bench_sandbox import loadavg, make_tree, tree_dir

from tools_app.core.tools.base import SandboxOptions
from tools_app.core.tools.cow_probe import cow_available
from tools_app.core.tools.overlay import run_copy_on_write

# The child: one line in (a workspace path), one line out (ms for one `true`).
SERVE = """
import sys, time
from pathlib import Path
from tools_app.core.tools.base import SandboxOptions
from tools_app.core.tools.overlay import run_copy_on_write
for line in sys.stdin:
    start = time.perf_counter_ns()
    with run_copy_on_write(Path(line.strip()), ["true"], SandboxOptions(), timeout=30) as run:
        assert run.result.exit_code == 0, run.result.output
    print((time.perf_counter_ns() - start) / 1e6, flush=True)
"""


def run_now(workspace: Path) -> float:
    start = time.perf_counter_ns()
    with run_copy_on_write(workspace, ["true"], SandboxOptions(), timeout=30) as run:
        assert run.result.exit_code == 0, run.result.output
    return (time.perf_counter_ns() - start) / 1e6


class Before:
    """A child process running the sandbox of another checkout."""

    def __init__(self, root: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", SERVE], cwd=root, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        )  # fmt: skip

    def run(self, workspace: Path) -> float:
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(f"{workspace}\n")
        self.process.stdin.flush()
        return float(self.process.stdout.readline())

    def close(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        self.process.wait(timeout=30)


def main() -> None:
    arguments = parser(__doc__.splitlines()[0])
    arguments.add_argument("--before", metavar="REF", required=True)
    options = arguments.parse_args()
    if not cow_available():
        raise SystemExit("the copy-on-write sandbox does not work on this machine")
    rounds, big = (5, 20_000) if options.quick else (30, 200_000)
    tmp = Path(tempfile.mkdtemp(prefix="bench-sandbox-before-"))
    worktree = tmp / "before"
    git = ["git", "-C", str(_common.ROOT), "worktree"]
    subprocess.run([*git, "add", "-q", "--detach", str(worktree), options.before], check=True)
    before = Before(worktree)
    results: dict[str, Any] = {"ref": options.before, "rounds": rounds, "load_before": loadavg()}
    try:
        with tempfile.TemporaryDirectory(prefix="bench-trees-", dir=tree_dir()) as trees:
            results["trees"] = {
                label: measure(before, make_tree(Path(trees) / f"ws{n}", n), rounds)
                for label, n in (("empty", 0), ("7k entries", 7_000), (f"{big // 1000}k", big))
            }
    finally:
        before.close()
        subprocess.run([*git, "remove", "--force", str(worktree)], check=False)
    results["load_after"] = loadavg()
    emit("bench_sandbox_before", results, tables(results), options.json)


def measure(before: Before, workspace: Path, rounds: int) -> dict[str, Any]:
    before.run(workspace), run_now(workspace)  # warm up both
    then, now = [], []
    for _ in range(rounds):
        then.append(before.run(workspace))
        now.append(run_now(workspace))
    return {"before": summary(then), "after": summary(now)}


def tables(results: dict[str, Any]) -> list[str]:
    rows = [
        [label, row["before"]["median"], row["after"]["median"],
         f"{row['after']['median'] / row['before']['median']:.2f}x",
         row["before"]["p99"], row["after"]["p99"]]
        for label, row in results["trees"].items()
    ]  # fmt: skip
    head = ["workspace", f"{results['ref']} ms", "now ms", "now / before", "before p99", "now p99"]
    load = f"load before {results['load_before']}, after {results['load_after']}"
    return [
        f"`true`, median of {results['rounds']} interleaved rounds ({load})\n\n"
        + markdown_table(head, rows)
    ]


if __name__ == "__main__":
    main()
