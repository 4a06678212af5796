"""The people who use agentweb, once for every integration test.

Alice (the creator) starts sessions through an agent, Rita (the reviewer) decides on
calls, Charlie (the outsider) has an account and nothing else, Sam is a superuser. The
users are `creator`, `reviewer`, `outsider`, `superuser`; `alice`, `rita` and `charlie`
are the same people speaking to the REST API with their tokens."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.core.signals import request_finished, request_started
from django.db import close_old_connections

from tests.integration.gateway_helpers import Hook
from tests.integration.helpers import Api
from tools_app import services

PASSWORD = "a-long-password"


@pytest.fixture
def creator() -> User:
    """Alice starts sessions: an account in no group."""
    return User.objects.create_user("alice")


@pytest.fixture
def reviewer() -> User:
    """Rita is a reviewer: in the reviewers group, with a password to log in."""
    user = User.objects.create_user("rita", password=PASSWORD)
    user.groups.add(Group.objects.get_or_create(name="reviewers")[0])
    return user


@pytest.fixture
def outsider() -> User:
    """Charlie has an account and nothing else."""
    return User.objects.create_user("charlie")


@pytest.fixture
def superuser() -> User:
    return User.objects.create_superuser("sam", "sam@example.com", PASSWORD)


@pytest.fixture
def alice(creator: User) -> Api:
    """Alice operates an agent: an agent token."""
    return Api(services.api_token_create(user=creator, scope="agent"))


@pytest.fixture
def rita(reviewer: User) -> Api:
    """Rita reviews over the API: a review token."""
    return Api(services.api_token_create(user=reviewer, scope="review"))


@pytest.fixture
def charlie(outsider: User) -> Api:
    """Charlie's review token opens nothing of anyone else's."""
    return Api(services.api_token_create(user=outsider, scope="review"))


@pytest.fixture
def no_hook_wait(settings: Any) -> None:
    """A hook call that needs a person is answered "still awaiting approval" at once, and
    the agent's retry finds the decision."""
    settings.AGENTWEB_HOOK_WAIT_SECONDS = 0


@pytest.fixture
def claude(creator: User) -> Hook:
    """Alice's Claude Code: hook events posted with her agent token."""
    return Hook(services.api_token_create(user=creator, scope="agent"))


@pytest.fixture
def connections_kept() -> Iterator[None]:
    """For a request sent to the ASGI app from the test's thread: as Django's test client
    does, the handler's request signals must not close the test's database connection
    (its transaction holds the test's rows)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)
