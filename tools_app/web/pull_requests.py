"""Server-rendered pages: look up, check access, call one service, answer.

The approvals inbox lives in views_approvals.py."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from tools_app import access


@login_required
@require_safe
def pull_request(request: HttpRequest, pull_id: int) -> HttpResponse:
    pull = access.pull_request_for(request.user, pull_id)
    return render(request, "tools_app/pull_request.html", {"pull": pull})
