"""Policy files: JSON in, PolicySpec out, and back, with problems a person can fix.

Every problem names its field the way the file spells it (`rules[2].args.path`), so
that an admin can find it. Missing keys take the `default` policy's values, so a
file holding only `{"name": "strict", "max_diff_lines": 100}` still protects `.env`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from tools_app.core.egress.classes import command_hosts_problem
from tools_app.core.egress.patterns import host_pattern_problem, normalised
from tools_app.core.policy.defaults import DEFAULT_SPEC
from tools_app.core.policy.patterns import compile_pattern
from tools_app.core.policy.rules import value_pattern_problem
from tools_app.core.policy.types import (
    MAX_APPROVALS,
    PLAIN_FIELDS,
    POLICY_FIELDS,
    VERDICTS,
    HostChange,
    PolicySpec,
    Quorum,
    Rule,
    field_values,
)
from tools_app.core.tools.paths import pattern_problem

LIST_FIELDS = tuple(f.name for f in POLICY_FIELDS if f.kind == "list")
INT_FIELDS = {f.name: f.minimum for f in POLICY_FIELDS if f.kind == "int"}
BOOL_FIELDS = tuple(f.name for f in POLICY_FIELDS if f.kind == "bool")
POLICY_KEYS = tuple(f.name for f in POLICY_FIELDS)
RULE_KEYS = ("id", "tool", "args", "decision", "reason", "approvals", "hosts")
HOSTS_KEYS = ("add", "remove", "only")
QUORUM_KEYS = ("count", "group")


@dataclass(frozen=True)
class PolicyProblem:
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message


class PolicyInvalid(ValueError):
    """A policy file that cannot be used; `problems` lists every reason."""

    def __init__(self, problems: list[PolicyProblem]) -> None:
        self.problems = tuple(problems)
        super().__init__("invalid policy: " + "; ".join(str(p) for p in problems))


def _command_problem(pattern: str) -> str | None:
    if compile_pattern(pattern) is None:
        return f"{pattern!r} cannot be parsed as a shell command"
    return None


def _host_problem(host: str) -> str | None:
    if "://" in host or "/" in host or " " in host:
        return f"{host!r} is not a host name (write example.com, not a URL)"
    return None


_ITEM_CHECKS: dict[str, Callable[[str], str | None]] = {
    "path": pattern_problem,
    "command": _command_problem,
    "host": _host_problem,
    "command-hosts": command_hosts_problem,
}
_LIST_ITEM_CHECKS = {f.name: _ITEM_CHECKS[f.items] for f in POLICY_FIELDS if f.kind == "list"}


def _string_list_problems(key: str, value: Any) -> list[PolicyProblem]:
    if not isinstance(value, list):
        return [PolicyProblem(key, f"must be a list of strings, not {_kind(value)}")]
    problems: list[PolicyProblem] = []
    for i, item in enumerate(value):
        where = f"{key}[{i}]"
        if not isinstance(item, str) or not item.strip():
            problems.append(PolicyProblem(where, "must be a non-empty string"))
            continue
        message = _LIST_ITEM_CHECKS[key](item)
        if message:
            problems.append(PolicyProblem(where, message))
    return problems


def _scalar_problems(key: str, value: Any) -> list[PolicyProblem]:
    if key in INT_FIELDS:
        if not isinstance(value, int) or isinstance(value, bool):
            return [PolicyProblem(key, f"must be a whole number, not {_kind(value)}")]
        if value < INT_FIELDS[key]:
            return [PolicyProblem(key, f"must be at least {INT_FIELDS[key]}, not {value}")]
    elif key in BOOL_FIELDS and not isinstance(value, bool):
        return [PolicyProblem(key, f"must be true or false, not {_kind(value)}")]
    elif key == "name" and (not isinstance(value, str) or not value.strip()):
        return [PolicyProblem(key, "must be a non-empty string")]
    elif key == "name" and len(value) > 100:
        return [PolicyProblem(key, "must be at most 100 characters")]
    return []


def _kind(value: Any) -> str:
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string"}
    names |= {list: "a list", dict: "an object", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _rule_problems(where: str, rule: Any) -> list[PolicyProblem]:
    if not isinstance(rule, Mapping):
        return [PolicyProblem(where, f"must be an object, not {_kind(rule)}")]
    problems = [
        PolicyProblem(f"{where}.{key}", f"unknown key (known: {', '.join(RULE_KEYS)})")
        for key in rule
        if key not in RULE_KEYS
    ]
    tool = rule.get("tool")
    if not isinstance(tool, str) or not tool.strip():
        problems.append(PolicyProblem(f"{where}.tool", "must be a tool name or pattern"))
    elif len(tool) > 200:
        problems.append(PolicyProblem(f"{where}.tool", "must be at most 200 characters"))
    elif message := value_pattern_problem(tool):
        problems.append(PolicyProblem(f"{where}.tool", message))
    if rule.get("decision") not in VERDICTS:
        problems.append(
            PolicyProblem(
                f"{where}.decision",
                f"must be one of {', '.join(VERDICTS)}, not {rule.get('decision')!r}",
            )
        )
    if not isinstance(rule.get("reason", ""), str):
        problems.append(PolicyProblem(f"{where}.reason", "must be a string"))
    rule_id = rule.get("id", "")
    if isinstance(rule_id, bool) or not isinstance(rule_id, str | int):
        problems.append(PolicyProblem(f"{where}.id", "must be a string or a number"))
    if "approvals" in rule:
        verdict = rule.get("decision")  # a policy file's key for a rule's verdict
        problems += _quorum_problems(f"{where}.approvals", rule["approvals"], verdict)
    if "hosts" in rule:
        problems += _hosts_problems(f"{where}.hosts", rule["hosts"], rule.get("decision"))
    return problems + _args_problems(f"{where}.args", rule.get("args", {}))


def _quorum_problems(where: str, quorum: Any, verdict: Any) -> list[PolicyProblem]:
    """`approvals: {count: N, group: NAME}`: N distinct people (of group NAME, when
    named) approve a call the rule sends to a person."""
    if verdict != "require_approval":
        return [PolicyProblem(where, "is only for a rule whose decision is require_approval")]
    if not isinstance(quorum, Mapping):
        return [PolicyProblem(where, f"must be an object {{count, group}}, not {_kind(quorum)}")]
    problems = [
        PolicyProblem(f"{where}.{key}", f"unknown key (known: {', '.join(QUORUM_KEYS)})")
        for key in quorum
        if key not in QUORUM_KEYS
    ]
    count = quorum.get("count", 1)
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_APPROVALS:
        problems.append(
            PolicyProblem(f"{where}.count", f"must be a number from 1 to {MAX_APPROVALS}")
        )
    group = quorum.get("group", "")
    if not isinstance(group, str) or len(group) > 150 or group != group.strip():
        problems.append(
            PolicyProblem(f"{where}.group", "must be a group's name (at most 150 characters)")
        )
    return problems


def _hosts_problems(where: str, hosts: Any, verdict: Any) -> list[PolicyProblem]:
    """`hosts: {add: [...], remove: [...], only: [...]}`: each a list of host patterns
    (`core/egress/patterns.py`), on a rule that lets a command run."""
    if verdict == "deny":
        return [PolicyProblem(where, "is only for a rule that allows or asks a person")]
    if not isinstance(hosts, Mapping):
        return [
            PolicyProblem(where, f"must be an object {{add, remove, only}}, not {_kind(hosts)}")
        ]
    problems = [
        PolicyProblem(f"{where}.{key}", f"unknown key (known: {', '.join(HOSTS_KEYS)})")
        for key in hosts
        if key not in HOSTS_KEYS
    ]
    for key in HOSTS_KEYS:
        value = hosts.get(key, [])
        if not isinstance(value, list) or not all(isinstance(h, str) for h in value):
            problems.append(PolicyProblem(f"{where}.{key}", "must be a list of host patterns"))
            continue
        problems += [
            PolicyProblem(f"{where}.{key}[{i}]", message)
            for i, host in enumerate(value)
            if (message := host_pattern_problem(host))
        ]
    return problems


def _args_problems(where: str, args: Any) -> list[PolicyProblem]:
    if not isinstance(args, Mapping):
        return [PolicyProblem(where, f"must be an object of NAME: PATTERN, not {_kind(args)}")]
    problems: list[PolicyProblem] = []
    for name, pattern in args.items():
        if not isinstance(pattern, str):
            problems.append(PolicyProblem(f"{where}.{name}", "must be a pattern string"))
        elif message := value_pattern_problem(pattern):
            problems.append(PolicyProblem(f"{where}.{name}", message))
    return problems


def _rules_problems(rules: Any) -> list[PolicyProblem]:
    if not isinstance(rules, list):
        return [PolicyProblem("rules", f"must be a list of rules, not {_kind(rules)}")]
    problems: list[PolicyProblem] = []
    seen: set[str] = set()
    for i, rule in enumerate(rules):
        problems += _rule_problems(f"rules[{i}]", rule)
        if isinstance(rule, Mapping) and "id" in rule:
            if str(rule["id"]) in seen:
                problems.append(PolicyProblem(f"rules[{i}].id", f"{rule['id']!r} is used twice"))
            seen.add(str(rule["id"]))
    return problems


def validate_policy_dict(data: Any) -> list[PolicyProblem]:
    """Every problem with a policy file's contents; empty when it can be used."""
    if not isinstance(data, Mapping):
        return [PolicyProblem("", f"a policy must be a JSON object, not {_kind(data)}")]
    problems = [
        PolicyProblem(str(key), f"unknown key (known: {', '.join(POLICY_KEYS)})")
        for key in data
        if key not in POLICY_KEYS
    ]
    if "name" not in data:
        problems.append(PolicyProblem("name", "is required"))
    for key, value in data.items():
        if key in LIST_FIELDS:
            problems += _string_list_problems(key, value)
        elif key == "rules":
            problems += _rules_problems(value)
        else:
            problems += _scalar_problems(key, value)
    return problems


