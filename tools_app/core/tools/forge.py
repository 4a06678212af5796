"""Where pull requests are opened: the GitHub REST API, the `gh` CLI, or agentweb itself.

`ForgeSettings` travels in the ToolContext. The Django side implements
`LocalPullRequestStore` (a model with a number per repository and a dashboard URL); this
module only defines the protocol, so that tools/ stays free of Django.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import quote, urlsplit

import httpx

from tools_app.core.tools.errors import ToolError

DEFAULT_GITHUB_API = "https://api.github.com"
GH_TIMEOUT = 120.0
_SCP_LIKE = re.compile(r"^(?:[\w.+-]+@)?(?P<host>[\w.-]+):(?P<path>[^/].*)$")
_PR_NUMBER = re.compile(r"/pull/(\d+)/?$")


@dataclass(frozen=True)
class PullRequestRef:
    url: str
    number: int


class LocalPullRequestStore(Protocol):
    """Pull requests recorded in agentweb, for repositories without a forge.

    `repo_key` identifies the repository (the origin's resolved path or URL, or the
    workspace path when there is no origin); numbers count per `repo_key`. Called with
    keyword arguments.
    """

    def find(self, repo_key: str, head: str) -> PullRequestRef | None:
        """The open pull request for `head`, if one exists."""
        ...

    def create(self, repo_key: str, proposal: Proposal) -> PullRequestRef:
        """Record a new pull request; commits are {"hash", "subject"} dicts, base..head."""
        ...


@dataclass(frozen=True)
class ForgeSettings:
    """How to reach the forge. The token is kept out of repr, results and errors."""

    github_token: str | None = field(default=None, repr=False)
    github_api_base: str = DEFAULT_GITHUB_API
    local_pull_requests: LocalPullRequestStore | None = None
    use_gh_cli: bool = True
    http_timeout: float = 30.0


@dataclass(frozen=True)
class GitHubRepo:
    """OWNER/REPO on a GitHub host (github.com, or an Enterprise host)."""

    host: str
    owner: str
    name: str

    @property
    def slug(self) -> str:
        return f"{self.owner}/{self.name}"


@dataclass(frozen=True)
class Proposal:
    """Exactly what will be proposed: shown to the reviewer, then opened."""

    title: str
    body: str
    base: str
    head: str
    draft: bool
    commits: list[dict[str, str]]
    diff: str
    stat: str


def github_repo(url: str | None, api_base: str = DEFAULT_GITHUB_API) -> GitHubRepo | None:
    """The GitHub repository a remote URL names, or None.

    github.com URLs always count; with a custom API base (GitHub Enterprise), any host's
    https/ssh URL of the form OWNER/REPO does. Local paths never do.
    """
    if not url:
        return None
    host, path = _host_and_path(url)
    if host is None:
        return None
    parts = path.strip("/").removesuffix(".git").split("/")
    if len(parts) != 2 or not all(parts):
        return None
    enterprise = api_base.rstrip("/") != DEFAULT_GITHUB_API
    if host.lower() != "github.com" and not enterprise:
        return None
    return GitHubRepo(host, parts[0], parts[1])


def is_local_path(url: str) -> bool:
    """A remote given as a filesystem path (not a URL, not `host:path`)."""
    return "://" not in url and _host_and_path(url)[0] is None


def _host_and_path(url: str) -> tuple[str | None, str]:
    if "://" in url:
        split = urlsplit(url)
        if split.scheme not in ("https", "http", "ssh", "git"):
            return None, ""
        return split.hostname, split.path
    match = _SCP_LIKE.match(url)
    if match and "/" not in match.group("host"):
        return match.group("host"), match.group("path")
    return None, ""


def redact(text: str, secret: str | None) -> str:
    return text.replace(secret, "[token]") if secret else text


# --- GitHub REST API ------------------------------------------------------------------


def open_on_github(
    settings: ForgeSettings, repo: GitHubRepo, proposal: Proposal
) -> tuple[PullRequestRef, bool]:
    """The open PR for the head branch if there is one (True), else a new one (False)."""
    token = settings.github_token or ""
    path = f"/repos/{quote(repo.owner, safe='')}/{quote(repo.name, safe='')}/pulls"
    with _github_client(settings) as client:
        found = _github_call(client, token, "GET", path, params={
            "head": f"{repo.owner}:{proposal.head}", "state": "open",
        })  # fmt: skip
        if isinstance(found, list) and found:
            return _github_ref(found[0]), True
        created = _github_call(client, token, "POST", path, json={
            "title": proposal.title, "body": proposal.body, "head": proposal.head,
            "base": proposal.base, "draft": proposal.draft,
        })  # fmt: skip
    return _github_ref(created), False


def _github_client(settings: ForgeSettings) -> httpx.Client:
    return httpx.Client(
        base_url=settings.github_api_base.rstrip("/"),
        headers={
            "Authorization": f"Bearer {settings.github_token}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": "agentweb",
        },
        timeout=settings.http_timeout,
        follow_redirects=False,
        trust_env=False,
    )


def _github_call(client: httpx.Client, token: str, method: str, path: str, **kw: Any) -> Any:
    """One API request; an error becomes a ToolError with the status and GitHub's message."""
    try:
        response = client.request(method, path, **kw)
    except httpx.HTTPError as error:
        raise ToolError(redact(f"Could not reach the GitHub API: {error}", token)) from None
    if response.is_success:
        return response.json()
    raise ToolError(
        redact(
            f"GitHub refused {method} {path}: HTTP {response.status_code}: "
            f"{_github_message(response)}",
            token,
        )
    )


