"""What the Connect page and `hook_settings` compose (core/agent_connect.py): one
minimum version per CLI, the very versions the Makefile pins and the tests drive."""

from __future__ import annotations

import re

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from tests.helpers import ROOT
from tools_app.core.agent_connect import INTEGRATIONS, MCP_PROTOCOLS, MINIMUM_VERSIONS, Connection

PINS = {"claude-code": "CLAUDE_CODE_VERSION", "codex": "CODEX_VERSION",
        "gemini": "GEMINI_CLI_VERSION"}  # fmt: skip


def test_the_minimum_versions_are_the_makefiles_pins() -> None:
    makefile = (ROOT / "Makefile").read_text()
    pinned = {
        agent: re.search(rf"^{name} \?= (\S+)$", makefile, re.M).group(1)  # type: ignore[union-attr]
        for agent, name in PINS.items()
    }
    assert pinned == MINIMUM_VERSIONS


def test_the_mcp_protocols_named_are_those_the_server_speaks() -> None:
    spoken = sorted(HANDSHAKE_PROTOCOL_VERSIONS)
    assert (spoken[0], spoken[-1]) == MCP_PROTOCOLS


def test_every_agent_says_where_each_snippet_goes_and_sets_the_token() -> None:
    connection = Connection(base_url="https://agentweb.example.com", wait_seconds=60,
                            token="aw_secret")  # fmt: skip
    for integration in INTEGRATIONS.values():
        composed = integration.compose(connection)
        keys = [snippet.key for snippet in composed]
        assert len(keys) == len(set(keys)), integration.name
        assert all(snippet.where and snippet.text for snippet in composed)
        assert any("export AGENTWEB_TOKEN=aw_secret" in s.text for s in composed)
        assert any("https://agentweb.example.com" in s.text for s in composed)
