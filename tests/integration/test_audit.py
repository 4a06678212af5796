"""The audit trail (issue #25, part 4): every person's action recorded by the service that
makes it, in the same transaction, read on /audit/ and GET /api/audit, exported as CSV
and JSON Lines, never changed, pruned after AGENTWEB_AUDIT_DAYS."""

from __future__ import annotations

import asyncio
import csv
import hashlib
import io
import json
import tracemalloc
from datetime import UTC, timedelta
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.utils import timezone

from tests.integration.helpers import Api
from tools_app import services
from tools_app.models import AgentSession, AuditEntry, Channel, Policy, ToolCall
from tools_app.tables.audit import AppendOnly
from tools_app.tasks import sweep

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def tasks_in_process(settings: Any) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True


@pytest.fixture
def session(workspace: Path, creator: User) -> AgentSession:
    return AgentSession.objects.create(
        task="rotate the key", repo=str(workspace), workspace=str(workspace),
        status=AgentSession.Status.RUNNING, policy=Policy.objects.get(name="default"),
        creator=creator,
    )  # fmt: skip


def waiting_write(session: AgentSession, path: str = ".env") -> ToolCall:
    call = services.tool_call_run_in_process(
        session=session, tool="write_file", args={"path": path, "content": "KEY=new\n"}
    )
    assert call.status == "awaiting_approval"
    return call


@pytest.fixture
def waiting(session: AgentSession) -> ToolCall:
    return waiting_write(session)


@pytest.fixture
def auditor() -> User:
    """Olga is staff: she reads the audit trail, and holds a review token for scripts."""
    return User.objects.create_user("olga", is_staff=True)


@pytest.fixture
def olga(auditor: User) -> Api:
    return Api(services.api_token_create(user=auditor, scope="review"))


def browser_for(user: User) -> Client:
    browser = Client()
    browser.force_login(user)
    return browser


