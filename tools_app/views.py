"""Server-rendered pages: look up, check access, call one service, answer."""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST, require_safe

from tools_app import access, selectors, services


@login_required
@require_safe
def approvals(request: HttpRequest) -> HttpResponse:
    """The inbox: every call still awaiting a decision, for reviewers. A read only:
    overdue calls are left out here and expired by the sweep."""
    calls = []
    if access.may_review(request.user, access.BROWSER):
        calls = list(selectors.approvals_awaiting())
    return render(request, "tools_app/approvals.html", {"calls": calls})


# action → (decision, remember, edited arguments)
ACTIONS = {
    "approve": ("approve", False, False),
    "remember": ("approve", True, False),
    "edit": ("approve", False, True),
    "deny": ("deny", False, False),
}


@login_required
@require_POST
def decide(request: HttpRequest, tool_call_id: int) -> HttpResponse:
    call = access.tool_call_for(request.user, tool_call_id)
    if not access.may_review(request.user, access.BROWSER):
        raise PermissionDenied("Only reviewers decide tool calls.")
    action = request.POST.get("action", "")
    if action not in ACTIONS:
        messages.error(request, f"Tool call {tool_call_id}: unknown action {action!r}.")
        return redirect("approvals")
    decision, remember, edit = ACTIONS[action]
    try:
        services.tool_call_decide(
            call=call,
            user=request.user,
            scope="session",
            decision=decision,
            reason=request.POST.get("reason", ""),
            args=_edited_args(request) if edit else None,
            remember=remember,
        )
    except (services.ServiceError, ValueError) as exc:
        messages.error(request, f"Tool call {tool_call_id}: {exc}")
    else:
        done = "denied" if decision == "deny" else "approved"
        messages.success(request, f"Tool call {tool_call_id}: {done}.")
    return redirect("approvals")


def _edited_args(request: HttpRequest) -> dict[str, object]:
    try:
        args = json.loads(request.POST.get("args", ""))
    except json.JSONDecodeError as exc:
        raise ValueError(f"the edited arguments are not valid JSON ({exc})") from exc
    if not isinstance(args, dict):
        raise ValueError("the edited arguments must be a JSON object")
    return args


@login_required
@require_safe
def pull_request(request: HttpRequest, pull_id: int) -> HttpResponse:
    pull = access.pull_request_for(request.user, pull_id)
    return render(request, "tools_app/pull_request.html", {"pull": pull})
