"""Django's ASGI handler for the site's pages and REST API, its middleware chain run on one
thread in one hop.

Under ASGI Django builds the chain for an async handler: each middleware that can run
either way runs async, and Django's own (`MiddlewareMixin`) then sends every
`process_request`, `process_view` and `process_response` to the request's thread and
back, one loop-thread round trip each; WhiteNoise, sync only, takes the chain to the
thread and back once more, and a sync view goes there a last time. About fourteen round
trips a request: a REST GET cost daphne 10 ms of CPU and `/healthz` 4.6 (BENCHMARKS.md
§17). Built as WSGI builds it, the chain is sync from end to end: the request goes to its
thread once, where the middleware and a sync view run as plain calls. An async view (the
REST API's `?wait`) is called back on the loop from that thread, as WhiteNoise's
place in the chain already made it do.

The hook URLs and `/mcp` have lean handlers of their own (`api/hook_handler.py`,
`api/mcp_http.py`) and never reach this one.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIHandler
from django.http import HttpRequest, HttpResponseBase


class SiteHandler(ASGIHandler):
    """Django's ASGIHandler with WSGI's chain, entered on the request's thread."""

    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async=False)

    async def get_response_async(self, request: HttpRequest) -> HttpResponseBase:
        respond: Any = sync_to_async(self.get_response, thread_sensitive=True)
        response: HttpResponseBase = await respond(request)
        return response
