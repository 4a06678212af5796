"""Which URLs web_fetch may reach: public addresses, or hosts the policy names.

An agent that can fetch URLs can otherwise reach the machine it runs on, the local
network and a cloud's metadata service (server-side request forgery). Every address a
host resolves to is checked, in every spelling an IP can take, before a byte is sent;
web_fetch then connects to the checked address itself, so that a second DNS answer
cannot swap in another one.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

SCHEMES = ("http", "https")
ALLOW_HINT = (
    "web_fetch only reaches public addresses unless the policy's web_allow_hosts names the host"
)
_HOST_NAME = re.compile(r"^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$")
_NUMERIC_V4 = re.compile(r"^[0-9a-fx.]+$")
_METADATA = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200")
)
_CGNAT = ipaddress.IPv4Network("100.64.0.0/10")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_SIIT = ipaddress.IPv6Network("::ffff:0:0:0/96")
_V4_COMPATIBLE = ipaddress.IPv6Network("::/96")
# Checked in order after the embedded-IPv4 prefixes; the first match names the problem.
_V6_REFUSED = (
    (ipaddress.IPv6Network("2001::/32"), "a Teredo tunnel address (2001::/32)"),
    (ipaddress.IPv6Network("fec0::/10"), "a site-local address (fec0::/10)"),
    (ipaddress.IPv6Network("fc00::/7"), "a unique-local (private) address (fc00::/7)"),
    (ipaddress.IPv6Network("64:ff9b:1::/48"), "a local-use NAT64 address (64:ff9b:1::/48)"),
)


@dataclass(frozen=True)
class Target:
    """A URL's scheme, host and port, the host normalised (lower case, IDNA, IP parsed)."""

    scheme: str
    host: str
    port: int
    ip: IPAddress | None

    @property
    def authority(self) -> str:
        """`host[:port]` as a Host header spells it (the port only when not the default)."""
        host = f"[{self.host}]" if isinstance(self.ip, ipaddress.IPv6Address) else self.host
        default = 443 if self.scheme == "https" else 80
        return host if self.port == default else f"{host}:{self.port}"


def parse_target(url: str) -> Target:
    """Split an http(s) URL into a Target; ValueError says what is wrong with it."""
    if any(ord(char) <= 0x20 or ord(char) == 0x7F for char in url):
        raise ValueError("the URL contains spaces or control characters; percent-encode them")
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        shown = f"{scheme}://" if scheme else repr(url)
        raise ValueError(f"only http:// and https:// URLs can be fetched, not {shown}")
    if "@" in parts.netloc:
        raise ValueError(
            "credentials in the URL (user:pass@) are refused; send an Authorization header instead"
        )
    if not parts.hostname:
        raise ValueError(f"the URL has no host: {url!r}")
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"the URL has an invalid port: {parts.netloc!r}") from None
    if port == 0:
        raise ValueError("port 0 cannot be fetched")
    host, ip = _parse_host(parts.hostname)
    return Target(scheme, host, port or (443 if scheme == "https" else 80), ip)


def _parse_host(raw: str) -> tuple[str, IPAddress | None]:
    """Normalise a host; any spelling of an IPv4 address (2130706433, 0x7f.1) becomes one."""
    host = raw.lower().removesuffix(".")
    if ":" in host:
        try:
            v6 = ipaddress.IPv6Address(host)
        except ValueError:
            raise ValueError(f"{raw!r} is not a valid IPv6 address") from None
        return str(v6), v6
    if _NUMERIC_V4.match(host) and any(char.isdigit() for char in host):
        try:
            v4 = ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            pass
        else:
            return str(v4), v4
    try:
        ascii_host = host.encode("idna").decode("ascii")
    except UnicodeError:
        raise ValueError(f"{raw!r} is not a valid host name") from None
    if not _HOST_NAME.match(ascii_host):
        raise ValueError(f"{raw!r} is not a valid host name")
    return ascii_host, None


