"""URL routes: admin, the REST API and the pages."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse
from django.urls import include, path

from tools_app.api.hook_check import hook_check, hook_download
from tools_app.api.hooks import claude_code_hook
from tools_app.api.routes import api
from tools_app.ops import views as ops
from tools_app.web import sso


def oidc_view(name: str) -> Callable[..., HttpResponse]:
    """The OpenID Connect view `name` of `web/sso_oidc.py`, imported at its first request:
    every process that loads the URLs (each command's checks) would pay for
    mozilla-django-oidc and requests otherwise."""

    def view(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        from tools_app.web import sso_oidc

        answer: HttpResponse = getattr(sso_oidc, name).as_view()(request, *args, **kwargs)
        return answer

    return view


urlpatterns = [
    path("admin/", admin.site.urls),
    path("healthz", ops.healthz, name="healthz"),
    path("readyz", ops.readyz, name="readyz"),
    path("metrics", ops.metrics_view, name="metrics"),
    path("login/", sso.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("oidc/authenticate/", oidc_view("SsoStartView"), name="oidc_authentication_init"),
    path("oidc/callback/", oidc_view("SsoCallbackView"), name="oidc_authentication_callback"),
    path("api/hooks/claude-code", claude_code_hook, name="hook_claude_code"),
    path("api/hooks/check", hook_check, name="hook_check"),
    path("api/hooks/agentweb-hook.py", hook_download, name="hook_download"),
    path("api/", api.urls),
    path("", include("tools_app.urls")),
]
