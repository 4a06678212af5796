"""Which hosts a grant lets a command reach, and the words a refused command reads.

A grant's host is a pattern as the policy writes and checks it (`core/egress/patterns.py`:
`registry.npmjs.org`, `*.pythonhosted.org`, optionally with a port); without a port it
means the web's ports, 80 and 443.
"""

from __future__ import annotations

from tools_app.core.egress import patterns
from tools_app.core.egress.grant import Credential, EgressGrant


def normalise(host: str) -> str:
    """A host name as grants and SNI compare it: lower case, no trailing dot."""
    return patterns.normalised(host)


def pattern_matches(pattern: str, host: str, port: int) -> bool:
    """Whether one grant entry covers `host:port` (the policy's own matching)."""
    return patterns.matches(host, pattern, port)


def allowed(grant: EgressGrant, host: str, port: int) -> bool:
    return any(pattern_matches(pattern, host, port) for pattern in grant.hosts)


def credential_for(grant: EgressGrant, host: str, port: int) -> Credential | None:
    """The credential the proxy adds to this host's requests (the first that matches)."""
    return next((c for c in grant.credentials if pattern_matches(c.host, host, port)), None)


# How a refusal for a host outside the grant begins (`not_granted`).
GRANT_REASONS = ("not in this command's hosts", "this command's network grant")
ALLOW_HINT = "a policy admin may add it to the policy's hosts for this command"


def not_granted(grant: EgressGrant) -> str:
    """Why a host outside the grant is refused (a connection's recorded reason)."""
    if not grant.hosts:
        return "this command's network grant names no hosts"
    return "not in this command's hosts: " + ", ".join(grant.hosts)


def refusal_text(host: str, port: int, reason: str) -> str:
    """The body of the proxy's 403: the host, why, and how it could be allowed."""
    if reason.startswith(GRANT_REASONS):
        return f"host {host}:{port} is not in this command's network grant ({reason}); {ALLOW_HINT}"
    return f"host {host}:{port} was refused: {reason}"
