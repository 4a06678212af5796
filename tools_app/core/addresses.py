"""Whose request it is: the address a request came from, through the proxies trusted to
say so (AGENTWEB_TRUSTED_PROXIES).

X-Forwarded-For is a list each proxy appends its peer to; everything left of the last
proxy agentweb trusts was written by the client and proves nothing. So the list is read
from the right, and only while the address in hand is a trusted proxy's: the first
address that is not one is the client's. A client that writes the header itself only adds
entries to the left of the one its proxy appends, which are never reached.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def trusted_networks(spec: Iterable[str]) -> tuple[Network, ...]:
    """The networks of AGENTWEB_TRUSTED_PROXIES; ValueError names a wrong entry."""
    networks = []
    for entry in spec:
        try:
            networks.append(ipaddress.ip_network(entry.strip(), strict=False))
        except ValueError:
            raise ValueError(
                f"AGENTWEB_TRUSTED_PROXIES has {entry.strip()!r}: give addresses or networks "
                "(10.0.0.0/8, ::1)"
            ) from None
    return tuple(networks)


def parsed_address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """An address as the host it names: an IPv6 zone left out, an IPv4-mapped IPv6
    address (an IPv4 client on a dual-stack socket) as IPv4; None for anything else."""
    try:
        parsed = ipaddress.ip_address(text.strip().split("%")[0])
    except ValueError:
        return None
    if isinstance(parsed, ipaddress.IPv6Address) and parsed.ipv4_mapped is not None:
        return parsed.ipv4_mapped
    return parsed


def _trusted(address: str, networks: Sequence[Network]) -> bool:
    parsed = parsed_address(address)
    return parsed is not None and any(parsed in network for network in networks)


def client_address(peer: str, forwarded_for: str, trusted: Sequence[Network]) -> str:
    """The client's address: `peer` (the TCP peer), or while that is a trusted proxy the
    next address to the left in `forwarded_for`."""
    address = peer.strip()
    hops = [hop.strip() for hop in forwarded_for.split(",") if hop.strip()]
    while hops and _trusted(address, trusted):
        address = hops.pop()
    return address
