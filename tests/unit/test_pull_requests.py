"""create_pull_request: the preview, refusals, the push to a bare origin, and the GitHub,
gh CLI and local providers. GitHub is a small API-compatible server on 127.0.0.1."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.unit.helpers import MemoryStore, call, git, git_repo
from tools_app.core.tools.base import SandboxOptions, ToolContext
from tools_app.core.tools.errors import ToolError
from tools_app.core.tools.forge import ForgeSettings, github_repo
from tools_app.core.tools.pull_requests import (
    CreatePullRequestArgs,
    _auth_config,
    pull_request_preview,
)

TOKEN = "ghp_secret_token_123"
GITHUB_URL = "https://github.com/o/r.git"


@dataclass
class FakeGitHub:
    """Speaks the two endpoints create_pull_request uses; records every request."""

    base: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)
    pulls: list[dict[str, Any]] = field(default_factory=list)
    fail_post: tuple[int, dict[str, Any]] | None = None


def _handler(state: FakeGitHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _answer(self, status: int, data: Any) -> None:
            body = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _record(self, body: Any = None) -> tuple[str, dict[str, list[str]]] | None:
            split = urlsplit(self.path)
            auth = self.headers.get("Authorization", "")
            state.requests.append(
                {"method": self.command, "path": split.path, "query": parse_qs(split.query),
                 "auth": auth, "body": body}
            )  # fmt: skip
            if auth != f"Bearer {TOKEN}":
                self._answer(401, {"message": f"Bad credentials: {auth}"})
                return None
            if split.path != "/repos/o/r/pulls":
                self._answer(404, {"message": "Not Found"})
                return None
            return split.path, parse_qs(split.query)

        def do_GET(self) -> None:
            if (found := self._record()) is None:
                return
            query = found[1]
            head = query["head"][0].split(":", 1)[1]
            open_prs = [p for p in state.pulls if p["head"] == head and query["state"] == ["open"]]
            self._answer(200, [{"number": p["number"], "html_url": p["url"]} for p in open_prs])

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self._record(body) is None:
                return
            if state.fail_post:
                self._answer(*state.fail_post)
                return
            number = len(state.pulls) + 1
            url = f"https://github.com/o/r/pull/{number}"
            state.pulls.append({**body, "number": number, "url": url})
            self._answer(201, {"number": number, "html_url": url})

    return Handler


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    state = FakeGitHub()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    state.base = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()


def bare_origin(tmp_path: Path, ws: Path, url: str | None = None) -> Path:
    """A bare `origin` holding main; with `url`, origin is configured as that URL and
    git rewrites it to the bare repository (url.<bare>.insteadOf), so pushes are real."""
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True)
    git(ws, "remote", "add", "origin", str(origin))
    git(ws, "push", "-q", "origin", "main")
    if url:
        git(ws, "remote", "set-url", "origin", url)
        git(ws, "config", f"url.{origin}.insteadOf", url)
    return origin


def feature_commit(ws: Path, branch: str = "feat", name: str = "feature.py") -> None:
    git(ws, "switch", "-q", "-c", branch)
    (ws / name).write_text("print('hi')\n")
    git(ws, "add", name)
    git(ws, "commit", "-q", "-m", f"Add {name}")


def origin_rev(origin: Path, ref: str) -> str:
    done = subprocess.run(
        ["git", "--git-dir", str(origin), "rev-parse", "--verify", "--quiet", ref],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return done.stdout.strip()


def preview(ctx: ToolContext, **args: Any) -> dict[str, Any]:
    return pull_request_preview(ctx, CreatePullRequestArgs(**{"title": "T", **args}))


# --- preview and refusals ---------------------------------------------------------------


def test_preview_shows_exactly_what_will_be_proposed(tmp_path: Path) -> None:
    ws = git_repo(tmp_path)
    bare_origin(tmp_path, ws)
    feature_commit(ws)
    (ws / "README.md").write_text("hello\nmore\n")
    git(ws, "commit", "-q", "-am", "Extend readme")
    shown = preview(ToolContext(workspace=ws), title="Add feature", body="Why", draft=True)
    assert (shown["title"], shown["body"], shown["base"], shown["head"], shown["draft"]) == (
        "Add feature", "Why", "main", "feat", True,
    )  # fmt: skip
    log = git(ws, "log", "--reverse", "--format=%H %s", "main..feat").splitlines()
    assert [f"{c['hash']} {c['subject']}" for c in shown["commits"]] == log
    assert "+++ b/feature.py" in shown["diff"] and "+more" in shown["diff"]
    assert "2 files changed" in shown["stat"]
    assert shown["remote"] == str(tmp_path / "origin.git")
    assert (shown["provider"], shown["warnings"]) == ("local", [])


def test_preview_names_a_secret_file_the_branch_carries_but_shows_none_of_it(
    tmp_path: Path,
) -> None:
    ws = git_repo(tmp_path)
    bare_origin(tmp_path, ws)
    feature_commit(ws)
    (ws / ".env").write_text("SECRET=sk_live_abc123xyz\n")
    git(ws, "add", ".env")
    git(ws, "commit", "-q", "-m", "Add env")
    ctx = ToolContext(workspace=ws, sandbox=SandboxOptions(secret_paths=(".env",)))
    shown = preview(ctx)
    assert "sk_live" not in json.dumps(shown)
    assert "+++ b/feature.py" in shown["diff"]
    assert "1 secret file left out: .env" in shown["stat"]


def test_preview_warns_about_uncommitted_changes(tmp_path: Path) -> None:
    ws = git_repo(tmp_path)
    feature_commit(ws)
    (ws / "dirty.txt").write_text("x\n")
    assert "uncommitted changes" in preview(ToolContext(workspace=ws))["warnings"][0]


def test_preview_compares_with_origin_base_when_the_remote_has_it(tmp_path: Path) -> None:
    ws = git_repo(tmp_path)
    bare_origin(tmp_path, ws)
    (ws / "local.txt").write_text("only local main\n")
    git(ws, "add", ".")
    git(ws, "commit", "-q", "-m", "Local main commit")
    feature_commit(ws)
    subjects = [c["subject"] for c in preview(ToolContext(workspace=ws))["commits"]]
    assert subjects == ["Local main commit", "Add feature.py"]


def test_refuses_on_the_base_branch(tmp_path: Path) -> None:
    ws = git_repo(tmp_path)
    with pytest.raises(ToolError, match="current branch is the base branch 'main'"):
        preview(ToolContext(workspace=ws))


def test_refuses_when_nothing_differs(tmp_path: Path) -> None:
    ws = git_repo(tmp_path)
    git(ws, "switch", "-q", "-c", "empty")
    with pytest.raises(ToolError, match=r"no commits that are not in 'main'.*git_commit"):
        preview(ToolContext(workspace=ws))


def test_refuses_an_unknown_base(tmp_path: Path) -> None:
    ws = git_repo(tmp_path)
    feature_commit(ws)
    with pytest.raises(ToolError, match="base branch 'develop' is unknown"):
        preview(ToolContext(workspace=ws), base="develop")


def test_refuses_a_detached_head(tmp_path: Path) -> None:
    ws = git_repo(tmp_path)
    feature_commit(ws)
    git(ws, "checkout", "-q", "--detach")
    with pytest.raises(ToolError, match="HEAD is detached"):
        preview(ToolContext(workspace=ws))


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ({"body": "b"}, "missing required argument `title`"),
        ({"title": "t", "base": "-main"}, "`base` '-main' is not a valid branch name"),
        ({"title": "t", "draft": "yes"}, "`draft` must be true or false"),
    ],
)
def test_bad_arguments(tmp_path: Path, args: dict[str, Any], match: str) -> None:
    with pytest.raises(ToolError, match=match):
        call(ToolContext(workspace=git_repo(tmp_path)), "create_pull_request", args)


# --- the local store --------------------------------------------------------------------


def test_local_origin_pushes_and_records_in_agentweb(tmp_path: Path) -> None:
    ws = git_repo(tmp_path)
    origin = bare_origin(tmp_path, ws)
    feature_commit(ws)
    store = MemoryStore()
    ctx = ToolContext(workspace=ws, forge=ForgeSettings(local_pull_requests=store))
    out = call(ctx, "create_pull_request", {"title": "Feature", "body": "B"})
    assert out == "Pull request #1: http://agentweb.test/prs/1"
    assert origin_rev(origin, "refs/heads/feat") == git(ws, "rev-parse", "HEAD").strip()
    created = store.created[0]
    assert created["repo_key"] == str(origin)
    assert (created["title"], created["body"], created["base"], created["head"]) == (
        "Feature", "B", "main", "feat",
    )  # fmt: skip
    assert [c["subject"] for c in created["commits"]] == ["Add feature.py"]
    assert "+print('hi')" in str(created["diff"])


def test_a_second_call_returns_the_open_pull_request_and_pushes_new_commits(
    tmp_path: Path,
) -> None:
    ws = git_repo(tmp_path)
    origin = bare_origin(tmp_path, ws)
    feature_commit(ws)
    store = MemoryStore()
    ctx = ToolContext(workspace=ws, forge=ForgeSettings(local_pull_requests=store))
    call(ctx, "create_pull_request", {"title": "Feature"})
    (ws / "more.txt").write_text("m\n")
    call(ctx, "git_commit", {"message": "More"})
    out = call(ctx, "create_pull_request", {"title": "Feature"})
    assert out.startswith("Pull request #1: http://agentweb.test/prs/1\n")
    assert "already open for feat; no new pull request was created" in out
    assert len(store.created) == 1
    assert origin_rev(origin, "refs/heads/feat") == git(ws, "rev-parse", "HEAD").strip()


def test_no_origin_records_without_pushing(tmp_path: Path) -> None:
    ws = git_repo(tmp_path)
    feature_commit(ws)
    store = MemoryStore()
    ctx = ToolContext(workspace=ws, forge=ForgeSettings(local_pull_requests=store))
    out = call(ctx, "create_pull_request", {"title": "Feature"})
    assert out == (
        "Pull request #1: http://agentweb.test/prs/1\n"
        "The repository has no origin remote: nothing was pushed."
    )
    assert store.created[0]["repo_key"] == str(ws.resolve())


def test_without_any_forge_the_error_says_so(tmp_path: Path) -> None:
    ws = git_repo(tmp_path)
    origin = bare_origin(tmp_path, ws)
    feature_commit(ws)
    with pytest.raises(ToolError, match="No forge is configured"):
        call(ToolContext(workspace=ws), "create_pull_request", {"title": "Feature"})
    assert origin_rev(origin, "refs/heads/feat")  # the push happened first


def test_a_rejected_push_is_reported_and_nothing_is_opened(tmp_path: Path) -> None:
    ws = git_repo(tmp_path)
    origin = bare_origin(tmp_path, ws)
    feature_commit(ws)
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", str(origin), str(other)], check=True)
    git(other, "switch", "-q", "-c", "feat")
    (other / "x.txt").write_text("x\n")
    git(other, "add", ".")
    git(other, "commit", "-q", "-m", "Elsewhere")
    git(other, "push", "-q", "origin", "feat")
    store = MemoryStore()
    ctx = ToolContext(workspace=ws, forge=ForgeSettings(local_pull_requests=store))
    with pytest.raises(ToolError, match=r"Pushing feat to origin failed: .*rejected"):
        call(ctx, "create_pull_request", {"title": "Feature"})
    assert store.created == []


def test_helper_urls_are_never_pushed_to(tmp_path: Path) -> None:
    ws = git_repo(tmp_path)
    feature_commit(ws)
    git(ws, "remote", "add", "origin", f"ext::sh -c touch% {tmp_path}/pwned")
    store = MemoryStore()
    ctx = ToolContext(workspace=ws, forge=ForgeSettings(local_pull_requests=store))
    with pytest.raises(ToolError, match="is not a path or an https/ssh URL"):
        call(ctx, "create_pull_request", {"title": "Feature"})
    assert not (tmp_path / "pwned").exists()


# --- GitHub -----------------------------------------------------------------------------


def github_ctx(ws: Path, github: FakeGitHub, token: str = TOKEN) -> ToolContext:
    settings = ForgeSettings(github_token=token, github_api_base=github.base)
    return ToolContext(workspace=ws, forge=settings)


def test_github_pull_request_is_created_after_a_real_push(
    tmp_path: Path, github: FakeGitHub
) -> None:
    ws = git_repo(tmp_path)
    origin = bare_origin(tmp_path, ws, GITHUB_URL)
    feature_commit(ws)
    ctx = github_ctx(ws, github)
    assert preview(ctx)["provider"] == "github"
    out = call(ctx, "create_pull_request", {"title": "Feature", "body": "B", "draft": True})
    assert out == "Pull request #1: https://github.com/o/r/pull/1"
    assert origin_rev(origin, "refs/heads/feat") == git(ws, "rev-parse", "HEAD").strip()
    get, post = github.requests
    assert (get["method"], get["query"]) == ("GET", {"head": ["o:feat"], "state": ["open"]})
    assert post["method"] == "POST" and post["auth"] == f"Bearer {TOKEN}"
    assert post["body"] == {
        "title": "Feature", "body": "B", "head": "feat", "base": "main", "draft": True,
    }  # fmt: skip


def test_github_existing_pull_request_is_returned_without_a_second_post(
    tmp_path: Path, github: FakeGitHub
) -> None:
    ws = git_repo(tmp_path)
    bare_origin(tmp_path, ws, GITHUB_URL)
    feature_commit(ws)
    ctx = github_ctx(ws, github)
    call(ctx, "create_pull_request", {"title": "Feature"})
    out = call(ctx, "create_pull_request", {"title": "Feature again"})
    assert out.startswith("Pull request #1: https://github.com/o/r/pull/1\nIt was already open")
    assert [r["method"] for r in github.requests] == ["GET", "POST", "GET"]


def test_github_error_is_surfaced_without_the_token(tmp_path: Path, github: FakeGitHub) -> None:
    ws = git_repo(tmp_path)
    bare_origin(tmp_path, ws, GITHUB_URL)
    feature_commit(ws)
    github.fail_post = (422, {"message": "Validation Failed", "errors": [{"message": "No way"}]})
    with pytest.raises(ToolError) as caught:
        call(github_ctx(ws, github), "create_pull_request", {"title": "Feature"})
    assert "HTTP 422: Validation Failed; No way" in str(caught.value)


def test_bad_credentials_never_echo_the_token(tmp_path: Path, github: FakeGitHub) -> None:
    ws = git_repo(tmp_path)
    bare_origin(tmp_path, ws, GITHUB_URL)
    feature_commit(ws)
    wrong = "ghp_wrong_token_456"
    with pytest.raises(ToolError) as caught:
        call(github_ctx(ws, github, token=wrong), "create_pull_request", {"title": "Feature"})
    message = str(caught.value)
    assert "HTTP 401: Bad credentials" in message and wrong not in message
    assert "[token]" in message  # the server echoed it; it was redacted
    assert wrong not in repr(ForgeSettings(github_token=wrong))


def test_github_unreachable_is_a_clear_error(tmp_path: Path) -> None:
    ws = git_repo(tmp_path)
    bare_origin(tmp_path, ws, GITHUB_URL)
    feature_commit(ws)
    settings = ForgeSettings(github_token=TOKEN, github_api_base="http://127.0.0.1:9")
    with pytest.raises(ToolError, match="Could not reach the GitHub API"):
        call(ToolContext(workspace=ws, forge=settings), "create_pull_request", {"title": "F"})


@pytest.mark.parametrize(
    ("url", "api", "expected"),
    [
        ("https://github.com/o/r.git", None, ("github.com", "o", "r")),
        ("https://github.com/o/r", None, ("github.com", "o", "r")),
        ("git@github.com:o/r.git", None, ("github.com", "o", "r")),
        ("ssh://git@github.com/o/r.git", None, ("github.com", "o", "r")),
        ("https://gitlab.com/o/r.git", None, None),
        ("https://ghe.corp/o/r.git", "https://ghe.corp/api/v3", ("ghe.corp", "o", "r")),
        ("/srv/repos/r.git", "https://ghe.corp/api/v3", None),
        ("https://github.com/o/r/extra.git", None, None),
        (None, None, None),
    ],
)
def test_github_remote_detection(
    url: str | None, api: str | None, expected: tuple[str, str, str] | None
) -> None:
    found = github_repo(url, api) if api else github_repo(url)
    assert (found and (found.host, found.owner, found.name)) == expected


# --- gh CLI -----------------------------------------------------------------------------


def test_gh_cli_is_used_without_a_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stand-in `gh` on PATH records its arguments; the flow lists, then creates."""
    ws = git_repo(tmp_path)
    bare_origin(tmp_path, ws, GITHUB_URL)
    feature_commit(ws)
    bin_dir = tmp_path / "gh-bin"
    bin_dir.mkdir()
    log = tmp_path / "gh.log"
    (bin_dir / "gh").write_text(
        f'#!/bin/sh\necho "$@" >> "{log}"\n'
        'case "$2" in list) echo "[]";; create) echo "https://github.com/o/r/pull/9";; esac\n'
    )
    (bin_dir / "gh").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    ctx = ToolContext(workspace=ws, forge=ForgeSettings())
    assert preview(ctx)["provider"] == "gh"
    out = call(ctx, "create_pull_request", {"title": "Feature", "draft": True})
    assert out == "Pull request #9: https://github.com/o/r/pull/9"
    listed, created = log.read_text().splitlines()
    assert listed.startswith("pr list --repo github.com/o/r --head feat --state open")
    assert created.startswith("pr create --repo github.com/o/r --head feat --base main")
    assert created.endswith("--draft")


def test_a_github_https_push_authenticates_with_a_header_from_the_environment() -> None:
    """The token goes into http.extraHeader through GIT_CONFIG_* variables, not argv."""
    settings = ForgeSettings(github_token=TOKEN)
    pairs = _auth_config(GITHUB_URL, GITHUB_URL, settings)
    basic = base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()
    assert pairs == [("http.https://github.com/.extraHeader", f"Authorization: Basic {basic}")]
    assert _auth_config("/srv/origin.git", GITHUB_URL, settings) == []
    assert _auth_config(GITHUB_URL, GITHUB_URL, ForgeSettings()) == []
