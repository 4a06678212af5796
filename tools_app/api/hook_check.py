"""The developer's side of the hook: `GET /api/hooks/check` and the hook to download.

Both sit under /api/hooks/, which the site's Host check leaves to each view (a hook must
answer with a decision): they ask `entry_refusal` themselves. The download needs no
login: it is public code and holds no secret. The check needs an agent's bearer token,
the one the hook would send.
"""

from __future__ import annotations

from pathlib import Path

from django.http import HttpRequest, HttpResponse, JsonResponse

import agentweb_hook
from tools_app.api.entry_checks import entry_refusal
from tools_app.errors import ServiceError
from tools_app.services import connection_check as check
from tools_app.services import tokens

HOOK_SOURCE = Path(agentweb_hook.__file__)
# What to send: not a secret.
NO_TOKEN = "Send `Authorization: Bearer TOKEN`, an agent token (AGENTWEB_TOKEN)."  # noqa: S105


def hook_check(request: HttpRequest) -> JsonResponse:
    """`?policy=NAME&agent=claude-code|codex|gemini` → the report of
    `services.connection_check`; 401 for a missing or bad token, 404 for no such policy."""
    refused = _refused(request, ("GET",))
    if refused is not None:
        return refused
    scheme, _, value = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return _error(NO_TOKEN, 401)
    token = tokens.api_token_verify(token=value.strip())
    if isinstance(token, str):
        return _error(f"The bearer token is not valid: {token}.", 401)
    try:
        report = check.connection_check(
            token=token,
            policy_name=request.GET.get("policy") or "default",
            agent=request.GET.get("agent") or "claude-code",
            user_agent=request.headers.get("User-Agent", ""),
        )
    except ServiceError as exc:
        return _error(str(exc), exc.status)
    return JsonResponse(report, headers=check.hook_version_headers())


def hook_download(request: HttpRequest) -> HttpResponse:
    """The hook as one standard-library file with a `python3` shebang: saved as
    `agentweb-hook` and made executable, it is the command."""
    refused = _refused(request, ("GET", "HEAD"))
    if refused is not None:
        return refused
    headers = {
        **check.hook_version_headers(),
        "Content-Disposition": 'inline; filename="agentweb-hook.py"',
        "X-Content-Type-Options": "nosniff",
    }
    body = HOOK_SOURCE.read_bytes()
    return HttpResponse(body, content_type="text/x-python; charset=utf-8", headers=headers)


def _refused(request: HttpRequest, methods: tuple[str, ...]) -> JsonResponse | None:
    refusal = entry_refusal(request)
    if refusal is not None:
        return _error(refusal.detail, refusal.status)
    if request.method not in methods:
        answer = _error(f"Use {' or '.join(methods)} here, not {request.method}.", 405)
        answer["Allow"] = ", ".join(methods)
        return answer
    return None


def _error(detail: str, status: int) -> JsonResponse:
    return JsonResponse({"detail": detail}, status=status)
