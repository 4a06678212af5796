"""Reads of the audit trail: filters, the API's shape, and exports streamed row by row.

The filters are the same for `/audit/`, `GET /api/audit` and both exports; a bad value
is an Invalid naming the filter. An export is an async iterator: under ASGI, Django reads
a sync iterator whole before it sends a byte, so the rows are read a batch at a time
(keyset on the id, each batch one query in the request's thread) and sent a batch at a
time: its memory does not grow with the number of rows.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from typing import Any

from asgiref.sync import sync_to_async
from django.db.models import QuerySet
from django.http import StreamingHttpResponse
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from tools_app.core.digits import ascii_int
from tools_app.errors import Invalid
from tools_app.models import AuditEntry

EXPORT_CHUNK = 200  # rows a query and a chunk sent: the export's memory
FIELDS = (
    "id", "created_at", "actor", "via", "action", "decision", "object_type", "object_id",
    "object", "session", "tool_call", "tool", "policy", "project", "preview_hash", "reason",
    "details",
)  # fmt: skip
_COLUMNS = (
    "id", "created_at", "actor_name", "via", "action", "decision", "object_type", "object_id",
    "object_repr", "session_ref", "tool_call_ref", "tool", "policy_name", "project_name",
    "preview_hash", "reason", "details",
)  # fmt: skip
FILTERS = (
    "person", "action", "decision", "tool", "session", "policy", "project", "via", "since",
    "until",
)  # fmt: skip


@dataclass(frozen=True)
class AuditFilters:
    person: str = ""
    action: str = ""
    decision: str = ""
    tool: str = ""
    session: int | None = None
    policy: str = ""
    project: str = ""
    via: str = ""
    since: datetime | None = None
    until: datetime | None = None

    def as_query(self) -> dict[str, str]:
        """The filters as query parameters (for the page's links), the empty left out."""
        values = {name: getattr(self, name) for name in FILTERS}
        shown = {k: v.isoformat() if isinstance(v, datetime) else v for k, v in values.items()}
        return {name: str(value) for name, value in shown.items() if value not in ("", None)}


def audit_filters(params: Mapping[str, Any]) -> AuditFilters:
    """The filters of a query string; Invalid names the first bad one."""
    text = {name: str(params.get(name) or "").strip() for name in FILTERS}
    if text["action"] and text["action"] not in AuditEntry.Action.values:
        raise Invalid(f"action: must be one of {', '.join(AuditEntry.Action.values)}.")
    if text["decision"] and text["decision"] not in ("approve", "deny"):
        raise Invalid("decision: must be 'approve' or 'deny'.")
    if text["via"] and text["via"] not in AuditEntry.Via.values:
        raise Invalid(f"via: must be one of {', '.join(AuditEntry.Via.values)}.")
    session = ascii_int(text["session"])
    if text["session"] and session is None:
        raise Invalid("session: must be a session id (a whole number).")
    return AuditFilters(
        person=text["person"],
        action=text["action"],
        decision=text["decision"],
        tool=text["tool"],
        session=session,
        policy=text["policy"],
        project=text["project"],
        via=text["via"],
        since=_moment("since", text["since"], end_of_day=False),
        until=_moment("until", text["until"], end_of_day=True),
    )


def _moment(name: str, value: str, *, end_of_day: bool) -> datetime | None:
    """An ISO 8601 time or date; a date `until` means the end of that day."""
    if not value:
        return None
    try:  # a plain date first: parse_datetime reads one as its midnight
        day = parse_date(value) if len(value) == len("2026-01-31") else None
        moment = None if day else parse_datetime(value)
    except ValueError:
        moment = day = None
    if moment is None and day is None:
        raise Invalid(f"{name}: not an ISO 8601 date or time: {value!r}.")
    if moment is None:
        assert day is not None
        moment = datetime.combine(day + timedelta(days=int(end_of_day)), time.min)
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment, timezone.get_current_timezone())
    return moment


def audit_entries(filters: AuditFilters) -> QuerySet[AuditEntry]:
    """The entries matching every given filter (`until` is exclusive)."""
    rows = AuditEntry.objects.all()
    exact = {
        "actor_name": filters.person,
        "action": filters.action,
        "decision": filters.decision,
        "tool": filters.tool,
        "policy_name": filters.policy,
        "project_name": filters.project,
        "via": filters.via,
    }
    rows = rows.filter(**{field: value for field, value in exact.items() if value})
    if filters.session is not None:
        rows = rows.filter(session_ref=filters.session)
    if filters.since is not None:
        rows = rows.filter(created_at__gte=filters.since)
    if filters.until is not None:
        rows = rows.filter(created_at__lt=filters.until)
    return rows


def audit_as_dict(entry: AuditEntry) -> dict[str, Any]:
    return _row_dict(tuple(getattr(entry, column) for column in _COLUMNS))


def _row_dict(row: tuple[Any, ...]) -> dict[str, Any]:
    values = dict(zip(FIELDS, row, strict=True))
    values["created_at"] = values["created_at"].isoformat()
    values["actor"] = values["actor"] or None
    return values


async def _batches(entries: QuerySet[AuditEntry]) -> AsyncIterator[list[tuple[Any, ...]]]:
    """Oldest first, EXPORT_CHUNK rows a query: tuples, never model instances, and no
    cursor held open between batches."""
    ordered = entries.order_by("id").values_list(*_COLUMNS)
    after = 0
    while True:
        batch = ordered.filter(id__gt=after)[:EXPORT_CHUNK]
        rows: list[tuple[Any, ...]] = await sync_to_async(_fetch)(batch)
        if rows:
            yield rows
        if len(rows) < EXPORT_CHUNK:
            return
        after = rows[-1][0]


def _fetch(rows: QuerySet[Any, tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return list(rows)


async def audit_jsonl(entries: QuerySet[AuditEntry]) -> AsyncIterator[str]:
    """JSON Lines: one entry a line, oldest first, a batch a chunk."""
    async for rows in _batches(entries):
        yield "".join(
            json.dumps(_row_dict(row), ensure_ascii=False, separators=(",", ":")) + "\n"
            for row in rows
        )


async def audit_csv(entries: QuerySet[AuditEntry]) -> AsyncIterator[str]:
    """CSV with a header; `details` as JSON in its cell. A cell starting with =, +, - or
    @ is prefixed with ' so that a spreadsheet shows it rather than runs it."""
    yield ",".join(FIELDS) + "\r\n"
    async for rows in _batches(entries):
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        for row in rows:
            values = _row_dict(row)
            values["details"] = json.dumps(values["details"], ensure_ascii=False, sort_keys=True)
            writer.writerow([_cell(values[name]) for name in FIELDS])
        yield buffer.getvalue()


def _cell(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return "" if value is None else value


def audit_stream(entries: Any, fmt: str) -> StreamingHttpResponse:
    """The export response (the page's export link answers with it too)."""
    if fmt == "csv":
        body, kind, name = audit_csv(entries), "text/csv; charset=utf-8", "csv"
    else:
        body, kind, name = audit_jsonl(entries), "application/jsonl", "jsonl"
    response = StreamingHttpResponse(body, content_type=kind)
    response["Content-Disposition"] = f'attachment; filename="agentweb-audit.{name}"'
    return response
