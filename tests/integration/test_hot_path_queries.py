"""The database work on the hot paths is pinned: an allowed call in the worker, an
allowed PreToolUse of the gateway's hook, and an agent turn, which must not grow with
the conversation (BENCHMARKS.md, "Per call and per turn"). A change that adds a query
here should say why in its commit, and update the count."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.integration.agent_helpers import done, script, tool
from tests.integration.gateway_helpers import CWD, Hook
from tools_app import services
from tools_app.models import AgentMessage, AgentSession, Decision, Policy, Project, ToolCall
from tools_app.services import gateway, gateway_ran
from tools_app.services.conversations import conversation_messages
from tools_app.sql.prepared import Stand

pytestmark = pytest.mark.django_db

# Queries, transaction control (BEGIN, COMMIT, savepoints) left out: SELECT the call and
# its session and policy; SELECT the rules; the judge-and-claim UPDATE, the seqs, the two
# events; SELECT the cache; the finish UPDATE, the seq, the event, the cache upsert. On
# PostgreSQL a move that only its events follow is one statement with them (the claim's
# UPDATE, the seqs and the events in a data-modifying WITH, `lifecycle.tool_call_move`).
# (Before issue 23: 15, with the rules read twice and a person's approval asked thrice.)
ALLOWED_CALL_QUERIES = {"sqlite": 10, "postgresql": 6}
# An allowed PreToolUse, all in the request: SELECT the token (its last use is written at
# most once a minute), the session with its policy and whether it has a call of this tool
# a retry could join (it has not: its calls are not read), the rules; then the call is
# stored judged (approved, then running: the hook answers it at once) with its three
# events (received, approved, running), on PostgreSQL in one statement (the call's INSERT,
# the seq reservation, which also returns the session's project for the publishing
# after, and the events' INSERT in a data-modifying WITH), which needs no transaction:
# no BEGIN or COMMIT either. On SQLite, three statements in a transaction. Out of a
# test's transaction, the rules of an unchanged policy are not read either: one
# statement fewer (`test_rules_revision.py` pins that).
# (Before: 18, with the token written each time, a second move and the `received` event
# each with their own seq and INSERT, the call read back twice and its `Decision` asked;
# then 7 and a transaction: the calls read, the call stored pending, then claimed by an
# UPDATE.) The call is stored by `INSERT … ON CONFLICT DO NOTHING`, so no savepoint is
# taken around it: there is no transaction control at all on PostgreSQL.
ALLOWED_HOOK_QUERIES = {"sqlite": 6, "postgresql": 4}
# A session's first PreToolUse, allowed: the same, and its session found missing, the
# projects (the choice and the chosen in one read), the policy, the session's INSERT
# (`ON CONFLICT DO NOTHING`: no savepoint) and its `session.created` event, whose seq the
# INSERT already reserved; no calls lookup (a new session has none). (Before: 15 and a
# savepoint, with the projects read three times, a seq reservation of its own and the
# lookup; then 10, with the call stored pending and claimed.) On PostgreSQL the session's
# INSERT and its event are one statement, with no transaction (a data-modifying WITH).
FIRST_HOOK_QUERIES = {"sqlite": 10, "postgresql": 7}
# The PostToolUse of an allowed call: SELECT the token; the call of its tool use, through
# its session's unique key and the unique index of tool uses, with whether a person
# approved it, in one statement (the session is not read on its own); the finish UPDATE,
# the seq and the `tool_call.succeeded` event (on PostgreSQL one statement, with no
# transaction). (Before: the session read, then the call by `first()` through the
# session's index, walking the session's calls, and its `Decision` asked on its own.)
ALLOWED_POST_QUERIES = {"sqlite": 5, "postgresql": 3}
# The model turn and the read_file it asks for, settled inline: the same at turn 2 and 30
# (on PostgreSQL the judge-and-claim with its events is one statement; the finish is not:
# an agent's call wakes its agent after).
TURN_QUERIES = {"sqlite": 25, "postgresql": 20}
# Each count is per database: on PostgreSQL a seq reservation and the events it numbers
# are one statement (`live/events.py`, a data-modifying WITH), two on SQLite.
CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE SAVEPOINT")


def running_session(workspace: Path, creator: User, model: str = "") -> AgentSession:
    return AgentSession.objects.create(
        task="fix the bug", repo=str(workspace), workspace=str(workspace),
        status=AgentSession.Status.RUNNING, policy=Policy.objects.get(name="default"),
        creator=creator, model=model, system_prompt="You are an agent.",
    )  # fmt: skip


def real(queries: CaptureQueriesContext) -> list[str]:
    found = [query["sql"] for query in queries.captured_queries]
    return [sql for sql in found if not sql.startswith(CONTROL)]


def listed(queries: list[str]) -> str:
    return "\n".join(sql[:120] for sql in queries)


@pytest.mark.postgres
def test_an_allowed_read_file_costs_the_worker_a_fixed_number_of_statements(
    workspace: Path, creator: User
) -> None:
    session = running_session(workspace, creator)
    services.tool_call_run_in_process(session=session, tool="read_file", args={"path": "README.md"})
    args = {"path": "src/app.py"}
    call = services.tool_call_receive(session=session, tool="read_file", args=args)
    with CaptureQueriesContext(connection) as queries:
        services.tool_call_evaluate(tool_call_id=call.pk)
    assert ToolCall.objects.get(pk=call.pk).status == "succeeded"
    assert len(real(queries)) == ALLOWED_CALL_QUERIES[connection.vendor], listed(real(queries))


@pytest.mark.postgres
def test_an_allowed_pre_tool_use_costs_a_fixed_number_of_statements(
    creator: User, django_capture_on_commit_callbacks: Any
) -> None:
    hook = Hook(services.api_token_create(user=creator, scope="agent"))
    assert hook.pre("Bash", {"command": "ls"})["permissionDecision"] == "allow"
    # The publishing after the commit counts too (it once asked the session's project).
    with (
        CaptureQueriesContext(connection) as queries,
        django_capture_on_commit_callbacks(execute=True),
    ):
        answer = hook.pre("Bash", {"command": "ls -la"})
    assert answer["permissionDecision"] == "allow", answer
    assert "allowed by agentweb's policy" in answer["permissionDecisionReason"]
    call = ToolCall.objects.get(tool_use_id="toolu_2")
    assert (call.status, call.runner, call.hook_answered_at is not None) == (
        "running",
        "gateway",
        True,
    )
    types = list(call.session.events.filter(data__tool_call=call.pk).values_list("type", flat=True))
    assert types == ["tool_call.received", "tool_call.approved", "tool_call.running"]
    assert len(real(queries)) == ALLOWED_HOOK_QUERIES[connection.vendor], listed(real(queries))
    control = [
        q["sql"].split()[0] for q in queries.captured_queries if q["sql"].startswith(CONTROL)
    ]
    assert control == [], control


def test_an_allowed_calls_post_tool_use_costs_a_fixed_number_of_statements(
    creator: User, django_capture_on_commit_callbacks: Any
) -> None:
    hook = Hook(services.api_token_create(user=creator, scope="agent"))
    assert hook.pre("Bash", {"command": "ls"})["permissionDecision"] == "allow"
    ran = {"stdout": "README.md\n", "stderr": "", "interrupted": False}
    with (
        CaptureQueriesContext(connection) as queries,
        django_capture_on_commit_callbacks(execute=True),
    ):
        answer = hook.event("PostToolUse", "Bash", {"command": "ls"}, tool_use_id="toolu_1",
                            tool_response=ran)  # fmt: skip
    assert answer == {}, answer
    call = ToolCall.objects.get(tool_use_id="toolu_1")
    assert (call.status, call.result) == ("succeeded", "README.md")
    assert len(real(queries)) == ALLOWED_POST_QUERIES[connection.vendor], listed(real(queries))


def first_allowed_hook(creator: User, on_commit: Any) -> list[str]:
    """The statements of an allowed PreToolUse of a new session (the token used before)."""
    token = services.api_token_create(user=creator, scope="agent")
    Hook(token, session_id="earlier").pre("Bash", {"command": "ls"})  # the token's first use
    with CaptureQueriesContext(connection) as queries, on_commit(execute=True):
        assert Hook(token).pre("Bash", {"command": "ls"})["permissionDecision"] == "allow"
    return real(queries)


@pytest.mark.postgres
def test_a_sessions_first_pre_tool_use_costs_a_fixed_number_of_statements(
    creator: User, django_capture_on_commit_callbacks: Any
) -> None:
    queries = first_allowed_hook(creator, django_capture_on_commit_callbacks)
    assert len(queries) == FIRST_HOOK_QUERIES[connection.vendor], listed(queries)
    session = AgentSession.objects.get(external_id="cc-session-1")
    seqs = list(session.events.order_by("seq").values_list("seq", "type"))
    assert seqs == [
        (1, "session.created"), (2, "tool_call.received"), (3, "tool_call.approved"),
        (4, "tool_call.running"),
    ]  # fmt: skip
    assert session.last_event_seq == 4 and session.project.name == "default"


@pytest.mark.postgres
def test_a_first_pre_tool_use_in_a_project_of_its_own_policy_reads_that_policy_once(
    creator: User, django_capture_on_commit_callbacks: Any
) -> None:
    """The project is read with its policy: the session's policy is not read again."""
    team = Policy.objects.get(name="default")
    rules = list(team.rules.all())
    team.pk, team.name = None, "team"
    team.save()
    for rule in rules:
        rule.pk, rule.policy = None, team
        rule.save()
    project = Project.objects.create(name="alice", repositories=[CWD], policy=team)
    members = Group.objects.create(name="alice-team")
    project.members.add(members)
    creator.groups.add(members)
    queries = first_allowed_hook(creator, django_capture_on_commit_callbacks)
    policy_reads = [sql for sql in queries if sql.startswith('SELECT "tools_app_policy"."')]
    assert not policy_reads, listed(queries)
    session = AgentSession.objects.get(external_id="cc-session-1")
    assert (session.project.name, session.policy.name) == ("alice", "team")


