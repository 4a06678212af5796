"""Small helpers shared by the management commands.

Whatever the command line carries (a lone surrogate from undecodable bytes, NUL from
`call_command`, JSON nested or numbered beyond reason) ends as a CommandError that
says what is wrong, before anything is stored: never a traceback.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError

from tools_app.core.tools.jsonsafe import UnsafeJSON, loads, printable, storable_json, text_problem
from tools_app.models import Policy
from tools_app.selectors import records


def load_json_argument(text: str, *, name: str) -> Any:
    """`text` parsed as strict JSON that every store can keep, or a CommandError saying why."""
    try:
        return loads(text, name=name)
    except UnsafeJSON as exc:
        raise CommandError(str(exc)) from None


def read_file_argument(name: str) -> str:
    """The text of the file `name` (`-`: standard input), or a CommandError saying why not."""
    try:
        return sys.stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise CommandError(f"Cannot read {printable(name)}: {exc}") from exc


def checked_text(value: str, *, name: str) -> str:
    """A command-line string without lone surrogates or NUL (a database cannot take them)."""
    found = text_problem(value, name)
    if found:
        raise CommandError(found)
    return value


def existing_policy(name: str) -> Policy:
    policy = records.policy_by_name(checked_text(name, name="--policy"))
    if policy is None:
        known = ", ".join(Policy.objects.values_list("name", flat=True)) or "none"
        raise CommandError(f"There is no policy named {name!r} (known: {known}).")
    return policy


def existing_directory(path: str) -> Path:
    try:
        directory = Path(checked_text(path, name="--workspace")).expanduser().resolve()
        found = directory.is_dir()
    except (OSError, ValueError) as exc:
        raise CommandError(f"--workspace {path!r} cannot be used: {exc}") from None
    if not found:
        raise CommandError(f"--workspace {path!r} is not a directory.")
    return directory


def print_json_line(command: Any, data: dict[str, Any]) -> None:
    """One JSON line; text a terminal cannot encode (a surrogate in a result) is replaced."""
    command.stdout.write(json.dumps(storable_json(data), ensure_ascii=False))