def sha256_of(preview: object) -> str:
    text = json.dumps(preview, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def decisions() -> list[AuditEntry]:
    return list(AuditEntry.objects.filter(action="decision").order_by("id"))


# --- what is recorded ------------------------------------------------------------------------


def test_a_decision_over_the_api_records_who_from_where_what_they_saw_and_why(
    rita: Api, waiting: ToolCall
) -> None:
    seen = sha256_of(waiting.preview)
    answer = rita.post(
        f"/tool-calls/{waiting.pk}/decision", {"decision": "deny", "reason": "not the key"}
    )
    assert answer.status_code == 200
    (entry,) = decisions()
    assert (entry.actor_name, entry.via, entry.decision) == ("rita", "api", "deny")
    assert entry.reason == "not the key"
    assert entry.preview_hash == seen and len(seen) == 64
    assert (entry.session_ref, entry.tool_call_ref, entry.tool) == (
        waiting.session_id,
        waiting.pk,
        "write_file",
    )
    assert entry.policy_name == "default"
    assert entry.details["status"] == "denied"


def test_a_decision_in_the_browser_is_recorded_as_from_the_browser(
    reviewer: User, waiting: ToolCall
) -> None:
    browser = browser_for(reviewer)
    answer = browser.post(f"/tool-calls/{waiting.pk}/decide", {"action": "approve"})
    assert answer.status_code == 302
    (entry,) = decisions()
    assert (entry.actor_name, entry.via, entry.decision) == ("rita", "browser", "approve")


def test_the_page_shows_an_edit_and_its_reason_with_times_in_their_zone(
    rita: Api, auditor: User, waiting: ToolCall
) -> None:
    """An edit-then-approve is not a plain approve: the page names the edited arguments
    (never their values) and the reason; every time says its zone."""
    edit = {"decision": "approve", "reason": "rotate to the vault's key",
            "args": {"path": ".env", "content": "KEY=from-vault\n"}}  # fmt: skip
    assert rita.post(f"/tool-calls/{waiting.pk}/decision", edit).status_code == 200
    (entry,) = decisions()
    assert entry.details["edited"] is True and entry.details["edited_args"] == ["content"]
    page = browser_for(auditor).get("/audit/").content.decode()
    row = page.split(f'id="audit-{entry.pk}"', 1)[1].split("</tr>", 1)[0]
    assert "<strong>approve</strong>" in row and "with edited arguments</strong> (content)" in row
    assert "rotate to the vault&#x27;s key" in row and "from-vault" not in row
    shown = entry.created_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
    assert f">{shown} UTC</time>" in row, row


def test_a_refused_or_second_decision_records_nothing(
    rita: Api, alice: Api, waiting: ToolCall
) -> None:
    assert alice.post(f"/tool-calls/{waiting.pk}/decision", {"decision": "approve"}).status_code
    assert not AuditEntry.objects.filter(action="decision").exists()
    assert rita.post(f"/tool-calls/{waiting.pk}/decision", {"decision": "deny"}).status_code == 200
    second = rita.post(f"/tool-calls/{waiting.pk}/decision", {"decision": "approve"})
    assert second.status_code == 409
    assert len(decisions()) == 1


def test_approve_and_remember_records_the_decision_and_the_rule(
    rita: Api, session: AgentSession
) -> None:
    call = services.tool_call_run_in_process(
        session=session, tool="run_command", args={"command": "pip install requests"}
    )
    assert call.status == "awaiting_approval", call.reason
    answer = rita.post(f"/tool-calls/{call.pk}/decision", {"decision": "approve", "remember": True})
    assert answer.status_code == 200
    decision, rule = AuditEntry.objects.filter(tool_call_ref=call.pk).order_by("id")
    assert (decision.action, rule.action) == ("decision", "rule.remember")
    assert rule.actor_name == "rita" and rule.via == "api"
    assert rule.details["args"]["command"] == "pip install requests"  # as a person would type it
    assert rule.preview_hash == decision.preview_hash != ""


def test_policy_changes_are_recorded_from_the_command_line_and_the_admin(
    tmp_path: Path, superuser: User
) -> None:
    data = {"name": "strict", "max_diff_lines": 100, "rules": []}
    (tmp_path / "strict.json").write_text(json.dumps(data))
    call_command("import_policy", str(tmp_path / "strict.json"), stdout=io.StringIO())
    imported = AuditEntry.objects.get(action="policy.change")
    assert (imported.via, imported.actor_name, imported.policy_name) == ("cli", "", "strict")
    assert imported.details["created"] is True

    policy = Policy.objects.get(name="strict")
    form = {
        "name": "strict", "description": "", "protected_paths": "", "blocked_commands": "",
        "approval_commands": "", "web_allow_hosts": "", "max_diff_lines": 90,
        "require_approval_above": policy.require_approval_above,
        "approval_timeout_seconds": policy.approval_timeout_seconds,
        "escalate_after_seconds": policy.escalate_after_seconds,
        "command_timeout_limit": policy.command_timeout_limit,
        "builtin_approvals": policy.builtin_approvals,
        "rules-TOTAL_FORMS": "0", "rules-INITIAL_FORMS": "0",
        "rules-MIN_NUM_FORMS": "0", "rules-MAX_NUM_FORMS": "1000",
    }  # fmt: skip
    answer = browser_for(superuser).post(f"/admin/tools_app/policy/{policy.pk}/change/", form)
    assert answer.status_code == 302
    edited = AuditEntry.objects.filter(action="policy.change").latest("id")
    assert (edited.via, edited.actor_name) == ("admin", "sam")
    assert "max_diff_lines" in edited.details["changed"]
    assert edited.details["version"] == Policy.objects.get(name="strict").version == 2


def test_skill_changes_tokens_and_cancels_are_recorded(
    superuser: User, creator: User, alice: Api, workspace: Path
) -> None:
    sam = Api(services.api_token_create(user=superuser, scope="review", by=superuser, via="api"))
    skill = {
        "name": "lint", "description": "Runs the linter", "triggers": ["lint"],
        "tools": [{"name": "run_lint", "description": "lint", "inputSchema": {"type": "object"},
                   "executor": {"kind": "command", "command": "ruff check ."}}],
    }  # fmt: skip
    assert sam.post("/skills", skill).status_code == 201
    assert sam.client.delete("/api/skills/lint", headers=sam.headers).status_code == 204
    changed, deleted = AuditEntry.objects.filter(object_type="skill").order_by("id")
    assert (changed.action, changed.via, changed.actor_name) == ("skill.change", "api", "sam")
    assert changed.details["tools"] == ["run_lint"]
    assert deleted.action == "skill.delete"

    made = AuditEntry.objects.filter(action="token.create").order_by("id")
    by_sam = made.get(actor_name="sam")
    prefix = by_sam.details["prefix"]
    assert by_sam.details == {"user": "sam", "scope": "review", "prefix": prefix, "name": "",
                              "expires_at": None}  # fmt: skip
    assert made.filter(actor_name="", via="cli").count() == 1  # Alice's, from the fixture

    session = AgentSession.objects.create(
        task="t", repo=str(workspace), workspace=str(workspace), creator=creator,
        status=AgentSession.Status.RUNNING, policy=Policy.objects.get(name="default"),
    )  # fmt: skip
    assert alice.post(f"/sessions/{session.pk}/cancel", {}).status_code == 200
    cancel = AuditEntry.objects.get(action="session.cancel")
    assert (cancel.actor_name, cancel.via, cancel.session_ref) == ("alice", "api", session.pk)
    assert alice.post(f"/sessions/{session.pk}/cancel", {}).status_code == 200
    assert AuditEntry.objects.filter(action="session.cancel").count() == 1  # already cancelled


# --- append-only ---------------------------------------------------------------------------


def test_an_entry_is_never_changed_or_deleted(rita: Api, waiting: ToolCall) -> None:
    rita.post(f"/tool-calls/{waiting.pk}/decision", {"decision": "deny"})
    entry = decisions()[0]
    entry.reason = "rewritten"
    with pytest.raises(AppendOnly):
        entry.save()
    with pytest.raises(AppendOnly):
        entry.delete()
    with pytest.raises(AppendOnly):
        AuditEntry.objects.filter(pk=entry.pk).update(reason="rewritten")
    with pytest.raises(AppendOnly):
        AuditEntry.objects.all().delete()
    assert AuditEntry.objects.get(pk=entry.pk).reason == ""


def test_the_admin_shows_entries_read_only(superuser: User, rita: Api, waiting: ToolCall) -> None:
    rita.post(f"/tool-calls/{waiting.pk}/decision", {"decision": "deny", "reason": "no"})
    entry = decisions()[0]
    admin = browser_for(superuser)
    assert admin.get("/admin/tools_app/auditentry/").status_code == 200
    page = admin.get(f"/admin/tools_app/auditentry/{entry.pk}/change/")
    assert page.status_code == 200 and b'name="_save"' not in page.content
    assert admin.get("/admin/tools_app/auditentry/add/").status_code == 403
    deleted = admin.post(f"/admin/tools_app/auditentry/{entry.pk}/delete/", {"post": "yes"})
    assert deleted.status_code == 403
    bulk = admin.post(
        "/admin/tools_app/auditentry/",
        {"action": "delete_selected", "_selected_action": [entry.pk], "post": "yes"},
    )
    assert bulk.status_code in (200, 302)
    assert AuditEntry.objects.filter(pk=entry.pk).exists()


# --- reading: who may, pages, filters ------------------------------------------------------


def entry(**fields: Any) -> AuditEntry:
    """An entry as a decision writes one (the services' own writer)."""
    defaults = {
        "action": "decision", "via": "api", "object_type": "tool_call", "decision": "approve",
        "tool": "write_file", "policy": "default",
    }  # fmt: skip
    return services.audit_record(**{**defaults, **fields})


def test_only_staff_or_the_permission_read_the_trail(
    olga: Api, rita: Api, alice: Api, reviewer: User, auditor: User
) -> None:
    assert olga.get("/audit").status_code == 200
    assert rita.get("/audit").status_code == 403
    assert alice.get("/audit").status_code == 403
    assert browser_for(reviewer).get("/audit/").status_code == 403
    reviewer.user_permissions.add(Permission.objects.get(codename="view_auditentry"))
    assert browser_for(User.objects.get(pk=reviewer.pk)).get("/audit/").status_code == 200
    assert browser_for(auditor).get("/audit/").status_code == 200
    staff_agent = Api(services.api_token_create(user=auditor, scope="agent"))
    assert staff_agent.get("/audit").status_code == 403
    assert Client().get("/audit/").status_code == 302  # to the login page


def test_the_api_pages_newest_first_and_filters(
    olga: Api, session: AgentSession, superuser: User
) -> None:
    old = timezone.now() - timedelta(days=3)
    first = entry(actor=superuser, session_id=session.pk, decision="deny")
    second = entry(actor=superuser, tool="run_command", policy="strict")
    third = entry(session_id=session.pk + 1, via="browser")
    items = olga.get("/audit?limit=2").json()
    assert [i["id"] for i in items["items"]] == [third.pk, second.pk]
    rest = olga.get(f"/audit?limit=2&cursor={items['next']}").json()
    assert [i["id"] for i in rest["items"]][:1] == [first.pk]

    def ids(query: str) -> list[int]:
        answer = olga.get(f"/audit?{query}")
        assert answer.status_code == 200, answer.content
        return [i["id"] for i in answer.json()["items"] if i["action"] == "decision"]

    assert ids("person=sam") == [second.pk, first.pk]
    assert ids("decision=deny") == [first.pk]
    assert ids("tool=run_command") == [second.pk]
    assert ids(f"session={session.pk}") == [first.pk]
    assert ids("policy=strict") == [second.pk]
    assert ids("via=browser") == [third.pk]
    assert ids(f"since={timezone.now().date().isoformat()}") == [third.pk, second.pk, first.pk]
    assert ids(f"until={old.date().isoformat()}") == []
    shown = olga.get(f"/audit?session={session.pk}").json()["items"][0]
    assert shown["actor"] == "sam" and shown["session"] == session.pk


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("decision=maybe", "decision"),
        ("since=yesterday", "since"),
        ("action=delete_everything", "action"),
        ("cursor=nope", "cursor"),
        ("session=x", "session"),
        ("session=%C2%B2", "session"),  # '²': isdigit() holds, int() raised (a 500)
        ("session=" + "9" * 30, "session"),  # past any database's integer
    ],
)
def test_a_bad_filter_is_a_422_naming_it(olga: Api, query: str, named: str) -> None:
    answer = olga.get(f"/audit?{query}")
    assert answer.status_code == 422
    assert named in json.dumps(answer.json())


