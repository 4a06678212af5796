"""Django for the gateway's hook URLs alone (`/api/hooks/`), without the middleware chain.

A hook request is bearer-token JSON from an agent: never a browser, a cookie, a session,
a CSRF token or a static file, and it reads its own body with its own limit
(`api/hooks.py`). The site's chain starts with WhiteNoise, which is sync only, so under
daphne Django runs the whole chain in a thread and calls the async hook view back on
the event loop: two loop-thread hops on every hook event that a sync page does not pay
(BENCHMARKS.md, "The gateway's hook"). Here the view runs on the loop directly.

Django's request signals are left out too where they would do nothing but cost a thread:
`request_started` resets the queries and connections of the request's own thread, which
Django starts for the request and which has none yet; and a hook that ran no sync code on
that thread (an allowed or denied PreToolUse: its work runs on the judging threads, which
tidy their own connections, `ops/judging_threads.py`) has nothing for `request_finished`
to close. A request that did use its thread (a held wait's reads, the sync views of
`/api/hooks/check`) gets `request_finished` there, as in Django.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from asgiref.sync import SyncToAsync, sync_to_async
from django.core import signals
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.core.handlers.exception import convert_exception_to_response
from django.http import HttpRequest, HttpResponseBase
from django.urls import set_script_prefix

from tools_app.live import publisher

PREFIX = "/api/hooks/"


class HookHandler(ASGIHandler):
    """An ASGI Django whose chain is the view alone (what `load_middleware` builds from an
    empty MIDDLEWARE)."""

    def load_middleware(self, is_async: bool = False) -> None:
        self._view_middleware: list[Any] = []
        self._template_response_middleware: list[Any] = []
        self._exception_middleware: list[Any] = []
        respond = self._get_response_async  # type: ignore[attr-defined]  # Django has it
        self._middleware_chain = convert_exception_to_response(respond)

    async def handle(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Django's `ASGIHandler.handle` (the body read, the view cancelled when the client
        hangs up), less the request signals' thread hops (above)."""
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        set_script_prefix(get_script_prefix(scope))
        request, refused = self.create_request(scope, body_file)
        try:
            if request is None:
                assert refused is not None
                await self.send_response(refused, send)
                await self._finish(refused)
                return
            await self._finish(await self._respond_unless_gone(request, receive, send))
        finally:
            body_file.close()

    async def _respond_unless_gone(
        self, request: HttpRequest, receive: Any, send: Any
    ) -> HttpResponseBase | None:
        """The response sent, or None when the client went first (the view cancelled)."""

        async def respond() -> HttpResponseBase:
            response: HttpResponseBase = await self.run_get_response(request)
            with contextlib.suppress(asyncio.CancelledError):  # the client went meanwhile
                await self.send_response(response, send)
            return response

        gone = asyncio.create_task(self.listen_for_disconnect(receive))
        answered = asyncio.create_task(respond())
        await asyncio.wait([gone, answered], return_when=asyncio.FIRST_COMPLETED)
        for task in (gone, answered):
            task.cancel()  # the one still running: the view when the client went first
        await asyncio.wait([gone, answered])
        # Each outcome is looked at, never raised here: a RequestAborted raised into this
        # frame would tie it, its tasks and the request into a cycle that only the
        # garbage collector frees (80 objects a hook; its full passes took up to 190 ms).
        hung_up = None if gone.cancelled() else gone.exception()
        if hung_up is not None and not isinstance(hung_up, RequestAborted):
            raise hung_up  # an ASGI message out of order (Django's own assertion)
        return None if answered.cancelled() else answered.result()

    async def _finish(self, response: HttpResponseBase | None) -> None:
        """Django's end of a request, on the request's thread, if the request made one (or
        the response streams, whose iterator may hold something to close)."""
        context = SyncToAsync.thread_sensitive_context.get(None)
        made_a_thread = context is not None and context in SyncToAsync.context_to_thread_executor
        if response is not None and (made_a_thread or response.streaming):
            await sync_to_async(response.close)()
        elif made_a_thread:
            await signals.request_finished.asend(sender=self.__class__)


class WithHooks:
    """Route `/api/hooks/…` to the lean handler, every other request to `site`."""

    def __init__(self, site: Any) -> None:
        self.site = site
        self.hooks = HookHandler()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        publisher.adopt_running_loop()  # the server's loop publishes this process's events
        if scope["type"] == "http" and str(scope.get("path", "")).startswith(PREFIX):
            await self.hooks(scope, receive, send)
            return
        await self.site(scope, receive, send)
