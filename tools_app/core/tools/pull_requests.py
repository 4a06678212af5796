"""create_pull_request: a preview for the reviewer, then push and open (or find) the PR.

`pull_request_preview` is computed before approval and shows exactly what will be
proposed. `create_pull_request` (after approval) computes the same proposal again,
pushes the head branch to `origin` with GitPython (hardened: see tools/git_runner.py), and
opens the pull request with the first provider that fits:

1. the GitHub REST API, when a token is set and origin is a GitHub (or, with a custom
   API base, GitHub Enterprise) URL;
2. `gh pr create`, when there is no token and `gh` is on PATH;
3. agentweb's own store (`ForgeSettings.local_pull_requests`), for a local-path origin,
   an unknown host, or no origin at all (then nothing is pushed).

Each provider looks for an open PR for the head branch first and returns it instead of
a duplicate, which also covers a crash between the push and the create.
"""

from __future__ import annotations

import base64
import os
import re
import shlex
from pathlib import Path
from typing import Any, Literal

import git as gitpython
from pydantic import Field, field_validator

from tools_app.core.tools import forge, git_runner
from tools_app.core.tools.base import MAX_COMMAND_CHARS, MAX_NAME_CHARS, ToolArgs, ToolContext
from tools_app.core.tools.errors import ToolError
from tools_app.core.tools.forge import ForgeSettings, GitHubRepo, Proposal, PullRequestRef

PUSH_TIMEOUT = 300.0
# Transports a push may use: no `ext::`/`fd::` helpers, no git:// (core.gitProxy).
PUSH_PROTOCOLS = "file:http:https:ssh"
# A local origin's receive-pack: no alternates command, no push-to-checkout.
RECEIVE_HARDENING = (
    "-c", "core.alternateRefsCommand=true",
    "-c", "receive.denyCurrentBranch=refuse",
)  # fmt: skip
_HELPER_URL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9+.-]*::")
_USERINFO = re.compile(r"(?<=://)[^/@]*@")

Provider = Literal["github", "gh", "local"]


class CreatePullRequestArgs(ToolArgs):
    title: str = Field(min_length=1, max_length=MAX_NAME_CHARS, description="PR title.")
    body: str = Field(default="", max_length=MAX_COMMAND_CHARS, description="PR description.")
    base: str = Field(
        default="main", max_length=MAX_NAME_CHARS, description='Base branch (default: "main").'
    )
    draft: bool = Field(default=False, description="Create as draft PR (default: false).")

    @field_validator("base")
    @classmethod
    def _valid_base(cls, base: str) -> str:
        try:
            return git_runner.check_branch_name(base, argument="base")
        except ToolError as error:
            raise ValueError(str(error)) from None


def pull_request_preview(ctx: ToolContext, args: CreatePullRequestArgs) -> dict[str, Any]:
    """What the reviewer approves: title, body, base, head, commits, diff and stat, and
    where it goes. Raises a ToolError when no pull request could be opened."""
    proposal = build_proposal(ctx, args)
    origin = _origin_url(ctx.workspace)
    return {
        "state": proposal_state(ctx.workspace, proposal),
        "title": proposal.title,
        "body": proposal.body,
        "base": proposal.base,
        "head": proposal.head,
        "draft": proposal.draft,
        "commits": proposal.commits,
        "stat": proposal.stat,
        "diff": proposal.diff,
        "remote": _without_userinfo(origin) if origin else None,
        "provider": _provider(_settings(ctx), origin),
        "warnings": _warnings(ctx.workspace),
    }


def create_pull_request(ctx: ToolContext, args: CreatePullRequestArgs) -> str:
    """Push the head branch to origin, then open the pull request (or return the open one).

    Pushes exactly the head commit the preview showed, and only while the branch and
    its base are where the preview found them.
    """
    proposal = build_proposal(ctx, args)
    state = proposal_state(ctx.workspace, proposal)
    _check_previewed(ctx, state)
    settings = _settings(ctx)
    origin = _origin_url(ctx.workspace)
    provider = _provider(settings, origin)
    if origin is not None:
        push_branch(ctx.workspace, proposal.head, settings, origin, commit=state["head_commit"])
    ref, existing = _open(ctx, settings, provider, origin, proposal)
    text = f"Pull request #{ref.number}: {ref.url}"
    if existing:
        text += f"\nIt was already open for {proposal.head}; no new pull request was created."
    if origin is None:
        text += "\nThe repository has no origin remote: nothing was pushed."
    return text


