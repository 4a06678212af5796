"""The approvals inbox: the page, its card fragments, decisions and the remember count.

Forms post and redirect back without JavaScript; inbox.js sends the same forms by fetch
with `X-Requested-With: fetch` and gets the card back as a fragment to swap in place.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.views.decorators.http import require_POST, require_safe

from tools_app import access, services
from tools_app.core.policy.loader import PolicyInvalid
from tools_app.core.policy.remember import remember_patterns
from tools_app.models import ToolCall
from tools_app.selectors import records
from tools_app.selectors.inbox import MAX_PAGE_SIZE, PAGE_SIZE, inbox_page
from tools_app.services.policies import widening_needs_admin
from tools_app.web import cards

# action → (decision, remember, edited arguments)
ACTIONS = {
    "approve": ("approve", False, False),
    "remember": ("approve", True, False),
    "edit": ("approve", False, True),
    "deny": ("deny", False, False),
}
PATTERN_PREFIX = "pattern."
MAX_ID = 2**63 - 1


@login_required
@require_safe
def approvals(request: HttpRequest) -> HttpResponse:
    """The inbox: the newest page of the calls still awaiting a decision, for reviewers;
    older pages follow (`?before=ID`, or fetched by inbox.js as the reviewer scrolls). A
    read only: overdue calls are left out here and expired by the sweep."""
    try:
        context = _page_context(request)
    except ValueError as exc:
        return HttpResponseBadRequest(str(exc), content_type="text/plain; charset=utf-8")
    context["live"] = access.may_review(request.user, access.BROWSER)
    return render(request, "tools_app/approvals.html", context)


@login_required
@require_safe
def approval_cards(request: HttpRequest) -> HttpResponse:
    """One page of the list alone (`?before=ID&limit=N`): the next page as the reviewer
    scrolls, or the newest cards for a client that missed more than the socket replays."""
    try:
        context = _page_context(request)
    except ValueError as exc:
        return HttpResponseBadRequest(str(exc), content_type="text/plain; charset=utf-8")
    return render(request, "tools_app/_cards.html", context)


def _page_context(request: HttpRequest) -> dict[str, Any]:
    """The page's cards, the `before` of the next page and the total; ValueError names a
    bad `before` or `limit`."""
    before = _whole_number(request, "before", 1, MAX_ID)
    limit = _whole_number(request, "limit", 1, MAX_PAGE_SIZE) or PAGE_SIZE
    context: dict[str, Any] = {"last_seq": records.events_last_id(), "before": before}
    if not access.may_review(request.user, access.BROWSER):
        return context | {"cards": [], "next": None, "total": 0}
    mine = access.reviewable_calls(request.user, access.BROWSER, records.approvals_awaiting())
    page = inbox_page(mine, before=before, limit=limit)
    cards = [_card_context(call, request.user) for call in page.calls]
    return context | {"cards": cards, "next": page.next, "total": page.total}


def _whole_number(request: HttpRequest, name: str, low: int, high: int) -> int | None:
    text = request.GET.get(name)
    if text is None:
        return None
    digits = text.isascii() and text.isdigit() and len(text) <= len(str(high))
    if not digits or not low <= int(text) <= high:
        raise ValueError(f"{name} must be a whole number from {low} to {high}, not {text!r}")
    return int(text)


@login_required
@require_safe
def approval_card(request: HttpRequest, tool_call_id: int) -> HttpResponse:
    """One card, pending or decided (then it says who decided and how)."""
    call = _reviewable(request, tool_call_id)
    return _card(request, call)


@login_required
@require_POST
def decide(request: HttpRequest, tool_call_id: int) -> HttpResponse:
    call = _reviewable(request, tool_call_id)
    fetch = request.headers.get("X-Requested-With") == "fetch"
    action = request.POST.get("action", "")
    try:
        done = _decide(request, call, action)
    except (services.ServiceError, ValueError) as exc:
        if fetch:
            status = getattr(exc, "status", 400)
            return _card(
                request, _fresh(request, call), status=status, error=str(exc), **_typed(request)
            )
        messages.error(request, f"Tool call {tool_call_id}: {exc}")
    else:
        if fetch:
            return _card(request, _fresh(request, call))
        messages.success(request, f"Tool call {tool_call_id}: {done}.")
    return redirect("approvals")


def _decide(request: HttpRequest, call: ToolCall, action: str) -> str:
    if action not in ACTIONS:
        raise ValueError(f"unknown action {action!r}")
    decision, remember, edit = ACTIONS[action]
    decided = services.tool_call_decide(
        call=call,
        user=request.user,
        scope=access.BROWSER,
        decision=decision,
        reason=request.POST.get("reason", ""),
        args=_edited_args(request, call) if edit else None,
        remember=remember,
        rule_args=_widened_only(call, _rule_args(request)) if remember else None,
    )
    if decided.status == ToolCall.Status.AWAITING_APPROVAL:
        return "your approval is recorded; it waits for the others"
    return "denied" if decision == "deny" else "approved"


@login_required
@require_safe
def remember_count(request: HttpRequest, tool_call_id: int) -> JsonResponse:
    """How many past calls the (widened) rule in the query would have matched, and
    `preview`: the card's "this rule would also allow" list, rendered here."""
    call = _reviewable(request, tool_call_id)
    exact = remember_patterns(call.tool, call.args)
    patterns = _widened_only(call, _rule_args(request, request.GET)) or exact
    try:
        reach = records.rule_reach(
            policy=call.session.policy, tool=call.tool, patterns=patterns, exact=exact,
            exclude=call.pk,
        )  # fmt: skip
    except PolicyInvalid as exc:
        return JsonResponse({"count": None, "of": None, "error": str(exc)}, status=422)
    context = {"reach": reach, "widened": patterns != exact}
    preview = render_to_string("tools_app/_remember_preview.html", context, request=request)
    return JsonResponse(
        {"count": reach.matched, "of": reach.seen, "error": None, "preview": preview}
    )


