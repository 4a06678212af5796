"""An admin's explicit rules: `{tool, args: {NAME: PATTERN}, decision, reason}`.

A PATTERN is a glob matched against the whole value (`*` may cross `/`), or a regular
expression (full match) when it starts with `re:`. A path argument is matched as the
workspace-relative POSIX path it resolves to.

`run_command`'s `command` is judged by the simple commands it would run, and the two
directions are deliberately asymmetric. A deny rule matches if the whole string or
ANY simple command matches: `rm *` denies `make && sudo rm x`. An allow (or
require_approval) rule matches only if the pattern is the whole command, literally,
or EVERY simple command matches and the command can be fully analysed: `pytest*` does
not let `pytest; curl x | sh` or `pytest $(…)` through.
"""

from __future__ import annotations

import fnmatch
import glob
import re
from collections.abc import Callable
from functools import lru_cache

from tools_app.core.policy.context import CallContext
from tools_app.core.policy.types import Rule

Matcher = Callable[[str], bool]


@lru_cache(maxsize=8192)
def compile_value_pattern(pattern: str) -> Matcher:
    """A rule PATTERN as a predicate (raises re.error for a bad `re:` pattern)."""
    regex = re.compile(pattern[3:] if pattern.startswith("re:") else fnmatch.translate(pattern))
    return lambda value: regex.fullmatch(value) is not None


def value_pattern_problem(pattern: str) -> str | None:
    """Why a rule PATTERN cannot be used, or None."""
    try:
        compile_value_pattern(pattern)
    except re.error as exc:
        return f"bad regular expression {pattern!r}: {exc.msg}"
    return None


def tool_matches(rule: Rule, tool: str) -> bool:
    return compile_value_pattern(rule.tool)(tool)


def rule_matches(rule: Rule, context: CallContext) -> bool:
    """True when the rule's tool and every one of its argument patterns match."""
    if not tool_matches(rule, context.tool):
        return False
    deny = rule.decision == "deny"
    for name, pattern in rule.args.items():
        if context.tool == "run_command" and name == "command":
            if not _command_matches(pattern, context, deny=deny):
                return False
        elif not _values_match(pattern, context.values(name), deny=deny):
            return False
    return True


def _values_match(pattern: str, values: tuple[str, ...] | None, *, deny: bool) -> bool:
    """Deny: any value matches. Allow: every value matches. Absent: only `*` matches."""
    if values is None:
        return pattern == "*"
    matcher = compile_value_pattern(pattern)
    if deny:
        return any(matcher(value) for value in values)
    return bool(values) and all(matcher(value) for value in values)


def _command_matches(pattern: str, context: CallContext, *, deny: bool) -> bool:
    command, analysis = context.command, context.analysis
    if command is None or analysis is None:
        return False
    if pattern in {command, exact_pattern(command), glob.escape(command)}:
        return True
    matcher = compile_value_pattern(pattern)
    if deny:
        return matcher(command) or any(
            matcher(c.text) or matcher(c.source) for c in analysis.commands
        )
    if analysis.opaque:
        return False
    judged = [c for c in analysis.commands if c.argv or c.redirects]
    return bool(judged) and all(matcher(c.text) or matcher(c.source) for c in judged)


def first_matching_rule(
    rules: tuple[Rule, ...], context: CallContext, *, deny: bool
) -> Rule | None:
    """The first rule of one kind (deny, or allow/require_approval) that matches; a rule
    that may not decide this call (`self_approval`) is passed over."""
    for rule in rules:
        if (rule.decision == "deny") != deny or self_approval(rule, context):
            continue
        if rule_matches(rule, context):
            return rule
    return None


def self_approval(rule: Rule, context: CallContext) -> bool:
    """True when a remembered rule would approve a call in its own author's session.

    A remembered rule is its author's approval made once for many calls. Under
    `require_distinct_reviewer` that author may not approve their own session's calls,
    so neither may the rule: the call goes on down the documented order (a protected
    path still waits for a second person). A deny is never passed over.
    """
    author = rule.remembered_by
    return (
        bool(author)
        and rule.decision != "deny"
        and context.policy.require_distinct_reviewer
        and author == context.counters.creator
    )


def exact_pattern(value: str) -> str:
    """A PATTERN matching exactly `value`, with no wildcard widening it.

    For "approve and remember": a `command` stored as this (or as the plain command, or
    as `glob.escape(command)`) allows that exact command again, even one that cannot
    be analysed.
    """
    return "re:" + re.escape(value)
