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

from tools_app.core.policy import (
    CallFacts,
    Decision,
    PolicySpec,
    SessionCounters,
    Verdict,
    command_review,
    evaluate,
)
from tools_app.core.skills import executors as skill_executors
from tools_app.core.skills.arguments import validate_arguments
from tools_app.core.tools import overlay
from tools_app.core.tools.base import ToolArgs, ToolContext
from tools_app.core.tools.catalogue import facts_for
from tools_app.core.tools.errors import ToolError
from tools_app.core.tools.jsonsafe import storable_args, storable_text
from tools_app.core.tools.paths import relative_to_workspace, resolve_path
from tools_app.core.tools.registry import get_tool, validate_args

logger = logging.getLogger(__name__)

# The status a call takes once the policy has judged it: the one place this is spelled,
# for core and skill tools alike.
STATUS_OF_VERDICT: Mapping[Verdict, str] = {
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
    decision: Decision | None = None
    preview: dict[str, Any] | None = None
    changed_lines: int | None = None
    error: str = ""


@dataclass(frozen=True)
class Outcome:
    status: str  # "succeeded" or "failed"
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


def prepare(
    policy: PolicySpec,
    tool: str,
    raw_args: object,
    context: ToolContext | Path,
    counters: SessionCounters,
) -> Prepared:
    """Validate the arguments, compute what the call would change, and ask the policy."""
    context = context if isinstance(context, ToolContext) else ToolContext(workspace=context)
    workspace = context.workspace
    try:
        validated = validate_args(tool, raw_args)
        args = validated.model_dump(exclude_none=True)
    except ToolError as exc:
        return Prepared(status="failed", args=storable_args(raw_args), error=str(exc))
    preview, changed_lines, plan_error = None, None, ""
    try:
        preview, changed_lines = _preview(tool, validated, args, context)
    except ToolError as exc:
        plan_error = str(exc)
    facts = CallFacts(tool, args, workspace, changed_lines)
    decision = _unsandboxed_needs_a_person(tool, evaluate(policy, facts, counters))
    decision = _secret_commit_needs_a_person(decision, preview)
    if plan_error and decision.decision != "deny":
        # A call that cannot work (old_string not found …) fails; one the policy
        # refuses anyway (a path outside the workspace, into .git) is denied.
        return Prepared(status="failed", args=args, error=plan_error)
    return Prepared(
        status=STATUS_OF_VERDICT[decision.decision],
        args=args,
        decision=decision,
        preview=preview,
        changed_lines=changed_lines,
    )


def prepare_skill(
    policy: PolicySpec,
    call: skill_executors.SkillCall,
    raw_args: object,
    context: ToolContext,
    counters: SessionCounters,
) -> Prepared:
    """As `prepare`, for a skill tool bound to `call` (its captured definition): the
    arguments are checked against its input schema, the preview shows the executor and
    exactly what it would get, and the policy judges the call by its `skill.tool` name."""
    try:
        args = validate_arguments(call.name, call.input_schema, raw_args)
    except ToolError as exc:
        return Prepared(status="failed", args=storable_args(raw_args), error=str(exc))
    if not call.kind:
        error = f"{call.name} has no executor yet; its skill's author must add one."
        return Prepared(status="failed", args=args, error=error)
    facts = CallFacts(call.name, args, context.workspace, None, executor=call.executor)
    decision = evaluate(policy, facts, counters)
    if call.kind == "command":
        decision = _unsandboxed_needs_a_person("run_command", decision)
    preview = skill_executors.preview(call, args)
    return Prepared(
        status=STATUS_OF_VERDICT[decision.decision], args=args, decision=decision, preview=preview
    )


def execute_skill(
    call: skill_executors.SkillCall,
    args: Mapping[str, Any],
    context: ToolContext,
    secrets: skill_executors.Secrets,
) -> Outcome:
    """Run a skill tool's captured definition; errors are results, as for a core tool."""
    try:
        result = skill_executors.run(call, args, context, secrets)
    except ToolError as exc:
        return Outcome(status="failed", result=storable_text(str(exc)))
    except Exception:
        logger.exception("skill tool %s crashed", call.name)
        return Outcome(
            status="failed",
            result=f"{call.name} failed with an internal error; the server log has the details.",
        )
    return Outcome(status="succeeded", result=storable_text(result))


def _unsandboxed_needs_a_person(tool: str, decision: Decision) -> Decision:
    """Without the copy-on-write sandbox a command writes the workspace directly: no
    rule may let one run without a person (a skill's command tool included)."""
    if tool != "run_command" or decision.decision != "allow" or overlay.cow_available():
        return decision
    return Decision(
        "require_approval",
        "this host has no copy-on-write sandbox (user namespaces, overlayfs or bubblewrap "
        "missing): the command would run unsandboxed, with the worker's rights; a person "
        "must approve it",
        "builtin:no-sandbox",
    )


def _secret_commit_needs_a_person(decision: Decision, preview: dict[str, Any] | None) -> Decision:
    """A commit that records secret files puts them in git's objects, where every command
    reads them and a pull request pushes them: no rule may let one pass without a person."""
    left_out = (preview or {}).get("secrets_left_out")
    if decision.decision != "allow" or not left_out:
        return decision
    return Decision(
        "require_approval",
        f"this commit records secret files ({', '.join(left_out)}): once committed they are "
        "in git's objects, readable to every command and pushed with a pull request; a "
        "person must approve it",
        "builtin:commit-secret",
    )


def _preview(
    tool: str, validated: ToolArgs, args: dict[str, Any], context: ToolContext
) -> tuple[dict[str, Any] | None, int | None]:
    """The preview a reviewer would see and the lines the call would change.

    run_command's preview shows the policy's review of the command, passed in here so
    that the tools import no policy."""
    preview = get_tool(tool).preview
    if preview is None:
        return None, None
    if context.review_command is None:
        context = replace(context, review_command=command_review)
    return preview(context, validated, args)


def execute(tool: str, args: Mapping[str, Any], context: ToolContext) -> Outcome:
    """Run a validated, allowed call. Tool errors are results the agent reads."""
    spec = get_tool(tool)
    try:
        result = spec.run(context, spec.args_model.model_validate(dict(args)))
    except ToolError as exc:
        return Outcome(status="failed", result=storable_text(str(exc)))
    except Exception:
        logger.exception("tool %s crashed", tool)
        return Outcome(
            status="failed",
            result=f"{tool} failed with an internal error; the server log has the details.",
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
) -> Decision:
    """What the policy would decide, without running anything; bad arguments are denied."""
    prepared = prepare(policy, tool, raw_args, workspace, counters)
    if prepared.decision is None:
        return Decision("deny", prepared.error, "invariant:invalid-arguments")
    return prepared.decision
