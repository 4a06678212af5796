"""Reads of a command's network: the hosts a call's grant names; and of the egress
credentials: which apply to a command's grant (with their secrets,
for the proxy only), which hosts get one (for a card, never a secret), and which hosts
the policies let commands reach (what a credential may be for)."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Q

from tools_app.core.egress.classes import command_hosts_table
from tools_app.core.egress.grant import Credential
from tools_app.core.egress.patterns import overlaps
from tools_app.models import AgentSession, EgressCredential, Policy, PolicyRule, ToolCall


def egress_hosts(call: ToolCall) -> tuple[str, ...] | None:
    """The hosts the call's grant names, fixed when it was judged; None: no network."""
    grant = call.egress
    if not isinstance(grant, dict) or not isinstance(grant.get("hosts"), list):
        return None
    return tuple(str(host) for host in grant["hosts"])


def _for_session(session: AgentSession, hosts: Iterable[str]) -> list[EgressCredential]:
    """The credentials of the session's project (or of every project) for a host the
    grant names, oldest first (the proxy adds each to the requests its host matches)."""
    hosts = tuple(hosts)
    if not hosts:
        return []
    rows = EgressCredential.objects.filter(Q(project__isnull=True) | Q(project=session.project_id))
    return [row for row in rows.order_by("id") if overlaps(hosts, row.host)]


def grant_credentials(*, session: AgentSession, hosts: Iterable[str]) -> tuple[Credential, ...]:
    """The credentials the proxy adds to this command's requests: read at run time,
    never stored on the call."""
    rows = _for_session(session, hosts)
    return tuple(Credential(host=row.host, header=row.header, value=row.secret) for row in rows)


def credential_hosts(*, session: AgentSession, hosts: Iterable[str]) -> list[str]:
    """The hosts of a grant that get a credential added (what a card may say)."""
    return list(dict.fromkeys(row.host for row in _for_session(session, hosts)))


def policy_hosts() -> list[str]:
    """Every host pattern a policy lets commands reach: its classes' hosts and what its
    rules add or keep."""
    found: list[str] = []
    for lines in Policy.objects.values_list("command_hosts", flat=True):
        for hosts in command_hosts_table(lines or []).values():
            found += hosts
    for change in PolicyRule.objects.exclude(hosts=None).values_list("hosts", flat=True):
        if isinstance(change, dict):
            found += [h for key in ("add", "only") for h in change.get(key) or []]
    return list(dict.fromkeys(found))
