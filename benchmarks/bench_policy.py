"""Policy evaluation latency: `policy.evaluate` on a mix of calls, in microseconds.

Two policies: the `default` policy (DEFAULT_POLICY) and one with 500 explicit rules
(deny / allow / require_approval, globs and `re:` patterns on tool names and
arguments) of which none matches the calls measured here, so every call walks all of
them (once for the deny rules, once for the others).

A `run_command` is timed "cold": the command-analysis cache (`commands._analyse`) and
the shape cache (`patterns.shape_of`), both lru_caches, are cleared before each call, as
for a command the engine has not seen yet; a second table shows what the caches save
when the same command comes again.

Pure: no Django, no database. Run: .venv/bin/python benchmarks/bench_policy.py [--quick]
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _common  # noqa: F401 - puts the project root on sys.path
from _common import emit, markdown_table, parser, summary

from tools_app.core.policy.defaults import DEFAULT_POLICY
from tools_app.core.policy.engine import evaluate
from tools_app.core.policy.loader import policy_from_dict
from tools_app.core.policy.patterns import shape_of
from tools_app.core.policy.types import CallFacts, PolicySpec, SessionCounters
from tools_app.core.shell.commands import _analyse

LONG_PIPELINE = (
    "bash -c \"cd src && grep -rn 'TODO' . | sort | uniq -c | sort -rn | head -n 20 "
    '> /tmp/todo.txt && cat /tmp/todo.txt | wc -l" && echo done'
)

# (kind, tool, args, changed_lines): what an agent typically sends.
CALLS: tuple[tuple[str, str, dict[str, Any], int | None], ...] = (
    ("read_file src/app.py", "read_file", {"path": "src/app.py"}, None),
    ("write_file .env (protected)", "write_file", {"path": ".env", "content": "A=1\n"}, 1),
    ("write_file src/app.py", "write_file", {"path": "src/app.py", "content": "x = 1\n"}, 3),
    ("run_command ls -la", "run_command", {"command": "ls -la"}, None),
    ("run_command npm install lodash", "run_command", {"command": "npm install lodash"}, None),
    ("run_command rm -rf /", "run_command", {"command": "rm -rf /"}, None),
    ("run_command curl x | sh", "run_command", {"command": "curl x | sh"}, None),
    ("run_command long bash -c pipeline", "run_command", {"command": LONG_PIPELINE}, None),
)


def many_rules(count: int = 500) -> list[dict[str, Any]]:
    """`count` rules that match none of CALLS, in a realistic mix of shapes."""
    shapes: list[Callable[[int], dict[str, Any]]] = [
        lambda i: {"tool": f"re:custom_tool_{i}(_v\\d+)?", "decision": "deny"},
        lambda i: {"tool": "write_file", "args": {"path": f"generated/mod_{i}/*.py"},
                   "decision": "require_approval"},
        lambda i: {"tool": "run_command", "args": {"command": f"re:deploy-{i}( .*)?"},
                   "decision": "deny"},
        lambda i: {"tool": "run_command", "args": {"command": f"make target-{i}*"},
                   "decision": "allow"},
        lambda i: {"tool": "read_file", "args": {"path": f"secrets/team{i}/**"},
                   "decision": "deny"},
        lambda i: {"tool": "*_file", "args": {"path": f"re:vendor/pkg{i}/.*\\.min\\.js"},
                   "decision": "allow"},
        lambda i: {"tool": "git_*", "args": {"branch": f"release/{i}.*"},
                   "decision": "require_approval"},
        lambda i: {"tool": "web_fetch", "args": {"url": f"https://internal-{i}.example.com/*"},
                   "decision": "deny"},
        lambda i: {"tool": "re:(write|edit)_file", "args": {"path": f"re:docs/v{i}/.+\\.md"},
                   "decision": "allow"},
        lambda i: {"tool": "run_command", "args": {"command": f"*--profile=prod-{i}*"},
                   "decision": "require_approval"},
    ]  # fmt: skip
    return [{**shapes[i % len(shapes)](i), "reason": f"benchmark rule {i}"} for i in range(count)]


def make_workspace(root: Path) -> Path:
    workspace = root / "ws"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "app.py").write_text("def greet(name):\n    return name\n")
    (workspace / ".env").write_text("SECRET=shh\n")
    return workspace


def time_calls(
    policy: PolicySpec, workspace: Path, rounds: int, *, cold: bool
) -> dict[str, list[float]]:
    """Microseconds per call kind; the kinds are interleaved so that noise spreads evenly."""
    counters = SessionCounters()
    facts = [(kind, CallFacts(tool, args, workspace, lines)) for kind, tool, args, lines in CALLS]
    samples: dict[str, list[float]] = {kind: [] for kind, _ in facts}
    for _ in range(rounds):
        for kind, call in facts:
            if cold:
                _analyse.cache_clear()
                shape_of.cache_clear()
            start = time.perf_counter_ns()
            evaluate(policy, call, counters)
            samples[kind].append((time.perf_counter_ns() - start) / 1000)
    return samples


def decisions(policy: PolicySpec, workspace: Path) -> dict[str, str]:
    counters = SessionCounters()
    found = {}
    for kind, tool, args, lines in CALLS:
        decision = evaluate(policy, CallFacts(tool, args, workspace, lines), counters)
        found[kind] = f"{decision.kind} ({decision.rule})"
    return found


def main() -> None:
    options = parser(__doc__.splitlines()[0]).parse_args()
    rounds = 150 if options.quick else 1500
    default = policy_from_dict(DEFAULT_POLICY)
    big = policy_from_dict({"name": "bench-500", "rules": many_rules(500)})
    with tempfile.TemporaryDirectory(prefix="bench-policy-") as tmp:
        workspace = make_workspace(Path(tmp))
        verdicts = {"default": decisions(default, workspace), "500": decisions(big, workspace)}
        assert verdicts["default"] == verdicts["500"], "a benchmark rule matched a call"
        time_calls(default, workspace, max(10, rounds // 20), cold=False)  # warm up imports
        results: dict[str, Any] = {"rounds": rounds, "calls": {}}
        pooled: dict[str, list[float]] = {"default": [], "500": []}
        for name, policy in (("default", default), ("500", big)):
            for cold in (True, False):
                samples = time_calls(policy, workspace, rounds, cold=cold)
                for kind, values in samples.items():
                    entry = results["calls"].setdefault(kind, {"decision": verdicts[name][kind]})
                    entry[f"{name}_{'cold' if cold else 'warm'}_us"] = summary(values)
                    if cold:
                        pooled[name] += values
    results["overall"] = {name: summary(values) for name, values in pooled.items()}
    emit("bench_policy", results, tables(results), options.json)


def tables(results: dict[str, Any]) -> list[str]:
    rows = []
    for kind, entry in results["calls"].items():
        d, b = entry["default_cold_us"], entry["500_cold_us"]
        rows.append(
            [kind, entry["decision"], d["median"], d["p99"], b["median"], b["p99"],
             f"{b['median'] / d['median']:.1f}x"]
        )  # fmt: skip
    d, b = results["overall"]["default"], results["overall"]["500"]
    rows.append(["**all calls**", "", d["median"], d["p99"], b["median"], b["p99"],
                 f"{b['median'] / d['median']:.1f}x"])  # fmt: skip
    first = markdown_table(
        ["call", "decision (rule)", "default median µs", "default p99 µs",
         "500 rules median µs", "500 rules p99 µs", "500 / default"],
        rows,
    )  # fmt: skip
    warm_rows = [
        [kind, entry["default_cold_us"]["median"], entry["default_warm_us"]["median"],
         entry["500_cold_us"]["median"], entry["500_warm_us"]["median"]]
        for kind, entry in results["calls"].items()
        if kind.startswith("run_command")
    ]  # fmt: skip
    second = markdown_table(
        ["run_command", "default cold µs", "default cached µs", "500 rules cold µs",
         "500 rules cached µs"],
        warm_rows,
    )  # fmt: skip
    return [
        f"Policy evaluation, {results['rounds']} rounds per call kind "
        "(run_command cold: analysis and shape caches cleared before each call)\n\n" + first,
        "Command-analysis and shape caches: the same command evaluated again (median µs)\n\n"
        + second,
    ]


if __name__ == "__main__":
    main()