def test_the_page_lists_filters_and_links_the_exports(
    auditor: User, rita: Api, waiting: ToolCall
) -> None:
    rita.post(f"/tool-calls/{waiting.pk}/decision", {"decision": "deny", "reason": "<b>no</b>"})
    browser = browser_for(auditor)
    page = browser.get("/audit/?decision=deny").content.decode()
    assert f'id="audit-{decisions()[0].pk}"' in page
    assert "&lt;b&gt;no&lt;/b&gt;" in page and "<b>no</b>" not in page
    assert "decision=deny&amp;format=csv" in page
    assert (
        f'id="audit-{decisions()[0].pk}"'
        not in browser.get("/audit/?decision=approve").content.decode()
    )
    bad = browser.get("/audit/?since=soon")
    assert bad.status_code == 400 and "since" in bad.content.decode()
    for garbled in ("%C2%B2", "9" * 30):  # '²' (isdigit() holds, int() raised), 30 digits
        bad = browser.get(f"/audit/?session={garbled}")
        assert bad.status_code == 400 and "session: must be a session id" in bad.content.decode()
        export = browser.get(f"/audit/export/?session={garbled}")
        assert export.status_code == 400 and "session" in export.content.decode()


# --- exports --------------------------------------------------------------------------------


def body_of(answer: Any) -> str:
    """An export's body, read as the server reads it: from its async iterator."""

    async def read() -> bytes:
        return b"".join([chunk async for chunk in answer.streaming_content])

    assert answer.is_async, "a sync iterator is read whole under ASGI before a byte is sent"
    return async_to_sync(read)().decode()


