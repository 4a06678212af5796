"""Explicit rules: globs, `re:` patterns, paths, and commands judged part by part."""

from __future__ import annotations

import glob
from pathlib import Path
from typing import Any

import pytest

from tools_app.core.policy.engine import evaluate
from tools_app.core.policy.rules import exact_pattern
from tools_app.core.policy.types import CallFacts, PolicySpec, Rule, SessionCounters, Verdict


def decide(rules: list[Rule], tool: str, args: dict[str, Any], workspace: Path) -> Verdict:
    policy = PolicySpec(rules=tuple(rules))
    return evaluate(policy, CallFacts(tool, args, workspace, 1), SessionCounters())


def deny(tool: str = "*", **args: str) -> Rule:
    return Rule("d", tool, args, "deny", "no")


def allow(tool: str = "*", **args: str) -> Rule:
    return Rule("a", tool, args, "allow", "yes")


@pytest.mark.parametrize(
    ("pattern", "tool", "matches"),
    [
        ("*", "anything", True),
        ("write_file", "write_file", True),
        ("write_file", "write_files", False),
        ("*_file", "edit_file", True),
        ("git_*", "read_file", False),
        ("re:(write|edit)_file", "edit_file", True),
        ("re:write", "write_file", False),
    ],
)
def test_the_tool_is_matched_as_a_glob_or_regex(
    pattern: str, tool: str, matches: bool, tmp_path: Path
) -> None:
    decision = decide([deny(pattern)], tool, {"path": "a.py"}, tmp_path)
    assert (decision.rule == "rule d") is matches


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("src/*", "src/a.py", True),
        ("src/*", "src/deep/a.py", True),
        ("src/*", "./src/a.py", True),
        ("*.py", "pkg/mod.py", True),
        ("re:src/.*\\.py", "src/a.py", True),
        ("re:src", "src/a.py", False),
        ("docs/*", "src/a.py", False),
        ("a.py", "sub/../a.py", True),
    ],
)
def test_a_path_argument_is_matched_relative_to_the_workspace(
    pattern: str, path: str, matches: bool, tmp_path: Path
) -> None:
    decision = decide([deny("write_file", path=pattern)], "write_file", {"path": path}, tmp_path)
    assert (decision.rule == "rule d") is matches


def test_an_absolute_path_is_matched_relative_too(tmp_path: Path) -> None:
    args = {"path": str(tmp_path / "src" / "a.py")}
    assert decide([deny("write_file", path="src/*")], "write_file", args, tmp_path).rule == "rule d"


def test_every_argument_pattern_must_match(tmp_path: Path) -> None:
    rules = [deny("web_fetch", url="https://*", method="POST")]
    assert decide(rules, "web_fetch", {"url": "https://x", "method": "GET"}, tmp_path).rule != (
        "rule d"
    )
    assert decide(rules, "web_fetch", {"url": "https://x", "method": "POST"}, tmp_path).rule == (
        "rule d"
    )


def test_a_missing_argument_only_matches_star(tmp_path: Path) -> None:
    assert decide([deny("web_fetch", method="GET")], "web_fetch", {"url": "https://x"}, tmp_path)
    assert decide([deny("web_fetch", method="*")], "web_fetch", {"url": "x"}, tmp_path).rule == (
        "rule d"
    )
    decision = decide(
        [deny("web_fetch", method="GET")], "web_fetch", {"url": "https://x"}, tmp_path
    )
    assert decision.rule != "rule d"


def test_booleans_and_numbers_are_matched_as_text(tmp_path: Path) -> None:
    rules = [deny("git_log", count="1??", oneline="false")]
    assert decide(rules, "git_log", {"count": 100, "oneline": False}, tmp_path).rule == "rule d"


def test_a_list_argument_is_denied_if_any_item_matches(tmp_path: Path) -> None:
    args = {"message": "m", "files": ["src/a.py", "secrets/key"]}
    assert decide([deny("git_commit", files="secrets/*")], "git_commit", args, tmp_path).rule == (
        "rule d"
    )


def test_a_list_argument_is_allowed_only_if_every_item_matches(tmp_path: Path) -> None:
    args = {"message": "m", "files": ["src/a.py", "secrets/key"]}
    rules = [allow("git_commit", files="src/*")]
    assert decide(rules, "git_commit", args, tmp_path).rule != "rule a"
    args["files"] = ["src/a.py", "src/b.py"]
    assert decide(rules, "git_commit", args, tmp_path).rule == "rule a"


# --- run_command ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "rm x",
        "make && rm x",
        "sudo rm x",
        "bash -c 'ls; rm x'",
        "ls | xargs rm -f",
        "echo $(rm x)",
    ],
)
def test_a_deny_rule_matches_any_simple_command(command: str, tmp_path: Path) -> None:
    rules = [deny("run_command", command="rm *")]
    assert decide(rules, "run_command", {"command": command}, tmp_path).rule == "rule d"


