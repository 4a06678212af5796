"""evaluate: the order of evaluation, thresholds and every tool's default."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from tools_app.core.policy.defaults import DEFAULT_POLICY
from tools_app.core.policy.engine import evaluate
from tools_app.core.policy.loader import policy_from_dict
from tools_app.core.policy.types import CallFacts, PolicySpec, Rule, SessionCounters, Verdict
from tools_app.core.tools.catalogue import FILE_WRITE_TOOLS, READ_ONLY_TOOLS

DEFAULT = policy_from_dict(DEFAULT_POLICY)


def decide(
    tool: str,
    args: dict[str, Any],
    workspace: Path,
    *,
    policy: PolicySpec = DEFAULT,
    lines: int | None = None,
    counters: SessionCounters | None = None,
) -> Verdict:
    call = CallFacts(tool, args, workspace, changed_lines=lines)
    return evaluate(policy, call, counters or SessionCounters())


def with_rules(*rules: Rule, base: PolicySpec = DEFAULT) -> PolicySpec:
    from dataclasses import replace

    return replace(base, rules=rules)


def rule(rule_id: str, decision: str, tool: str = "*", **args: str) -> Rule:
    return Rule(rule_id, tool, args, decision, f"because {rule_id}")  # type: ignore[arg-type]


# --- invariants ------------------------------------------------------------------------


@pytest.mark.parametrize("tool", ["read_file", "write_file", "edit_file", "list_files"])
@pytest.mark.parametrize("path", ["../outside", "/etc/passwd", "~/.ssh/id_rsa"])
def test_it_denies_paths_outside_the_workspace(tool: str, path: str, tmp_path: Path) -> None:
    decision = decide(tool, {"path": path}, tmp_path, lines=1)
    assert (decision.kind, decision.rule) == ("deny", "invariant:outside-workspace")
    assert "outside the workspace" in decision.reason


def test_it_denies_a_sibling_directory_that_shares_the_prefix(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    decision = decide("read_file", {"path": str(tmp_path / "ws-evil" / "x")}, workspace)
    assert decision.rule == "invariant:outside-workspace"


def test_it_denies_a_symlink_that_leads_outside(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "link").symlink_to(tmp_path)
    decision = decide("write_file", {"path": "link/x"}, workspace, lines=1)
    assert decision.rule == "invariant:outside-workspace"


def test_search_codebase_path_is_checked_too(tmp_path: Path) -> None:
    decision = decide("search_codebase", {"pattern": "x", "path": ".."}, tmp_path)
    assert decision.rule == "invariant:outside-workspace"


def test_git_commit_files_outside_the_workspace_are_denied(tmp_path: Path) -> None:
    decision = decide("git_commit", {"message": "m", "files": ["a", "../b"]}, tmp_path, lines=1)
    assert decision.rule == "invariant:outside-workspace"


@pytest.mark.parametrize("tool", sorted(FILE_WRITE_TOOLS))
@pytest.mark.parametrize("path", [".git/config", ".git", "sub/.git/hooks/pre-commit"])
def test_file_tools_may_not_write_into_git(tool: str, path: str, tmp_path: Path) -> None:
    decision = decide(tool, {"path": path}, tmp_path, lines=1)
    assert (decision.kind, decision.rule) == ("deny", "invariant:git-dir")


def test_reading_inside_git_is_allowed(tmp_path: Path) -> None:
    assert decide("read_file", {"path": ".git/HEAD"}, tmp_path).kind == "allow"


def test_an_invariant_beats_an_allow_rule(tmp_path: Path) -> None:
    policy = with_rules(rule("1", "allow", "write_file"))
    decision = decide("write_file", {"path": ".git/config"}, tmp_path, policy=policy, lines=1)
    assert decision.rule == "invariant:git-dir"


@pytest.mark.parametrize(
    ("tool", "args"),
    [("run_command", {}), ("run_command", {"command": 5}), ("write_file", {"path": 3})],
)
def test_bad_arguments_are_denied(tool: str, args: dict[str, Any], tmp_path: Path) -> None:
    assert decide(tool, args, tmp_path).rule == "invariant:bad-arguments"


# --- order of explicit rules and built-in checks -------------------------------------------


def test_a_deny_rule_beats_an_allow_rule(tmp_path: Path) -> None:
    policy = with_rules(
        rule("1", "allow", "run_command", command="make *"),
        rule("2", "deny", "run_command", command="make deploy*"),
    )
    decision = decide("run_command", {"command": "make deploy"}, tmp_path, policy=policy)
    assert (decision.kind, decision.rule, decision.reason) == ("deny", "rule 2", "because 2")


def test_a_deny_rule_beats_read_only(tmp_path: Path) -> None:
    policy = with_rules(rule("9", "deny", "read_file", path="secrets/*"))
    decision = decide("read_file", {"path": "secrets/db.txt"}, tmp_path, policy=policy)
    assert (decision.kind, decision.rule) == ("deny", "rule 9")


def test_the_first_matching_deny_rule_decides(tmp_path: Path) -> None:
    policy = with_rules(rule("a", "deny", "task_done"), rule("b", "deny", "task_done"))
    assert decide("task_done", {"summary": "x"}, tmp_path, policy=policy).rule == "rule a"


def test_a_built_in_deny_beats_an_allow_rule(tmp_path: Path) -> None:
    policy = with_rules(rule("1", "allow", "run_command", command="*"))
    decision = decide("run_command", {"command": "rm -rf /"}, tmp_path, policy=policy)
    assert decision.kind == "deny"
    assert decision.rule.startswith("builtin:")


def test_max_diff_lines_beats_an_allow_rule(tmp_path: Path) -> None:
    policy = with_rules(rule("1", "allow", "write_file"))
    counters = SessionCounters(total_changed_lines=490)
    decision = decide(
        "write_file", {"path": "a"}, tmp_path, policy=policy, lines=20, counters=counters
    )
    assert decision.rule == "builtin:max-diff-lines"


def test_an_allow_rule_beats_a_built_in_approval(tmp_path: Path) -> None:
    policy = with_rules(rule("1", "allow", "run_command", command="npm install*"))
    decision = decide("run_command", {"command": "npm install x"}, tmp_path, policy=policy)
    assert (decision.kind, decision.rule) == ("allow", "rule 1")


def test_an_allow_rule_beats_a_protected_path(tmp_path: Path) -> None:
    policy = with_rules(rule("1", "allow", "write_file", path=".env"))
    decision = decide("write_file", {"path": ".env"}, tmp_path, policy=policy, lines=1)
    assert (decision.kind, decision.rule) == ("allow", "rule 1")


def test_a_require_approval_rule_beats_default_allow(tmp_path: Path) -> None:
    policy = with_rules(rule("3", "require_approval", "spawn_subagent"))
    decision = decide("spawn_subagent", {"title": "t"}, tmp_path, policy=policy)
    assert (decision.kind, decision.rule) == ("require_approval", "rule 3")


def test_a_require_approval_rule_comes_before_a_later_allow_rule(tmp_path: Path) -> None:
    policy = with_rules(
        rule("1", "require_approval", "run_command", command="make*"),
        rule("2", "allow", "run_command", command="make*"),
    )
    assert decide("run_command", {"command": "make"}, tmp_path, policy=policy).rule == "rule 1"


def test_a_rule_without_a_reason_gets_one(tmp_path: Path) -> None:
    policy = with_rules(Rule("7", "task_done", {}, "deny"))
    decision = decide("task_done", {"summary": "x"}, tmp_path, policy=policy)
    assert decision.reason == "rule 7 denies task_done with any arguments"


def test_read_only_tools_are_allowed(tmp_path: Path) -> None:
    for tool in sorted(READ_ONLY_TOOLS):
        decision = decide(tool, {"path": "."} if "path" in tool else {}, tmp_path)
        assert (decision.kind, decision.rule) == ("allow", "builtin:read-only")


def test_git_branch_list_is_read_only_and_create_is_allowed(tmp_path: Path) -> None:
    assert decide("git_branch", {"action": "list"}, tmp_path).rule == "builtin:read-only"
    decision = decide("git_branch", {"action": "create", "name": "x"}, tmp_path)
    assert (decision.kind, decision.rule) == ("allow", "builtin:default-allow")


@pytest.mark.parametrize("tool", ["task_done", "spawn_subagent", "deploy_staging"])
def test_other_tools_are_allowed_by_default(tool: str, tmp_path: Path) -> None:
    assert decide(tool, {}, tmp_path).kind == "allow"


def test_a_skill_tool_can_be_governed_by_a_rule(tmp_path: Path) -> None:
    policy = with_rules(rule("1", "require_approval", "deploy_*"))
    assert decide("deploy_staging", {}, tmp_path, policy=policy).kind == "require_approval"


# --- thresholds ----------------------------------------------------------------------------


@pytest.mark.parametrize("tool", sorted(FILE_WRITE_TOOLS))
def test_the_call_s_own_lines_count_towards_max_diff_lines(tool: str, tmp_path: Path) -> None:
    counters = SessionCounters(total_changed_lines=450)
    decision = decide(tool, {"path": "a.py"}, tmp_path, lines=60, counters=counters)
    assert (decision.kind, decision.rule) == ("deny", "builtin:max-diff-lines")
    assert "510" in decision.reason and "500" in decision.reason


def test_reaching_max_diff_lines_exactly_is_not_over(tmp_path: Path) -> None:
    counters = SessionCounters(total_changed_lines=440, changed_since_approval=0)
    decision = decide("write_file", {"path": "a.py"}, tmp_path, lines=60, counters=counters)
    assert decision.kind == "allow"


@pytest.mark.parametrize("tool", sorted(FILE_WRITE_TOOLS))
def test_the_call_s_own_lines_count_towards_approval(tool: str, tmp_path: Path) -> None:
    counters = SessionCounters(total_changed_lines=150, changed_since_approval=150)
    decision = decide(tool, {"path": "a.py"}, tmp_path, lines=60, counters=counters)
    assert (decision.kind, decision.rule) == (
        "require_approval",
        "builtin:require-approval-above",
    )
    assert "210" in decision.reason


def test_lines_since_approval_at_the_threshold_are_allowed(tmp_path: Path) -> None:
    counters = SessionCounters(total_changed_lines=300, changed_since_approval=140)
    decision = decide("edit_file", {"path": "a.py"}, tmp_path, lines=60, counters=counters)
    assert decision.kind == "allow"


def test_a_write_whose_lines_are_unknown_asks_a_person(tmp_path: Path) -> None:
    decision = decide("write_file", {"path": "a.py"}, tmp_path, lines=None)
    assert decision.rule == "builtin:require-approval-above"


def test_thresholds_do_not_apply_to_commands(tmp_path: Path) -> None:
    counters = SessionCounters(total_changed_lines=10_000, changed_since_approval=10_000)
    decision = decide("run_command", {"command": "ls"}, tmp_path, counters=counters)
    assert decision.kind == "allow"


@pytest.mark.parametrize(("lines", "expected"), [(200, "allow"), (201, "require_approval")])
def test_a_commit_above_the_threshold_asks_a_person(
    lines: int, expected: str, tmp_path: Path
) -> None:
    decision = decide("git_commit", {"message": "m"}, tmp_path, lines=lines)
    assert decision.kind == expected


def test_a_commit_of_unknown_size_asks_a_person(tmp_path: Path) -> None:
    decision = decide("git_commit", {"message": "m"}, tmp_path, lines=None)
    assert (decision.kind, decision.rule) == (
        "require_approval",
        "builtin:require-approval-above",
    )


def test_a_commit_is_judged_by_its_own_size_not_the_session_s(tmp_path: Path) -> None:
    counters = SessionCounters(total_changed_lines=900, changed_since_approval=900)
    decision = decide("git_commit", {"message": "m"}, tmp_path, lines=10, counters=counters)
    assert decision.kind == "allow"


def test_every_pull_request_asks_a_person(tmp_path: Path) -> None:
    decision = decide("create_pull_request", {"title": "t"}, tmp_path)
    assert (decision.kind, decision.rule) == ("require_approval", "builtin:pull-request")


def test_a_pull_request_can_be_allowed_by_an_explicit_rule(tmp_path: Path) -> None:
    policy = with_rules(rule("1", "allow", "create_pull_request", draft="true"))
    decision = decide("create_pull_request", {"title": "t", "draft": True}, tmp_path, policy=policy)
    assert decision.kind == "allow"


# --- protected paths for file tools ---------------------------------------------------------


@pytest.mark.parametrize(
    "path", [".env", "sub/.env", ".env.local", ".github/workflows/ci.yml", "package.json"]
)
def test_writing_a_protected_path_asks_a_person(path: str, tmp_path: Path) -> None:
    decision = decide("write_file", {"path": path}, tmp_path, lines=1)
    assert (decision.kind, decision.rule) == ("require_approval", "builtin:protected-path")
    assert path in decision.reason


def test_an_absolute_path_inside_the_workspace_is_matched_relative(tmp_path: Path) -> None:
    decision = decide("edit_file", {"path": str(tmp_path / ".env")}, tmp_path, lines=1)
    assert decision.rule == "builtin:protected-path"


def test_writing_envrc_is_not_protected(tmp_path: Path) -> None:
    assert decide("write_file", {"path": ".envrc"}, tmp_path, lines=1).kind == "allow"


# --- web -----------------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://x/y", "gopher://x", "x"])
def test_web_fetch_only_fetches_http(url: str, tmp_path: Path) -> None:
    decision = decide("web_fetch", {"url": url}, tmp_path)
    assert (decision.kind, decision.rule) == ("deny", "builtin:web-target")


def test_web_fetch_of_an_https_url_is_allowed(tmp_path: Path) -> None:
    assert decide("web_fetch", {"url": "https://example.com"}, tmp_path).kind == "allow"


# --- robustness ----------------------------------------------------------------------------


def test_it_fails_closed_when_something_breaks(tmp_path: Path) -> None:
    call = CallFacts("write_file", None, tmp_path, 1)  # type: ignore[arg-type]
    decision = evaluate(DEFAULT, call, SessionCounters())
    assert (decision.kind, decision.rule) == ("deny", "engine-error")
    assert "could not judge" in decision.reason


def test_a_policy_with_500_rules_evaluates_correctly(tmp_path: Path) -> None:
    rules = [rule(str(i), "deny", "run_command", command=f"tool{i} *") for i in range(499)]
    rules.append(rule("last", "allow", "run_command", command="tool-final *"))
    policy = with_rules(*rules)
    assert decide("run_command", {"command": "tool250 x"}, tmp_path, policy=policy).rule == (
        "rule 250"
    )
    assert decide("run_command", {"command": "tool-final x"}, tmp_path, policy=policy).rule == (
        "rule last"
    )
    assert decide("run_command", {"command": "ls"}, tmp_path, policy=policy).rule == (
        "builtin:default-allow"
    )


def test_it_never_raises_on_random_commands(tmp_path: Path) -> None:
    rng = random.Random(7)
    alphabet = "abcrmf -/|&;()<>{}$`'\"\\\n*~=!#.[]"
    words = ["rm", "-rf", "/", "sudo", "bash", "-c", "curl", "|", "sh", "npm", "install", ">"]
    policy = with_rules(rule("1", "allow", "run_command", command="*"))
    for n in range(300):
        if n % 2:
            command = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 50)))
        else:
            command = " ".join(rng.choice(words) for _ in range(rng.randint(1, 8)))
        for current in (DEFAULT, policy):
            decision = decide("run_command", {"command": command}, tmp_path, policy=current)
            assert decision.kind in {"allow", "deny", "require_approval"}
            assert decision.rule != "engine-error", (command, decision)


# --- long commands ---------------------------------------------------------------------------


def test_a_timeout_over_the_policy_limit_needs_a_person(tmp_path: Path) -> None:
    long = decide("run_command", {"command": "ls", "timeout": 3600}, tmp_path)
    assert (long.kind, long.rule) == ("require_approval", "builtin:command-timeout")
    assert "3600 s" in long.reason and "600 s (command_timeout_limit)" in long.reason
    assert decide("run_command", {"command": "ls", "timeout": 600}, tmp_path).kind == "allow"
    assert decide("run_command", {"command": "ls"}, tmp_path).kind == "allow"


def test_the_timeout_limit_is_the_policy_s(tmp_path: Path) -> None:
    from dataclasses import replace

    strict = replace(DEFAULT, command_timeout_limit=30)
    decision = decide("run_command", {"command": "ls", "timeout": 60}, tmp_path, policy=strict)
    assert decision.rule == "builtin:command-timeout"
    allowed = decide("run_command", {"command": "ls", "timeout": 30}, tmp_path, policy=strict)
    assert allowed.kind == "allow"
