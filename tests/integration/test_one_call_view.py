"""One tool call is shown one way: the inbox card, the session timeline and the pull
request page render it through `{% tool_call %}`, so every preview kind (pull request,
fetch, sub-agent, command, diff) shows the same facts, with hidden characters marked,
wherever a reviewer meets it. (The session timeline used to show a diff or a command
line only: a pull request's commits, a fetch's headers and host never reached it.)"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tools_app.models import AgentSession, Policy, PullRequest, ToolCall

pytestmark = pytest.mark.django_db

HOSTILE = "invoice\u202efdp.exe \u200bsilent \x1b[31mred"
RAW = ("\u202e", "\u200b", "\x1b")
MARKER = '<mark class="hidden-char" title="U+202E RIGHT-TO-LEFT OVERRIDE">&lt;U+202E&gt;</mark>'
DIFF = f"--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b = '{HOSTILE}'\n"
CALLS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "create_pull_request": (
        {"title": f"T {HOSTILE}", "body": f"B {HOSTILE}"},
        {"title": f"T {HOSTILE}", "body": f"B {HOSTILE}", "base": "main", "head": "topic",
         "commits": [{"hash": "0" * 40, "subject": f"Subject {HOSTILE}"}], "diff": DIFF,
         "warnings": [f"Warning {HOSTILE}"]},
    ),
    "web_fetch": (
        {"url": f"https://example.com/{HOSTILE}", "method": "POST",
         "headers": {"X-Note": f"Header {HOSTILE}"}, "body": f"Body {HOSTILE}"},
        {},
    ),
    "spawn_subagent": ({"title": f"Title {HOSTILE}", "description": f"Do {HOSTILE}"}, {}),
    "run_command": (
        {"command": f"echo {HOSTILE}"},
        {"command": f"echo {HOSTILE}", "timeout": 120, "opaque": [f"Opaque {HOSTILE}"],
         "parts": [{"program": "echo", "text": f"echo {HOSTILE}", "why": [f"Why {HOSTILE}"]}]},
    ),
    "write_file": (
        {"path": "x.py", "content": f"b = '{HOSTILE}'\n"}, {"path": "x.py", "diff": DIFF},
    ),
}  # fmt: skip
OPEN_DIV = re.compile(r"<div\b|</div>")


@pytest.fixture
def sam(superuser: User) -> Client:
    client = Client()
    client.force_login(superuser)
    return client


@pytest.fixture
def session(workspace: Path, creator: User) -> AgentSession:
    return AgentSession.objects.create(
        task="show me", repo=str(workspace), workspace=str(workspace), creator=creator,
        status=AgentSession.Status.WAITING, policy=Policy.objects.get(name="default"),
    )  # fmt: skip


def call_block(html: str, call_id: int) -> str:
    """The `{% tool_call %}` block inside the element of call `call_id`."""
    start = html.index('<div class="tool-call diff-host">', html.index(f'id="call-{call_id}"'))
    depth = 0
    for found in OPEN_DIV.finditer(html, start):
        depth += 1 if found.group(0) == "<div" else -1
        if depth == 0:
            return html[start : found.end()]
    raise AssertionError("the block never closes")


@pytest.mark.parametrize("tool", sorted(CALLS))
def test_the_inbox_card_and_the_session_timeline_show_a_call_the_same_way(
    sam: Client, session: AgentSession, tool: str
) -> None:
    args, preview = CALLS[tool]
    call = ToolCall.objects.create(
        session=session, tool=tool, args=args, preview=preview or None,
        status=ToolCall.Status.AWAITING_APPROVAL, verdict="require_approval", reason="r",
    )  # fmt: skip
    card = call_block(sam.get(f"/approvals/cards/{call.pk}/").content.decode(), call.pk)
    timeline = call_block(sam.get(f"/sessions/{session.pk}/timeline/").content.decode(), call.pk)
    assert timeline == card
    assert not any(char in card for char in RAW)
    shown = card.count(MARKER)
    assert shown >= 2, f"{tool}: the override is marked {shown} times"
    for text in ("Subject", "Header", "Why", "Opaque", "Warning", "Do", "Body"):
        if text + " " + HOSTILE in str(args) + str(preview):
            assert f"{text} invoice{MARKER}" in card, f"{tool}: {text} is not shown marked"


def test_a_result_is_shown_the_same_way_and_folded_when_long(
    sam: Client, session: AgentSession
) -> None:
    short = ToolCall.objects.create(
        session=session, tool="read_file", args={"path": "x"}, result=f"R {HOSTILE}",
        status=ToolCall.Status.SUCCEEDED,
    )  # fmt: skip
    long = ToolCall.objects.create(
        session=session, tool="read_file", args={"path": "y"}, result=f"{HOSTILE}\n" * 40,
        status=ToolCall.Status.SUCCEEDED,
    )  # fmt: skip
    timeline = sam.get(f"/sessions/{session.pk}/timeline/").content.decode()
    for call in (short, long):
        card = call_block(sam.get(f"/approvals/cards/{call.pk}/").content.decode(), call.pk)
        assert call_block(timeline, call.pk) == card
    assert f'<pre class="result">R invoice{MARKER}' in call_block(timeline, short.pk)
    assert f'<details class="result" id="result-{long.pk}">' in call_block(timeline, long.pk)


def test_the_pull_request_page_shows_its_pull_request_as_the_card_did(
    sam: Client, session: AgentSession
) -> None:
    _, preview = CALLS["create_pull_request"]
    pull = PullRequest.objects.create(
        session=session, repo_key="demo", number=1, title=preview["title"],
        body=preview["body"], base="main", head="topic", diff=DIFF, commits=preview["commits"],
    )  # fmt: skip
    page = sam.get(f"/pulls/{pull.pk}/").content.decode()
    block = page[page.index('<div class="tool-call diff-host">') :]
    assert not any(char in page for char in RAW)
    for text in ("T", "B", "Subject"):
        assert f"{text} invoice{MARKER}" in block, f"{text} is not shown marked"
    assert 'class="diff-unified"' in block and '<span class="tok-s">invoice<mark' in block
    assert "Arguments the agent sent" not in block
