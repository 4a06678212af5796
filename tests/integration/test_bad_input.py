"""Bad input on every entry point: a 4xx or a CommandError that names the problem.

Lone surrogates, NUL, numbers JSON cannot carry, nesting no walker survives, malformed
JSON and wrong types, sent as API bodies and as command-line JSON. Nothing is stored
when a body is refused; run these on PostgreSQL too (DATABASE_URL), whose jsonb
rejects NUL and lone surrogates where SQLite does not.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path
from typing import Any

import httpx
import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from agentweb.asgi import application
from tests.integration.helpers import Api
from tools_app import services
from tools_app.core.tools.jsonsafe import storable_json
from tools_app.models import AgentSession, Policy, PolicyRule, ToolCall

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def session(creator: User, workspace: Path) -> AgentSession:
    """Alice's running session on a workspace (no worker: calls stay where they are)."""
    return AgentSession.objects.create(
        task="fix the bug",
        repo=str(workspace),
        workspace=str(workspace),
        status=AgentSession.Status.RUNNING,
        policy=Policy.objects.get(name="default"),
        creator=creator,
    )


@pytest.fixture
def waiting_call(session: AgentSession) -> ToolCall:
    """A call of Alice's that waits for a reviewer."""
    return ToolCall.objects.create(
        session=session,
        tool="write_file",
        args={"path": ".env", "content": "A=1\n"},
        status=ToolCall.Status.AWAITING_APPROVAL,
        verdict="require_approval",
    )


def stored() -> tuple[int, int, int, int]:
    """Everything a body could create or change."""
    versions = sum(Policy.objects.values_list("version", flat=True))
    return (
        AgentSession.objects.count(),
        ToolCall.objects.count(),
        PolicyRule.objects.count(),
        versions,
    )


DEEP = "[" * 10_000 + "]" * 10_000
HOSTILE_BODIES = [
    pytest.param('{"tool": ', "the request body is not valid JSON", id="malformed"),
    pytest.param("[1, 2]", "the request body must be a JSON object, not a list", id="a list"),
    pytest.param('"text"', "must be a JSON object, not a string", id="a string"),
    pytest.param(
        '{"tool": "read_file", "args": {"path": "\\ud800x"}}',
        "`args.path` contains a lone surrogate (\\ud800) at character 0",
        id="lone surrogate",
    ),
    pytest.param(
        '{"tool": "write_file", "args": {"path": "a", "content": "x\\u0000"}}',
        "`args.content` contains a NUL byte (\\u0000) at character 1",
        id="NUL",
    ),
    pytest.param(
        '{"tool": "read_file", "args": {"\\udfff": 1}}',
        "a key in `args` (\\udfff) contains a lone surrogate",
        id="surrogate key",
    ),
    pytest.param(
        '{"tool": "read_file", "args": {"offset": 1' + "0" * 5000 + "}}",
        "is too large; integers must fit in 64 bits",
        id="huge integer",
    ),
    pytest.param(
        '{"tool": "read_file", "args": {"offset": 18446744073709551616}}',
        "the number 18446744073709551616 is too large",
        id="2**64",
    ),
    pytest.param('{"tool": "x", "args": {"n": NaN}}', "NaN is not valid JSON", id="NaN"),
    pytest.param('{"tool": "x", "args": {"n": 1e400}}', "1e400 is too large", id="1e400"),
    pytest.param(
        '{"tool": "x", "args": {"n": ' + DEEP + "}}",
        "the request body is nested too deeply (more than 32 levels)",
        id="10,000 nested lists",
    ),
    pytest.param(
        '{"tool": "x", "args": {"n": ' + "[" * 40 + "]" * 40 + "}}",
        "is nested too deeply (more than 32 levels)",
        id="40 nested lists",
    ),
    pytest.param(
        b'{"tool": "read_file", "args": {"path": "\xff"}}',
        "the request body is not valid UTF-8",
        id="invalid UTF-8",
    ),
]


def refused(answer: Any, expected: str, status: int = 400) -> None:
    assert answer.status_code == status, answer.content
    assert answer["Content-Type"].startswith("application/json")
    assert expected in answer.json()["detail"]


# --- API: bodies refused before any view runs ---------------------------------------------


