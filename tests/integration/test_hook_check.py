"""`GET /api/hooks/check` and `GET /api/hooks/agentweb-hook.py`: the developer's side.

Alice's hook proves its wiring with her agent token: the answer is a dry run on the
gateway's own judging road, so it stores nothing (no session, no call, no event, no
audit entry) and follows the policy wherever the policy goes.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import User

import agentweb_hook
from agentweb.asgi import application
from tools_app import services
from tools_app.models import AgentSession, ApiToken, AuditEntry, Event, Policy, PolicyRule, ToolCall

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("connections_kept")]

CHECK = "/api/hooks/check"
DOWNLOAD = "/api/hooks/agentweb-hook.py"
STORED = (AgentSession, ToolCall, Event, AuditEntry)


async def _request(
    method: str, path: str, headers: dict[str, str], host: str, body: bytes | None
) -> httpx.Response:
    transport = httpx.ASGITransport(app=application)  # as daphne serves /api/hooks/
    async with httpx.AsyncClient(transport=transport, base_url=f"http://{host}") as client:
        return await client.request(method, path, headers=headers, content=body)


def request(
    path: str, method: str = "GET", host: str = "127.0.0.1", body: bytes | None = None,
    **headers: str,
) -> httpx.Response:  # fmt: skip
    # From the test's thread: the view's database work runs back in it, in its transaction.
    return async_to_sync(_request)(method, path, headers, host, body)


def check(token: str, query: str = "", **headers: str) -> httpx.Response:
    return request(f"{CHECK}{query}", Authorization=f"Bearer {token}", **headers)


def outcome(answer: httpx.Response) -> dict[str, bool]:
    assert answer.status_code == 200, answer.content
    return {item["name"]: item["ok"] for item in answer.json()["checks"]}


@pytest.fixture
def token(creator: User) -> str:
    return services.api_token_create(user=creator, scope="agent")


def counts() -> list[int]:
    return [model.objects.count() for model in STORED]


@pytest.mark.parametrize("agent", ["claude-code", "codex", "gemini"])
def test_a_good_setup_passes_every_check_and_stores_nothing(token: str, agent: str) -> None:
    before = counts()
    answer = check(token, f"?policy=default&agent={agent}")
    assert counts() == before
    body = answer.json()
    assert body["ok"] is True, body
    assert (body["user"], body["policy"], body["server_version"]) == ("alice", "default", "0.1.0")
    assert outcome(answer) == {
        "server": True, "token": True, "policy": True, "allows ls": True,
        "holds a write of .env": True,
    }  # fmt: skip
    assert answer.headers["X-Agentweb-Hook-Version"] == agentweb_hook.__version__


def test_a_policy_that_holds_ls_makes_the_check_say_so(token: str) -> None:
    strict = Policy.objects.create(name="strict")
    PolicyRule.objects.create(
        policy=strict, position=0, tool="run_command", args={"command": "ls"},
        decision="require_approval", reason="every listing is read by a person",
    )  # fmt: skip
    answer = check(token, "?policy=strict")
    assert answer.json()["ok"] is False
    assert outcome(answer)["allows ls"] is False
    ls = next(c for c in answer.json()["checks"] if c["name"] == "allows ls")
    assert "would wait for a person: every listing is read by a person" in ls["detail"]


def test_a_policy_that_lets_env_through_fails_the_check(token: str) -> None:
    loose = Policy.objects.create(name="loose")
    PolicyRule.objects.create(
        policy=loose, position=0, tool="write_file", args={"path": ".env"}, decision="allow",
        reason="the developer's own .env",
    )  # fmt: skip
    assert outcome(check(token, "?policy=loose"))["holds a write of .env"] is False


@pytest.mark.parametrize(
    ("value", "detail"),
    [
        (None, "Send `Authorization: Bearer TOKEN`"),
        ("aw_not-a-token", "The bearer token is not valid: the token is unknown."),
    ],
)
def test_no_token_or_a_bad_one_is_a_401(value: str | None, detail: str) -> None:
    headers = {} if value is None else {"Authorization": f"Bearer {value}"}
    answer = request(CHECK, **headers)
    assert answer.status_code == 401
    assert detail in answer.json()["detail"]


def test_a_revoked_token_is_a_401_that_says_so(token: str) -> None:
    ApiToken.objects.update(revoked=True)
    answer = check(token)
    assert answer.status_code == 401
    assert "The bearer token is not valid: the token aw_" in answer.json()["detail"]
    assert "was revoked" in answer.json()["detail"]


def test_a_review_token_fails_the_token_check(reviewer: User) -> None:
    review = services.api_token_create(user=reviewer, scope="review")
    answer = check(review)
    assert outcome(answer)["token"] is False
    assert "hooks need an `agent` token" in answer.json()["checks"][1]["detail"]


def test_an_unknown_policy_is_a_404_naming_it(token: str) -> None:
    answer = check(token, "?policy=nope")
    assert answer.status_code == 404
    assert "There is no policy named 'nope'." in answer.json()["detail"]


@pytest.mark.parametrize(
    ("query", "detail"),
    [
        ("?agent=cursor", "There is no agent 'cursor': `agent` is one of claude-code, codex"),
        ("?policy=" + "p" * 101, "`policy` must be a policy's name (at most 100 characters"),
    ],
)
def test_a_malformed_query_is_a_400_naming_it(token: str, query: str, detail: str) -> None:
    answer = check(token, query)
    assert answer.status_code == 400
    assert detail in answer.json()["detail"]


def test_a_hook_below_the_minimum_fails_and_an_older_one_is_told(token: str) -> None:
    answer = check(token, **{"User-Agent": "agentweb-hook/0.9"})
    version = next(c for c in answer.json()["checks"] if c["name"] == "hook version")
    assert version["ok"] is False
    assert "older than 1.0, the oldest this server accepts" in version["detail"]
    assert "/api/hooks/agentweb-hook.py" in version["detail"]
    current = check(token, **{"User-Agent": f"agentweb-hook/{agentweb_hook.__version__}"})
    assert outcome(current)["hook version"] is True


def test_the_hook_endpoint_refuses_a_hook_below_the_minimum_and_stores_nothing(
    token: str,
) -> None:
    event = {
        "session_id": "s-1", "cwd": "/home/alice/project", "hook_event_name": "PreToolUse",
        "tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "toolu_1",
    }  # fmt: skip
    headers = {"Authorization": f"Bearer {token}", "User-Agent": "agentweb-hook/0.9"}
    old = request("/api/hooks/claude-code", "POST", body=json.dumps(event).encode(), **headers)
    output = old.json()["hookSpecificOutput"]
    assert output["permissionDecision"] == "deny"
    assert "agentweb-hook 0.9 is older than 1.0" in output["permissionDecisionReason"]
    assert not AgentSession.objects.exists()
    assert old.headers["X-Agentweb-Hook-Minimum"] == "1.0"
    headers["User-Agent"] = f"agentweb-hook/{agentweb_hook.__version__}"
    current = request("/api/hooks/claude-code", "POST", body=json.dumps(event).encode(), **headers)
    assert current.json()["hookSpecificOutput"]["permissionDecision"] == "allow"


def test_another_host_is_refused_naming_the_setting(token: str) -> None:
    answer = request(CHECK, host="evil.test", Authorization=f"Bearer {token}")
    assert answer.status_code == 400
    assert "AGENTWEB_BASE_URL" in answer.json()["detail"]


# --- the download ----------------------------------------------------------------------


def test_the_hook_downloads_without_login_as_one_python_file() -> None:
    answer = request(DOWNLOAD)
    assert answer.status_code == 200
    assert answer.headers["Content-Type"] == "text/x-python; charset=utf-8"
    assert answer.content == Path(agentweb_hook.__file__).read_bytes()
    assert answer.content.startswith(b"#!/usr/bin/env python3\n")
    assert f'__version__ = "{answer.headers["X-Agentweb-Hook-Version"]}"'.encode() in answer.content


def test_the_download_refuses_a_post_and_another_host() -> None:
    posted = request(DOWNLOAD, "POST")
    assert (posted.status_code, posted.headers["Allow"]) == (405, "GET, HEAD")
    assert "Use GET or HEAD here, not POST." in posted.json()["detail"]
    assert request(DOWNLOAD, host="evil.test").status_code == 400
