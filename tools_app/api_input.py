"""What the REST API takes in: JSON bodies and query strings that every store can keep.

django-ninja parses bodies with `json.loads`, which accepts what PostgreSQL cannot
store (a lone surrogate, NUL), what is not JSON (NaN, Infinity) and what no walker
survives (10,000 nested lists), and turns every parse failure into a bare "Cannot
parse request body". `CheckedParser` parses strictly (see `tools.jsonsafe`) and
`install` answers its refusals as 400 with a `detail` that names the problem, so a
bad body is refused before any view runs and nothing is stored.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.utils.datastructures import MultiValueDict
from ninja import NinjaAPI
from ninja.errors import HttpError
from ninja.parser import Parser

from tools_app.tools.jsonsafe import UnsafeJSON, loads, text_problem

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
                found = isinstance(text, str) and text_problem(text, f"query parameter {key}")
                if found:
                    raise BadInput(found)
        return super().parse_querydict(data, list_fields, request)


def install(api: NinjaAPI) -> None:
    """Parse with CheckedParser and answer its refusals with their own message."""
    api.parser = CheckedParser()

    @api.exception_handler(HttpError)
    def http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
        # ninja wraps any parse failure in "Cannot parse request body"; the cause says why.
        cause = exc.__cause__ if isinstance(exc.__cause__, BadInput) else exc
        return api.create_response(request, {"detail": str(cause)}, status=exc.status_code)


def _kind(value: object) -> str:
    names = {list: "a list", str: "a string", bool: "true or false", type(None): "null"}
    return names.get(type(value), "a number")
