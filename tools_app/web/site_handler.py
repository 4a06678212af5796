"""Django's ASGI handler for the site's pages and REST API: a sync view's request enters
its thread once, and an async view's holds no thread while it waits.

Under ASGI Django builds the middleware chain for an async handler: each middleware that
can run either way runs async, and Django's own (`MiddlewareMixin`) then sends every
`process_request`, `process_view` and `process_response` to the request's thread and
back, one loop-thread round trip each; a sync view goes there once more. About a dozen
round trips: a REST GET cost daphne 10 ms of CPU and `/healthz` 4.6 (BENCHMARKS.md §17).
So a request whose view is sync gets the chain as WSGI builds it, sync from end to end,
entered on the request's thread once: the middleware and the view run there as plain
calls.

A request whose view is async (the REST API's `?wait`, which may wait minutes for a
person) gets Django's async chain: its round trips are few beside its wait, and between
them it holds no thread (`live/waiting.py` ends the request's idle thread while it
waits). Through the sync chain the thread would wait with it, one per held `?wait`.
Every middleware runs either way (`web/static_files.py` for WhiteNoise's).

The hook URLs and `/mcp` have lean handlers of their own (`api/hook_handler.py`,
`api/mcp_http.py`) and never reach this one.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import iscoroutinefunction, sync_to_async
from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.base import BaseHandler
from django.http import HttpRequest, HttpResponseBase
from django.urls import Resolver404, get_resolver


class AsyncChain(BaseHandler):
    """Django's chain as its ASGI handler builds it, for the requests of async views."""

    def __init__(self) -> None:
        super().__init__()
        self.load_middleware(is_async=True)


class SiteHandler(ASGIHandler):
    """Django's ASGIHandler, each request given the chain its view runs best in."""

    def __init__(self) -> None:
        super().__init__()
        self.async_views = AsyncChain()

    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async=False)

    async def get_response_async(self, request: HttpRequest) -> HttpResponseBase:
        if view_is_async(request):
            return await self.async_views.get_response_async(request)
        respond: Any = sync_to_async(self.get_response, thread_sensitive=True)
        response: HttpResponseBase = await respond(request)
        return response


def view_is_async(request: HttpRequest) -> bool:
    """Whether the URL's view is a coroutine function (an unknown URL's 404 is not)."""
    try:
        match = get_resolver().resolve(request.path_info)
    except Resolver404:
        return False
    return iscoroutinefunction(match.func)
