"""The egress proxy's settings, read from the environment in this one place.

`AGENTWEB_EGRESS_TEST_HOSTS` is for tests only: `name=127.0.0.1:port,...` pins a host
name to a loopback address and port, so that a test's package registry on 127.0.0.1 can
stand in for a public one. The SSRF guard refuses loopback addresses for every other
name; a production deployment leaves it empty (a system check warns when it is set
outside DEBUG). `AGENTWEB_EGRESS_UPSTREAM_CA` adds CA certificates the proxy trusts,
besides the system's, when it opens its own TLS connection for a credential's host.
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path

TEST_HOSTS_ENV = "AGENTWEB_EGRESS_TEST_HOSTS"
UPSTREAM_CA_ENV = "AGENTWEB_EGRESS_UPSTREAM_CA"


def test_hosts() -> dict[str, tuple[str, int]]:
    """The test allowance: host name to pinned (loopback address, port). ValueError names
    an entry that is not `name=address:port` with a loopback address."""
    pinned: dict[str, tuple[str, int]] = {}
    for entry in filter(None, (e.strip() for e in os.environ.get(TEST_HOSTS_ENV, "").split(","))):
        name, _, where = entry.partition("=")
        address, _, port = where.rpartition(":")
        try:
            loopback = ipaddress.ip_address(address.strip("[]")).is_loopback
        except ValueError:
            loopback = False
        if not name or not loopback or not port.isdigit():
            raise ValueError(
                f"{TEST_HOSTS_ENV}: {entry!r} is not name=address:port with a loopback address"
            )
        pinned[name.strip().lower()] = (address.strip("[]"), int(port))
    return pinned


def upstream_ca() -> Path | None:
    raw = os.environ.get(UPSTREAM_CA_ENV, "")
    return Path(raw) if raw else None


def var_dir() -> Path:
    """AGENTWEB_VAR, as settings.py resolves it (the sandbox never sees it)."""
    source = Path(__file__).resolve().parents[3]
    return Path(os.environ.get("AGENTWEB_VAR") or source / "var").resolve()
