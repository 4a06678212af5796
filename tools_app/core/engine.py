"""One tool call end to end, without Django: validate → policy → preview → run.

`services/tool_calls.py` stores what this module decides; nothing here touches the
database, so the whole path can be tested and benchmarked without one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tools_app.core.policy.engine import evaluate
from tools_app.core.policy.preview import command_review
from tools_app.core.policy.targets import one_judgment
from tools_app.core.policy.types import CallFacts, PolicySpec, SessionCounters, Verdict, VerdictKind
from tools_app.core.tools import cow_probe
from tools_app.core.tools.base import ToolContext, ToolSpec
from tools_app.core.tools.catalogue import facts_for
from tools_app.core.tools.errors import RunsElsewhere, ToolError
from tools_app.core.tools.jsonsafe import storable_args, storable_text
from tools_app.core.tools.paths import relative_to_workspace, resolve_path
from tools_app.core.tools.registry import get_tool

logger = logging.getLogger(__name__)

# The status a call takes once the policy has judged it: the one place this is spelled,
# for core and skill tools alike.
STATUS_OF_VERDICT: Mapping[VerdictKind, str] = {
    "allow": "approved",
    "deny": "denied",
    "require_approval": "awaiting_approval",
}


@dataclass(frozen=True)
class Prepared:
    """What the engine concluded before running anything.

    `status` is "failed" (bad arguments), "denied", "awaiting_approval" or
    "approved" (allowed: ready to run).
    """

    status: str
    args: dict[str, Any]
    verdict: Verdict | None = None
    preview: dict[str, Any] | None = None
    changed_lines: int | None = None
    error: str = ""


@dataclass(frozen=True)
class Outcome:
    status: str  # "succeeded", "failed", or "running" (it goes on elsewhere)
    result: str


@dataclass(frozen=True)
class Invalidation:
    """Which cached results a call makes stale (see `invalidation_for`)."""

    everything: bool = False
    paths: tuple[str, ...] = ()
    git_state: bool = False


@dataclass(frozen=True)
class CacheKey:
    key: str
    scope: str


def args_hash(tool: str, args: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of a call: what an approval is bound to."""
    canonical = json.dumps({"tool": tool, "args": args}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def preview_hash(preview: object) -> str:
    """The SHA-256 of a preview's canonical JSON: what a reviewer was shown."""
    if preview is None:
        return ""
    text = json.dumps(preview, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@one_judgment()  # each call one judgment: the preview and the checks resolve paths once
def prepare(
    policy: PolicySpec,
    spec: ToolSpec,
    raw_args: object,
    context: ToolContext | Path,
    counters: SessionCounters,
) -> Prepared:
    """Validate the arguments, compute what the call would change, and ask the policy:
    the one road of every tool, core, skill or an agent's own (`spec` says how each step
    is done, and may have the last word on the verdict)."""
    context = context if isinstance(context, ToolContext) else ToolContext(workspace=context)
    try:
        validated, args = spec.validate(raw_args)
    except ToolError as exc:
        return Prepared(status="failed", args=storable_args(raw_args), error=str(exc))
    preview, changed_lines, plan_error = None, None, ""
    try:
        preview, changed_lines = _preview(spec, validated, args, context)
    except ToolError as exc:
        plan_error = str(exc)
    facts = CallFacts(spec.name, args, context.workspace, changed_lines, executor=spec.executor)
    verdict = evaluate(policy, facts, counters)
    verdict = _unsandboxed_needs_a_person(spec.facts.runs_command, verdict)
    verdict = _secret_commit_needs_a_person(verdict, preview)
    if spec.judge is not None:
        judged = spec.judge(args, verdict, preview)
        verdict, args, preview = judged.verdict, judged.args, judged.preview
    if plan_error and verdict.kind != "deny":
        # A call that cannot work (old_string not found …) fails; one the policy
        # refuses anyway (a path outside the workspace, into .git) is denied.
        return Prepared(status="failed", args=args, error=plan_error)
    return Prepared(
        status=STATUS_OF_VERDICT[verdict.kind],
        args=args,
        verdict=verdict,
        preview=preview,
        changed_lines=changed_lines,
    )


def _unsandboxed_needs_a_person(runs_command: bool, verdict: Verdict) -> Verdict:
    """Without the copy-on-write sandbox a command writes the workspace directly: no
    rule may let one run without a person (a skill's command tool included)."""
    if not runs_command or verdict.kind != "allow" or cow_probe.cow_available():
        return verdict
    why = cow_probe.cow_unavailable_reason()
    return Verdict(
        "require_approval",
        f"the copy-on-write sandbox does not work on this host ({why}): the command would "
        "run unsandboxed, with the worker's rights; a person must approve it",
        "builtin:no-sandbox",
    )


def _secret_commit_needs_a_person(verdict: Verdict, preview: dict[str, Any] | None) -> Verdict:
    """A commit that records secret files puts them in git's objects, where every command
    reads them and a pull request pushes them: no rule may let one pass without a person."""
    left_out = (preview or {}).get("secrets_left_out")
    if verdict.kind != "allow" or not left_out:
        return verdict
    return Verdict(
        "require_approval",
        f"this commit records secret files ({', '.join(left_out)}): once committed they are "
        "in git's objects, readable to every command and pushed with a pull request; a "
        "person must approve it",
        "builtin:commit-secret",
    )


def _preview(
    spec: ToolSpec, validated: object, args: dict[str, Any], context: ToolContext
) -> tuple[dict[str, Any] | None, int | None]:
    """The preview a reviewer would see and the lines the call would change.

    run_command's preview shows the policy's review of the command, passed in here so
    that the tools import no policy."""
    if spec.preview is None:
        return None, None
    if context.review_command is None:
        context = replace(context, review_command=command_review)
    return spec.preview(context, validated, args)


def execute(spec: ToolSpec, args: Mapping[str, Any], context: ToolContext) -> Outcome:
    """Run a validated, allowed call. Tool errors are results the agent reads; a call
    that goes on elsewhere (a sub-agent) stays `running`."""
    try:
        result = spec.run(context, spec.parsed(args))
    except RunsElsewhere:
        return Outcome(status="running", result="")
    except ToolError as exc:
        return Outcome(status="failed", result=storable_text(str(exc)))
    except Exception:
        logger.exception("tool %s crashed", spec.name)
        return Outcome(
            status="failed",
            result=f"{spec.name} failed with an internal error; the server log has the details.",
        )
    # A file name that is not UTF-8 reaches Python as lone surrogates: store them safely.
    return Outcome(status="succeeded", result=storable_text(result))


def cache_key(tool: str, args: Mapping[str, Any], workspace: Path) -> CacheKey | None:
    """The cache entry a read-only call would use, or None when it is not cacheable."""
    scope = facts_for(tool).cache
    if scope is None:
        return None
    where = "."
    if scope in ("file", "tree") and args.get("path"):
        try:
            resolved = resolve_path(workspace, str(args["path"]))
        except ToolError:
            return None
        where = relative_to_workspace(workspace, resolved)
    return CacheKey(key=args_hash(tool, args), scope=where)


def invalidation_for(tool: str, args: Mapping[str, Any], workspace: Path) -> Invalidation:
    """What a call that ran makes stale: a write its file's reads and enclosing listings."""
    writes = facts_for(tool).writes
    if writes == "path":
        resolved = resolve_path(workspace, str(args["path"]))
        rel = relative_to_workspace(workspace, resolved)
        return Invalidation(paths=(rel,), git_state=True)
    if writes == "nothing":
        return Invalidation()
    # Commands, commits, branch switches, pull requests and skill tools: anything.
    return Invalidation(everything=True)


def parent_dirs(path: str) -> list[str]:
    """Every directory that contains `path`, nearest first, ending with '.'."""
    dirs = []
    current = posixpath.dirname(path)
    while current:
        dirs.append(current)
        current = posixpath.dirname(current)
    dirs.append(".")
    return dirs


def dry_run(
    policy: PolicySpec, tool: str, raw_args: object, workspace: Path, counters: SessionCounters
) -> Verdict:
    """What the policy would answer about an agent's call of a core tool, without running
    anything; bad arguments (an unknown tool's too) are denied."""
    try:
        spec = get_tool(tool)
    except ToolError as exc:
        return Verdict("deny", str(exc), "invariant:invalid-arguments")
    prepared = prepare(policy, spec, raw_args, workspace, counters)
    if prepared.verdict is None:
        return Verdict("deny", prepared.error, "invariant:invalid-arguments")
    return prepared.verdict