def test_exports_as_csv_and_json_lines_with_the_same_filters(
    olga: Api, auditor: User, superuser: User
) -> None:
    entry(actor=superuser, reason="=HYPERLINK(1)")
    entry(decision="deny", reason="line one\nline two")
    answer = olga.get("/audit/export?format=csv&person=sam")
    assert answer.status_code == 200 and answer["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(body_of(answer))))
    decided = [row for row in rows if row["action"] == "decision"]
    assert [row["actor"] for row in decided] == ["sam"]
    assert decided[0]["reason"] == "'=HYPERLINK(1)"  # never a formula in a spreadsheet

    lines = body_of(browser_for(auditor).get("/audit/export/?format=jsonl&decision=deny"))
    (one,) = [json.loads(line) for line in lines.splitlines()]
    assert one["reason"] == "line one\nline two" and one["decision"] == "deny"
    assert olga.get("/audit/export?format=xml").status_code == 422


def test_a_day_of_ten_thousand_decisions_streams_in_constant_memory(olga: Api) -> None:
    """The export's peak memory while streaming 10,000 rows stays a small fraction of
    what it sends: rows are read in chunks and written one line at a time."""
    day = timezone.now().replace(hour=12, minute=0, second=0, microsecond=0)
    AuditEntry.objects.bulk_create(
        AuditEntry(
            created_at=day, actor_name=f"reviewer{i % 7}", via="api", action="decision",
            decision="approve" if i % 3 else "deny", object_type="tool_call",
            object_id=str(i), object_repr=f"tool call {i}: write_file", tool="write_file",
            session_ref=i // 10, tool_call_ref=i, policy_name="default", preview_hash="ab" * 32,
            reason="looks right to me " * 4, details={"status": "approved", "edited": False},
        )
        for i in range(10_000)
    )  # fmt: skip
    day_query = f"since={day.date().isoformat()}&until={day.date().isoformat()}"
    for fmt in ("jsonl", "csv"):
        small_peak, small_sent, small_lines = streamed(olga, f"{day_query}&person=reviewer0", fmt)
        peak, sent, lines = streamed(olga, f"{day_query}&action=decision", fmt)
        assert small_lines >= 1_400 and lines >= 10_000
        assert sent > 2_000_000 and sent > 6 * small_sent
        # seven times the rows, about the same memory: the chunk, not the answer
        assert peak < small_peak * 1.5 and peak < sent / 2, (fmt, peak, small_peak, sent)


def streamed(api: Api, query: str, fmt: str) -> tuple[int, int, int]:
    """The peak memory traced while reading the export, the bytes and lines sent."""
    answer = api.get(f"/audit/export?format={fmt}&{query}")
    assert answer.status_code == 200 and answer.is_async

    async def read() -> tuple[int, int]:
        sent = lines = 0
        async for chunk in answer.streaming_content:
            sent += len(chunk)
            lines += chunk.count(b"\n")
        return sent, lines

    tracemalloc.start()
    sent, lines = async_to_sync(read)()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak, sent, lines


@pytest.mark.django_db(transaction=True, serialized_rollback=True)  # ASGI: a thread of its own
@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_the_export_sends_its_first_lines_before_it_has_read_the_last(olga: Api, fmt: str) -> None:
    """Through the ASGI application daphne serves: the first bytes leave while rows are
    still to be read (an entry recorded once they have left is in the export), a batch at
    a time, never the whole export at once."""
    AuditEntry.objects.bulk_create(
        AuditEntry(via="api", action="decision", object_type="tool_call", object_id=str(i),
                   reason="looks right to me " * 4)
        for i in range(2_000)
    )  # fmt: skip
    status, chunks = asgi_export(f"format={fmt}", olga.headers["Authorization"])
    assert status == 200
    body = b"".join(chunks).decode()
    assert "recorded after the first byte" in body
    assert len(chunks) >= 4 and max(map(len, chunks)) < len(body) / 3


def asgi_export(query: str, authorization: str) -> tuple[int, list[bytes]]:
    """GET /api/audit/export through `agentweb.asgi.application`; when the first body
    bytes are sent, one more entry is recorded. The status and the body's chunks."""
    from agentweb.asgi import application

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
        "scheme": "http", "path": "/api/audit/export", "raw_path": b"/api/audit/export",
        "query_string": query.encode(), "root_path": "", "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8000),
        "headers": [(b"host", b"localhost"), (b"authorization", authorization.encode())],
    }  # fmt: skip
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if not sent and not getattr(receive, "asked", False):
            receive.asked = True  # type: ignore[attr-defined]
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.Event().wait()  # the client stays connected
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        body = message["type"] == "http.response.body" and message.get("body")
        if body and not any(m["type"] == "http.response.body" for m in sent):
            await sync_to_async(entry)(reason="recorded after the first byte")
        sent.append(message)

    async_to_sync(application)(scope, receive, send)
    chunks = [m["body"] for m in sent if m["type"] == "http.response.body" and m.get("body")]
    return sent[0]["status"], chunks


