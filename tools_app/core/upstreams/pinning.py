"""What a server's listing does to its pinned tools: the one rule of trust on first use.

The first listing of a server pins each tool as it is (unless something in it looks
aimed at the model: then an admin looks first). From then on a tool whose definition
is the accepted one stays available; a changed one, a new one and one that vanished are
held until an admin accepts what the server lists now.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tools_app.core.upstreams.definitions import Definition, definition_flags

ACCEPTED, NEW, CHANGED, VANISHED = "accepted", "new", "changed", "vanished"


@dataclass(frozen=True)
class PinUpdate:
    """One tool's row after a listing: `accept` pins `listed` as accepted now; `delete`
    forgets a tool that was never accepted and is no longer listed."""

    name: str
    pin: str
    listed: dict[str, Any] | None = None
    fingerprint: str = ""
    flags: list[str] = field(default_factory=list)
    accept: bool = False
    delete: bool = False


def reconcile(
    accepted: Mapping[str, str], listed: Sequence[Definition], *, first: bool
) -> list[PinUpdate]:
    """The updates a listing makes, given each pinned tool's accepted fingerprint ("" for
    none yet); `first`: the server's first listing ever."""
    updates = []
    for definition in listed:
        as_dict, fingerprint = definition.as_dict(), definition.fingerprint()
        flags = definition_flags(as_dict)
        pinned = accepted.get(definition.name, "")
        if first and not flags:
            pin, accept = ACCEPTED, True
        else:
            pin = ACCEPTED if pinned == fingerprint else (CHANGED if pinned else NEW)
            accept = False
        updates.append(PinUpdate(definition.name, pin, as_dict, fingerprint, flags, accept))
    names = {definition.name for definition in listed}
    for name, pinned in accepted.items():
        if name not in names:
            updates.append(PinUpdate(name, VANISHED, delete=not pinned))
    return updates
