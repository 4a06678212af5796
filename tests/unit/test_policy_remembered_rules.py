"""Remembered rules keep the four-eyes rule: under `require_distinct_reviewer` a rule made
by "approve & remember" never allows a call in a session its own author created; the
call goes on down the documented order as if the rule were not there. And a rule a
reviewer who is not a policy admin widened never allows what a risky built-in approval
sends to a person."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tools_app.core.policy.checks import BUILTIN_APPROVALS
from tools_app.core.policy.defaults import DEFAULT_PROTECTED_PATHS
from tools_app.core.policy.engine import RISKY_APPROVALS, WIDENABLE_APPROVALS, evaluate
from tools_app.core.policy.types import CallFacts, PolicySpec, Rule, SessionCounters, Verdict

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
) -> Verdict:
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
    assert (decision.kind, decision.rule) == ("require_approval", "builtin:protected-path")


def test_the_same_rule_still_allows_someone_else_s_session(tmp_path: Path) -> None:
    decision = decide([remembered("1", RITA, path="*")], creator=ALICE, workspace=tmp_path)
    assert (decision.kind, decision.rule) == ("allow", "rule 1")


def test_without_distinct_reviewers_the_author_s_own_session_is_allowed(tmp_path: Path) -> None:
    """The author may approve their own calls by hand then, so their rule may too."""
    rules = [remembered("1", RITA, path="*")]
    decision = decide(rules, creator=RITA, distinct=False, workspace=tmp_path)
    assert (decision.kind, decision.rule) == ("allow", "rule 1")


def test_an_admin_s_rule_allows_every_session(tmp_path: Path) -> None:
    admin_rule = Rule("1", "write_file", {"path": "*"}, "allow", "CI bot may edit anything")
    decision = decide([admin_rule], creator=RITA, workspace=tmp_path)
    assert (decision.kind, decision.rule) == ("allow", "rule 1")


def test_a_passed_over_rule_lets_the_next_rule_in_order_decide(tmp_path: Path) -> None:
    """Rita's rule is skipped in her session; Alice's remembered rule after it decides."""
    rules = [remembered("1", RITA, path="*"), remembered("2", ALICE, path="*")]
    assert decide(rules, creator=RITA, workspace=tmp_path).rule == "rule 2"
    assert decide(rules, creator=ALICE, workspace=tmp_path).rule == "rule 1"


def test_an_unprotected_path_falls_through_to_the_default_allow(tmp_path: Path) -> None:
    decision = decide(
        [remembered("1", RITA, path="*")], creator=RITA, path="src/a.py", workspace=tmp_path
    )
    assert (decision.kind, decision.rule) == ("allow", "builtin:default-allow")


def test_a_deny_rule_is_never_passed_over(tmp_path: Path) -> None:
    deny = Rule("1", "write_file", {"path": "*"}, "deny", "frozen", remembered_by=RITA)
    decision = decide([deny], creator=RITA, path="src/a.py", workspace=tmp_path)
    assert (decision.kind, decision.rule) == ("deny", "rule 1")


@pytest.mark.parametrize("creator", ["", ALICE])
def test_a_session_of_someone_else_or_of_nobody_known_is_allowed(
    creator: str, tmp_path: Path
) -> None:
    decision = decide([remembered("1", RITA, path="*")], creator=creator, workspace=tmp_path)
    assert decision.rule == "rule 1"


# --- a rule a reviewer widened stays within what a reviewer may approve --------------------
#
# Rita (a reviewer, not a policy admin) approved Alice's big `src/` write and widened the
# remembered rule to `*`: a mild reason, so she may. The rule is reviewer-bounded: it
# allows what only a size threshold would have held, never what a risky built-in approval
# sends to a person, in anyone's session.

BOB = "9"
CI = ".github/workflows/ci.yml"


def bounded(rule_id: str, tool: str, **args: str) -> Rule:
    return Rule(rule_id, tool, args, "allow", "remembered by rita", RITA, reviewer_bounded=True)


def judge(
    rules: list[Rule], tool: str, args: dict[str, Any], workspace: Path, lines: int = 1
) -> Verdict:
    policy = PolicySpec(
        protected_paths=DEFAULT_PROTECTED_PATHS,
        secret_paths=(".env", "*.pem"),
        require_distinct_reviewer=True,
        rules=tuple(rules),
    )
    facts = CallFacts(tool, args, workspace, lines)
    return evaluate(policy, facts, SessionCounters(creator=BOB))


@pytest.mark.parametrize(
    ("tool", "args", "check"),
    [
        ("write_file", {"path": ".env", "content": "X=1\n"}, "builtin:protected-path"),
        ("write_file", {"path": CI, "content": "x"}, "builtin:protected-path"),
        ("read_file", {"path": ".env"}, "builtin:secret-path"),
        ("run_command", {"command": "npm install left-pad"}, "builtin:approval-command"),
        ("run_command", {"command": f"echo run > {CI}"}, "builtin:protected-path"),
        ("create_pull_request", {"title": "t", "body": "b"}, "builtin:pull-request"),
    ],
)  # fmt: skip
def test_a_reviewer_bounded_rule_never_allows_what_a_risky_check_sends_to_a_person(
    tool: str, args: dict[str, Any], check: str, tmp_path: Path
) -> None:
    """The built-in approval decides, and its reason says why the rule did not."""
    decision = judge([bounded("1", tool, **dict.fromkeys(args, "*"))], tool, args, tmp_path)
    assert (decision.kind, decision.rule) == ("require_approval", check)
    assert decision.reason.endswith(
        "; rule 1 (remembered by rita) does not allow this call: a reviewer who is not a "
        "policy admin widened it, and only a policy admin's rule may allow what this check "
        "sends to a person"
    )


def test_a_bounded_rule_naming_an_opaque_command_literally_does_not_allow_it(
    tmp_path: Path,
) -> None:
    """A `*` allow never matches a command that cannot be analysed; a literal one would."""
    rule = bounded("1", "run_command", command="eval $X")
    decision = judge([rule], "run_command", {"command": "eval $X"}, tmp_path)
    assert (decision.kind, decision.rule) == ("require_approval", "builtin:opaque-command")
    assert "rule 1 (remembered by rita) does not allow this call" in decision.reason


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("write_file", {"path": "src/big.py", "content": "x"}),
        ("run_command", {"command": "make test"}),
        ("web_fetch", {"url": "https://example.com/hook", "method": "POST"}),
    ],
)
def test_a_reviewer_bounded_rule_still_allows_what_only_a_milder_check_would_hold(
    tool: str, args: dict[str, str], tmp_path: Path
) -> None:
    """A write over require_approval_above, a plain command, a web write."""
    decision = judge([bounded("1", tool, **dict.fromkeys(args, "*"))], tool, args, tmp_path, 300)
    assert (decision.kind, decision.rule) == ("allow", "rule 1")


def test_an_admin_s_or_a_policy_admin_s_wide_rule_allows_a_protected_path(tmp_path: Path) -> None:
    """Not reviewer-bounded: today's behaviour, the rule outranks the built-in approval."""
    wide = Rule("1", "write_file", {"path": "*", "content": "*"}, "allow", "", RITA)
    args = {"path": ".env", "content": "X=1\n"}
    assert judge([wide], "write_file", args, tmp_path).rule == "rule 1"


