"""The module map (docs/architecture.md) names every room and module of tools_app/, and
nothing else; the life of a tool call there names files that exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "tools_app"
PAGE = ROOT / "docs" / "architecture.md"


def _map_rows() -> list[str]:
    section = PAGE.read_text().split("\n## Module map", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| `")]


def _named_paths() -> set[str]:
    named = set()
    for row in _map_rows():
        first_cell = row.split("|")[1]
        named.update(re.findall(r"`(tools_app/[^`]+)`", first_cell))
    return named


def _rooms() -> set[str]:
    """Each entry directly under tools_app/, and each package directly under core/."""
    found = set()
    for entry in APP.iterdir():
        if entry.name.startswith(("_", ".")):
            continue
        if entry.is_dir() and (entry / "__init__.py").is_file():
            found.add(f"tools_app/{entry.name}/")
        elif entry.suffix == ".py":
            found.add(f"tools_app/{entry.name}")
    for entry in (APP / "core").iterdir():
        if entry.is_dir() and (entry / "__init__.py").is_file():
            found.add(f"tools_app/core/{entry.name}/")
    return found


def test_the_module_map_names_every_room_of_tools_app() -> None:
    missing = _rooms() - _named_paths()
    assert not missing, f"the module map in docs/architecture.md misses {sorted(missing)}"


def test_the_module_map_names_nothing_that_is_not_there() -> None:
    absent = {path for path in _named_paths() if not (ROOT / path).exists()}
    assert not absent, (
        f"the module map in docs/architecture.md names {sorted(absent)}, which do not exist"
    )


def test_the_top_level_is_a_handful_of_rooms() -> None:
    modules = [path for path in _rooms() if path.count("/") == 1 and path.endswith(".py")]
    assert len(modules) <= 8, f"modules directly under tools_app/: {sorted(modules)}"


def test_every_file_path_in_the_life_of_a_tool_call_exists() -> None:
    page = PAGE.read_text()
    life = page.split("\n## The life of a tool call", 1)[1].split("\n## Module map", 1)[0]
    paths = set(re.findall(r"`([a-z_/]+\.py)`", life))
    absent = {path for path in paths if not (APP / path).exists()}
    assert paths and not absent, f"the life of a tool call names {sorted(absent)}"
