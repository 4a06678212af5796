"""What every page's header shows: the pending-approvals counter for reviewers."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from tools_app import access
from tools_app.selectors import records


def reviewer_browsing(request: HttpRequest) -> bool:
    """Whether the signed-in person decides calls: asked once a request, however many of
    the page's parts want to know."""
    known = getattr(request, "_agentweb_reviewer", None)
    if known is None:
        user = getattr(request, "user", None)
        known = bool(user is not None and user.is_authenticated)
        known = known and access.may_review(user, access.BROWSER)
        request._agentweb_reviewer = known  # type: ignore[attr-defined]
    return known


def pending_approvals(request: HttpRequest) -> dict[str, Any]:
    """`pending_approvals` is None for those who do not decide (no counter, no socket)."""
    if not reviewer_browsing(request):
        return {"pending_approvals": None}
    mine = access.reviewable_calls(request.user, access.BROWSER, records.approvals_awaiting())
    return {"pending_approvals": mine.count()}
