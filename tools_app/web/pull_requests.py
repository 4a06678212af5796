"""Server-rendered pages: look up, check access, call one service, answer.

The approvals inbox lives in approvals.py."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from tools_app import access
from tools_app.web import cards


@login_required
@require_safe
def pull_request(request: HttpRequest, pull_id: int) -> HttpResponse:
    pull = access.pull_request_for(request.user, pull_id)
    context = {"pull": pull, "call": cards.pull_request_call(pull)}
    return render(request, "tools_app/pull_request.html", context)
