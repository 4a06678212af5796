"""Host and Origin at the entry points that Django's middleware does not guard.

The hook URLs (`hook_handler.py`) and `/mcp` (`mcp_http.py`) skip the site's middleware
chain, so they ask here what the chain would have refused: a `Host` outside
`ALLOWED_HOSTS` (`DJANGO_ALLOWED_HOSTS`), where the site answers 400, and an `Origin`
that is not the site's own, where the CSRF middleware answers 403. A bearer token does
not make a browser's request safe: a page of another site that a DNS name rebound to
127.0.0.1 (or a page that holds a token it should not use) would otherwise reach agentweb
as this site. A request without `Origin` is not a browser's cross-site request (agents,
curl) and passes this check.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import CsrfViewMiddleware


@dataclass(frozen=True)
class Refusal:
    """Why a request is refused, and the status the site's chain would answer."""

    status: int
    detail: str


def entry_refusal(request: HttpRequest) -> Refusal | None:
    """The Host check, then the Origin check; None when the request may go on."""
    try:
        request.get_host()
    except DisallowedHost:
        host = request.META.get("HTTP_HOST", "")
        return Refusal(
            400,
            f"The Host header {host[:200]!r} is not a name agentweb serves: add it to "
            "DJANGO_ALLOWED_HOSTS (comma-separated) if it is one.",
        )
    origin = request.META.get("HTTP_ORIGIN")
    if origin is not None and not _site_origin(request):
        return Refusal(
            403,
            f"The Origin {origin[:200]!r} is not this site's: a page of another site may "
            "not call agentweb (an origin to trust goes in DJANGO_CSRF_TRUSTED_ORIGINS).",
        )
    return None


def _site_origin(request: HttpRequest) -> bool:
    """The CSRF middleware's own test: this request's scheme and host, or an origin of
    CSRF_TRUSTED_ORIGINS (subdomain wildcards included)."""
    checker = CsrfViewMiddleware(lambda _request: HttpResponse())
    return bool(checker._origin_verified(request))  # type: ignore[attr-defined]  # Django's
