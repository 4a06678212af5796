"""One name, one meaning: the policy's answer is a verdict, a person's a decision.

The pure core never says "decision" (the policy file's rule key aside, mapped by its
loader), and of the tables only the person's `Decision` row does."""

from __future__ import annotations

import ast
from pathlib import Path

from tools_app.models import Decision, PolicyRule, ToolCall, Verdict

CORE = Path(__file__).resolve().parents[2] / "tools_app" / "core"
# Where the core speaks of a person's decision, which is the right word there: a
# notification says who approved or denied a call (the webhook's "decision" object).
PERSONS_DECISIONS = {"notify/messages.py"}


def decision_names(source: str) -> list[str]:
    """Each class, attribute, name or keyword argument of `source` called decision."""
    found = []
    for node in ast.walk(ast.parse(source)):
        name = (
            getattr(node, "name", None)
            or getattr(node, "attr", None)
            or getattr(node, "id", None)
            or getattr(node, "arg", None)
        )
        if isinstance(name, str) and name.lower() == "decision":
            found.append(f"{type(node).__name__} {name} line {node.lineno}")  # type: ignore[attr-defined]
    return found


def test_the_pure_core_calls_the_policys_answer_a_verdict() -> None:
    found = {
        str(path.relative_to(CORE)): names
        for path in sorted(CORE.rglob("*.py"))
        if (names := decision_names(path.read_text()))
    }
    assert set(found) <= PERSONS_DECISIONS, found


def test_the_scan_finds_each_way_of_naming_it() -> None:
    source = "class Decision: ...\nx.decision\nf(decision=1)\ndecision = 2\n"
    assert len(decision_names(source)) == 4


def test_a_tool_call_records_a_verdict_and_a_person_a_decision() -> None:
    call_fields = {field.name for field in ToolCall._meta.get_fields()}
    assert "verdict" in call_fields and "decision" not in call_fields
    assert {choice for choice, _ in ToolCall._meta.get_field("verdict").choices} == set(
        Verdict.values
    )
    assert set(Decision.Choice.values) == {"approve", "deny"}
    # One set of verdicts for a rule and a call.
    assert PolicyRule._meta.get_field("decision").choices == Verdict.choices
