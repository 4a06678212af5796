"""The lifecycle: every declared move goes from exactly its sources to its targets, and
nothing outside `services/lifecycle.py` writes a tool call's or a session's status
or makes a tool call (a birth is a move from nothing, with the same follow-ups)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tools_app.models import AgentSession, Channel, Delivery, Event, Policy, ToolCall
from tools_app.services.lifecycle import (
    AGENT,
    CALLS,
    CLOCK,
    PERSON,
    POLICY,
    SESSION_MOVES,
    TOOL_CALL_BIRTHS,
    TOOL_CALL_MOVES,
    WORKER,
    Judged,
    session_move,
    tool_call_create,
    tool_call_create_judged,
    tool_call_move,
)

ACTORS = frozenset({POLICY, PERSON, CLOCK, WORKER, AGENT, CALLS})

# The claims are conditional updates: database semantics, run on PostgreSQL too.
pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

ROOT = Path(__file__).resolve().parents[2] / "tools_app"
LIFECYCLE = ROOT / "services" / "lifecycle.py"
# Sessions born with a status: the first status is part of creating them, not a move.
# (A tool call is born in the lifecycle only: `tool_call_create`.)
CREATED_WITH = {
    ("services/sessions.py", "SessionStatus.QUEUED"),
    ("services/sessions.py", "SessionStatus.RUNNING"),
    ("services/subagents.py", "AgentSession.Status.RUNNING"),
    ("services/gateway.py", "AgentSession.Status.RUNNING"),
}
# Tool calls made but never saved, by (file, function): no birth, nothing follows.
UNSAVED = {
    ("web/cards.py", "pull_request_call"),  # a recorded pull request shown as its call's card
}
BIRTH_METHODS = {"create", "bulk_create", "get_or_create", "update_or_create"}


def a_session(status: str = AgentSession.Status.RUNNING) -> AgentSession:
    return AgentSession.objects.create(
        task="t",
        repo="/r",
        workspace="/w",
        status=status,
        policy=Policy.objects.get(name="default"),
    )


def a_call(session: AgentSession, status: str) -> ToolCall:
    return ToolCall.objects.create(session=session, tool="read_file", args={}, status=status)


@pytest.mark.parametrize("move", sorted(TOOL_CALL_MOVES))
def test_each_tool_call_move_starts_only_from_its_sources(move: str) -> None:
    """A call in a source status moves (one event per status it passes through); a call
    anywhere else is left as it was, with no event."""
    spec = TOOL_CALL_MOVES[move]
    target = sorted(spec.targets)[0]
    session = a_session()
    for status in ToolCall.Status.values:
        call = a_call(session, status)
        before = Event.objects.filter(data__tool_call=call.pk).count()
        moved = tool_call_move(call, move, by=sorted(spec.by)[0], to=target)
        call.refresh_from_db()
        after = Event.objects.filter(data__tool_call=call.pk).count()
        if status in spec.sources:
            assert moved and call.status == target
            assert after - before == 1 + len(spec.passes_through)
        else:
            assert not moved and call.status == status and after == before


def test_a_move_that_finds_its_call_moved_on_writes_nothing_and_leaves_the_call_as_read() -> None:
    """The call read as running was finished meanwhile (another process). On PostgreSQL
    such a move is one statement with its events (`_moved_in_one_statement`): its claim
    finds nothing, so neither the events nor the session's counter are written."""
    session = a_session()
    stale = a_call(session, ToolCall.Status.RUNNING)
    ToolCall.objects.filter(pk=stale.pk).update(status=ToolCall.Status.FAILED)
    counter = AgentSession.objects.get(pk=session.pk).last_event_seq
    stored = Event.objects.count()
    done = {"to": ToolCall.Status.SUCCEEDED, "result": "done"}
    assert not tool_call_move(stale, "finish", by=AGENT, **done)
    assert (stale.status, stale.result) == (ToolCall.Status.RUNNING, "")
    assert AgentSession.objects.get(pk=session.pk).last_event_seq == counter
    assert Event.objects.count() == stored
    running = a_call(session, ToolCall.Status.RUNNING)
    assert tool_call_move(running, "finish", by=AGENT, **done)
    event = Event.objects.get(data__tool_call=running.pk, type="tool_call.succeeded")
    assert (event.seq, event.data["status"]) == (counter + 1, "succeeded")
    running.refresh_from_db()
    assert (running.status, running.result) == (ToolCall.Status.SUCCEEDED, "done")


