"""/healthz, /readyz and /metrics: unauthenticated probes that say nothing but yes or no,
and metrics behind a token (or off the site, on AGENTWEB_METRICS_ADDRESS)."""

from __future__ import annotations

import hmac

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST

from tools_app.ops import metrics, readiness


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """The process answers: nothing else is asked."""
    return JsonResponse({"alive": True})


@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    checks = readiness.readiness()
    ready = all(check.ok for check in checks.values())
    body = {"ready": ready, "checks": {name: check.as_dict() for name, check in checks.items()}}
    return JsonResponse(body, status=200 if ready else 503)


@never_cache
@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    """Off (404) unless AGENTWEB_METRICS_TOKEN is set; then only with it as a Bearer token."""
    token = settings.AGENTWEB_METRICS_TOKEN
    if not token:
        raise Http404
    sent = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
    if not hmac.compare_digest(sent.encode(), token.encode()):
        response = HttpResponse("a metrics token is required\n", status=401)
        response["WWW-Authenticate"] = "Bearer"
        return response
    return HttpResponse(metrics.exposition(), content_type=CONTENT_TYPE_LATEST)