def lookup_plan(sql: str, params: list[Any]) -> str:
    """The plan the database chose for the calls lookup, as text."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("EXPLAIN QUERY PLAN " + sql, params)
            return "\n".join(str(row[-1]) for row in cursor.fetchall())
        cursor.execute("ANALYZE tools_app_toolcall")
        cursor.execute("EXPLAIN " + sql, params)
        return "\n".join(row[0] for row in cursor.fetchall())


def long_session(creator: User) -> tuple[AgentSession, ToolCall]:
    """A gateway session of 3,000 answered calls, and one that waits for a person."""
    session = AgentSession.objects.create(
        task="t", policy=Policy.objects.get(name="default"), creator=creator,
        kind=AgentSession.Kind.GATEWAY, external_id="gw-long",
    )  # fmt: skip
    answered = dict(status="running", hook_answered_at="2026-12-01T00:00:00Z")
    ToolCall.objects.bulk_create(
        ToolCall(session=session, tool="run_command", native_tool="Bash",
                 tool_use_id=f"toolu_{n}", **answered)  # type: ignore[arg-type]
        for n in range(3000)
    )  # fmt: skip
    waiting = ToolCall.objects.create(
        session=session, tool="run_command", native_tool="Bash", tool_use_id="toolu_w",
        status="awaiting_approval",
    )  # fmt: skip
    return session, waiting


def prepared_plan(prepared: Any, values: dict[str, Any]) -> str:
    compiled = prepared._compile(connection.alias)
    return lookup_plan(
        compiled.sql, [values[p.name] if isinstance(p, Stand) else p for p in compiled.params]
    )


@pytest.mark.postgres
def test_a_hooks_calls_lookup_reads_through_indexes_however_long_the_session(
    creator: User,
) -> None:
    """A long session's earlier calls are not read on each hook: the call of the tool use
    and the unanswered ones a retry may join each come from an index of their own."""
    session, waiting = long_session(creator)
    values = {"session": session.pk, "native_tool": "Bash", "tool_use_id": "toolu_7"}
    plan = prepared_plan(gateway._CALLS, values)
    assert "one_call_per_native_tool_use" in plan, plan
    assert "unanswered_calls_by_tool" in plan, plan
    assert "Seq Scan" not in plan and "SCAN tools_app_toolcall" not in plan, plan
    found = gateway._CALLS.models(**values)
    assert [call.tool_use_id for call in found] == [waiting.tool_use_id, "toolu_7"]


@pytest.mark.postgres
def test_a_post_tool_use_finds_its_call_through_the_index_of_tool_uses(creator: User) -> None:
    """Its call, and whether a person approved it, without reading the session's other
    calls (`first()`'s ORDER BY made SQLite walk them all, on every PostToolUse)."""
    long_session(creator)
    reported = {"creator": creator.pk, "external_id": "gw-long", "tool_use_id": "toolu_7"}
    plan = prepared_plan(gateway_ran._REPORTED, reported)
    assert "one_call_per_native_tool_use" in plan, plan
    assert "Seq Scan on tools_app_toolcall" not in plan, plan
    assert "SCAN tools_app_toolcall" not in plan, plan
    assert "tools_app_toolcall_session_id" not in plan, plan
    [found] = gateway_ran._REPORTED.models(**reported)
    assert found.tool_use_id == "toolu_7" and found.approved_by_a_person is False  # type: ignore[attr-defined]
    Decision.objects.create(tool_call=found, decision=Decision.Choice.APPROVE)
    [found] = gateway_ran._REPORTED.models(**reported)
    assert found.approved_by_a_person is True  # type: ignore[attr-defined]
    assert gateway_ran._REPORTED.models(**reported | {"tool_use_id": ""}) == []
    assert gateway_ran._REPORTED.models(**reported | {"external_id": "another"}) == []
    assert gateway_ran._REPORTED.models(**reported | {"creator": creator.pk + 1}) == []


@pytest.mark.postgres
def test_a_turn_costs_the_same_statements_early_and_late_in_a_conversation(
    workspace: Path, creator: User, tmp_path: Path
) -> None:
    steps = [tool("read_file", path="README.md" if i % 2 else "src/app.py") for i in range(40)]
    session = running_session(workspace, creator, script(tmp_path, [*steps, done()]))
    counts = {}
    for turn in range(31):
        with CaptureQueriesContext(connection) as queries:
            services.agent_turn(session_id=session.pk)
        counts[turn] = real(queries)
    assert AgentMessage.objects.filter(session=session).count() == 1 + 2 * 31
    expected = TURN_QUERIES[connection.vendor]
    assert len(counts[2]) == len(counts[30]) == expected, listed(counts[30])


def test_a_turn_reads_only_the_messages_stored_since_the_last_one(
    workspace: Path, creator: User
) -> None:
    session = running_session(workspace, creator)
    for index in range(20):
        content = {"role": "user", "content": f"message {index}"}
        AgentMessage.objects.create(session=session, index=index, role="user", content=content)
    assert [m.index for m in conversation_messages(session)] == list(range(20))
    AgentMessage.objects.create(session=session, index=20, role="user", content={"role": "user"})
    with CaptureQueriesContext(connection) as queries:
        messages = conversation_messages(session)
    assert [m.index for m in messages] == list(range(21))
    assert len(queries) == 1
    assert '"index" >= 20' in queries.captured_queries[0]["sql"]


def test_messages_another_process_stored_meanwhile_are_read_too(
    workspace: Path, creator: User
) -> None:
    session = running_session(workspace, creator)
    AgentMessage.objects.create(session=session, index=0, role="user", content={"role": "user"})
    conversation_messages(session)
    for index in (1, 2, 3):  # another worker's turns
        AgentMessage.objects.create(session=session, index=index, role="user", content={})
    assert [m.index for m in conversation_messages(session)] == [0, 1, 2, 3]