@pytest.mark.parametrize("move", sorted(SESSION_MOVES))
def test_each_session_move_starts_only_from_its_sources(move: str) -> None:
    spec = SESSION_MOVES[move]
    target = sorted(spec.targets)[0]
    for status in AgentSession.Status.values:
        session = a_session(status)
        moved = session_move(session.pk, move, by=sorted(spec.by)[0], to=target)
        session.refresh_from_db()
        if status in spec.sources:
            assert moved and session.status == target
        else:
            assert not moved and session.status == status


def test_a_move_refuses_a_target_it_does_not_declare() -> None:
    call = a_call(a_session(), ToolCall.Status.RUNNING)
    with pytest.raises(ValueError, match="cannot end in"):
        tool_call_move(call, "finish", by=WORKER, to=ToolCall.Status.APPROVED)
    assert ToolCall.objects.get(pk=call.pk).status == ToolCall.Status.RUNNING


@pytest.mark.parametrize("move", sorted(TOOL_CALL_MOVES))
def test_each_tool_call_move_names_who_may_cause_it_and_refuses_anyone_else(move: str) -> None:
    """The table says who causes each move; a caller acting for anyone else writes
    nothing (a policy cannot approve, a worker cannot decide, a person cannot finish)."""
    spec = TOOL_CALL_MOVES[move]
    assert spec.by and spec.by <= ACTORS
    source, target = sorted(spec.sources)[0], sorted(spec.targets)[0]
    for actor in sorted(ACTORS - spec.by):
        call = a_call(a_session(), source)
        with pytest.raises(ValueError, match="is caused by"):
            tool_call_move(call, move, by=actor, to=target)
        assert ToolCall.objects.get(pk=call.pk).status == source
        assert not Event.objects.filter(data__tool_call=call.pk).exists()


@pytest.mark.parametrize("birth", sorted(TOOL_CALL_BIRTHS))
def test_each_birth_makes_a_call_in_its_status_announced_once(birth: str) -> None:
    spec = TOOL_CALL_BIRTHS[birth]
    session = a_session()
    call = tool_call_create(birth, by=sorted(spec.by)[0], session=session, tool="t", args={})
    assert ToolCall.objects.get(pk=call.pk).status == call.status == spec.status
    announced = Event.objects.filter(data__tool_call=call.pk)
    assert list(announced.values_list("type", flat=True)) == [spec.event]


@pytest.mark.parametrize("birth", sorted(TOOL_CALL_BIRTHS))
def test_each_birth_refuses_an_actor_it_does_not_name(birth: str) -> None:
    spec = TOOL_CALL_BIRTHS[birth]
    assert spec.by and spec.by <= ACTORS
    session = a_session()
    for actor in sorted(ACTORS - spec.by):
        with pytest.raises(ValueError, match="is caused by"):
            tool_call_create(birth, by=actor, session=session, tool="t", args={})
    assert not session.tool_calls.exists()


def test_a_call_born_waiting_is_followed_as_one_that_moved_there() -> None:
    """Born waiting (a held command effect) or judged waiting: the same event, the session
    waiting, and each channel that routes it told, webhook, Slack and email alike."""
    Channel.objects.create(name="hook", kind="webhook", url="http://127.0.0.1:9/h", secret="k")
    Channel.objects.create(
        name="team", kind="slack", url="http://127.0.0.1:9/api", secret="t", slack_channel="C0"
    )
    Channel.objects.create(name="mail", kind="email", recipients=["ops@example.com"])
    moved_session, born_session = a_session(), a_session()
    moved = a_call(moved_session, ToolCall.Status.PENDING)
    assert tool_call_move(moved, "judge_wait", by=POLICY)
    born = tool_call_create("hold_effect", by=POLICY, session=born_session, tool="t", args={})

    def traces(call: ToolCall) -> tuple[object, ...]:
        session = AgentSession.objects.get(pk=call.session_id)
        told = Delivery.objects.filter(tool_call=call).order_by("channel__name")
        return (
            session.status,
            list(Event.objects.filter(data__tool_call=call.pk).values_list("type", flat=True)),
            list(told.values_list("channel__name", "event")),
        )

    assert traces(born) == traces(moved) == (
        AgentSession.Status.WAITING,
        ["tool_call.awaiting_approval"],
        [("hook", "tool_call.waiting"), ("mail", "tool_call.waiting"),
         ("team", "tool_call.waiting")],
    )  # fmt: skip


