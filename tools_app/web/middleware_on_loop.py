"""Django's middleware for the site's async chain, each method that does no I/O called on
the event loop.

Django's own middleware (`MiddlewareMixin`) runs every `process_request`, `process_view`
and `process_response` of an async chain on the request's thread and back, one
loop-thread round trip each: an async REST view (`?wait`) paid about ten of them, 7 ms of
daphne's CPU on a slow machine (BENCHMARKS.md §17). Most of those methods only read the
request and set headers. `LOOP_SAFE` names them, with when each is safe: the session's
`process_response` saves only a changed session, the messages' only messages used or
added, and CSRF's read the session only with `CSRF_USE_SESSIONS`. Those and every
method not named still go to the thread.

The table is by exact class: a subclass may add I/O of its own. A method wrongly named
here fails loudly, never silently: Django refuses a database query on the loop
(`SynchronousOnlyOperation`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, sync_to_async
from django.conf import settings
from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.messages.middleware import MessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware
from django.http import HttpRequest
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.common import CommonMiddleware
from django.middleware.csrf import CsrfViewMiddleware
from django.middleware.security import SecurityMiddleware

Safe = Callable[[HttpRequest], bool]


def always(request: HttpRequest) -> bool:
    return True


def session_unchanged(request: HttpRequest) -> bool:
    """Nothing to save: `process_response` then reads flags and sets headers only."""
    session = getattr(request, "session", None)
    return session is None or not (session.modified or settings.SESSION_SAVE_EVERY_REQUEST)


def messages_untouched(request: HttpRequest) -> bool:
    """No message read or added: `process_response` then stores nothing."""
    storage = getattr(request, "_messages", None)
    return storage is None or not (storage.used or storage.added_new)


def csrf_in_cookie(request: HttpRequest) -> bool:
    """The token lives in a cookie, not in the session (a database read)."""
    return not settings.CSRF_USE_SESSIONS


LOOP_SAFE: dict[type, dict[str, Safe]] = {
    SecurityMiddleware: {"process_request": always, "process_response": always},
    # A session store reads the database when first used, not when made.
    SessionMiddleware: {"process_request": always, "process_response": session_unchanged},
    CommonMiddleware: {"process_request": always, "process_response": always},
    CsrfViewMiddleware: {
        "process_request": csrf_in_cookie,
        "process_view": csrf_in_cookie,
        "process_response": csrf_in_cookie,
    },
    # request.user is lazy: read later, by the view, which awaits request.auser().
    AuthenticationMiddleware: {"process_request": always},
    MessageMiddleware: {"process_request": always, "process_response": messages_untouched},
    XFrameOptionsMiddleware: {"process_response": always},
}


async def call(method: Callable[..., Any], safe: Safe, request: HttpRequest, *args: Any) -> Any:
    """`method(request, *args)` on the loop when `safe` says so, else on the request's
    thread as Django calls it."""
    if safe(request):
        return method(request, *args)
    return await sync_to_async(method, thread_sensitive=True)(request, *args)


class OnLoop:
    """MiddlewareMixin's async call (`__acall__`), its safe methods called on the loop."""

    loop_safe: dict[str, Safe] = {}
    get_response: Callable[[HttpRequest], Any]

    async def __acall__(self, request: HttpRequest) -> Any:
        response = None
        if hasattr(self, "process_request"):
            response = await self._call("process_request", request)
        response = response or await self.get_response(request)
        if hasattr(self, "process_response"):
            response = await self._call("process_response", request, response)
        return response

    async def _call(self, name: str, request: HttpRequest, *args: Any) -> Any:
        safe = self.loop_safe.get(name, never)
        return await call(getattr(self, name), safe, request, *args)


def never(request: HttpRequest) -> bool:
    return False


def on_loop(factory: Any) -> Any:
    """The middleware class to build for an async chain: `factory` itself, or, when
    `LOOP_SAFE` names it, its subclass whose safe methods run on the loop."""
    safe = LOOP_SAFE.get(factory)
    if safe is None:
        return factory
    return type(factory.__name__, (OnLoop, factory), {"loop_safe": safe})


def view_method(instance: Any) -> Callable[..., Any]:
    """The middleware's `process_view` for an async chain, on the loop where it is safe."""
    method = instance.process_view
    if iscoroutinefunction(method):
        return method  # type: ignore[no-any-return]
    safe = getattr(instance, "loop_safe", {}).get("process_view", never)

    async def process_view(request: HttpRequest, *args: Any) -> Any:
        return await call(method, safe, request, *args)

    return process_view
