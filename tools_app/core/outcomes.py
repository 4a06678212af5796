"""What a tool call's run changed, beside its status: its *outcome*, without Django.

A call's status is the lifecycle's (`succeeded` says the tool ran to its end); the
outcome says what that run did to the workspace, which a status cannot: a command whose
effect was refused whole still `succeeded`. For a command it is one of

* `applied`: its whole effect is in the workspace;
* `held`: its whole effect waits for a person, as its own call (`held_call`);
* `refused`: nothing it changed was applied, and why;
* `nothing`: it changed nothing there was to apply;
* `not_applicable`: it ran without the copy-on-write sandbox, so no effect was judged.

and `network` says whether it had the network: `granted` (a person's approval, the
policy's `command_network`, or no sandbox on the host), `withheld`, or `missing` (its
output shows it tried to reach the network and could not). An empty outcome is "not
recorded": a tool that changes nothing of its own, a call that never ran, an old row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from tools_app.core.command_effects import EffectVerdict

OutcomeKind = Literal["applied", "held", "refused", "nothing", "not_applicable"]
NetworkKind = Literal["granted", "withheld", "missing"]

DETAIL_CHARS = 500
# What a resolver or client prints when there is no network to reach: getaddrinfo's
# errors as Node, Python and C report them, curl's, git's and pip's words for the same.
_NO_NETWORK = re.compile(
    r"EAI_AGAIN|ENOTFOUND|EAI_NONAME|ENETUNREACH|Temporary failure in name resolution"
    r"|Could not resolve host(?:name)?|Name or service not known|Network is unreachable"
    r"|No address associated with hostname|nodename nor servname provided"
    r"|getaddrinfo failed|Failed to establish a new connection"
)


@dataclass(frozen=True)
class CallOutcome:
    """What a run changed: the kind, a sentence a person reads, the call holding the
    effect when it waits, and for a command its network."""

    kind: OutcomeKind
    detail: str
    held_call: int | None = None
    network: NetworkKind | Literal[""] = ""


def applied(paths: int, changed_lines: int) -> CallOutcome:
    files = f"{paths:,} file{'s' if paths != 1 else ''}"
    return CallOutcome("applied", f"applied: {files} ({changed_lines:,} changed lines)")


def held(call_id: int, why: str) -> CallOutcome:
    return CallOutcome("held", _clip(f"held for a person as call {call_id}: {why}"), call_id)


def refused(why: str) -> CallOutcome:
    return CallOutcome("refused", _clip(f"nothing applied: {why}"))


NOTHING = CallOutcome("nothing", "nothing to apply: the command changed no file")
UNJUDGED = CallOutcome(
    "not_applicable",
    "not judged: this host has no copy-on-write sandbox, so the command wrote the "
    "workspace directly",
)


def command_outcome(
    judged: CallOutcome | None, *, unsandboxed: bool, granted: bool, output: str
) -> CallOutcome | None:
    """A command's outcome with its network: `judged` is what the effect's judge
    concluded (None: it never judged one); None when the call ran no command."""
    if judged is None and not unsandboxed:
        return None
    outcome = judged or UNJUDGED
    granted = granted or unsandboxed
    sign = _NO_NETWORK.search(output)
    if sign is None:
        return replace(outcome, network="granted" if granted else "withheld")
    if granted:
        note = f"network unreachable: it had the network but could not reach it ({sign[0]})"
    else:
        note = (
            f"no network: it tried to reach the network ({sign[0]}) but ran without it; only "
            "a person's approval or the policy's command_network gives a command the network"
        )
    detail = f"{_clip(outcome.detail, DETAIL_CHARS - len(note) - 3)} · {note}"
    return replace(outcome, detail=detail, network="missing")


def badge(status: str, detail: str) -> str:
    """`succeeded · nothing applied: 1,812 lines over the limit of 500`: the status with
    its outcome, as every badge shows a call."""
    return f"{status} · {detail}" if detail else status


def _clip(text: str, limit: int = DETAIL_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def effect_outcome(verdict: EffectVerdict, *, held_call: int | None = None) -> CallOutcome:
    """The outcome of a judged effect (`held_call`: the call it waits as, when held)."""
    if verdict.action == "refuse":
        return refused(verdict.short or verdict.reason)
    if verdict.action == "hold" and held_call is not None:
        return held(held_call, verdict.reason)
    if not verdict.paths:
        return NOTHING
    return applied(len(verdict.paths), verdict.changed_lines)