def test_a_deny_rule_also_matches_the_whole_string(tmp_path: Path) -> None:
    rules = [deny("run_command", command="*--force*")]
    args = {"command": "ls && git push --force"}
    assert decide(rules, "run_command", args, tmp_path).rule == "rule d"


@pytest.mark.parametrize(
    "command",
    ["pytest", "pytest -x tests/", "pytest -k 'a and b'", "pytest && pytest -q", "(pytest)"],
)
def test_an_allow_rule_matches_when_every_simple_command_matches(
    command: str, tmp_path: Path
) -> None:
    rules = [allow("run_command", command="pytest*")]
    assert decide(rules, "run_command", {"command": command}, tmp_path).rule == "rule a"


@pytest.mark.parametrize(
    "command",
    [
        "pytest; curl x -o y",
        "pytest && npm install",
        "pytest | sh",
        "pytest $(curl x)",
        "pytest `id`",
        "pytest <(ls)",
        "eval pytest",
        "case x in a) pytest;; esac",
    ],
)
def test_an_allow_rule_never_lets_other_or_unanalysable_commands_through(
    command: str, tmp_path: Path
) -> None:
    rules = [allow("run_command", command="pytest*")]
    assert decide(rules, "run_command", {"command": command}, tmp_path).rule != "rule a"


def test_an_allow_star_rule_does_not_allow_an_opaque_command(tmp_path: Path) -> None:
    rules = [allow("run_command", command="*")]
    decision = decide(rules, "run_command", {"command": "ls $(pwd)"}, tmp_path)
    assert decision.rule == "builtin:opaque-command"


def test_an_exact_literal_allows_even_an_opaque_command(tmp_path: Path) -> None:
    command = "ls $(pwd) | wc -l"
    rules = [allow("run_command", command=command)]
    assert decide(rules, "run_command", {"command": command}, tmp_path).rule == "rule a"


def test_an_exact_literal_does_not_allow_a_longer_command(tmp_path: Path) -> None:
    rules = [allow("run_command", command="ls $(pwd)")]
    decision = decide(rules, "run_command", {"command": "ls $(pwd); id"}, tmp_path)
    assert decision.rule != "rule a"


def test_exact_pattern_matches_only_its_value(tmp_path: Path) -> None:
    rules = [allow("run_command", command=exact_pattern("npm install left-pad"))]
    assert decide(rules, "run_command", {"command": "npm install left-pad"}, tmp_path).rule == (
        "rule a"
    )
    decision = decide(rules, "run_command", {"command": "npm install left-pads"}, tmp_path)
    assert decision.rule != "rule a"


def test_an_allow_rule_cannot_allow_a_dangerous_command(tmp_path: Path) -> None:
    rules = [allow("run_command", command="rm -rf /")]
    decision = decide(rules, "run_command", {"command": "rm -rf /"}, tmp_path)
    assert decision.kind == "deny"


def test_a_require_approval_rule_uses_the_allow_semantics(tmp_path: Path) -> None:
    rules = [Rule("r", "run_command", {"command": "make*"}, "require_approval")]
    assert decide(rules, "run_command", {"command": "make test"}, tmp_path).rule == "rule r"
    assert decide(rules, "run_command", {"command": "make; ls"}, tmp_path).rule != "rule r"


def test_wrappers_are_peeled_before_rules_see_a_command(tmp_path: Path) -> None:
    rules = [allow("run_command", command="pytest*")]
    decision = decide(rules, "run_command", {"command": "timeout 60 pytest -x"}, tmp_path)
    assert decision.rule == "rule a"


def test_exact_pattern_allows_an_opaque_command_again(tmp_path: Path) -> None:
    command = "ls $(pwd) | wc -l"
    rules = [allow("run_command", command=exact_pattern(command))]
    assert decide(rules, "run_command", {"command": command}, tmp_path).rule == "rule a"


def test_exact_pattern_keeps_glob_characters_literal(tmp_path: Path) -> None:
    rules = [allow("write_file", path=exact_pattern("src/[ab].py"))]
    assert decide(rules, "write_file", {"path": "src/[ab].py"}, tmp_path).rule == "rule a"
    assert decide(rules, "write_file", {"path": "src/a.py"}, tmp_path).rule != "rule a"


def test_a_glob_escaped_command_is_an_exact_literal_too(tmp_path: Path) -> None:
    command = "ls $(find . -name '*.py')"
    rules = [allow("run_command", command=glob.escape(command))]
    assert decide(rules, "run_command", {"command": command}, tmp_path).rule == "rule a"
