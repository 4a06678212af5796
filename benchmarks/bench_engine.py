"""Engine overhead: a tool call through `engine.prepare` + `engine.execute` vs doing it raw.

* read_file on a small file (default policy, allowed) vs `open().read()` plus line
  numbering: medians in µs and the ratio; also prepare and execute alone.
* search_codebase on a large tree (the installed Django package, copied once into a
  temporary workspace) vs the same `rg` command line the tool builds (same flags, same
  pattern, same tree, all output read): medians in ms and the ratio.

Pure: no Django settings, no database. Run: .venv/bin/python benchmarks/bench_engine.py
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _common  # noqa: F401 - puts the project root on sys.path
import django
from _common import emit, markdown_table, parser, summary

from tools_app.core import engine
from tools_app.core.policy.defaults import DEFAULT_POLICY
from tools_app.core.policy.loader import policy_from_dict
from tools_app.core.policy.types import SessionCounters
from tools_app.core.tools.base import SandboxOptions, ToolContext
from tools_app.core.tools.registry import get_tool
from tools_app.core.tools.search import rg_binary

SMALL_FILE = "src/small.py"
SEARCH = "search_codebase"
SEARCHES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("literal `get_object_or_404`", {"pattern": "get_object_or_404"}),
    ("regex `def \\w+_view\\(`", {"pattern": r"def \w+_view\("}),
    ("regex `class \\w+Field\\b`, include `*.py`", {"pattern": r"class \w+Field\b",
                                                    "include": "*.py"}),
    ("literal `import` (many matches)", {"pattern": "import"}),
)  # fmt: skip


def make_workspace(root: Path) -> Path:
    workspace = root / "ws"
    (workspace / "src").mkdir(parents=True)
    lines = [f"def function_{i}(value):\n    return value * {i}\n\n" for i in range(20)]
    (workspace / SMALL_FILE).write_text("".join(lines))  # 60 lines, ~0.9 KB
    shutil.copytree(django.__path__[0], workspace / "django")
    return workspace


def raw_read(path: Path) -> str:
    with path.open() as handle:
        text = handle.read()
    return "\n".join(f"{n} | {line}" for n, line in enumerate(text.splitlines(), 1))


def rg_command(args: dict[str, Any]) -> list[str]:
    """The command line tools/search.py builds for these arguments (path ".")."""
    cmd = [rg_binary(), "--no-config", "--line-number", "--with-filename", "--no-heading"]
    cmd += ["--color=never", "--no-follow", "--hidden", "--max-columns=500"]
    cmd += ["--max-columns-preview", "--glob=!.git", "--glob=!node_modules"]
    if args.get("include"):
        cmd.append(f"--glob={args['include']}")
    return [*cmd, f"--regexp={args['pattern']}", "--", "."]


def raw_rg(workspace: Path, args: dict[str, Any]) -> int:
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    done = subprocess.run(rg_command(args), cwd=workspace, env=env, capture_output=True)
    return done.stdout.count(b"\n")


def context(workspace: Path) -> ToolContext:
    return ToolContext(workspace=workspace, sandbox=SandboxOptions())


def through_engine(policy: Any, workspace: Path, tool: str, args: dict[str, Any]) -> str:
    spec = get_tool(tool)
    prepared = engine.prepare(policy, spec, args, workspace, SessionCounters())
    assert prepared.status == "approved", prepared
    outcome = engine.execute(spec, prepared.args, context(workspace))
    assert outcome.status == "succeeded", outcome
    return outcome.result


def timed(
    samples: dict[str, list[float]], name: str, scale: float, run: Callable[..., Any], *args: Any
) -> Any:
    """`run(*args)`, its duration appended to `samples[name]` (ns / scale)."""
    start = time.perf_counter_ns()
    value = run(*args)
    samples.setdefault(name, []).append((time.perf_counter_ns() - start) / scale)
    return value


def bench_read(policy: Any, workspace: Path, rounds: int) -> dict[str, Any]:
    """Microseconds; the four variants are interleaved round by round."""
    args = {"path": SMALL_FILE}
    path = workspace / SMALL_FILE
    samples: dict[str, list[float]] = {}
    counters = SessionCounters()
    tool_context = context(workspace)
    spec = get_tool("read_file")
    for _ in range(rounds):
        timed(samples, "engine", 1e3, through_engine, policy, workspace, "read_file", args)
        timed(samples, "raw", 1e3, raw_read, path)
        prepared = timed(
            samples, "prepare", 1e3, engine.prepare, policy, spec, args, workspace, counters
        )
        timed(samples, "execute", 1e3, engine.execute, spec, prepared.args, tool_context)
    return {name: summary(values) for name, values in samples.items()}


def bench_search(policy: Any, workspace: Path, rounds: int) -> dict[str, Any]:
    """Milliseconds per search pattern, engine and raw rg interleaved."""
    found: dict[str, Any] = {}
    for label, args in SEARCHES:
        samples: dict[str, list[float]] = {}
        lines = 0
        for _ in range(rounds):
            timed(samples, "engine", 1e6, through_engine, policy, workspace, SEARCH, args)
            lines = timed(samples, "raw", 1e6, raw_rg, workspace, args)
        found[label] = {"matches": lines, **{k: summary(v) for k, v in samples.items()}}
    return found


def main() -> None:
    options = parser(__doc__.splitlines()[0]).parse_args()
    read_rounds, search_rounds = (300, 3) if options.quick else (3000, 15)
    policy = policy_from_dict(DEFAULT_POLICY)
    with tempfile.TemporaryDirectory(prefix="bench-engine-") as tmp:
        workspace = make_workspace(Path(tmp))
        bench_read(policy, workspace, 20)  # warm up: imports, pydantic, page cache
        raw_rg(workspace, SEARCHES[0][1])
        results = {
            "read_rounds": read_rounds,
            "search_rounds": search_rounds,
            "read_file_us": bench_read(policy, workspace, read_rounds),
            "search_ms": bench_search(policy, workspace, search_rounds),
        }
    emit("bench_engine", results, tables(results), options.json)


def tables(results: dict[str, Any]) -> list[str]:
    read = results["read_file_us"]
    first = markdown_table(
        ["read_file (60 lines, 0.9 KB)", "median µs", "p99 µs"],
        [
            ["engine.prepare + engine.execute", read["engine"]["median"], read["engine"]["p99"]],
            ["  engine.prepare alone", read["prepare"]["median"], read["prepare"]["p99"]],
            ["  engine.execute alone", read["execute"]["median"], read["execute"]["p99"]],
            ["raw open().read() + numbering", read["raw"]["median"], read["raw"]["p99"]],
            ["**ratio engine / raw**",
             f"{read['engine']['median'] / read['raw']['median']:.1f}x", ""],
        ],
    )  # fmt: skip
    rows = [
        [label, entry["matches"], entry["engine"]["median"], entry["raw"]["median"],
         f"{entry['engine']['median'] / entry['raw']['median']:.2f}x"]
        for label, entry in results["search_ms"].items()
    ]  # fmt: skip
    second = markdown_table(
        ["search_codebase on django/ (4.5k files, 50 MB)", "matching lines",
         "engine median ms", "raw rg median ms", "engine / raw"],
        rows,
    )  # fmt: skip
    return [
        f"read_file through the engine, {results['read_rounds']} rounds\n\n" + first,
        f"search_codebase through the engine vs raw rg, {results['search_rounds']} rounds "
        "per pattern\n\n" + second,
    ]


if __name__ == "__main__":
    main()
