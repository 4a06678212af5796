"""What a tool call's run changed, beside its status: its *outcome*, without Django.

A call's status is the lifecycle's (`succeeded` says the tool ran to its end); the
outcome says what that run did to the workspace, which a status cannot: a command whose
effect was refused whole still `succeeded`. For a command it is one of

* `applied`: its whole effect is in the workspace;
* `held`: its whole effect waits for a person, as its own call (`held_call`);
* `refused`: nothing it changed was applied, and why;
* `nothing`: it changed nothing there was to apply;
* `not_applicable`: it ran without the copy-on-write sandbox, so no effect was judged.

and `network` says what it had of the network: `granted` (hosts of its grant, or no
sandbox on the host), `withheld` (no grant), `missing` (its output shows it tried to
reach the network and could not), or `refused` (the egress proxy refused a connection
to a host outside its grant: the detail names the host and how to allow it). A command
whose network was refused, or whose changes were refused, never reads as a plain
success: its badge carries the detail. An empty outcome is "not recorded": a tool that
changes nothing of its own, a call that never ran, an old row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from tools_app.core.egress.grant import Connection

if TYPE_CHECKING:
    from tools_app.core.command_effects import EffectVerdict

OutcomeKind = Literal["applied", "held", "refused", "nothing", "not_applicable"]
NetworkKind = Literal["granted", "withheld", "missing", "refused"]

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
    effect when it waits, and for a command its network and the connections it tried."""

    kind: OutcomeKind
    detail: str
    held_call: int | None = None
    network: NetworkKind | Literal[""] = ""
    connections: tuple[Connection, ...] = ()


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
    judged: CallOutcome | None,
    *,
    unsandboxed: bool,
    granted: bool,
    output: str,
    connections: tuple[Connection, ...] = (),
) -> CallOutcome | None:
    """A command's outcome with its network: `judged` is what the effect's judge
    concluded (None: it never judged one); None when the call ran no command."""
    if judged is None and not unsandboxed:
        return None
    outcome = replace(judged or UNJUDGED, connections=tuple(connections))
    granted = granted or unsandboxed
    refused = [c for c in connections if not c.allowed]
    if refused:
        return _with_note(outcome, _refused_note(refused), "refused")
    sign = _NO_NETWORK.search(output)
    if sign is None:
        return replace(outcome, network="granted" if granted else "withheld")
    if granted:
        note = f"network unreachable: it had the network but could not reach it ({sign[0]})"
    else:
        note = (
            f"no network: it tried to reach the network ({sign[0]}) but had no hosts; the "
            "policy's command_hosts (by command class) or a rule's hosts give a command hosts"
        )
    return _with_note(outcome, note, "missing")


def _refused_note(refused: list[Connection]) -> str:
    hosts = ", ".join(dict.fromkeys(f"{c.host}:{c.port}" for c in refused))
    return (
        f"network refused: the proxy refused {hosts} (not in this command's hosts); to "
        "allow it, add the host to the policy's command_hosts or to a rule's hosts"
    )


def _with_note(outcome: CallOutcome, note: str, network: NetworkKind) -> CallOutcome:
    detail = f"{_clip(outcome.detail, DETAIL_CHARS - len(note) - 3)} · {note}"
    return replace(outcome, detail=_clip(detail), network=network)


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
