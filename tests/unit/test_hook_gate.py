"""The hook gate: a bounded number of turns, decisions served before reports."""

from __future__ import annotations

import asyncio
import json

import pytest

from tools_app.core.gateway.claude_code import is_report
from tools_app.ops.hook_gate import HookGate


async def _hold(gate: HookGate, name: str, order: list[str], release: asyncio.Event) -> None:
    async with gate.turn(report=name.startswith("report")):
        order.append(name)
        await release.wait()


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_no_more_than_its_size_hold_a_turn_at_once() -> None:
    async def scenario() -> list[str]:
        gate, release = HookGate(2), asyncio.Event()
        order: list[str] = []
        tasks = [asyncio.create_task(_hold(gate, f"decision{i}", order, release)) for i in range(5)]
        await _settle()
        held = list(order)
        release.set()
        await asyncio.gather(*tasks)
        assert order == [f"decision{i}" for i in range(5)]  # in the order they came
        return held

    assert asyncio.run(scenario()) == ["decision0", "decision1"]


def test_a_waiting_decision_goes_before_reports_that_came_first() -> None:
    async def scenario() -> list[str]:
        gate = HookGate(1)
        order: list[str] = []
        first = asyncio.Event()
        holder = asyncio.create_task(_hold(gate, "decision0", order, first))
        await _settle()
        go = asyncio.Event()
        go.set()
        names = ["report1", "report2", "decision3", "report4", "decision5"]
        waiting = []
        for name in names:
            waiting.append(asyncio.create_task(_hold(gate, name, order, go)))
            await _settle()
        first.set()
        await asyncio.gather(holder, *waiting)
        return order

    assert asyncio.run(scenario()) == [
        "decision0", "decision3", "decision5", "report1", "report2", "report4",
    ]  # fmt: skip


def test_a_waiter_cancelled_leaves_its_turn_to_the_next() -> None:
    async def scenario() -> tuple[list[str], bool]:
        gate, release = HookGate(1), asyncio.Event()
        order: list[str] = []
        holder = asyncio.create_task(_hold(gate, "decision0", order, release))
        await _settle()
        gone = asyncio.create_task(_hold(gate, "decision1", order, release))
        after = asyncio.create_task(_hold(gate, "report2", order, release))
        await _settle()
        gone.cancel()  # the agent hung up while it waited
        await asyncio.gather(gone, return_exceptions=True)
        release.set()
        await asyncio.gather(holder, after)
        return order, gone.cancelled()

    assert asyncio.run(scenario()) == (["decision0", "report2"], True)


def test_a_waiter_cancelled_once_handed_its_turn_passes_it_on() -> None:
    async def scenario() -> list[str]:
        gate, go = HookGate(1), asyncio.Event()
        order: list[str] = []
        go.set()
        turn = gate.turn(report=False)
        await turn.__aenter__()
        handed = asyncio.create_task(_hold(gate, "decision1", order, go))
        after = asyncio.create_task(_hold(gate, "decision2", order, go))
        await _settle()
        await turn.__aexit__(None, None, None)  # decision1 is handed the turn ...
        handed.cancel()  # ... and cancelled before it ran
        await asyncio.gather(handed, return_exceptions=True)
        await asyncio.wait_for(after, 5)
        async with gate.turn(report=True):  # and the gate has its one turn again
            order.append("report3")
        return order

    assert asyncio.run(scenario()) == ["decision2", "report3"]


def _body(name: str, **fields: object) -> bytes:
    event = {"session_id": "s", "cwd": "/w", "hook_event_name": name, **fields}
    return json.dumps(event).encode()


@pytest.mark.parametrize(
    ("body", "report"),
    [
        (_body("PostToolUse", tool_response={"stdout": ""}), True),
        (_body("PostToolUseFailure", error="exit 1"), True),
        (_body("PreToolUse", tool_input={"command": '"hook_event_name": "PostToolUse"'}), False),
        (b'{"hook_event_name" :  "PostToolUse"}', True),
        (b'{"cwd": "' + b"a" * 20_000 + b'", "hook_event_name": "PostToolUse"}', False),
        (_body("SessionStart"), False),
        (b"not json at all", False),
        (b"", False),
    ],
)
def test_a_report_is_told_from_the_body_s_first_event_name(body: bytes, report: bool) -> None:
    assert is_report(body) is report
