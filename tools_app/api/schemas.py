"""API shapes (pydantic via django-ninja)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Schema
from pydantic import ConfigDict, Field


class StrictIn(Schema):
    model_config = ConfigDict(extra="forbid")


class SessionIn(StrictIn):
    task: str = Field(min_length=1, max_length=20000)
    repo: str = Field(min_length=1, max_length=1000)
    model: str = Field(default="", max_length=200)
    policy: str = Field(
        default="", max_length=100, description="Empty: the project's policy, else `default`."
    )
    project: str = Field(
        default="",
        max_length=100,
        description="Empty: the project whose repository patterns claim `repo`, else "
        "`default`. Only a project you are a member or reviewer of.",
    )


class SessionOut(Schema):
    id: int
    status: str
    task: str
    repo: str
    workspace: str
    policy: str
    project: str = Field(default="", description="The project it belongs to.")
    model: str
    kind: str
    cwd: str = Field(default="", description="A gateway session: the agent's directory.")
    external_id: str = Field(default="", description="A gateway session: the agent's id.")
    parent: int | None
    children: list[int]
    tokens: dict[str, Any]
    summary: str
    files_changed: list[str]
    depth: int
    iterations: int
    max_iterations: int
    token_budget: int
    total_changed_lines: int
    changed_since_approval: int
    active_skills: list[dict[str, Any]] = []
    created_at: datetime
    finished_at: datetime | None


class ToolCallIn(StrictIn):
    tool: str = Field(min_length=1, max_length=200)
    args: dict[str, Any] = Field(default_factory=dict)


class QuorumOut(Schema):
    needed: int
    group: str = Field(description="The group approvers must belong to; empty: any reviewer.")
    approved_by: list[str]
    still_needed: int


class EgressOut(Schema):
    hosts: list[str]


class ConnectionOut(Schema):
    host: str
    port: int
    sent: int = Field(description="Bytes the command sent.")
    received: int = Field(description="Bytes the command received.")
    allowed: bool
    reason: str = Field(default="", description="Why it was refused (empty: allowed).")


class ToolCallOut(Schema):
    id: int
    session: int
    tool: str
    args: dict[str, Any]
    status: str
    # The policy's verdict (`ToolCall.verdict`), under the key the API has always used.
    decision: str
    reason: str
    rule: str
    result: str
    preview: dict[str, Any] | None
    decided_by: str | None
    from_cache: bool
    outcome: str = Field(
        default="",
        description="What the run changed, beside its status: applied, held (for a person, "
        "as `held_call`), refused (nothing applied), nothing (nothing to apply), "
        "not_applicable (run without the sandbox); empty: not recorded.",
    )
    outcome_detail: str = Field(
        default="", description="The outcome as a person reads it, with its why."
    )
    held_call: int | None = Field(
        default=None, description="The call a held effect waits as (outcome `held`)."
    )
    network: str = Field(
        default="",
        description="A command's network: granted, withheld, missing (it tried to reach "
        "the network and could not) or refused (the egress proxy refused a host outside "
        "its grant); empty: not a command, or not recorded.",
    )
    egress: EgressOut | None = Field(
        default=None,
        description="A command's grant, fixed when it was judged: the hosts it may reach "
        "(once approved, for a call awaiting approval); null: no network.",
    )
    connections: list[ConnectionOut] = Field(
        default_factory=list,
        description="Each connection the command tried, as the egress proxy saw it.",
    )
    policy_version: int | None
    created_at: datetime
    decided_at: datetime | None
    expires_at: datetime | None
    finished_at: datetime | None
    native_tool: str = Field(default="", description="A gateway call: the agent's tool.")
    native_input: dict[str, Any] | None = Field(
        default=None, description="A gateway call: the agent's input, what will run."
    )
    tool_use_id: str = Field(default="", description="A gateway call: the agent's tool use.")
    approvals: QuorumOut | None = Field(
        default=None,
        description="A call that needs several approvals (its rule's quorum): who has "
        "approved its arguments as they are now, and how many more are needed; null when "
        "one person decides.",
    )


class DecisionIn(StrictIn):
    decision: Literal["approve", "deny"]
    reason: str = Field(default="", max_length=5000)
    args: dict[str, Any] | None = None
    remember: bool = False
    rule_args: dict[str, str] | None = Field(
        default=None,
        description="With `remember`: one pattern per argument, to widen the remembered "
        "rule (a call that waited for a protected path, a risky command or a pull request "
        "may only be widened by a policy admin).",
    )


class EvaluateIn(StrictIn):
    tool: str = Field(min_length=1, max_length=200)
    args: dict[str, Any] = Field(default_factory=dict)
    session: int | None = Field(
        default=None, description="Judge against this session's workspace and counters."
    )


class VerdictOut(Schema):
    """The policy's verdict on a dry run; `decision` is its kind (the API's key)."""

    decision: str
    reason: str
    rule: str
    approvals: dict[str, Any] | None = Field(
        default=None, description="The quorum a require_approval asks for: {count, group}."
    )
    hosts: list[str] | None = Field(
        default=None,
        description="A command's hosts: those it may reach if it runs (allow) or once a "
        "person approves it (require_approval); null: no network.",
    )
    note: str | None = Field(
        default=None, description="A warning about the workspace (a tracked secret path)."
    )


class ErrorOut(Schema):
    detail: Any


class SessionPage(Schema):
    """One page of sessions, newest first."""

    items: list[SessionOut]
    next: str | None = Field(description="The `cursor` of the next page; null on the last.")


class ToolCallPage(Schema):
    """One page of tool calls, in the order they were received."""

    items: list[ToolCallOut]
    next: str | None = Field(description="The `cursor` of the next page; null on the last.")
