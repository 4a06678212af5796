"""Every page that shows agent-written text marks hidden characters as the inbox does:
the session page and its timeline, the sessions list, the recorded pull request page
and the admin's views of tool calls, sessions and pull requests. A bidi override, a
zero-width space or an ANSI escape never reaches the page raw."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tools_app.models import AgentMessage, AgentSession, Decision, Policy, PullRequest, ToolCall

pytestmark = pytest.mark.django_db

# Reads "invoice.pdf" in a browser that obeys the override; hides a space; paints red.
HOSTILE = "invoice\u202efdp.exe \u200bsilent \x1b[31mred"
RAW = ("\u202e", "\u200b", "\x1b")
MARKERS = ("&lt;U+202E&gt;", "&lt;U+200B&gt;", "&lt;ESC&gt;")


def assert_marked(page: str, times: int = 1) -> None:
    for char in RAW:
        assert char not in page, f"a raw {char!r} reached the page"
    for marker in MARKERS:
        assert page.count(marker) >= times, f"{marker} shown fewer than {times} times"


@pytest.fixture
def sam(superuser: User) -> Client:
    client = Client()
    client.force_login(superuser)
    return client


@pytest.fixture
def session(workspace: Path, creator: User, reviewer: User) -> AgentSession:
    """A finished session whose every agent-written field holds the hostile text."""
    session = AgentSession.objects.create(
        task=f"Task {HOSTILE}", repo=str(workspace), workspace=str(workspace),
        status=AgentSession.Status.DONE, policy=Policy.objects.get(name="default"),
        creator=creator, model="script:x", summary=f"Summary {HOSTILE}",
        files_changed=[f"src/{HOSTILE}.py"],
    )  # fmt: skip
    call = ToolCall.objects.create(
        session=session, tool="run_command", args={"command": f"echo {HOSTILE}"},
        status=ToolCall.Status.SUCCEEDED, verdict="require_approval",
        reason=f"Reason {HOSTILE}", rule="test", result=f"Result {HOSTILE}",
        preview={"command": f"echo {HOSTILE}"},
    )  # fmt: skip
    Decision.objects.create(
        tool_call=call, user=reviewer, decision="approve", reason=f"ok {HOSTILE}"
    )
    uses = [{"id": "1", "name": "run_command", "args": {"command": HOSTILE}}]
    AgentMessage.objects.create(
        session=session, index=0, role="assistant",
        content={"role": "assistant", "content": f"Said {HOSTILE}", "tool_uses": uses},
    )  # fmt: skip
    AgentMessage.objects.create(
        session=session, index=1, role="tool_results",
        content={"role": "tool_results", "results": [{"name": "run_command", "content": HOSTILE}]},
    )  # fmt: skip
    return session


@pytest.fixture
def pull(session: AgentSession) -> PullRequest:
    diff = f"diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b = '{HOSTILE}'\n"
    return PullRequest.objects.create(
        session=session, repo_key="demo", number=1, title=f"Title {HOSTILE}",
        body=f"Body {HOSTILE}", base="main", head="feature", diff=diff,
        commits=[{"hash": "0" * 40, "subject": f"Subject {HOSTILE}"}],
    )  # fmt: skip


def test_the_session_page_marks_hidden_characters_in_task_timeline_and_results(
    sam: Client, session: AgentSession
) -> None:
    page = sam.get(f"/sessions/{session.pk}/").content.decode()
    assert_marked(page, times=8)  # task, summary, file, command, args, reason, result, …
    assert "Said invoice<mark" in page and "Summary invoice<mark" in page
    fragment = sam.get(f"/sessions/{session.pk}/timeline/").content.decode()
    assert_marked(fragment, times=8)


def test_the_sessions_list_marks_hidden_characters_in_tasks(
    sam: Client, session: AgentSession
) -> None:
    assert_marked(sam.get("/sessions/").content.decode())


def test_the_pull_request_page_marks_hidden_characters_in_title_body_commits_and_diff(
    sam: Client, pull: PullRequest
) -> None:
    page = sam.get(f"/pulls/{pull.pk}/").content.decode()
    assert_marked(page, times=5)  # <title>, heading, body, commit, diff
    assert "<title>#1 Title invoice&lt;U+202E&gt;fdp.exe" in page
    assert "Body invoice<mark" in page and "Subject invoice<mark" in page
    # The diff through the inbox's diff view: highlighted, numbered, the override marked.
    assert 'class="diff-unified"' in page and "hidden characters</strong> in this diff" in page
    assert '<span class="tok-s">invoice<mark class="hidden-char"' in page


# JSON spells a control character (ESC) `\u001b` by itself: count the text fields.
@pytest.mark.parametrize(
    ("model", "times"), [("toolcall", 3), ("agentsession", 3), ("pullrequest", 4)]
)
def test_the_admin_marks_hidden_characters_in_what_agents_wrote(
    sam: Client, pull: PullRequest, model: str, times: int
) -> None:
    row = {"toolcall": ToolCall.objects.get(), "agentsession": pull.session, "pullrequest": pull}
    listing = sam.get(f"/admin/tools_app/{model}/")
    assert listing.status_code == 200
    assert all(char not in listing.content.decode() for char in RAW)
    answer = sam.get(f"/admin/tools_app/{model}/{row[model].pk}/change/")
    assert answer.status_code == 200
    assert_marked(answer.content.decode(), times=times)
