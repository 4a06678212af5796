"""REST API for the audit trail: `GET /api/audit` (pages) and `GET /api/audit/export`.

Staff, or users with `view_auditentry`, by browser or review token
(`access.may_see_audit`); an agent token gets 403. Filters: `person` (a username),
`action`, `decision` (approve|deny), `tool`, `session`, `policy`, `via`, `since` and
`until` (ISO 8601 date or time; `until` is exclusive, a date means its whole day).
"""

from __future__ import annotations

from typing import Any, Literal

from django.http import HttpRequest, StreamingHttpResponse
from ninja import NinjaAPI, Query, Router, Schema
from pydantic import Field

from tools_app import access
from tools_app.api.schemas import ErrorOut
from tools_app.selectors import audit as audit_selectors
from tools_app.selectors.pagination import PageQuery, page

router = Router(tags=["audit"])

_FILTER_DOC = {
    "person": "The username of who acted.",
    "action": "decision, rule.remember, policy.change, policy.delete, skill.change, "
    "skill.delete, project.change, channel.change, channel.delete, token.create, token.revoke, "
    "session.cancel or tool_call.outcome.",
    "decision": "approve or deny.",
    "tool": "A tool name.",
    "session": "A session id.",
    "policy": "A policy name.",
    "project": "A project name: only its entries (you see only your projects' entries).",
    "via": "browser, api, slack, admin, cli or system.",
    "since": "ISO 8601 date or time: entries at or after it.",
    "until": "ISO 8601 date or time: entries before it (a date: until the end of that day).",
}


class AuditFilterQuery(Schema):
    person: str | None = Field(default=None, description=_FILTER_DOC["person"])
    action: str | None = Field(default=None, description=_FILTER_DOC["action"])
    decision: str | None = Field(default=None, description=_FILTER_DOC["decision"])
    tool: str | None = Field(default=None, description=_FILTER_DOC["tool"])
    session: int | None = Field(default=None, description=_FILTER_DOC["session"])
    policy: str | None = Field(default=None, description=_FILTER_DOC["policy"])
    project: str | None = Field(default=None, description=_FILTER_DOC["project"])
    via: str | None = Field(default=None, description=_FILTER_DOC["via"])
    since: str | None = Field(default=None, description=_FILTER_DOC["since"])
    until: str | None = Field(default=None, description=_FILTER_DOC["until"])


class AuditPageQuery(PageQuery, AuditFilterQuery):
    pass


class AuditExportQuery(AuditFilterQuery):
    format: Literal["csv", "jsonl"] = Field(
        default="jsonl", description="csv, or jsonl (JSON Lines: one entry a line)."
    )


class AuditEntryOut(Schema):
    id: int
    created_at: str
    actor: str | None
    via: str
    action: str
    decision: str
    object_type: str
    object_id: str
    object: str
    session: int | None
    tool_call: int | None
    tool: str
    policy: str
    project: str = Field(default="", description="The project of its session; empty: none.")
    preview_hash: str = Field(description="SHA-256 of the preview the person saw.")
    reason: str
    details: dict[str, Any]


class AuditPage(Schema):
    items: list[AuditEntryOut]
    next: str | None


def _scope(request: HttpRequest) -> str:
    return getattr(request, "agentweb_scope", "session")


@router.get("/audit", response={200: AuditPage, 403: ErrorOut, 422: ErrorOut})
def audit_list(request: HttpRequest, query: Query[AuditPageQuery]) -> dict[str, Any]:
    """Audit entries, newest first, a page at a time."""
    access.check_see_audit(request.user, _scope(request))
    filters = audit_selectors.audit_filters(query.dict())
    entries = access.visible_audit(request.user, audit_selectors.audit_entries(filters))
    return page(entries, query, audit_selectors.audit_as_dict, order="newest")


_EXPORT_DOC = {
    "responses": {
        "200": {
            "description": "Every matching entry, oldest first, streamed.",
            "content": {"text/csv": {}, "application/jsonl": {}},
        }
    }
}


@router.get("/audit/export", response={403: ErrorOut, 422: ErrorOut}, openapi_extra=_EXPORT_DOC)
def audit_export(request: HttpRequest, query: Query[AuditExportQuery]) -> StreamingHttpResponse:
    """Every matching entry as CSV or JSON Lines, streamed in constant memory."""
    access.check_see_audit(request.user, _scope(request))
    filters = audit_selectors.audit_filters(query.dict())
    entries = access.visible_audit(request.user, audit_selectors.audit_entries(filters))
    return audit_selectors.audit_stream(entries, query.format)


def register(api: NinjaAPI) -> None:
    api.add_router("", router)
