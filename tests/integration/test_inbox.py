"""The approvals inbox: cards for reviewers only, fragments, decisions on the card, and
"Approve & remember" with a widened rule and its count of past matches."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.test import Client
from django.utils import timezone

from tools_app import services
from tools_app.models import AgentSession, Policy, PolicyRule, ToolCall

pytestmark = pytest.mark.django_db
FETCH = {"X-Requested-With": "fetch"}


@pytest.fixture(autouse=True)
def tasks_in_process(settings: Any) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True


def browser_for(user: User) -> Client:
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    return browser


def token(browser: Client) -> str:
    match = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', browser.get("/").content)
    assert match
    return match.group(1).decode()


def post(browser: Client, call: ToolCall, data: dict[str, str], *, fetch: bool = True) -> Any:
    """As inbox.js sends it: the form's fields, the CSRF token as a header."""
    headers = {**FETCH, "X-CSRFToken": token(browser)} if fetch else {}
    if not fetch:
        data = {**data, "csrfmiddlewaretoken": token(browser)}
    return browser.post(f"/tool-calls/{call.pk}/decide", data, headers=headers)


@pytest.fixture
def session(workspace: Path, creator: User) -> AgentSession:
    return AgentSession.objects.create(
        task="rotate the key", repo=str(workspace), workspace=str(workspace),
        status=AgentSession.Status.RUNNING, policy=Policy.objects.get(name="default"),
        creator=creator,
    )  # fmt: skip


@pytest.fixture
def waiting(session: AgentSession) -> ToolCall:
    """A write to .env by Alice's session, waiting for a reviewer."""
    call = services.tool_call_run_in_process(
        session=session, tool="write_file", args={"path": ".env", "content": "KEY=new\n"}
    )
    assert call.status == "awaiting_approval"
    return call


def held(session: AgentSession, tool: str, args: dict[str, Any]) -> ToolCall:
    return ToolCall.objects.create(
        session=session, tool=tool, args=args, status=ToolCall.Status.AWAITING_APPROVAL,
        verdict="require_approval", reason="a person decides", rule="test",
        expires_at=timezone.now() + timedelta(hours=1),
    )  # fmt: skip


def test_only_reviewers_see_cards(
    waiting: ToolCall, creator: User, reviewer: User, outsider: User, superuser: User
) -> None:
    for person in (creator, outsider):
        page = browser_for(person).get("/approvals/").content.decode()
        assert "Nothing is waiting" in page and f'id="call-{waiting.pk}"' not in page
        assert (
            f'id="call-{waiting.pk}"'
            not in browser_for(person).get("/approvals/cards/").content.decode()
        )
    for person in (reviewer, superuser):
        page = browser_for(person).get("/approvals/").content.decode()
        assert f'id="call-{waiting.pk}"' in page
        assert 'href="/sessions/' in page and "rotate the key" in page and "alice" in page


@pytest.mark.postgres
def test_cards_come_newest_first_with_the_time_left(
    reviewer: User, waiting: ToolCall, session: AgentSession
) -> None:
    newer = held(session, "git_branch", {"action": "create", "name": "x"})
    page = browser_for(reviewer).get("/approvals/").content.decode()
    assert page.index(f'id="call-{newer.pk}"') < page.index(f'id="call-{waiting.pk}"')
    assert f'datetime="{newer.expires_at.isoformat()[:19]}' in page
    assert 'data-last-seq="' in page


def test_outsiders_find_no_card_no_decision_and_no_count(
    waiting: ToolCall, outsider: User, creator: User
) -> None:
    charlie = browser_for(outsider)
    for url in (f"/approvals/cards/{waiting.pk}/", f"/approvals/cards/{waiting.pk}/remember-count"):
        assert charlie.get(url).status_code == 404
        assert browser_for(creator).get(url).status_code == 403
    assert post(charlie, waiting, {"action": "approve"}).status_code == 404
    waiting.refresh_from_db()
    assert waiting.status == "awaiting_approval"


def test_a_decision_by_fetch_answers_with_the_decided_card(
    reviewer: User, waiting: ToolCall
) -> None:
    answer = post(browser_for(reviewer), waiting, {"action": "deny", "reason": "use the vault"})
    assert answer.status_code == 200
    card = answer.content.decode()
    assert "Decided by rita: denied (use the vault)" in card
    assert ">Approve</button>" not in card and ">Deny</button>" not in card
    waiting.refresh_from_db()
    assert waiting.status == "denied" and "use the vault" in waiting.result


