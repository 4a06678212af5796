"""A server set up for https://agentweb.example.com answers to that name and nothing else,
and a refused Host says which setting to change, on the page, in the API and in the log.

The settings are those that agentweb/settings.py derives from AGENTWEB_BASE_URL (the
derivation itself: tests/unit/test_site_names.py; a real daphne on a non-loopback address:
tests/agents/test_reachable_by_name.py)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from django.test import Client

from agentweb.site_names import site_names

pytestmark = pytest.mark.django_db

BASE_URL = "https://agentweb.example.com"


@pytest.fixture(autouse=True)
def public_site(settings: Any) -> None:
    site = site_names(BASE_URL)
    settings.AGENTWEB_BASE_URL = BASE_URL
    settings.ALLOWED_HOSTS = site.allowed_hosts
    settings.CSRF_TRUSTED_ORIGINS = site.trusted_origins


def test_the_configured_name_is_served() -> None:
    assert Client().get("/login/", HTTP_HOST="agentweb.example.com").status_code == 200


@pytest.mark.parametrize("host", ["10.20.30.1:8000", "localhost", "agentweb.example.com.evil.io"])
def test_another_host_gets_a_page_that_names_the_setting(
    host: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="tools_app"):
        answer = Client().get("/login/", HTTP_HOST=host)
    assert answer.status_code == 400
    page = answer.content.decode()
    assert f"The Host header &#x27;{host}&#x27; is not a name agentweb serves" in page
    assert "AGENTWEB_BASE_URL: set it to the URL people use" in page
    [record] = [r for r in caplog.records if r.name == "tools_app.api.entry_checks"]
    assert record.levelno == logging.WARNING
    assert record.exc_info is None  # one line, no traceback
    line = record.getMessage()
    assert f"Host {host!r}" in line
    assert f"agentweb serves {BASE_URL} (AGENTWEB_BASE_URL" in line


def test_a_refused_host_is_escaped_on_the_page() -> None:
    answer = Client().get("/", HTTP_HOST="<b>x</b>")
    assert answer.status_code == 400
    assert b"<b>" not in answer.content


def test_the_api_answers_a_refused_host_with_a_json_detail() -> None:
    answer = Client().get("/api/sessions", HTTP_HOST="10.20.30.1")
    assert answer.status_code == 400
    assert "AGENTWEB_BASE_URL" in answer.json()["detail"]


def test_debug_mode_shows_the_same_page(settings: Any) -> None:
    settings.DEBUG = True
    answer = Client().get("/login/", HTTP_HOST="10.20.30.1")
    assert answer.status_code == 400
    assert b"AGENTWEB_BASE_URL" in answer.content


def login_post(origin: str) -> int:
    """The login form posted with its CSRF token, from a page of `origin`, over plain HTTP
    as a TLS-terminating proxy passes it on."""
    client = Client(enforce_csrf_checks=True, HTTP_HOST="agentweb.example.com")
    client.get("/login/")
    token = client.cookies["csrftoken"].value
    form = {"username": "nobody", "password": "wrong", "csrfmiddlewaretoken": token}
    return client.post("/login/", form, HTTP_ORIGIN=origin).status_code


def test_a_form_from_the_base_urls_origin_passes_the_csrf_check() -> None:
    assert login_post(BASE_URL) == 200  # the form again, with "wrong password"


@pytest.mark.parametrize("origin", ["https://evil.example", "http://agentweb.example.com:8080"])
def test_a_form_from_another_origin_is_refused(origin: str) -> None:
    assert login_post(origin) == 403
