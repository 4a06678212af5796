"""What every benchmark script shares: the import path, statistics, tables, JSON.

The figures are medians and ratios on purpose: the machines these run on are shared
and noisy, so a mean or a best-of would mostly measure the neighbours.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def parser(description: str) -> argparse.ArgumentParser:
    """The options every script takes: `--quick` (a smoke run) and `--json FILE`."""
    found = argparse.ArgumentParser(description=description)
    found.add_argument("--quick", action="store_true", help="small counts (< 30 s): a smoke run")
    found.add_argument("--json", metavar="FILE", help="also write the results as JSON here")
    return found


def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile: a value that was actually measured."""
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


def summary(values: Sequence[float]) -> dict[str, float]:
    """Median and p99 of one series (same unit as the values), with the sample count."""
    return {
        "n": len(values),
        "median": statistics.median(values),
        "p99": percentile(values, 0.99),
    }


def loadavg() -> str:
    """The 1, 5 and 15 minute load averages: how busy the shared machine was."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def machine() -> dict[str, Any]:
    return {
        "nproc": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def fmt(value: Any) -> str:
    if isinstance(value, float):
        if value >= 100:
            return f"{value:,.0f}"
        if value >= 10:
            return f"{value:.1f}"
        return f"{value:.2f}"
    return str(value).replace("|", "\\|")


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(" --- " for _ in headers) + "|"]
    lines += ["| " + " | ".join(fmt(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def emit(name: str, results: dict[str, Any], tables: list[str], json_path: str | None) -> None:
    """Print the tables; write `{benchmark, machine, results, tables}` when asked."""
    print("\n\n".join(tables))
    if json_path:
        payload = {"benchmark": name, "machine": machine(), "results": results, "tables": tables}
        Path(json_path).write_text(json.dumps(payload, indent=2) + "\n")
