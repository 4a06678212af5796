"""What every page's header shows: the pending-approvals counter for reviewers."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from tools_app import access
from tools_app.selectors import records


def pending_approvals(request: HttpRequest) -> dict[str, Any]:
    """`pending_approvals` is None for those who do not decide (no counter, no socket)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated or not access.may_review(user, access.BROWSER):
        return {"pending_approvals": None}
    mine = access.reviewable_calls(user, access.BROWSER, records.approvals_awaiting())
    return {"pending_approvals": mine.count()}
