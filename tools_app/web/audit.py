"""The audit page: `/audit/` (filters, newest first, a keyset page at a time) and its
export (`/audit/export/?format=csv|jsonl`, the same filters, streamed).

Staff, or users with `view_auditentry` (`access.may_see_audit`); others get 403.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.views.decorators.http import require_safe

from tools_app import access
from tools_app.errors import Invalid
from tools_app.models import AuditEntry
from tools_app.selectors import audit as audit_selectors
from tools_app.selectors.pagination import cursor_decode, cursor_encode

PAGE_SIZE = 50


@login_required
@require_safe
def audit(request: HttpRequest) -> HttpResponse:
    access.check_see_audit(request.user, access.BROWSER)
    try:
        filters = audit_selectors.audit_filters(request.GET)
    except Invalid as exc:
        return _page(request, [], None, audit_selectors.AuditFilters(), error=str(exc), status=400)
    entries = access.visible_audit(request.user, audit_selectors.audit_entries(filters))
    entries = entries.order_by("-id")
    after = _cursor(request.GET.get("cursor", ""))
    if after is not None:
        entries = entries.filter(id__lt=after)
    found = list(entries[: PAGE_SIZE + 1])
    shown = found[:PAGE_SIZE]
    more = cursor_encode(shown[-1].pk) if len(found) > PAGE_SIZE else None
    return _page(request, shown, more, filters)


@login_required
@require_safe
def audit_export(request: HttpRequest) -> HttpResponseBase:
    access.check_see_audit(request.user, access.BROWSER)
    try:
        filters = audit_selectors.audit_filters(request.GET)
    except Invalid as exc:
        return HttpResponse(f"{exc}\n", status=400, content_type="text/plain")
    fmt = request.GET.get("format", "jsonl")
    if fmt not in ("csv", "jsonl"):
        return HttpResponse(
            "format: must be csv or jsonl.\n", status=400, content_type="text/plain"
        )
    entries = access.visible_audit(request.user, audit_selectors.audit_entries(filters))
    return audit_selectors.audit_stream(entries, fmt)


def _cursor(value: str) -> int | None:
    try:
        return cursor_decode(value) if value else None
    except ValueError:
        return None


def _page(
    request: HttpRequest,
    entries: list[AuditEntry],
    next_cursor: str | None,
    filters: audit_selectors.AuditFilters,
    *,
    error: str = "",
    status: int = 200,
) -> HttpResponse:
    query = filters.as_query()
    context = {
        "entries": entries,
        "next_cursor": next_cursor,
        "filters": query,
        "query": urlencode(query),
        "actions": AuditEntry.Action.choices,
        "vias": AuditEntry.Via.choices,
        "error": error,
    }
    return render(request, "tools_app/audit.html", context, status=status)
