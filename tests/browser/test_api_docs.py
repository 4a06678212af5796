"""/api/docs renders Swagger UI with the network cut: every asset comes from agentweb."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest
from django.contrib.auth.models import User

pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def test_the_api_docs_render_with_no_network_but_agentweb(
    log_in: Any, reviewer: User, live_server_url: str
) -> None:
    page = log_in(reviewer)
    elsewhere: list[str] = []

    def only_agentweb(route: Any) -> None:
        if urlsplit(route.request.url).hostname == "127.0.0.1":
            route.continue_()
        else:
            elsewhere.append(route.request.url)
            route.abort()

    page.route("**/*", only_agentweb)
    page.goto("/api/docs")
    page.locator(".swagger-ui .info .title").filter(has_text="agentweb").wait_for()
    page.locator(".opblock-summary-path", has_text="/api/sessions").first.wait_for()
    assert elsewhere == []
