"""The password forms of the login page and of the admin's, each attempt counted against
password sign-in's limits (`services/sign_in.py`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError

from tools_app.core.addresses import client_address
from tools_app.services.sign_in import SignInShut, sign_in_attempt

SHUT = "sign_in_shut"  # the error's code, for the view's 429
T = TypeVar("T")


def request_address(request: Any) -> str:
    """The address the request came from: the TCP peer, or behind a trusted proxy the
    address that proxy saw."""
    meta = getattr(request, "META", {})
    peer, forwarded = meta.get("REMOTE_ADDR") or "", meta.get("HTTP_X_FORWARDED_FOR") or ""
    return client_address(str(peer), str(forwarded), settings.AGENTWEB_TRUSTED_PROXIES)


def counted(request: Any, username: str, check: Callable[[], T]) -> T:
    """`check` (a password's) run only while password sign-in is open for this account
    from the request's address, and counted against its limits (a mismatch leaves by the
    form's ValidationError). While it is shut, the form's error: code SHUT, and how long in
    its params (`shut_seconds`)."""
    try:
        with sign_in_attempt(username=username, address=request_address(request)) as attempt:
            result = check()
            attempt.succeeded()
    except SignInShut as shut:
        raise ValidationError(str(shut), code=SHUT, params={"seconds": shut.seconds}) from None
    return result


def shut_seconds(form: Any) -> float | None:
    """How long password sign-in stays shut, when that is why the form was refused."""
    for error in form.errors.as_data().get(NON_FIELD_ERRORS, ()):
        if error.code == SHUT:
            return float(error.params["seconds"])
    return None


class CountedAttempts:
    """Mixed into Django's AuthenticationForm: its password check `counted`."""

    request: Any
    cleaned_data: dict[str, Any]

    def clean(self) -> dict[str, Any]:
        username = self.cleaned_data.get("username")
        if username is None or not self.cleaned_data.get("password"):
            return super().clean()  # type: ignore[misc,no-any-return]
        cleaned: dict[str, Any] = counted(self.request, username, super().clean)  # type: ignore[misc]
        return cleaned


class SignInForm(CountedAttempts, AuthenticationForm):
    error_messages = {
        **AuthenticationForm.error_messages,
        "invalid_login": "Your username and password didn't match. Please try again.",
    }


class AdminSignInForm(CountedAttempts, AdminAuthenticationForm):
    pass
