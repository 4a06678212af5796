"""What a card says of where a call runs: the one source of its Where, Sandbox, Network
and Timeout lines.

A call runs in one of two places, each a kind below with its own `facts()`: agentweb's
workspace (the agent loop, the REST API, agentweb's tools over MCP, the command line),
in the copy-on-write sandbox when the host has one; or the agent's own machine (the
gateway: Claude Code, Codex, Gemini CLI run their tools and ask agentweb first), where
agentweb sandboxes nothing and knows only what the agent's hook event says. A fact that
is not known is not printed: a gateway command's timeout is the agent's, shown only when
the agent sent one. No Django here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["Fact", "InAgentweb", "OnAgentMachine", "Where", "card_facts", "connection_text"]


@dataclass(frozen=True)
class Fact:
    """One line of a card: `name` is its CSS class, `warn` prints it as a warning."""

    name: str
    label: str
    text: str
    warn: bool = False


class Where(Protocol):
    def facts(self) -> tuple[Fact, ...]: ...


@dataclass(frozen=True)
class InAgentweb:
    """A call agentweb runs in the session's workspace. For a command: `sandboxed` is
    whether the host had the copy-on-write sandbox when the call was previewed (None when
    the preview did not record it), `timeout` agentweb's (the default when the agent sent
    none), its network: `hosts` the hosts its grant names (None: no network), of which
    `credential_hosts` get a credential added, and once it ran the `connections` it
    tried (`Connection.as_json`)."""

    runs_command: bool
    sandboxed: bool | None = None
    timeout: float | None = None
    awaiting: bool = False
    hosts: tuple[str, ...] | None = None
    credential_hosts: tuple[str, ...] = ()
    connections: tuple[Mapping[str, Any], ...] = ()

    def facts(self) -> tuple[Fact, ...]:
        if not self.runs_command:
            return ()
        found = [self._sandbox(), self._network(), self._connections()]
        found.append(_timeout(self.timeout, ""))
        return tuple(fact for fact in found if fact is not None)

    def _sandbox(self) -> Fact | None:
        if self.sandboxed is None:
            return None
        if not self.sandboxed:
            return Fact(
                "sandbox",
                "Sandbox",
                "none: this host has no copy-on-write sandbox; the command would write the "
                "workspace directly, with the worker's rights",
                warn=True,
            )
        return Fact(
            "sandbox",
            "Sandbox",
            "agentweb's copy-on-write sandbox: what the command changes is judged before "
            "it is applied",
        )

    def _network(self) -> Fact:
        """Only the hosts of its grant, through agentweb's egress proxy; without the
        sandbox it has the worker's network."""
        if self.sandboxed is False:
            text = "on: no sandbox on this host, the command has the worker's network"
            return Fact("network", "Network", text, warn=True)
        if not self.hosts:
            text = "off: approving opens no host" if self.awaiting else "off"
            return Fact("network", "Network", text)
        hosts = ", ".join(self.hosts)
        if self.credential_hosts:
            hosts += f" (a credential is added for {', '.join(self.credential_hosts)})"
        if self.awaiting:
            return Fact("network", "Network", f"off now; approving opens only {hosts}", warn=True)
        return Fact("network", "Network", f"only {hosts}, through agentweb's proxy", warn=True)

    def _connections(self) -> Fact | None:
        """What it reached, once it ran: each host, port, bytes each way, and whether
        the proxy let it through."""
        if not self.connections:
            return None
        text = "; ".join(connection_text(c) for c in self.connections)
        refused = any(not c.get("allowed") for c in self.connections)
        return Fact("connections", "Connections", text, warn=refused)


def connection_text(connection: Mapping[str, Any]) -> str:
    """`registry.npmjs.org:443 allowed, 1.2 kB sent, 3.4 MB received`."""
    where = f"{connection.get('host')}:{connection.get('port')}"
    if not connection.get("allowed"):
        why = connection.get("reason") or "not in this command's hosts"
        return f"{where} refused ({why})"
    sent, received = _size(connection.get("sent")), _size(connection.get("received"))
    return f"{where} allowed, {sent} sent, {received} received"


def _size(value: object) -> str:
    amount = float(value) if isinstance(value, int | float) else 0.0
    if amount < 1000:
        return f"{amount:,.0f} B"
    if amount < 1_000_000:
        return f"{amount / 1000:,.1f} kB"
    return f"{amount / 1_000_000:,.1f} MB"


@dataclass(frozen=True)
class OnAgentMachine:
    """A gateway call: the agent runs its own `native_tool` in `cwd` on its machine.
    `sandbox_off` is the hook event's word that the agent's own sandbox is off for this
    call ("" when the agent reported nothing); `timeout` the agent's own, if it sent one;
    `notes` what the mapping noticed (runs in the background …)."""

    native_tool: str
    cwd: str
    runs_command: bool = False
    sandbox_off: str = ""
    timeout: float | None = None
    notes: tuple[str, ...] = ()

    def facts(self) -> tuple[Fact, ...]:
        where = f"the agent's machine, in {self.cwd or 'a directory it did not name'}: " + (
            f"the agent runs its own {self.native_tool}; agentweb does not run or sandbox it"
        )
        found: list[Fact | None] = [Fact("where", "Where", where, warn=True), self._sandbox()]
        if self.runs_command and self.sandbox_off:
            text = "the machine's own: the agent's sandbox is off for this call"
            found.append(Fact("network", "Network", text, warn=True))
        if self.runs_command:
            found.append(_timeout(self.timeout, " (the agent's own)"))
        found += [Fact("note", "Note", note) for note in self.notes]
        return tuple(fact for fact in found if fact is not None)

    def _sandbox(self) -> Fact:
        if self.sandbox_off:
            return Fact("sandbox", "Agent's sandbox", self.sandbox_off, warn=True)
        return Fact("sandbox", "Agent's sandbox", "none reported by the agent")


def card_facts(where: Where) -> tuple[Fact, ...]:
    """The facts a card prints for a call that runs `where`, in order."""
    return where.facts()


def _timeout(seconds: float | None, whose: str) -> Fact | None:
    if seconds is None:
        return None
    return Fact("timeout", "Timeout", f"{seconds:g} s{whose}")
