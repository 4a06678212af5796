"""What a command may reach, and what it did reach: the values that pass between the
policy (which hosts a call gets), the sandbox's egress proxy (which enforces them) and
the record of the call (which connections it made).

Pure data: the policy computes an `EgressGrant`, `SandboxOptions.egress` carries it into
the sandbox, the proxy reports `Connection`s, and the services store them on the call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Credential:
    """A secret the proxy adds to requests for `host` (a host glob, as in `hosts`):
    header `header` set to `value`. It never enters the sandbox: not its environment,
    its files, nor its memory. `value` is never shown (`repr` hides it)."""

    host: str
    header: str
    value: str = field(repr=False)


@dataclass(frozen=True)
class EgressGrant:
    """The hosts one command may connect to, through the proxy only.

    `hosts` are host globs (`registry.npmjs.org`, `*.pythonhosted.org`), optionally with a
    port (`git.example.com:8443`); without one, ports 80 and 443. Nothing else connects:
    no other host, no IP literal, no DNS from inside the sandbox. `credentials` are added
    by the proxy to the matching hosts' requests.
    """

    hosts: tuple[str, ...]
    credentials: tuple[Credential, ...] = ()

    def as_json(self) -> dict[str, Any]:
        """The grant as stored on a call and shown to a reviewer: hosts, and the hosts
        that get a credential (never the secrets)."""
        return {"hosts": list(self.hosts), "credential_hosts": [c.host for c in self.credentials]}


@dataclass(frozen=True)
class Connection:
    """One connection a command tried: where, how much each way, and whether the proxy
    let it through (`reason` says why not, or which credential host it matched)."""

    host: str
    port: int
    sent: int
    received: int
    allowed: bool
    reason: str = ""

    def as_json(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "port": self.port,
            "sent": self.sent,
            "received": self.received,
            "allowed": self.allowed,
            "reason": self.reason,
        }