def host_allowed(target: Target, allow_hosts: Sequence[str]) -> bool:
    """Whether the policy names this host: exactly, as an IP, or by a `*.domain` wildcard."""
    for entry in allow_hosts:
        name = entry.strip().lower().removesuffix(".")
        if name.startswith("*."):
            if target.ip is None and target.host.endswith(name[1:]):
                return True
            continue
        try:
            _, entry_ip = _parse_host(name.strip("[]"))
        except ValueError:
            continue
        if entry_ip is not None and entry_ip == target.ip:
            return True
        if entry_ip is None and target.ip is None and name == target.host:
            return True
    return False


def address_problem(ip: IPAddress) -> str | None:
    """Why this address is not public (`a loopback address`), or None when it is."""
    if ip in _METADATA:
        return "a cloud metadata address"
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = _embedded_v4(ip)
        if embedded is not None:
            problem = address_problem(embedded)
            return None if problem is None else f"{problem} (it embeds {embedded})"
        if ip in _V4_COMPATIBLE and not (ip.is_unspecified or ip.is_loopback):
            return "a deprecated IPv4-compatible address (::/96)"
        for network, label in _V6_REFUSED:
            if ip in network:
                return label
    return _common_problem(ip)


def _embedded_v4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address a mapped, SIIT, NAT64 or 6to4 address actually reaches."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64 or ip in _SIIT:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def _common_problem(ip: IPAddress) -> str | None:
    """The checks both families share, most specific first; `is_global` catches the rest."""
    checks: tuple[tuple[bool, str], ...] = (
        (ip.is_loopback, "a loopback address"),
        (ip.is_unspecified or ip in ipaddress.IPv4Network("0.0.0.0/8"), "an unspecified address"),
        (ip.is_link_local, "a link-local address"),
        (ip.is_multicast, "a multicast address"),
        (ip in _CGNAT, "a carrier-grade NAT address (100.64.0.0/10)"),
        (ip == ipaddress.IPv4Address("255.255.255.255"), "a broadcast address"),
        (ip.is_reserved, "a reserved address"),
        (ip.is_private, "a private address"),
        (not ip.is_global, "not a public address"),
    )
    return next((label for failed, label in checks if failed), None)


def resolve(target: Target) -> list[IPAddress]:
    """Every address the host resolves to (one lookup), in the resolver's order.

    Raises socket.gaierror when the name does not resolve.
    """
    if target.ip is not None:
        return [target.ip]
    infos = socket.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM)
    addresses: list[IPAddress] = []
    for info in infos:
        ip = ipaddress.ip_address(str(info[4][0]).split("%")[0])
        if ip not in addresses:
            addresses.append(ip)
    return addresses


def refusal(
    target: Target, addresses: Sequence[IPAddress], allow_hosts: Sequence[str]
) -> str | None:
    """The reason to refuse these addresses for this host, or None to go ahead."""
    if host_allowed(target, allow_hosts):
        return None
    return address_refusal(target, addresses, ALLOW_HINT)


def address_refusal(target: Target, addresses: Sequence[IPAddress], hint: str) -> str | None:
    """Why one of these addresses is not public (ending with `hint`), or None."""
    for ip in addresses:
        problem = address_problem(ip)
        if problem is not None:
            where = f"{ip} is" if target.ip is not None else f"{target.host} resolves to {ip},"
            return f"{where} {problem}; {hint}"
    return None


def check_target(url: str, allow_hosts: Sequence[str]) -> str | None:
    """None when web_fetch may fetch this URL, else a reason a reviewer can read.

    A host that does not resolve is not refused here: the fetch itself reports the DNS
    failure, with the advice that goes with it.
    """
    try:
        target = parse_target(url)
    except ValueError as error:
        return str(error)
    if host_allowed(target, allow_hosts):
        return None
    try:
        addresses = resolve(target)
    except (OSError, UnicodeError):
        return None
    return refusal(target, addresses, allow_hosts)


def checked_addresses(url: str, allow_hosts: Sequence[str]) -> list[IPAddress] | str:
    """Every address the URL's host resolves to (one lookup), each one checked, for a
    client that connects to them and never resolves the name again; else why not (a
    name that does not resolve included: there is nothing to connect to)."""
    try:
        target = parse_target(url)
    except ValueError as error:
        return str(error)
    try:
        addresses = resolve(target)
    except (OSError, UnicodeError) as error:
        return f"its host {target.host} does not resolve ({error})"
    return refusal(target, addresses, allow_hosts) or addresses
