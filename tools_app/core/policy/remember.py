"""The rule "approve & remember" starts from: the arguments the agent sent, each as the
pattern a person would type for exactly that value.

A value is written as a glob that matches only itself (`npm install lodash`, `src/app.py`,
`notes[*].md` for a literal `*`): a literal value stays literal. Only a value a form
field cannot hold (a line break, a control or invisible character), one that would read
as a regular expression (it starts with `re:`) or a list of values is written as `re:`
and an escaped regular expression. An argument the call only has because the args model
filled in its default, and whose value changes nothing the policy judges (a command's
timeout, `ToolFacts.free_defaults`), is left out: the agent never sent it. No Django here.
"""

from __future__ import annotations

import glob
import re
from collections.abc import Mapping
from typing import Any

from tools_app.core.policy.context import argument_strings
from tools_app.core.policy.rules import exact_pattern
from tools_app.core.tools.catalogue import facts_for

__all__ = ["fits_the_call", "remember_is_exact", "remember_patterns", "remembered_args"]

# What an <input> cannot keep (it drops line breaks) or a reviewer cannot see.
_UNTYPABLE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u00ad\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]"
)


def remembered_args(tool: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments a remembered rule pins: those of the call, less each one left at a
    default that changes nothing the policy judges."""
    free = dict(facts_for(tool).free_defaults)
    return {
        name: value
        for name, value in args.items()
        if not (name in free and _same(value, free[name]))
    }


def remember_patterns(tool: str, args: Mapping[str, Any]) -> dict[str, str]:
    """The rule's patterns when nobody widens them: each matches only its value."""
    return {name: readable_pattern(value) for name, value in remembered_args(tool, args).items()}


def readable_pattern(value: Any) -> str:
    """A pattern matching only `value`, as a person would type it."""
    strings = argument_strings(value)
    if isinstance(value, list | tuple):
        return "re:(" + "|".join(re.escape(text) for text in strings) + ")"
    text = strings[0]
    written = glob.escape(text)
    if written.startswith("re:") or _UNTYPABLE.search(text):
        return exact_pattern(text)
    return written


def remember_is_exact(tool: str, args: Mapping[str, Any], patterns: Mapping[str, str]) -> bool:
    """True when the patterns pin each remembered argument (and maybe an argument left
    at its default) to its value alone: the rule allows nothing the reviewer did not see."""
    return fits_the_call(tool, args, patterns) and all(
        pattern in _exact_spellings(args[name]) for name, pattern in patterns.items()
    )


def fits_the_call(tool: str, args: Mapping[str, Any], patterns: Mapping[str, str]) -> bool:
    """True when the patterns name each remembered argument and no argument the call does
    not have: a widened rule never silently drops a condition (`*` matches any value)."""
    return set(remembered_args(tool, args)) <= set(patterns) <= set(args)


def _exact_spellings(value: Any) -> set[str]:
    """The patterns matching only `value`: ours, and for a single value the `re:` or
    glob spelling a person or a client may write."""
    spellings = {readable_pattern(value)}
    if not isinstance(value, list | tuple):
        text = argument_strings(value)[0]
        spellings.add(exact_pattern(text))
        if not glob.escape(text).startswith("re:"):
            spellings.add(glob.escape(text))
    return spellings


def _same(value: Any, default: object) -> bool:
    if isinstance(value, bool) or isinstance(default, bool):
        return value is default
    return bool(value == default)
