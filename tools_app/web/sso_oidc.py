"""Single sign-on's protocol side: the OpenID Connect backend and views (mozilla-django-
oidc), imported only where someone signs in through the provider (`urls.py` reaches
them through `sso.oidc_view`, the settings name the backend only when SSO is on).
"""

from __future__ import annotations

import logging
from typing import Any

import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from tools_app.core.sso import SsoRefused, SsoUnavailable
from tools_app.services.sso import sso_user_sign_in
from tools_app.web.sso import provider_endpoints, sign_in_refused

log = logging.getLogger(__name__)
ANSWER_NOT_OURS = (
    "This sign-in answer does not match a sign-in started in this browser, or it was "
    "already used: sign in again."
)


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
