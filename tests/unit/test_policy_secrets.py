"""secret_paths and web writes: reading a secret or sending data out needs a person."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tools_app.core.policy.defaults import DEFAULT_POLICY
from tools_app.core.policy.engine import evaluate
from tools_app.core.policy.loader import policy_from_dict, policy_to_dict
from tools_app.core.policy.types import CallFacts, PolicySpec, SessionCounters, Verdict
from tools_app.core.tools.base import SandboxOptions, ToolContext
from tools_app.core.tools.search import SearchCodebaseArgs, search_codebase

DEFAULT = policy_from_dict(DEFAULT_POLICY)
LOCAL = replace(DEFAULT, web_allow_hosts=("127.0.0.1",))


def decide(
    tool: str, args: dict[str, Any], workspace: Path, policy: PolicySpec = DEFAULT
) -> Verdict:
    return evaluate(policy, CallFacts(tool, args, workspace), SessionCounters())


@pytest.mark.parametrize(
    "path", [".env", "config/.env.production", "certs/server.pem", "id_rsa", "aws_credentials.json"]
)
def test_reading_a_secret_path_needs_a_person(path: str, tmp_path: Path) -> None:
    decision = decide("read_file", {"path": path}, tmp_path)
    assert (decision.kind, decision.rule) == ("require_approval", "builtin:secret-path")
    assert path in decision.reason


def test_reading_an_ordinary_file_is_allowed(tmp_path: Path) -> None:
    assert decide("read_file", {"path": "src/env.py"}, tmp_path).kind == "allow"


def test_an_old_policy_file_imports_with_the_default_secret_paths() -> None:
    spec = policy_from_dict({"name": "old", "max_diff_lines": 100})
    assert ".env" in spec.secret_paths
    assert spec.web_write_hosts == ()
    assert policy_from_dict(policy_to_dict(spec)) == spec


def test_a_bad_secret_pattern_is_refused_naming_the_field() -> None:
    from tools_app.core.policy.loader import PolicyInvalid

    with pytest.raises(PolicyInvalid, match=r"secret_paths\[0\]"):
        policy_from_dict({"name": "bad", "secret_paths": ["!.env"]})


@pytest.mark.parametrize(
    "args",
    [
        {"url": "http://127.0.0.1:9/x", "method": "POST", "body": "data"},
        {"url": "http://127.0.0.1:9/x", "method": "PUT"},
        {"url": "http://127.0.0.1:9/x", "method": "DELETE"},
        {"url": "http://127.0.0.1:9/x", "body": "a body on a GET"},
    ],
)
def test_a_web_write_needs_a_person(args: dict[str, Any], tmp_path: Path) -> None:
    decision = decide("web_fetch", args, tmp_path, LOCAL)
    assert (decision.kind, decision.rule) == ("require_approval", "builtin:web-write")
    assert "127.0.0.1" in decision.reason


def test_a_plain_get_and_a_write_to_a_write_host_are_allowed(tmp_path: Path) -> None:
    assert decide("web_fetch", {"url": "http://127.0.0.1:9/x"}, tmp_path, LOCAL).kind == "allow"
    trusted = replace(LOCAL, web_write_hosts=("127.0.0.1",))
    post = {"url": "http://127.0.0.1:9/x", "method": "POST", "body": "{}"}
    assert decide("web_fetch", post, tmp_path, trusted).kind == "allow"


# --- search never shows a secret's contents ---------------------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text(".env\nbuild/\n")
    (tmp_path / ".env").write_text("TOKEN=ignored-secret\n")
    (tmp_path / "deploy").mkdir()
    (tmp_path / "deploy" / ".env.production").write_text("TOKEN=tracked-secret\n")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "out.py").write_text("TOKEN = 'built'\n")
    (tmp_path / "app.py").write_text("TOKEN = read_token()\n")
    return tmp_path


def search(repo: Path, secrets: tuple[str, ...], **args: Any) -> str:
    context = ToolContext(workspace=repo, sandbox=SandboxOptions(secret_paths=secrets))
    return search_codebase(context, SearchCodebaseArgs(pattern="TOKEN", **args))


@pytest.mark.parametrize("include", [None, "**/.env*", ".env*", "*", "deploy/*"])
def test_search_never_returns_a_secret_files_contents(repo: Path, include: str | None) -> None:
    found = search(repo, DEFAULT.secret_paths, include=include)
    assert "secret" not in found


def test_search_of_a_secret_file_named_as_the_path_shows_nothing(repo: Path) -> None:
    found = search(repo, DEFAULT.secret_paths, path="deploy/.env.production")
    assert "tracked-secret" not in found


def test_an_include_glob_does_not_widen_what_gitignore_hides(repo: Path) -> None:
    assert "built" not in search(repo, (), include="*.py")
    assert "ignored-secret" not in search(repo, (), include=".env")
    assert search(repo, (), include="*.py").splitlines() == ["app.py:1:TOKEN = read_token()"]
    assert "tracked-secret" in search(repo, (), include="deploy/*")
