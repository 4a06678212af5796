"""The password forms of the login page and of the admin's, each attempt counted against
password sign-in's limits (`services/sign_in.py`)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError

from tools_app.core.addresses import client_address
from tools_app.services.sign_in import SignInShut, sign_in_attempt

SHUT = "sign_in_shut"  # the error's code, for the view's 429


def request_address(request: Any) -> str:
    """The address the request came from: the TCP peer, or behind a trusted proxy the
    address that proxy saw."""
    meta = getattr(request, "META", {})
    peer, forwarded = meta.get("REMOTE_ADDR") or "", meta.get("HTTP_X_FORWARDED_FOR") or ""
    return client_address(str(peer), str(forwarded), settings.AGENTWEB_TRUSTED_PROXIES)


class CountedAttempts:
    """Mixed into Django's AuthenticationForm: the password is checked only while password
    sign-in is open for this account from this address, and a mismatch is counted."""

    request: Any
    cleaned_data: dict[str, Any]
    shut_seconds = 0.0

    def clean(self) -> dict[str, Any]:
        username = self.cleaned_data.get("username")
        if username is None or not self.cleaned_data.get("password"):
            return super().clean()  # type: ignore[misc,no-any-return]
        address = request_address(self.request)
        try:
            with sign_in_attempt(username=username, address=address) as attempt:
                cleaned: dict[str, Any] = super().clean()  # type: ignore[misc]
                attempt.succeeded()
        except SignInShut as shut:
            self.shut_seconds = shut.seconds
            raise ValidationError(str(shut), code=SHUT) from None
        return cleaned


class SignInForm(CountedAttempts, AuthenticationForm):
    error_messages = {
        **AuthenticationForm.error_messages,
        "invalid_login": "Your username and password didn't match. Please try again.",
    }


class AdminSignInForm(CountedAttempts, AdminAuthenticationForm):
    pass
