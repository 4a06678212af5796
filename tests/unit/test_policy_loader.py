"""Policy files: defaults, validation that names the field, exact round trips."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from tools_app.core.policy.defaults import DEFAULT_POLICY
from tools_app.core.policy.loader import (
    PolicyInvalid,
    policy_from_dict,
    policy_to_dict,
    validate_policy_dict,
)
from tools_app.core.policy.types import PolicySpec, Rule


def problems(data: Any) -> list[str]:
    return [str(p) for p in validate_policy_dict(data)]


def test_the_default_policy_is_valid_and_has_the_documented_values() -> None:
    spec = policy_from_dict(DEFAULT_POLICY)
    assert spec.name == "default"
    assert ".env" in spec.protected_paths and ".github/**" in spec.protected_paths
    assert spec.blocked_commands == ("rm -rf /", "curl | sh")
    assert (spec.max_diff_lines, spec.require_approval_above) == (500, 200)
    assert spec.approval_commands == () and spec.web_allow_hosts == () and spec.rules == ()
    assert spec.command_network is False and spec.require_distinct_reviewer is False
    assert spec.approval_timeout_seconds == 3600


def test_missing_keys_take_the_default_policy_s_values() -> None:
    spec = policy_from_dict({"name": "strict", "max_diff_lines": 100})
    assert spec.name == "strict"
    assert spec.max_diff_lines == 100
    assert spec.protected_paths == tuple(DEFAULT_POLICY["protected_paths"])
    assert spec.require_approval_above == 200


def test_loading_does_not_change_the_default_policy() -> None:
    before = copy.deepcopy(DEFAULT_POLICY)
    policy_from_dict({"name": "x", "rules": [{"tool": "*", "decision": "allow"}]})
    assert before == DEFAULT_POLICY


def test_rules_get_positional_ids_and_default_args_and_reason() -> None:
    spec = policy_from_dict(
        {
            "name": "x",
            "rules": [
                {"tool": "run_command", "args": {"command": "make*"}, "decision": "allow"},
                {"tool": "task_done", "decision": "deny", "reason": "not yet"},
            ],
        }
    )
    assert spec.rules == (
        Rule("1", "run_command", {"command": "make*"}, "allow", ""),
        Rule("2", "task_done", {}, "deny", "not yet"),
    )


def full_policy() -> dict[str, Any]:
    data = copy.deepcopy(DEFAULT_POLICY)
    data |= {
        "name": "team",
        "version": 4,
        "approval_commands": ["make deploy"],
        "web_allow_hosts": ["example.com"],
        "command_network": True,
        "rules": [
            {"tool": "run_command", "args": {"command": "re:pytest.*"}, "decision": "allow",
             "reason": "tests"},
            {"id": "db-7", "tool": "write_file", "args": {"path": "migrations/*"},
             "decision": "require_approval", "reason": ""},
        ],
    }  # fmt: skip
    return data


def test_policy_to_dict_round_trips_a_file_exactly() -> None:
    data = full_policy()
    assert policy_to_dict(policy_from_dict(data)) == data


def test_policy_from_dict_round_trips_a_spec_exactly() -> None:
    spec = policy_from_dict(full_policy())
    assert policy_from_dict(policy_to_dict(spec)) == spec


def test_the_exported_dict_is_json() -> None:
    data = policy_to_dict(policy_from_dict(full_policy()))
    assert json.loads(json.dumps(data)) == data


def test_a_spec_built_in_code_round_trips() -> None:
    spec = PolicySpec(name="p", rules=(Rule("42", "*", {}, "deny", "r"),))
    assert policy_from_dict(policy_to_dict(spec)) == spec


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            {"name": "x", "rules": [{}, {}, {"tool": "write_file", "decision": "deny",
                                             "args": {"path": "re:("}}]},
            "rules[2].args.path: bad regular expression 're:(': "
            "missing ), unterminated subpattern",
        ),
        (
            {"name": "x", "rules": [{"tool": "x", "decision": "maybe"}]},
            "rules[0].decision: must be one of allow, deny, require_approval, not 'maybe'",
        ),
        ({"name": "x", "rules": [{"decision": "allow"}]}, "rules[0].tool: must be"),
        ({"name": "x", "rules": [{"tool": "re:[", "decision": "allow"}]}, "rules[0].tool: bad"),
        ({"name": "x", "rules": [{"tool": "x", "decision": "deny", "when": 1}]},
         "rules[0].when: unknown key"),
        ({"name": "x", "rules": [{"tool": "x", "decision": "deny", "args": []}]},
         "rules[0].args: must be an object"),
        ({"name": "x", "rules": [{"tool": "x", "decision": "deny", "args": {"a": 1}}]},
         "rules[0].args.a: must be a pattern string"),
        ({"name": "x", "rules": [{"tool": "x", "decision": "deny", "reason": 3}]},
         "rules[0].reason: must be a string"),
        ({"name": "x", "rules": [{"id": "a", "tool": "x", "decision": "deny"},
                                 {"id": "a", "tool": "y", "decision": "deny"}]},
         "rules[1].id: 'a' is used twice"),
        ({"name": "x", "rules": ["deny all"]}, "rules[0]: must be an object"),
        ({"name": "x", "rules": {}}, "rules: must be a list"),
        ({"name": "x", "max_diff_lines": -1}, "max_diff_lines: must be at least 0, not -1"),
        ({"name": "x", "require_approval_above": -5}, "require_approval_above: must be at least 0"),
        ({"name": "x", "approval_timeout_seconds": 0},
         "approval_timeout_seconds: must be at least 1"),
        ({"name": "x", "max_diff_lines": "500"},
         "max_diff_lines: must be a whole number, not a string"),
        ({"name": "x", "max_diff_lines": True}, "max_diff_lines: must be a whole number"),
        ({"name": "x", "max_diff_lines": 1.5}, "max_diff_lines: must be a whole number"),
        ({"name": "x", "command_network": "yes"}, "command_network: must be true or false"),
        ({"name": "x", "protected_paths": ".env"}, "protected_paths: must be a list of strings"),
        ({"name": "x", "protected_paths": [".env", 3]}, "protected_paths[1]: must be a non-empty"),
        ({"name": "x", "protected_paths": ["!x"]}, "protected_paths[0]: negation"),
        ({"name": "x", "blocked_commands": ["case x in"]},
         "blocked_commands[0]: 'case x in' cannot"),
        ({"name": "x", "approval_commands": [""]}, "approval_commands[0]: must be a non-empty"),
        ({"name": "x", "web_allow_hosts": ["https://x.com"]}, "web_allow_hosts[0]: 'https://x.com'"),
        ({"name": "x", "colour": "red"}, "colour: unknown key"),
        ({}, "name: is required"),
        ({"name": ""}, "name: must be a non-empty string"),
        ([], "a policy must be a JSON object, not a list"),
    ],
)  # fmt: skip
def test_validation_names_the_field(data: Any, expected: str) -> None:
    found = problems(data)
    assert any(p.startswith(expected) for p in found), found


def test_every_problem_is_reported_at_once() -> None:
    found = problems({"max_diff_lines": -1, "colour": 1, "rules": [{"tool": "x"}]})
    assert len(found) == 4


def test_policy_from_dict_raises_with_the_problems_listed() -> None:
    with pytest.raises(PolicyInvalid) as caught:
        policy_from_dict({"name": "x", "max_diff_lines": -1, "foo": 1})
    assert "max_diff_lines: must be at least 0" in str(caught.value)
    assert "foo: unknown key" in str(caught.value)
    assert len(caught.value.problems) == 2


def test_numeric_rule_ids_are_accepted_as_text() -> None:
    spec = policy_from_dict({"name": "x", "rules": [{"id": 12, "tool": "*", "decision": "deny"}]})
    assert spec.rules[0].id == "12"
