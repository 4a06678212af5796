"""Pages for the API's lists: `?limit=`, an opaque `?cursor=`, `next` until the last page,
and the same number of queries for a page whatever its size or the total."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from tests.integration.helpers import Api
from tools_app.models import AgentSession, Decision, Policy, ToolCall
from tools_app.selectors.pagination import cursor_encode

pytestmark = pytest.mark.django_db


def new_session(creator: User, workspace: Path, **extra: Any) -> AgentSession:
    return AgentSession.objects.create(
        task="fix the bug",
        repo=str(workspace),
        workspace=str(workspace),
        policy=Policy.objects.get(name="default"),
        creator=creator,
        **{"status": AgentSession.Status.RUNNING, **extra},
    )


def everything(api: Api, path: str, limit: int) -> tuple[list[int], int]:
    """Every id of a list, page by page; and how many pages it took."""
    ids: list[int] = []
    pages = 0
    cursor: str | None = None
    while True:
        glue = "&" if "?" in path else "?"
        query = f"{glue}limit={limit}" + (f"&cursor={cursor}" if cursor else "")
        answer = api.get(path + query)
        assert answer.status_code == 200, answer.content
        body = answer.json()
        assert set(body) == {"items", "next"}
        assert len(body["items"]) <= limit
        ids += [item["id"] for item in body["items"]]
        pages += 1
        cursor = body["next"]
        if cursor is None:
            return ids, pages


def test_seven_sessions_in_pages_of_three(alice: Api, creator: User, workspace: Path) -> None:
    made = [new_session(creator, workspace).pk for _ in range(7)]
    ids, pages = everything(alice, "/sessions", 3)
    assert ids == sorted(made, reverse=True)  # each once, newest first
    assert pages == 3
    first = alice.get("/sessions?limit=3").json()
    assert len(first["items"]) == 3 and first["next"] is not None
    assert alice.get("/sessions?limit=7").json()["next"] is None
    assert alice.get("/sessions").json()["next"] is None  # 50 by default


def test_a_page_keeps_the_status_filter(alice: Api, creator: User, workspace: Path) -> None:
    done = [new_session(creator, workspace, status=AgentSession.Status.DONE).pk for _ in range(4)]
    for _ in range(3):
        new_session(creator, workspace)
    ids, pages = everything(alice, "/sessions?status=done", 3)
    assert ids == sorted(done, reverse=True)
    assert pages == 2


def test_tool_calls_and_approvals_in_pages_oldest_first(
    alice: Api, rita: Api, creator: User, workspace: Path
) -> None:
    session = new_session(creator, workspace)
    made = [
        ToolCall.objects.create(
            session=session,
            tool="write_file",
            args={"path": f"f{i}", "content": ""},
            status=ToolCall.Status.AWAITING_APPROVAL,
            verdict="require_approval",
        ).pk
        for i in range(7)
    ]
    assert everything(alice, f"/sessions/{session.pk}/tool-calls", 3) == (made, 3)
    assert everything(rita, "/approvals", 3) == (made, 3)
    assert alice.get("/approvals?limit=3").json() == {"items": [], "next": None}


def test_a_cursor_from_the_last_item_ends_the_list(
    alice: Api, creator: User, workspace: Path
) -> None:
    oldest = new_session(creator, workspace)
    answer = alice.get(f"/sessions?cursor={cursor_encode(oldest.pk)}")
    assert answer.json() == {"items": [], "next": None}


def refused(answer: Any, field: str) -> None:
    assert answer.status_code == 422, answer.content
    detail = answer.json()["detail"]
    assert any(field in error["loc"] for error in detail), detail


@pytest.mark.parametrize("limit", ["0", "-1", "501", "1.5", "x", "", "1e3", "nan"])
def test_a_bad_limit_is_a_422_naming_limit(
    alice: Api, rita: Api, creator: User, workspace: Path, limit: str
) -> None:
    session = new_session(creator, workspace)
    refused(alice.get(f"/sessions?limit={limit}"), "limit")
    refused(alice.get(f"/sessions/{session.pk}/tool-calls?limit={limit}"), "limit")
    refused(rita.get(f"/approvals?limit={limit}"), "limit")


@pytest.mark.parametrize(
    "cursor", ["x", "!!!", "MTIz=", cursor_encode(0), "LTE", "YWJj", "", "MA", "MDE", "%C3%A9"]
)
def test_a_malformed_cursor_is_a_422_naming_cursor(
    alice: Api, rita: Api, creator: User, workspace: Path, cursor: str
) -> None:
    session = new_session(creator, workspace)
    refused(alice.get(f"/sessions?cursor={cursor}"), "cursor")
    refused(alice.get(f"/sessions/{session.pk}/tool-calls?cursor={cursor}"), "cursor")
    refused(rita.get(f"/approvals?cursor={cursor}"), "cursor")


def test_the_limit_bounds_are_kept(alice: Api, creator: User, workspace: Path) -> None:
    new_session(creator, workspace)
    assert alice.get("/sessions?limit=1").status_code == 200
    assert alice.get("/sessions?limit=500").status_code == 200


def test_the_openapi_schema_documents_pages(client: Client, reviewer: User) -> None:
    client.force_login(reviewer)
    schema = client.get("/api/openapi.json").json()
    for path in ("/api/sessions", "/api/sessions/{session_id}/tool-calls", "/api/approvals"):
        get = schema["paths"][path]["get"]
        names = {param["name"] for param in get["parameters"]}
        assert {"limit", "cursor"} <= names, names
        ref = get["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
        page = schema["components"]["schemas"][ref.rsplit("/", 1)[-1]]
        assert set(page["properties"]) == {"items", "next"}


def queries(get: Callable[[], Any]) -> int:
    with CaptureQueriesContext(connection) as seen:
        assert get().status_code == 200
    return len(seen.captured_queries)


def test_a_page_costs_the_same_queries_whatever_its_size(
    alice: Api,
    rita: Api,
    creator: User,
    reviewer: User,
    workspace: Path,
    django_assert_num_queries: Any,
) -> None:
    session = new_session(creator, workspace)
    for i in range(60):
        child = new_session(creator, workspace, parent=session if i % 2 else None)
        new_session(creator, workspace, parent=child)
        call = ToolCall.objects.create(
            session=session,
            tool="write_file",
            args={"path": f"f{i}", "content": ""},
            status=ToolCall.Status.AWAITING_APPROVAL if i % 2 else ToolCall.Status.DENIED,
            verdict="require_approval",
        )
        if not i % 2:
            Decision.objects.create(tool_call=call, user=reviewer, decision="deny")
    lists = [
        (alice, "/sessions"),
        (rita, "/sessions"),
        (alice, f"/sessions/{session.pk}/tool-calls"),
        (rita, f"/sessions/{session.pk}/tool-calls"),
        (rita, "/approvals"),
    ]
    for api, path in lists:
        small = api.get(f"{path}?limit=5").json()
        assert len(small["items"]) == 5 and small["next"]
        count = queries(lambda: api.get(f"{path}?limit=5"))  # noqa: B023
        with django_assert_num_queries(count):
            big = api.get(f"{path}?limit=50")
        assert len(big.json()["items"]) >= 30
        with django_assert_num_queries(count):
            api.get(f"{path}?limit=5&cursor={small['next']}")
