"""Signing in: the login page, passwords, and single sign-on with OpenID Connect.

The protocol is mozilla-django-oidc's (authorization code flow with PKCE and a nonce, the
ID token's signature checked against the provider's keys); agentweb adds the endpoints
from the issuer's discovery document, the ID token's audience and issuer checks, and the
account and its groups from the claims (services/sso.py). Every way a sign-in fails ends
on the login page, saying why, never on a traceback.
"""

from __future__ import annotations

import logging
import threading
from typing import Any
from urllib.parse import urlencode

import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth import views as auth_views
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from tools_app import access
from tools_app.core.sso import (
    ENDPOINT_KEYS,
    SsoRefused,
    SsoUnavailable,
    discovery_url,
    endpoints_from_discovery,
)
from tools_app.services.sso import sso_user_sign_in

log = logging.getLogger(__name__)
LOGIN_TEMPLATE = "registration/login.html"
ANSWER_NOT_OURS = (
    "This sign-in answer does not match a sign-in started in this browser, or it was "
    "already used: sign in again."
)


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


class OidcBackend(OIDCAuthenticationBackend):  # type: ignore[misc]
    """The account behind a provider's authorization code (only on the callback: every
    other authenticate() call passes by)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # mozilla-django-oidc reads the endpoints here; they may need discovery (the
        # network), so they are read in authenticate() instead.
        self.UserModel = get_user_model()
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        self.OIDC_RP_CLIENT_SECRET = settings.OIDC_RP_CLIENT_SECRET
        self.OIDC_RP_SIGN_ALGO = settings.OIDC_RP_SIGN_ALGO
        self.OIDC_RP_IDP_SIGN_KEY = None

    def authenticate(self, request: Any, **kwargs: Any) -> Any:
        if request is None or "code_verifier" not in kwargs:
            return None
        endpoints = provider_endpoints()
        self.OIDC_OP_TOKEN_ENDPOINT = endpoints["token_endpoint"]
        self.OIDC_OP_USER_ENDPOINT = endpoints["userinfo_endpoint"]
        self.OIDC_OP_JWKS_ENDPOINT = endpoints["jwks_uri"]
        try:
            return super().authenticate(request, **kwargs)
        except requests.RequestException as exc:
            log.warning("OpenID Connect sign-in refused by the provider: %s", exc)
            raise SsoRefused(
                "The provider refused this sign-in (its code was already used, has expired "
                "or is not this site's): sign in again."
            ) from exc

    def verify_token(self, token: str, **kwargs: Any) -> Any:
        """The signature and nonce (mozilla-django-oidc), then who the ID token is for
        and who issued it, which the library leaves unchecked."""
        payload = super().verify_token(token, **kwargs)
        if "nonce" not in kwargs:
            return payload
        audience = payload.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if self.OIDC_RP_CLIENT_ID not in audiences:
            raise SuspiciousOperation("the ID token was issued for another client")
        issuer = settings.AGENTWEB_OIDC_ISSUER
        if issuer and str(payload.get("iss", "")).rstrip("/") != issuer.rstrip("/"):
            raise SuspiciousOperation("the ID token was issued by another provider")
        return payload

    def get_or_create_user(self, access_token: str, id_token: str, payload: Any) -> Any:
        claims = {**payload, **self.get_userinfo(access_token, id_token, payload)}
        return sso_user_sign_in(claims=claims)

    def get_user(self, user_id: Any) -> Any:
        """A disabled account's sessions end with it (the library would keep them)."""
        user = super().get_user(user_id)
        return user if user is not None and self.user_can_authenticate(user) else None


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
    AGENTWEB_PASSWORD_LOGIN is off."""

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        return {**super().get_context_data(**kwargs), **login_context(self.request)}

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if settings.AGENTWEB_PASSWORD_LOGIN:
            return super().post(request, *args, **kwargs)
        name = settings.AGENTWEB_OIDC_PROVIDER_NAME
        return sign_in_refused(
            request, f"Password sign-in is off here: sign in with {name}.", status=403
        )


class SsoStartView(OIDCAuthenticationRequestView):  # type: ignore[misc]
    """GET /oidc/authenticate/: off to the provider, with state, nonce and a PKCE
    challenge kept in this browser's session."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # View's own init only: the library's reads the endpoint, which may need discovery.
        super(OIDCAuthenticationRequestView, self).__init__(*args, **kwargs)

    def get(self, request: HttpRequest) -> HttpResponse:
        if not settings.AGENTWEB_SSO:
            raise Http404("Single sign-on is not configured.")
        try:
            self.OIDC_OP_AUTH_ENDPOINT = provider_endpoints()["authorization_endpoint"]
        except SsoUnavailable as exc:
            return sign_in_refused(request, str(exc), status=502)
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        return super().get(request)  # type: ignore[no-any-return]


class SsoCallbackView(OIDCAuthenticationCallbackView):  # type: ignore[misc]
    """GET /oidc/callback/: the provider's answer, checked against the sign-in this
    browser started (state), exchanged once (PKCE), then the account signed in."""

    def get(self, request: HttpRequest) -> HttpResponse:
        if not settings.AGENTWEB_SSO:
            raise Http404("Single sign-on is not configured.")
        try:
            return super().get(request)  # type: ignore[no-any-return]
        except SuspiciousOperation as exc:
            log.warning("OpenID Connect callback refused: %s", exc)
            return sign_in_refused(request, ANSWER_NOT_OURS, status=400)
        except SsoUnavailable as exc:
            return sign_in_refused(request, str(exc), status=502)
        except SsoRefused as exc:
            return sign_in_refused(request, str(exc), status=403)

    def login_failure(self) -> HttpResponse:
        error = self.request.GET.get("error")
        if error:
            said = self.request.GET.get("error_description") or error
            reason = f"The provider did not sign you in: {said[:300]}"
            return sign_in_refused(self.request, reason, status=403)
        return sign_in_refused(self.request, ANSWER_NOT_OURS, status=400)
