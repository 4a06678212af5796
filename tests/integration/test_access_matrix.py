"""Who may see and do what, over every URL and socket that agentweb serves.

Alice (the creator) started a session; she is not a reviewer. Rita is a reviewer. Charlie
has an account and no relation to Alice's session. Sam is a superuser. An anonymous
visitor has no account. An object someone may not see does not exist for them (404);
403 is only for an object they may see but not act on.

Every page URL name and every API route must have a row here: a new URL without one
fails `test_the_matrix_covers_every_url_and_socket`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.layers import channel_layers
from channels.testing import WebsocketCommunicator
from django.conf import settings as django_settings
from django.contrib.admin import site
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from agentweb.asgi import application
from tools_app import services, urls
from tools_app.admin import PolicyAdmin
from tools_app.api.routes import api
from tools_app.core.tools.forge import Proposal
from tools_app.live import routing
from tools_app.models import AgentSession, ApiToken, Policy, PullRequest, ToolCall
from tools_app.services.pull_request_store import PullRequestStore

pytestmark = pytest.mark.django_db

DJANGO_ADMIN_PAGES = ("_changelist", "_add", "_history", "_delete", "_change")
ROLES = ("creator", "reviewer", "outsider", "superuser", "anonymous")


@dataclass(frozen=True)
class Row:
    """One URL and method, and the status each role gets."""

    key: str  # a page's URL name, or "METHOD /api/route" as django-ninja declares it
    method: str
    url: str  # with {session}, {call}, {pull}, {orphan_pull} filled in per test
    expect: dict[str, int]
    body: dict[str, Any] | None = None


def expect(creator: int, reviewer: int, outsider: int, superuser: int, anonymous: int) -> dict:
    return dict(zip(ROLES, (creator, reviewer, outsider, superuser, anonymous), strict=True))


EVERYONE_LOGGED_IN = expect(200, 200, 200, 200, 302)  # pages send anonymous visitors to log in
API_FOR_EVERYONE = expect(200, 200, 200, 200, 401)
SEES_THE_SESSION = expect(200, 200, 404, 200, 401)
ACTS_ON_THE_SESSION = expect(200, 403, 404, 200, 401)
DECIDES = expect(403, 200, 404, 200, 401)
WRITES_SKILLS = expect(403, 403, 403, 200, 401)  # staff (or change_skill) only
SKILL_PAGE = expect(403, 403, 403, 200, 302)  # the skill forms: staff (or change_skill) only
SKILL_WRITE = expect(403, 403, 403, 302, 302)
AUDIT_PAGE = expect(403, 403, 403, 200, 302)  # staff (or view_auditentry) only
READS_THE_AUDIT = expect(403, 403, 403, 200, 401)
NO_SUCH_CHANNEL = expect(404, 404, 404, 404, 404)

PAGES = [
    Row("home", "GET", "/", EVERYONE_LOGGED_IN),
    Row("approvals", "GET", "/approvals/", EVERYONE_LOGGED_IN),
    Row("approval_cards", "GET", "/approvals/cards/", EVERYONE_LOGGED_IN),
    Row("approval_card", "GET", "/approvals/cards/{call}/", expect(403, 200, 404, 200, 302)),
    Row("remember_count", "GET", "/approvals/cards/{call}/remember-count",
        expect(403, 200, 404, 200, 302)),
    Row(
        "decide", "POST", "/tool-calls/{call}/decide", expect(403, 302, 404, 302, 302),
        {"action": "deny", "reason": "not now"},
    ),
    Row("pull_request", "GET", "/pulls/{pull}/", expect(200, 200, 404, 200, 302)),
    Row("pull_request", "GET", "/pulls/{orphan_pull}/", expect(404, 200, 404, 200, 302)),
    Row("sessions", "GET", "/sessions/", EVERYONE_LOGGED_IN),
    Row("sessions", "GET", "/sessions/?status=waiting", EVERYONE_LOGGED_IN),
    Row("session_new", "GET", "/sessions/new/", EVERYONE_LOGGED_IN),
    Row("session_new", "POST", "/sessions/new/", expect(302, 302, 302, 302, 302),
        {"repo": "{repo}", "task": "fix the bug", "model": "", "policy": "default"}),
    Row("session", "GET", "/sessions/{session}/", expect(200, 200, 404, 200, 302)),
    Row("session_timeline", "GET", "/sessions/{session}/timeline/",
        expect(200, 200, 404, 200, 302)),
    Row("session_cancel", "POST", "/sessions/{session}/cancel/", expect(302, 403, 404, 302, 302),
        {}),
    Row("skills", "GET", "/skills/", EVERYONE_LOGGED_IN),
    Row("skills", "GET", "/skills/?task=run+the+lint", EVERYONE_LOGGED_IN),
    Row("skill_new", "GET", "/skills/new/", SKILL_PAGE),
    Row("skill_new", "POST", "/skills/new/", SKILL_WRITE,
        {"name": "notes", "triggers": "notes", "tools": "[]", "enabled": "on"}),
    Row("skill_edit", "GET", "/skills/lint/edit/", SKILL_PAGE),
    Row("skill_edit", "POST", "/skills/lint/edit/", SKILL_WRITE,
        {"name": "lint", "triggers": "lint", "tools": "[]", "enabled": "on"}),
    Row("skill_enabled", "POST", "/skills/lint/enabled/", SKILL_WRITE, {"enabled": "0"}),
    Row("skill_delete", "POST", "/skills/lint/delete/", SKILL_WRITE, {}),
    Row("skill_export", "GET", "/skills/export/", EVERYONE_LOGGED_IN),
    Row("skill_import", "GET", "/skills/import/", SKILL_PAGE),
    Row("skill_import", "POST", "/skills/import/", SKILL_WRITE,
        {"text": '{"name": "notes", "triggers": ["notes"]}'}),
    Row("notify_settings", "GET", "/settings/notifications/", EVERYONE_LOGGED_IN),
    Row("notify_settings", "POST", "/settings/notifications/", expect(302, 302, 302, 302, 302),
        {"mode": "off", "digest_minutes": "30", "email": ""}),
    Row("tokens", "GET", "/settings/tokens/", EVERYONE_LOGGED_IN),
    Row("tokens", "POST", "/settings/tokens/", EVERYONE_LOGGED_IN,  # the new token, shown once
        {"name": "laptop", "scope": "agent", "expires": "30"}),
    Row("tokens", "POST", "/settings/tokens/", expect(200, 200, 200, 200, 302),  # a form error
        {"name": "laptop", "scope": "review", "expires": "30"}),  # for all but reviewers
    Row("password_change", "GET", "/settings/password/", EVERYONE_LOGGED_IN),
    Row("password_change", "POST", "/settings/password/", expect(403, 200, 403, 200, 302),
        {"old_password": "wrong", "new_password1": "a-new-one", "new_password2": "a-new-one"}),
    # (a form error for Rita and Sam; Alice and Charlie have no password of their own)
    Row("token_revoke", "POST", "/settings/tokens/{token}/revoke/",
        expect(302, 404, 404, 302, 302), {"confirm": "yes"}),  # Alice's: she and staff only
    Row("connect", "GET", "/connect/", EVERYONE_LOGGED_IN),
    Row("connect", "POST", "/connect/", EVERYONE_LOGGED_IN,
        {"agent": "claude-code", "policy": "default", "expires": "7"}),
    Row("audit", "GET", "/audit/", AUDIT_PAGE),
    Row("audit", "GET", "/audit/?decision=deny", AUDIT_PAGE),
    Row("audit_export", "GET", "/audit/export/?format=csv", AUDIT_PAGE),
    # Slack calls it, signed (test_notify_slack): no login, and no such channel here
    Row("slack_interactivity", "POST", "/slack/interactivity/team/", NO_SUCH_CHANNEL, {}),
]  # fmt: skip

API = [
    Row("POST /sessions", "POST", "/api/sessions", expect(201, 201, 201, 201, 401),
        {"task": "fix the bug", "repo": "{repo}"}),
    Row("GET /sessions", "GET", "/api/sessions", API_FOR_EVERYONE),
    Row("GET /sessions/{session_id}", "GET", "/api/sessions/{session}", SEES_THE_SESSION),
    Row("POST /sessions/{session_id}/cancel", "POST", "/api/sessions/{session}/cancel",
        ACTS_ON_THE_SESSION, {}),
    Row("GET /sessions/{session_id}/tool-calls", "GET", "/api/sessions/{session}/tool-calls",
        SEES_THE_SESSION),
    Row("POST /sessions/{session_id}/tool-calls", "POST", "/api/sessions/{session}/tool-calls",
        expect(201, 403, 404, 201, 401), {"tool": "read_file", "args": {"path": "README.md"}}),
    Row("GET /sessions/{session_id}/tools", "GET", "/api/sessions/{session}/tools",
        SEES_THE_SESSION),
    Row("GET /tool-calls/{tool_call_id}", "GET", "/api/tool-calls/{call}", SEES_THE_SESSION),
    Row("POST /tool-calls/{tool_call_id}/decision", "POST", "/api/tool-calls/{call}/decision",
        DECIDES, {"decision": "deny", "reason": "not now"}),
    Row("GET /approvals", "GET", "/api/approvals", API_FOR_EVERYONE),
    Row("GET /policies/{name}", "GET", "/api/policies/default", API_FOR_EVERYONE),
    Row("POST /policies/{name}/evaluate", "POST", "/api/policies/default/evaluate",
        API_FOR_EVERYONE, {"tool": "read_file", "args": {"path": "README.md"}}),
    Row("POST /policies/{name}/evaluate", "POST", "/api/policies/default/evaluate",
        SEES_THE_SESSION, {"tool": "read_file", "args": {"path": "README.md"},
                           "session": "{session}"}),
    Row("GET /skills", "GET", "/api/skills", API_FOR_EVERYONE),
    Row("POST /skills", "POST", "/api/skills", WRITES_SKILLS | {"superuser": 201},
        {"name": "notes", "triggers": ["notes"]}),
    Row("POST /skills/match", "POST", "/api/skills/match", API_FOR_EVERYONE, {"task": "lint"}),
    Row("GET /skills/{name}", "GET", "/api/skills/lint", API_FOR_EVERYONE),
    Row("PUT /skills/{name}", "PUT", "/api/skills/lint", WRITES_SKILLS,
        {"name": "lint", "triggers": ["lint"]}),
    Row("DELETE /skills/{name}", "DELETE", "/api/skills/lint", WRITES_SKILLS | {"superuser": 204}),
    Row("GET /audit", "GET", "/api/audit", READS_THE_AUDIT),
    Row("GET /audit/export", "GET", "/api/audit/export?format=csv", READS_THE_AUDIT),
    Row("docs", "GET", "/api/docs", expect(200, 200, 200, 200, 302)),
    Row("openapi.json", "GET", "/api/openapi.json", expect(200, 200, 200, 200, 302)),
]  # fmt: skip

# The admin's own pages (PolicyAdmin.get_urls): staff only; anyone else is sent to log in.
STAFF_ONLY = expect(302, 302, 302, 200, 302)
ADMIN = [
    Row("tools_app_policy_try", "GET", "/admin/tools_app/policy/{policy}/try/", STAFF_ONLY),
    Row("tools_app_policy_try", "POST", "/admin/tools_app/policy/{policy}/try/", STAFF_ONLY,
        {"tool": "read_file", "args": '{"path": "README.md"}'}),
]  # fmt: skip

SOCKETS = {
    "/ws/sessions/{session}/": expect(True, True, False, True, False),
    "/ws/approvals/": expect(False, True, False, True, False),
}


@dataclass
class World:
    """Alice's session with a call awaiting a decision, its pull request, an older
    pull request whose session is gone, and her agent token."""

    session: AgentSession
    call: ToolCall
    pull: PullRequest
    orphan_pull: PullRequest
    repo: Path
    people: dict[str, User | None]
    token: ApiToken  # Alice's agent token

    def fill(self, text: str) -> str:
        ids = {"session": self.session.pk, "call": self.call.pk, "pull": self.pull.pk,
               "orphan_pull": self.orphan_pull.pk, "repo": self.repo,
               "policy": self.session.policy_id, "token": self.token.pk}  # fmt: skip
        for name, value in ids.items():
            text = text.replace(f"{{{name}}}", str(value))
        return text

    def browser(self, role: str) -> Client:
        client = Client()
        user = self.people[role]
        if user is not None:
            client.force_login(user)
        return client


@pytest.fixture
def world(workspace: Path, creator: User, reviewer: User, outsider: User, superuser: User) -> World:
    people: dict[str, User | None] = {
        "creator": creator,
        "reviewer": reviewer,
        "outsider": outsider,
        "superuser": superuser,
        "anonymous": None,
    }
    session = AgentSession.objects.create(
        task="rotate the key", repo=str(workspace), workspace=str(workspace),
        status=AgentSession.Status.WAITING, policy=Policy.objects.get(name="default"),
        creator=creator,
    )  # fmt: skip
    call = ToolCall.objects.create(
        session=session, tool="write_file", args={"path": ".env", "content": "KEY=new\n"},
        status=ToolCall.Status.AWAITING_APPROVAL, verdict="require_approval",
        expires_at=timezone.now() + timedelta(hours=1),
    )  # fmt: skip
    pull = _pull(session, "feature/a")
    orphan = _pull(None, "feature/old")
    services.api_token_create(user=creator, scope="agent", name="laptop")
    token = ApiToken.objects.get(user=creator)
    return World(session, call, pull, orphan, workspace, people, token)


def _pull(session: AgentSession | None, head: str) -> PullRequest:
    number = PullRequest.objects.count() + 1
    return PullRequest.objects.create(
        session=session, repo_key="demo", number=number, title=f"PR {head}", base="main",
        head=head, diff="+secret change\n",
    )  # fmt: skip


def send(world: World, role: str, row: Row) -> Any:
    browser, url = world.browser(role), world.fill(row.url)
    if row.method == "GET":
        return browser.get(url)
    if row.method == "DELETE":
        return browser.delete(url)
    if row.method == "PUT":
        return browser.put(url, json.dumps(row.body), content_type="application/json")
    if url.startswith("/api/"):
        body = json.loads(world.fill(json.dumps(row.body or {})))
        if "session" in body:
            body["session"] = int(body["session"])
        return browser.post(url, json.dumps(body), content_type="application/json")
    return browser.post(url, json.loads(world.fill(json.dumps(row.body or {}))))


def cases(rows: list[Row]) -> list[Any]:
    return [
        pytest.param(row, role, id=f"{row.method} {row.url} as {role}")
        for row in rows
        for role in ROLES
    ]


@pytest.mark.parametrize(("row", "role"), cases(PAGES + API + ADMIN))
def test_each_role_gets_the_expected_status(world: World, row: Row, role: str) -> None:
    answer = send(world, role, row)
    assert answer.status_code == row.expect[role], answer.content[:300]
    if answer.status_code == 302 and role == "anonymous":
        assert "/login/" in answer["Location"]
    if answer.status_code in {401, 403, 404} and row.url.startswith("/api/"):
        assert answer.json()["detail"]


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@pytest.mark.parametrize(
    ("path", "role"), [(path, role) for path in SOCKETS for role in ROLES], ids=str
)
def test_each_role_connects_to_the_sockets_it_may(
    world: World, path: str, role: str, memory_layer: None
) -> None:
    headers = [(b"origin", b"http://localhost"), (b"host", b"localhost")]
    user = world.people[role]
    if user is not None:
        client = world.browser(role)
        name = django_settings.SESSION_COOKIE_NAME
        headers.append((b"cookie", f"{name}={client.cookies[name].value}".encode()))

    async def connected() -> bool:
        communicator = WebsocketCommunicator(application, world.fill(path), headers=headers)
        ok, _ = await communicator.connect()
        if ok:
            snapshot = await communicator.receive_json_from()
            assert snapshot["type"] == "snapshot"
            await communicator.disconnect()
        return bool(ok)

    assert async_to_sync(connected)() == SOCKETS[path][role]


@pytest.fixture
def memory_layer(settings: Any) -> Any:
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    channel_layers.backends = {}
    yield
    channel_layers.backends = {}


# The project's own entry points beside tools_app's pages and the REST API, and where
# each one's access is tested (`/mcp` is routed in agentweb/asgi.py: test_mcp.py, 401).
PROJECT_ENTRY_POINTS = {
    "admin/": "the ADMIN rows (Django admin's own login otherwise)",
    "login/": "Django's login view (password POSTs refused when switched off: test_sso.py)",
    "logout/": "Django's logout view",
    "oidc/authenticate/": "test_sso.py (integration: 404 while SSO is off; browser: signs in)",
    "oidc/callback/": "test_sso.py (browser: a forged state, a replayed code: refused)",
    "api/hooks/claude-code": "test_gateway_hooks.py: no token, a bad or a review token: deny",
    "api/hooks/check": "test_hook_check.py: an agent token (401 without one), no login",
    "api/hooks/agentweb-hook.py": "test_hook_check.py: public code, no login, Host checked",
    "api/": "the API rows",
    "": "the PAGES rows",
    "healthz": "test_ops.py: no login, says only alive",
    "readyz": "test_ops.py: no login, booleans and fixed reasons only",
    "metrics": "test_ops.py: 404 unless AGENTWEB_METRICS_TOKEN, then 401 without it",
}


def test_every_entry_point_of_the_project_is_accounted_for() -> None:
    from agentweb import urls as project_urls

    assert {str(p.pattern) for p in project_urls.urlpatterns} == set(PROJECT_ENTRY_POINTS)


def test_the_matrix_covers_every_url_and_socket() -> None:
    page_names = {pattern.name for pattern in urls.urlpatterns}
    assert page_names == {row.key for row in PAGES}
    routes = {
        f"{method} {path}"
        for _, router in api._routers
        for path, view in router.path_operations.items()
        for operation in view.operations
        for method in operation.methods
    }
    methods = ("GET ", "POST ", "PUT ", "DELETE ")
    assert routes == {row.key for row in API if row.key.startswith(methods)}
    admin_pages = {p.name for p in PolicyAdmin(Policy, site).get_urls() if p.name}
    own_admin_pages = {name for name in admin_pages if not name.endswith(DJANGO_ADMIN_PAGES)}
    assert own_admin_pages == {row.key for row in ADMIN}
    sockets = {str(pattern.pattern) for pattern in routing.websocket_urlpatterns}
    assert sockets == {"ws/approvals/", "ws/sessions/<int:session_id>/"}
    assert len(SOCKETS) == len(sockets)


# --- what each role sees, not only the status ----------------------------------------------


def test_an_outsider_gets_the_same_answer_as_for_an_id_that_does_not_exist(world: World) -> None:
    charlie = world.browser("outsider")
    hidden = charlie.get(f"/api/sessions/{world.session.pk}")
    missing = charlie.get("/api/sessions/999999")
    assert hidden.json() == {"detail": f"There is no session {world.session.pk}."}
    assert missing.json() == {"detail": "There is no session 999999."}


def test_the_session_list_shows_a_creator_only_their_own(world: World) -> None:
    assert [s["id"] for s in world.browser("creator").get("/api/sessions").json()["items"]] == [
        world.session.pk
    ]
    assert world.browser("outsider").get("/api/sessions").json()["items"] == []
    assert [s["id"] for s in world.browser("reviewer").get("/api/sessions").json()["items"]] == [
        world.session.pk
    ]


def test_only_reviewers_see_the_inbox(world: World) -> None:
    for role in ("creator", "outsider"):
        assert world.browser(role).get("/api/approvals").json()["items"] == []
        assert b"Nothing is waiting" in world.browser(role).get("/approvals/").content
    for role in ("reviewer", "superuser"):
        assert [c["id"] for c in world.browser(role).get("/api/approvals").json()["items"]] == [
            world.call.pk
        ]
        assert b"KEY=new" in world.browser(role).get("/approvals/").content


def test_a_pull_request_is_readable_by_whoever_sees_its_session(world: World) -> None:
    page = world.browser("creator").get(f"/pulls/{world.pull.pk}/").content
    assert b"+secret change" in re.sub(rb"<[^>]+>", b"", page)  # the diff view's text
    assert world.browser("outsider").get(f"/pulls/{world.pull.pk}/").status_code == 404


def test_a_creator_who_is_refused_a_decision_changes_nothing(world: World) -> None:
    answer = world.browser("creator").post(
        f"/api/tool-calls/{world.call.pk}/decision", {"decision": "deny"},
        content_type="application/json",
    )  # fmt: skip
    assert answer.status_code == 403
    world.call.refresh_from_db()
    assert world.call.status == ToolCall.Status.AWAITING_APPROVAL


def test_an_agent_token_does_not_carry_its_users_reviewer_rights(world: World) -> None:
    rita = world.people["reviewer"]
    agent = services.api_token_create(user=rita, scope="agent")
    review = services.api_token_create(user=rita, scope="review")
    url = f"/api/sessions/{world.session.pk}"
    assert Client().get(url, headers={"Authorization": f"Bearer {agent}"}).status_code == 404
    assert Client().get(url, headers={"Authorization": f"Bearer {review}"}).status_code == 200


def test_a_deactivated_creator_sees_nothing(world: World) -> None:
    alice = world.people["creator"]
    token = services.api_token_create(user=alice, scope="agent")
    browser = world.browser("creator")
    User.objects.filter(pk=alice.pk).update(is_active=False)
    url = f"/api/sessions/{world.session.pk}"
    assert Client().get(url, headers={"Authorization": f"Bearer {token}"}).status_code == 401
    assert browser.get(url).status_code == 401


def test_a_pull_request_recorded_for_a_session_belongs_to_it(world: World) -> None:
    store = PullRequestStore(session_id=world.session.pk)
    proposal = Proposal(
        title="Fix", body="", base="main", head="feature/b", draft=False, commits=[],
        diff="+fix\n", stat="",
    )  # fmt: skip
    ref = store.create("demo", proposal)
    pull = PullRequest.objects.get(number=ref.number, repo_key="demo")
    assert pull.session == world.session
    assert world.browser("creator").get(f"/pulls/{pull.pk}/").status_code == 200
    assert world.browser("outsider").get(f"/pulls/{pull.pk}/").status_code == 404
