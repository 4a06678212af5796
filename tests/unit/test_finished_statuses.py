"""A session's finished statuses are written once, on the model: every reader (the
lifecycle's `finish` move, the API refusing calls, the admin's cancel, the session page,
sub-agents, the commands that wait) asks `AgentSession.FINISHED_STATUSES`. Pure: the
source is read, nothing is imported but the models."""

from __future__ import annotations

import ast
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "tools_app"
FINISHED = {"done", "failed", "cancelled"}


def spelled(node: ast.expr) -> str | None:
    """`"done"` or `Status.DONE` (any owner) as the status it names."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Attribute) and node.attr.lower() in FINISHED:
        return node.attr.lower()
    return None


def finished_sets(source: str) -> list[int]:
    """The lines of every set, tuple or list literal naming all three finished statuses."""
    found = []
    for node in ast.walk(ast.parse(source)):
        literal = isinstance(node, ast.Set | ast.Tuple | ast.List)
        if literal and {spelled(item) for item in node.elts} >= FINISHED:
            found.append(node.lineno)
    return found


def test_the_finished_statuses_are_written_only_on_the_model() -> None:
    written = {
        str(path.relative_to(APP)): lines
        for path in sorted(APP.rglob("*.py"))
        if "migrations" not in path.parts and (lines := finished_sets(path.read_text()))
    }
    assert list(written) == ["models.py"], written
    assert len(written["models.py"]) == 1


def test_the_scan_sees_each_way_of_spelling_them() -> None:
    assert finished_sets('FINISHED = {"done", "failed", "cancelled"}') == [1]
    assert finished_sets("x in (S.DONE, S.FAILED, S.CANCELLED, S.QUEUED)") == [1]
    assert finished_sets('LIVE = ["running", "waiting", "done"]') == []


def test_the_model_names_exactly_the_ends_of_a_session() -> None:
    from tools_app.models import AgentSession

    assert AgentSession.FINISHED_STATUSES == FINISHED
    assert not AgentSession.FINISHED_STATUSES & {"queued", "running", "waiting"}
