"""Plain data the policy engine reads and returns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

Verdict = Literal["allow", "deny", "require_approval"]
VERDICTS: tuple[Verdict, ...] = ("allow", "deny", "require_approval")


@dataclass(frozen=True)
class Decision:
    """What the engine decided, why (for a person) and which rule decided."""

    decision: Verdict
    reason: str
    rule: str

    def as_dict(self) -> dict[str, str]:
        return {"decision": self.decision, "reason": self.reason, "rule": self.rule}


@dataclass(frozen=True)
class Rule:
    """An admin's explicit rule: `{tool, args: {NAME: PATTERN}, decision, reason}`.

    `id` names it in decisions ("rule 12"); a PATTERN is a glob, or a regular
    expression when it starts with `re:`.
    """

    id: str
    tool: str
    args: Mapping[str, str]
    decision: Verdict
    reason: str = ""


@dataclass(frozen=True)
class PolicySpec:
    """A policy as the engine sees it (the Django model is converted to this)."""

    name: str = "default"
    version: int = 1
    protected_paths: tuple[str, ...] = ()
    blocked_commands: tuple[str, ...] = ()
    approval_commands: tuple[str, ...] = ()
    max_diff_lines: int = 500
    require_approval_above: int = 200
    web_allow_hosts: tuple[str, ...] = ()
    # web_fetch with a body or a method other than GET/HEAD reaches these hosts without a
    # person; any other host needs one (a write can carry the workspace out).
    web_write_hosts: tuple[str, ...] = ()
    # Reading one of these needs a person; search and listings never show their contents.
    secret_paths: tuple[str, ...] = ()
    command_network: bool = False
    require_distinct_reviewer: bool = False
    approval_timeout_seconds: int = 3600
    rules: tuple[Rule, ...] = ()


@dataclass(frozen=True)
class SessionCounters:
    """Changed lines of executed writes in a session."""

    total_changed_lines: int = 0
    changed_since_approval: int = 0


@dataclass(frozen=True)
class CallFacts:
    """One tool call as the policy judges it.

    `args` are already validated by the tool's model. `changed_lines` is what this
    call would change: added + removed lines of a write/edit's unified diff, or of the
    diff a `git_commit` would record; None when it could not be computed.
    """

    tool: str
    args: Mapping[str, Any]
    workspace: Path
    changed_lines: int | None = None
