"""Pages for the API's lists: `?limit=` and an opaque `?cursor=`, keyset on id.

A page is `{"items": [...], "next": CURSOR or null}`. The cursor is the urlsafe
base64 of the last id seen; the next page takes the ids after it in the list's
order (`id__lt` newest first, `id__gt` oldest first), so a page costs the same
queries whatever the total, and rows added meanwhile neither repeat nor shift it.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any, Literal, TypeVar

from django.db.models import Model, QuerySet
from ninja import Schema
from pydantic import Field, field_validator

DEFAULT_LIMIT = 50
MAX_LIMIT = 500
MAX_ID = 2**63 - 1

M = TypeVar("M", bound=Model)


class PageQuery(Schema):
    limit: int = Field(
        default=DEFAULT_LIMIT, ge=1, le=MAX_LIMIT, description="Items per page (1 to 500)."
    )
    cursor: str | None = Field(
        default=None, description="The `next` of the previous page; absent for the first."
    )

    @field_validator("cursor")
    @classmethod
    def _known_cursor(cls, value: str | None) -> str | None:
        if value is not None:
            cursor_decode(value)  # a ValueError here is a 422 naming `cursor`
        return value

    def after(self) -> int | None:
        return None if self.cursor is None else cursor_decode(self.cursor)


def cursor_encode(last_id: int) -> str:
    return base64.urlsafe_b64encode(str(last_id).encode()).decode().rstrip("=")


def cursor_decode(cursor: str) -> int:
    """The id a cursor stands for; ValueError if it is not one this API gave out."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        text = raw.decode("ascii")
    except (binascii.Error, UnicodeError, ValueError):
        raise ValueError("not a cursor this API gave out") from None
    if not text.isdigit() or not 0 < int(text) <= MAX_ID or cursor_encode(int(text)) != cursor:
        raise ValueError("not a cursor this API gave out")
    return int(text)


def page(
    rows: QuerySet[M],
    query: PageQuery,
    as_dict: Callable[[M], dict[str, Any]],
    *,
    order: Literal["newest", "oldest"],
) -> dict[str, Any]:
    """One page of `rows` in id order; one more row is read to know if another page follows."""
    after = query.after()
    if order == "newest":
        rows = rows.order_by("-id") if after is None else rows.filter(id__lt=after).order_by("-id")
    else:
        rows = rows.order_by("id") if after is None else rows.filter(id__gt=after).order_by("id")
    found = list(rows[: query.limit + 1])
    shown = found[: query.limit]
    more = len(found) > query.limit
    return {
        "items": [as_dict(row) for row in shown],
        "next": cursor_encode(shown[-1].pk) if more else None,
    }