@pytest.mark.parametrize(("body", "expected"), HOSTILE_BODIES)
def test_a_hostile_tool_call_body_is_refused_and_nothing_is_stored(
    alice: Api, session: AgentSession, body: str, expected: str
) -> None:
    before = stored()
    refused(alice.post(f"/sessions/{session.pk}/tool-calls", body), expected)
    assert stored() == before


@pytest.mark.parametrize(("body", "expected"), HOSTILE_BODIES)
def test_a_hostile_session_body_is_refused_and_no_session_starts(
    alice: Api, body: str, expected: str
) -> None:
    before = stored()
    refused(alice.post("/sessions", body), expected)
    assert stored() == before


@pytest.mark.parametrize(("body", "expected"), HOSTILE_BODIES)
def test_a_hostile_decision_body_is_refused_and_the_call_still_waits(
    rita: Api, waiting_call: ToolCall, body: str, expected: str
) -> None:
    refused(rita.post(f"/tool-calls/{waiting_call.pk}/decision", body), expected)
    waiting_call.refresh_from_db()
    assert waiting_call.status == ToolCall.Status.AWAITING_APPROVAL
    assert waiting_call.decided_at is None


@pytest.mark.parametrize(("body", "expected"), HOSTILE_BODIES)
def test_a_hostile_evaluate_body_is_refused(rita: Api, body: str, expected: str) -> None:
    before = stored()
    refused(rita.post("/policies/default/evaluate", body), expected)
    assert stored() == before


def test_a_hostile_edit_in_a_decision_is_refused_by_name(rita: Api, waiting_call: ToolCall) -> None:
    body = '{"decision": "approve", "args": {"path": ".env", "content": "\\udc00"}}'
    refused(rita.post(f"/tool-calls/{waiting_call.pk}/decision", body), "`args.content`")
    waiting_call.refresh_from_db()
    assert waiting_call.status == ToolCall.Status.AWAITING_APPROVAL


def test_a_query_string_with_nul_is_refused(alice: Api) -> None:
    refused(alice.get("/sessions?status=%00"), "the query parameter `status` contains a NUL")


def test_a_policy_name_with_nul_in_the_path_is_refused(rita: Api) -> None:
    refused(rita.get("/policies/%00"), "the path parameter `name` contains a NUL byte")
    body = {"tool": "read_file", "args": {"path": "a"}}
    refused(rita.post("/policies/a%00b/evaluate", body), "the path parameter `name` contains")


def test_a_policy_name_that_is_not_utf8_is_not_found(rita: Api) -> None:
    assert rita.get("/policies/%ED%A0%80").status_code == 404


@pytest.mark.parametrize("wait", ["nan", "inf", "-1", "1e999", "x"])
def test_a_wait_that_is_not_a_sane_number_is_a_422(
    alice: Api, waiting_call: ToolCall, wait: str
) -> None:
    answer = alice.get(f"/tool-calls/{waiting_call.pk}?wait={wait}")
    assert answer.status_code == 422, answer.content
    assert any("wait" in error["loc"] for error in answer.json()["detail"])


# --- /mcp: Host and Origin are checked before anything else, as the site's chain does ------

INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "evil", "version": "1"}},
}  # fmt: skip


async def _mcp(headers: dict[str, str], host: str) -> httpx.Response:
    """POST an initialize to `/mcp` of daphne's ASGI application, in this process."""
    transport = httpx.ASGITransport(app=application)
    async with httpx.AsyncClient(transport=transport, base_url=f"http://{host}") as client:
        accept = {"Accept": "application/json, text/event-stream"}
        return await client.post("/mcp", json=INITIALIZE, headers={**accept, **headers})


def mcp_post(headers: dict[str, str], host: str = "127.0.0.1") -> httpx.Response:
    return async_to_sync(_mcp)(headers, host)