def test_only_a_person_decides_and_only_the_clock_expires() -> None:
    assert {m for m, spec in TOOL_CALL_MOVES.items() if PERSON in spec.by} == {
        "decide_approve", "decide_deny", "approve_partly", "cancel"
    }  # fmt: skip
    assert {m for m, spec in TOOL_CALL_MOVES.items() if CLOCK in spec.by} == {"expire"}


JUDGE_MOVES = sorted(
    m for m, spec in TOOL_CALL_MOVES.items() if ToolCall.Status.PENDING in spec.sources
)


@pytest.mark.parametrize("move", JUDGE_MOVES)
def test_a_call_judged_before_it_is_stored_is_followed_as_one_moved_after(move: str) -> None:
    """Stored judged in one write (allowed) or created then moved (any other): the same
    call, events and follow-ups as `tool_call_create` then `tool_call_move`."""
    Channel.objects.create(name="hook", kind="webhook", url="http://127.0.0.1:9/h", secret="k")
    spec = TOOL_CALL_MOVES[move]
    target, actor = sorted(spec.targets)[0], sorted(spec.by)[0]
    before, after = a_session(), a_session()
    moved = tool_call_create("receive", by=AGENT, session=before, tool="t", args={})
    assert tool_call_move(moved, move, by=actor, to=target, reason="r")
    judged = tool_call_create_judged(
        "receive", by=AGENT, session=after, tool="t", args={},
        judge=lambda call: Judged(move, target, {"reason": "r"}), judged_by=actor,
    )  # fmt: skip
    assert judged is not None and judged.pk is not None

    def traces(call: ToolCall) -> tuple[object, ...]:
        stored = ToolCall.objects.get(pk=call.pk)
        session = AgentSession.objects.get(pk=call.session_id)
        announced = Event.objects.filter(data__tool_call=call.pk).order_by("seq")
        return (
            (stored.status, stored.reason, call.status, session.status, session.last_event_seq),
            list(announced.values_list("seq", "type", "data__status")),
            list(Delivery.objects.filter(tool_call=call).values_list("channel__name", "event")),
        )

    assert traces(judged) == traces(moved)
    assert traces(judged)[1][0][1:] == ("tool_call.received", "pending")


def test_a_judged_birth_refuses_a_move_that_cannot_follow_it_and_stores_nothing() -> None:
    session = a_session()
    with pytest.raises(ValueError, match="cannot follow birth"):
        tool_call_create_judged(
            "receive", by=AGENT, session=session, tool="t", args={},
            judge=lambda call: Judged("finish", "succeeded", {}), judged_by=WORKER,
        )  # fmt: skip
    with pytest.raises(ValueError, match="is caused by"):
        tool_call_create_judged(
            "receive", by=AGENT, session=session, tool="t", args={},
            judge=lambda call: Judged("gateway_allow", None, {}), judged_by=AGENT,
        )  # fmt: skip
    assert not session.tool_calls.exists() and not session.events.exists()


@pytest.mark.parametrize("move", sorted(SESSION_MOVES))
def test_each_session_move_refuses_an_actor_it_does_not_name(move: str) -> None:
    spec = SESSION_MOVES[move]
    source, target = sorted(spec.sources)[0], sorted(spec.targets)[0]
    for actor in sorted(ACTORS - spec.by):
        session = a_session(source)
        with pytest.raises(ValueError, match="is caused by"):
            session_move(session.pk, move, by=actor, to=target)
        assert AgentSession.objects.get(pk=session.pk).status == source


