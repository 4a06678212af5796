"""The layout every page shares: navigation, the pending-approvals counter, static files."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.http import HttpResponse
from django.test import Client, RequestFactory
from django.utils import timezone

from tools_app.models import AgentSession, Policy, ToolCall
from tools_app.web.static_files import StaticFiles

pytestmark = pytest.mark.django_db

PAGES = ("/approvals/", "/sessions/", "/sessions/new/")


def browser(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def two_waiting(creator: User) -> list[ToolCall]:
    session = AgentSession.objects.create(
        task="t", repo="r", workspace="w", policy=Policy.objects.get(name="default"),
        creator=creator, status=AgentSession.Status.WAITING,
    )  # fmt: skip
    deadline = timezone.now() + timedelta(hours=1)
    status = ToolCall.Status.AWAITING_APPROVAL
    return [
        ToolCall.objects.create(
            session=session,
            tool="write_file",
            status=status,
            args={"path": f"f{n}"},
            expires_at=deadline,
        )
        for n in range(2)
    ]


@pytest.mark.parametrize("path", PAGES)
def test_every_page_has_the_navigation_and_a_skip_link(creator: User, path: str) -> None:
    page = browser(creator).get(path).content.decode()
    for link in ("Approvals", "Sessions", "New session", "API"):
        assert f">{link}</a>" in page
    assert 'href="#main">Skip to content</a>' in page
    assert 'id="main"' in page
    assert "Log out alice</button>" in page
    assert "/static/agentweb/app.css" in page


def test_only_staff_see_the_admin_link(creator: User, superuser: User) -> None:
    assert ">Admin</a>" not in browser(creator).get("/sessions/").content.decode()
    assert ">Admin</a>" in browser(superuser).get("/sessions/").content.decode()


def test_a_reviewer_sees_the_pending_count_in_the_header_and_the_title(
    reviewer: User, two_waiting: list[ToolCall]
) -> None:
    page = browser(reviewer).get("/approvals/").content.decode()
    assert "<title>(2) Approvals · agentweb</title>" in page
    assert 'id="pending-count" aria-live="polite" data-count="2"><span class="count">2' in page
    assert 'data-approvals-socket="/ws/approvals/"' in page
    assert 'id="notify-toggle"' in page


def test_who_does_not_decide_gets_no_counter_and_no_socket(
    creator: User, two_waiting: list[ToolCall]
) -> None:
    page = browser(creator).get("/approvals/").content.decode()
    assert "<title>Approvals · agentweb</title>" in page
    assert "pending-count" not in page
    assert "data-approvals-socket" not in page


def test_the_login_page_needs_no_login_and_shows_no_counter(client: Client) -> None:
    page = client.get("/login/").content.decode()
    assert "<title>Log in · agentweb</title>" in page
    assert "pending-count" not in page


def test_collectstatic_gathers_the_assets_for_whitenoise(tmp_path: Path, settings) -> None:
    settings.STATIC_ROOT = tmp_path / "static"
    call_command("collectstatic", interactive=False, verbosity=0)
    for name in ("app.css", "live.js", "session.js"):
        assert (tmp_path / "static" / "agentweb" / name).is_file()
        assert (tmp_path / "static" / "agentweb" / f"{name}.gz").is_file()
    assert "tools_app.web.static_files.StaticFiles" in settings.MIDDLEWARE  # WhiteNoise's
    request = RequestFactory().get("/static/agentweb/app.css", HTTP_ACCEPT_ENCODING="gzip")
    served = StaticFiles(lambda request: HttpResponse(status=404))(request)
    assert (served.status_code, served["Content-Encoding"]) == (200, "gzip")


def test_daphne_serves_the_assets_without_collectstatic() -> None:
    """What `up` runs: the ASGI application answers /static/ itself (from the finders)."""
    from asgiref.sync import async_to_sync
    from asgiref.testing import ApplicationCommunicator

    from agentweb.asgi import application

    async def get(path: str) -> tuple[int, bytes]:
        scope = {
            "type": "http", "method": "GET", "path": path, "query_string": b"",
            "headers": [(b"host", b"localhost")], "scheme": "http", "http_version": "1.1",
            "server": ("127.0.0.1", 8000), "client": ("127.0.0.1", 5000),
        }  # fmt: skip
        app = ApplicationCommunicator(application, scope)
        await app.send_input({"type": "http.request", "body": b""})
        start = await app.receive_output(5)
        body = await app.receive_output(5)
        return start["status"], body["body"]

    status, body = async_to_sync(get)("/static/agentweb/app.css")
    assert status == 200
    assert b"prefers-color-scheme: dark" in body


def test_whitenoise_serves_the_collected_assets(tmp_path: Path, settings) -> None:
    settings.STATIC_ROOT = tmp_path / "static"
    call_command("collectstatic", interactive=False, verbosity=0)
    answer = Client().get("/static/agentweb/app.css", HTTP_ACCEPT_ENCODING="gzip")
    assert answer.status_code == 200
    assert answer["Content-Encoding"] == "gzip"
