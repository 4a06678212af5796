"""Fixtures of the unit tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.gate_scratch import Scratch, bash_available


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[Scratch]:
    """A developer's machine in a temporary directory (`gate_scratch`), removed after."""
    if not bash_available():
        pytest.skip("bash and git are needed to run the proven commands")
    made = Scratch(tmp_path / "machine")
    yield made
    made.remove()
