"""Projects (issue 34, items 2 and 4): a reviewer of project A tries every surface on a
call of project B — lists, details, decisions, websockets, a Slack button, the audit
trail and its export, MCP's await_tool_call, a hook event naming B's session — and each
is refused or shows nothing, and nothing of B changes. B's own reviewer decides it."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.layers import channel_layers
from django.contrib.auth.models import Group, Permission, User
from django.core.management import CommandError, call_command
from django.test import Client
from mcp import Client as McpClient

from tests.integration.gateway_helpers import Hook
from tests.integration.helpers import Api, start_session
from tests.integration.test_audit import body_of
from tests.integration.test_notify_slack import SIGNING, click
from tests.integration.test_websockets import connect, cookie_for
from tools_app import services
from tools_app.api.mcp_callers import Principal
from tools_app.api.mcp_server import build_server
from tools_app.models import (
    AgentSession,
    Approval,
    AuditEntry,
    Channel,
    Decision,
    Delivery,
    Event,
    Project,
    SlackUser,
    ToolCall,
)
from tools_app.services.projects import project_import

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@pytest.fixture(autouse=True)
def in_process(settings: Any) -> Iterator[None]:
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    settings.AGENTWEB_MCP_WAIT_SECONDS = 0
    settings.AGENTWEB_HOOK_WAIT_SECONDS = 0
    channel_layers.backends = {}
    yield
    channel_layers.backends = {}


def reviewer_of(name: str, team: str) -> User:
    user = User.objects.create_user(name, password="a-long-password")
    user.groups.add(Group.objects.get_or_create(name=team)[0])
    user.user_permissions.add(Permission.objects.get(codename="view_auditentry"))
    return user


@pytest.fixture
def teams(workspace: Path, tmp_path: Path) -> dict[str, Any]:
    """Payments (B) owns `workspace`; platform (A) owns nothing here. Ann reviews A,
    Ben reviews B, Alice (a member of B) started B's session, whose .env write waits."""
    project_import(data={"name": "platform", "reviewers": ["platform-reviewers"],
                         "repositories": [str(tmp_path / "platform-*")]})  # fmt: skip
    project_import(data={"name": "payments", "reviewers": ["payments-reviewers"],
                         "members": ["payments"], "repositories": [str(workspace)]})  # fmt: skip
    ann, ben = reviewer_of("ann", "platform-reviewers"), reviewer_of("ben", "payments-reviewers")
    alice = User.objects.create_user("alice")
    alice.groups.add(Group.objects.get(name="payments"))
    agent = Api(services.api_token_create(user=alice, scope="agent"))
    session = AgentSession.objects.get(pk=start_session(agent, workspace)["id"])
    call = services.tool_call_run_in_process(
        session=session, tool="write_file", args={"path": ".env", "content": "KEY=new\n"}
    )
    assert session.project.name == "payments" and call.status == "awaiting_approval"
    return {"ann": ann, "ben": ben, "alice": alice, "session": session, "call": call}


def untouched(call: ToolCall, events_before: int) -> None:
    call.refresh_from_db()
    assert call.status == "awaiting_approval"
    assert not Decision.objects.filter(tool_call=call).exists()
    assert not Approval.objects.filter(tool_call=call).exists()
    assert Event.objects.filter(session_id=call.session_id).count() == events_before


def test_a_reviewer_of_another_project_sees_and_decides_nothing_of_it(
    teams: dict[str, Any],
) -> None:
    ann, call, session = teams["ann"], teams["call"], teams["session"]
    events_before = Event.objects.filter(session=session).count()
    api = Api(services.api_token_create(user=ann, scope="review"))
    assert api.get("/sessions").json()["items"] == []
    assert api.get("/approvals").json()["items"] == []
    assert api.get(f"/sessions/{session.pk}").status_code == 404
    assert api.get(f"/tool-calls/{call.pk}").status_code == 404
    assert api.post(f"/tool-calls/{call.pk}/decision", {"decision": "approve"}).status_code == 404

    browser = Client()
    browser.force_login(ann)
    assert f"#{session.pk}" not in browser.get("/sessions/").content.decode()
    assert f'id="call-{call.pk}"' not in browser.get("/approvals/").content.decode()
    assert browser.get(f"/sessions/{session.pk}/").status_code == 404
    assert browser.get(f"/approvals/cards/{call.pk}/").status_code == 404
    assert browser.post(f"/tool-calls/{call.pk}/decide", {"action": "approve"}).status_code == 404
    untouched(call, events_before)