@pytest.mark.parametrize(
    ("host", "origin", "status", "expected"),
    [
        ("evil.example.com", "http://evil.example.com", 400, "the name in AGENTWEB_BASE_URL"),
        ("evil.example.com", None, 400, "The Host header 'evil.example.com' is not a name"),
        ("127.0.0.1:8000", "http://evil.example.com", 403, "DJANGO_CSRF_TRUSTED_ORIGINS"),
        ("127.0.0.1", "null", 403, "The Origin 'null' is not this site's"),
        ("127.0.0.1", "https://127.0.0.1", 403, "is not this site's"),
        ("127.0.0.1", "http://127.0.0.1.evil.example.com", 403, "is not this site's"),
        ("localhost:8000", "http://localhost:9999", 403, "is not this site's"),
    ],
)
def test_mcp_refuses_a_foreign_host_or_browser_origin_before_the_token_is_read(
    alice: Api, host: str, origin: str | None, status: int, expected: str
) -> None:
    """DNS rebinding: a page of evil.example.com whose name now points at 127.0.0.1."""
    before = stored()
    headers = {**alice.headers, **({"Origin": origin} if origin else {})}
    answer = mcp_post(headers, host)
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == "application/json"
    assert expected in answer.json()["detail"]
    assert "mcp-session-id" not in answer.headers
    assert stored() == before


@pytest.mark.parametrize(
    ("host", "origin"),
    [
        ("127.0.0.1", None),
        ("127.0.0.1:8000", "http://127.0.0.1:8000"),
        ("localhost", "http://localhost"),
        ("127.0.0.1", "https://agentweb.example.com"),  # in DJANGO_CSRF_TRUSTED_ORIGINS
    ],
)
def test_mcp_lets_its_own_host_and_origin_through_to_the_token_check(
    settings: Any, host: str, origin: str | None
) -> None:
    settings.CSRF_TRUSTED_ORIGINS = ["https://agentweb.example.com"]
    answer = mcp_post({"Origin": origin} if origin else {}, host)
    assert answer.status_code == 401, answer.text
    assert answer.json()["detail"].startswith("Authentication required")


def test_a_foreign_host_is_a_400_on_the_rest_api_too() -> None:
    """The site's own chain, for comparison: what /mcp and the hooks now match."""
    assert Client().get("/api/sessions", HTTP_HOST="evil.example.com").status_code == 400


# --- API: wrong types are a 422 naming the field ------------------------------------------


def named(answer: Any, field: str) -> None:
    assert answer.status_code == 422, answer.content
    detail = answer.json()["detail"]
    assert any(field in error["loc"] for error in detail), detail


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"task": 5, "repo": "r"}, "task"),
        ({"task": "t", "repo": ["r"]}, "repo"),
        ({"task": "t" * 20_001, "repo": "r"}, "task"),
        ({"task": "t", "repo": "r", "model": {"a": 1}}, "model"),
        ({"task": "t", "repo": "r", "extra": 1}, "extra"),
        ({"repo": "r"}, "task"),
    ],
)
def test_a_session_body_of_the_wrong_shape_names_the_field(
    alice: Api, body: dict[str, Any], field: str
) -> None:
    before = stored()
    named(alice.post("/sessions", body), field)
    assert stored() == before


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"tool": "read_file", "args": "README.md"}, "args"),
        ({"tool": "read_file", "args": ["README.md"]}, "args"),
        ({"tool": 5, "args": {}}, "tool"),
        ({"tool": "", "args": {}}, "tool"),
        ({"args": {}}, "tool"),
    ],
)
def test_a_tool_call_body_of_the_wrong_shape_names_the_field(
    alice: Api, session: AgentSession, body: dict[str, Any], field: str
) -> None:
    before = stored()
    named(alice.post(f"/sessions/{session.pk}/tool-calls", body), field)
    assert stored() == before


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"decision": "maybe"}, "decision"),
        ({"decision": "approve", "args": [1]}, "args"),
        ({"decision": "approve", "remember": [True]}, "remember"),
        ({"decision": "deny", "reason": 5}, "reason"),
        ({}, "decision"),
    ],
)
def test_a_decision_of_the_wrong_shape_names_the_field(
    rita: Api, waiting_call: ToolCall, body: dict[str, Any], field: str
) -> None:
    named(rita.post(f"/tool-calls/{waiting_call.pk}/decision", body), field)
    waiting_call.refresh_from_db()
    assert waiting_call.status == ToolCall.Status.AWAITING_APPROVAL


def test_an_empty_body_is_a_422_naming_what_is_missing(alice: Api) -> None:
    named(alice.post("/sessions", ""), "body")


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        ({"path": 5}, "`path` must be a string (got 5)"),
        ({"path": "a", "offset": -1}, "`offset` must be a positive integer"),
        ({"path": "p" * 5000}, "`path` is too long: 5,000 characters, at most 4,096"),
        ({"path": "a", "offset": [[[[1]]]]}, "`offset` must be a positive integer"),
    ],
)
def test_tool_arguments_of_the_wrong_type_are_denied_with_the_reason(
    rita: Api, args: dict[str, Any], reason: str
) -> None:
    answer = rita.post("/policies/default/evaluate", {"tool": "read_file", "args": args})
    assert answer.status_code == 200, answer.content
    assert answer.json()["decision"] == "deny"
    assert reason in answer.json()["reason"]