@pytest.mark.postgres
def test_the_fragment_of_a_call_someone_else_decided_says_who(
    reviewer: User, superuser: User, waiting: ToolCall
) -> None:
    services.tool_call_decide(call=waiting, user=superuser, scope="session", decision="approve")
    card = browser_for(reviewer).get(f"/approvals/cards/{waiting.pk}/").content.decode()
    assert "Decided by sam: approved" in card
    assert "<button" not in card
    late = post(browser_for(reviewer), waiting, {"action": "deny"})
    assert late.status_code == 409
    assert "Decided by sam: approved" in late.content.decode()


def test_a_creator_who_reviews_cannot_approve_their_own_call_under_distinct_reviewers(
    waiting: ToolCall, creator: User
) -> None:
    Policy.objects.filter(name="default").update(require_distinct_reviewer=True)
    creator.groups.add(Group.objects.get_or_create(name="reviewers")[0])
    alice = browser_for(creator)
    card = alice.get(f"/approvals/cards/{waiting.pk}/").content.decode()
    assert ">Approve</button>" not in card and ">Deny</button>" in card
    refused = post(alice, waiting, {"action": "approve"})
    assert refused.status_code == 403
    assert "reviewer other than the session&#x27;s creator" in refused.content.decode()
    waiting.refresh_from_db()
    assert waiting.status == "awaiting_approval"


def test_edit_with_bad_json_shows_the_error_on_the_card_and_changes_nothing(
    reviewer: User, session: AgentSession
) -> None:
    call = held(session, "git_branch", {"action": "create", "name": "x"})
    answer = post(browser_for(reviewer), call, {"action": "edit", "args": '{"action": '})
    assert answer.status_code == 400
    card = answer.content.decode()
    assert "not valid JSON" in card and "{&quot;action&quot;: </textarea>" in card
    assert '<details class="panel edit-panel" open>' in card
    call.refresh_from_db()
    assert call.status == "awaiting_approval" and call.args["name"] == "x"


def test_edit_with_arguments_the_tool_refuses_is_an_error_not_a_crash(
    reviewer: User, waiting: ToolCall
) -> None:
    answer = post(browser_for(reviewer), waiting, {"action": "edit", "args": '{"path": 5}'})
    assert answer.status_code == 422
    assert "The edited arguments are not valid" in answer.content.decode()
    waiting.refresh_from_db()
    assert waiting.status == "awaiting_approval"


def test_edit_and_approve_of_a_write_edits_its_content(
    reviewer: User, waiting: ToolCall, workspace: Path, django_capture_on_commit_callbacks: Any
) -> None:
    card = browser_for(reviewer).get(f"/approvals/cards/{waiting.pk}/").content.decode()
    assert 'name="edit_value"' in card and "KEY=new\n</textarea>" in card
    with django_capture_on_commit_callbacks(execute=True):
        answer = post(browser_for(reviewer), waiting, {"action": "edit", "edit_value": "KEY=2\n"})
    assert "Decided by rita: approved with edited arguments" in answer.content.decode()
    assert (workspace / ".env").read_text() == "KEY=2\n"


def test_an_edit_keeps_the_files_line_breaks_though_a_text_area_sends_crlf(
    reviewer: User, session: AgentSession, workspace: Path, django_capture_on_commit_callbacks: Any
) -> None:
    """A browser sends each line break of a text area as CRLF: an LF file stays LF, a
    CRLF file stays CRLF."""
    lf, crlf = (
        services.tool_call_run_in_process(
            session=session, tool="write_file", args={"path": name, "content": content}
        )
        for name, content in ((".env", "A=1\nB=1\n"), (".env.win", "A=1\r\nB=1\r\n"))
    )
    for call in (lf, crlf):
        with django_capture_on_commit_callbacks(execute=True):
            post(browser_for(reviewer), call, {"action": "edit", "edit_value": "A=2\r\nB=2\r\n"})
    assert (workspace / ".env").read_bytes() == b"A=2\nB=2\n"
    assert (workspace / ".env.win").read_bytes() == b"A=2\r\nB=2\r\n"


