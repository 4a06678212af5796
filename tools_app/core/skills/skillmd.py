"""The Agent Skills folder format (SKILL.md, as Claude Code and Codex read it): YAML front
matter with `name` and `description` (and, here, optional `triggers`), the Markdown body
as the skill's instructions."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from tools_app.core.skills.definitions import SkillInvalid

SKILL_FILE = "SKILL.md"
_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)(.*)\Z", re.S)


def skill_folders(path: Path) -> list[Path]:
    """`path` itself when it holds SKILL.md, else its subfolders that do, sorted."""
    if (path / SKILL_FILE).is_file():
        return [path]
    return sorted(child for child in path.iterdir() if (child / SKILL_FILE).is_file())


def skill_dict_from_markdown(text: str, where: str) -> dict[str, Any]:
    """A skill file's dict from a SKILL.md's text; SkillInvalid names what is missing."""
    found = _FRONT.match(text)
    if found is None:
        raise SkillInvalid(where, "must start with YAML front matter between --- lines")
    try:
        front = yaml.safe_load(found.group(1)) or {}
    except yaml.YAMLError as exc:
        raise SkillInvalid(where, f"the front matter is not valid YAML: {exc}") from None
    if not isinstance(front, dict):
        raise SkillInvalid(where, "the front matter must be a mapping of keys")
    name = front.get("name")
    if not isinstance(name, str) or not name.strip():
        raise SkillInvalid(f"{where}: name", "the front matter needs a `name`")
    triggers = front.get("triggers", [])
    if isinstance(triggers, str):
        triggers = [part.strip() for part in triggers.split(",") if part.strip()]
    return {
        "name": name.strip(),
        "description": str(front.get("description") or "").strip(),
        "triggers": triggers,
        "instructions": found.group(2).strip(),
    }


def read_skill_folder(folder: Path) -> dict[str, Any]:
    where = str(folder / SKILL_FILE)
    try:
        text = (folder / SKILL_FILE).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SkillInvalid(where, f"cannot be read: {exc}") from None
    return skill_dict_from_markdown(text, where)
