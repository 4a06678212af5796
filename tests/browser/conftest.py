"""Browser tests: Playwright drives Debian's Chromium against a live agentweb.

The live server is daphne (HTTP and websockets) in a subprocess, on the same test
database and Redis as the `stack` fixture's Celery worker. Rita and Rex are reviewers,
Charlie has an account and nothing else; Alice's agent speaks to the REST API with an
agent token. Screenshots are left in `var/screenshots/`."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.db import connection

from tests.browser.layout import checked_contexts
from tests.browser.server import PASSWORD, Agent, Daphne
from tests.helpers import ROOT, Worker
from tools_app import services
from tools_app.models import Policy

CHROMIUM = Path(os.environ.get("AGENTWEB_TEST_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
]
SCREENSHOTS = ROOT / "var" / "screenshots"
SERIALIZED: list[str] = []  # the test database's rows as the migrations left them


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if SCREENSHOTS.is_dir() and any(SCREENSHOTS.iterdir()):
        terminalreporter.write_line(f"browser screenshots: {SCREENSHOTS}")


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    """One headless Chromium for the browser tests, launched by its path: nothing is
    downloaded. Skips when Chromium or Playwright is missing."""
    if not CHROMIUM.exists():
        pytest.skip(f"no Chromium at {CHROMIUM}: `make test` installs Debian's chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("Playwright for Python is not installed (pip install -e '.[dev]')")
    # Playwright's sync API runs an event loop in this thread; the ORM calls that the
    # fixtures make between its calls are still plain synchronous code.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    SERIALIZED[:] = [getattr(connection, "_test_serialized_contents", "")]
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        yield chromium
        chromium.close()
    if previous is None:
        os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    else:
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture(autouse=True)
def migrated_rows(browser: Any) -> None:
    """Serialized rollback, as Django does it, on the connection these tests see.

    Under Playwright's greenlets the test sees another connection object than the one
    the test database was made on, without the rows serialized then: Django would not
    put back the migrations' rows (the `default` policy) before the test, and its flush
    after the test would re-create content types that the next test's rollback adds
    again. Giving this connection the same serialized rows fixes both."""
    if SERIALIZED[0] and not hasattr(connection, "_test_serialized_contents"):
        connection._test_serialized_contents = SERIALIZED[0]  # type: ignore[attr-defined]
    if SERIALIZED[0] and not Policy.objects.exists():
        connection.creation.deserialize_db_from_string(SERIALIZED[0])


@pytest.fixture(scope="session")
def live_server_url(stack: Worker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """daphne on a free port of 127.0.0.1, with the worker's database, Redis and queues,
    reached at its own URL (AGENTWEB_BASE_URL: what the Connect page tells agents)."""
    log = tmp_path_factory.mktemp("daphne") / "daphne.log"
    server = Daphne({**stack.env, "DJANGO_DEBUG": "0"}, log)
    server.env["AGENTWEB_BASE_URL"] = server.url
    server.start()
    yield server.url
    server.stop()


@pytest.fixture(scope="session")
def screenshots() -> Path:
    """The folder the screenshots are left in, emptied once a run."""
    shutil.rmtree(SCREENSHOTS, ignore_errors=True)
    SCREENSHOTS.mkdir(parents=True)
    return SCREENSHOTS


def _reviewer(username: str) -> User:
    user = User.objects.create_user(username, password=PASSWORD)
    user.groups.add(Group.objects.get_or_create(name="reviewers")[0])
    return user


@pytest.fixture
def reviewer() -> User:
    """Rita is a reviewer."""
    return _reviewer("rita")


@pytest.fixture
def second_reviewer() -> User:
    """Rex is a reviewer too."""
    return _reviewer("rex")


@pytest.fixture
def outsider() -> User:
    """Charlie has an account and nothing else."""
    return User.objects.create_user("charlie", password=PASSWORD)


@pytest.fixture
def agent(live_server_url: str) -> Iterator[Agent]:
    """Alice's agent: an agent token, spoken over HTTP to the live server."""
    alice = User.objects.create_user("alice")
    client = Agent(live_server_url, services.api_token_create(user=alice, scope="agent"))
    yield client
    client.http.close()


@pytest.fixture
def log_in(browser: Any, live_server_url: str) -> Iterator[Any]:
    """`log_in(user)`: a page in a fresh browser context, logged in through /login/.

    Every page the test opens in that context is then checked for sideways scrolling at
    desktop and phone width (tests/browser/layout.py), before the context closes."""
    with checked_contexts(browser, live_server_url, SCREENSHOTS) as new_context:

        def open_page(user: User) -> Any:
            page = new_context().new_page()
            page.goto("/login/")
            page.get_by_label("Username").fill(user.get_username())
            page.get_by_label("Password").fill(PASSWORD)
            page.get_by_role("button", name="Log in").click()
            page.wait_for_load_state()
            return page

        yield open_page