def test_websockets_of_another_project_are_refused_or_silent(teams: dict[str, Any]) -> None:
    ann, session = teams["ann"], teams["session"]
    cookie = cookie_for(ann)

    async def scenario() -> None:
        watch = connect(f"/ws/sessions/{session.pk}/", cookie)
        assert not (await watch.connect())[0]
        inbox = connect("/ws/approvals/", cookie)
        assert (await inbox.connect())[0]
        snapshot = await inbox.receive_json_from()
        assert snapshot["tool_calls"] == []
        await database_sync_to_async(services.tool_call_run_in_process)(
            session=session, tool="write_file", args={"path": ".npmrc", "content": "x\n"}
        )
        assert await inbox.receive_nothing(timeout=0.5)
        await inbox.disconnect()

    async_to_sync(scenario)()


def test_a_slack_button_mcp_and_a_hook_reach_nothing_of_another_project(
    teams: dict[str, Any],
) -> None:
    ann, call, session = teams["ann"], teams["call"], teams["session"]
    events_before = Event.objects.filter(session=session).count()
    Channel.objects.create(name="team", kind="slack", url="http://127.0.0.1:9/api",
                           signing_secret=SIGNING, interactive=True)  # fmt: skip
    SlackUser.objects.create(slack_id="U0ANN", user=ann)
    answer = click(call, "U0ANN")
    assert answer.status_code == 200 and "approved" not in answer.json()["text"]

    server = build_server(lambda ctx: Principal(user=ann, scope="agent", connection="one"))

    async def awaited() -> Any:
        async with McpClient(server, mode="legacy") as client:
            return await client.call_tool("await_tool_call", {"id": call.pk})

    result = anyio.run(awaited)
    assert result.is_error and f"{call.pk}" in "".join(block.text for block in result.content)

    session.external_id = "claude-session-of-alice"
    AgentSession.objects.filter(pk=session.pk).update(external_id=session.external_id)
    hook = Hook(services.api_token_create(user=ann, scope="agent"), session.external_id)
    hook.pre("Write", {"file_path": "/tmp/x/notes.txt", "content": "hi\n"})
    mine = AgentSession.objects.get(creator=ann)
    assert mine.pk != session.pk and mine.project.name == "default"
    untouched(call, events_before)


def test_the_audit_trail_and_its_export_hold_only_ones_own_projects(
    teams: dict[str, Any],
) -> None:
    ann, ben, call = teams["ann"], teams["ben"], teams["call"]
    ben_api = Api(services.api_token_create(user=ben, scope="review"))
    decided = ben_api.post(f"/tool-calls/{call.pk}/decision", {"decision": "deny"})
    assert decided.status_code == 200 and decided.json()["status"] == "denied"
    entry = AuditEntry.objects.get(action="decision")
    assert entry.project_name == "payments"

    ann_api = Api(services.api_token_create(user=ann, scope="review"))
    assert ann_api.get("/audit?project=payments").json()["items"] == []
    seen = {row["project"] for row in ann_api.get("/audit").json()["items"]}
    assert seen == {"platform"}  # her own project's import, nothing of payments
    exported = ann_api.get("/audit/export?format=jsonl")
    lines = body_of(exported).splitlines()
    assert {json.loads(line)["project"] for line in lines} == {"platform"}
    browser = Client()
    browser.force_login(ann)
    assert f'id="audit-{entry.pk}"' not in browser.get("/audit/?project=payments").content.decode()

    mine = ben_api.get("/audit/export?format=jsonl")
    rows = [json.loads(line) for line in body_of(mine).splitlines()]
    assert rows and {row["project"] for row in rows} == {"payments"}


def test_a_session_goes_to_the_project_of_its_repository_and_only_members_start_it(
    teams: dict[str, Any], workspace: Path
) -> None:
    outsider = Api(services.api_token_create(user=teams["ann"], scope="agent"))
    refused = outsider.post("/sessions", {"task": "t", "repo": str(workspace)})
    assert refused.status_code == 403 and "'payments'" in refused.json()["detail"]
    named = outsider.post("/sessions", {"task": "t", "repo": str(workspace), "project": "payments"})
    assert named.status_code == 404
    assert AgentSession.objects.count() == 1
    assert Project.objects.get(name="payments").sessions.count() == 1


