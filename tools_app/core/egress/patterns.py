"""Host patterns of an egress grant: how one is written, checked and matched.

A pattern is a host name (`registry.npmjs.org`) or a domain's subdomains
(`*.pythonhosted.org`: `files.pythonhosted.org`, not `pythonhosted.org` itself), as
`web_allow_hosts` spells them, optionally with a port (`git.example.com:8443`). Nothing
wider: a pattern that reaches every host (`*`, `*.*`, `*.com`), an IP address, or this
machine (`localhost`, `127.0.0.1`, `::1`, `169.254.169.254`) is refused, because the
proxy resolves names on the worker's side, where those reach the worker's own services.
No Django here.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable

__all__ = ["covers", "host_pattern_problem", "matches", "normalised", "overlaps"]

_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?|[a-z0-9]")
# Suffixes under which anyone registers a name: `*.co.uk` is as wide as `*.com`.
_SHARED_SUFFIXES = frozenset(
    {"co.uk", "org.uk", "ac.uk", "com.au", "net.au", "co.jp", "co.nz", "com.br", "co.in"}
    | {"github.io", "gitlab.io", "herokuapp.com", "vercel.app", "netlify.app", "web.app"}
)
_LOCAL_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback")
_HOW = "name the host (registry.npmjs.org) or one domain's subdomains (*.example.com)"


def normalised(pattern: str) -> str:
    """The pattern as it is matched and stored: lower case, no trailing dot, trimmed."""
    return pattern.strip().lower().removesuffix(".")


def host_pattern_problem(pattern: str) -> str | None:
    """Why `pattern` cannot name the hosts a command may reach, or None."""
    text = normalised(pattern)
    if not text:
        return "is empty: " + _HOW
    if "://" in text or "/" in text or any(c.isspace() for c in text):
        return f"{pattern!r} is not a host name (write example.com, not a URL)"
    host, port_problem = _split_port(text)
    if port_problem:
        return f"{pattern!r}: {port_problem}"
    if set(host) <= {"*", "."}:
        return f"{pattern!r} matches every host: {_HOW}"
    return _address_problem(pattern, host) or _name_problem(pattern, host)


def _split_port(text: str) -> tuple[str, str | None]:
    """The host, and why the `:port` after it is wrong (None: fine or none)."""
    if text.startswith("["):  # [::1]:443
        host, _, rest = text[1:].partition("]")
        return host, _port_problem(rest.removeprefix(":")) if rest else None
    if text.count(":") != 1:
        return text, None  # no port, or an IPv6 address (refused below)
    host, _, port = text.partition(":")
    return host, _port_problem(port)


def _port_problem(port: str) -> str | None:
    if port.isdigit() and 1 <= int(port) <= 65535:
        return None
    return f"the port {port!r} must be a number from 1 to 65535"


def _address_problem(pattern: str, host: str) -> str | None:
    bare = host.removeprefix("*.")
    try:
        address = ipaddress.ip_address(bare)
    except ValueError:
        address = None
    if address is not None and (address.is_loopback or address.is_link_local):
        return f"{pattern!r} is this machine or its link (a loopback or link-local address)"
    if address is not None or re.fullmatch(r"[0-9.*]+|[0-9a-f:*]*:[0-9a-f:*]*", host):
        return f"{pattern!r} is an IP address: {_HOW}, which the proxy resolves"
    if bare in _LOCAL_NAMES or bare.endswith(".localhost") or host == "*.localhost":
        return f"{pattern!r} is this machine (a loopback name)"
    return None


def _name_problem(pattern: str, host: str) -> str | None:
    wildcard = host.startswith("*.")
    labels = host.removeprefix("*.").split(".")
    if "*" in host.removeprefix("*."):
        return f"{pattern!r}: a wildcard is only the first label, as in *.example.com"
    if not all(_LABEL.fullmatch(label) for label in labels):
        return f"{pattern!r} is not a host name (letters, digits, hyphens and dots)"
    domain = ".".join(labels)
    if wildcard and (len(labels) < 2 or domain in _SHARED_SUFFIXES):
        return f"{pattern!r} matches every host under .{domain}: {_HOW}"
    if len(labels) < 2 and not wildcard:
        return f"{pattern!r} is not a fully qualified host name (example.com)"
    return None


def matches(host: str, pattern: str, port: int | None = None) -> bool:
    """True when `host` (and `port`, when given) is one `pattern` names. A pattern
    without a port names ports 80 and 443."""
    name, wanted = _name_and_port(pattern)
    if port is not None and port not in ({wanted} if wanted else {80, 443}):
        return False
    host = normalised(host)
    if name.startswith("*."):
        return host.endswith(name[1:])
    return host == name


def _name_and_port(pattern: str) -> tuple[str, int | None]:
    text = normalised(pattern)
    if text.count(":") != 1:
        return text, None
    name, _, port = text.partition(":")
    return name, int(port) if port.isdigit() else None


def covers(patterns: Iterable[str], pattern: str) -> bool:
    """True when every host `pattern` names is named by one of `patterns`: a credential
    for `pattern` is only for hosts a policy lets commands reach."""
    wanted = normalised(pattern)
    for given in (normalised(p) for p in patterns):
        if given == wanted:
            return True
        if given.startswith("*.") and not wanted.startswith("*.") and matches(wanted, given):
            return True
        if given.startswith("*.") and wanted.startswith("*.") and wanted.endswith(given[1:]):
            return True
    return False


def overlaps(patterns: Iterable[str], pattern: str) -> bool:
    """True when some host `pattern` names is also named by one of `patterns`: a
    credential for `*.example.com` applies to a grant of `npm.example.com`."""
    given = [normalised(p) for p in patterns]
    return covers(given, pattern) or any(
        not host.startswith("*.") and matches(_name_and_port(host)[0], pattern) for host in given
    )
