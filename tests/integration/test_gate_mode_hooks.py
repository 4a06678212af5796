"""Gate mode through the hook endpoint, as Claude Code drives it, checked on a real disk.

Alice's Claude Code works in a scratch project (a git repository that tracks a `.env`,
with a home holding `~/.ssh/id_rsa` and `~/.aws/credentials`, and a canary directory
beside it). Each spelling the red team used (issue 30) is sent as a PreToolUse; what
agentweb allows — with the input it says to run — is then run for real in bash there,
and the disk and the output are looked at afterwards, not the verdict alone.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.gateway_helpers import Hook
from tests.unit.gate_scratch import Scratch, bash_available
from tools_app.models import Policy, ToolCall

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_hook_wait")]

ATTACKS = [
    "test -v 'a[$(touch X)]'",
    "[ -v 'a[$(touch X)]' ]",
    "[[ 'a[$(touch X)]' -eq 1 ]]",
    "[[ -v 'a[$(touch X)]' ]]",
    "printf -v x '$(touch X)'\ncat <<EOF\n${x@P}\nEOF",
    "git grep --open='touch X' foo",
    "sort --compress-program=sh README.md",
    "man -C conf ls",
    "less --lesskey-src=keys README.md",
    "echo x >& .git/hooks/pre-commit",
    "sort -ro OUT README.md",
    "sort --outp=OUT README.md",
    "file --compile",
    "cat .en?",
    "grep -r SECRET .",
    "cat config/.e*",
    "cat ~/.ssh/id_rsa",
    "cat ~/.aws/credentials",
    "cat .ENV",
    "git show HEAD:.env",
    "rg --hidden SECRET",
]
READS = [
    "ls",
    "cat README.md",
    "git status",
    "git diff",
    "git log --oneline -5",
    "grep -n foo src/app.py",
    "rg foo",
    "find . -name '*.py'",
    "wc -l src/app.py",
    "head -5 README.md",
    "tail -n 2 README.md",
    "pwd",
]


@pytest.fixture
def machine(tmp_path: Path) -> Iterator[Scratch]:
    if not bash_available():
        pytest.skip("bash and git are needed to run what the hook allows")
    made = Scratch(tmp_path / "machine")
    yield made
    made.remove()


def bash(claude: Hook, machine: Scratch, command: str) -> dict[str, Any]:
    """Send the command as Claude Code's Bash would; run it for real when allowed."""
    answer = claude.pre("Bash", {"command": command}, cwd=str(machine.project))
    if answer["permissionDecision"] == "allow":
        output = machine.run(answer["updatedInput"]["command"])
        assert machine.harm(output) == [], (command, output)
    return answer


@pytest.mark.parametrize("command", ATTACKS)
def test_no_spelling_of_the_red_team_runs_unseen(
    claude: Hook, machine: Scratch, command: str
) -> None:
    answer = bash(claude, machine, command)
    assert answer["permissionDecision"] == "deny"
    assert "still awaiting approval" in answer["permissionDecisionReason"]
    call = ToolCall.objects.get()
    assert call.status == "awaiting_approval"
    assert call.rule in {"gateway:not-proven", "builtin:command-secret", "builtin:opaque-command"}
    assert machine.harm("") == []


@pytest.mark.parametrize("command", READS)
def test_the_reads_agents_use_run_with_no_person(
    claude: Hook, machine: Scratch, command: str
) -> None:
    answer = bash(claude, machine, command)
    assert answer["permissionDecision"] == "allow", answer
    assert ToolCall.objects.get().rule == "gateway:proven"


def test_a_narrowed_command_is_the_one_the_agent_is_told_to_run(
    claude: Hook, machine: Scratch
) -> None:
    answer = bash(claude, machine, "git diff")
    runs = answer["updatedInput"]["command"]
    ran = runs
    assert ran.startswith("GIT_CEILING_DIRECTORIES=") and " git --no-pager " in ran, ran
    assert " -c safe.bareRepository=explicit -c core.fsmonitor=false " in ran, ran
    assert " diff --no-ext-diff --no-textconv --submodule=short ':(top,exclude,icase,glob)" in ran
    call = ToolCall.objects.get()
    assert call.native_input == {"command": runs}
    assert call.args["command"] == runs
    notes = (call.preview or {})["gateway"]["notes"]
    assert "leaves out the policy's secret files" in " ".join(notes)
    assert "src/app.py" in machine.run(runs)


@pytest.mark.parametrize(
    ("tool", "tool_input", "status"),
    [
        ("Write", {"file_path": ".GIT/hooks/pre-commit", "content": "x"}, "denied"),
        ("Write", {"file_path": ".GitHub/workflows/ci.yml", "content": "x"}, "awaiting_approval"),
        ("Write", {"file_path": ".ENV", "content": "K=1\n"}, "awaiting_approval"),
        ("Read", {"file_path": ".ENV"}, "awaiting_approval"),
        ("WebFetch", {"url": "https://example.com/", "prompt": "sum"}, "awaiting_approval"),
    ],
)
def test_case_folded_paths_and_the_network_wait_or_are_refused(
    claude: Hook, machine: Scratch, tool: str, tool_input: dict[str, Any], status: str
) -> None:
    if "file_path" in tool_input:
        tool_input = {**tool_input, "file_path": str(machine.project / tool_input["file_path"])}
    answer = claude.pre(tool, tool_input, cwd=str(machine.project))
    assert answer["permissionDecision"] == "deny"
    assert ToolCall.objects.get().status == status


def test_an_allow_rule_naming_the_host_lets_a_fetch_pass(claude: Hook, machine: Scratch) -> None:
    Policy.objects.filter(name="default").update(web_allow_hosts=["docs.python.org"])
    answer = claude.pre(
        "WebFetch", {"url": "https://docs.python.org/3/", "prompt": "x"}, cwd=str(machine.project)
    )
    assert answer["permissionDecision"] == "allow"


def test_claude_codes_grep_is_narrowed_as_its_ripgrep_runs_it(
    claude: Hook, machine: Scratch
) -> None:
    """Claude Code's Grep runs ripgrep with --hidden and each blank-separated word of its
    `glob` as a --glob: run that way, the narrowed search finds the code, not the .env."""
    answer = claude.pre("Grep", {"pattern": "SECRET", "glob": "*"}, cwd=str(machine.project))
    assert answer["permissionDecision"] == "allow"
    globs = answer["updatedInput"]["glob"].split()
    assert globs[0] == "*"
    options = " ".join(f"--glob {shlex.quote(glob)}" for glob in globs)
    output = machine.run(f"rg --hidden --no-follow {options} -n SECRET")
    assert machine.harm(output) == [], output
    assert "SECRET" in machine.run("rg --hidden --no-follow -n SECRET")  # unnarrowed, it leaks
    call = ToolCall.objects.get()
    assert call.native_input["glob"] == answer["updatedInput"]["glob"]


def test_a_search_that_takes_no_exclusions_waits_for_a_person(
    claude: Hook, machine: Scratch
) -> None:
    answer = claude.pre("grep_search", {"pattern": "SECRET"}, cwd=str(machine.project))
    assert answer["permissionDecision"] == "deny"
    assert ToolCall.objects.get().rule == "gateway:search-not-narrowed"
