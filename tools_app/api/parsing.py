"""What the REST API takes in: JSON bodies and query strings that every store can keep.

django-ninja parses bodies with `json.loads`, which accepts what PostgreSQL cannot
store (a lone surrogate, NUL), what is not JSON (NaN, Infinity) and what no walker
survives (10,000 nested lists), and turns every parse failure into a bare "Cannot
parse request body". `CheckedParser` parses strictly (see `tools.jsonsafe`) and
`install` answers its refusals as 400 with a `detail` that names the problem, so a
bad body is refused before any view runs and nothing is stored.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.utils.datastructures import MultiValueDict
from ninja import NinjaAPI
from ninja.errors import HttpError
from ninja.parser import Parser

from tools_app.core.tools.jsonsafe import UnsafeJSON, loads, printable, text_issue

BODY = "the request body"


class BadInput(HttpError):
    """A request the API refuses as it is: 400 and the reason."""

    def __init__(self, message: str) -> None:
        super().__init__(400, message)


class CheckedParser(Parser):
    """Strict JSON bodies and query strings without lone surrogates or NUL."""

    def parse_body(self, request: HttpRequest) -> dict[str, Any]:
        try:
            data = loads(request.body, name=BODY)
        except UnsafeJSON as exc:
            raise BadInput(str(exc)) from None
        if not isinstance(data, dict):
            raise BadInput(f"{BODY} must be a JSON object, not {_kind(data)}")
        return data

    def parse_querydict(
        self, data: MultiValueDict[str, Any], list_fields: list[str], request: HttpRequest
    ) -> dict[str, Any]:
        for key, values in data.lists():
            for text in (key, *values):
                issue = isinstance(text, str) and text_issue(text)
                if issue:
                    raise BadInput(f"the query parameter `{printable(key)}` {issue}")
        return super().parse_querydict(data, list_fields, request)


def install(api: NinjaAPI) -> None:
    """Parse with CheckedParser, check path parameters, answer refusals with their reason."""
    api.parser = CheckedParser()
    api.add_decorator(functools.partial(_checked_path, api), mode="view")

    @api.exception_handler(HttpError)
    def http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
        # ninja wraps any parse failure in "Cannot parse request body"; the cause says why.
        cause = exc.__cause__ if isinstance(exc.__cause__, BadInput) else exc
        return api.create_response(request, {"detail": str(cause)}, status=exc.status_code)


def _checked_path(api: NinjaAPI, run: Callable[..., Any]) -> Callable[..., Any]:
    """A path parameter with NUL (`/policies/%00`) is refused before a query could carry it."""

    def refusal(request: HttpRequest, params: dict[str, Any]) -> HttpResponse | None:
        for key, value in params.items():
            issue = isinstance(value, str) and text_issue(value)
            if issue:
                detail = f"the path parameter `{key}` {issue}"
                return api.create_response(request, {"detail": detail}, status=400)
        return None

    if inspect.iscoroutinefunction(run):

        async def checked_async(request: HttpRequest, **params: Any) -> Any:
            return refusal(request, params) or await run(request, **params)

        return checked_async

    def checked(request: HttpRequest, **params: Any) -> Any:
        return refusal(request, params) or run(request, **params)

    return checked


def _kind(value: object) -> str:
    names = {list: "a list", str: "a string", bool: "true or false", type(None): "null"}
    return names.get(type(value), "a number")
