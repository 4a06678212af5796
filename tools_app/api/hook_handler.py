"""Django for the gateway's hook URLs alone (`/api/hooks/`), without the middleware chain.

A hook request is bearer-token JSON from an agent: never a browser, a cookie, a session,
a CSRF token or a static file, and it reads its own body with its own limit
(`api/hooks.py`). The site's chain starts with WhiteNoise, which is sync only, so under
daphne Django runs the whole chain in a thread and calls the async hook view back on
the event loop: two loop-thread hops on every hook event that a sync page does not pay
(BENCHMARKS.md, "The gateway's hook"). Here the view runs on the loop directly.
"""

from __future__ import annotations

from typing import Any

from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.exception import convert_exception_to_response

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


class WithHooks:
    """Route `/api/hooks/…` to the lean handler, every other request to `site`."""

    def __init__(self, site: Any) -> None:
        self.site = site
        self.hooks = HookHandler()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and str(scope.get("path", "")).startswith(PREFIX):
            await self.hooks(scope, receive, send)
            return
        await self.site(scope, receive, send)