def test_the_remember_panel_shows_the_exact_rule_in_a_form_an_input_keeps(
    reviewer: User, waiting: ToolCall
) -> None:
    card = browser_for(reviewer).get(f"/approvals/cards/{waiting.pk}/").content.decode()
    assert 'name="pattern.path" value=".env"' in card  # as a person types it
    assert 'name="pattern.content" value="re:KEY=new\\u000a"' in card  # no raw newline
    assert ">Approve &amp; remember</button>" in card
    shown = {"pattern.path": ".env", "pattern.content": "re:KEY=new\\u000a"}
    post(browser_for(reviewer), waiting, {"action": "remember", **shown})
    rule = PolicyRule.objects.get()
    assert re.fullmatch(rule.args["content"][3:], "KEY=new\n")


def test_remember_with_a_widened_pattern_creates_exactly_that_rule(
    reviewer: User, waiting: ToolCall
) -> None:
    """Rita may change policies: widening a protected path's rule is hers to do."""
    reviewer.user_permissions.add(Permission.objects.get(codename="change_policy"))
    answer = post(
        browser_for(reviewer), waiting,
        {"action": "remember", "pattern.path": ".env*", "pattern.content": "*"},
    )  # fmt: skip
    assert "approved and remembered" in answer.content.decode()
    rule = PolicyRule.objects.get()
    assert (rule.tool, rule.args, rule.decision) == (
        "write_file",
        {"path": ".env*", "content": "*"},
        "allow",
    )
    assert rule.reason == "remembered by rita"


def test_remember_without_patterns_keeps_the_exact_rule(reviewer: User, waiting: ToolCall) -> None:
    post(browser_for(reviewer), waiting, {"action": "remember"}, fetch=False)
    assert PolicyRule.objects.get().args == {"path": ".env", "content": "re:KEY=new\\\n"}


@pytest.mark.parametrize(
    ("patterns", "error"),
    [
        ({"pattern.path": "re:(", "pattern.content": "*"}, "bad regular expression"),
        ({"pattern.path": "*"}, "one pattern for each argument (content, path)"),
    ],
)
def test_a_bad_widened_rule_is_a_clear_error_and_decides_nothing(
    reviewer: User, waiting: ToolCall, patterns: dict[str, str], error: str
) -> None:
    answer = post(browser_for(reviewer), waiting, {"action": "remember", **patterns})
    assert answer.status_code == 422
    assert error in answer.content.decode()
    assert not PolicyRule.objects.exists()
    waiting.refresh_from_db()
    assert waiting.status == "awaiting_approval"


def test_the_count_says_how_many_past_calls_a_widened_rule_matches(
    reviewer: User, session: AgentSession, waiting: ToolCall
) -> None:
    for path in ("src/a.py", "src/b.py", "docs/c.md"):
        ToolCall.objects.create(
            session=session, tool="write_file", args={"path": path, "content": "x"},
            status=ToolCall.Status.SUCCEEDED,
        )  # fmt: skip
    held(session, "run_command", {"command": "ls src/a.py"})
    rita = browser_for(reviewer)
    url = f"/approvals/cards/{waiting.pk}/remember-count"
    widened = rita.get(url, {"pattern.path": "src/*", "pattern.content": "*"}).json()
    assert widened | {"preview": ""} == {"count": 2, "of": 3, "error": None, "preview": ""}
    exact = rita.get(url, {"pattern.path": "re:\\.env", "pattern.content": "*"}).json()
    assert exact["count"] == 0
    bad = rita.get(url, {"pattern.path": "re:(", "pattern.content": "*"})
    assert bad.status_code == 422 and "bad regular expression" in bad.json()["error"]


def test_without_javascript_a_decision_redirects_back_with_a_message(
    reviewer: User, waiting: ToolCall
) -> None:
    answer = post(browser_for(reviewer), waiting, {"action": "deny", "reason": "no"}, fetch=False)
    assert answer.status_code == 302 and answer["Location"] == "/approvals/"


def test_the_page_loads_its_own_script_and_styles(reviewer: User, waiting: ToolCall) -> None:
    page = browser_for(reviewer).get("/approvals/").content.decode()
    assert "agentweb/inbox.js" in page and "agentweb/inbox.css" in page
    assert "https://" not in page.split("<main")[1]  # nothing from a CDN
