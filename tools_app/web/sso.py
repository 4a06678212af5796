"""Signing in: the login page, passwords, and single sign-on with OpenID Connect.

The protocol is mozilla-django-oidc's (authorization code flow with PKCE and a nonce, the
ID token's signature checked against the provider's keys); agentweb adds the endpoints
from the issuer's discovery document, the ID token's audience and issuer checks, and the
account and its groups from the claims (services/sso.py). Every way a sign-in fails ends
on the login page, saying why, never on a traceback.

The protocol's own views and backend are in `sso_oidc.py`, imported on the first
sign-in (`agentweb/urls.py`): mozilla-django-oidc brings `requests`, which no other
page needs.
"""

from __future__ import annotations

import logging
import threading
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from tools_app import access
from tools_app.core.sso import (
    ENDPOINT_KEYS,
    SsoUnavailable,
    discovery_url,
    endpoints_from_discovery,
)
from tools_app.web.sign_in_forms import SignInForm, shut_seconds

log = logging.getLogger(__name__)
LOGIN_TEMPLATE = "registration/login.html"


# --- the provider's endpoints ---------------------------------------------------------

_discovered: dict[str, dict[str, str]] = {}
_discovery_lock = threading.Lock()


def provider_endpoints() -> dict[str, str]:
    """The endpoints named in the settings, the rest from the issuer's discovery document
    (read once per process, at the first sign-in)."""
    explicit: dict[str, str] = settings.AGENTWEB_OIDC_ENDPOINTS
    issuer = settings.AGENTWEB_OIDC_ISSUER
    if not issuer or all(key in explicit for key in ENDPOINT_KEYS):
        return dict(explicit)
    with _discovery_lock:
        if issuer not in _discovered:
            _discovered[issuer] = _discover(issuer)
    return {**_discovered[issuer], **explicit}


def _discover(issuer: str) -> dict[str, str]:
    import requests  # here: most processes never sign anyone in (a tenth of a start-up)

    url = discovery_url(issuer)
    try:
        answer = requests.get(url, timeout=settings.OIDC_TIMEOUT)
        answer.raise_for_status()
        return endpoints_from_discovery(answer.json(), issuer)
    except (requests.RequestException, ValueError) as exc:
        log.warning("OpenID Connect discovery at %s failed: %s", url, exc)
        raise SsoUnavailable(
            f"The sign-in provider did not answer as expected at {url} ({exc}): try again "
            "later, or tell an admin."
        ) from exc


# --- authentication backends ----------------------------------------------------------


class PasswordBackend(ModelBackend):
    """Passwords: everyone's while AGENTWEB_PASSWORD_LOGIN is on; off, superusers' only,
    so that an admin can still get in when the provider is down (the break-glass)."""

    def authenticate(self, request: Any, username: Any = None, password: Any = None,
                     **kwargs: Any) -> Any:  # fmt: skip
        user = super().authenticate(request, username=username, password=password, **kwargs)
        return user if user is None or access.may_sign_in_with_password(user) else None


# --- pages ----------------------------------------------------------------------------


def login_context(request: HttpRequest) -> dict[str, Any]:
    """What the login page shows besides the password form."""
    context: dict[str, Any] = {
        "sso": settings.AGENTWEB_SSO,
        "sso_name": settings.AGENTWEB_OIDC_PROVIDER_NAME,
        "password_login": settings.AGENTWEB_PASSWORD_LOGIN,
    }
    if settings.AGENTWEB_SSO and "signed-out" in request.GET:
        context["provider_sign_out"] = provider_sign_out_url(request)
    return context


def provider_sign_out_url(request: HttpRequest) -> str:
    """The provider's own sign-out, back to this login page ("" when it has none)."""
    try:
        end_session = provider_endpoints().get("end_session_endpoint", "")
    except SsoUnavailable:
        return ""
    if not end_session:
        return ""
    back = request.build_absolute_uri(settings.LOGIN_URL)
    query = urlencode({"client_id": settings.OIDC_RP_CLIENT_ID, "post_logout_redirect_uri": back})
    return f"{end_session}?{query}"


def sign_in_refused(request: HttpRequest, reason: str, status: int) -> HttpResponse:
    context = {"form": AuthenticationForm(request), "sso_error": reason, **login_context(request)}
    return TemplateResponse(request, LOGIN_TEMPLATE, context, status=status)


class LoginView(auth_views.LoginView):
    """Django's login page, with the SSO button; password POSTs are refused while
    AGENTWEB_PASSWORD_LOGIN is off, and counted against sign-in's limits while it is on."""

    authentication_form = SignInForm

    def form_invalid(self, form: Any) -> HttpResponse:
        response = super().form_invalid(form)
        seconds = shut_seconds(form)
        if seconds is not None:  # too many failures: say so to scripts too
            response.status_code = 429
            response["Retry-After"] = str(max(1, round(seconds)))
        return response

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        return {**super().get_context_data(**kwargs), **login_context(self.request)}

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if settings.AGENTWEB_PASSWORD_LOGIN:
            return super().post(request, *args, **kwargs)
        name = settings.AGENTWEB_OIDC_PROVIDER_NAME
        return sign_in_refused(
            request, f"Password sign-in is off here: sign in with {name}.", status=403
        )
