"""Host and Origin at every entry point: the site's middleware chain, the hooks and `/mcp`.

A `Host` outside `ALLOWED_HOSTS` (derived from `AGENTWEB_BASE_URL`, agentweb/site_names.py)
is a 400 whose text names that setting, and one warning in the log without a traceback,
wherever it arrives: `known_host` answers it first in the site's chain (before anything
else asks Django for the host, which would raise), and the hook URLs (`hook_handler.py`)
and `/mcp` (`mcp_http.py`), which skip the chain, ask `entry_refusal`. Those two also
refuse an `Origin` that is not the site's own, where the CSRF middleware answers 403. A
bearer token does not make a browser's request safe: a page of another site that a DNS
name rebound to 127.0.0.1 (or a page that holds a token it should not use) would otherwise
reach agentweb as this site. A request without `Origin` is not a browser's cross-site
request (agents, curl) and passes this check.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from asgiref.sync import iscoroutinefunction
from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.utils.decorators import sync_and_async_middleware
from django.utils.html import format_html

from agentweb.site_names import host_refused, origin_refused

logger = logging.getLogger(__name__)
# A hook answers every request with a decision (a 400 would let the agent's tool run): it
# asks entry_refusal itself.
ANSWERS_ITSELF = "/api/hooks/"
PAGE = "<!doctype html>\n<title>Bad Request (400)</title>\n<h1>Bad Request (400)</h1>\n<p>{}</p>\n"


@dataclass(frozen=True)
class Refusal:
    """Why a request is refused, and the status the site's chain would answer."""

    status: int
    detail: str


def entry_refusal(request: HttpRequest) -> Refusal | None:
    """The Host check, then the Origin check; None when the request may go on."""
    refused_host = _refused_host(request)
    if refused_host is not None:
        return Refusal(400, refused_host)
    origin = request.META.get("HTTP_ORIGIN")
    if origin is not None and not _site_origin(request):
        return Refusal(403, origin_refused(origin))
    return None


@sync_and_async_middleware
def known_host(get_response: Callable[[HttpRequest], Any]) -> Callable[[HttpRequest], Any]:
    """The site's chain: a Host agentweb does not serve gets the page that says why."""
    if iscoroutinefunction(get_response):

        async def async_middleware(request: HttpRequest) -> Any:
            return _host_page(request) or await get_response(request)

        return async_middleware

    def middleware(request: HttpRequest) -> Any:
        return _host_page(request) or get_response(request)

    return middleware


def _host_page(request: HttpRequest) -> HttpResponse | None:
    """A 400 naming the setting: JSON with a `detail` under /api/, else a short page."""
    if request.path.startswith(ANSWERS_ITSELF):
        return None
    detail = _refused_host(request)
    if detail is None:
        return None
    if request.path.startswith("/api/"):
        body = json.dumps({"detail": detail})
        return HttpResponse(body, status=400, content_type="application/json")
    return HttpResponse(format_html(PAGE, detail), status=400)


def _refused_host(request: HttpRequest) -> str | None:
    """None when Django serves the request's Host; else the refusal, logged once."""
    try:
        request.get_host()
    except DisallowedHost:
        host = request.META.get("HTTP_HOST", "")
        logger.warning(
            "Refused %s %s for Host %r: agentweb serves %s (AGENTWEB_BASE_URL; "
            "DJANGO_ALLOWED_HOSTS adds other names)",
            request.method, request.path[:200], host[:200], settings.AGENTWEB_BASE_URL,
        )  # fmt: skip
        return host_refused(host)
    return None


def _site_origin(request: HttpRequest) -> bool:
    """The CSRF middleware's own test: this request's scheme and host, or an origin of
    CSRF_TRUSTED_ORIGINS (subdomain wildcards included)."""
    checker = CsrfViewMiddleware(lambda _request: HttpResponse())
    return bool(checker._origin_verified(request))  # type: ignore[attr-defined]  # Django's
