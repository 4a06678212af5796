"""WhiteNoise's middleware, able to run in an async chain too.

WhiteNoise's own is sync only, and one sync-only middleware in an async chain sends the
rest of it, and the view, through a thread held until the answer: a held `?wait` held a
thread. This one looks its files up either way (a dict, or the disk when autorefresh is
on: then on a thread) and serves a file from a thread, where a file is opened.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.http import HttpRequest
from whitenoise.middleware import WhiteNoiseMiddleware


class StaticFiles(WhiteNoiseMiddleware):  # type: ignore[misc]  # WhiteNoise has no types
    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Any = None, **kwargs: Any) -> None:
        super().__init__(get_response, **kwargs)
        self.async_mode = iscoroutinefunction(get_response)
        if self.async_mode:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if self.async_mode:
            return self.__acall__(request)
        return super().__call__(request)

    async def __acall__(self, request: HttpRequest) -> Any:
        if self.autorefresh:
            static_file = await sync_to_async(self.find_file)(request.path_info)
        else:
            static_file = self.files.get(request.path_info)
        if static_file is not None:
            return await sync_to_async(self.serve)(static_file, request)
        return await self.get_response(request)