def _reviewable(request: HttpRequest, tool_call_id: int) -> ToolCall:
    """404 for those who may not see the call, 403 for those who see it but do not review."""
    call = access.tool_call_for(request.user, tool_call_id)
    if not access.may_review(request.user, access.BROWSER):
        raise PermissionDenied("Only reviewers decide tool calls.")
    return call


def _card(request: HttpRequest, call: ToolCall, status: int = 200, **extra: Any) -> HttpResponse:
    context = {"card": _card_context(call, request.user, **extra)}
    return render(request, "tools_app/_card.html", context, status=status)


def _card_context(call: ToolCall, user: Any, **extra: Any) -> dict[str, Any]:
    """The card, and whether its remembered rule may only be the exact one for this user
    (the call waited for a protected path, a risky command …; widening takes an admin)."""
    exact_only = widening_needs_admin(call.rule) and not access.is_policy_admin(user)
    return cards.card_context(call, user, remember_exact_only=exact_only, **extra)


def _fresh(request: HttpRequest, call: ToolCall) -> ToolCall:
    return access.tool_call_for(request.user, call.pk)


def _typed(request: HttpRequest) -> dict[str, Any]:
    """What the reviewer typed, shown again on a card that refused it."""
    typed: dict[str, Any] = {"reason": request.POST.get("reason", "")}
    if "args" in request.POST:
        typed.update(args_json=request.POST["args"], edit_open=True)
    if "edit_value" in request.POST:
        typed.update(edit_value=request.POST["edit_value"], edit_open=True)
    return typed


def _edited_args(request: HttpRequest, call: ToolCall) -> dict[str, object]:
    """The edited field of a write or edit, or the whole arguments as JSON."""
    field, edited = cards.edit_target(call)
    if field and "edit_value" in request.POST:
        return {**edited, field: cards.edited_text(edited.get(field), request.POST["edit_value"])}
    try:
        args = json.loads(request.POST.get("args", ""))
    except json.JSONDecodeError as exc:
        raise ValueError(f"the edited arguments are not valid JSON ({exc})") from exc
    if not isinstance(args, dict):
        raise ValueError("the edited arguments must be a JSON object")
    return args


def _widened_only(call: ToolCall, patterns: dict[str, str] | None) -> dict[str, str] | None:
    """The patterns with each one the form showed (spelled for an input) read back as
    the exact pattern it stands for; None when nothing was widened."""
    exact = remember_patterns(call.tool, call.args)
    if patterns is None:
        return None
    shown = {name: cards.form_safe(pattern) for name, pattern in exact.items()}
    restored = {
        name: exact[name] if shown.get(name) == pattern else pattern
        for name, pattern in patterns.items()
    }
    return None if restored == exact else restored


def _rule_args(request: HttpRequest, data: Any = None) -> dict[str, str] | None:
    """The widened patterns (`pattern.NAME` fields); None when the form sent none."""
    data = request.POST if data is None else data
    patterns = {
        key.removeprefix(PATTERN_PREFIX): value
        for key, value in data.items()
        if key.startswith(PATTERN_PREFIX)
    }
    return patterns or None
