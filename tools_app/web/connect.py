"""Connect your agent: choose an agent and a policy, get an agent token and exactly what to
paste, with this server's URL (AGENTWEB_BASE_URL) and the agent's minimum version. The
snippets are `core/agent_connect.py`'s, the ones `hook_settings` prints. The answer holds
the token, shown once: never cached."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from tools_app.core.agent_connect import INTEGRATIONS
from tools_app.errors import ServiceError
from tools_app.models import ApiToken
from tools_app.selectors.agent_connect import connection_for
from tools_app.services.audit import Via
from tools_app.services.tokens import api_token_create
from tools_app.web.token_forms import ConnectForm, expiry_days

CHECK_PATH = "/api/hooks/check"


@login_required
@never_cache
@require_http_methods(["GET", "HEAD", "POST"])
def connect(request: HttpRequest) -> HttpResponse:
    user: Any = request.user  # logged in (login_required)
    form = ConnectForm(request.POST if request.method == "POST" else None, user=user)
    context: dict[str, Any] = {"form": form, "integrations": INTEGRATIONS.values()}
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        integration = INTEGRATIONS[data["agent"]]
        try:
            token = api_token_create(
                user=user, scope=ApiToken.Scope.AGENT, name=f"{integration.label} (Connect)",
                expires_days=expiry_days(data["expires"]), project=data["project"], by=user,
                via=Via.BROWSER,
            )  # fmt: skip
        except ServiceError as exc:
            form.add_error(None, str(exc))
        else:
            # The default policy is named by no hook, as `hook_settings` prints it.
            policy = "" if data["policy"] == "default" else data["policy"]
            connection = connection_for(policy=policy, token=token)
            context |= {
                "integration": integration,
                "connection": connection,
                "policy": data["policy"],
                "snippets": integration.compose(connection),
                "token": token,
                "check_path": CHECK_PATH,
            }
    return render(request, "tools_app/connect.html", context)
