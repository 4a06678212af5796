"""Refuse request bodies over the limit before anything reads them."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from asgiref.sync import iscoroutinefunction
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils.decorators import sync_and_async_middleware


def _too_big(request: HttpRequest) -> HttpResponse | None:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    declared = request.META.get("CONTENT_LENGTH") or "0"
    if limit is None or not declared.isdigit() or int(declared) <= limit:
        return None
    detail = {"detail": f"The request body is larger than {limit} bytes."}
    return HttpResponse(json.dumps(detail), status=413, content_type="application/json")


@sync_and_async_middleware
def body_size_limit(get_response: Callable[[HttpRequest], Any]) -> Callable[[HttpRequest], Any]:
    if iscoroutinefunction(get_response):

        async def async_middleware(request: HttpRequest) -> Any:
            return _too_big(request) or await get_response(request)

        return async_middleware

    def middleware(request: HttpRequest) -> Any:
        return _too_big(request) or get_response(request)

    return middleware
