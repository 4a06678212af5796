"""Done when (issue 33): a new user signs in, opens Connect your agent, chooses Claude
Code, gets a token and the settings, presses Test the connection (it passes), and the real
Claude Code (a scripted fake Anthropic API on 127.0.0.1) run with exactly those settings,
parsed from the page, is governed: its write of `.env` waits in Rita's inbox.

The policy chosen is the team's, where `.env` is protected (a person approves a write) but
not a secret: under a policy that lists it in `secret_paths`, as `default` does, the
settings give Claude Code a `Read(**/.env)` deny rule, and Claude Code 2.1.332 then refuses
its own Write of `.env` too, before any hook (found here): governed, but no card."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Page, expect

from tests.agents.claude import finished, needs_claude, run_claude
from tests.agents.fake_anthropic import FakeAnthropic
from tests.browser import inbox
from tests.browser.server import PASSWORD
from tests.helpers import git
from tools_app.models import ApiToken, Policy, ToolCall, default_secret_paths

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.timeout(150),
    needs_claude,
]

STARTS_WITHIN = 60_000  # ms for Claude Code to start and its hook to reach the inbox
MARK = "API_KEY=from-the-connect-page"


def connect_claude_code(page: Page, policy: str) -> tuple[dict[str, Any], str]:
    """Through the navigation and the form, as a person does; the settings and the token
    as the page shows them."""
    page.get_by_role("link", name="Connect your agent").click()
    page.get_by_label("Claude Code").check()
    page.get_by_label("Policy").select_option(policy)
    page.get_by_role("button", name="Create a token and show the settings").click()
    expect(page.get_by_role("heading", name="Your token (shown once)")).to_be_visible()
    settings = json.loads(page.locator("[data-key=settings] pre").inner_text())
    environment = page.locator("[data-key=environment] pre").inner_text()
    token = re.fullmatch(r"export AGENTWEB_TOKEN=(aw_\S+)", environment.strip())
    assert token is not None, environment
    return settings, token.group(1)


def test_a_new_user_connects_claude_code_and_its_write_of_env_waits_in_the_inbox(
    live_server_url: str, log_in: Any, reviewer: User, tmp_path: Path, screenshots: Path
) -> None:
    secrets = [path for path in default_secret_paths() if not path.startswith(".env")]
    Policy.objects.create(name="team", secret_paths=secrets)
    newcomer = User.objects.create_user("dana", password=PASSWORD)
    page = log_in(newcomer)
    settings, token = connect_claude_code(page, "team")
    expect(page.get_by_text("Claude Code 2.1.332 or later").first).to_be_visible()
    assert ApiToken.objects.get(user=newcomer).scope == "agent"

    page.get_by_role("button", name="Test the connection").click()
    summary = page.locator("#check-summary")
    expect(summary).to_contain_text("The connection works", timeout=20_000)
    checks = page.locator("#check-results li")
    expect(checks.first).to_be_visible()
    assert checks.count() >= 3
    expect(page.locator("#check-results li.check-failed")).to_have_count(0)
    assert not ToolCall.objects.exists()  # a dry run
    page.screenshot(path=screenshots / "connect-claude-code.png", full_page=True)

    project = tmp_path / "project"
    project.mkdir()
    (project / "README.md").write_text("# demo\n")
    git(project, "init", "-q", "-b", "main")
    rita = log_in(reviewer)
    inbox.open_inbox(rita)
    write = {"file_path": str(project / ".env"), "content": f"{MARK}\n"}
    with FakeAnthropic("Write", write) as fake:
        process = run_claude(project, live_server_url, token, fake, settings=settings)
        expect(inbox.card(rita, MARK)).to_be_visible(timeout=STARTS_WITHIN)
        assert not (project / ".env").exists()  # held by the hook while it waits
        call = ToolCall.objects.select_related("session__policy").get()
        assert (call.status, call.session.creator) == ("awaiting_approval", newcomer)
        assert call.session.policy.name == "team"
        inbox.deny(rita, MARK, "not from a test")
        finished(process)
    assert not (project / ".env").exists()
    assert ToolCall.objects.get().status == "denied"
    revoke_on_the_tokens_page(page)
    check = httpx.get(f"{live_server_url}/api/hooks/check?policy=team&agent=claude-code",
                      headers={"Authorization": f"Bearer {token}"})  # fmt: skip
    assert check.status_code == 401, check.text


def revoke_on_the_tokens_page(page: Page) -> None:
    """The token from the Connect page is listed on the tokens page, and revoked there."""
    page.get_by_role("link", name="your tokens").click()
    row = page.locator("tr", has_text="Claude Code (Connect)")
    expect(row).to_contain_text("active")
    row.get_by_text("Revoke…").click()
    row.get_by_role("button", name=re.compile(r"^Revoke aw_")).click()
    expect(page.get_by_role("status").first).to_contain_text("is revoked")
    expect(page.locator("tr", has_text="Claude Code (Connect)")).to_contain_text("revoked")
