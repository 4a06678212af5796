"""What every test of a real agent CLI shares: agentweb live under daphne (one per test
module), an agent token, a reviewer, a project directory, and a wait for a call that
asks a person."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User

from tests.agents.common import WAIT_SECONDS, daphne_serving
from tests.helpers import ROOT, Worker
from tools_app import services


@pytest.fixture(scope="module")
def agentweb(stack: Worker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with daphne_serving(
        stack, tmp_path_factory, AGENTWEB_HOOK_WAIT_SECONDS=str(WAIT_SECONDS)
    ) as url:
        yield url


@pytest.fixture
def token() -> str:
    alice = User.objects.create_user("alice")
    return services.api_token_create(user=alice, scope="agent")


@pytest.fixture
def rita() -> User:
    user = User.objects.create_user("rita")
    user.groups.add(Group.objects.get_or_create(name="reviewers")[0])
    return user


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "README.md").write_text("# demo\n")
    return root


@pytest.fixture
def hook_bin(tmp_path: Path) -> Path:
    """A directory holding `agentweb-hook` (this checkout's), to put first on PATH: the
    printed settings run the command by that name."""
    where = tmp_path / "bin"
    where.mkdir()
    script = where / "agentweb-hook"
    script.write_text(f'#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m agentweb_hook "$@"\n')
    script.chmod(0o755)
    return where
