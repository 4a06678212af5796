"""The gateway's mapping and gate mode: native tool uses judged from their input alone."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tools_app.core.gateway.judging import prepare_native
from tools_app.core.gateway.mapping import map_native, native_tool_name
from tools_app.core.policy.defaults import DEFAULT_POLICY
from tools_app.core.policy.loader import policy_from_dict
from tools_app.core.policy.types import Rule, SessionCounters

DEFAULT = policy_from_dict(DEFAULT_POLICY)
CWD = "/home/alice/project"

MAPPINGS: list[tuple[str, dict[str, Any], str, dict[str, Any], str]] = [
    ("Bash", {"command": "ls -la"}, "run_command", {"command": "ls -la"}, "core"),
    (
        "Bash",
        {"command": "make", "timeout": 90000, "description": "build"},
        "run_command",
        {"command": "make", "timeout": 90.0},
        "core",
    ),
    (
        "Write",
        {"file_path": f"{CWD}/src/a.py", "content": "x = 1\n"},
        "write_file",
        {"path": "src/a.py", "content": "x = 1\n"},
        "core",
    ),
    (
        "Write",
        {"file_path": "/etc/passwd", "content": "x"},
        "write_file",
        {"path": "/etc/passwd", "content": "x"},
        "core",
    ),
    (
        "Edit",
        {"file_path": f"{CWD}/a.py", "old_string": "a", "new_string": "b"},
        "edit_file",
        {"path": "a.py", "old_string": "a", "new_string": "b"},
        "core",
    ),
    (
        "Read",
        {"file_path": f"{CWD}/README.md", "offset": 3},
        "read_file",
        {"path": "README.md", "offset": 3},
        "core",
    ),
    (
        "Glob",
        {"pattern": "**/*.py"},
        "list_files",
        {"path": ".", "pattern": "**/*.py", "recursive": True},
        "core",
    ),
    (
        "Grep",
        {"pattern": "TODO", "path": f"{CWD}/src", "glob": "*.py"},
        "search_codebase",
        {"pattern": "TODO", "path": "src", "include": "*.py"},
        "core",
    ),
    (
        "WebFetch",
        {"url": "https://example.com", "prompt": "sum"},
        "web_fetch",
        {"url": "https://example.com"},
        "core",
    ),
    (
        "Agent",
        {"description": "Look", "prompt": "find it"},
        "spawn_subagent",
        {"title": "Look", "description": "find it"},
        "core",
    ),
    ("mcp__github__create_issue", {"title": "t"}, "mcp.github.create_issue", {"title": "t"}, "mcp"),
    ("TodoWrite", {"todos": []}, "native.TodoWrite", {"todos": []}, "no_effect"),
    (
        "NotebookEdit",
        {"notebook_path": "n.ipynb"},
        "native.NotebookEdit",
        {"notebook_path": "n.ipynb"},
        "unknown",
    ),
    ("mcp__broken", {}, "native.mcp__broken", {}, "unknown"),
    # Gemini CLI names an MCP tool `mcp_SERVER_TOOL` (the server holds no `_`)
    ("mcp_github_create_issue", {"title": "t"}, "mcp.github.create_issue", {"title": "t"}, "mcp"),
    ("mcp_broken", {}, "native.mcp_broken", {}, "unknown"),
    # Codex CLI 0.171: its shell tool reaches the hook as `Bash`; its apply_patch is read.
    (
        "apply_patch",
        {"command": "*** Begin Patch\n*** Add File: docs/a.md\n+# A\n+\n*** End Patch\n"},
        "write_file",
        {"path": "docs/a.md", "content": "# A\n\n"},
        "core",
    ),
    (
        "apply_patch",
        {
            "command": f"*** Begin Patch\n*** Update File: {CWD}/a.py\n"
            "@@ def f():\n x = 1\n-y = 2\n+y = 3\n*** End Patch"
        },
        "edit_file",
        {"path": "a.py", "old_string": "x = 1\ny = 2", "new_string": "x = 1\ny = 3"},
        "core",
    ),
    (
        "apply_patch",
        {"command": "*** Begin Patch"},
        "native.apply_patch",
        {"command": "*** Begin Patch"},
        "unknown",
    ),
    # Gemini CLI 0.61: its own names and argument keys.
    (
        "run_shell_command",
        {"command": "ls", "description": "list"},
        "run_command",
        {"command": "ls"},
        "core",
    ),
    (
        "run_shell_command",
        {"command": "ls", "dir_path": "/srv/other dir"},
        "run_command",
        {"command": "cd '/srv/other dir' && ls"},
        "core",
    ),
    (
        "run_shell_command",
        {"command": "ls", "dir_path": CWD},
        "run_command",
        {"command": "ls"},
        "core",
    ),
    (
        "write_file",
        {"file_path": f"{CWD}/.env", "content": "A=1\n"},
        "write_file",
        {"path": ".env", "content": "A=1\n"},
        "core",
    ),
    (
        "replace",
        {"file_path": f"{CWD}/a.py", "old_string": "a", "new_string": "b", "instruction": "why"},
        "edit_file",
        {"path": "a.py", "old_string": "a", "new_string": "b"},
        "core",
    ),
    (
        "read_file",
        {"file_path": f"{CWD}/a.py", "start_line": 3, "end_line": 5},
        "read_file",
        {"path": "a.py", "offset": 3, "limit": 3},
        "core",
    ),
    (
        "glob",
        {"pattern": "*.py", "dir_path": f"{CWD}/src"},
        "list_files",
        {"path": "src", "pattern": "*.py", "recursive": True},
        "core",
    ),
    ("list_directory", {"dir_path": CWD}, "list_files", {"path": "."}, "core"),
    (
        "grep_search",
        {"pattern": "TODO", "include_pattern": "*.py"},
        "search_codebase",
        {"pattern": "TODO", "path": ".", "include": "*.py"},
        "core",
    ),
    (
        "search_file_content",
        {"pattern": "x"},
        "search_codebase",
        {"pattern": "x", "path": "."},
        "core",
    ),
    ("write_todos", {"todos": []}, "native.write_todos", {"todos": []}, "no_effect"),
    (
        "web_fetch",
        {"prompt": "read https://x"},
        "native.web_fetch",
        {"prompt": "read https://x"},
        "unknown",
    ),
    (
        "read_many_files",
        {"include": ["**"]},
        "native.read_many_files",
        {"include": ["**"]},
        "unknown",
    ),
]


@pytest.mark.parametrize(("native", "native_input", "tool", "args", "kind"), MAPPINGS)
def test_it_maps_each_native_tool(
    native: str, native_input: dict[str, Any], tool: str, args: dict[str, Any], kind: str
) -> None:
    mapped = map_native(native, native_input, CWD)
    assert (mapped.tool, mapped.args, mapped.kind, mapped.problem) == (tool, args, kind, "")


@pytest.mark.parametrize(
    ("native", "native_input", "problem"),
    [
        ("Bash", {}, "`command` must be a string, got nothing"),
        ("Bash", {"command": ["ls"]}, "`command` must be a string, got list"),
        ("Bash", {"command": "ls", "timeout": "soon"}, "`timeout` must be a number, got str"),
        ("Write", {"file_path": 3, "content": "x"}, "`file_path` must be a string, got int"),
        (
            "Edit",
            {"file_path": "a", "old_string": "a", "new_string": "b", "replace_all": "yes"},
            "`replace_all` must be true or false, got str",
        ),
        (
            "replace",
            {"file_path": "a", "old_string": "a", "new_string": "b", "allow_multiple": 1},
            "`allow_multiple` must be true or false, got int",
        ),
        (
            "run_shell_command",
            {"command": "ls", "dir_path": 7},
            "`dir_path` must be a string, got int",
        ),
    ],
)
def test_it_names_what_does_not_fit_the_native_shape(
    native: str, native_input: dict[str, Any], problem: str
) -> None:
    assert map_native(native, native_input, CWD).problem == problem


def test_mcp_names_keep_underscores_inside_the_tool() -> None:
    assert native_tool_name("mcp__my_server__do__it") == "mcp.my_server.do__it"


def judge(native: str, native_input: dict[str, Any], policy: Any = DEFAULT, cwd: str = CWD) -> Any:
    _, prepared = prepare_native(policy, native, native_input, cwd, SessionCounters())
    return prepared


GATE: list[tuple[str, dict[str, Any], str, str]] = [
    ("Bash", {"command": "ls -la"}, "approved", "gateway:proven"),
    (
        "Bash",
        {"command": "git status && grep -n TODO src/a.py | wc -l"},
        "approved",
        "gateway:proven",
    ),
    (
        "Bash",
        {"command": "git status && grep -r TODO src | wc -l"},
        "awaiting_approval",
        "gateway:not-proven",
    ),
    ("Bash", {"command": "ls > listing.txt"}, "awaiting_approval", "gateway:not-proven"),
    ("Bash", {"command": "touch a"}, "awaiting_approval", "gateway:not-proven"),
    ("Bash", {"command": "python -c 'print(1)'"}, "awaiting_approval", "builtin:opaque-command"),
    ("Bash", {"command": "cat $(ls)"}, "awaiting_approval", "builtin:opaque-command"),
    ("Bash", {"command": "cat .env"}, "awaiting_approval", "builtin:command-secret"),
    ("Bash", {"command": "curl https://example.com"}, "awaiting_approval", "gateway:not-proven"),
    ("Bash", {"command": "rm -rf /"}, "denied", "builtin:blocked-command"),
    ("Bash", {"command": "chmod -R 777 /"}, "denied", "builtin:dangerous-command"),
    (
        "Write",
        {"file_path": f"{CWD}/src/a.py", "content": "x = 1\n"},
        "approved",
        "builtin:default-allow",
    ),
    (
        "Write",
        {"file_path": f"{CWD}/.env", "content": "K=1\n"},
        "awaiting_approval",
        "builtin:protected-path",
    ),
    (
        "Write",
        {"file_path": "/etc/passwd", "content": "x"},
        "denied",
        "invariant:outside-workspace",
    ),
    ("Write", {"file_path": f"{CWD}/.git/config", "content": "x"}, "denied", "invariant:git-dir"),
    (
        "Edit",
        {"file_path": f"{CWD}/a.py", "old_string": "a", "new_string": "b"},
        "approved",
        "builtin:default-allow",
    ),
    (
        "Edit",
        {"file_path": f"{CWD}/a.py", "old_string": "a", "new_string": "b", "replace_all": True},
        "awaiting_approval",
        "builtin:require-approval-above",
    ),
    ("Read", {"file_path": f"{CWD}/README.md"}, "approved", "builtin:read-only"),
    ("Read", {"file_path": f"{CWD}/.env"}, "awaiting_approval", "builtin:secret-path"),
    ("Glob", {"pattern": "*.py"}, "approved", "builtin:read-only"),
    ("Grep", {"pattern": "x"}, "approved", "builtin:read-only"),
    ("TodoWrite", {"todos": []}, "approved", "gateway:no-effect"),
    ("mcp__github__create_issue", {"title": "t"}, "awaiting_approval", "gateway:mcp-tool"),
    ("mcp_github_create_issue", {"title": "t"}, "awaiting_approval", "gateway:mcp-tool"),
    ("NotebookEdit", {"notebook_path": "n.ipynb"}, "awaiting_approval", "gateway:unknown-tool"),
    ("Bash", {"command": ""}, "failed", ""),
    ("Write", {"file_path": 1, "content": "x"}, "failed", ""),
    ("run_shell_command", {"command": "ls"}, "approved", "gateway:proven"),
    ("run_shell_command", {"command": "rm -rf ../x"}, "denied", "builtin:dangerous-command"),
    (
        "run_shell_command",
        {"command": "ls", "dir_path": "/etc"},
        "awaiting_approval",
        "gateway:not-proven",
    ),
    ("run_shell_command", {"command": "ls", "dir_path": "src"}, "approved", "gateway:proven"),
    # The agent's file system may fold case: the lower-case checks hold for every spelling.
    (
        "Write",
        {"file_path": f"{CWD}/.GIT/hooks/pre-commit", "content": "x"},
        "denied",
        "invariant:git-dir",
    ),
    (
        "Write",
        {"file_path": f"{CWD}/.GitHub/workflows/ci.yml", "content": "x"},
        "awaiting_approval",
        "builtin:protected-path",
    ),
    (
        "Write",
        {"file_path": f"{CWD}/.ENV", "content": "K=1\n"},
        "awaiting_approval",
        "builtin:protected-path",
    ),
    ("Read", {"file_path": f"{CWD}/config/.ENV"}, "awaiting_approval", "builtin:secret-path"),
    ("Read", {"file_path": f"{CWD}/ID_RSA"}, "awaiting_approval", "builtin:secret-path"),
    ("WebFetch", {"url": "https://example.com/a"}, "awaiting_approval", "gateway:network"),
    (
        "write_file",
        {"file_path": f"{CWD}/.env", "content": "K=1\n"},
        "awaiting_approval",
        "builtin:protected-path",
    ),
    (
        "replace",
        {"file_path": f"{CWD}/a.py", "old_string": "a", "new_string": "b", "allow_multiple": True},
        "awaiting_approval",
        "builtin:require-approval-above",
    ),
    ("read_file", {"file_path": f"{CWD}/.env"}, "awaiting_approval", "builtin:secret-path"),
    ("write_todos", {"todos": []}, "approved", "gateway:no-effect"),
    ("apply_patch", {"command": "*** Begin Patch"}, "awaiting_approval", "gateway:unknown-tool"),
    (
        "apply_patch",
        {"command": "*** Begin Patch\n*** Add File: .env\n+K=1\n*** End Patch"},
        "awaiting_approval",
        "builtin:protected-path",
    ),
    (
        "apply_patch",
        {"command": "*** Begin Patch\n*** Add File: ../x\n+K=1\n*** End Patch"},
        "denied",
        "invariant:outside-workspace",
    ),
    (
        "apply_patch",
        {"command": "*** Begin Patch\n*** Delete File: a.py\n*** End Patch"},
        "awaiting_approval",
        "gateway:unknown-tool",
    ),
]


@pytest.mark.parametrize(("native", "native_input", "status", "rule"), GATE)
def test_gate_mode_judges_each_call_from_its_input(
    native: str, native_input: dict[str, Any], status: str, rule: str
) -> None:
    prepared = judge(native, native_input)
    assert prepared.status == status, prepared
    assert (prepared.verdict.rule if prepared.verdict else "") == rule


def test_an_allow_rule_lets_a_writing_command_and_an_mcp_tool_run() -> None:
    rules = (
        Rule(id=1, tool="run_command", args={"command": "make *"}, verdict="allow"),
        Rule(id=2, tool="mcp.github.*", args={}, verdict="allow"),
    )
    policy = replace(DEFAULT, rules=rules)
    assert judge("Bash", {"command": "make build"}, policy).status == "approved"
    assert judge("mcp__github__create_issue", {"title": "t"}, policy).status == "approved"
    assert judge("Bash", {"command": "make build > log"}, DEFAULT).status == "awaiting_approval"


def test_a_deny_rule_reaches_an_effect_free_tool() -> None:
    policy = replace(DEFAULT, rules=(Rule(id=7, tool="native.*", args={}, verdict="deny"),))
    assert judge("TodoWrite", {"todos": []}, policy).status == "denied"


def test_previews_come_from_the_input_alone() -> None:
    write = judge("Write", {"file_path": f"{CWD}/new.txt", "content": "one\ntwo\n"})
    assert write.preview["diff"].splitlines()[2:] == ["@@ -0,0 +1,2 @@", "+one", "+two"]
    assert write.changed_lines == 2
    assert (
        write.preview["gateway"]["where"]
        == "runs on the agent's machine, outside agentweb's sandbox"
    )
    edit = judge(
        "Edit", {"file_path": f"{CWD}/a.py", "old_string": "a = 1\n", "new_string": "a = 2\n"}
    )
    assert "-a = 1" in edit.preview["diff"] and "+a = 2" in edit.preview["diff"]
    assert edit.changed_lines == 2
    bash = judge("Bash", {"command": "ls | wc -l"})
    assert [part["program"] for part in bash.preview["parts"]] == ["ls", "wc"]
    # agentweb runs nothing here: no sandbox of its own, no default timeout of its own.
    assert "sandboxed" not in bash.preview and "timeout" not in bash.preview
    timed = judge("Bash", {"command": "ls", "timeout": 90000})
    assert timed.preview["timeout"] == 90


def test_a_huge_write_waits_for_a_person_by_its_size(tmp_path: Path) -> None:
    content = "line\n" * 300
    prepared = judge("Write", {"file_path": f"{CWD}/big.txt", "content": content})
    assert prepared.status == "awaiting_approval"
    assert prepared.verdict.rule == "builtin:require-approval-above"


@pytest.mark.parametrize(
    ("native", "native_input", "ran_in", "command"),
    [
        ("Bash", {"command": "ls"}, f"{CWD}/", "ls"),
        ("Bash", {"command": "ls"}, "", "ls"),
        ("Bash", {"command": "rm -rf build"}, "/srv/other", "cd /srv/other && rm -rf build"),
        ("run_shell_command", {"command": "make"}, f"{CWD}/sub dir", f"cd '{CWD}/sub dir' && make"),
    ],
)
def test_a_command_is_judged_where_the_agent_runs_it(
    native: str, native_input: dict[str, Any], ran_in: str, command: str
) -> None:
    """The event's cwd (Claude Code keeps a `cd`, Codex takes a `workdir`) may not be
    the session's: the command is judged as run there."""
    mapped = map_native(native, native_input, CWD, ran_in)
    assert mapped.args["command"] == command
    assert any(ran_in in note for note in mapped.notes) == (command != native_input["command"])