def status_writes(path: Path) -> list[str]:
    """Where a file writes a status: `x.status = ...` (also in tuples), `status=` in an
    `.update(...)` or an unpacked `.update(**fields)`, `status=` in a `.create(...)`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for item in ast.walk(target):
                    if isinstance(item, ast.Attribute) and item.attr == "status":
                        found.append(f"line {node.lineno}: .status =")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            found += _call_writes(node)
    return found


def _call_writes(node: ast.Call) -> list[str]:
    method = node.func.attr if isinstance(node.func, ast.Attribute) else ""
    found = []
    for keyword in node.keywords:
        if method == "update" and keyword.arg in {"status", None}:
            found.append(f"line {node.lineno}: .update({keyword.arg or '**'})")
        if method == "create" and keyword.arg == "status":
            found.append(f"line {node.lineno}: .create(status={ast.unparse(keyword.value)})")
    return found


def test_no_code_but_the_lifecycle_writes_a_status() -> None:
    """Only `services/lifecycle.py` moves a status; elsewhere a row may only be created
    with its first status, at the places listed in CREATED_WITH."""
    offending = []
    for path in sorted(ROOT.rglob("*.py")):
        if "migrations" in path.parts or path == LIFECYCLE:
            continue
        name = path.relative_to(ROOT).as_posix()
        for write in status_writes(path):
            created = write.split(".create(status=", 1)
            if len(created) == 2 and (name, created[1].rstrip(")")) in CREATED_WITH:
                continue
            offending.append(f"{name} {write}")
    assert offending == []


def tool_call_births(path: Path) -> list[tuple[str, str]]:
    """Where a file makes a tool call, as (the function it is in, what): `ToolCall(...)`,
    `ToolCall.objects.create(...)` and its kin, `x.tool_calls.create(...)`."""
    tree = ast.parse(path.read_text())
    scope: dict[ast.AST, str] = {}
    for node in ast.walk(tree):  # outer functions first: the innermost name wins
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            scope.update(dict.fromkeys(ast.walk(node), node.name))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _makes_a_call(node.func):
            found.append((scope.get(node, ""), f"line {node.lineno}: {ast.unparse(node.func)}"))
    return found


def _makes_a_call(func: ast.expr) -> bool:
    name = ast.unparse(func)
    if name == "ToolCall" or name.endswith(".ToolCall"):
        return True
    if not isinstance(func, ast.Attribute) or func.attr not in BIRTH_METHODS:
        return False
    manager = ast.unparse(func.value)
    return manager.endswith("ToolCall.objects") or manager.split(".")[-1] == "tool_calls"


def test_no_code_but_the_lifecycle_makes_a_tool_call() -> None:
    """Every call is born through `tool_call_create`, so that each way into a status runs
    that status's follow-ups; elsewhere a call is only made unsaved, where UNSAVED says."""
    offending = []
    for path in sorted(ROOT.rglob("*.py")):
        if "migrations" in path.parts or path == LIFECYCLE:
            continue
        name = path.relative_to(ROOT).as_posix()
        for function, made in tool_call_births(path):
            if (name, function) not in UNSAVED:
                offending.append(f"{name} {function}() {made}")
    assert offending == []


def test_the_birth_scan_sees_each_way_of_making_a_call(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "def f(session):\n"
        "    ToolCall(tool='x')\n"
        "    models.ToolCall(tool='x')\n"
        "    ToolCall.objects.create(tool='x')\n"
        "    ToolCall.objects.bulk_create([])\n"
        "    ToolCall.objects.get_or_create(tool='x')\n"
        "    session.tool_calls.create(tool='x')\n"
        "    session.tool_calls.filter(tool='x')\n"
        "    Skill.objects.create(name='x')\n"
    )
    assert [function for function, _ in tool_call_births(sample)] == ["f"] * 6


def test_the_source_scan_sees_the_writes_it_forbids(tmp_path: Path) -> None:
    """The scan is not blind: each way of writing a status is found."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        "call.status = 'x'\n"
        "call.status, call.result = 'x', ''\n"
        "ToolCall.objects.filter(pk=1).update(status='x')\n"
        "ToolCall.objects.filter(pk=1).update(**fields)\n"
        "AgentSession.objects.create(status='x')\n"
    )
    assert len(status_writes(sample)) == 5