# --- retention --------------------------------------------------------------------------------


def test_the_sweep_prunes_entries_past_the_retention(settings: Any) -> None:
    settings.AGENTWEB_AUDIT_DAYS = 30
    old = entry()
    kept = entry()
    with connection.cursor() as cursor:  # backdated behind the model's back, as time does
        stamp = connection.ops.adapt_datetimefield_value(timezone.now() - timedelta(days=31))
        cursor.execute(
            "UPDATE tools_app_auditentry SET created_at = %s WHERE id = %s", [stamp, old.pk]
        )
    sweep()
    assert list(AuditEntry.objects.values_list("pk", flat=True)) == [kept.pk]
    settings.AGENTWEB_AUDIT_DAYS = 0
    assert services.audit_prune(now=timezone.now() + timedelta(days=1000)) == 0


# --- notification channels ----------------------------------------------------------------------

HOOK_SECRETS = ("hook-secret-4242", "hook-secret-5353")
SLACK_SECRETS = ("xoxb-bot-token-4242", "signing-secret-4242")


def channel_form(**fields: str) -> dict[str, str]:
    form = {"name": "ops", "kind": "webhook", "enabled": "on", "url": "http://127.0.0.1:9/hook",
            "secret": "", "signing_secret": "", "slack_channel": "", "recipients": "",
            "sessions": "", "rules": ""}  # fmt: skip
    return {**form, **fields}


