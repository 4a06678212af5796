"""The site's pages and REST API through agentweb's ASGI application, whose Django chain is
built as WSGI builds it (`web/site_handler.py`): sync from end to end, entered on the
request's thread once. Sessions, CSRF, login and an async REST view (called back on the
loop from that thread) work through it as through Django's own handler."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from asgiref.sync import async_to_sync, iscoroutinefunction
from channels.testing import HttpCommunicator
from django.contrib.auth.models import User

from agentweb.asgi import application
from tools_app import services
from tools_app.web.site_handler import SiteHandler

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

PASSWORD = "a-long-password"
HOST = (b"host", b"127.0.0.1:8000")


def http(method: str, path: str, body: bytes = b"", headers: list[Any] | None = None) -> Any:
    async def send() -> Any:
        talk = HttpCommunicator(application, method, path, body, [HOST, *(headers or [])])
        return await talk.get_response(timeout=30)

    return async_to_sync(send)()


def cookies(answer: dict[str, Any]) -> dict[str, str]:
    found = {}
    for name, value in answer["headers"]:
        if name.lower() == b"set-cookie":
            key, _, rest = value.decode().partition("=")
            found[key] = rest.split(";")[0]
    return found


def test_the_sites_chain_is_sync_from_end_to_end() -> None:
    assert not iscoroutinefunction(SiteHandler()._middleware_chain)


def test_a_person_signs_in_and_reads_a_page_through_the_asgi_app() -> None:
    User.objects.create_user("rosa", password=PASSWORD)
    page = http("GET", "/login/")
    assert page["status"] == 200
    token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page["body"])
    assert token
    csrf = cookies(page)["csrftoken"]
    form = f"username=rosa&password={PASSWORD}&csrfmiddlewaretoken={token.group(1).decode()}"
    form_headers = [(b"content-type", b"application/x-www-form-urlencoded"),
                    (b"cookie", f"csrftoken={csrf}".encode())]  # fmt: skip
    signed_in = http("POST", "/login/", form.encode(), form_headers)
    assert signed_in["status"] == 302
    session = cookies(signed_in)["sessionid"]
    jar = [(b"cookie", f"csrftoken={csrf}; sessionid={session}".encode())]
    assert http("GET", "/sessions/", headers=jar)["status"] == 200
    forged = http("POST", "/login/", form.encode(), form_headers[:1])  # no CSRF cookie
    assert forged["status"] == 403


def test_an_async_rest_view_answers_through_the_sync_chain() -> None:
    user = User.objects.create_user("olga")
    token = services.api_token_create(user=user, scope="agent")
    bearer = [(b"authorization", f"Bearer {token}".encode())]
    missing = http("GET", "/api/tool-calls/999999?wait=1", headers=bearer)
    assert missing["status"] == 404
    assert json.loads(missing["body"])["detail"]
    assert http("GET", "/api/sessions", headers=bearer)["status"] == 200
    assert http("GET", "/api/sessions")["status"] == 401
