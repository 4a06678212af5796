"""Where agentweb is reached, derived from the one URL people use: `AGENTWEB_BASE_URL`.

The names Django serves (ALLOWED_HOSTS), the origins trusted for unsafe requests
(CSRF_TRUSTED_ORIGINS) and the origins a websocket may be opened from all follow from that
URL, so a server set up for `https://agentweb.example.com` accepts that and nothing else,
with no second list to keep in step. A loopback URL (the default) also answers to the other
loopback names, on any port, as a developer's machine expects. `DJANGO_ALLOWED_HOSTS` and
`DJANGO_CSRF_TRUSTED_ORIGINS` still add names and origins (an installation reached by more
than one name, or set up before `AGENTWEB_BASE_URL` decided them). Pure: no Django.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")
DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class SiteNames:
    """What a request's Host and Origin are checked against."""

    origin: str  # scheme://host[:port] of the base URL, as a browser sends it
    allowed_hosts: list[str]
    trusted_origins: list[str]
    # Channels' OriginValidator patterns: an origin exactly, or a bare host (any port).
    websocket_origins: list[str]


def site_names(
    base_url: str, extra_hosts: Iterable[str] = (), extra_origins: Iterable[str] = ()
) -> SiteNames:
    """The names and origins of a site reached at `base_url`, plus the extras."""
    origin, host = base_origin(base_url)
    loopback = LOOPBACK_HOSTS if is_loopback(host) else ()
    hosts, origins = list(extra_hosts), list(extra_origins)
    # A bare host admits a websocket from any port and scheme of it: never the base URL's.
    other_hosts = [name for name in hosts if name.strip().lower() != host]
    return SiteNames(
        origin=origin,
        allowed_hosts=_unique([host, *loopback, *hosts]),
        trusted_origins=_unique([origin, *origins]),
        websocket_origins=_unique([origin, *loopback, *other_hosts, *origins]),
    )


def base_origin(base_url: str) -> tuple[str, str]:
    """(origin, host) of the base URL: the host as ALLOWED_HOSTS spells it (an IPv6
    address in brackets), the origin without the scheme's default port, as browsers send it."""
    parts = urlsplit(base_url.strip())
    try:
        port = parts.port
    except ValueError:
        port = -1
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname or port == -1:
        raise ValueError(
            f"AGENTWEB_BASE_URL is {base_url!r}: it must be the http:// or https:// URL people "
            "open agentweb at, such as https://agentweb.example.com"
        )
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    netloc = host if port in (None, DEFAULT_PORTS[parts.scheme]) else f"{host}:{port}"
    return f"{parts.scheme}://{netloc}", host


def host_refused(host: str) -> str:
    """What a request whose Host is not served is told (the page, the API, a hook)."""
    return (
        f"The Host header {host[:200]!r} is not a name agentweb serves. agentweb answers to "
        "the name in AGENTWEB_BASE_URL: set it to the URL people use to reach this server "
        "(DJANGO_ALLOWED_HOSTS adds other names)."
    )


def origin_refused(origin: str) -> str:
    """What a browser request from another site's page is told."""
    return (
        f"The Origin {origin[:200]!r} is not this site's: a page of another site may not call "
        "agentweb. This site's origin is that of AGENTWEB_BASE_URL (another origin to trust "
        "goes in DJANGO_CSRF_TRUSTED_ORIGINS)."
    )


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(item.strip().lower() for item in items if item.strip()))
