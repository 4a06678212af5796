"""Plain helpers of the agent CLI tests (the fixtures are in conftest.py)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from tests.browser.server import Daphne
from tests.helpers import Worker
from tools_app.models import ToolCall

WAIT_SECONDS = 120  # agentweb's hook wait in these tests


def printed_settings(agent: str, url: str) -> dict[str, Any]:
    """What `python manage.py hook_settings AGENT --url URL` prints: the tests run exactly
    that (the hook finds agentweb at the URL on its command line)."""
    out = StringIO()
    call_command("hook_settings", agent, "--url", url, stdout=out)
    return json.loads(out.getvalue())  # type: ignore[no-any-return]


def hook_env(hook_bin: Path, token: str) -> dict[str, str]:
    """The agent's environment: the token, and no AGENTWEB_URL (the printed hooks name it)."""
    path = f"{hook_bin}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    environ = {name: value for name, value in os.environ.items() if name != "AGENTWEB_URL"}
    return {**environ, "PATH": path, "AGENTWEB_TOKEN": token}


def awaiting_call(agent: subprocess.Popen[Any] | None = None) -> ToolCall:
    """The call that waits for a person; fails at once when the agent already ended."""
    deadline = time.monotonic() + 120
    while True:
        call = ToolCall.objects.filter(status="awaiting_approval").first()
        if call is not None:
            return call
        if agent is not None and agent.poll() is not None:
            out, err = agent.communicate()
            raise AssertionError(f"the agent ended, no call waits: {out}{err}"[-3000:])
        assert time.monotonic() < deadline, "no call came to wait for a person"
        time.sleep(0.1)


@contextmanager
def daphne_serving(
    stack: Worker, tmp_path_factory: pytest.TempPathFactory, **settings: str
) -> Iterator[str]:
    """agentweb under daphne on the test database and Redis, with these settings; its URL."""
    log = tmp_path_factory.mktemp("daphne") / "daphne.log"
    server = Daphne({**stack.env, "DJANGO_DEBUG": "0", **settings}, log)
    server.start()
    try:
        yield server.url
    finally:
        server.stop()