def proposal_state(workspace: Path, proposal: Proposal) -> dict[str, str]:
    """The commits a proposal is made of: what an approval of it is bound to."""
    head = git_runner.run_git(workspace, ["rev-parse", "--verify", f"refs/heads/{proposal.head}"])
    base_ref = _base_ref(workspace, proposal.base)
    base = git_runner.run_git(workspace, ["rev-parse", "--verify", f"{base_ref}^{{commit}}"])
    return {"head": proposal.head, "head_commit": head.strip(), "base_commit": base.strip()}


def _check_previewed(ctx: ToolContext, state: dict[str, str]) -> None:
    previewed = ctx.preview_state
    if previewed is None or "head_commit" not in previewed:
        return
    if any(previewed.get(key) != value for key, value in state.items()):
        raise ToolError(
            f"The branch {state['head']!r} or its base changed since this pull request was "
            f"previewed (head now {state['head_commit'][:12]}, previewed "
            f"{str(previewed.get('head_commit'))[:12]}); nothing was pushed. Call "
            "create_pull_request again to show the reviewer what would be proposed now."
        )


def _open(
    ctx: ToolContext,
    settings: ForgeSettings,
    provider: Provider,
    origin: str | None,
    proposal: Proposal,
) -> tuple[PullRequestRef, bool]:
    repo = forge.github_repo(origin, settings.github_api_base)
    if provider == "github" and repo is not None:
        return forge.open_on_github(settings, repo, proposal)
    if provider == "gh" and repo is not None:
        return forge.open_with_gh(repo, proposal)
    return _open_locally(ctx, settings, origin, proposal)


def _open_locally(
    ctx: ToolContext, settings: ForgeSettings, origin: str | None, proposal: Proposal
) -> tuple[PullRequestRef, bool]:
    store = settings.local_pull_requests
    if store is None:
        raise ToolError(
            "No forge is configured for this repository (no GitHub token, no gh CLI, no "
            "agentweb pull request store); the branch was pushed but no pull request opened."
        )
    key = _repo_key(ctx.workspace, origin)
    found = store.find(repo_key=key, head=proposal.head)
    if found is not None:
        return found, True
    created = store.create(repo_key=key, proposal=proposal)
    return created, False


def _settings(ctx: ToolContext) -> ForgeSettings:
    return ctx.forge or ForgeSettings()


def _provider(settings: ForgeSettings, origin: str | None) -> Provider:
    if forge.github_repo(origin, settings.github_api_base) is None:
        return "local"
    if settings.github_token:
        return "github"
    return "gh" if forge.gh_available(settings) else "local"


# --- the proposal -----------------------------------------------------------------------


def build_proposal(ctx: ToolContext, args: CreatePullRequestArgs) -> Proposal:
    """The commits base..head and the diff base...head, or a ToolError saying why not."""
    if not args.title.strip():
        raise ToolError("`title` is blank; give the pull request a title.")
    head = _head_branch(ctx.workspace, args.base)
    base_ref = _base_ref(ctx.workspace, args.base)
    commits = _commits(ctx.workspace, base_ref, head)
    if not commits:
        raise ToolError(
            f"Branch {head!r} has no commits that are not in {args.base!r}: nothing to "
            "propose. Commit your changes with git_commit first."
        )
    diff_args = ["diff", *git_runner.NO_DIFF_PROGRAMS, f"{base_ref}...refs/heads/{head}"]
    left_out = git_runner.secret_changes(ctx.workspace, diff_args, ctx.sandbox.secret_paths)
    diff = git_runner.diff_without(ctx.workspace, diff_args, left_out)
    stat = git_runner.diff_without(ctx.workspace, [*diff_args, "--stat"], left_out)
    if left_out:  # named, never shown: the reviewer knows the branch carries them
        stat += git_runner.left_out_note(left_out) + "\n"
    return Proposal(
        title=args.title.strip(), body=args.body, base=args.base, head=head,
        draft=args.draft, commits=commits, diff=git_runner.cap_diff(diff), stat=stat,
    )  # fmt: skip


def _head_branch(workspace: Path, base: str) -> str:
    head = git_runner.current_branch(git_runner.open_repo(workspace))
    if head is None:
        raise ToolError(
            "HEAD is detached: a pull request needs a branch. Create one with git_branch "
            "(action create), then create the pull request."
        )
    if head == base:
        raise ToolError(
            f"The current branch is the base branch {base!r}. Create a feature branch "
            "with git_branch (action create), commit there, then create the pull request."
        )
    return head


def _base_ref(workspace: Path, base: str) -> str:
    """origin/<base> when the remote has it (what the forge compares with), else <base>."""
    for ref in (f"refs/remotes/origin/{base}", f"refs/heads/{base}"):
        if git_runner.git_succeeds(
            workspace, ["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"]
        ):
            return ref
    raise ToolError(
        f"The base branch {base!r} is unknown: it is neither a local branch nor "
        f"origin/{base}. Pass an existing base (see git_branch with action list)."
    )


