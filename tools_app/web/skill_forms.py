"""The skill pages' forms: what a person types, turned into the skill file's dict that
`services/skills.py` checks (the same check as the API and `import_skills`), and that
service's refusals put back on the field they name."""

from __future__ import annotations

import json
import re
from typing import Any

from django import forms

from tools_app.core.skills.definitions import TOOL_KEYS, TOOL_NAME, SkillInvalid
from tools_app.core.skills.executors import KINDS
from tools_app.core.skills.skillmd import skill_dict_from_markdown
from tools_app.core.tools.jsonsafe import UnsafeJSON, loads
from tools_app.errors import Conflict, ServiceError
from tools_app.services.skills import SkillRefused

_TEXT_FIELDS = ("name", "description", "triggers", "instructions", "enabled")
TOOLS_HELP = (
    'A JSON list of tools, each {"name", "description", "inputSchema", "executor"} '
    '(and "enabled": false to hide one). The executor is {"kind": "command", "command", '
    '"timeout"} (the arguments arrive as AGENTWEB_ARG_NAME variables and JSON on stdin), '
    '{"kind": "http", "url", "method", "headers": {"NAME": {"env": "VARIABLE"}}} (the '
    'arguments POSTed as JSON) or {"kind": "prompt", "template"} ($name fills an argument).'
)
# A real tool, valid as it is: shown beside the tools field and inserted by its button.
EXAMPLE_TOOL: dict[str, Any] = {
    "name": "run_lint",
    "description": "Run the linter on one file or folder and report what it finds",
    "inputSchema": {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "A file or folder in the workspace"}
        },
        "required": ["path"],
    },
    "executor": {"kind": "command", "command": 'ruff check -- "$AGENTWEB_ARG_PATH"', "timeout": 60},
}
# What the page's own check (static/agentweb/skill_tools.js) knows, from the one source.
TOOLS_CHECK_ATTRS = {
    "data-tool-keys": " ".join(sorted(TOOL_KEYS)),
    "data-tool-name": TOOL_NAME.pattern,
    "data-executor-kinds": " ".join(KINDS),
    "aria-describedby": "id_tools_helptext id_tools_check",
}


class SkillForm(forms.Form):
    name = forms.CharField(
        label="Name",
        max_length=100,
        help_text="Letters, digits, - and _.",
        widget=forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false"}),
    )
    description = forms.CharField(label="Description", required=False, max_length=5000)
    triggers = forms.CharField(
        label="Triggers",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="One per line or comma-separated; a word or phrase in a task activates "
        "the skill. Without triggers the skill never activates.",
    )
    instructions = forms.CharField(
        label="Instructions",
        required=False,
        widget=forms.Textarea(attrs={"rows": 6}),
        help_text="Added to the agent's prompt while the skill is active.",
    )
    enabled = forms.BooleanField(label="Enabled", required=False, initial=True)
    tools = forms.CharField(
        label="Tools (JSON)",
        required=False,
        initial="[]",
        widget=forms.Textarea(
            attrs={"rows": 14, "spellcheck": "false", "class": "code", **TOOLS_CHECK_ATTRS}
        ),
        help_text=TOOLS_HELP,
    )

    def clean_triggers(self) -> list[str]:
        text = self.cleaned_data.get("triggers") or ""
        return [part.strip() for part in re.split(r"[\n,]", text) if part.strip()]

    def clean_tools(self) -> object:
        text = (self.cleaned_data.get("tools") or "").strip() or "[]"
        try:
            tools = loads(text.encode(), name="tools")
        except UnsafeJSON as exc:
            raise forms.ValidationError(f"{exc}.") from None
        if not isinstance(tools, list):
            raise forms.ValidationError(
                f"tools must be a JSON list [ … ] of tools, not {_json_kind(tools)}."
            )
        return tools

    def skill_dict(self) -> dict[str, Any]:
        """The skill file's dict (valid form only)."""
        return {key: self.cleaned_data[key] for key in (*_TEXT_FIELDS, "tools")}

    def refuse(self, exc: ServiceError) -> None:
        """Show the service's refusal on the field it names (else on the form)."""
        self.add_error(_field_of(exc), str(exc))


def _json_kind(value: object) -> str:
    names = {dict: "an object { … }", str: "a string", bool: "true or false"}
    return names.get(type(value), "a number" if isinstance(value, int | float) else "null")


def example_tool_json() -> str:
    return json.dumps(EXAMPLE_TOOL, indent=2)


def _field_of(exc: ServiceError) -> str | None:
    if isinstance(exc, Conflict):
        return "name"
    where = exc.field if isinstance(exc, SkillRefused) else ""
    root = re.split(r"[.\[]", where, maxsplit=1)[0]
    if root in (*_TEXT_FIELDS, "tools"):
        return root
    return "tools" if "tools" in str(exc) else None


def skill_initial(data: dict[str, Any]) -> dict[str, Any]:
    """A skill file's dict as the form shows it."""
    return {
        "name": data["name"],
        "description": data["description"],
        "triggers": "\n".join(data["triggers"]),
        "instructions": data["instructions"],
        "enabled": data["enabled"],
        "tools": json.dumps(data["tools"], indent=2),
    }


class SkillImportForm(forms.Form):
    file = forms.FileField(
        label="File",
        required=False,
        help_text="A skill file (JSON: one skill or a list) or a SKILL.md.",
    )
    text = forms.CharField(
        label="Or paste",
        required=False,
        widget=forms.Textarea(attrs={"rows": 12, "spellcheck": "false", "class": "code"}),
        help_text="JSON in the skill file's format, or a SKILL.md (front matter between "
        "--- lines: name, description, optional triggers; the body is the instructions).",
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        upload, text = data.get("file"), (data.get("text") or "").strip()
        if upload is None and not text:
            raise forms.ValidationError("Choose a file or paste a skill.")
        if upload is not None:
            try:
                text = upload.read().decode("utf-8").strip()
            except UnicodeDecodeError:
                raise forms.ValidationError("The file is not UTF-8 text.") from None
        data["skills"] = _parse(text, "file" if upload is not None else "text")
        return data


def _parse(text: str, where: str) -> object:
    """JSON, or a SKILL.md (it starts with front matter)."""
    try:
        if text.startswith("---"):
            return skill_dict_from_markdown(text, "SKILL.md")
        return loads(text.encode(), name=where)
    except (SkillInvalid, UnsafeJSON) as exc:
        raise forms.ValidationError(str(exc)) from None
