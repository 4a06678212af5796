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
person) gets Django's async chain, and holds no thread while it waits (`live/waiting.py`
ends the request's idle thread). Through the sync chain the thread would wait with it, one
per held `?wait`. In that chain the middleware's methods that do no I/O run on the loop
(`web/middleware_on_loop.py`), so such a request enters a thread only for what needs one.
Every middleware runs either way (`web/static_files.py` for WhiteNoise's).

The hook URLs and `/mcp` have lean handlers of their own (`api/hook_handler.py`,
`api/mcp_http.py`) and never reach this one.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import iscoroutinefunction, sync_to_async
from django.conf import settings
from django.core.exceptions import MiddlewareNotUsed
from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.base import BaseHandler
from django.core.handlers.exception import convert_exception_to_response
from django.http import HttpRequest, HttpResponseBase
from django.urls import Resolver404, get_resolver
from django.utils.module_loading import import_string

from tools_app.web.middleware_on_loop import on_loop, view_method


class AsyncChain(BaseHandler):
    """Django's chain as its ASGI handler builds it, for the requests of async views, with
    the middleware's methods that do no I/O called on the loop (`middleware_on_loop`)."""

    def __init__(self) -> None:
        super().__init__()
        self.load_middleware(is_async=True)

    def load_middleware(self, is_async: bool = True) -> None:
        """`BaseHandler.load_middleware(is_async=True)`, each class made by `on_loop` and
        each `process_view` by `view_method`."""
        self._view_middleware: list[Any] = []
        self._template_response_middleware: list[Any] = []
        self._exception_middleware: list[Any] = []
        inner = self._get_response_async  # type: ignore[attr-defined]  # not in the stubs
        handler: Any = convert_exception_to_response(inner)
        handler_is_async = True
        for path in reversed(settings.MIDDLEWARE):
            factory = on_loop(import_string(path))
            can_sync = getattr(factory, "sync_capable", True)
            runs_async = getattr(factory, "async_capable", False) and (
                handler_is_async or not can_sync
            )
            adapted = self.adapt_method_mode(
                runs_async, handler, handler_is_async, name=f"middleware {path}"
            )
            try:
                instance = factory(adapted)
            except MiddlewareNotUsed:
                continue
            self._add_methods(instance)
            handler, handler_is_async = convert_exception_to_response(instance), runs_async
        self._middleware_chain = self.adapt_method_mode(True, handler, handler_is_async)

    def _add_methods(self, instance: Any) -> None:
        if hasattr(instance, "process_view"):
            self._view_middleware.insert(0, view_method(instance))
        if hasattr(instance, "process_template_response"):
            method = instance.process_template_response
            self._template_response_middleware.append(self.adapt_method_mode(True, method))
        if hasattr(instance, "process_exception"):  # always sync, as Django has it
            method = instance.process_exception
            self._exception_middleware.append(self.adapt_method_mode(False, method))


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
