"""Plain data the policy engine reads and returns."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

from tools_app.core.egress.classes import DEFAULT_COMMAND_HOSTS
from tools_app.core.egress.grant import EgressGrant
from tools_app.core.egress.patterns import matches

# What the policy can answer about a call.
VerdictKind = Literal["allow", "deny", "require_approval"]
VERDICTS: tuple[VerdictKind, ...] = ("allow", "deny", "require_approval")


@dataclass(frozen=True)
class Verdict:
    """The policy's answer about one call: its `kind`, why (for a person) and which rule
    gave it. A person's answer is a decision (`models.Decision`), never a verdict."""

    kind: VerdictKind
    reason: str
    rule: str
    quorum: Quorum | None = None  # a require_approval that needs more than anyone's yes
    # A command's network: the hosts it gets if it runs (an allow) or once a person
    # approves it (a require_approval); None: no network (`policy/egress.py`).
    egress: EgressGrant | None = None

    def as_dict(self) -> dict[str, Any]:
        # "decision": the key the API and the commands have always answered with.
        answer: dict[str, Any] = {"decision": self.kind, "reason": self.reason, "rule": self.rule}
        if self.quorum is not None:
            answer["approvals"] = self.quorum.as_dict()
        if self.egress is not None:
            answer["hosts"] = list(self.egress.hosts)
        return answer


MAX_APPROVALS = 10


@dataclass(frozen=True)
class Quorum:
    """How many distinct people must approve a call (`count`), and from which group
    (`group`; empty: any reviewer). None of them may be the session's creator."""

    count: int = 1
    group: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"count": self.count, "group": self.group}


@dataclass(frozen=True)
class HostChange:
    """How a rule changes the hosts of the commands it decides (a policy file's
    `hosts: {add, remove, only}`): `add` these patterns, `remove` every host one of
    these patterns names, and with `only` keep just the hosts one of those names. A
    remembered rule has `only`: the grant it was approved with, never more hosts."""

    add: tuple[str, ...] = ()
    remove: tuple[str, ...] = ()
    only: tuple[str, ...] | None = None

    def apply(self, hosts: tuple[str, ...]) -> tuple[str, ...]:
        changed = [h for h in (*hosts, *self.add) if not _named(h, self.remove)]
        if self.only is not None:
            changed = [h for h in changed if _named(h, self.only)]
        return tuple(dict.fromkeys(changed))

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"add": list(self.add), "remove": list(self.remove)}
        return data | ({"only": list(self.only)} if self.only is not None else {})


def _named(host: str, patterns: tuple[str, ...]) -> bool:
    """A host pattern is named by `patterns` when it is one of them or one of them
    matches it as a host (a wildcard named only by itself or a wider wildcard)."""
    return any(host == p or (not host.startswith("*") and matches(host, p)) for p in patterns)


@dataclass(frozen=True)
class Rule:
    """An admin's explicit rule: `{tool, args: {NAME: PATTERN}, decision, reason}` in a
    policy file, where `decision` is the verdict it gives (`verdict` here).

    `id` names it in decisions ("rule 12"); a PATTERN is a glob, or a regular
    expression when it starts with `re:`. `remembered_by` is the id of the reviewer
    whose "approve & remember" made it (empty for an admin's rule): it stands for that
    person's approval, so under `require_distinct_reviewer` it never allows a call in a
    session they created (see `rules.first_matching_rule`). `reviewer_bounded`: a
    reviewer who is not a policy admin widened it, so it allows no more than such a
    reviewer may widen: never a call a risky built-in approval sends to a person (see
    `engine.RISKY_APPROVALS`). `quorum`: the approvals a call this rule sends to a person
    needs (a policy file's `approvals: {count, group}`).
    """

    id: str
    tool: str
    args: Mapping[str, str]
    verdict: VerdictKind
    reason: str = ""
    remembered_by: str = ""
    reviewer_bounded: bool = False
    quorum: Quorum | None = None  # only on a require_approval rule
    hosts: HostChange | None = None  # only for run_command: see `policy/egress.py`


FieldKind = Literal["text", "int", "bool", "list", "rules"]
ItemCheck = Literal["", "path", "command", "host", "command-hosts"]


@dataclass(frozen=True)
class PolicyField:
    """How one PolicySpec field is read from a file, checked, stored and edited.

    The loader, the export, `policy_import`, the form and the admin all walk
    `POLICY_FIELDS`, so a new field is declared once, on PolicySpec; a unit test holds
    the model's columns to it.
    """

    name: str = ""
    kind: FieldKind = "text"
    minimum: int = 0  # an int's smallest allowed value
    items: ItemCheck = ""  # how each item of a list is checked
    group: str = ""  # the admin section of a setting; empty: not a setting an admin edits
    help: str = ""  # a list's help text in the admin form

    def plain(self, value: Any) -> Any:
        """The value as a policy file and the model hold it (lists, not tuples)."""
        return list(value) if self.kind == "list" else value