def test_a_well_formed_call_with_bad_arguments_is_received(
    alice: Api, session: AgentSession
) -> None:
    """The control: a body that is valid JSON reaches the service and is stored."""
    body = {"tool": "read_file", "args": {"path": 5, "emoji": "\U0001f600"}}
    answer = alice.post(f"/sessions/{session.pk}/tool-calls", body)
    assert answer.status_code == 201, answer.content
    assert ToolCall.objects.get().args == {"path": 5, "emoji": "\U0001f600"}


# --- management commands ------------------------------------------------------------------

HOSTILE_ARGS_JSON = [
    pytest.param('{"path": "\\ud800x", "content": "x"}', "`path` contains a lone surrogate"),
    pytest.param('{"path": "a", "content": "x\\u0000"}', "`content` contains a NUL byte"),
    pytest.param('{"path": "a", "n": 1e400}', "1e400 is too large"),
    pytest.param('{"path": "a", "n": NaN}', "NaN is not valid JSON"),
    pytest.param('{"n": ' + "9" * 5000 + "}", "integers must fit in 64 bits"),
    pytest.param(DEEP, "ARGS_JSON is nested too deeply (more than 32 levels)"),
    pytest.param("{", "ARGS_JSON is not valid JSON"),
]


@pytest.mark.parametrize(("text", "expected"), HOSTILE_ARGS_JSON)
def test_call_tool_refuses_hostile_json_and_stores_nothing(
    workspace: Path, text: str, expected: str
) -> None:
    before = stored()
    with pytest.raises(CommandError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        call_command("call_tool", "write_file", text, workspace=str(workspace), stdout=StringIO())
    assert stored() == before
    assert not (workspace / "a").exists()


@pytest.mark.parametrize(("text", "expected"), HOSTILE_ARGS_JSON)
def test_evaluate_policy_refuses_hostile_json(workspace: Path, text: str, expected: str) -> None:
    with pytest.raises(CommandError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        call_command("evaluate_policy", "write_file", text, workspace=str(workspace))


@pytest.mark.parametrize(
    ("option", "value", "expected"),
    [
        ("tool", "read\ud800", "`TOOL` contains a lone surrogate"),
        ("tool", "read\x00", "`TOOL` contains a NUL byte"),
        ("policy", "de\udcfffault", "`--policy` contains a lone surrogate"),
        ("workspace", "/tmp/\x00", "`--workspace` contains a NUL byte"),
        ("workspace", "/tmp/\udcff", "`--workspace` contains a lone surrogate"),
    ],
)
def test_call_tool_refuses_unstorable_command_line_text(
    workspace: Path, option: str, value: str, expected: str
) -> None:
    options = {"tool": "read_file", "workspace": str(workspace), "policy": "default", option: value}
    tool = options.pop("tool")
    before = stored()
    with pytest.raises(CommandError, match=expected):
        call_command("call_tool", tool, '{"path": "README.md"}', stdout=StringIO(), **options)
    assert stored() == before


def test_call_tool_reports_wrong_types_as_a_failed_call(workspace: Path) -> None:
    out = StringIO()
    call_command("call_tool", "read_file", '{"path": [1]}', workspace=str(workspace), stdout=out)
    answer = json.loads(out.getvalue())
    assert answer["status"] == "failed"
    assert "`path` must be a string (got [1])" in answer["result"]


def test_call_tool_prints_a_result_holding_an_undecodable_file_name(workspace: Path) -> None:
    """list_files returns names as the disk has them; the line printed is still UTF-8."""
    (workspace / os.fsdecode(b"bad\xff.txt")).write_text("x")
    out = StringIO()
    call_command("call_tool", "list_files", '{"path": "."}', workspace=str(workspace), stdout=out)
    answer = json.loads(out.getvalue())
    assert "bad\ufffd.txt" in answer["result"]


def policy_file(tmp_path: Path, text: str | bytes) -> str:
    path = tmp_path / "policy.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
    return str(path)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"name": "x\\ud800"}', "`name` contains a lone surrogate"),
        ('{"name": "strict", "description": "a\\u0000"}', "`description` contains a NUL byte"),
        ('{"name": "strict", "rules": [{"tool": "*", "args": {"\\udc00": "x"}}]}', "a key in"),
        ('{"name": "strict", "max_diff_lines": 1' + "0" * 30 + "}", "fit in 64 bits"),
        ('{"name": "strict", "max_diff_lines": Infinity}', "Infinity is not valid JSON"),
        ('{"name": "strict", "rules": ' + DEEP + "}", "nested too deeply"),
        (b'{"name": "\xff"}', "Cannot read"),
        ('{"name": 5}', "name: must be a non-empty string"),
        ('{"name": "strict", "rules": "all"}', "rules"),
        ('{"name": "strict", "rules": [5]}', "rules[0]"),
        ('{"name": "strict", "protected_paths": [1, null]}', "protected_paths"),
        ('{"name": "strict", "max_diff_lines": "10"}', "max_diff_lines"),
        ("[]", "one JSON object"),
    ],
)
def test_import_policy_refuses_hostile_files_and_writes_nothing(
    tmp_path: Path, text: str | bytes, expected: str
) -> None:
    before = stored()
    with pytest.raises(CommandError) as error:
        call_command("import_policy", policy_file(tmp_path, text), stdout=StringIO())
    assert expected in str(error.value)
    assert stored() == before
    assert not Policy.objects.filter(name="strict").exists()