def test_where_a_command_runs_can_make_it_wait() -> None:
    _, prepared = prepare_native(
        DEFAULT, "Bash", {"command": "rm -rf build"}, CWD, SessionCounters(), "/etc"
    )
    assert prepared.status != "approved"
    assert prepared.preview["command"] == "cd /etc && rm -rf build"


@pytest.mark.parametrize(
    ("patch", "notes"),
    [
        ("*** Begin Patch\n*** Delete File: a.py\n*** End Patch", ("deletes a.py",)),
        (
            "*** Begin Patch\n*** Update File: a.py\n*** Move to: b.py\n@@\n-x\n+y\n*** End Patch",
            ("updates a.py (to b.py)",),
        ),
        (
            "*** Begin Patch\n*** Add File: a\n+1\n*** Add File: b\n+2\n*** End Patch",
            ("adds a", "adds b"),
        ),
        (
            "*** Begin Patch\n*** Add File: a\nno plus\n*** End Patch",
            ("not read as a patch: line 3: an added file's lines start with +",),
        ),
        ("no patch", ("not read as a patch: it does not start with `*** Begin Patch`",)),
    ],
)
def test_a_patch_the_gateway_cannot_judge_as_one_tool_goes_to_a_person(
    patch: str, notes: tuple[str, ...]
) -> None:
    mapped = map_native("apply_patch", {"command": patch}, CWD)
    assert (mapped.tool, mapped.kind, mapped.notes) == ("native.apply_patch", "unknown", notes)