def _spec_field(default: Any, **info: Any) -> Any:
    return field(default=default, metadata={"policy": PolicyField(**info)})


def _strings(items: ItemCheck, group: str, help: str) -> Any:
    """A list of strings, each checked as `items`; edited one a line."""
    return _spec_field((), kind="list", items=items, group=group, help=help)


def _number(default: int, group: str = "", minimum: int = 0) -> Any:
    return _spec_field(default, kind="int", group=group, minimum=minimum)


def _switch(group: str) -> Any:
    """Off unless an admin turns it on."""
    return _spec_field(False, kind="bool", group=group)


@dataclass(frozen=True)
class PolicySpec:
    """A policy as the engine sees it (the Django model is converted to this).

    The fields are in the order a policy file lists them (`export_policy`).
    """

    name: str = _spec_field("default", kind="text")
    version: int = _number(1, minimum=1)
    protected_paths: tuple[str, ...] = _strings(
        "path", "Files", "Gitignore-style patterns, one a line."
    )
    blocked_commands: tuple[str, ...] = _strings(
        "command", "Commands", "Commands to deny, one a line."
    )
    approval_commands: tuple[str, ...] = _strings(
        "command", "Commands", "Commands that need approval, beyond the built-in set."
    )
    max_diff_lines: int = _number(500, "Files")
    require_approval_above: int = _number(200, "Files")
    # Reading one of these needs a person; search and listings never show their contents.
    secret_paths: tuple[str, ...] = _strings(
        "path",
        "Files",
        "Patterns of files holding credentials: reading one needs a person; "
        "search never shows their contents.",
    )
    web_allow_hosts: tuple[str, ...] = _strings("host", "Web", "Hosts web_fetch may reach.")
    # web_fetch with a body or a method other than GET/HEAD reaches these hosts without a
    # person; any other host needs one (a write can carry the workspace out).
    web_write_hosts: tuple[str, ...] = _strings(
        "host",
        "Web",
        "Hosts web_fetch may send a body or a method other than GET/HEAD to without a person.",
    )
    command_network: bool = _switch("Commands")
    # The hosts each class of command may reach (`core/egress/classes.py`), one class a
    # line: `npm registry.npmjs.org`.
    command_hosts: tuple[str, ...] = _spec_field(
        DEFAULT_COMMAND_HOSTS,
        kind="list",
        items="command-hosts",
        group="Commands",
        help="Hosts a command may reach, by class, one class a line: "
        "CLASS HOST [HOST …] (classes: npm, pip, git, cargo, go).",
    )
    # A run_command asking for a longer timeout (seconds) waits for a person.
    command_timeout_limit: int = _number(600, "Commands", minimum=1)
    require_distinct_reviewer: bool = _switch("Approvals")
    # How many distinct people (none of them the session's creator) approve a call that a
    # built-in check sends to a person; a rule's own `approvals` says it for its calls.
    builtin_approvals: int = _number(1, "Approvals", minimum=1)
    approval_timeout_seconds: int = _number(3600, "Approvals", minimum=1)
    # A call still waiting this long (seconds) is told to the escalation channels; 0: never.
    escalate_after_seconds: int = _number(0, "Approvals")
    rules: tuple[Rule, ...] = _spec_field((), kind="rules")


POLICY_FIELDS: tuple[PolicyField, ...] = tuple(
    replace(spec_field.metadata["policy"], name=spec_field.name)
    for spec_field in fields(PolicySpec)
)
# Every field but the rules: a value or a list of strings.
PLAIN_FIELDS: tuple[PolicyField, ...] = tuple(f for f in POLICY_FIELDS if f.kind != "rules")
# What an admin edits and the model stores one column each, besides the name.
POLICY_SETTINGS: tuple[PolicyField, ...] = tuple(f for f in POLICY_FIELDS if f.group)


def field_values(source: object, spec_fields: Iterable[PolicyField]) -> dict[str, Any]:
    """`source`'s values of these fields (a PolicySpec's or a stored policy's), as a
    policy file holds them."""
    return {f.name: f.plain(getattr(source, f.name)) for f in spec_fields}


@dataclass(frozen=True)
class SessionCounters:
    """What the policy knows of the session a call is in: changed lines of executed
    writes, and the id of the person who created it (empty: unknown or nobody), which a
    remembered rule needs to keep the four-eyes rule."""

    total_changed_lines: int = 0
    changed_since_approval: int = 0
    creator: str = ""


@dataclass(frozen=True)
class CallFacts:
    """One tool call as the policy judges it.

    `args` are already validated by the tool's model. `changed_lines` is what this
    call would change: added + removed lines of a write/edit's unified diff, or of the
    diff a `git_commit` would record; None when it could not be computed.
    `executor` is a skill tool's executor definition (`skill.tool` names), as captured
    for this call; None for a core tool.
    """

    tool: str
    args: Mapping[str, Any]
    workspace: Path
    changed_lines: int | None = None
    executor: Mapping[str, Any] | None = None
