"""The gateway in the browser: the real Claude Code CLI (headless, a scripted fake
Anthropic API, the hooks `hook_settings claude-code` prints) asks to write `.env` in its
own git repository; the hook holds it; Rita decides in the inbox in a real Chromium; the
file is checked on Claude Code's disk, with what the card showed (or the reviewer typed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Page, expect

from tests.agents.claude import finished, needs_claude, run_claude
from tests.agents.fake_anthropic import FakeAnthropic
from tests.browser import inbox
from tests.helpers import git
from tools_app import services
from tools_app.models import ToolCall

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.timeout(150),
    needs_claude,
]

STARTS_WITHIN = 60_000  # ms for Claude Code to start and its hook to reach the inbox
CONTENT = "API_KEY=shown-in-the-card\nDEBUG=0\n"
MARK = "API_KEY=shown-in-the-card"


@pytest.fixture
def token() -> str:
    """Alice's agent token, the one her Claude Code's hooks send."""
    return services.api_token_create(user=User.objects.create_user("alice"), scope="agent")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """Claude Code's working directory: a git repository of its own."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "README.md").write_text("# demo\n")
    git(root, "init", "-q", "-b", "main")
    return root


@pytest.fixture
def rita_page(log_in: Any, reviewer: User) -> Page:
    """Rita, logged in, on the inbox."""
    page: Page = log_in(reviewer)
    inbox.open_inbox(page)
    return page


def write_env(project: Path) -> FakeAnthropic:
    return FakeAnthropic("Write", {"file_path": str(project / ".env"), "content": CONTENT})


def test_a_write_of_env_held_by_the_hook_lands_on_disk_once_approved_in_the_inbox(
    live_server_url: str, token: str, project: Path, rita_page: Page, screenshots: Path
) -> None:
    with write_env(project) as fake:
        process = run_claude(project, live_server_url, token, fake)
        card = inbox.card(rita_page, MARK)
        expect(card).to_be_visible(timeout=STARTS_WITHIN)
        where = f"the agent's machine, in {project}: the agent runs its own Write"
        expect(card).to_contain_text(where)
        expect(card).to_contain_text("DEBUG=0")
        card.screenshot(path=screenshots / "gateway-write-card.png")
        assert not (project / ".env").exists()  # held while Rita looks
        inbox.approve(rita_page, MARK)
        inbox.gone(rita_page, MARK)
        finished(process)
    assert (project / ".env").read_bytes() == CONTENT.encode()
    call = ToolCall.objects.get()
    assert (call.native_tool, call.tool, call.status) == ("Write", "write_file", "succeeded")
    assert call.human.user.username == "rita"


def test_the_content_rita_edits_in_the_inbox_is_what_lands_on_disk(
    live_server_url: str, token: str, project: Path, rita_page: Page
) -> None:
    with write_env(project) as fake:
        process = run_claude(project, live_server_url, token, fake)
        expect(inbox.card(rita_page, MARK)).to_be_visible(timeout=STARTS_WITHIN)
        inbox.edit_and_approve(rita_page, MARK, lambda text: text.replace("DEBUG=0", "DEBUG=1"))
        inbox.gone(rita_page, MARK)
        finished(process)
    edited = "API_KEY=shown-in-the-card\nDEBUG=1\n"
    assert (project / ".env").read_bytes() == edited.encode()  # LF, as shown: not CRLF
    call = ToolCall.objects.get()
    assert call.human.edited_args is not None and call.status == "succeeded"
    assert call.native_input["content"] == edited  # what was allowed is what ran: no
    assert "differs" not in call.preview["ran"], call.preview["ran"]  # warning
