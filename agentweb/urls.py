"""URL routes: admin, the REST API and the pages."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from tools_app.api.hook_check import hook_check, hook_download
from tools_app.api.hooks import claude_code_hook
from tools_app.api.routes import api
from tools_app.ops import views as ops
from tools_app.web import sso

urlpatterns = [
    path("admin/", admin.site.urls),
    path("healthz", ops.healthz, name="healthz"),
    path("readyz", ops.readyz, name="readyz"),
    path("metrics", ops.metrics_view, name="metrics"),
    path("login/", sso.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("oidc/authenticate/", sso.oidc_view("SsoStartView"), name="oidc_authentication_init"),
    path("oidc/callback/", sso.oidc_view("SsoCallbackView"), name="oidc_authentication_callback"),
    path("api/hooks/claude-code", claude_code_hook, name="hook_claude_code"),
    path("api/hooks/check", hook_check, name="hook_check"),
    path("api/hooks/agentweb-hook.py", hook_download, name="hook_download"),
    path("api/", api.urls),
    path("", include("tools_app.urls")),
]
