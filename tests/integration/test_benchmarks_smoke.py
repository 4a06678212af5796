"""The benchmark scripts still run (their quick mode); the figures live in BENCHMARKS.md.

Marked `bench`: minutes long, so `make bench` runs it and `make test` leaves it out.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.bench
@pytest.mark.timeout(1200)  # nine scripts, three stacks at once in two of them
@pytest.mark.skipif(
    os.environ.get("DATABASE_URL", "").startswith("postgres"),
    reason="the benchmarks make their own SQLite stack; the SQLite run already ran them",
)
def test_every_benchmark_runs_in_quick_mode(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    done = subprocess.run(
        [sys.executable, "benchmarks/run_all.py", "--quick", "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=1170,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(out.read_text())
    assert results, "run_all wrote no results"
    assert "| " in done.stdout
