"""The approvals inbox a page at a time: newest first, keyset on id, the total exact.

A page costs the same whatever is waiting: the cards of one page are read (one more to
know whether another page follows) and the rest is one COUNT. `before` is the id of the
last card already shown, so a call that arrives or is decided meanwhile neither repeats
a card nor shifts the next page.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet

from tools_app.models import ToolCall

PAGE_SIZE = 20
MAX_PAGE_SIZE = 200


@dataclass(frozen=True)
class InboxPage:
    calls: list[ToolCall]
    next: int | None  # the `before` of the following page; None on the last one
    total: int  # every call awaiting a decision, on every page


def inbox_page(
    awaiting: QuerySet[ToolCall], *, before: int | None = None, limit: int = PAGE_SIZE
) -> InboxPage:
    """The `limit` newest of `awaiting` (the calls a reviewer may decide, from
    `approvals_awaiting`) with an id below `before`."""
    rows = awaiting if before is None else awaiting.filter(id__lt=before)
    found = list(rows.select_related("session__creator").order_by("-id")[: limit + 1])
    shown = found[:limit]
    following = shown[-1].pk if len(found) > limit else None
    return InboxPage(calls=shown, next=following, total=awaiting.count())
