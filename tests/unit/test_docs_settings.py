"""docs/settings.md names every environment variable agentweb's code reads, and nothing
the code no longer reads."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "settings.md"
SOURCES = ("agentweb", "tools_app", "agentweb_hook")
OURS = re.compile(r"(?:AGENTWEB|DJANGO)_[A-Z0-9_]*[A-Z0-9]")
ENV_READERS = {"get", "getenv", "envint", "envbool", "envlist"}
NOT_SETTINGS = {"PATH", "HOME"}  # the system's, passed on to git and ripgrep


def _env_name(node: ast.AST) -> str | None:
    """The variable a call like os.environ.get("X"), envint("X", 1) or os.environ["X"] reads."""
    if isinstance(node, ast.Subscript) and ast.unparse(node.value).endswith("environ"):
        key = node.slice
    elif isinstance(node, ast.Call) and node.args:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        owner = ast.unparse(func.value) if isinstance(func, ast.Attribute) else ""
        if name not in ENV_READERS or (name == "get" and not owner.endswith("environ")):
            return None
        key = node.args[0]
    else:
        return None
    if isinstance(key, ast.Constant) and isinstance(key.value, str):
        return key.value
    return None


def read_by_the_code() -> set[str]:
    names: set[str] = set()
    for source in SOURCES:
        for path in (ROOT / source).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if found := _env_name(node):
                    names.add(found)
                elif isinstance(node, ast.Constant) and OURS.fullmatch(str(node.value)):
                    names.add(str(node.value))
    return names - NOT_SETTINGS


def documented() -> set[str]:
    """The names in the first column of the page's tables."""
    rows = [line for line in PAGE.read_text().splitlines() if line.startswith("| `")]
    return {name for row in rows for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", row.split("|")[1])}


def test_every_setting_the_code_reads_is_documented() -> None:
    missing = read_by_the_code() - documented()
    assert not missing, f"docs/settings.md does not name {sorted(missing)}"


def test_the_settings_page_names_only_settings_the_code_reads() -> None:
    stale = documented() - read_by_the_code()
    assert not stale, f"docs/settings.md names {sorted(stale)}, which the code never reads"
