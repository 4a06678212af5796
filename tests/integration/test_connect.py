"""Connect your agent (/connect/): a token of the person's own and exactly what to paste,
the same text `hook_settings` prints (one source), with this server's URL; and
`hook_settings --url` honoured for every agent."""

from __future__ import annotations

import html
import json
import re
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

from tools_app.core.agent_connect import MINIMUM_VERSIONS
from tools_app.models import ApiToken, AuditEntry, Policy

pytestmark = pytest.mark.django_db

BASE_URL = "https://agentweb.example.com"


@pytest.fixture(autouse=True)
def base_url(settings: Any) -> None:
    settings.AGENTWEB_BASE_URL = BASE_URL
    settings.ALLOWED_HOSTS = ["testserver"]


def connect(user: User, **fields: str) -> str:
    client = Client()
    client.force_login(user)
    form = {"agent": "claude-code", "policy": "default", "expires": "30", **fields}
    answer = client.post("/connect/", form)
    assert answer.status_code == 200
    assert "no-store" in answer["Cache-Control"]
    return answer.content.decode()


def snippets(page: str) -> dict[str, str]:
    """Each snippet's text by its key, as the page shows it."""
    found = re.findall(r'data-key="([a-z]+)".*?<pre><code[^>]*>(.*?)</code></pre>', page, re.S)
    return {key: html.unescape(text) for key, text in found}


def printed(*args: str) -> str:
    out = StringIO()
    call_command("hook_settings", *args, stdout=out)
    return out.getvalue()


def test_the_page_offers_every_agent_with_its_minimum_version(creator: User) -> None:
    client = Client()
    client.force_login(creator)
    page = client.get("/connect/").content.decode()
    for label in ("Claude Code", "Codex", "Gemini CLI", "An MCP client"):
        assert label in page
    for version in MINIMUM_VERSIONS.values():
        assert f"{version} or later" in page
    assert 'href="/connect/"' in page  # in the navigation


def test_claude_code_gets_an_agent_token_and_hook_settings_own_text(creator: User) -> None:
    page = connect(creator, expires="7")
    token = ApiToken.objects.get(user=creator)
    assert (token.scope, token.name) == ("agent", "Claude Code (Connect)")
    assert token.expires_at is not None
    shown = snippets(page)
    assert shown["settings"] == printed("claude-code").rstrip("\n")
    assert json.loads(shown["settings"])["hooks"]["PreToolUse"][0]["hooks"][0]["url"] == (
        f"{BASE_URL}/api/hooks/claude-code"
    )
    [made] = re.findall(r"export AGENTWEB_TOKEN=(aw_\S+)", shown["environment"])
    assert made.startswith(token.prefix)
    assert "Claude Code 2.1.332 or later" in page
    assert 'data-check-url="/api/hooks/check?policy=default&amp;agent=claude-code"' in page
    entry = AuditEntry.objects.get(action="token.create")
    assert (entry.actor_name, entry.via) == ("alice", "browser")


def test_codex_and_gemini_get_their_files_naming_this_server(creator: User) -> None:
    Policy.objects.create(name="strict")
    codex = snippets(connect(creator, agent="codex", policy="strict"))
    assert codex["hooks"] == printed("codex", "--policy", "strict").rstrip("\n")
    assert codex["sandbox"] == printed("codex", "--policy", "strict", "--sandbox")
    assert f"AGENTWEB_URL={BASE_URL}" in codex["hooks"]
    assert "AGENTWEB_POLICY=strict" in codex["hooks"]
    assert f"curl -fsSL {BASE_URL}/api/hooks/agentweb-hook.py" in codex["install"]
    gemini = snippets(connect(creator, agent="gemini"))
    assert gemini["hooks"] == printed("gemini").rstrip("\n")
    assert json.loads(gemini["sandbox"]) == json.loads(printed("gemini", "--sandbox"))
    assert "BeforeTool" in gemini["hooks"] and "environment" in gemini


def test_an_mcp_client_gets_the_claude_mcp_add_line_and_a_json_config(creator: User) -> None:
    page = connect(creator, agent="mcp")
    shown = snippets(page)
    assert shown["command"] == (
        f"claude mcp add --transport http agentweb {BASE_URL}/mcp "
        '--header "Authorization: Bearer $AGENTWEB_TOKEN"'
    )
    server = json.loads(shown["config"])["mcpServers"]["agentweb"]
    assert server == {"type": "http", "url": f"{BASE_URL}/mcp",
                      "headers": {"Authorization": "Bearer ${AGENTWEB_TOKEN}"}}  # fmt: skip
    assert "connection-check" not in page  # the check is of hooks


def test_a_private_address_gets_command_hooks_and_the_hook_to_install(
    creator: User, settings: Any
) -> None:
    settings.AGENTWEB_BASE_URL = "http://10.20.30.40:8000"
    shown = snippets(connect(creator))
    hook = json.loads(shown["settings"])["hooks"]["PreToolUse"][0]["hooks"][0]
    assert hook["type"] == "command"
    assert "AGENTWEB_URL=http://10.20.30.40:8000" in hook["command"]
    assert "agentweb-hook" in shown["install"]


@pytest.mark.parametrize(
    "fields", [{"agent": "cursor"}, {"policy": "no-such-policy"}, {"expires": "-1"}]
)
def test_bad_input_is_a_form_error_and_makes_no_token(
    creator: User, fields: dict[str, str]
) -> None:
    page = connect(creator, **fields)
    assert "Select a valid choice" in page
    assert not ApiToken.objects.exists()


@pytest.mark.parametrize("agent", ["codex", "gemini"])
def test_hook_settings_url_is_honoured_for_codex_and_gemini(agent: str) -> None:
    url = "http://agentweb.internal:9000"
    hooks = json.loads(printed(agent, "--url", url))["hooks"]
    commands = [hook["command"] for event in hooks.values() for hook in event[0]["hooks"]]
    assert commands and all(f"AGENTWEB_URL={url} " in command for command in commands)
    assert f"AGENTWEB_URL={BASE_URL} " in printed(agent)  # else AGENTWEB_BASE_URL