def channel_entries() -> list[AuditEntry]:
    return list(AuditEntry.objects.filter(object_type="channel").order_by("id"))


def assert_shown_never_with_a_secret(
    olga: Api, auditor: User, name: str, secrets: tuple[str, ...]
) -> None:
    """The channel's entries are on /audit/, in the API and in both exports; its secrets
    are in none of them, nor in any entry."""
    texts = [
        olga.get("/audit").content.decode(),
        browser_for(auditor).get("/audit/").content.decode(),
    ]
    texts += [body_of(olga.get(f"/audit/export?format={fmt}")) for fmt in ("csv", "jsonl")]
    assert all(f"channel {name}" in text for text in texts)
    texts += [str(vars(entry)) for entry in AuditEntry.objects.all()]
    assert not [secret for secret in secrets for text in texts if secret in text]


def test_channel_changes_in_the_admin_are_recorded_never_with_a_secret(
    settings: Any, superuser: User, olga: Api, auditor: User
) -> None:
    settings.AGENTWEB_NOTIFY_HOSTS = settings.AGENTWEB_NOTIFY_PRIVATE_HOSTS = ["127.0.0.1"]
    admin = browser_for(superuser)
    assert (
        admin.post(
            "/admin/tools_app/channel/add/", channel_form(secret=HOOK_SECRETS[0])
        ).status_code
        == 302
    )
    channel = Channel.objects.get(name="ops")
    change = f"/admin/tools_app/channel/{channel.pk}/change/"
    moved = channel_form(url="http://127.0.0.1:9/other")  # the secret left empty: kept
    assert admin.post(change, moved).status_code == 302
    assert admin.post(change, {**moved, "secret": HOOK_SECRETS[1]}).status_code == 302
    deleted = admin.post(f"/admin/tools_app/channel/{channel.pk}/delete/", {"post": "yes"})
    assert deleted.status_code == 302 and not Channel.objects.exists()

    added, edited, rotated, gone = channel_entries()
    assert {(e.via, e.actor_name, e.object_repr) for e in channel_entries()} == {
        ("admin", "sam", "channel ops")
    }
    assert [e.action for e in (added, edited, rotated, gone)] == [
        "channel.change", "channel.change", "channel.change", "channel.delete",
    ]  # fmt: skip
    assert added.details["created"] is True and "secret" in added.details["changed"]
    assert edited.details["changed"] == ["url"]  # the secret was kept, not changed
    assert rotated.details["changed"] == ["secret"]  # by name: a new one was typed
    answer = olga.get("/audit?action=channel.delete")
    assert [item["object"] for item in answer.json()["items"]] == ["channel ops"]
    assert_shown_never_with_a_secret(olga, auditor, "ops", HOOK_SECRETS)


def test_an_import_of_channels_is_recorded_never_with_a_secret(
    settings: Any, tmp_path: Path, olga: Api, auditor: User
) -> None:
    settings.AGENTWEB_NOTIFY_HOSTS = settings.AGENTWEB_NOTIFY_PRIVATE_HOSTS = ["127.0.0.1"]
    team = {"name": "team", "kind": "slack", "url": "http://127.0.0.1:9/api",
            "slack_channel": "C0TEAM", "interactive": True}  # fmt: skip
    path = tmp_path / "channels.json"
    secrets = dict(zip(("secret", "signing_secret"), SLACK_SECRETS, strict=True))
    path.write_text(json.dumps({"channels": [{**team, **secrets}]}))
    call_command("import_channels", str(path), stdout=io.StringIO())
    path.write_text(json.dumps({"channels": [{**team, "interactive": False}]}))
    call_command("import_channels", str(path), stdout=io.StringIO())

    first, second = channel_entries()
    assert {(e.action, e.via, e.actor_name) for e in (first, second)} == {
        ("channel.change", "cli", "")
    }
    assert first.details == {"imported": True, "created": True, "kind": "slack",
                             "secrets_replaced": ["secret", "signing_secret"]}  # fmt: skip
    assert second.details["created"] is False and second.details["secrets_replaced"] == []
    assert_shown_never_with_a_secret(olga, auditor, "team", SLACK_SECRETS)