def test_a_channel_of_one_project_hears_nothing_of_another(teams: dict[str, Any]) -> None:
    platform = Channel.objects.create(name="platform-hook", kind="webhook",
                                      url="http://127.0.0.1:9/hook", secret="s")  # fmt: skip
    platform.projects.set([Project.objects.get(name="platform")])
    everyone = Channel.objects.create(name="all-hook", kind="webhook",
                                      url="http://127.0.0.1:9/all", secret="s")  # fmt: skip
    services.tool_call_run_in_process(
        session=teams["session"], tool="write_file", args={"path": ".npmrc", "content": "x\n"}
    )
    told = {delivery.channel.name for delivery in Delivery.objects.select_related("channel")}
    assert told == {"all-hook"} and everyone.deliveries.exists()


def test_a_project_file_exports_imports_and_a_bad_one_changes_nothing(
    teams: dict[str, Any], tmp_path: Path
) -> None:
    printed = io.StringIO()
    call_command("export_project", "payments", stdout=printed)
    exported = json.loads(printed.getvalue())
    assert exported["reviewers"] == ["payments-reviewers"] and exported["members"] == ["payments"]
    path = tmp_path / "payments.json"
    path.write_text(json.dumps(exported | {"description": "money"}))
    call_command("import_project", str(path), stdout=io.StringIO())
    assert Project.objects.get(name="payments").description == "money"
    bad = exported | {"repositories": [""], "policy": "nope", "owner": "x"}
    path.write_text(json.dumps(bad))
    with pytest.raises(CommandError) as refused:
        call_command("import_project", str(path), stdout=io.StringIO())
    for named in ("repositories[0]", "no policy named 'nope'", "owner: unknown key"):
        assert named in str(refused.value)
    assert Project.objects.get(name="payments").description == "money"
    with pytest.raises(CommandError, match="no project named 'nope'"):
        call_command("export_project", "nope", stdout=io.StringIO())


def test_a_tokens_project_holds_the_sessions_its_hooks_start(teams: dict[str, Any]) -> None:
    alice = teams["alice"]
    with pytest.raises(services.ServiceError, match="no project named 'platform'"):
        services.api_token_create(user=alice, scope="agent", project="platform", by=alice)
    token = services.api_token_create(user=alice, scope="agent", project="payments", by=alice)
    Hook(token, "laptop-session").pre("Write", {"file_path": "/tmp/x/a.txt", "content": "a\n"})
    started = AgentSession.objects.get(external_id="laptop-session")
    assert started.project.name == "payments"
    entry = AuditEntry.objects.filter(action="token.create").latest("id")
    assert entry.details["project"] == "payments"
    browser = Client()
    browser.force_login(alice)
    page = browser.get("/settings/tokens/").content.decode()
    assert '<option value="payments">payments</option>' in page
    assert '<option value="platform">' not in page


def test_the_hook_urls_project_names_the_project_of_the_sessions_it_starts(
    teams: dict[str, Any],
) -> None:
    mine = Hook(services.api_token_create(user=teams["alice"], scope="agent"), "by-url")
    mine.url += "?project=payments"
    mine.pre("Write", {"file_path": "/tmp/x/a.txt", "content": "a\n"})
    assert AgentSession.objects.get(external_id="by-url").project.name == "payments"
    theirs = Hook(services.api_token_create(user=teams["ann"], scope="agent"), "not-hers")
    theirs.url += "?project=payments"
    refused = theirs.pre("Write", {"file_path": "/tmp/x/a.txt", "content": "a\n"})
    assert refused["permissionDecision"] == "deny"
    assert "names no project you may use ('payments')" in refused["permissionDecisionReason"]
    assert not AgentSession.objects.filter(external_id="not-hers").exists()


@pytest.mark.django_db
def test_a_project_saved_in_the_admin_is_in_the_audit_trail(admin_client: Client) -> None:
    reviewers = Group.objects.create(name="data-reviewers")
    form = {"name": "data", "description": "", "reviewers": [reviewers.pk],
            "repositories": "/srv/git/data-*\n", "policy": ""}  # fmt: skip
    answer = admin_client.post("/admin/tools_app/project/add/", form)
    assert answer.status_code == 302, answer.content.decode()[-2000:]
    entry = AuditEntry.objects.get(action="project.change")
    assert (entry.via, entry.project_name) == ("admin", "data")
    assert entry.details["reviewers"] == ["data-reviewers"] and entry.details["created"]
    refused = admin_client.post("/admin/tools_app/project/add/", form | {"name": "x",
                                "repositories": "/srv/\x01*"})  # fmt: skip
    assert refused.status_code == 200 and "control characters" in refused.content.decode()
    assert not Project.objects.filter(name="x").exists()
