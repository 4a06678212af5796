"""Built-in skills, as data an admin may edit or delete: `test-writing` (instructions),
`release` (a `changelog_entry` prompt tool) and `lint` (a `check_syntax` command tool).
Each works on the demo repository (`tools_app/runtime/demo.py`)."""

from __future__ import annotations

from django.db import migrations

# Python's own parser over every .py file below PATH (default: the workspace): no
# dependency to install, nothing written (no __pycache__). The path argument reaches the
# command as an environment variable, quoted: never part of the shell text.
LINT_COMMAND = r"""python3 - "${AGENTWEB_ARG_PATH:-.}" <<'PY'
import ast, pathlib, sys
root = pathlib.Path(sys.argv[1])
files = [root] if root.is_file() else sorted(root.rglob("*.py"))
bad = 0
for path in files:
    if ".git" in path.parts:
        continue
    try:
        ast.parse(path.read_bytes(), str(path))
    except SyntaxError as error:
        bad += 1
        print(f"{path}:{error.lineno}:{error.offset}: {error.msg}")
print(f"checked {len(files)} file(s): {bad} with syntax errors")
sys.exit(1 if bad else 0)
PY"""

CHANGELOG_TEMPLATE = """Add this entry to CHANGELOG.md under the `## Unreleased` heading (create the file,
or the heading, if missing), in the `### $kind` section:

- $summary

Then mention the entry in task_done's summary."""

SKILLS = [
    {
        "name": "test-writing",
        "description": "Conventions for writing and running tests.",
        "triggers": ["test", "tests", "unit test", "failing test", "test case"],
        "instructions": (
            "When you write or fix tests: run the existing suite first to see what fails "
            "(in the demo repository: `python3 -m unittest -q`); add one test per behaviour, "
            "named after what it checks; keep each test independent of the others; run the "
            "suite again after every change and before task_done."
        ),
        "tools": [],
    },
    {
        "name": "release",
        "description": "Prepare a release: changelog entries in a consistent format.",
        "triggers": ["release", "changelog", "ship"],
        "instructions": (
            "Every user-visible change gets a changelog entry: call changelog_entry for the "
            "exact text, then add it with edit_file or write_file."
        ),
        "tools": [
            {
                "name": "changelog_entry",
                "description": "The changelog entry for a change, and where it goes.",
                "input_schema": {
                    "type": "object",
                    "properties": {
                        "summary": {"type": "string", "minLength": 1},
                        "kind": {
                            "type": "string",
                            "enum": ["Added", "Changed", "Fixed", "Removed"],
                        },
                    },
                    "required": ["summary", "kind"],
                    "additionalProperties": False,
                },
                "executor": {"kind": "prompt", "template": CHANGELOG_TEMPLATE},
            }
        ],
    },
    {
        "name": "lint",
        "description": "Check the repository's Python files for syntax errors.",
        "triggers": ["lint", "linter", "syntax error", "syntax errors"],
        "instructions": "Run check_syntax after editing Python files, and fix what it reports.",
        "tools": [
            {
                "name": "check_syntax",
                "description": (
                    "Parse every Python file (or those below `path`) and report syntax errors "
                    "as path:line:column: message. Exit code 1 when any file fails."
                ),
                "input_schema": {
                    "type": "object",
                    "properties": {"path": {"type": "string", "description": "Default: ."}},
                    "additionalProperties": False,
                },
                "executor": {"kind": "command", "command": LINT_COMMAND, "timeout": 120},
            }
        ],
    },
]


def add_skills(apps, schema_editor):
    Skill = apps.get_model("tools_app", "Skill")
    SkillTool = apps.get_model("tools_app", "SkillTool")
    for data in SKILLS:
        if Skill.objects.filter(name=data["name"]).exists():
            continue  # an admin's skill of that name stays as it is
        fields = {k: v for k, v in data.items() if k != "tools"}
        skill = Skill.objects.create(**fields)
        for tool in data["tools"]:
            SkillTool.objects.create(skill=skill, **tool)


def remove_skills(apps, schema_editor):
    Skill = apps.get_model("tools_app", "Skill")
    Skill.objects.filter(name__in=[data["name"] for data in SKILLS]).delete()


class Migration(migrations.Migration):
    dependencies = [("tools_app", "0008_skills")]

    operations = [migrations.RunPython(add_skills, remove_skills)]
