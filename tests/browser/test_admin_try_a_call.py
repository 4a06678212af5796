"""An admin tries a sample call on a policy in Django admin, in a real Chromium."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Page, expect

from tests.browser.server import PASSWORD

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.timeout(120),  # the first browser test starts Chromium, the worker and daphne
]


def test_an_admin_tries_a_command_on_the_default_policy(log_in: Any, screenshots: Path) -> None:
    ada = User.objects.create_superuser("ada", "ada@example.com", PASSWORD)
    page: Page = log_in(ada)
    page.goto("/admin/tools_app/policy/")
    page.get_by_role("link", name="default", exact=True).click()
    page.get_by_role("link", name="Try a call").click()
    page.get_by_label("Tool").select_option("run_command")
    page.get_by_label("Arguments (JSON)").fill('{"command": "pip install requests"}')
    page.get_by_role("button", name="Evaluate").click()
    decision = page.locator("#decision")
    expect(decision).to_contain_text("require_approval")
    expect(decision).to_contain_text("builtin:approval-command")
    page.screenshot(path=screenshots / "admin-try-a-call.png", full_page=True)

    page.get_by_label("Arguments (JSON)").fill('{"command": ')
    page.get_by_role("button", name="Evaluate").click()
    expect(page.get_by_text("Not valid JSON")).to_be_visible()
    expect(page.locator("#decision")).to_have_count(0)