def _github_message(response: httpx.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.text[:500] or response.reason_phrase
    message = str(data.get("message", "")) if isinstance(data, dict) else ""
    errors = data.get("errors", []) if isinstance(data, dict) else []
    details = [str(e.get("message", e)) if isinstance(e, dict) else str(e) for e in errors]
    return "; ".join([m for m in [message, *details] if m]) or response.reason_phrase


def _github_ref(data: Any) -> PullRequestRef:
    if not isinstance(data, dict) or "number" not in data or "html_url" not in data:
        raise ToolError("The GitHub API answered without a pull request number and URL.")
    return PullRequestRef(url=str(data["html_url"]), number=int(data["number"]))


# --- gh CLI ---------------------------------------------------------------------------


def gh_available(settings: ForgeSettings) -> bool:
    return settings.use_gh_cli and shutil.which("gh") is not None


def open_with_gh(repo: GitHubRepo, proposal: Proposal) -> tuple[PullRequestRef, bool]:
    """`gh pr list --head` first, then `gh pr create`, both with `--repo` from an empty
    directory: gh never reads the (possibly hostile) workspace repository."""
    target = ["--repo", f"{repo.host}/{repo.slug}"]
    listed = _run_gh(["pr", "list", *target, "--head", proposal.head, "--state", "open",
                      "--json", "number,url", "--limit", "1"])  # fmt: skip
    found = json.loads(listed or "[]")
    if found:
        return PullRequestRef(url=str(found[0]["url"]), number=int(found[0]["number"])), True
    command = ["pr", "create", *target, "--head", proposal.head, "--base", proposal.base,
               "--title", proposal.title, "--body", proposal.body]  # fmt: skip
    url = _run_gh([*command, *(["--draft"] if proposal.draft else [])]).strip().splitlines()[-1]
    match = _PR_NUMBER.search(url)
    if not match:
        raise ToolError(f"gh pr create did not print a pull request URL (got {url!r}).")
    return PullRequestRef(url=url, number=int(match.group(1))), False


def _run_gh(args: list[str]) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({"GH_PROMPT_DISABLED": "1", "GH_NO_UPDATE_NOTIFIER": "1", "NO_COLOR": "1"})
    with tempfile.TemporaryDirectory(prefix="agentweb-gh-") as cwd:
        try:
            done = subprocess.run(
                ["gh", *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                capture_output=True, timeout=GH_TIMEOUT, check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            raise ToolError(f"gh {args[0]} {args[1]} took longer than {GH_TIMEOUT:g} s.") from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", errors="replace").strip()
        raise ToolError(f"gh {args[0]} {args[1]} failed: {message}")
    return done.stdout.decode("utf-8", errors="replace")
