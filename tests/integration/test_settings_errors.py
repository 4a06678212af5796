"""A wrong value in the environment stops every command with one line naming the setting
and what it takes: never a traceback, and never a typo quietly read as "no"."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WHOLE = "it must be a whole number"


def manage(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=base | {"AGENTWEB_VAR": str(tmp_path)} | env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("AGENTWEB_MODEL_TIMEOUT", "5m", f"AGENTWEB_MODEL_TIMEOUT is '5m': {WHOLE}"),
        ("AGENTWEB_WEB_PROCESSES", "two", f"AGENTWEB_WEB_PROCESSES is 'two': {WHOLE}"),
        ("AGENTWEB_HTTPS", "ture", "AGENTWEB_HTTPS is 'ture': use 1, true, yes or on, or 0"),
        ("AGENTWEB_LOG_FORMAT", "xml", "AGENTWEB_LOG_FORMAT is 'xml': text or json"),
        ("AGENTWEB_TRUSTED_PROXIES", "lb.internal", "AGENTWEB_TRUSTED_PROXIES has 'lb.internal'"),
    ],
)
@pytest.mark.parametrize("command", [("check",), ("up", "--port", "1")])
def test_a_wrong_setting_is_one_line_naming_it(
    tmp_path: Path, variable: str, value: str, says: str, command: tuple[str, ...]
) -> None:
    result = manage(tmp_path, *command, **{variable: value})
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"agentweb cannot start: {says}")
    assert lines[0].endswith("(set in the environment or in .env)")


@pytest.mark.parametrize(("value", "debug"), [("off", "False"), ("YES", "True"), ("", "False")])
def test_yes_and_no_are_read_in_their_usual_spellings(
    tmp_path: Path, value: str, debug: str
) -> None:
    result = manage(
        tmp_path,
        "shell",
        "-c",
        "from django.conf import settings; print(settings.DEBUG)",
        DJANGO_DEBUG=value,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == debug
