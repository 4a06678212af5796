"""Reading the environment: `.env`, and switches, numbers and lists that say clearly
when they are wrong (settings.py reads every setting through these)."""

from __future__ import annotations

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured


def load_dotenv(path: Path) -> None:
    """Read KEY=VALUE lines from `.env` without overriding the real environment."""
    if not path.is_file():
        return
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        os.environ.setdefault(key.strip(), value.strip().strip("'\""))


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def envbool(name: str, default: bool = False) -> bool:
    """A yes/no setting; a value that is neither (a typo such as "ture") is refused, so
    that it is never quietly taken for no."""
    value = os.environ.get(name, "").strip().lower()
    if not value:
        return default
    if value in _TRUE | _FALSE:
        return value in _TRUE
    raise ImproperlyConfigured(
        f"{name} is {os.environ[name]!r}: use 1, true, yes or on, or 0, false, no or off"
    )


def envint(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} is {value!r}: it must be a whole number") from None


def envlist(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]
