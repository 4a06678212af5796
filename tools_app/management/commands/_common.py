"""Small helpers shared by the management commands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError

from tools_app import selectors
from tools_app.models import Policy


def load_json_argument(text: str, *, name: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CommandError(f"{name} is not valid JSON: {exc}") from exc


def existing_policy(name: str) -> Policy:
    policy = selectors.policy_by_name(name)
    if policy is None:
        known = ", ".join(Policy.objects.values_list("name", flat=True)) or "none"
        raise CommandError(f"There is no policy named {name!r} (known: {known}).")
    return policy


def existing_directory(path: str) -> Path:
    directory = Path(path).expanduser().resolve()
    if not directory.is_dir():
        raise CommandError(f"--workspace {path!r} is not a directory.")
    return directory


def print_json_line(command: Any, data: dict[str, Any]) -> None:
    command.stdout.write(json.dumps(data, ensure_ascii=False))
