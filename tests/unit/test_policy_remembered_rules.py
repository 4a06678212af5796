"""Remembered rules keep the four-eyes rule: under `require_distinct_reviewer` a rule made
by "approve & remember" never allows a call in a session its own author created; the
call goes on down the documented order as if the rule were not there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tools_app.policy import (
    DEFAULT_PROTECTED_PATHS,
    CallFacts,
    Decision,
    PolicySpec,
    Rule,
    SessionCounters,
    evaluate,
)

RITA, ALICE = "7", "3"


def remembered(rule_id: str, author: str, **args: str) -> Rule:
    return Rule(rule_id, "write_file", args, "allow", f"remembered by {author}", author)


def decide(
    rules: list[Rule],
    *,
    creator: str,
    path: str = ".env",
    distinct: bool = True,
    workspace: Path,
) -> Decision:
    policy = PolicySpec(
        protected_paths=DEFAULT_PROTECTED_PATHS,
        require_distinct_reviewer=distinct,
        rules=tuple(rules),
    )
    args: dict[str, Any] = {"path": path, "content": "KEY=1\n"}
    facts = CallFacts("write_file", args, workspace, 1)
    return evaluate(policy, facts, SessionCounters(creator=creator))


@pytest.mark.parametrize("path", [".env", ".github/workflows/ci.yml"])
def test_a_remembered_rule_never_allows_its_author_s_own_session(path: str, tmp_path: Path) -> None:
    """Rita's `*` rule does not let Rita's own session write a protected path: the
    built-in protected-path approval decides, as if the rule were not there."""
    decision = decide(
        [remembered("1", RITA, path="*")], creator=RITA, path=path, workspace=tmp_path
    )
    assert (decision.decision, decision.rule) == ("require_approval", "builtin:protected-path")


def test_the_same_rule_still_allows_someone_else_s_session(tmp_path: Path) -> None:
    decision = decide([remembered("1", RITA, path="*")], creator=ALICE, workspace=tmp_path)
    assert (decision.decision, decision.rule) == ("allow", "rule 1")


def test_without_distinct_reviewers_the_author_s_own_session_is_allowed(tmp_path: Path) -> None:
    """The author may approve their own calls by hand then, so their rule may too."""
    rules = [remembered("1", RITA, path="*")]
    decision = decide(rules, creator=RITA, distinct=False, workspace=tmp_path)
    assert (decision.decision, decision.rule) == ("allow", "rule 1")


def test_an_admin_s_rule_allows_every_session(tmp_path: Path) -> None:
    admin_rule = Rule("1", "write_file", {"path": "*"}, "allow", "CI bot may edit anything")
    decision = decide([admin_rule], creator=RITA, workspace=tmp_path)
    assert (decision.decision, decision.rule) == ("allow", "rule 1")


def test_a_passed_over_rule_lets_the_next_rule_in_order_decide(tmp_path: Path) -> None:
    """Rita's rule is skipped in her session; Alice's remembered rule after it decides."""
    rules = [remembered("1", RITA, path="*"), remembered("2", ALICE, path="*")]
    assert decide(rules, creator=RITA, workspace=tmp_path).rule == "rule 2"
    assert decide(rules, creator=ALICE, workspace=tmp_path).rule == "rule 1"


def test_an_unprotected_path_falls_through_to_the_default_allow(tmp_path: Path) -> None:
    decision = decide(
        [remembered("1", RITA, path="*")], creator=RITA, path="src/a.py", workspace=tmp_path
    )
    assert (decision.decision, decision.rule) == ("allow", "builtin:default-allow")


def test_a_deny_rule_is_never_passed_over(tmp_path: Path) -> None:
    deny = Rule("1", "write_file", {"path": "*"}, "deny", "frozen", remembered_by=RITA)
    decision = decide([deny], creator=RITA, path="src/a.py", workspace=tmp_path)
    assert (decision.decision, decision.rule) == ("deny", "rule 1")


@pytest.mark.parametrize("creator", ["", ALICE])
def test_a_session_of_someone_else_or_of_nobody_known_is_allowed(
    creator: str, tmp_path: Path
) -> None:
    decision = decide([remembered("1", RITA, path="*")], creator=creator, workspace=tmp_path)
    assert decision.rule == "rule 1"