def _rule_from_dict(index: int, data: Mapping[str, Any]) -> Rule:
    return Rule(
        id=str(data.get("id", index + 1)),
        tool=data["tool"],
        args=dict(data.get("args", {})),
        verdict=data["decision"],
        reason=data.get("reason", ""),
        quorum=_quorum_from_dict(data.get("approvals")),
        hosts=_hosts_from_dict(data.get("hosts")),
    )


def _hosts_from_dict(data: Mapping[str, Any] | None) -> HostChange | None:
    if data is None:
        return None
    only = data.get("only")

    def patterns(values: list[str]) -> tuple[str, ...]:
        return tuple(normalised(host) for host in values)

    return HostChange(
        add=patterns(data.get("add", [])),
        remove=patterns(data.get("remove", [])),
        only=None if only is None else patterns(only),
    )


def _quorum_from_dict(data: Mapping[str, Any] | None) -> Quorum | None:
    """None for no quorum, or for one that asks no more than any reviewer's yes."""
    quorum = Quorum(**data) if data else None
    return quorum if quorum != Quorum() else None


def policy_from_dict(data: Mapping[str, Any]) -> PolicySpec:
    """A PolicySpec from a policy file's object (raises PolicyInvalid)."""
    problems = validate_policy_dict(data)
    if problems:
        raise PolicyInvalid(problems)
    values: dict[str, Any] = {
        key: tuple(value) if key in LIST_FIELDS else value for key, value in data.items()
    }
    values["rules"] = tuple(
        _rule_from_dict(i, rule) for i, rule in enumerate(data.get("rules", []))
    )
    return replace(DEFAULT_SPEC, **values)


def _rule_to_dict(index: int, rule: Rule) -> dict[str, Any]:
    data: dict[str, Any] = {} if rule.id == str(index + 1) else {"id": rule.id}
    data |= {"tool": rule.tool, "args": dict(rule.args), "decision": rule.verdict}
    data |= {"reason": rule.reason}
    data |= {"approvals": rule.quorum.as_dict()} if rule.quorum else {}
    return data | ({"hosts": rule.hosts.as_dict()} if rule.hosts else {})


def policy_to_dict(spec: PolicySpec) -> dict[str, Any]:
    """The policy file object for a PolicySpec; `policy_from_dict` reads it back equal."""
    data = field_values(spec, PLAIN_FIELDS)
    return data | {"rules": [_rule_to_dict(i, rule) for i, rule in enumerate(spec.rules)]}