def test_import_policy_refuses_a_rule_tool_longer_than_the_column(tmp_path: Path) -> None:
    text = json.dumps({"name": "strict", "rules": [{"tool": "t" * 300, "decision": "allow"}]})
    with pytest.raises(CommandError, match=r"rules\[0\]\.tool"):
        call_command("import_policy", policy_file(tmp_path, text), stdout=StringIO())


def test_import_policy_refuses_a_file_name_with_nul() -> None:
    with pytest.raises(CommandError, match="Cannot read"):
        call_command("import_policy", "policy\x00.json", stdout=StringIO())


def test_manage_py_call_tool_with_a_lone_surrogate_exits_without_a_traceback(
    workspace: Path, tmp_path: Path
) -> None:
    """The reproduction of issue 11, as a person would type it."""
    env = {**os.environ, "AGENTWEB_VAR": str(tmp_path / "var"), "PYTHONIOENCODING": "utf-8"}
    env.pop("DATABASE_URL", None)  # its own SQLite: the test database is not migrated here
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "-v0"], env=env, check=True, capture_output=True)
    done = subprocess.run(
        [*manage, "call_tool", "--workspace", str(workspace), "write_file",
         '{"path": "\\ud800x", "content": "x"}'],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert "CommandError: ARGS_JSON: `path` contains a lone surrogate (\\ud800)" in done.stderr
    assert done.stdout == ""


# --- storable_json on the real database -----------------------------------------------------


def test_storable_json_of_hostile_arguments_is_stored_and_read_back(session: AgentSession) -> None:
    """What the receive path must store before validation (see services._tool_call_create)."""
    hostile = {
        "path": "\ud800x",
        "content": "a\x00b",
        "n": [2**64, float("nan"), float("inf")],
        "deep": json.loads("[" * 100 + "]" * 100),
        "\udcff": None,
    }
    call = ToolCall.objects.create(
        session=session, tool="write_file", args=storable_json(hostile), status="pending"
    )
    call.refresh_from_db()
    assert call.args["path"] == "\ufffdx"
    assert call.args["content"] == "a\\u0000b"
    assert call.args["n"] == [str(2**64), "nan", "inf"]
    assert "nested deeper than 32 levels" in json.dumps(call.args["deep"])
    assert call.args["\ufffd"] is None


def test_the_receive_path_records_hostile_raw_arguments_as_a_failed_call(
    session: AgentSession, request: pytest.FixtureRequest
) -> None:
    """Arguments that bypass the API's parser (a model's tool call) are still recorded."""
    args = {"path": "\ud800x", "content": "a\x00b"}
    call = services.tool_call_run_in_process(session=session, tool="write_file", args=args)
    assert call.status == ToolCall.Status.FAILED
    assert "`path` contains a lone surrogate (\\ud800)" in call.result
