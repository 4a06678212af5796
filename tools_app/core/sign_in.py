"""Password sign-in's limits, the pure part: whose failures count together, and how long
a run of them keeps the door shut.

A guess is counted against the pair (the account's name, the address it came from) and
against the address alone. The pair's limit stops someone guessing one account's password;
the address's, larger, stops one address trying a few passwords on every account. Nothing
locks an account for everyone: anyone could then keep a person (or the break-glass
superuser) out by failing on purpose from anywhere.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from tools_app.core.addresses import parsed_address

# One address may fail this many times the pair's limit, over every account, in a window.
ADDRESS_FACTOR = 4


def account_key(username: str) -> str:
    """The account's name as counted: the same person whatever its case or its spaces."""
    return username.strip().casefold()[:150]


def address_key(address: str) -> str:
    """The address as counted: an IPv4 address itself (an IPv4-mapped IPv6 one as IPv4); an
    IPv6 address its /64, which one host commonly holds whole."""
    parsed = parsed_address(address)
    if parsed is None:
        return address.strip()[:45]
    if isinstance(parsed, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network(f"{parsed}/64", strict=False))
    return str(parsed)


@dataclass(frozen=True)
class Limits:
    attempts: int  # failures of one account from one address in a window
    window: timedelta

    @property
    def address_attempts(self) -> int:
        return self.attempts * ADDRESS_FACTOR


def shut_for(failures: Sequence[datetime], limit: int, window: timedelta, now: datetime) -> float:
    """Seconds until fewer than `limit` of `failures` fall in the `window` before the
    moment (0: not shut). The door opens when enough of the oldest have aged out."""
    recent = sorted(at for at in failures if at > now - window)
    if len(recent) < limit:
        return 0.0
    opens_at = recent[len(recent) - limit] + window
    return max((opens_at - now).total_seconds(), 0.0)


def refusal(seconds: float, *, whole_address: bool) -> str:
    """What the person signing in reads while the door is shut."""
    minutes = max(1, -(-int(seconds) // 60))
    wait = f"{minutes} minute{'s' if minutes != 1 else ''}"
    what = "from your address" if whole_address else "to this account from your address"
    return (
        f"Too many failed sign-ins {what}: password sign-in is refused for {wait}. Try "
        "again then, or ask an admin to clear the failures (admin, Sign-in failures)."
    )
