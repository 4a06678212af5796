"""The suite's own conventions that a mistake in one file breaks for others."""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
_TRANSACTIONAL = re.compile(r"django_db\(([^)]*)\)")


def test_every_transactional_test_rolls_back_serialized() -> None:
    """A transactional test without serialized_rollback ends with a plain flush, which
    re-creates the content types; every serialized test after it in the same process then
    fails to insert them again (105 errors once)."""
    plain = [
        f"{path.relative_to(TESTS)}: django_db({args})"
        for path in sorted(TESTS.rglob("test_*.py"))
        for args in _TRANSACTIONAL.findall(path.read_text())
        if "transaction=True" in args and "serialized_rollback=True" not in args
    ]
    assert plain == []
