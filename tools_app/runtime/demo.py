"""The demo: a tiny Python package with a failing test, and the scripted agent that fixes
it while meeting every kind of policy decision. Plain data."""

from __future__ import annotations

from typing import Any

TASK = "Make parse() accept an empty string (the test_empty test fails), then open a PR."

FILES: dict[str, str] = {
    "README.md": "# calc\n\nParses comma-separated numbers.\n\n    python3 -m unittest -q\n",
    "calc/__init__.py": "",
    "calc/parse.py": (
        "def parse(text):\n"
        '    """Parse "1,2,3" into [1, 2, 3]."""\n'
        '    return [int(part) for part in text.split(",")]\n'
    ),
    "tests/__init__.py": "",
    "tests/test_parse.py": (
        "import unittest\n\n"
        "from calc.parse import parse\n\n\n"
        "class ParseTest(unittest.TestCase):\n"
        "    def test_numbers(self):\n"
        '        self.assertEqual(parse("1, 2,3"), [1, 2, 3])\n\n'
        "    def test_empty(self):\n"
        '        self.assertEqual(parse(""), [])\n'
    ),
    "requirements.txt": "",
}

CI_WORKFLOW = (
    "name: tests\non: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n"
    "      - uses: actions/checkout@v4\n      - run: python3 -m unittest -q\n"
)


def script() -> list[dict[str, Any]]:
    """The steps: reads and a search (allowed), the test run, an edit (allowed), a
    dangerous command (denied), a CI file (protected: waits), an install (waits), a
    branch and a commit, and a pull request (waits), then task_done."""
    return [
        {"say": "I'll read the project first."},
        {"tool": "read_file", "args": {"path": "README.md"}},
        {"tool": "search_codebase", "args": {"pattern": "def parse"}},
        {"tool": "read_file", "args": {"path": "calc/parse.py"}},
        {"say": "Run the tests to see the failure."},
        {"tool": "run_command", "args": {"command": "python3 -m unittest -q"}},
        {"say": "parse('') fails on int(''): skip empty parts."},
        {
            "tool": "edit_file",
            "args": {
                "path": "calc/parse.py",
                "old_string": 'for part in text.split(",")]',
                "new_string": 'for part in text.split(",") if part.strip()]',
            },
        },
        {"tool": "run_command", "args": {"command": "python3 -m unittest -q"}},
        {"say": "Clean up everything, to be sure nothing stale remains."},
        {"tool": "run_command", "args": {"command": "rm -rf /"}},
        {"say": "Add CI so this stays fixed."},
        {
            "tool": "write_file",
            "args": {"path": ".github/workflows/ci.yml", "content": CI_WORKFLOW},
        },
        {"tool": "run_command", "args": {"command": "pip install pytest"}},
        {"tool": "git_branch", "args": {"action": "create", "name": "fix-parse-empty"}},
        {
            "tool": "git_commit",
            "args": {"message": "parse(): accept an empty string", "files": ["calc/parse.py"]},
        },
        {
            "tool": "create_pull_request",
            "args": {
                "title": "parse(): accept an empty string",
                "body": "Empty parts are skipped, so parse('') is []. test_empty passes.",
                "base": "main",
            },
        },
        {
            "tool": "task_done",
            "args": {
                "summary": "parse() skips empty parts; test_empty passes; a PR is open.",
                "files_changed": ["calc/parse.py"],
            },
        },
    ]
