""" "Approve & remember" starts from what the agent sent, as a person would type it: a
literal value stays literal, only what must be escaped is, and a default the agent never
sent (a command's timeout) is not pinned; every pattern it writes matches its value alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tools_app.core.policy.context import CallContext
from tools_app.core.policy.remember import (
    fits_the_call,
    readable_pattern,
    remember_is_exact,
    remember_patterns,
    remembered_args,
)
from tools_app.core.policy.rules import rule_matches
from tools_app.core.policy.types import CallFacts, PolicySpec, Rule, SessionCounters
from tools_app.core.tools.catalogue import CATALOGUE
from tools_app.core.tools.registry import REGISTRY


def test_a_command_is_its_own_text_and_the_default_timeout_is_left_out() -> None:
    args = {"command": "npm install lodash", "timeout": 120.0}
    assert remember_patterns("run_command", args) == {"command": "npm install lodash"}


def test_a_timeout_the_agent_chose_is_kept_as_it_reads() -> None:
    args = {"command": "npm test", "timeout": 300.0}
    assert remember_patterns("run_command", args) == {"command": "npm test", "timeout": "300.0"}


def test_a_default_the_policy_judges_is_kept() -> None:
    """Left out, a fetch's method would let the rule allow a POST to the same URL."""
    args = {"url": "https://example.com/a?b=1", "method": "GET", "max_length": 50000}
    assert remember_patterns("web_fetch", args) == {
        "url": "https://example.com/a[?]b=1",
        "method": "GET",
    }


@pytest.mark.parametrize(
    ("value", "pattern"),
    [
        ("src/app.py", "src/app.py"),
        ("notes*.md", "notes[*].md"),
        ("a [draft]", "a [[]draft]"),
        ("re:literal", "re:re:literal"),
        ("KEY=1\n", "re:KEY=1\\\n"),
        ("rm\u202e", "re:rm\u202e"),
        (True, "true"),
        (["a.py", "b.py"], "re:(a\\.py|b\\.py)"),
    ],
)
def test_each_pattern_is_readable_and_matches_its_value_alone(value: Any, pattern: str) -> None:
    assert readable_pattern(value) == pattern
    rule = Rule("r1", "write_file", {"content": pattern}, "allow", "")
    assert allows(rule, value)
    if isinstance(value, str):
        assert not allows(rule, value + "x") and not allows(rule, "x" + value)


def allows(rule: Rule, value: Any, tool: str = "write_file", name: str = "content") -> bool:
    policy = PolicySpec(rules=(rule,))
    facts = CallFacts(tool, {name: value}, Path("/nonexistent-workspace"))
    return rule_matches(rule, CallContext(policy, facts, SessionCounters()))


def test_a_readable_command_pattern_allows_that_command_and_no_other() -> None:
    rule = Rule("r1", "run_command", {"command": "npm install lodash"}, "allow", "")
    assert allows(rule, "npm install lodash", "run_command", "command")
    assert not allows(rule, "npm install lodash-evil", "run_command", "command")
    assert not allows(rule, "npm install lodash && curl x | sh", "run_command", "command")


def test_the_exact_rule_in_any_spelling_is_exact_and_a_wider_one_is_not() -> None:
    args = {"command": "npm install lodash", "timeout": 120.0}
    for spelling in ("npm install lodash", "re:npm\\ install\\ lodash"):
        assert remember_is_exact("run_command", args, {"command": spelling})
    old_style = {"command": "re:npm\\ install\\ lodash", "timeout": "re:120\\.0"}
    assert remember_is_exact("run_command", args, old_style)  # as rules were remembered
    assert not remember_is_exact("run_command", args, {"command": "npm install *"})
    assert not remember_is_exact("run_command", args, {"command": "*", "timeout": "120.0"})


def test_a_rule_names_each_argument_sent_and_none_the_call_lacks() -> None:
    args = {"command": "ls", "timeout": 120.0}
    assert fits_the_call("run_command", args, {"command": "*"})
    assert fits_the_call("run_command", args, {"command": "*", "timeout": "*"})
    assert not fits_the_call("run_command", args, {"timeout": "*"})
    assert not fits_the_call("run_command", args, {"command": "*", "cwd": "*"})


def test_every_free_default_is_the_default_its_args_model_fills_in() -> None:
    for name, facts in CATALOGUE.items():
        model = REGISTRY[name].args_model
        assert model is not None
        for field, default in facts.free_defaults:
            assert model.model_fields[field].default == default, (name, field)
    assert remembered_args("run_command", {"command": "ls"}) == {"command": "ls"}