def test_a_passed_over_bounded_rule_lets_a_later_admin_rule_decide(tmp_path: Path) -> None:
    """Evaluation goes on in the documented order: the next rule that is not bounded."""
    rules = [
        bounded("1", "write_file", path="*", content="*"),
        bounded("2", "write_file", path=".env", content="*"),
        Rule("3", "write_file", {"path": ".env"}, "allow", "the key rotation job"),
    ]
    decision = judge(rules, "write_file", {"path": ".env", "content": "X=1\n"}, tmp_path)
    assert (decision.kind, decision.rule) == ("allow", "rule 3")


def test_a_bounded_require_approval_or_deny_rule_decides_as_before(tmp_path: Path) -> None:
    """Only an allow is bounded: the others never let a call through without a person."""
    args = {"path": ".env", "content": "X=1\n"}
    for verdict in ("require_approval", "deny"):
        rule = Rule("1", "write_file", {"path": "*"}, verdict, "", reviewer_bounded=True)  # type: ignore[arg-type]
        assert judge([rule], "write_file", args, tmp_path).rule == "rule 1"


def test_the_risky_checks_are_every_built_in_approval_but_the_widenable_ones() -> None:
    """Fails closed: a built-in approval added later is risky unless named widenable."""
    risky = {check.name for check in RISKY_APPROVALS}
    assert risky >= {
        "builtin:protected-path",
        "builtin:secret-path",
        "builtin:approval-command",
        "builtin:opaque-command",
        "builtin:pull-request",
    }
    assert risky.isdisjoint(WIDENABLE_APPROVALS)
    assert risky | WIDENABLE_APPROVALS == {check.name for check in BUILTIN_APPROVALS}
