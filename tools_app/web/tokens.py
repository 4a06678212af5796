"""A person's own API tokens: listed, made (the token shown once, on the answer to the
POST that made it: never stored, never cached) and revoked. Token admins (staff) see and
revoke everyone's too. The writes are `services.tokens`; who sees what is `access`."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from tools_app import access
from tools_app.errors import ServiceError
from tools_app.selectors.agent_connect import tokens_listed
from tools_app.services.audit import Via
from tools_app.services.tokens import api_token_create, api_token_revoke
from tools_app.web.token_forms import TokenForm, expiry_days


@login_required
@never_cache
@require_http_methods(["GET", "HEAD", "POST"])
def tokens(request: HttpRequest) -> HttpResponse:
    user: Any = request.user  # logged in (login_required)
    form = TokenForm(request.POST if request.method == "POST" else None, user=user)
    made = ""
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            made = api_token_create(
                user=user, scope=data["scope"], name=data["name"],
                expires_days=expiry_days(data["expires"]), project=data["project"], by=user,
                via=Via.BROWSER,
            )  # fmt: skip
        except ServiceError as exc:
            form.add_error(None, str(exc))
        else:
            form = TokenForm(user=user)
    admin = access.is_token_admin(user)
    context = {
        "form": form,
        "made": made,
        "own": tokens_listed(user),
        "others": tokens_listed(user, everyone=True) if admin else None,
    }
    return render(request, "tools_app/tokens.html", context)


@login_required
@require_POST
def token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    """Revoke a token the user may see (their own; any, for a token admin): 404 otherwise."""
    token = access.api_token_for(request.user, token_id)
    if request.POST.get("confirm") != "yes":
        messages.error(request, f"The token {token.prefix}… was not revoked: confirm it first.")
        return redirect("tokens")
    try:
        api_token_revoke(token=token, by=request.user, via=Via.BROWSER)
    except ServiceError as exc:
        messages.error(request, str(exc))
    else:
        label = f"“{token.name}” ({token.prefix}…)" if token.name else f"{token.prefix}…"
        messages.success(request, f"The token {label} is revoked: it is refused from now on.")
    return redirect("tokens")
