"""The site's pages and REST API through agentweb's ASGI application (`web/site_handler.py`):
a sync view's request gets the chain as WSGI builds it, an async view's Django's async
chain. Sessions, CSRF, login and the REST API work through both, and held `?wait`s hold
no thread while they wait."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import re
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import SyncToAsync, async_to_sync, iscoroutinefunction
from channels.testing import HttpCommunicator
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session
from django.core.handlers.asgi import ASGIRequest
from django.core.handlers.base import BaseHandler
from django.http import HttpResponse
from django.test import RequestFactory
from django.utils import timezone
from django.utils.module_loading import import_string

from agentweb.asgi import application
from tools_app import services
from tools_app.models import AgentSession, Policy, ToolCall
from tools_app.web.middleware_on_loop import on_loop
from tools_app.web.site_handler import SiteHandler
from tools_app.web.static_files import StaticFiles

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


def test_a_sync_view_gets_a_sync_chain_and_an_async_view_an_async_one() -> None:
    handler = SiteHandler()
    assert not iscoroutinefunction(getattr(handler, "_middleware_chain"))  # noqa: B009
    assert iscoroutinefunction(getattr(handler.async_views, "_middleware_chain"))  # noqa: B009


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


def test_held_waits_hold_no_thread_while_they_wait(workspace: Path, creator: User) -> None:
    session = AgentSession.objects.create(
        task="work", repo=str(workspace), workspace=str(workspace), creator=creator,
        status=AgentSession.Status.RUNNING, policy=Policy.objects.get(name="default"),
    )  # fmt: skip
    waiting = {
        "tool": "write_file", "args": {"path": ".env", "content": "A=1\n"},
        "status": ToolCall.Status.AWAITING_APPROVAL, "verdict": "require_approval",
        "expires_at": timezone.now() + timedelta(hours=1),
    }  # fmt: skip
    calls = [ToolCall.objects.create(session=session, **waiting) for _ in range(12)]
    token = services.api_token_create(user=creator, scope="agent")
    bearer = (b"authorization", f"Bearer {token}".encode())

    async def hold() -> tuple[int, list[Any]]:
        paths = [f"/api/tool-calls/{call.pk}?wait=4" for call in calls]
        talks = [HttpCommunicator(application, "GET", p, b"", [HOST, bearer]) for p in paths]
        answers = [asyncio.ensure_future(talk.get_response(timeout=30)) for talk in talks]
        await asyncio.sleep(2)  # every wait is held now
        held = threading.active_count()
        return held, await asyncio.gather(*answers)

    before = threading.active_count()
    held, answers = async_to_sync(hold)()
    statuses = {(a["status"], json.loads(a["body"])["status"]) for a in answers}
    assert statuses == {(200, "awaiting_approval")}
    assert held - before <= 4, f"{held - before} threads more while 12 waits were held"


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_static_files_are_served_in_either_chain(tmp_path: Path, settings: Any, mode: str) -> None:
    (tmp_path / "agentweb").mkdir()
    (tmp_path / "agentweb" / "app.css").write_text("body { color: teal }\n")
    settings.STATIC_ROOT = tmp_path
    settings.WHITENOISE_AUTOREFRESH = False
    passed: list[str] = []

    def sync_next(request: Any) -> Any:
        passed.append(request.path)
        return HttpResponse("the view")

    async def async_next(request: Any) -> Any:
        return sync_next(request)

    middleware = StaticFiles(sync_next if mode == "sync" else async_next)
    assert middleware.async_mode is (mode == "async")

    def ask(path: str) -> Any:
        answer = middleware(RequestFactory().get(path))
        if mode == "sync":
            return answer

        async def awaited() -> Any:
            return await answer

        return async_to_sync(awaited)()

    served = ask("/static/agentweb/app.css")
    assert served.status_code == 200
    assert b"".join(served.streaming_content) == b"body { color: teal }\n"
    assert served["Content-Type"].startswith("text/css")
    assert ask("/sessions/").content == b"the view" and passed == ["/sessions/"]


def thread_hops(monkeypatch: Any) -> list[str]:
    """Every call asgiref sends from the loop to a thread, by the called function's name."""
    hops: list[str] = []
    entered = SyncToAsync.__call__

    async def counted(self: SyncToAsync, *args: Any, **kwargs: Any) -> Any:
        hops.append(getattr(self.func, "__qualname__", repr(self.func)))
        return await entered(self, *args, **kwargs)

    monkeypatch.setattr(SyncToAsync, "__call__", counted)
    return hops


def test_an_async_view_s_middleware_enters_a_thread_only_for_what_needs_one(
    monkeypatch: Any, creator: User
) -> None:
    """The same REST `?wait` through Django's own async chain and through agentweb's: the
    same answer, and ten round trips to a thread fewer (every `process_*` of the
    middleware but the view's own work)."""
    session = AgentSession.objects.create(
        task="t", repo="/r", workspace="/r", creator=creator,
        policy=Policy.objects.get(name="default"),
    )  # fmt: skip
    call = ToolCall.objects.create(
        session=session, tool="read_file", args={"path": "a"},
        status=ToolCall.Status.SUCCEEDED, verdict="allow",
    )  # fmt: skip
    token = services.api_token_create(user=creator, scope="agent")
    bearer = [(b"authorization", f"Bearer {token}".encode())]
    path = f"/api/tool-calls/{call.pk}?wait=1"
    django_s = BaseHandler()
    django_s.load_middleware(is_async=True)
    hops = thread_hops(monkeypatch)

    def asked(chain: Any) -> tuple[int, bytes, list[str]]:
        hops.clear()
        request = ASGIRequest({"type": "http", "method": "GET", "path": path.split("?")[0],
                               "query_string": path.split("?")[1].encode(),
                               "headers": [HOST, *bearer]}, io.BytesIO())  # fmt: skip
        response = async_to_sync(chain.get_response_async)(request)
        return response.status_code, response.content, list(hops)

    status, body, theirs = asked(django_s)
    assert status == 200 and json.loads(body)["status"] == "succeeded"
    assert asked(SiteHandler().async_views)[:2] == (status, body)
    ours = asked(SiteHandler().async_views)[2]
    assert sum("process_" in hop for hop in theirs) >= 10, theirs
    assert not [hop for hop in ours if "process_" in hop], ours
    assert len(ours) <= len(theirs) - 10, (ours, theirs)


def test_a_changed_session_and_added_messages_are_still_saved_on_the_thread() -> None:
    """An async view that changes the session and adds a message: the chain saves them
    on the request's thread (on the loop, Django would refuse the session's write)."""

    async def view(request: Any) -> HttpResponse:
        request.session["seen"] = "yes"
        messages.info(request, "noted")
        return HttpResponse("ok")

    chain: Any = view
    for path in reversed(settings.MIDDLEWARE):
        chain = on_loop(import_string(path))(chain)
    request = RequestFactory().get("/anything", HTTP_HOST="127.0.0.1:8000")
    response = async_to_sync(chain)(request)
    assert response.status_code == 200
    key = response.cookies["sessionid"].value
    assert Session.objects.get(session_key=key).get_decoded()["seen"] == "yes"
    signed = response.cookies["messages"].value.split(":")[0]
    assert "noted" in base64.urlsafe_b64decode(signed + "==").decode()
