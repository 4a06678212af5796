"""The session pages: the list, the new-session form, and one session's live timeline.

Alice (the creator) starts sessions, Rita (the reviewer) sees every session, Charlie (the
outsider) sees none of Alice's, and an anonymous visitor is sent to log in."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tools_app.models import AgentMessage, AgentSession, Decision, Policy, ToolCall

pytestmark = pytest.mark.django_db

Status = AgentSession.Status


def browser(user: User | None, *, csrf_checks: bool = False) -> Client:
    client = Client(enforce_csrf_checks=csrf_checks)
    if user is not None:
        client.force_login(user)
    return client


def make_session(creator: User | None, **fields: object) -> AgentSession:
    values: dict[str, object] = {
        "task": "fix the parser", "repo": "/srv/repos/app", "workspace": "/tmp/ws",
        "status": Status.RUNNING, "policy": Policy.objects.get(name="default"),
        "creator": creator,
    }  # fmt: skip
    values.update(fields)
    return AgentSession.objects.create(**values)


def awaiting(session: AgentSession, **fields: object) -> ToolCall:
    values: dict[str, object] = {
        "tool": "write_file", "args": {"path": ".env", "content": "KEY=new\n"},
        "status": ToolCall.Status.AWAITING_APPROVAL, "verdict": "require_approval",
        "expires_at": timezone.now() + timedelta(hours=1),
    }  # fmt: skip
    values.update(fields)
    return ToolCall.objects.create(session=session, **values)


def session_ids(page: str) -> list[int]:
    return [int(found) for found in re.findall(r'<tr id="session-(\d+)"', page)]


# --- the list ------------------------------------------------------------------------------


def test_the_list_shows_a_creator_only_their_own_sessions(
    creator: User, reviewer: User, outsider: User
) -> None:
    mine = make_session(creator, task="Alice's task")
    theirs = make_session(outsider, task="Charlie's task")
    assert session_ids(browser(creator).get("/sessions/").content.decode()) == [mine.pk]
    assert session_ids(browser(reviewer).get("/sessions/").content.decode()) == [
        theirs.pk,
        mine.pk,
    ]


def test_the_list_shows_status_repository_model_and_waiting_count(
    creator: User, reviewer: User
) -> None:
    session = make_session(creator, status=Status.WAITING, model="script:/tmp/plan.json")
    awaiting(session)
    awaiting(session)
    awaiting(session, status=ToolCall.Status.SUCCEEDED)
    page = browser(reviewer).get("/sessions/").content.decode()
    row = page[page.index(f'id="session-{session.pk}"') :].split("</tr>")[0]
    assert "waiting</span>" in row
    assert "/srv/repos/app" in row
    assert "script:/tmp/plan.json" in row
    assert "<strong>2</strong>" in row


def test_the_list_filters_by_status(creator: User) -> None:
    running = make_session(creator, status=Status.RUNNING)
    done = make_session(creator, status=Status.DONE)
    alice = browser(creator)
    assert session_ids(alice.get("/sessions/?status=done").content.decode()) == [done.pk]
    assert session_ids(alice.get("/sessions/?status=running").content.decode()) == [running.pk]
    assert session_ids(alice.get("/sessions/?status=bogus").content.decode()) == [
        done.pk,
        running.pk,
    ]


def test_the_list_pages_with_a_cursor_newest_first(creator: User) -> None:
    policy = Policy.objects.get(name="default")
    AgentSession.objects.bulk_create(
        AgentSession(task=f"task {n}", repo="r", workspace="w", policy=policy, creator=creator)
        for n in range(120)
    )
    alice = browser(creator)
    seen: list[int] = []
    url = "/sessions/"
    while url:
        page = alice.get(url).content.decode()
        seen += session_ids(page)
        found = re.search(r'rel="next" href="([^"]+)"', page)
        url = "/sessions/" + found.group(1).replace("&amp;", "&") if found else ""
    ids = list(AgentSession.objects.order_by("-id").values_list("id", flat=True))
    assert seen == ids


def test_a_bad_cursor_starts_at_the_newest(creator: User) -> None:
    session = make_session(creator)
    page = browser(creator).get("/sessions/?cursor=not-a-cursor").content.decode()
    assert session_ids(page) == [session.pk]


def _queries_for_the_first_page(user: User) -> int:
    client = browser(user)
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/sessions/").status_code == 200
    return len(queries)


def test_a_page_costs_the_same_queries_whatever_the_number_of_sessions(reviewer: User) -> None:
    policy = Policy.objects.get(name="default")

    def add(count: int) -> None:
        sessions = AgentSession.objects.bulk_create(
            AgentSession(task="t", repo="r", workspace="w", policy=policy, creator=reviewer)
            for _ in range(count)
        )
        for session in sessions[-60:]:
            awaiting(session)

    add(60)
    few = _queries_for_the_first_page(reviewer)
    add(600)
    assert _queries_for_the_first_page(reviewer) == few
    assert few <= 8, few  # the page, its sessions, the inbox count and the failing channels
    # (whether the person reviews is asked once for the counter and the failing channels)


# --- the new-session form ------------------------------------------------------------------


def test_the_form_shows_the_fields_and_the_configured_roles(creator: User, settings: Any) -> None:
    settings.AGENTWEB_MODEL_CODER = "openai:gpt-4.1"
    page = browser(creator).get("/sessions/new/").content.decode()
    for label in ("Repository", "Task", "Model", "Project", "Policy"):
        assert f">{label}</label>" in page
    assert "<code>openai:gpt-4.1</code>" in page
    assert '<option value="" selected>The project&#x27;s policy</option>' in page
    assert '<option value="default">default</option>' in page
    assert '<option value="" selected>By repository</option>' in page


def test_a_role_that_is_not_configured_names_the_setting_that_configures_it(
    creator: User, settings: Any
) -> None:
    settings.AGENTWEB_MODEL_FAST = "openai:gpt-4.1-mini"
    settings.AGENTWEB_MODEL_CODER = "openai:gpt-4.1"
    settings.AGENTWEB_MODEL_ARCHITECT = ""
    page = browser(creator).get("/sessions/new/").content.decode()
    architect = re.search(r'<li id="role-architect">(.*?)</li>', page, re.S)
    assert architect is not None
    assert "not configured</em>: set <code>AGENTWEB_MODEL_ARCHITECT</code>" in architect[1]
    assert "<code>AGENTWEB_MODEL_ARCHITECT=anthropic:claude-sonnet-4-5</code>, and restart" in page
    coder = re.search(r'<li id="role-coder">(.*?)</li>', page, re.S)
    assert coder is not None and "AGENTWEB_MODEL_CODER" not in coder[1]


def test_a_valid_form_starts_a_session_and_opens_its_page(creator: User, workspace: Path) -> None:
    answer = browser(creator).post(
        "/sessions/new/",
        {"repo": str(workspace), "task": "add a test", "model": "", "policy": "default"},
    )
    session = AgentSession.objects.get()
    assert answer.status_code == 302
    assert answer["Location"] == f"/sessions/{session.pk}/"
    assert (session.task, session.creator, session.repo) == ("add a test", creator, str(workspace))


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        ("repo", "/no/such/directory", "is not a directory on the server"),
        ("model", "nonsense:model", "nonsense"),
        ("model", "architect", "has no model spec"),
        ("task", "   ", "This field is required"),
        ("policy", "no-such-policy", "Select a valid choice"),
    ],
)
def test_a_bad_field_is_named_on_the_form_and_starts_nothing(
    creator: User, workspace: Path, settings: Any, field: str, value: str, error: str
) -> None:
    settings.AGENTWEB_MODEL_ARCHITECT = ""
    data = {"repo": str(workspace), "task": "add a test", "model": "", "policy": "default"}
    data[field] = value
    answer = browser(creator).post("/sessions/new/", data)
    assert answer.status_code == 200
    errors = answer.context["form"].errors
    assert list(errors) == [field]
    assert error in str(errors[field])
    assert 'role="alert"' in answer.content.decode()
    assert not AgentSession.objects.exists()


def test_the_form_needs_its_csrf_token(creator: User, workspace: Path) -> None:
    alice = browser(creator, csrf_checks=True)
    data = {"repo": str(workspace), "task": "add a test", "policy": "default"}
    assert alice.post("/sessions/new/", data).status_code == 403
    token = re.search(
        r'name="csrfmiddlewaretoken" value="([^"]+)"', alice.get("/sessions/new/").content.decode()
    )
    assert token
    data["csrfmiddlewaretoken"] = token.group(1)
    assert alice.post("/sessions/new/", data).status_code == 302


# --- one session's page --------------------------------------------------------------------


@pytest.fixture
def story(creator: User, reviewer: User) -> AgentSession:
    """Alice's runtime session: the model said something and wrote a file, Rita denied
    a write to .env, a sub-agent (with its own child) is still running."""
    session = make_session(
        creator, task="rotate <b>the</b> key", model="script:/tmp/plan.json", tokens_in=1200,
        tokens_out=340, subagent_tokens_in=500, subagent_tokens_out=70, total_changed_lines=12,
        summary="", files_changed=["src/app.py"], last_event_seq=7,
    )  # fmt: skip
    AgentMessage.objects.create(
        session=session, index=0, role="assistant", tokens_in=1200, tokens_out=340,
        content={"role": "assistant", "content": "I will edit <app.py>.",
                 "tool_uses": [{"id": "u1", "name": "write_file", "args": {"path": "x"}}]},
    )  # fmt: skip
    AgentMessage.objects.create(
        session=session, index=1, role="tool_results",
        content={"role": "tool_results", "results": [
            {"id": "u1", "name": "write_file", "content": "wrote 3 lines", "is_error": False}]},
    )  # fmt: skip
    wrote = awaiting(
        session, status=ToolCall.Status.SUCCEEDED, verdict="allow", reason="a source file",
        preview={"diff": "--- a/src/app.py\n+++ b/src/app.py\n@@ -0,0 +1 @@\n+print('<hi>')\n"},
        result="line\n" * 40,
    )  # fmt: skip
    denied = awaiting(session, status=ToolCall.Status.DENIED, reason="a secret path")
    Decision.objects.create(tool_call=denied, user=reviewer, decision="deny", reason="not .env")
    child = make_session(creator, parent=session, depth=1, task="write the tests")
    make_session(creator, parent=child, depth=2, task="grandchild task", status=Status.DONE)
    assert wrote.pk
    return session


def test_the_session_page_shows_the_timeline(story: AgentSession, creator: User) -> None:
    page = browser(creator).get(f"/sessions/{story.pk}/").content.decode()
    assert "rotate &lt;b&gt;the&lt;/b&gt; key" in page
    assert "I will edit &lt;app.py&gt;." in page
    assert "Uses <code>write_file</code>" in page
    assert '<details id="results-1"><summary>Tool results (1)</summary>' in page
    assert 'class="diff-add"' in page and "&lt;hi&gt;" in page  # the diff, highlighted
    assert "<hi>" not in page  # and escaped
    assert "Result (200 characters)</summary>" in page  # a long result starts folded
    assert "Denied by rita" in page
    assert "“not .env”" in page
    assert "a secret path" in page
    assert "1200 in · 340 out" in page
    assert "500 in · 70 out" in page
    assert "<strong>12</strong>" in page
    assert "<code>src/app.py</code>" in page


def test_the_session_page_shows_sub_agents_as_a_tree(story: AgentSession, creator: User) -> None:
    page = browser(creator).get(f"/sessions/{story.pk}/").content.decode()
    child = story.children.get()
    grandchild = child.children.get()
    assert f'<a href="/sessions/{child.pk}/">Session {child.pk}</a>' in page
    assert f'<a href="/sessions/{grandchild.pk}/">Session {grandchild.pk}</a>' in page
    assert page.index("write the tests") < page.index("grandchild task")
    child_page = browser(creator).get(f"/sessions/{child.pk}/").content.decode()
    assert f'sub-agent of <a href="/sessions/{story.pk}/">' in child_page


def test_the_page_costs_the_same_queries_however_long_the_timeline(
    story: AgentSession, creator: User
) -> None:
    alice = browser(creator)

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            alice.get(f"/sessions/{story.pk}/")
        return len(captured)

    before = queries()
    for n in range(20):
        awaiting(story, status=ToolCall.Status.SUCCEEDED, result=f"result {n}")
    assert queries() == before


def test_who_sees_the_session_page(
    story: AgentSession, creator: User, reviewer: User, outsider: User, superuser: User
) -> None:
    for user in (creator, reviewer, superuser):
        assert browser(user).get(f"/sessions/{story.pk}/").status_code == 200
    for path in ("", "timeline/"):
        assert browser(outsider).get(f"/sessions/{story.pk}/{path}").status_code == 404
        anonymous = Client().get(f"/sessions/{story.pk}/{path}")
        assert anonymous.status_code == 302
        assert anonymous["Location"].startswith("/login/")
    assert browser(outsider).post(f"/sessions/{story.pk}/cancel/").status_code == 404


def test_the_fragment_is_the_live_part_alone(story: AgentSession, reviewer: User) -> None:
    part = browser(reviewer).get(f"/sessions/{story.pk}/timeline/").content.decode()
    assert '<div class="session-live" data-seq="7">' in part
    assert "Denied by rita" in part
    assert "<html" not in part
    page = browser(reviewer).get(f"/sessions/{story.pk}/").content.decode()
    assert f'data-fragment-url="/sessions/{story.pk}/timeline/"' in page
    assert f'data-socket="/ws/sessions/{story.pk}/"' in page
    assert "/static/agentweb/session.js" in page


def test_the_creator_cancels_the_session(story: AgentSession, creator: User) -> None:
    alice = browser(creator, csrf_checks=True)
    page = alice.get(f"/sessions/{story.pk}/").content.decode()
    assert ">Cancel session</button>" in page
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert token
    assert alice.post(f"/sessions/{story.pk}/cancel/").status_code == 403  # no token
    answer = alice.post(f"/sessions/{story.pk}/cancel/", {"csrfmiddlewaretoken": token.group(1)})
    assert answer.status_code == 302
    story.refresh_from_db()
    assert story.status == Status.CANCELLED
    assert story.children.get().status == Status.CANCELLED
    after = alice.get(answer["Location"]).content.decode()
    assert "Cancel session" not in after
    assert f"Session {story.pk} cancelled." in after


def test_a_reviewer_may_not_cancel_someone_elses_session(
    story: AgentSession, reviewer: User
) -> None:
    rita = browser(reviewer)
    assert "Cancel session" not in rita.get(f"/sessions/{story.pk}/").content.decode()
    assert rita.post(f"/sessions/{story.pk}/cancel/").status_code == 403
    story.refresh_from_db()
    assert story.status == Status.RUNNING


def test_a_queue_that_is_down_is_said_on_the_list_not_a_500(
    creator: User, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """session_start commits the session, then its clone task cannot be sent (Unavailable):
    the form is not shown again to be sent twice; the list shows the stored session."""
    from tools_app import services
    from tools_app.errors import Unavailable

    def down(**kwargs: object) -> None:
        raise Unavailable("The task queue (Redis) is not reachable.")

    monkeypatch.setattr(services, "session_start", down)
    data = {"repo": str(workspace), "task": "add a test", "policy": "default"}
    answer = browser(creator).post("/sessions/new/", data, follow=True)
    assert answer.redirect_chain == [("/sessions/", 302)]
    assert "not started yet: The task queue (Redis) is not reachable." in answer.content.decode()


def test_the_session_page_names_its_active_skills_and_the_words_that_matched(
    creator: User,
) -> None:
    session = make_session(
        creator, active_skills=[{"skill": "release", "words": ["ship", "<release>"]}]
    )
    page = browser(creator).get(f"/sessions/{session.pk}/").content.decode()
    assert "Active skills" in page
    assert "release</a>, matched by “ship”, “&lt;release&gt;”" in page


def test_a_session_without_a_model_says_how_to_drive_it(creator: User) -> None:
    session = make_session(creator, model="", status=Status.RUNNING)
    page = browser(creator).get(f"/sessions/{session.pk}/").content.decode()
    calls = f"http://testserver/api/sessions/{session.pk}/tool-calls?wait=30"
    assert f'<pre class="command" id="drive-curl">curl -sS -X POST &quot;{calls}&quot;' in page
    assert '<code id="drive-mcp">http://testserver/mcp</code>' in page
    assert f"{{&quot;path&quot;: &quot;.&quot;, &quot;session&quot;: {session.pk}}}" in page
    assert "bin/agentweb create_api_token alice --scope agent" in page
    assert '<a href="/connect/">Connect your agent</a>' in page
    assert '<details class="drive" id="drive" open>' in page  # no call yet


@pytest.mark.parametrize(
    "fields", [{"model": "script:/tmp/plan.json"}, {"model": "", "status": Status.DONE}]
)
def test_a_session_with_a_model_or_over_has_no_driving_help(
    creator: User, fields: dict[str, object]
) -> None:
    session = make_session(creator, **fields)
    assert 'id="drive"' not in browser(creator).get(f"/sessions/{session.pk}/").content.decode()
