"""What a process pays at start: the MCP SDK (about 0.9 s of CPU to import) is loaded only
where it is used, not by every process that loads the services: a tool or notification
worker, the clock, each `manage.py` command."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.helpers import ROOT

LOADS = """
import json, os, sys
os.environ["DJANGO_SETTINGS_MODULE"] = "agentweb.settings"
import django
django.setup()
import agentweb.celery, tools_app.services, tools_app.tasks
from tools_app.core.upstreams import pool
pool.upstream_failures
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules} & {"mcp", "mcp_types"})))
"""


def test_the_services_and_the_workers_tasks_load_without_the_mcp_sdk() -> None:
    env = {key: value for key, value in os.environ.items() if key != "DATABASE_URL"}
    done = subprocess.run(
        [sys.executable, "-c", LOADS], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == []


def test_an_upstream_failure_is_still_caught_as_the_sdks_error() -> None:
    from mcp.shared.exceptions import MCPError

    from tools_app.core.upstreams.pool import UpstreamUnavailable, upstream_failures

    assert upstream_failures() == (UpstreamUnavailable, MCPError)