def _commits(workspace: Path, base_ref: str, head: str) -> list[dict[str, str]]:
    log = git_runner.run_git(
        workspace,
        ["log", "--reverse", "--no-show-signature", "--format=%H%x1f%s%x1e",
         f"{base_ref}..refs/heads/{head}", "--"],
    )  # fmt: skip
    commits = []
    for record in log.split("\x1e"):
        if record.strip():
            sha, _, subject = record.strip().partition("\x1f")
            commits.append({"hash": sha, "subject": subject})
    return commits


def _warnings(workspace: Path) -> list[str]:
    status = git_runner.run_git(workspace, ["status", "--porcelain", "--ignore-submodules=dirty"])
    if status.strip():
        return ["The working tree has uncommitted changes; they are not part of this PR."]
    return []


# --- origin and push --------------------------------------------------------------------


def _origin_url(workspace: Path) -> str | None:
    """remote.origin.url as configured (before any insteadOf rewriting), or None."""
    out = git_runner.git_output(workspace, ["config", "--get", "remote.origin.url"])
    url = (out or "").strip()
    return url or None


def _without_userinfo(url: str) -> str:
    return _USERINFO.sub("", url)


def _repo_key(workspace: Path, origin: str | None) -> str:
    """A stable name of the repository for numbering local pull requests."""
    if origin is None:
        return os.path.realpath(workspace)
    if origin.startswith("file://"):
        origin = origin.removeprefix("file://")
    if forge.is_local_path(origin):
        local = Path(origin) if os.path.isabs(origin) else Path(workspace) / origin
        return os.path.realpath(local)
    return _without_userinfo(origin)


def push_branch(
    workspace: Path, branch: str, settings: ForgeSettings, origin: str, *, commit: str | None = None
) -> None:
    """Push refs/heads/<branch> to origin's push URL (GitPython, hardened).

    The URL is resolved here and pushed to directly, so `remote.origin.receivepack` and
    `remote.origin.vcs` from the repository config are never used; helper URLs
    (`ext::`) are refused. With a GitHub token and an https URL, the token goes in an
    http.extraHeader passed through the environment.
    """
    url = _push_url(workspace)
    repo = git_runner.open_repo(workspace)
    repo.hardened_git.extra_env = {"GIT_ALLOW_PROTOCOL": PUSH_PROTOCOLS}
    repo.hardened_git.config = _auth_config(url, origin, settings)
    repo.hardened_git.timeout = PUSH_TIMEOUT
    refspec = f"{commit or f'refs/heads/{branch}'}:refs/heads/{branch}"
    try:
        repo.git.push(
            "--porcelain", "--no-recurse-submodules", f"--receive-pack={_receive_pack(url)}",
            "--", url, refspec,
        )  # fmt: skip
    except gitpython.GitCommandError as error:
        message = forge.redact(str(error.stderr).strip(), settings.github_token)
        raise ToolError(
            f"Pushing {branch} to origin failed: {message}. Nothing was opened; fix the "
            "cause (e.g. fetch and rebase if origin moved on) and try again."
        ) from None


def _receive_pack(url: str) -> str:
    """The receive-pack command. For a local origin it runs here, with the origin's config
    and hooks, and git clears GIT_CONFIG_PARAMETERS for it: so the hardening goes on its
    command line. A server (ssh) expects the plain name."""
    if not (forge.is_local_path(url) or url.startswith("file://")):
        return "git-receive-pack"
    return shlex.join(["git", *git_runner.HARDENING, *RECEIVE_HARDENING, "receive-pack"])


def _push_url(workspace: Path) -> str:
    out = git_runner.git_output(workspace, ["remote", "get-url", "--push", "origin"])
    url = (out or "").strip()
    if not url or url.startswith("-") or _HELPER_URL.match(url):
        raise ToolError(
            f"origin's push URL {_without_userinfo(url)!r} is not a path or an https/ssh "
            "URL; set a plain remote URL with run_command (git remote set-url)."
        )
    return url


def _auth_config(url: str, origin: str, settings: ForgeSettings) -> list[tuple[str, str]]:
    repo: GitHubRepo | None = forge.github_repo(origin, settings.github_api_base)
    if not settings.github_token or repo is None or not url.startswith("https://"):
        return []
    basic = base64.b64encode(f"x-access-token:{settings.github_token}".encode()).decode()
    host = url.split("/", 3)[2]
    return [(f"http.https://{host}/.extraHeader", f"Authorization: Basic {basic}")]
